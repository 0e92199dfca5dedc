import { describe, expect, it } from 'vitest';
import type { ClusterDetail } from '../src/api/types';
import { brokerStatuses, probeHealth } from '../src/lib/brokers';
import { CursorPager } from '../src/lib/pager';

function detail(brokers: number[], parts: { leader: number | null; replicas: number[]; isr: number[] }[]): ClusterDetail {
  return {
    name: 'lab',
    id: 1,
    bootstrap: '',
    reachable: true,
    metadata: { at: null, at_us: null, answered_by: null, polls: 0, failures: 0, last_error: null },
    controller_id: 2,
    brokers: brokers.map((id) => ({ id, host: '127.0.0.1', port: 19090 + id })),
    topics: [{ name: 'orders', error: null, partitions: parts.map((p, i) => ({ partition: i, error: null, probe: null, ...p })) }],
    probe: { phase: 'probing', problem: null, run_id: '0', interval_us: 20_000, ticks: 0, skipped_ticks: 0, max_send_lateness_us: 0 },
  };
}

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
      [2, true, true, 2, 0],
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
