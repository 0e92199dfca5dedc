// Statistics: distribution of the ack stall per partition and role for a fault and period (a
// strip plot over a min / median–p95 / max box), its trend over time, and the phases' medians.

import { api } from '../api/client';
import type { Quantiles, Statistics } from '../api/types';
import { FAULTS } from '../api/types';
import { alignTrend, filterProfile, profileName, SERIES_COLORS, statProfiles, stripSeries, summaryRows, trendSeries, yTop } from '../lib/stats';
import { buildHash, drillHash } from '../lib/route';
import { formatDuration, nowUs, PERIODS, periodStartUs, rfc3339FromUs, type Period } from '../lib/time';
import { StripChart, TrendChart } from '../ui/charts';
import { field, h, notice, replace, select, table } from '../ui/dom';
import { roleBadge } from './common';
import { chooseCluster, clusters, rememberCluster, type View } from './view';
import { ROLE_LABEL } from '../lib/drill';

function q(x: Quantiles | null): string {
  return x ? formatDuration(x.median) : '—';
}

export class StatsView implements View {
  readonly el = h('section', { class: 'page stats' });
  private readonly filters = h('form', { class: 'toolbar filters' });
  private readonly body = h('div');
  private cluster: string | null;
  private readonly fault: string;
  private readonly period: Period;
  private readonly role: string;
  /** '' for every profile; the URL's `profile=-` for the groups from before profiles. */
  private readonly profile: string;
  private readonly profileField = h('span');
  private strip: StripChart | null = null;
  private trend: TrendChart | null = null;
  private lastKey = '';

  constructor(params: URLSearchParams) {
    this.cluster = params.get('cluster');
    this.fault = params.get('fault') ?? 'kill';
    const p = params.get('period') as Period | null;
    this.period = p && PERIODS.includes(p) ? p : '30d';
    this.role = params.get('role') ?? '';
    this.profile = params.get('profile') ?? '';
    replace(this.el, h('h1', null, 'Statistics'), this.filters, this.body);
  }

  async refresh(signal: AbortSignal): Promise<void> {
    const cs = await clusters(signal);
    this.cluster = chooseCluster(this.cluster, cs);
    if (!this.filters.childElementCount) {
      const cluster = select('cluster', cs.map((c): [string, string] => [c.name, c.name]), this.cluster ?? '');
      const fault = select('fault', FAULTS.map((f): [string, string] => [f, f]), this.fault);
      const period = select('period', PERIODS.map((p): [string, string] => [p, p === 'all' ? 'all time' : `last ${p}`]), this.period);
      const role = select('role', [['', 'every role'], ...Object.entries(ROLE_LABEL).map(([k, v]): [string, string] => [k, v])], this.role);
      const apply = () => {
        rememberCluster(cluster.value);
        location.hash = buildHash('/stats', { cluster: cluster.value, fault: fault.value, period: period.value, role: role.value, profile: this.profile });
      };
      for (const s of [cluster, fault, period, role]) s.addEventListener('change', apply);
      this.filters.addEventListener('submit', (e) => e.preventDefault());
      replace(this.filters, field('Cluster', cluster), field('Fault', fault), field('Period', period), field('Role', role), this.profileField);
    }
    if (!this.cluster) {
      replace(this.body, notice('info', 'No clusters configured.'));
      return;
    }
    const from = periodStartUs(this.period, nowUs());
    let s: Statistics;
    try {
      s = await api.statistics({ cluster: this.cluster, fault: this.fault, role: this.role, from: from === null ? null : rfc3339FromUs(from) }, signal);
    } catch (e) {
      if (signal.aborted) throw e;
      replace(this.body, notice('error', `Statistics unavailable: ${(e as Error).message}`));
      throw e;
    }
    const key = JSON.stringify(s);
    if (key === this.lastKey) return;
    this.lastKey = key;
    this.render(s);
  }

  pollMs(): number {
    return 15_000;
  }

  destroy(): void {
    this.strip?.destroy();
    this.trend?.destroy();
  }

  // The profile filter, from the profiles the answer has groups of; none with a single profile.
  private renderProfileFilter(profiles: (string | null)[]): void {
    if (profiles.length < 2 && this.profile === '') {
      replace(this.profileField);
      return;
    }
    const options = profiles.map((p): [string, string] => [p ?? '-', profileName(p)]);
    const sel = select('profile', [['', 'every profile'], ...options], this.profile);
    sel.addEventListener('change', () => {
      const q = new URLSearchParams(location.hash.split('?')[1] ?? '');
      location.hash = buildHash('/stats', { ...Object.fromEntries(q), profile: sel.value });
    });
    replace(this.profileField, field('Client profile', sel));
  }

  private render(all: Statistics): void {
    this.strip?.destroy();
    this.trend?.destroy();
    this.strip = this.trend = null;
    const profiles = statProfiles(all.groups);
    this.renderProfileFilter(profiles);
    const s = { ...all, groups: filterProfile(all.groups, this.profile === '-' ? null : this.profile) };
    const withProfile = profiles.length > 1 || profiles.some((p) => p !== null);
    if (s.groups.length === 0) {
      replace(this.body, notice('info', `No ${this.fault} drills on ${this.cluster} in this period.`, { 'data-testid': 'stats-empty' }));
      return;
    }
    const strip = stripSeries(s.groups);
    const trend = trendSeries(s.groups);
    const aligned = alignTrend(trend);
    const stripBox = h('div', { class: 'chart', 'data-testid': 'strip-chart' });
    const stripReadout = h('div', { class: 'readout muted' }, 'Hover a dot for its drill.');
    const trendBox = h('div', { class: 'chart', 'data-testid': 'trend-chart' });
    const rows = summaryRows(s.groups);
    replace(
      this.body,
      h('p', { 'data-testid': 'stats-counts' }, `${s.drills} drills, ${s.runs} runs of ${this.fault} on ${this.cluster}.`),
      h(
        'section',
        { class: 'card' },
        h('h2', null, 'Ack stall per partition and role'),
        h('p', { class: 'muted' }, 'Each dot is one run. Line: min–max; box: median to p95; thick bar: median.'),
        stripBox,
        stripReadout,
      ),
      h('section', { class: 'card' }, h('h2', null, 'Trend'), trendBox),
      h(
        'section',
        { class: 'card' },
        h('h2', null, 'Medians'),
        table(
          [...(withProfile ? ['profile'] : []), 'partition', 'role', 'runs', 'ack stall min · median · p95 · max', 'receive stall', 'detection', 'election', 'discovery', 'resume'],
          rows.map((r) => [
            ...(withProfile ? [profileName(r.profile)] : []),
            r.label.split(' · ')[0]!,
            roleBadge(r.role),
            String(r.count),
            r.ack ? `${formatDuration(r.ack.min)} · ${formatDuration(r.ack.median)} · ${formatDuration(r.ack.p95)} · ${formatDuration(r.ack.max)}` : '—',
            q(r.receive),
            q(r.detection),
            q(r.election),
            q(r.discovery),
            q(r.resume),
          ]),
        ),
      ),
    );
    this.strip = new StripChart(stripBox, strip, yTop(strip), stripReadout, (id) => {
      location.hash = drillHash(id);
    });
    if (aligned.x.length) {
      this.trend = new TrendChart(
        trendBox,
        [aligned.x, ...aligned.ys],
        trend.map((t) => t.label),
        trend.map((_, i) => SERIES_COLORS[i % SERIES_COLORS.length]!),
      );
    }
  }
}
