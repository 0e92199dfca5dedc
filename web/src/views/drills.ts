// Drills list with filters and cursor pagination, and the form that starts a drill (with a
// confirmation naming the broker; a guard's refusal is shown as the server words it).

import { api, ApiError } from '../api/client';
import type { ClusterSummary, Drill } from '../api/types';
import { DRILL_STATES, FAULTS } from '../api/types';
import { brokerStatuses } from '../lib/brokers';
import { cssToken, hitBrokers, targetLabel, verdict, worstStall } from '../lib/drill';
import { confirmText, parseDrillForm } from '../lib/form';
import { CursorPager } from '../lib/pager';
import { buildHash, drillHash } from '../lib/route';
import { formatAgo, formatDuration, formatTimestamp, nowUs } from '../lib/time';
import { confirmDialog } from '../ui/dialogs';
import { badge, field, h, notice, replace, select, table } from '../ui/dom';
import { drillFields, type DrillFields } from '../ui/drillform';
import { chooseCluster, clusters, rememberCluster, type View } from './view';

export class DrillsView implements View {
  readonly el = h('section', { class: 'page drills' });
  private readonly filters = h('form', { class: 'toolbar filters', 'data-testid': 'drill-filters' });
  private readonly list = h('div', { 'data-testid': 'drill-list' });
  private readonly pagerBox = h('div', { class: 'pager' });
  private readonly formBox = h('section', { class: 'card start-drill' });
  private readonly pager = new CursorPager();
  private nextCursor: string | null = null;
  private formFields: DrillFields | null = null;
  private formCluster: HTMLSelectElement | null = null;
  private readonly filterCluster: string;
  private readonly filterState: string;
  private readonly filterFault: string;
  private built = false;

  constructor(params: URLSearchParams) {
    this.filterCluster = params.get('cluster') ?? '';
    this.filterState = params.get('state') ?? '';
    this.filterFault = params.get('fault') ?? '';
    replace(this.el, h('h1', null, 'Drills'), this.formBox, h('section', { class: 'card' }, h('h2', null, 'History'), this.filters, this.list, this.pagerBox));
  }

  async refresh(signal: AbortSignal): Promise<void> {
    const cs = await clusters(signal);
    if (!this.built) {
      this.built = true;
      this.buildFilters(cs);
      this.buildForm(cs);
    }
    await Promise.all([this.refreshList(signal), this.refreshBrokers(signal)]);
  }

  pollMs(): number {
    return 2000;
  }

  private buildFilters(cs: ClusterSummary[]): void {
    const cluster = select('cluster', [['', 'all clusters'], ...cs.map((c): [string, string] => [c.name, c.name])], this.filterCluster);
    const state = select('state', [['', 'any state'], ...DRILL_STATES.map((s): [string, string] => [s, s])], this.filterState);
    const fault = select('fault', [['', 'any fault'], ...FAULTS.map((f): [string, string] => [f, f])], this.filterFault);
    const apply = () => {
      location.hash = buildHash('/drills', { cluster: cluster.value, state: state.value, fault: fault.value });
    };
    for (const s of [cluster, state, fault]) s.addEventListener('change', apply);
    this.filters.addEventListener('submit', (e) => e.preventDefault());
    replace(this.filters, field('Cluster', cluster), field('State', state), field('Fault', fault));
  }

  private buildForm(cs: ClusterSummary[]): void {
    const initial = chooseCluster(this.filterCluster || null, cs) ?? '';
    this.formCluster = select('cluster', cs.map((c): [string, string] => [c.name, c.name]), initial, { 'data-testid': 'start-cluster' });
    this.formFields = drillFields({}, 'start');
    const error = h('div', { 'data-testid': 'drill-form-error' });
    const submit = h('button', { type: 'submit', class: 'danger', 'data-testid': 'start-drill' }, 'Start drill…');
    const form = h('form', { 'data-testid': 'drill-form', novalidate: true }, h('div', { class: 'row' }, field('Cluster', this.formCluster)), this.formFields.el, h('div', { class: 'actions' }, submit), error);
    this.formCluster.addEventListener('change', () => {
      rememberCluster(this.formCluster!.value);
      void this.refreshBrokers();
    });
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      replace(error);
      const cluster = this.formCluster!.value;
      const parsed = parseDrillForm(this.formFields!.values());
      if (!cluster) {
        replace(error, notice('error', 'choose a cluster'));
        return;
      }
      if (!parsed.ok) {
        replace(error, notice('error', parsed.error));
        return;
      }
      const ok = await confirmDialog('Start a drill?', confirmText(parsed.value, cluster), 'Start drill');
      if (!ok) return;
      submit.disabled = true;
      try {
        const d = await api.startDrill(cluster, parsed.value);
        location.hash = drillHash(d.id);
      } catch (err) {
        // A guard's refusal (409) and a bad request (400) carry the reason in `detail`: shown as is.
        const msg = err instanceof ApiError ? err.detail : (err as Error).message;
        const status = err instanceof ApiError ? err.status : 0;
        replace(error, notice('error', msg, { 'data-status': status, 'data-testid': 'drill-refused' }));
      } finally {
        submit.disabled = false;
      }
    });
    replace(
      this.formBox,
      h('details', { open: true }, h('summary', null, h('h2', { class: 'inline' }, 'Start a drill')), h('p', { class: 'muted' }, 'kfaild checks first that the cluster can take it (guards), journals the recovery, injects the fault, watches, brings the broker back and analyses.'), form),
    );
  }

  private async refreshBrokers(signal?: AbortSignal): Promise<void> {
    const c = this.formCluster?.value;
    if (!c || !this.formFields) return;
    try {
      const d = await api.cluster(c, signal);
      this.formFields.setBrokers(brokerStatuses(d).map((b) => b.id));
    } catch (e) {
      if (signal?.aborted) throw e;
    }
  }

  private async refreshList(signal: AbortSignal): Promise<void> {
    let items: Drill[];
    try {
      const res = await api.drills(
        { cluster: this.filterCluster, state: this.filterState, fault: this.filterFault, limit: 20, cursor: this.pager.current },
        signal,
      );
      items = res.items;
      this.nextCursor = res.next_cursor;
    } catch (e) {
      if (signal.aborted) throw e;
      replace(this.list, notice('error', `Cannot list drills: ${(e as Error).message}`));
      throw e;
    }
    const now = nowUs();
    replace(
      this.list,
      items.length === 0
        ? h('p', { class: 'muted' }, 'No drills match.')
        : table(
            ['drill', 'cluster', 'fault', 'target', 'state', 'created', 'took', 'worst ack stall', 'verdict'],
            items.map((d) => {
              const w = worstStall(d, 'ack');
              const v = verdict(d);
              return [
                h('a', { href: drillHash(d.id), 'data-drill-id': d.id }, `#${d.id}`),
                d.cluster ?? '—',
                d.fault,
                d.runs.some((r) => r.target !== undefined) ? hitBrokers(d) : targetLabel(d.target),
                badge(d.state, `state-${cssToken(d.state)}`),
                h('span', { title: formatTimestamp(d.created_us) }, formatAgo(d.created_us, now)),
                d.started_us && d.finished_us ? formatDuration(d.finished_us - d.started_us) : '—',
                w ? `${formatDuration(w.duration_us)} (${w.topic}-${w.partition})` : '—',
                h(
                  'span',
                  { class: `verdict-dot verdict-${v.level}`, title: v.headline, 'data-verdict': d.verdict ?? '' },
                  v.level === 'running' ? 'running' : d.verdict ? `${d.verdict.toUpperCase()}${d.regressed ? ' · regressed' : ''} — ${v.headline}` : v.headline,
                ),
              ];
            }),
          ),
    );
    const newer = h('button', { type: 'button', class: 'secondary', disabled: !this.pager.hasNewer }, '← Newer');
    const older = h('button', { type: 'button', class: 'secondary', disabled: !this.nextCursor }, 'Older →');
    newer.addEventListener('click', () => {
      if (this.pager.newer()) void this.refreshList(new AbortController().signal);
    });
    older.addEventListener('click', () => {
      if (this.pager.older(this.nextCursor)) void this.refreshList(new AbortController().signal);
    });
    replace(this.pagerBox, newer, h('span', { class: 'muted' }, ` page ${this.pager.page} `), older);
  }
}
