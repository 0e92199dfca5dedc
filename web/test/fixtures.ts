// Fixtures shaped like kfaild's answers: a kill of broker 1 in the lab (orders p0 led by 1,
// p1 and p2 followed by 1), numbers close to the article's.

import type { Drill, PartitionResult, Role, Sample, StatGroup } from '../src/api/types';
import { rfc3339FromUs } from '../src/lib/time';

export const FAULT_US = 1_790_000_000_000_000;

export function partition(
  p: number,
  role: Role,
  ackStallUs: number | null,
  extra: Partial<PartitionResult> = {},
): PartitionResult {
  const start = FAULT_US - 10_000;
  return {
    topic: 'orders',
    partition: p,
    role,
    ack: {
      stall: ackStallUs === null ? null : { start_us: start, end_us: start + ackStallUs, duration_us: ackStallUs },
      baseline: { start_us: FAULT_US - 3_000_000, end_us: FAULT_US - 2_970_000, duration_us: 30_000 },
      count: 1000,
    },
    receive: {
      stall: ackStallUs === null ? null : { start_us: start, end_us: start + ackStallUs + 50_000, duration_us: ackStallUs + 50_000 },
      baseline: null,
      count: 1000,
    },
    sent: 1000,
    failed: 0,
    lost: 0,
    unresolved: 0,
    duplicated: 0,
    reordered: 0,
    phases: {
      detection_us: 8_500_000,
      election_us: role === 'leader' ? 300_000 : null,
      discovery_us: role === 'leader' ? 200_000 : null,
      resume_us: role === 'leader' ? 400_000 : 100_000,
      fenced_at_us: FAULT_US + 8_500_000,
      new_leader_at_us: role === 'leader' ? FAULT_US + 8_800_000 : null,
      client_update_at_us: role === 'leader' ? FAULT_US + 9_000_000 : null,
      new_leader: role === 'leader' ? 2 : null,
    },
    ...extra,
  };
}

export function drill(id: number, overrides: Partial<Drill> = {}, parts?: PartitionResult[]): Drill {
  const partitions = parts ?? [partition(0, 'leader', 9_410_000), partition(1, 'follower', 8_610_000), partition(2, 'follower', 8_600_000)];
  return {
    id,
    cluster: 'lab',
    fault: 'kill',
    target: { broker: 1 },
    options: { repeats: 1 },
    state: 'done',
    reason: null,
    schedule_id: null,
    created: '2026-09-21T12:00:00.000000Z',
    created_us: FAULT_US - 10_000_000,
    started: '2026-09-21T12:00:01.000000Z',
    started_us: FAULT_US - 9_000_000,
    finished: '2026-09-21T12:01:00.000000Z',
    finished_us: FAULT_US + 50_000_000,
    expect: null,
    then: null,
    verdict: null,
    regressed: null,
    verdict_detail: null,
    rolling_restart: null,
    observed: null,
    runs: [
      {
        run: 1,
        fault: 'kill',
        state: 'done',
        target: 1,
        baseline_start_us: FAULT_US - 5_000_000,
        fault_requested_us: FAULT_US - 200,
        fault_us: FAULT_US,
        fault_time_source: 'local',
        observe_end_us: FAULT_US + 15_000_000,
        recovered_us: FAULT_US + 30_000_000,
        analysis: {
          fault: 'kill',
          target: 1,
          fault_us: FAULT_US,
          departure: 'fenced',
          departure_at_us: FAULT_US + 8_500_000,
          partitions,
        },
      },
    ],
    ...overrides,
  };
}

/** Samples every 20 ms from `fromUs` for `n` messages; acks in [gapFrom, gapTo) are held back to gapTo. */
export function samples(fromUs: number, n: number, gap?: { from: number; to: number }): Sample[] {
  const out: Sample[] = [];
  for (let i = 0; i < n; i++) {
    const send = fromUs + i * 20_000;
    let ack = send + 2_000;
    if (gap && ack >= gap.from && ack < gap.to) ack = gap.to + i; // released together, in order
    const receive = ack + 1_000;
    out.push({
      seq: i,
      send: rfc3339FromUs(send),
      send_us: send,
      ack: rfc3339FromUs(ack),
      ack_us: ack,
      ack_error: 0,
      ack_latency_us: ack - send,
      offset: i,
      receive: rfc3339FromUs(receive),
      receive_us: receive,
      receive_latency_us: receive - send,
    });
  }
  return out;
}

export function group(partitionNo: number, role: Role, stalls: number[], profile: string | null = null): StatGroup {
  return {
    cluster: 'lab',
    profile,
    topic: 'orders',
    partition: partitionNo,
    role,
    fault: 'kill',
    count: stalls.length,
    regressions: 0,
    ack_stall_us: null,
    receive_stall_us: null,
    detection_us: null,
    election_us: null,
    discovery_us: null,
    resume_us: null,
    trend: stalls.map((s, i) => {
      const at = FAULT_US + i * 86_400_000_000;
      return { drill: i + 1, run: 1, at: rfc3339FromUs(at), at_us: at, ack_stall_us: s, receive_stall_us: null, ack_regressed: false, receive_regressed: false };
    }),
  };
}

/**
 * The kill above seen by two client profiles: librdkafka (the primary, `analysis`) and java, whose
 * client found the new leader of orders-0 1.2 s later; its verdict failed on that partition.
 */
export function twoProfileDrill(id: number): Drill {
  const d = drill(id);
  const run = d.runs[0]!;
  const java = [
    partition(0, 'leader', 10_610_000, { phases: { ...partition(0, 'leader', 0).phases, discovery_us: 1_400_000 }, mechanism: { name: 'session_timeout', setting: 'broker.session.timeout.ms', expected_us: 9_000_000, phases: [], explained: true, ended_by: 'fenced', reason: '' } }),
    partition(1, 'follower', 8_620_000),
    partition(2, 'follower', 8_590_000),
  ];
  run.profile = 'librdkafka';
  run.probe_client = { 'topic.metadata.refresh.interval.ms': '10000' };
  run.profiles = [{ profile: 'java', client: 'java', probe_client: { 'metadata.max.age.ms': '300000' }, analysis: { ...run.analysis!, partitions: java } }];
  d.verdict = 'fail';
  d.verdict_detail = {
    verdict: 'fail',
    objectives: { max_ack_stall_s: 10 },
    checks: [
      { objective: 'max_ack_stall_s', source: 'max_ack_stall_s', threshold: 10, measured: 9.41, unit: 's', status: 'pass', run: 1, topic: 'orders', partition: 0, role: 'leader', reason: '' },
      { objective: 'max_ack_stall_s', source: 'max_ack_stall_s', threshold: 10, measured: 10.61, unit: 's', status: 'fail', run: 1, topic: 'orders', partition: 0, role: 'leader', reason: '', profile: 'java' },
    ],
    regressions: [],
    regression: { window: 5, factor: 1.5, min_runs: 3, min_delta_s: 1 },
    profiles: [
      { profile: 'librdkafka', verdict: 'pass' },
      { profile: 'java', verdict: 'fail' },
    ],
  };
  return d;
}
