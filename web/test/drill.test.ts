import { describe, expect, it } from 'vitest';
import type { ControlPlaneRun } from '../src/api/types';
import {
  compareWithPrevious,
  controlPlaneRow,
  coordinatorsRow,
  findGroup,
  hitBrokers,
  isRunning,
  mechanismText,
  median,
  objectiveVerdict,
  observedFaultText,
  observedLine,
  phaseSegments,
  phaseText,
  rollingRows,
  secondFaultRow,
  stallRows,
  stallScaleUs,
  stallText,
  stepOffsets,
  targetLabel,
  totals,
  verdict,
  worstStall,
} from '../src/lib/drill';
import { formatDuration } from '../src/lib/time';
import { drill, FAULT_US, group, partition } from './fixtures';

describe('drill verdict', () => {
  it('names the worst write stall, its partition and role, and that nothing was lost', () => {
    const v = verdict(drill(3));
    expect(v.level).toBe('ok');
    expect(v.headline).toBe('Writes stopped for 9.41 s at worst (orders-0, leader)');
    expect(v.facts).toContain('No acknowledged message lost');
    expect(v.facts[1]).toMatch(/^Reads stopped up to 9\.46 s on orders-0/);
  });

  it('is bad on loss of acknowledged messages', () => {
    const d = drill(3, {}, [partition(0, 'leader', 9_000_000, { lost: 2 })]);
    const v = verdict(d);
    expect(v.level).toBe('bad');
    expect(v.headline).toBe('Data loss: 2 acknowledged messages never read back');
  });

  it('warns, without calling it data loss, about messages unread while kfaild restarted its consumer', () => {
    const d = drill(3, {}, [partition(0, 'leader', 9_000_000, { lost: 40, lost_consumer_stuck: 40 })]);
    const v = verdict(d);
    expect(v.level).toBe('warn');
    expect(v.headline).toMatch(/^Writes stopped for /);
    expect(v.facts).toContain('No acknowledged message lost');
    expect(v.facts).toContain(
      "40 acknowledged messages not read back while kfaild's consumer read nothing (it restarted the consumer): not known to be lost",
    );
    expect(totals(d).lostConsumerStuck).toBe(40);
    // Two more lost before any restart: the cluster's.
    const lossy = verdict(drill(3, {}, [partition(0, 'leader', 9_000_000, { lost: 42, lost_consumer_stuck: 40 })]));
    expect(lossy.level).toBe('bad');
    expect(lossy.headline).toBe('Data loss: 2 acknowledged messages never read back');
  });

  it('is bad with the reason when the drill failed, a warning when aborted', () => {
    expect(verdict(drill(3, { state: 'failed', reason: 'guard: broker 2 is not registered' })).headline).toBe(
      'Failed: guard: broker 2 is not registered',
    );
    const a = verdict(drill(3, { state: 'aborted', reason: 'aborted on request during observe' }));
    expect(a.level).toBe('warn');
  });

  it('warns about failed sends and duplicates', () => {
    const v = verdict(drill(3, {}, [partition(0, 'leader', 400_000, { failed: 3, duplicated: 1 })]));
    expect(v.level).toBe('warn');
    expect(v.facts).toContain('3 sends failed');
    expect(v.facts).toContain('1 message duplicated');
  });

  it('names every stall the analysis could not measure, with its reason, and warns', () => {
    const sole = partition(0, 'sole_replica', null);
    sole.topic = 'single';
    sole.ack = { ...sole.ack, outcome: 'inconclusive', stall: null, reason: 'still stalled when observation ended (≥ 20.0 s)' };
    const v = verdict(drill(3, {}, [partition(0, 'leader', 9_410_000), sole]));
    expect(v.level).toBe('warn');
    expect(v.facts).toContain('No figure for the ack stall of single-0: still stalled when observation ended (≥ 20.0 s)');
  });

  it('shows a stall as its length, noise as none and an inconclusive one as n/a', () => {
    const p = partition(1, 'follower', 57_000);
    expect(stallText({ ...p.ack, outcome: 'stall' })).toBe('57 ms');
    expect(stallText({ ...p.ack, outcome: 'none', stall: null })).toBe('none');
    expect(stallText({ ...p.ack, outcome: 'inconclusive', stall: null })).toBe('n/a');
  });

  it('says a drill in progress is running', () => {
    expect(verdict(drill(3, { state: 'observe' })).level).toBe('running');
    expect(isRunning('queued')).toBe(true);
    expect(isRunning('done')).toBe(false);
  });

  it('handles a run without analysis (failed in preflight)', () => {
    const d = drill(4, { state: 'failed', reason: 'x' });
    d.runs = [{ run: 1, fault: 'kill', state: 'failed', reason: 'preflight: node 1 cannot be reached' }];
    expect(worstStall(d, 'ack')).toBeNull();
    expect(totals(d).sent).toBe(0);
    expect(verdict(d).facts).toEqual(['No acknowledged message lost']);
  });
});

describe('coordinator targets', () => {
  it('names the coordinator a drill aims at', () => {
    expect(targetLabel({ coordinator_of: 'group' })).toBe("kfaild's group coordinator");
    expect(targetLabel({ coordinator_of: 'transaction' })).toBe("kfaild's transaction coordinator");
    expect(targetLabel({ coordinator_of: { group: 'billing' } })).toBe('coordinator of group billing');
    expect(targetLabel({ coordinator_of: { transactional_id: 't-1' } })).toBe('coordinator of transactional id t-1');
  });
});

describe('control plane row', () => {
  const killed: ControlPlaneRun = {
    outcome: 'stall',
    stall: { start_us: 1, end_us: 3_100_001, duration_s: 3.1, open: false },
    longest_gap: { start_us: 1, end_us: 3_100_001, duration_s: 3.1, open: false },
    ended_by: { seq: 40, at_us: 3_100_001 },
    baseline_longest_s: 0.5,
    significant_s: 1.5,
    resolution_s: 0.5,
    reason: null,
    operations: 60,
    failed: 3,
    quorum: {
      watched: true,
      reason: null,
      elections: [{ at_us: 3_000_000, leader: 101, epoch: 6, previous_leader: 100, previous_epoch: 5, leaderless_s: 2.9, resolution_s: 1 }],
      epoch_increments: 1,
      new_leader: 101,
      leaderless_s: 2.9,
    },
  };
  it("gives an active controller's death its stall, leaderless time, elections and new leader", () => {
    expect(controlPlaneRow(killed)).toEqual(['3.10 s', '≤ 2.90 s', '1', '101', '60 / 3', '']);
  });
  it('says why there are no quorum figures', () => {
    const unwatched = { ...killed, outcome: 'inconclusive' as const, stall: null, reason: 'no control operation was answered after the fault', quorum: { ...killed.quorum, watched: false, elections: [], epoch_increments: 0, new_leader: null, leaderless_s: null, reason: 'PLAINTEXT only' } };
    expect(controlPlaneRow(unwatched)).toEqual(['n/a', 'not watched', '—', '—', '60 / 3', 'no control operation was answered after the fault']);
  });
  it('is absent for a run without one', () => {
    expect(controlPlaneRow(undefined)).toBeNull();
  });
});

describe('drill labels', () => {
  it('labels every target form', () => {
    expect(targetLabel({ broker: 1 })).toBe('broker 1');
    expect(targetLabel({ leader_of: { topic: 'orders', partition: 0 } })).toBe('leader of orders-0');
    expect(targetLabel({ controller: true })).toBe('the controller');
    expect(targetLabel({ random: true })).toBe('a random broker');
  });

  it('names the broker the runs hit, which a random target only knows afterwards', () => {
    const d = drill(3, { target: { random: true } });
    expect(hitBrokers(d)).toBe('broker 1');
    d.runs.push({ ...d.runs[0]!, run: 2, target: 3 });
    expect(hitBrokers(d)).toBe('brokers 1, 3');
  });
});

describe('stall rows and phases', () => {
  it('gives a row per partition with role, ack and receive stall on a common scale', () => {
    const rows = stallRows(drill(3));
    expect(rows.map((r) => [r.key, r.role, r.ack_us])).toEqual([
      ['orders-0', 'leader', 9_410_000],
      ['orders-1', 'follower', 8_610_000],
      ['orders-2', 'follower', 8_600_000],
    ]);
    expect(stallScaleUs(rows)).toBe(9_460_000);
  });

  it('splits a leader’s stall into last ack → fault, detection, election, discovery, resume', () => {
    const segs = phaseSegments(partition(0, 'leader', 9_410_000), FAULT_US);
    expect(segs.map((s) => s.name)).toEqual(['before_fault', 'detection', 'election', 'discovery', 'resume']);
    expect(segs[0]!.duration_us).toBe(10_000);
    expect(segs.reduce((a, s) => a + s.duration_us, 0)).toBe(9_410_000);
  });

  it('shows what the observed phases do not explain', () => {
    const segs = phaseSegments(partition(1, 'follower', 8_610_000), FAULT_US);
    expect(segs.map((s) => s.name)).toEqual(['before_fault', 'detection', 'resume']);
    const p = partition(1, 'follower', 9_610_000);
    expect(phaseSegments(p, FAULT_US).at(-1)).toEqual({ name: 'unexplained', duration_us: 1_000_000 });
  });

  it('has no segments without a stall or phases', () => {
    const p = partition(2, 'not_a_replica', null);
    p.phases = { ...p.phases, detection_us: null, resume_us: null };
    expect(phaseSegments(p, FAULT_US)).toEqual([]);
  });
});

describe('comparison with previous drills', () => {
  it('compares each partition with the same partition and role in earlier done drills of the fault', () => {
    const cur = drill(10, {}, [partition(0, 'leader', 12_000_000), partition(1, 'follower', 8_000_000)]);
    const others = [
      drill(9, {}, [partition(0, 'leader', 10_000_000), partition(1, 'follower', 9_000_000)]),
      drill(8, {}, [partition(0, 'leader', 8_000_000), partition(1, 'follower', 7_000_000)]),
      drill(7, { fault: 'stop' }, [partition(0, 'leader', 500_000)]),
      drill(6, { state: 'failed' }, [partition(0, 'leader', 99_000_000)]),
      drill(11, {}, [partition(0, 'leader', 1)]),
      cur,
    ];
    const c = compareWithPrevious(cur, others);
    expect(c[0]!.previous.map((p) => p.drill)).toEqual([9, 8]);
    expect(c[0]!.median_us).toBe(9_000_000);
    expect(c[0]!.ratio).toBeCloseTo(12 / 9, 6);
    expect(c[1]!.median_us).toBe(8_000_000);
  });

  it('does not compare a partition whose role differed', () => {
    const cur = drill(10, {}, [partition(0, 'leader', 12_000_000)]);
    const c = compareWithPrevious(cur, [drill(9, {}, [partition(0, 'follower', 8_000_000)])]);
    expect(c[0]!.previous).toEqual([{ drill: 9, duration_us: null }]);
    expect(c[0]!.ratio).toBeNull();
  });

  it('finds the statistics group of a partition and role', () => {
    const gs = [group(0, 'leader', [1]), group(0, 'follower', [2])];
    expect(findGroup(gs, 'lab', 'orders', 0, 'follower', 'kill')).toBe(gs[1]);
    expect(findGroup(gs, 'lab', 'orders', 0, 'follower', 'stop')).toBeUndefined();
    expect(median([3, 1, 2, 10])).toBe(2.5);
    expect(median([])).toBeNull();
  });
});

describe("kfaild's verdict against the objectives", () => {
  const failing = drill(5, {
    verdict: 'fail',
    regressed: true,
    verdict_detail: {
      verdict: 'fail',
      objectives: { max_ack_stall_s: 1 },
      checks: [
        { objective: 'max_ack_stall_s', source: 'max_ack_stall_s', threshold: 1, measured: 9.41, unit: 's', status: 'fail', run: 1, topic: 'orders', partition: 0, role: 'leader', reason: '' },
        { objective: 'max_lost', source: 'max_lost', threshold: 0, measured: 0, unit: 'messages', status: 'pass', run: 1, topic: 'orders', partition: 0, role: 'leader', reason: '' },
        { objective: 'max_recovery_s', source: 'max_recovery_s', threshold: 120, measured: null, unit: 's', status: 'inconclusive', run: 1, topic: null, partition: null, role: null, reason: 'the node was not seen back in its ISRs' },
      ],
      regressions: [{ kind: 'ack', role: 'leader', topic: 'orders', partition: 0, run: 1, stall_s: 9.41, median_s: 5.2, factor: 1.81, previous: 4 }],
      regression: { window: 5, factor: 1.5, min_runs: 3, min_delta_s: 1 },
    },
  });

  it('lists the failed checks with the partition, the measured value and the limit, and the regressions', () => {
    const o = objectiveVerdict(failing);
    expect(o.status).toBe('fail');
    expect(o.checks).toBe(3);
    expect(o.failed).toEqual(['max_ack_stall_s on orders-0 (leader): 9.41 s, limit 1 s (max_ack_stall_s)']);
    expect(o.inconclusive).toEqual(['max_recovery_s on the run: not measured, limit 120 s (max_recovery_s) — the node was not seen back in its ISRs']);
    expect(o.regressions).toEqual(['ack stall of orders-0 (leader): 9.41 s, 1.8× the median 5.20 s of 4 earlier']);
  });

  it('makes the banner bad on fail and a warning on inconclusive, whatever the stalls look like', () => {
    expect(verdict(failing).level).toBe('bad');
    expect(verdict(drill(6, { verdict: 'inconclusive' })).level).toBe('warn');
    expect(verdict(drill(7, { verdict: 'pass' })).level).toBe('ok');
    expect(objectiveVerdict(drill(8)).status).toBeNull();
  });
});

describe('phases below their resolution', () => {
  const base = partition(0, 'leader', 9_000_000).phases;

  it('reads a phase below its resolution as at most the resolution, never negative', () => {
    const ph = { ...base, discovery_us: 0, discovery_resolution_us: 100_000, below_resolution: ['discovery' as const] };
    expect(phaseText(ph, 'discovery')).toBe('≤ 100 ms');
    expect(phaseText(ph, 'election')).toBe('300 ms');
    // A result stored before the rule still carries the negative value.
    const old = { ...base, discovery_us: -43_000, discovery_resolution_us: 100_000 };
    expect(phaseText(old, 'discovery')).toBe('≤ 100 ms');
    expect(phaseText(old, 'discovery')).not.toContain('−');
  });

  it('reads a phase the fault time cannot tell as n/a, and a missing one as a dash', () => {
    const ph = { ...base, inconclusive: { detection: 'the fault time is uncertain by ± 9.000 s' } };
    expect(phaseText(ph, 'detection')).toBe('n/a');
    expect(phaseText({ ...base, resume_us: null }, 'resume')).toBe('—');
  });
});

describe('objectives that do not apply', () => {
  it('lists a not applicable check apart, with its reason, and leaves it out of the checks met', () => {
    const d = drill(13, {
      verdict: 'pass',
      verdict_detail: {
        verdict: 'pass',
        objectives: { max_detection_s: 12 },
        checks: [
          { objective: 'max_detection_s', source: 'max_detection_s', threshold: 12, measured: null, unit: 's', status: 'not_applicable', run: 1, topic: null, partition: null, role: null, reason: 'a pause of 3.0 s is shorter than the session timeout (9.0 s)' },
          { objective: 'max_lost', source: 'max_lost', threshold: 0, measured: 0, unit: 'messages', status: 'pass', run: 1, topic: 'orders', partition: 0, role: 'leader', reason: '' },
        ],
        regressions: [],
        regression: { window: 5, factor: 1.5, min_runs: 3, min_delta_s: 1 },
      },
    });
    const o = objectiveVerdict(d);
    expect(o.status).toBe('pass');
    expect(o.inconclusive).toEqual([]);
    expect(o.notApplicable).toEqual([
      'max_detection_s on the run: not measured, limit 12 s (max_detection_s) — a pause of 3.0 s is shorter than the session timeout (9.0 s)',
    ]);
  });
});

describe('gray fault mechanism', () => {
  it('names what bounded the stall and the event that ended it', () => {
    const m = {
      name: 'isr_shrink' as const,
      setting: 'replica.lag.time.max.ms',
      expected_us: 30_000_000,
      phases: [],
      explained: true,
      ended_by: 'isr_shrink',
      reason: '',
    };
    expect(mechanismText(m)).toBe('ISR shrink (replica lag), ended by isr_shrink');
    expect(mechanismText({ ...m, explained: false, ended_by: null, reason: 'the stall ended without isr_shrink' })).toBe(
      'ISR shrink (replica lag), unexplained',
    );
    expect(mechanismText(null)).toBe('—');
  });

  it('shows a shared request as the client\'s stall, beside the cluster\'s', () => {
    const m = {
      name: 'shared_request' as const,
      setting: null,
      expected_us: 8_800_000,
      phases: [],
      explained: true,
      ended_by: 'waited_on_ack',
      reason: '',
      waited_on: { topic: 'orders', partition: 0 },
      cluster_stall_us: 0,
      client_stall_us: 8_802_000,
    };
    expect(mechanismText(m)).toBe("shared request (the client's): waited on orders-0; cluster's stall 0 s, client's 8.80 s");
    expect(mechanismText({ ...m, cluster_stall_us: null })).toBe(
      "shared request (the client's): waited on orders-0; cluster's stall not known, client's 8.80 s",
    );
  });
});

describe('coordinators row', () => {
  it("gives a coordinator's death its commit and transaction stalls, phases and moves", () => {
    const stream = (duration_s: number | null) => ({
      outcome: duration_s === null ? ('none' as const) : ('stall' as const),
      stall: duration_s === null ? null : { start_us: 1, end_us: 2, duration_s, open: false },
      longest_gap: null,
      ended_by: null,
      baseline_longest_s: 0.1,
      significant_s: 1,
      resolution_s: 0.1,
      reason: null,
      operations: 100,
      failed: 3,
    });
    const row = coordinatorsRow({
      commits: stream(8.6),
      transactions: stream(10.36),
      watched: true,
      reason: null,
      moves: [
        { at_us: 5, type: 'group', key: 'kfaild-probe-lab', from: 3, to: 1, partition: '__consumer_offsets-17' },
        { at_us: 6, type: 'transaction', key: 'kfaild-txn', from: 3, to: 2, partition: null },
      ],
      phases: { coordinator_moved_s: 8.12, first_commit_s: 8.52, first_transaction_s: 10.3 },
    });
    expect(row).toEqual(['8.60 s', '10.36 s', '8.12 s', '8.52 s', 'group kfaild-probe-lab: 3→1 (__consumer_offsets-17), transaction kfaild-txn: 3→2', '']);
    expect(coordinatorsRow(undefined)).toBeNull();
  });
});

describe('a compound drill', () => {
  const base = drill(3, { fault: 'kill', target: { controller: true }, then: { fault: 'kill', target: { leader_of: { topic: 'orders', partition: 0 } }, after_s: 2 } });
  const run = { ...base.runs[0], target: 100, recovery_order: [100, 1] };
  const second = {
    fault: 'kill' as const,
    after_s: 2,
    state: 'injected' as const,
    target: 1,
    fault_us: (run.fault_us ?? 0) + 2_004_000,
    first_analysis: {
      ...run.analysis!,
      partitions: [
        partition(0, 'not_a_replica', null, { ack: { ...partition(0, 'not_a_replica', null).ack, outcome: 'none' } }),
        partition(1, 'not_a_replica', 120_000, { ack: { ...partition(1, 'not_a_replica', 120_000).ack, outcome: 'stall' } }),
      ],
    },
  };
  it('gives the second fault its node, its distance from the first, the recovery order and the first alone', () => {
    expect(secondFaultRow(run, second)).toEqual(['kill of node 1', '2 s (2.00 s)', 'injected', '100 → 1', '120 ms', '']);
  });
  it('says why a refused second fault was not injected', () => {
    const refused = { fault: 'kill' as const, after_s: 2, state: 'refused' as const, target: 2, reason: 'losing broker 2 with node 1 down would leave 3 partition(s) below min.insync.replicas' };
    expect(secondFaultRow({ ...run, recovery_order: undefined }, refused)).toEqual(['kill of node 2', '2 s (—)', 'refused', '—', '—', refused.reason]);
  });
  it('names both nodes the runs hit', () => {
    expect(hitBrokers({ ...base, runs: [{ ...run, second_fault: second }] })).toBe('brokers 100, 1');
    expect(hitBrokers({ ...base, runs: [] })).toBe('the controller and leader of orders-0');
  });
  it('is absent for a run without one', () => {
    expect(secondFaultRow(run, undefined)).toBeNull();
  });
});

describe('rolling restarts', () => {
  const rolling = {
    plan: [1, 2, 3],
    by: 'stop' as const,
    between_s: 10,
    steps: [
      { step: 1, node: 1, verdict: 'pass' as const, ack_partition_seconds: 0.412, receive_partition_seconds: 0.5, stalled_partitions: 1, inconclusive_partitions: 0,
        worst_stall: { step: 1, node: 1, topic: 'orders', partition: 0, role: 'leader' as const, kind: 'receive' as const, seconds: 0.5 } },
      { step: 2, node: 2, verdict: 'fail' as const, ack_partition_seconds: 2.25, receive_partition_seconds: 0, stalled_partitions: 1, inconclusive_partitions: 1,
        worst_stall: { step: 2, node: 2, topic: 'orders', partition: 1, role: 'leader' as const, kind: 'ack' as const, seconds: 2.25 } },
    ],
    ack_partition_seconds: 2.662,
    receive_partition_seconds: 0.5,
    worst_stall: { step: 2, node: 2, topic: 'orders', partition: 1, role: 'leader' as const, kind: 'ack' as const, seconds: 2.25 },
    verdict: 'fail' as const,
    ended_at_step: 3,
  };

  it('has a row per step and one of totals', () => {
    const rows = rollingRows(rolling);
    expect(rows).toHaveLength(3);
    expect(rows[0]).toEqual(['1', 'node 1', 'pass', formatDuration(412_000), formatDuration(500_000), '1', `${formatDuration(500_000)} orders-0 (leader, receive)`]);
    expect(rows[1]![5]).toBe('1 (1 inconclusive)');
    expect(rows[2]).toEqual(['all', '2 of 3', 'fail', formatDuration(2_662_000), formatDuration(500_000), '2', `${formatDuration(2_250_000)} orders-1 (leader, ack) at step 2`]);
    expect(rollingRows(null)).toEqual([]);
  });

  it('places each step on the timeline from the first fault', () => {
    const d = drill(5, { fault: 'rolling_restart', target: { every_broker: true } });
    const first = d.runs[0]!;
    d.runs = [
      { ...first, run: 1, step: 1, target: 1 },
      { ...first, run: 2, step: 2, target: 2, fault_us: first.fault_us! + 40_000_000 },
    ];
    expect(stepOffsets(d)).toEqual([
      { step: 1, node: 1, at_s: 0 },
      { step: 2, node: 2, at_s: 40 },
    ]);
    expect(targetLabel({ every_broker: true })).toBe('every broker');
    expect(targetLabel({ nodes: [3, 1] })).toBe('nodes 3, 1');
  });
});

describe('observed drills', () => {
  const fenced = {
    broker: 1,
    fault_us: FAULT_US,
    uncertainty_us: 1_001_000,
    time_source: 'departure:fenced',
    judged_as: 'kill' as const,
    departure: { broker: 1, kind: 'fenced' as const, at_us: FAULT_US + 8_000_000, resolution_us: 1000, source: 'broker_log', event: 'fenced' },
    mark: null,
  };

  it('says kfaild found the fault, or who marked it', () => {
    const d = drill(7, { fault: 'observed', observed: { window_s: 600, marks: [], faults: [fenced] } });
    expect(observedLine(d)).toBe('observed: injected by found by kfaild: broker 1 fenced');
    const marked = { ...fenced, time_source: 'mark', mark: { at_us: FAULT_US, broker: 1, by: 'chaos toolkit' } };
    expect(observedFaultText(marked)).toBe('marked by chaos toolkit (broker 1 fenced)');
    expect(observedFaultText({ ...marked, departure: null, judged_as: 'observed' })).toBe('marked by chaos toolkit on broker 1, no departure seen');
  });

  it('says when nothing was seen, what was missing, and is silent for other faults', () => {
    expect(observedLine(drill(8, { fault: 'observed', observed: { window_s: 60, marks: [], faults: [] } }))).toBe(
      'observed: no fault was marked or seen in the window',
    );
    expect(observedLine(drill(9, { fault: 'observed', state: 'observe', runs: [] }))).toBe('observed: waiting for a fault (kfaild injects nothing)');
    const missing = drill(10, { fault: 'observed', observed: { window_s: 60, marks: [], faults: [fenced], missing: 'broker 1 is not registered (fenced or down)' } });
    expect(observedLine(missing)).toMatch(/not whole again at the end: broker 1 is not registered/);
    expect(observedLine(drill(11))).toBeNull();
  });
});
