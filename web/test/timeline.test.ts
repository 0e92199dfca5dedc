import { describe, expect, it } from 'vitest';
import type { TimelineItem } from '../src/api/types';
import {
  buildLane,
  laneRefs,
  coverageNote,
  drillPartitions,
  eventLabel,
  eventRows,
  laneSummary,
  markerCategory,
  markers,
  thinMarkers,
  timelineOrigin,
  xRange,
} from '../src/lib/timeline';
import { rfc3339FromUs } from '../src/lib/time';
import { drill, FAULT_US, samples } from './fixtures';

function item(relative_s: number, source: string, kind: string, extra: Partial<TimelineItem> = {}): TimelineItem {
  const t_us = FAULT_US + Math.round(relative_s * 1e6);
  return {
    id: 1,
    t: rfc3339FromUs(t_us),
    t_us,
    relative_s,
    run: 1,
    source,
    kind,
    broker: null,
    topic: null,
    partition: null,
    detail: {},
    ...extra,
  };
}

describe('timeline lanes', () => {
  it('puts each ack as a tick at seconds after the fault and measures the empty stretch', () => {
    const s = samples(FAULT_US - 5_000_000, 1000, { from: FAULT_US, to: FAULT_US + 9_400_000 });
    const lane = buildLane({ topic: 'orders', partition: 0 }, s, FAULT_US);
    expect(lane.key).toBe('orders-0');
    expect(lane.ack[0]).toBeCloseTo(-4.998, 6);
    expect(lane.longestAck!.duration_s).toBeGreaterThan(9.3);
    expect(lane.longestAck!.start_s).toBeLessThan(0);
    expect(lane.longestAck!.end_s).toBeGreaterThan(9.39);
    expect(laneSummary(lane)).toMatch(/^orders-0: longest ack gap 9\.4\d s \(-0\.0\d s → 9\.4\d s\)$/);
  });

  it('shows a stall no ack has closed yet as open, up to the newest send', () => {
    const s = samples(FAULT_US - 2_000_000, 200, { from: FAULT_US, to: FAULT_US + 60_000_000 }).map((x) =>
      x.ack_us! > FAULT_US ? { ...x, ack_us: null, receive_us: null } : x,
    );
    const lane = buildLane({ topic: 'orders', partition: 0 }, s, FAULT_US);
    expect(lane.openAck!.start_s).toBeLessThan(0);
    expect(lane.openAck!.end_s).toBeCloseTo(1.98, 6);
    expect(buildLane({ topic: 'orders', partition: 0 }, samples(FAULT_US, 100), FAULT_US).openAck).toBeNull();
  });

  it('warns when raw samples do not reach back to the window start, so missing data is not read as a stall', () => {
    const full = buildLane({ topic: 'orders', partition: 0 }, samples(FAULT_US - 5_000_000, 100), FAULT_US);
    const late = buildLane({ topic: 'orders', partition: 1 }, samples(FAULT_US + 40_000_000, 100), FAULT_US);
    const none = buildLane({ topic: 'orders', partition: 2 }, [], FAULT_US);
    expect(coverageNote([full], -5)).toBeNull();
    expect(coverageNote([full, late], -5)).toMatch(/start only at \+40\.0 s/);
    expect(coverageNote([none], -5)).toMatch(/^No raw samples/);
    expect(coverageNote([], -5)).toBeNull();
  });

  it('says so when a lane has too few acks to have a gap', () => {
    const lane = buildLane({ topic: 'single', partition: 0 }, [], FAULT_US);
    expect(lane.longestAck).toBeNull();
    expect(laneSummary(lane)).toBe('single-0: fewer than two acks');
  });

  it('lists the analysed partitions once, in order, across runs', () => {
    const d = drill(7);
    d.runs.push({ ...d.runs[0]!, run: 2 });
    d.runs[0]!.analysis!.partitions.reverse();
    expect(drillPartitions(d).map((p) => `${p.topic}-${p.partition}`)).toEqual(['orders-0', 'orders-1', 'orders-2']);
  });

  it('measures from the timeline fault, else the injector’s fault event, else the first run, else the start', () => {
    const d = drill(7);
    expect(timelineOrigin(d, { fault_us: 5, items: [] })).toEqual({ us: 5, what: 'fault' });
    const running = { ...d, runs: [] };
    const ev = item(0, 'injector', 'fault', { t_us: 42, relative_s: null });
    expect(timelineOrigin(running, { fault_us: null, items: [item(-1, 'metadata', 'isr_shrink'), ev] })).toEqual({ us: 42, what: 'fault' });
    expect(timelineOrigin(d, { fault_us: null, items: [] })).toEqual({ us: FAULT_US, what: 'fault' });
    expect(timelineOrigin(running, null)).toEqual({ us: d.started_us, what: 'start' });
    expect(timelineOrigin({ ...running, started_us: null }, null)).toBeNull();
  });

  it('gives the window relative to the origin', () => {
    expect(xRange(FAULT_US - 5e6, FAULT_US + 20e6, FAULT_US)).toEqual([-5, 20]);
  });
});

describe('timeline markers and events', () => {
  const items = [
    item(0, 'injector', 'fault', { broker: 1, detail: { fault: 'kill' } }),
    item(8.5, 'broker_log', 'fenced', { broker: 1 }),
    item(8.8, 'metadata', 'leader_change', { topic: 'orders', partition: 0, detail: { leader: 2 } }),
    item(8.81, 'metadata', 'leader_change', { topic: 'orders', partition: 1, detail: { leader: 2 } }),
    item(9.0, 'client', 'client_leader_update', { topic: 'orders', partition: 0 }),
    item(30, 'injector', 'recovered', { broker: 1 }),
    item(2, 'probe', 'duplicate', { topic: 'orders', partition: 0 }),
  ];

  it('places markers by their own time, also while the server gives no relative_s yet', () => {
    const m = markers([item(3, 'broker_log', 'fenced', { relative_s: null })], FAULT_US - 1_000_000);
    expect(m[0]!.x).toBeCloseTo(4, 9);
  });

  it('marks fault, fencing, leader change, client update and recovery, not probe anomalies', () => {
    const m = markers(items, FAULT_US);
    expect(m.map((x) => x.category)).toEqual(['fault', 'fenced', 'leader', 'leader', 'client', 'recovery']);
    expect(m[0]!.label).toBe('fault b1 kill');
    expect(m[2]!.label).toBe('leader_change orders-0 → 2');
  });

  it('thins markers of one kind that crowd together, keeping the first', () => {
    const t = thinMarkers(markers(items, FAULT_US), 0.25);
    expect(t.filter((x) => x.category === 'leader')).toHaveLength(1);
    expect(t).toHaveLength(5);
  });

  it('tables every event in time order with its partition and a readable detail', () => {
    const rows = eventRows(items, FAULT_US);
    expect(rows.map((r) => r.relative)).toEqual([0, 2, 8.5, 8.8, 8.81, 9, 30]);
    expect(eventRows(items, null)[0]!.relative).toBeNull();
    expect(rows[1]!.category).toBeNull();
    expect(rows[3]!.partition).toBe('orders-0');
    expect(rows[3]!.detail).toBe('leader=2');
    expect(eventLabel(item(0, 'broker_log', 'fenced', { broker: 3 }))).toBe('fenced b3');
  });
});

describe('probe markers', () => {
  it('draws the probe holding back and idling, with the ticks it held', () => {
    expect(markerCategory('probe', 'held_back')).toBe('probe');
    expect(markerCategory('probe', 'idle')).toBe('probe');
    expect(markerCategory('probe', 'refused')).toBe('probe');
    expect(markerCategory('probe', 'producer_recreated')).toBe('probe');
    expect(markerCategory('probe', 'consumer_recreated')).toBe('probe');
    expect(markerCategory('probe', 'partition_added')).toBe('probe');
    expect(markerCategory('probe', 'duplicate')).toBeNull();
    expect(markerCategory('metadata', 'controller_change')).toBe('broker');
    expect(eventLabel({ kind: 'held_back', broker: null, topic: 'orders', partition: 0, detail: { ticks: 350, end_us: 1 } })).toBe(
      'held_back orders-0 350 ticks',
    );
  });

  it('gives a lane per partition, or per partition and profile side by side', () => {
    const parts = [{ topic: 'orders', partition: 0 }, { topic: 'orders', partition: 1 }];
    expect(laneRefs(parts, [])).toEqual(parts);
    const refs = laneRefs(parts, ['librdkafka', 'java']);
    expect(refs.map((r) => `${r.partition}/${r.profile}`)).toEqual(['0/librdkafka', '0/java', '1/librdkafka', '1/java']);
    const lane = buildLane(refs[1]!, samples(FAULT_US, 10), FAULT_US);
    expect([lane.key, lane.profile]).toEqual(['orders-0 java', 'java']);
    expect(buildLane(parts[0]!, samples(FAULT_US, 10), FAULT_US).key).toBe('orders-0');
  });
});
