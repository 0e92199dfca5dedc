// Overview: per cluster, brokers, probe partitions (leader, ISR, health, a live sparkline of ack
// gaps over the last minute), recent incidents and drills.

import { api, ApiError } from '../api/client';
import type { ClusterDetail, ClusterSummary, Drill, Incident, MaintenanceWindow, PartitionState } from '../api/types';
import { brokerStatuses, controllerLabel, controllerStatuses, controlPlaneLine, probeHealth } from '../lib/brokers';
import { cssToken, hitBrokers, targetLabel, verdict, worstStall } from '../lib/drill';
import { SampleWindow, sparkline } from '../lib/gaps';
import { buildHash, drillHash } from '../lib/route';
import { formatAgo, formatDuration, formatTimestamp, nowUs, rfc3339FromUs } from '../lib/time';
import { SparklineChart } from '../ui/charts';
import { badge, h, notice, replace, table } from '../ui/dom';
import { clusterProfilesBlock } from './profiles';
import { clusters, type View } from './view';

const WINDOW_US = 60_000_000;
const SLOW_EVERY_MS = 10_000;

interface PartitionLive {
  window: SampleWindow;
  chart: SparklineChart | null;
  cell: HTMLElement;
  maxLabel: HTMLElement;
}

class ClusterCard {
  readonly el: HTMLElement;
  private readonly head = h('div', { class: 'card-head' });
  private readonly brokers = h('div', { class: 'brokers', 'data-testid': 'brokers' });
  private readonly partitions = h('div', { class: 'partitions' });
  private readonly incidents = h('div', { class: 'incidents' });
  private readonly drills = h('div', { class: 'recent-drills' });
  private readonly error = h('div');
  private readonly seenBrokers = new Set<number>();
  private readonly live = new Map<string, PartitionLive>();
  private lastSlow = 0;
  // The cluster's active planned-maintenance window, as the last slow refresh read it.
  private maintenance: MaintenanceWindow | null = null;

  constructor(readonly name: string) {
    this.el = h(
      'section',
      { class: 'card cluster', 'data-cluster': name },
      this.head,
      this.error,
      h('h3', null, 'Brokers'),
      this.brokers,
      h('h3', null, 'Probe partitions'),
      this.partitions,
      h('div', { class: 'two-col' }, h('div', null, h('h3', null, 'Recent drills'), this.drills), h('div', null, h('h3', null, 'Incidents (24 h, outside drills)'), this.incidents)),
    );
  }

  destroy(): void {
    for (const l of this.live.values()) l.chart?.destroy();
  }

  async refresh(summary: ClusterSummary, signal: AbortSignal): Promise<void> {
    let detail: ClusterDetail;
    try {
      detail = await api.cluster(this.name, signal);
      replace(this.error);
    } catch (e) {
      if (signal.aborted) throw e;
      replace(this.error, notice('error', `Cannot read cluster ${this.name}: ${(e as Error).message}`));
      return;
    }
    this.renderHead(summary, detail);
    this.renderBrokers(detail);
    this.renderPartitions(detail);
    await this.refreshSparklines(detail, signal);
    if (Date.now() - this.lastSlow >= SLOW_EVERY_MS) {
      this.lastSlow = Date.now();
      await Promise.all([this.refreshDrills(signal), this.refreshIncidents(signal), this.refreshMaintenance(signal)]);
      this.renderHead(summary, detail);  // with the maintenance badge as just read
    }
  }

  private renderHead(s: ClusterSummary, d: ClusterDetail): void {
    const phase = d.probe.phase;
    replace(
      this.head,
      h('h2', null, d.name),
      badge(d.reachable ? 'reachable' : 'unreachable', d.reachable ? 'ok' : 'bad'),
      badge(`probe ${phase}`, phase === 'probing' ? 'ok' : 'warn'),
      this.maintenance ? maintenanceBadge(this.maintenance) : null,
      h('span', { class: 'muted' }, ` ${d.bootstrap} · every ${formatDuration(d.probe.interval_us)}`),
      s.probe_problem || d.probe.problem ? notice('warn', s.probe_problem ?? d.probe.problem ?? '') : null,
      clusterProfilesBlock(d),
      d.metadata.last_error ? notice('warn', `metadata: ${d.metadata.last_error}`) : null,
      h(
        'div',
        { class: 'links' },
        h('a', { href: buildHash('/last', { cluster: d.name }) }, 'Last drill →'),
        ' ',
        h('a', { href: buildHash('/drills', { cluster: d.name }) }, 'Drills →'),
      ),
    );
  }

  private renderBrokers(d: ClusterDetail): void {
    const list = brokerStatuses(d, this.seenBrokers);
    for (const b of list) this.seenBrokers.add(b.id);
    // Controllers get their own testid: the broker count stays the brokers' (web/e2e relies on it).
    const controllers = controllerStatuses(d, list);
    replace(
      this.brokers,
      list.map((b) =>
        h(
          'div',
          {
            class: `broker ${b.up ? 'up' : 'gone'}`,
            'data-testid': 'broker',
            'data-broker-id': b.id,
            'data-state': b.up ? 'up' : 'gone',
          },
          h('strong', null, `broker ${b.id}`),
          b.up ? badge('up', 'ok') : badge('gone / fenced', 'bad'),
          b.controller ? badge('active controller', 'info', { title: 'Leader of the KRaft quorum (DescribeQuorum)' }) : null,
          b.voter && !b.controller ? badge('voter', 'info', { title: 'Votes in the KRaft quorum' }) : null,
          h('small', null, b.host ? `${b.host}:${b.port}` : 'not in metadata'),
          h('small', null, `leads ${b.leads}${b.outOfIsr ? ` · out of ISR on ${b.outOfIsr}` : ''}`),
        ),
      ),
      controllers.map((c) =>
        h(
          'div',
          {
            class: 'broker controller up',
            'data-testid': 'controller',
            'data-controller-id': c.id,
            'data-state': c.active ? 'active' : 'voter',
          },
          h('strong', null, controllerLabel(c)),
          c.active ? badge('active controller', 'info', { title: 'Leader of the KRaft quorum (DescribeQuorum)' }) : null,
          h('small', null, 'KRaft controller, not a broker'),
          h('small', null, c.lag === null ? 'metadata lag unknown' : `metadata lag ${c.lag}`),
        ),
      ),
      d.quorum === null ? h('small', { class: 'muted', 'data-testid': 'controller-unknown' }, 'Active controller unknown: the KRaft quorum is not described.') : null,
      d.control_plane === null ? null : h('small', { class: 'control-plane', 'data-testid': 'control-plane' }, controlPlaneLine(d.control_plane)),
    );
  }

  private liveFor(key: string): PartitionLive {
    let l = this.live.get(key);
    if (!l) {
      l = { window: new SampleWindow(WINDOW_US), chart: null, cell: h('div', { class: 'spark' }), maxLabel: h('small', { class: 'muted' }) };
      this.live.set(key, l);
    }
    return l;
  }

  private renderPartitions(d: ClusterDetail): void {
    const rows: (Node | string)[][] = [];
    for (const t of d.topics) {
      for (const p of t.partitions) {
        rows.push(this.partitionRow(d, t.name, p));
      }
    }
    if (rows.length === 0) {
      replace(this.partitions, h('p', { class: 'muted' }, 'No probe partitions yet.'));
      return;
    }
    replace(this.partitions, table(['partition', 'leader', 'replicas', 'ISR', 'health', 'gap now', 'longest', 'acked / sent', 'lost', 'ack gaps, last 60 s'], rows, { class: 'partitions-table' }));
  }

  private partitionRow(d: ClusterDetail, topic: string, p: PartitionState): (Node | string)[] {
    const pr = p.probe;
    const key = `${topic}-${p.partition}`;
    const health = probeHealth(pr?.current_ack_gap_seconds ?? null, d.probe.interval_us);
    const isr = h(
      'span',
      null,
      p.replicas.map((r) => h('span', { class: p.isr.includes(r) ? 'isr-in' : 'isr-out', title: p.isr.includes(r) ? 'in ISR' : 'not in ISR' }, `${r} `)),
    );
    const l = pr ? this.liveFor(key) : null;
    return [
      h('span', { 'data-partition-key': key }, key),
      p.leader === null ? badge('none', 'bad') : String(p.leader),
      p.replicas.join(', '),
      isr,
      pr ? badge(health, cssToken(health)) : h('span', { class: 'muted' }, 'not probed'),
      pr ? formatDuration(pr.current_ack_gap_seconds === null ? null : pr.current_ack_gap_seconds * 1e6) : '—',
      pr ? formatDuration(pr.longest_ack_gap_seconds * 1e6) : '—',
      pr ? `${pr.acked} / ${pr.sent}` : '—',
      pr ? (pr.lost > 0 ? badge(String(pr.lost), 'bad') : '0') : '—',
      l ? h('div', { class: 'spark-cell' }, l.cell, l.maxLabel) : '',
    ];
  }

  private async refreshSparklines(d: ClusterDetail, signal: AbortSignal): Promise<void> {
    const jobs: Promise<void>[] = [];
    for (const t of d.topics) {
      for (const p of t.partitions) {
        if (!p.probe) continue;
        const l = this.liveFor(`${t.name}-${p.partition}`);
        jobs.push(this.refreshSparkline(d, t.name, p, l, signal));
      }
    }
    await Promise.all(jobs);
  }

  private async refreshSparkline(d: ClusterDetail, topic: string, p: PartitionState, l: PartitionLive, signal: AbortSignal): Promise<void> {
    // The newest send time stands for the server's "now" so a skewed browser clock does not
    // shift the window; before the first answer the browser's clock has to do.
    const end = Math.max(l.window.newestSendUs() ?? 0, p.probe?.last_ack_us ?? 0) || nowUs();
    const from = l.window.size ? l.window.nextFromUs(end) : end - WINDOW_US;
    try {
      const res = await api.samples(d.name, topic, p.partition, { from: rfc3339FromUs(from), limit: 20_000 }, signal);
      l.window.merge(res.items, Math.max(end, l.window.newestSendUs() ?? 0));
    } catch (e) {
      if (signal.aborted) throw e;
      l.maxLabel.textContent = `samples unavailable: ${(e as Error).message}`;
      return;
    }
    const endNow = l.window.newestSendUs() ?? end;
    const open = p.probe?.current_ack_gap_seconds;
    const sp = sparkline(l.window.samples(), 'ack', endNow, WINDOW_US, open === null || open === undefined ? null : open * 1e6, 4 * d.probe.interval_us);
    if (!l.chart && l.cell.isConnected) l.chart = new SparklineChart(l.cell);
    l.chart?.update(sp.x, sp.y);
    l.maxLabel.textContent = sp.y.length ? `max ${formatDuration(sp.maxMs * 1000)}` : 'no acks in the last minute';
    l.cell.dataset['maxGapMs'] = String(Math.round(sp.maxMs));
  }

  private async refreshDrills(signal: AbortSignal): Promise<void> {
    try {
      const res = await api.drills({ cluster: this.name, limit: 5 }, signal);
      replace(this.drills, res.items.length ? drillTable(res.items) : h('p', { class: 'muted' }, 'No drills yet.'));
    } catch (e) {
      if (signal.aborted) throw e;
      replace(this.drills, notice('warn', `Drills unavailable: ${(e as Error).message}`));
    }
  }

  private async refreshMaintenance(signal: AbortSignal): Promise<void> {
    try {
      const res = await api.maintenance(this.name, {}, signal);
      this.maintenance = res.items.find((w) => w.id === res.active) ?? null;
    } catch (e) {
      if (signal.aborted) throw e;
      // A kfaild without maintenance windows, or a read that failed: no badge rather than a stale one.
      this.maintenance = null;
    }
  }

  private async refreshIncidents(signal: AbortSignal): Promise<void> {
    try {
      const res = await api.incidents(this.name, { from: rfc3339FromUs(nowUs() - 86_400_000_000) }, signal);
      replace(this.incidents, res.items.length ? incidentTable(res.items) : h('p', { class: 'muted' }, 'No stalls outside drills in the last 24 h.'));
    } catch (e) {
      if (signal.aborted) throw e;
      const msg = e instanceof ApiError && e.status === 404 ? 'not served by this kfaild' : (e as Error).message;
      replace(this.incidents, notice('warn', `Incidents unavailable: ${msg}`));
    }
  }
}

export function maintenanceBadge(w: MaintenanceWindow): HTMLElement {
  return badge(`maintenance until ${formatTimestamp(w.ends_us)}`, 'info', {
    'data-testid': 'maintenance',
    title: `Planned maintenance (window ${w.id}, opened by ${w.opened_by}): ${w.reason}. Stalls are planned, incidents and alerts held.`,
  });
}

export function drillTable(items: Drill[]): HTMLElement {
  const now = nowUs();
  return table(
    ['drill', 'fault', 'target', 'state', 'when', 'worst ack stall'],
    items.map((d) => {
      const w = worstStall(d, 'ack');
      const v = verdict(d);
      return [
        h('a', { href: drillHash(d.id) }, `#${d.id}`),
        d.fault,
        d.runs.length ? hitBrokers(d) : targetLabel(d.target),
        badge(d.state, `state-${cssToken(d.state)} verdict-${v.level}`),
        h('span', { title: formatTimestamp(d.created_us) }, formatAgo(d.created_us, now)),
        w ? `${formatDuration(w.duration_us)} (${w.topic}-${w.partition})` : '—',
      ];
    }),
  );
}

function incidentTable(items: Incident[]): HTMLElement {
  const now = nowUs();
  const recent = [...items].sort((a, b) => b.start_us - a.start_us).slice(0, 8);
  return table(
    ['when', 'length', 'partitions', 'events'],
    recent.map((i) => [
      h('span', { title: formatTimestamp(i.start_us) }, formatAgo(i.start_us, now)),
      formatDuration(i.duration_us),
      i.partitions.map((p) => `${p.topic}-${p.partition} ${p.kind} ${formatDuration(p.duration_us)}`).join(', '),
      i.events.slice(0, 4).map((e) => `${e.kind}${e.broker !== null ? ` b${e.broker}` : ''}`).join(', ') + (i.events.length > 4 ? ' …' : ''),
    ]),
  );
}

export class OverviewView implements View {
  readonly el = h('section', { class: 'page overview' });
  private readonly cards = new Map<string, ClusterCard>();
  private readonly body = h('div', { class: 'cards' });
  private readonly error = h('div');

  constructor() {
    replace(this.el, h('h1', null, 'Overview'), this.error, this.body);
  }

  async refresh(signal: AbortSignal): Promise<void> {
    let list: ClusterSummary[];
    try {
      list = await clusters(signal);
      replace(this.error);
    } catch (e) {
      if (signal.aborted) throw e;
      replace(this.error, notice('error', `Cannot list clusters: ${(e as Error).message}`));
      throw e;
    }
    if (list.length === 0) replace(this.error, notice('info', 'No clusters configured.'));
    for (const c of list) {
      if (!this.cards.has(c.name)) {
        const card = new ClusterCard(c.name);
        this.cards.set(c.name, card);
        this.body.append(card.el);
      }
    }
    await Promise.all(list.map((c) => this.cards.get(c.name)!.refresh(c, signal)));
  }

  pollMs(): number {
    return 2000;
  }

  destroy(): void {
    for (const c of this.cards.values()) c.destroy();
  }
}
