// Last drill: the on-call page. What was done to which broker and when, the verdict, the stall
// per partition by role, its phases, and how it compares with earlier drills of the same fault.

import { api, ApiError } from '../api/client';
import type { Drill, StatGroup } from '../api/types';
import { compareWithPrevious, findGroup } from '../lib/drill';
import { buildHash, drillHash } from '../lib/route';
import { formatDuration } from '../lib/time';
import { h, notice, replace, table } from '../ui/dom';
import { clusterPicker, departureText, phaseBars, roleBadge, stallBars, verdictBanner } from './common';
import { chooseCluster, clusters, rememberCluster, type View } from './view';

export class LastDrillView implements View {
  readonly el = h('section', { class: 'page last' });
  private readonly picker = h('div', { class: 'toolbar' });
  private readonly body = h('div');
  private cluster: string | null;
  private shownId: number | null = null;
  private statsAt = 0;

  constructor(params: URLSearchParams) {
    this.cluster = params.get('cluster');
    replace(this.el, h('h1', null, 'Last drill'), this.picker, this.body);
  }

  async refresh(signal: AbortSignal): Promise<void> {
    const list = await clusters(signal);
    this.cluster = chooseCluster(this.cluster, list);
    replace(
      this.picker,
      clusterPicker(list, this.cluster, (c) => {
        rememberCluster(c);
        location.hash = buildHash('/last', { cluster: c });
      }),
    );
    if (!this.cluster) {
      replace(this.body, notice('info', 'No clusters configured.'));
      return;
    }
    let d: Drill;
    try {
      d = await api.lastDrill(this.cluster, signal);
    } catch (e) {
      if (signal.aborted) throw e;
      if (e instanceof ApiError && e.status === 404) {
        replace(
          this.body,
          notice('info', `No finished drill on ${this.cluster} yet.`, { 'data-testid': 'no-last-drill' }),
          h('p', null, h('a', { href: buildHash('/drills', { cluster: this.cluster }) }, 'Start one from the drills page →')),
        );
        this.shownId = null;
        return;
      }
      replace(this.body, notice('error', `Cannot read the last drill: ${(e as Error).message}`));
      throw e;
    }
    // A finished drill does not change: re-render only when a newer one finished, and refresh the
    // comparison now and then as other drills land.
    if (d.id === this.shownId && Date.now() - this.statsAt < 60_000) return;
    this.shownId = d.id;
    this.statsAt = Date.now();
    const compare = h('div', null, h('p', { class: 'muted' }, 'Loading earlier drills…'));
    const firstRun = d.runs[0];
    replace(
      this.body,
      h(
        'div',
        { 'data-testid': 'last-drill', 'data-drill-id': d.id },
        verdictBanner(d),
        h(
          'div',
          { class: 'grid-2' },
          h(
            'section',
            { class: 'card' },
            h('h2', null, 'Stall per partition'),
            h('p', { class: 'muted' }, 'Longest interval without an ack (writes) and without a receipt (reads) spanning the fault; colour = the partition’s role for the target broker.'),
            stallBars(d),
          ),
          h(
            'section',
            { class: 'card' },
            h('h2', null, 'Where the time went'),
            firstRun ? h('p', null, departureText(firstRun)) : null,
            phaseBars(d),
          ),
        ),
        h('section', { class: 'card' }, h('h2', null, `Compared with earlier ${d.fault} drills`), compare),
        h('p', null, h('a', { href: drillHash(d.id), 'data-testid': 'detail-link' }, 'Timeline and events of this drill →')),
      ),
    );
    await this.renderComparison(d, compare, signal);
  }

  private async renderComparison(d: Drill, el: HTMLElement, signal: AbortSignal): Promise<void> {
    let previous: Drill[] = [];
    let groups: StatGroup[] = [];
    const problems: string[] = [];
    await Promise.all([
      api
        .drills({ cluster: d.cluster, fault: d.fault, state: 'done', limit: 20 }, signal)
        .then((r) => (previous = r.items))
        .catch((e: Error) => {
          if (signal.aborted) throw e;
          problems.push(`drills: ${e.message}`);
        }),
      api
        .statistics({ cluster: d.cluster, fault: d.fault }, signal)
        .then((s) => (groups = s.groups))
        .catch((e: Error) => {
          if (signal.aborted) throw e;
          problems.push(`statistics: ${e.message}`);
        }),
    ]);
    const rows = compareWithPrevious(d, previous, 10);
    const n = Math.max(0, ...rows.map((r) => r.previous.filter((p) => p.duration_us !== null).length));
    replace(
      el,
      problems.length ? notice('warn', `Partly unavailable: ${problems.join('; ')}`) : null,
      n === 0 && groups.length === 0
        ? h('p', { class: 'muted' }, `This is the first ${d.fault} drill on ${d.cluster}: nothing to compare with yet.`)
        : table(
            ['partition', 'role', 'this drill', `median of previous (${n})`, 'vs usual', 'all drills: min · median · p95 · max', 'previous drills'],
            rows.map((r) => {
              const [topic, part] = [r.key.slice(0, r.key.lastIndexOf('-')), Number(r.key.slice(r.key.lastIndexOf('-') + 1))];
              const g = findGroup(groups, d.cluster, topic, part, r.role, d.fault);
              const q = g?.ack_stall_us;
              const ratio = r.ratio;
              return [
                r.key,
                roleBadge(r.role),
                formatDuration(r.current_us),
                formatDuration(r.median_us),
                ratio === null ? '—' : h('span', { class: ratio > 1.5 ? 'bad-text' : ratio < 0.67 ? 'ok-text' : '' }, `${ratio.toFixed(2)}×`),
                q ? `${formatDuration(q.min)} · ${formatDuration(q.median)} · ${formatDuration(q.p95)} · ${formatDuration(q.max)} (${g!.count})` : '—',
                h(
                  'span',
                  { class: 'prev-list' },
                  r.previous
                    .filter((p) => p.duration_us !== null)
                    .slice(0, 6)
                    .map((p) => h('a', { href: drillHash(p.drill), title: `drill #${p.drill}` }, formatDuration(p.duration_us))),
                ),
              ];
            }),
          ),
      h('p', null, h('a', { href: buildHash('/stats', { cluster: d.cluster, fault: d.fault }) }, 'Distributions and trend →')),
    );
  }

  pollMs(): number {
    return 5000;
  }
}
