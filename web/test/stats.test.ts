import { describe, expect, it } from 'vitest';
import { ackSummary, alignTrend, filterProfile, groupLabel, jitter, profileName, quantile, sortGroups, statProfiles, stripSeries, summaryRows, trendSeries, yTop } from '../src/lib/stats';
import { group } from './fixtures';

describe('statistics shaping', () => {
  const groups = [group(2, 'follower', [8_400_000, 8_900_000]), group(0, 'leader', [9_400_000, 10_240_000, 9_800_000]), group(1, 'follower', [8_370_000])];

  it('orders groups leader first, then by partition, and labels them', () => {
    expect(sortGroups(groups).map(groupLabel)).toEqual(['orders-0 · leader', 'orders-1 · follower', 'orders-2 · follower']);
  });

  it('computes quantiles by interpolation', () => {
    expect(quantile([1, 2, 3, 4], 0.5)).toBe(2.5);
    expect(quantile([5], 0.95)).toBe(5);
    expect(quantile([], 0.5)).toBeNull();
  });

  it('takes the server’s summary when given and computes it from the trend otherwise', () => {
    const g = group(0, 'leader', [9_400_000, 10_240_000, 9_800_000]);
    expect(ackSummary(g)).toEqual({ min: 9_400_000, median: 9_800_000, p95: 10_196_000, max: 10_240_000, count: 3 });
    const given = { min: 1, median: 2, p95: 3, max: 4, count: 3 };
    expect(ackSummary({ ...g, ack_stall_us: given })).toBe(given);
    expect(ackSummary(group(0, 'leader', []))).toBeNull();
  });

  it('places strip points around their group index, in seconds', () => {
    const s = stripSeries(groups);
    expect(s.map((x) => x.label)).toEqual(['orders-0 · leader', 'orders-1 · follower', 'orders-2 · follower']);
    expect(s[0]!.y).toEqual([9.4, 10.24, 9.8]);
    for (const [i, series] of s.entries()) for (const x of series.x) expect(Math.abs(x - i)).toBeLessThanOrEqual(0.25);
    expect(s[0]!.drills).toEqual([1, 2, 3]);
  });

  it('keeps jitter deterministic and within half a unit', () => {
    expect(jitter(3, 1)).toBe(jitter(3, 1));
    for (let d = 0; d < 200; d++) {
      const j = jitter(d, 1);
      expect(j).toBeGreaterThanOrEqual(-0.5);
      expect(j).toBeLessThan(0.5);
    }
  });

  it('makes trend series in time order, skipping runs without a stall', () => {
    const g = group(0, 'leader', [3_000_000, 1_000_000]);
    g.trend.reverse();
    g.trend.push({ drill: 9, run: 1, at: '1970-01-01T00:00:00.000001Z', at_us: 1, ack_stall_us: null, receive_stall_us: null, ack_regressed: false, receive_regressed: false });
    const t = trendSeries([g])[0]!;
    expect(t.y).toEqual([3, 1]);
    expect(t.x[0]! < t.x[1]!).toBe(true);
  });

  it('gives a y top with headroom, never below a second', () => {
    expect(yTop([{ y: [10] }])).toBeCloseTo(11);
    expect(yTop([{ y: [0.1] }])).toBe(1);
    expect(yTop([{ y: [], summary: { min: 0, median: 0, p95: 0, max: 20_000_000, count: 1 } }])).toBeCloseTo(22);
  });

  it('summarises each group with its phases', () => {
    const rows = summaryRows([{ ...group(0, 'leader', [1_000_000]), detection_us: { min: 1, median: 2, p95: 3, max: 4, count: 1 } }]);
    expect(rows[0]!.count).toBe(1);
    expect(rows[0]!.detection!.median).toBe(2);
  });
});

describe('trend alignment', () => {
  it('puts every series on the union of times with nulls where a series has no point', () => {
    const a = alignTrend([
      { label: 'a', role: 'leader', x: [1, 3], y: [10, 30] },
      { label: 'b', role: 'follower', x: [2, 3], y: [20, 31] },
    ]);
    expect(a.x).toEqual([1, 2, 3]);
    expect(a.ys).toEqual([
      [10, null, 30],
      [null, 20, 31],
    ]);
  });

  it('labels series without a profile when the groups have one (or none, from before profiles)', () => {
    const groups = [group(2, 'follower', [8_400_000]), group(0, 'leader', [9_400_000]), group(1, 'follower', [8_370_000])];
    expect(statProfiles(groups)).toEqual([null]);
    expect(stripSeries(groups).map((x) => x.label)).toEqual(['orders-0 · leader', 'orders-1 · follower', 'orders-2 · follower']);
    expect(summaryRows(groups).map((r) => r.profile)).toEqual([null, null, null]);
  });

  it('keeps the profiles of a partition next to each other, labels and filters them', () => {
    const two = [group(0, 'leader', [9_400_000], 'librdkafka'), group(1, 'follower', [8_600_000], 'librdkafka'), group(0, 'leader', [10_600_000], 'java'), group(0, 'leader', [9_900_000], null)];
    expect(statProfiles(two)).toEqual(['librdkafka', 'java', null]);
    expect(trendSeries(two).map((x) => x.label)).toEqual(['orders-0 · leader · librdkafka', 'orders-0 · leader · java', 'orders-0 · leader · (before profiles)', 'orders-1 · follower · librdkafka']);
    expect(summaryRows(two).map((r) => [r.label, profileName(r.profile)])).toEqual([
      ['orders-0 · leader', 'librdkafka'],
      ['orders-0 · leader', 'java'],
      ['orders-0 · leader', '(before profiles)'],
      ['orders-1 · follower', 'librdkafka'],
    ]);
    expect(filterProfile(two, 'java').map((g) => g.trend[0]!.ack_stall_us)).toEqual([10_600_000]);
    expect(filterProfile(two, null).map((g) => g.trend[0]!.ack_stall_us)).toEqual([9_900_000]);
    expect(filterProfile(two, '')).toHaveLength(4);
  });
});
