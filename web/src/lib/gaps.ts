// Ack-to-ack (and receive-to-receive) intervals computed from raw probe samples, and the rolling
// sample buffer behind the overview's live sparklines.

import type { Sample } from '../api/types';

export type GapKind = 'ack' | 'receive';

/** Times of successful acks (or receipts), ascending. A delivery report with an error is no ack. */
export function eventTimes(samples: readonly Sample[], kind: GapKind): number[] {
  const out: number[] = [];
  for (const s of samples) {
    if (kind === 'ack') {
      if (s.ack_us !== null && s.ack_error === 0) out.push(s.ack_us);
    } else if (s.receive_us !== null) {
      out.push(s.receive_us);
    }
  }
  out.sort((a, b) => a - b);
  return out;
}

export interface GapPoint {
  /** When the interval ended (the later ack), epoch µs. */
  at_us: number;
  gap_us: number;
}

/** Intervals between consecutive times (ascending input). */
export function intervals(times: readonly number[]): GapPoint[] {
  const out: GapPoint[] = [];
  for (let i = 1; i < times.length; i++) {
    out.push({ at_us: times[i]!, gap_us: times[i]! - times[i - 1]! });
  }
  return out;
}

export interface Gap {
  start_us: number;
  end_us: number;
  duration_us: number;
}

/**
 * The longest interval between consecutive times whose end lies in [fromUs, toUs] (all when the
 * bounds are omitted); null with fewer than two times.
 */
export function longestGap(times: readonly number[], fromUs = -Infinity, toUs = Infinity): Gap | null {
  let best: Gap | null = null;
  for (let i = 1; i < times.length; i++) {
    const end = times[i]!;
    if (end < fromUs || end > toUs) continue;
    const d = end - times[i - 1]!;
    if (best === null || d > best.duration_us) best = { start_us: times[i - 1]!, end_us: end, duration_us: d };
  }
  return best;
}

export interface Sparkline {
  /** Seconds relative to `endUs` (≤ 0). */
  x: number[];
  /** Gap in milliseconds. */
  y: number[];
  /** The largest gap in the window, ms (including the open one). */
  maxMs: number;
}

/**
 * The sparkline of ack gaps in the `windowUs` before `endUs`. When `openGapUs` is given (the gap
 * open now, from the cluster's `current_ack_gap_seconds`) and it exceeds `minOpenUs`, a last point
 * at `endUs` shows the stall that is still going on, which no ack has closed yet.
 */
export function sparkline(
  samples: readonly Sample[],
  kind: GapKind,
  endUs: number,
  windowUs: number,
  openGapUs: number | null = null,
  minOpenUs = 0,
): Sparkline {
  const start = endUs - windowUs;
  const pts = intervals(eventTimes(samples, kind)).filter((p) => p.at_us >= start && p.at_us <= endUs);
  const x = pts.map((p) => (p.at_us - endUs) / 1e6);
  const y = pts.map((p) => p.gap_us / 1000);
  if (openGapUs !== null && openGapUs > minOpenUs) {
    x.push(0);
    y.push(openGapUs / 1000);
  }
  const maxMs = y.reduce((m, v) => Math.max(m, v), 0);
  return { x, y, maxMs };
}

/**
 * Raw samples of one partition, kept for a rolling window and refreshed incrementally. Samples are
 * listed by send time, and a sample sent before a stall gets its ack only when the stall ends; so
 * each refresh asks again from the oldest sample still waiting for its ack (or receipt), bounded
 * by the window, else from shortly before the newest one.
 */
export class SampleWindow {
  private readonly bySeq = new Map<number, Sample>();

  constructor(
    readonly windowUs: number,
    /** How far before the newest send a refresh starts anyway, for late acks. */
    readonly overlapUs = 2_000_000,
  ) {}

  get size(): number {
    return this.bySeq.size;
  }

  /** Samples in send order. */
  samples(): Sample[] {
    return [...this.bySeq.values()].sort((a, b) => a.send_us - b.send_us);
  }

  /** Newest send time held, or null when empty. */
  newestSendUs(): number | null {
    let n: number | null = null;
    for (const s of this.bySeq.values()) if (n === null || s.send_us > n) n = s.send_us;
    return n;
  }

  /** Adds or replaces samples (by sequence number) and drops those older than the window. */
  merge(items: readonly Sample[], endUs: number): void {
    for (const s of items) this.bySeq.set(s.seq, s);
    const cutoff = endUs - this.windowUs;
    for (const [seq, s] of this.bySeq) if (s.send_us < cutoff) this.bySeq.delete(seq);
  }

  /** Where the next request's `from` should be, epoch µs, for a window ending at `endUs`. */
  nextFromUs(endUs: number): number {
    const windowStart = endUs - this.windowUs;
    const newest = this.newestSendUs();
    if (newest === null) return windowStart;
    let from = newest - this.overlapUs;
    for (const s of this.bySeq.values()) {
      const pending = (s.ack_us === null && s.ack_error === 0) || (s.receive_us === null && s.ack_error === 0);
      if (pending && s.send_us < from) from = s.send_us;
    }
    return Math.max(from, windowStart);
  }
}
