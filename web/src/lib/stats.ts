// Shapes the statistics endpoint's groups into the strip / box plot and the trend chart.

import type { Quantiles, Role, StatGroup } from '../api/types';
import { ROLE_LABEL } from './drill';

const ROLE_ORDER: Record<Role, number> = { leader: 0, follower: 1, follower_out_of_isr: 2, not_a_replica: 3, sole_replica: 4, below_min_isr: 5, isolated_leader: 6, isolated_follower: 7, throttled_leader: 8, throttled_follower: 9 };

/** A group's client profile as a person reads it: runs stored before profiles existed have none. */
export function profileName(profile: string | null | undefined): string {
  return profile ?? '(before profiles)';
}

/** The distinct profiles of the groups, in the order they first appear (the server's: primary first). */
export function statProfiles(groups: readonly Pick<StatGroup, 'profile'>[]): (string | null)[] {
  return [...new Set(groups.map((g) => g.profile ?? null))];
}

/** The groups of one profile ('' keeps every group; null names the groups from before profiles). */
export function filterProfile<T extends Pick<StatGroup, 'profile'>>(groups: readonly T[], profile: string | null | ''): T[] {
  if (profile === '') return [...groups];
  return groups.filter((g) => (g.profile ?? null) === profile);
}

type Labelled = Pick<StatGroup, 'topic' | 'partition' | 'role'> & { profile?: string | null };

/** "orders-0 · leader". */
export function groupLabel(g: Labelled): string {
  return `${g.topic}-${g.partition} · ${ROLE_LABEL[g.role] ?? g.role}`;
}

/** A chart series' label: the group's, and its profile when the groups shown have more than one. */
function seriesLabel(g: Labelled, withProfile: boolean): string {
  return withProfile ? `${groupLabel(g)} · ${profileName(g.profile)}` : groupLabel(g);
}

/** Groups ordered by role (leader first), then topic and partition, then profile (as given). */
export function sortGroups<T extends Labelled>(gs: readonly T[]): T[] {
  const profiles = statProfiles(gs.map((g) => ({ profile: g.profile ?? null })));
  return [...gs].sort(
    (a, b) =>
      (ROLE_ORDER[a.role] ?? 9) - (ROLE_ORDER[b.role] ?? 9) ||
      (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : 0) ||
      a.partition - b.partition ||
      profiles.indexOf(a.profile ?? null) - profiles.indexOf(b.profile ?? null),
  );
}

function manyProfiles(groups: readonly Pick<StatGroup, 'profile'>[]): boolean {
  return statProfiles(groups).length > 1;
}

/** The q-quantile (0..1) of values by linear interpolation; null when empty. */
export function quantile(values: readonly number[], q: number): number | null {
  if (values.length === 0) return null;
  const s = [...values].sort((a, b) => a - b);
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return s[lo]! + (s[hi]! - s[lo]!) * (pos - lo);
}

/** The group's ack stall summary; computed from its trend points when the server gave none. */
export function ackSummary(g: StatGroup): Quantiles | null {
  if (g.ack_stall_us) return g.ack_stall_us;
  const vals = g.trend.map((t) => t.ack_stall_us).filter((v): v is number => v !== null);
  if (vals.length === 0) return null;
  return { min: quantile(vals, 0)!, median: quantile(vals, 0.5)!, p95: quantile(vals, 0.95)!, max: quantile(vals, 1)!, count: vals.length };
}

/** A deterministic jitter in [-0.5, 0.5) from a drill and run number, so points don't overlap. */
export function jitter(drill: number, run: number): number {
  let h = (drill * 2654435761 + run * 40503) >>> 0;
  h ^= h >>> 15;
  h = Math.imul(h, 2246822519) >>> 0;
  h ^= h >>> 13;
  return ((h >>> 0) % 1000) / 1000 - 0.5;
}

export interface StripSeries {
  label: string;
  role: Role;
  /** Category position (group index) plus jitter. */
  x: number[];
  /** Ack stall, seconds. */
  y: number[];
  /** Drill id of each point, for tooltips and links. */
  drills: number[];
  summary: Quantiles | null;
}

/** One series per group for the strip plot; x is the group's index, spread by `width`. */
export function stripSeries(groups: readonly StatGroup[], width = 0.5): StripSeries[] {
  const withProfile = manyProfiles(groups);
  return sortGroups(groups).map((g, i) => {
    const pts = g.trend.filter((t) => t.ack_stall_us !== null);
    return {
      label: seriesLabel(g, withProfile),
      role: g.role,
      x: pts.map((t) => i + jitter(t.drill, t.run) * width),
      y: pts.map((t) => t.ack_stall_us! / 1e6),
      drills: pts.map((t) => t.drill),
      summary: ackSummary(g),
    };
  });
}

export interface TrendSeries {
  label: string;
  role: Role;
  /** Epoch seconds, ascending. */
  x: number[];
  /** Ack stall, seconds. */
  y: number[];
}

export function trendSeries(groups: readonly StatGroup[]): TrendSeries[] {
  const withProfile = manyProfiles(groups);
  return sortGroups(groups).map((g) => {
    const pts = g.trend
      .filter((t) => t.ack_stall_us !== null)
      .sort((a, b) => a.at_us - b.at_us);
    return {
      label: seriesLabel(g, withProfile),
      role: g.role,
      x: pts.map((t) => t.at_us / 1e6),
      y: pts.map((t) => t.ack_stall_us! / 1e6),
    };
  });
}

export interface PhaseSummaryRow {
  label: string;
  profile: string | null;
  role: Role;
  count: number;
  ack: Quantiles | null;
  receive: Quantiles | null;
  detection: Quantiles | null;
  election: Quantiles | null;
  discovery: Quantiles | null;
  resume: Quantiles | null;
}

export function summaryRows(groups: readonly StatGroup[]): PhaseSummaryRow[] {
  return sortGroups(groups).map((g) => ({
    label: groupLabel(g),
    profile: g.profile ?? null,
    role: g.role,
    count: g.count,
    ack: ackSummary(g),
    receive: g.receive_stall_us,
    detection: g.detection_us,
    election: g.election_us,
    discovery: g.discovery_us,
    resume: g.resume_us,
  }));
}

/** The y-axis top for stall charts: the largest value plus headroom, in seconds (at least 1). */
export function yTop(series: readonly { y: number[]; summary?: Quantiles | null }[]): number {
  let m = 0;
  for (const s of series) {
    for (const v of s.y) m = Math.max(m, v);
    if (s.summary) m = Math.max(m, s.summary.max / 1e6);
  }
  return Math.max(1, m * 1.1);
}

/**
 * Trend series on one shared, ascending x (what a uPlot line chart takes): the union of every
 * series' times, with null where a series has no point.
 */
export function alignTrend(series: readonly TrendSeries[]): { x: number[]; ys: (number | null)[][] } {
  const xs = [...new Set(series.flatMap((s) => s.x))].sort((a, b) => a - b);
  const index = new Map(xs.map((x, i) => [x, i]));
  const ys = series.map((s) => {
    const row: (number | null)[] = new Array<number | null>(xs.length).fill(null);
    s.x.forEach((x, k) => {
      row[index.get(x)!] = s.y[k]!;
    });
    return row;
  });
  return { x: xs, ys };
}

/** Distinct line colours for trend series (Okabe–Ito, then greys). */
export const SERIES_COLORS = ['#d55e00', '#0072b2', '#009e73', '#cc79a7', '#e69f00', '#56b4e9', '#f0e442', '#000000', '#777777'];
