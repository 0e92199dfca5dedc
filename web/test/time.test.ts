import { describe, expect, it } from 'vitest';
import { formatAgo, formatDuration, formatRelative, periodStartUs, relativeSeconds, rfc3339FromUs } from '../src/lib/time';

describe('time', () => {
  it('writes RFC 3339 with microseconds in UTC, as kfaild parses from/to', () => {
    expect(rfc3339FromUs(1_790_000_000_123_456)).toBe('2026-09-21T14:13:20.123456Z');
    expect(rfc3339FromUs(1_790_000_000_000_007)).toBe('2026-09-21T14:13:20.000007Z');
  });

  it('gives seconds relative to the fault, negative before it', () => {
    expect(relativeSeconds(1_500_000, 1_000_000)).toBe(0.5);
    expect(relativeSeconds(0, 2_000_000)).toBe(-2);
  });

  it('formats durations in the unit a person expects', () => {
    expect(formatDuration(9_400_000)).toBe('9.40 s');
    expect(formatDuration(120_000)).toBe('120 ms');
    expect(formatDuration(500)).toBe('500 µs');
    expect(formatDuration(125_000_000)).toBe('2 min 05 s');
    expect(formatDuration(null)).toBe('—');
  });

  it('signs relative times and never prints "-0.00"', () => {
    expect(formatRelative(8.271)).toBe('+8.27 s');
    expect(formatRelative(-0.5)).toBe('−0.50 s');
    expect(formatRelative(-0.001)).toBe('0.00 s');
  });

  it('says how long ago, or in how long', () => {
    expect(formatAgo(0, 30_000_000)).toBe('30 s ago');
    expect(formatAgo(0, 600_000_000)).toBe('10 min ago');
    expect(formatAgo(600_000_000, 0)).toBe('in 10 min');
  });

  it('turns a period into its start, and "all" into no start', () => {
    expect(periodStartUs('24h', 100 * 86_400_000_000)).toBe(99 * 86_400_000_000);
    expect(periodStartUs('all', 5)).toBeNull();
  });
});
