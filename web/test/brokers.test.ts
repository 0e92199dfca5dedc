import { describe, expect, it } from 'vitest';
import type { ClusterDetail, ControlPlaneState, QuorumState } from '../src/api/types';
import { brokerStatuses, controllerLabel, controllerStatuses, controlPlaneLine, probeHealth } from '../src/lib/brokers';
import { CursorPager } from '../src/lib/pager';

function replica(id: number, lag: number | null = 0) {
  return { id, log_end_offset: lag === null ? null : 500 - lag, lag, last_caught_up_at_us: 1_700_000_000_000_000 };
}

/** The lab: dedicated controller 100 leads and is the only voter; the brokers observe. */
const labQuorum: QuorumState = {
  leader_id: 100,
  leader_epoch: 3,
  high_watermark: 500,
  voters: [replica(100)],
  observers: [replica(1, 12), replica(2), replica(3)],
  described_at_us: 1_700_000_000_000_000,
};

function detail(
  brokers: number[],
  parts: { leader: number | null; replicas: number[]; isr: number[] }[],
  quorum: QuorumState | null = labQuorum,
): ClusterDetail {
  return {
    name: 'lab',
    id: 1,
    bootstrap: '',
    reachable: true,
    metadata: { at: null, at_us: null, answered_by: null, polls: 0, failures: 0, last_error: null },
    controller_id: quorum?.leader_id ?? null,
    quorum,
    control_plane: null,
    coordinators: null,
    brokers: brokers.map((id) => ({ id, host: '127.0.0.1', port: 19090 + id })),
    topics: [{ name: 'orders', error: null, partitions: parts.map((p, i) => ({ partition: i, error: null, probe: null, ...p })) }],
    probe: { phase: 'probing', problem: null, run_id: '00c0ffee00c0ffee', interval_us: 20_000, ticks: 0, skipped_ticks: 0, held_ticks: 0, max_send_lateness_us: 0, sender_scheduling: 'SCHED_FIFO 1', client_settings: {} },
    profiles: [],
  };
}

describe('control plane line', () => {
  const control: ControlPlaneState = {
    interval_us: 500_000, operations: 10, failures: 0, gaps: 0, last_ok_us: 1, current_gap_seconds: 0.2,
    failing_since_us: null, last_latency_seconds: 0.004, longest_gap_seconds: 0.5, last_error: null,
    quorum: { leader_id: 101, leader_epoch: 7, leader_since_us: 1, last_answer_us: 2, answered_by: '127.0.0.1:27101' },
    quorum_error: null, leader_changes: 0, requests_via: 2,
  };
  it('says the control plane answers and who leads the quorum', () => {
    expect(controlPlaneLine(control)).toBe('control plane answering in 4 ms · quorum leader 101, epoch 7');
  });
  it('says how long it has not answered, and why', () => {
    const silent = { ...control, current_gap_seconds: 3.24, last_error: 'the controller did not answer', quorum: null, quorum_error: 'no voter answered', leader_changes: 1 };
    expect(controlPlaneLine(silent)).toBe('control plane: no answer for 3.2 s (the controller did not answer) · quorum: no voter answered · 1 leader change seen');
  });
});

describe('broker status', () => {
  it('shows a fenced broker as gone when it is still a replica', () => {
    const d = detail([2, 3], [
      { leader: 2, replicas: [1, 2, 3], isr: [2, 3] },
      { leader: 2, replicas: [2, 3, 1], isr: [2, 3] },
      { leader: 3, replicas: [3, 1, 2], isr: [3, 2] },
    ]);
    const s = brokerStatuses(d);
    expect(s.map((b) => [b.id, b.up, b.controller, b.leads, b.outOfIsr])).toEqual([
      [1, false, false, 0, 3],
      [2, true, false, 2, 0],
      [3, true, false, 1, 0],
    ]);
    expect(s[1]!.port).toBe(19092);
  });

  it('remembers brokers seen earlier that no partition names', () => {
    expect(brokerStatuses(detail([1], []), [1, 4]).map((b) => [b.id, b.up])).toEqual([
      [1, true],
      [4, false],
    ]);
  });

  it('shows the dedicated active controller as a row of its own, not as a broker', () => {
    const d = detail([1, 2, 3], [{ leader: 1, replicas: [1, 2, 3], isr: [1, 2, 3] }]);
    const brokers = brokerStatuses(d);
    expect(brokers.map((b) => b.id)).toEqual([1, 2, 3]);
    expect(brokers.some((b) => b.controller || b.voter)).toBe(false);
    const controllers = controllerStatuses(d, brokers);
    expect(controllers).toEqual([{ id: 100, active: true, voter: true, lag: 0, lastCaughtUpAtUs: 1_700_000_000_000_000 }]);
    expect(controllerLabel(controllers[0]!)).toBe('controller 100 (active, voter)');
  });

  it('lists every voter and marks the one that leads', () => {
    const quorum: QuorumState = { ...labQuorum, leader_id: 101, voters: [replica(100, 3), replica(101), replica(102, null)] };
    const d = detail([1, 2, 3], [], quorum);
    const controllers = controllerStatuses(d, brokerStatuses(d));
    expect(controllers.map(controllerLabel)).toEqual(['controller 100 (voter)', 'controller 101 (active, voter)', 'controller 102 (voter)']);
    expect(controllers.map((c) => c.lag)).toEqual([3, 0, null]);
  });

  it('marks a combined broker and controller on its broker row', () => {
    const quorum: QuorumState = { ...labQuorum, leader_id: 2, voters: [replica(1), replica(2), replica(3)], observers: [] };
    const d = detail([1, 2, 3], [], quorum);
    const brokers = brokerStatuses(d);
    expect(brokers.map((b) => [b.id, b.controller, b.voter])).toEqual([
      [1, false, true],
      [2, true, true],
      [3, false, true],
    ]);
    expect(controllerStatuses(d, brokers)).toEqual([]);
  });

  it('marks no controller while the quorum is unknown', () => {
    const d = detail([1, 2, 3], [], null);
    const brokers = brokerStatuses(d);
    expect(brokers.some((b) => b.controller)).toBe(false);
    expect(controllerStatuses(d, brokers)).toEqual([]);
  });

  it('judges probe health from the open ack gap against the interval', () => {
    expect(probeHealth(0.01, 20_000)).toBe('ok');
    expect(probeHealth(0.3, 20_000)).toBe('slow');
    expect(probeHealth(2, 20_000)).toBe('stalled');
    expect(probeHealth(null, 20_000)).toBe('idle');
  });
});

describe('cursor pager', () => {
  it('walks to older pages with next_cursor and back to newer ones', () => {
    const p = new CursorPager();
    expect(p.current).toBeNull();
    expect(p.older(null)).toBe(false);
    expect(p.older('c2')).toBe(true);
    expect(p.older('c3')).toBe(true);
    expect(p.current).toBe('c3');
    expect(p.page).toBe(3);
    expect(p.newer()).toBe(true);
    expect(p.current).toBe('c2');
    p.reset();
    expect(p.hasNewer).toBe(false);
  });
});
