// The drill timeline: one lane per probe partition with a tick per ack (and per receipt), so a
// stall is an empty stretch, and markers for the events that explain it. Times are seconds
// relative to the (first run's) fault.

import type { Drill, Sample, Timeline, TimelineItem } from '../api/types';
import { eventTimes, longestGap } from './gaps';
import { formatDuration } from './time';

export interface PartitionRef {
  topic: string;
  partition: number;
}

export function laneKey(p: PartitionRef): string {
  return `${p.topic}-${p.partition}`;
}

/** A lane's partition, and the client profile whose samples it draws when the probe runs several. */
export interface LaneRef extends PartitionRef {
  profile?: string;
}

/** "orders-0", or with a profile "orders-0 java". */
export function laneRefKey(r: LaneRef): string {
  return r.profile ? `${laneKey(r)} ${r.profile}` : laneKey(r);
}

/**
 * One lane per partition, or with profiles one per partition and profile, a partition's profiles
 * next to each other (in the given order) so their stalls line up in time.
 */
export function laneRefs(parts: readonly PartitionRef[], profiles: readonly string[]): LaneRef[] {
  if (profiles.length === 0) return parts.map((p) => ({ topic: p.topic, partition: p.partition }));
  return parts.flatMap((p) => profiles.map((profile) => ({ topic: p.topic, partition: p.partition, profile })));
}

/** The probe partitions a drill analysed, in topic / partition order, without repeats. */
export function drillPartitions(drill: Drill): PartitionRef[] {
  const seen = new Map<string, PartitionRef>();
  for (const run of drill.runs) {
    for (const p of run.analysis?.partitions ?? []) {
      const ref = { topic: p.topic, partition: p.partition };
      seen.set(laneKey(ref), ref);
    }
  }
  return sortPartitions([...seen.values()]);
}

export function sortPartitions<T extends PartitionRef>(ps: T[]): T[] {
  return ps.sort((a, b) => (a.topic === b.topic ? a.partition - b.partition : a.topic < b.topic ? -1 : 1));
}

export interface Origin {
  us: number;
  /** What x = 0 is: the fault, or (before any fault) the drill's start. */
  what: 'fault' | 'start';
}

/**
 * The instant x = 0 stands for: the first run's fault as the timeline gives it; while the first
 * run is still going (kfaild stores a run when it ends) the injector's own `fault` event; else the
 * first run's fault from the drill; else the drill's start.
 */
export function timelineOrigin(drill: Drill, timeline: Pick<Timeline, 'fault_us' | 'items'> | null): Origin | null {
  if (timeline?.fault_us !== null && timeline?.fault_us !== undefined) return { us: timeline.fault_us, what: 'fault' };
  const ev = timeline?.items.find((it) => it.source === 'injector' && it.kind === 'fault');
  if (ev) return { us: ev.t_us, what: 'fault' };
  for (const run of drill.runs) if (run.fault_us !== null && run.fault_us !== undefined) return { us: run.fault_us, what: 'fault' };
  if (drill.started_us !== null && drill.started_us !== undefined) return { us: drill.started_us, what: 'start' };
  return null;
}

export interface LaneGap {
  start_s: number;
  end_s: number;
  duration_s: number;
}

export interface Lane extends LaneRef {
  key: string;
  /** Ack times, seconds relative to the origin, ascending. */
  ack: Float64Array;
  receive: Float64Array;
  longestAck: LaneGap | null;
  longestReceive: LaneGap | null;
  /**
   * A stall still open at the newest sample: from the last ack to the newest send, when that is
   * longer than `openAfterUs` (a running drill's stall before any ack has closed it).
   */
  openAck: LaneGap | null;
  failed: number;
  /** First and last send among the samples, seconds from the origin; null without samples. */
  sentFrom_s: number | null;
  sentTo_s: number | null;
}

function toLaneGap(g: ReturnType<typeof longestGap>, originUs: number): LaneGap | null {
  if (!g) return null;
  return {
    start_s: (g.start_us - originUs) / 1e6,
    end_s: (g.end_us - originUs) / 1e6,
    duration_s: g.duration_us / 1e6,
  };
}

/** Builds a lane from one partition's raw samples. */
export function buildLane(ref: LaneRef, samples: readonly Sample[], originUs: number, openAfterUs = 500_000): Lane {
  const acks = eventTimes(samples, 'ack');
  const recv = eventTimes(samples, 'receive');
  const rel = (ts: number[]) => Float64Array.from(ts, (t) => (t - originUs) / 1e6);
  let newestSend: number | null = null;
  let oldestSend: number | null = null;
  for (const s of samples) {
    if (newestSend === null || s.send_us > newestSend) newestSend = s.send_us;
    if (oldestSend === null || s.send_us < oldestSend) oldestSend = s.send_us;
  }
  const lastAck = acks.length ? acks[acks.length - 1]! : null;
  const openAck =
    lastAck !== null && newestSend !== null && newestSend - lastAck > openAfterUs
      ? toLaneGap({ start_us: lastAck, end_us: newestSend, duration_us: newestSend - lastAck }, originUs)
      : null;
  return {
    ...ref,
    key: laneRefKey(ref),
    ack: rel(acks),
    receive: rel(recv),
    longestAck: toLaneGap(longestGap(acks), originUs),
    longestReceive: toLaneGap(longestGap(recv), originUs),
    openAck,
    failed: samples.filter((s) => s.ack_error !== 0).length,
    sentFrom_s: oldestSend === null ? null : (oldestSend - originUs) / 1e6,
    sentTo_s: newestSend === null ? null : (newestSend - originUs) / 1e6,
  };
}

export type MarkerCategory = 'fault' | 'fenced' | 'leader' | 'client' | 'recovery' | 'isr' | 'broker' | 'probe';

export interface Marker {
  x: number;
  category: MarkerCategory;
  label: string;
  item: TimelineItem;
}

const MARKER_KINDS: Record<string, Record<string, MarkerCategory>> = {
  injector: { fault: 'fault', recovered: 'recovery', started: 'recovery', resumed: 'recovery' },
  metadata: {
    broker_gone: 'broker',
    broker_back: 'broker',
    leader_change: 'leader',
    isr_shrink: 'isr',
    isr_expand: 'isr',
    controller_change: 'broker',
  },
  // The probe's own behaviour: sends held back at its outstanding bound, stretches with nothing
  // outstanding, sends the client refused, its producer recreated after a fatal error, its
  // consumer's fetch of a partition restarted or the consumer recreated, a partition it took up.
  // A gap beside these is (partly) kfaild's, which is why they are drawn.
  probe: {
    held_back: 'probe',
    idle: 'probe',
    refused: 'probe',
    producer_recreated: 'probe',
    consumer_restarted: 'probe',
    consumer_recreated: 'probe',
    partition_added: 'probe',
  },
  broker_log: { fenced: 'fenced', controlled_shutdown: 'fenced', leader_epoch_start: 'leader' },
  client: { client_leader_update: 'client' },
};

export function markerCategory(source: string, kind: string): MarkerCategory | null {
  return MARKER_KINDS[source]?.[kind] ?? null;
}

/** A short label for an event: "fault (kill b1)", "leader_change orders-0 → 2". */
export function eventLabel(it: Pick<TimelineItem, 'kind' | 'broker' | 'topic' | 'partition' | 'detail'>): string {
  const parts: string[] = [it.kind];
  if (it.topic !== null && it.partition !== null) parts.push(`${it.topic}-${it.partition}`);
  else if (it.topic !== null) parts.push(it.topic);
  const d = it.detail ?? {};
  const leader = d['leader'] ?? d['new_leader'];
  if (typeof leader === 'number' && it.kind.includes('leader')) parts.push(`→ ${leader}`);
  if (it.broker !== null && !(typeof leader === 'number' && it.kind.includes('leader'))) parts.push(`b${it.broker}`);
  if (typeof d['fault'] === 'string') parts.push(String(d['fault']));
  if (it.kind === 'held_back' && typeof d['ticks'] === 'number') parts.push(`${d['ticks']} ticks`);
  return parts.join(' ');
}

/** The events worth a vertical line, in time order, at seconds from `originUs`. */
export function markers(items: readonly TimelineItem[], originUs: number): Marker[] {
  const out: Marker[] = [];
  for (const it of items) {
    const category = markerCategory(it.source, it.kind);
    if (category === null) continue;
    out.push({ x: (it.t_us - originUs) / 1e6, category, label: eventLabel(it), item: it });
  }
  return out.sort((a, b) => a.x - b.x);
}

/**
 * Collapses markers of one category that lie within `minSpacingS` of each other (a leader change
 * reported for many partitions at once) so the chart stays readable; the table keeps every event.
 */
export function thinMarkers(ms: readonly Marker[], minSpacingS: number): Marker[] {
  const lastByCat = new Map<MarkerCategory, number>();
  const out: Marker[] = [];
  for (const m of ms) {
    const last = lastByCat.get(m.category);
    if (last !== undefined && m.x - last < minSpacingS) continue;
    lastByCat.set(m.category, m.x);
    out.push(m);
  }
  return out;
}

export interface EventRow {
  relative: number | null;
  run: number | null;
  source: string;
  kind: string;
  broker: number | null;
  partition: string;
  detail: string;
  category: MarkerCategory | null;
}

/** Compact text for an event's detail object. */
export function detailText(detail: Record<string, unknown> | null | undefined, maxLen = 160): string {
  if (!detail) return '';
  const parts: string[] = [];
  for (const [k, v] of Object.entries(detail)) {
    if (v === null || v === undefined) continue;
    const val = typeof v === 'object' ? JSON.stringify(v) : String(v);
    parts.push(k === 'text' ? val : `${k}=${val}`);
  }
  const s = parts.join(' ');
  return s.length > maxLen ? `${s.slice(0, maxLen - 1)}…` : s;
}

/** Every event in time order, at seconds from `originUs` (null without an origin). */
export function eventRows(items: readonly TimelineItem[], originUs: number | null): EventRow[] {
  return [...items]
    .sort((a, b) => a.t_us - b.t_us)
    .map((it) => ({
      relative: originUs === null ? null : (it.t_us - originUs) / 1e6,
      run: it.run,
      source: it.source,
      kind: it.kind,
      broker: it.broker,
      partition:
        it.topic !== null && it.partition !== null ? `${it.topic}-${it.partition}` : (it.topic ?? ''),
      detail: detailText(it.detail),
      category: markerCategory(it.source, it.kind),
    }));
}

/** A line of text per lane stating the gap the chart shows, for people and for the browser test. */
export function laneSummary(l: Lane): string {
  const g = l.longestAck;
  if (!g) return `${l.key}: fewer than two acks`;
  return `${l.key}: longest ack gap ${formatDuration(g.duration_s * 1e6)} (${g.start_s.toFixed(2)} s → ${g.end_s.toFixed(2)} s)`;
}

/** The x range to show: the timeline's window, relative to the origin. */
export function xRange(fromUs: number, toUs: number, originUs: number): [number, number] {
  return [(fromUs - originUs) / 1e6, (toUs - originUs) / 1e6];
}

/**
 * Says when the lanes' raw samples do not cover the window's start: kfaild keeps raw samples for
 * its configured retention only, and an empty stretch from missing data must not read as a stall.
 * Null when the samples start within `slackS` of the window's start.
 */
export function coverageNote(lanes: readonly Lane[], windowFromS: number, slackS = 2): string | null {
  if (lanes.length === 0) return null;
  const starts = lanes.map((l) => l.sentFrom_s);
  if (starts.every((s) => s === null)) return 'No raw samples in this window: they are past kfaild’s sample retention, or the probe was not sending.';
  const latest = Math.max(...starts.map((s) => (s === null ? Infinity : s)));
  if (latest - windowFromS <= slackS) return null;
  const at = Number.isFinite(latest) ? `${latest >= 0 ? '+' : ''}${latest.toFixed(1)} s` : 'the end';
  return `Raw samples start only at ${at} on some lanes: no ticks before that means no data (past the sample retention, or the probe was not sending), not a stall.`;
}
