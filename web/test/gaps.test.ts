import { describe, expect, it } from 'vitest';
import { eventTimes, intervals, longestGap, SampleWindow, sparkline } from '../src/lib/gaps';
import { samples } from './fixtures';

describe('ack gaps', () => {
  it('counts only successful acks, in ack order', () => {
    const s = samples(0, 3);
    s[1] = { ...s[1]!, ack_error: -192 };
    s[2] = { ...s[2]!, ack_us: 1_000 };
    expect(eventTimes(s, 'ack')).toEqual([1_000, 2_000]);
  });

  it('computes ack-to-ack intervals ending at the later ack', () => {
    expect(intervals([0, 20, 50])).toEqual([
      { at_us: 20, gap_us: 20 },
      { at_us: 50, gap_us: 30 },
    ]);
  });

  it('finds the stall as the longest interval', () => {
    const s = samples(0, 1000, { from: 5_000_000, to: 14_400_000 });
    const g = longestGap(eventTimes(s, 'ack'))!;
    expect(g.duration_us).toBeGreaterThan(9_390_000);
    expect(g.duration_us).toBeLessThan(9_420_000);
    expect(longestGap([1])).toBeNull();
  });

  it('builds a 60 s sparkline in ms, with the gap still open at the end', () => {
    const s = samples(0, 100); // acks at 2 ms + 20 ms·i
    const end = 2_002_000;
    const sp = sparkline(s, 'ack', end, 60_000_000, 3_500_000, 100_000);
    expect(sp.y.slice(0, 3)).toEqual([20, 20, 20]);
    expect(sp.x.at(-1)).toBe(0);
    expect(sp.y.at(-1)).toBe(3500);
    expect(sp.maxMs).toBe(3500);
    expect(sparkline(s, 'ack', end, 60_000_000, 10_000, 100_000).y.at(-1)).toBe(20);
  });
});

describe('SampleWindow', () => {
  it('asks from the window start first, then from just before the newest sample', () => {
    const w = new SampleWindow(60_000_000, 2_000_000);
    expect(w.nextFromUs(100_000_000)).toBe(40_000_000);
    w.merge(samples(90_000_000, 10), 100_000_000);
    expect(w.nextFromUs(100_000_000)).toBe(90_180_000 - 2_000_000);
  });

  it('asks again from a sample still waiting for its ack, so a stall’s late acks arrive', () => {
    const w = new SampleWindow(60_000_000, 2_000_000);
    const s = samples(80_000_000, 500);
    s[10] = { ...s[10]!, ack_us: null, receive_us: null, ack_latency_us: null };
    w.merge(s, 100_000_000);
    expect(w.nextFromUs(100_000_000)).toBe(80_200_000);
    w.merge([{ ...s[10]!, ack_us: 91_000_000, receive_us: 91_000_100 }], 100_000_000);
    expect(w.samples().find((x) => x.seq === 10)!.ack_us).toBe(91_000_000);
    expect(w.nextFromUs(100_000_000)).toBe(80_000_000 + 499 * 20_000 - 2_000_000);
  });

  it('drops samples that left the window and never asks before it', () => {
    const w = new SampleWindow(1_000_000, 0);
    w.merge(samples(0, 100), 2_500_000);
    expect(w.samples().every((s) => s.send_us >= 1_500_000)).toBe(true);
    expect(w.size).toBe(25);
    const pending = { ...samples(1_600_000, 1)[0]!, seq: 999, ack_us: null, receive_us: null };
    w.merge([pending], 2_500_000);
    expect(w.nextFromUs(3_000_000)).toBe(2_000_000);
  });
});
