// Schedules: the cron-driven drills; enable / disable, create, delete.

import { api, ApiError } from '../api/client';
import type { ClusterSummary, Schedule } from '../api/types';
import { brokerStatuses } from '../lib/brokers';
import { targetLabel } from '../lib/drill';
import { parseScheduleForm } from '../lib/form';
import { formatAgo, formatTimestamp, nowUs } from '../lib/time';
import { confirmDialog } from '../ui/dialogs';
import { field, h, notice, replace, select, table } from '../ui/dom';
import { drillFields, type DrillFields } from '../ui/drillform';
import { chooseCluster, clusters, type View } from './view';

function outcomeText(o: unknown): string {
  if (o === null || o === undefined) return '—';
  if (typeof o === 'string') return o;
  return JSON.stringify(o);
}

export class SchedulesView implements View {
  readonly el = h('section', { class: 'page schedules' });
  private readonly list = h('div', { 'data-testid': 'schedule-list' });
  private readonly listError = h('div');
  private readonly formBox = h('section', { class: 'card' });
  private fields: DrillFields | null = null;
  private clusterSelect: HTMLSelectElement | null = null;

  constructor() {
    replace(this.el, h('h1', null, 'Schedules'), h('section', { class: 'card' }, this.listError, this.list), this.formBox);
  }

  async refresh(signal: AbortSignal): Promise<void> {
    const cs = await clusters(signal);
    if (!this.fields) this.buildForm(cs);
    await this.refreshList(signal);
  }

  pollMs(): number {
    return 10_000;
  }

  private async refreshList(signal?: AbortSignal): Promise<void> {
    let items: Schedule[];
    try {
      items = (await api.schedules(signal)).items;
      replace(this.listError);
    } catch (e) {
      if (signal?.aborted) throw e;
      replace(this.listError, notice('error', `Cannot list schedules: ${(e as Error).message}`));
      return;
    }
    const now = nowUs();
    replace(
      this.list,
      items.length === 0
        ? h('p', { class: 'muted' }, 'No schedules.')
        : table(
            ['name', 'cluster', 'cron', 'jitter', 'drill', 'enabled', 'next run', 'last run', 'last outcome', ''],
            items.map((s) => [
              h('strong', null, s.name),
              s.cluster ?? '—',
              h('code', null, s.cron),
              `${s.jitter_s} s`,
              `${s.drill.fault} ${targetLabel(s.drill.target)}`,
              this.toggle(s),
              s.enabled && s.next_run_us ? h('span', { title: formatTimestamp(s.next_run_us) }, formatAgo(s.next_run_us, now)) : '—',
              s.last_run_us ? h('span', { title: formatTimestamp(s.last_run_us) }, formatAgo(s.last_run_us, now)) : 'never',
              outcomeText(s.last_outcome),
              this.deleteButton(s),
            ]),
          ),
    );
  }

  private toggle(s: Schedule): HTMLElement {
    const box = h('input', { type: 'checkbox', checked: s.enabled, 'aria-label': `enable schedule ${s.name}` });
    box.addEventListener('change', async () => {
      box.disabled = true;
      try {
        await api.patchSchedule(s.id, { enabled: box.checked });
      } catch (e) {
        box.checked = !box.checked;
        replace(this.listError, notice('error', e instanceof ApiError ? e.detail : (e as Error).message));
      }
      box.disabled = false;
      await this.refreshList();
    });
    return h('label', { class: 'switch' }, box, s.enabled ? ' on' : ' off');
  }

  private deleteButton(s: Schedule): HTMLElement {
    const b = h('button', { type: 'button', class: 'secondary small' }, 'Delete');
    b.addEventListener('click', async () => {
      if (!(await confirmDialog('Delete schedule?', `Delete schedule "${s.name}" (${s.cron}) of cluster ${s.cluster}? Drills it ran are kept.`, 'Delete'))) return;
      try {
        await api.deleteSchedule(s.id);
      } catch (e) {
        replace(this.listError, notice('error', e instanceof ApiError ? e.detail : (e as Error).message));
      }
      await this.refreshList();
    });
    return b;
  }

  private buildForm(cs: ClusterSummary[]): void {
    const cluster = select('cluster', cs.map((c): [string, string] => [c.name, c.name]), chooseCluster(null, cs) ?? '');
    this.clusterSelect = cluster;
    const name = h('input', { name: 'name', placeholder: 'nightly kill of broker 1', autocomplete: 'off' });
    const cron = h('input', { name: 'cron', placeholder: '0 3 * * *', autocomplete: 'off', class: 'mono' });
    const jitter = h('input', { name: 'jitter_s', type: 'number', min: 0, placeholder: '0' });
    const enabled = h('input', { type: 'checkbox', name: 'enabled', checked: true });
    this.fields = drillFields({}, 'sched');
    const error = h('div');
    const form = h(
      'form',
      { novalidate: true },
      h('div', { class: 'row' }, field('Cluster', cluster), field('Name', name), field('Cron (UTC)', cron, 'minute hour day month weekday'), field('Jitter (s)', jitter)),
      h('label', { class: 'check' }, enabled, ' enabled'),
      h('h3', null, 'Drill'),
      this.fields.el,
      h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Create schedule')),
      error,
    );
    cluster.addEventListener('change', () => void this.loadBrokers());
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      replace(error);
      const parsed = parseScheduleForm({ cluster: cluster.value, name: name.value, cron: cron.value, jitter_s: jitter.value, enabled: enabled.checked }, this.fields!.values());
      if (!parsed.ok) {
        replace(error, notice('error', parsed.error));
        return;
      }
      try {
        await api.createSchedule(parsed.value);
        form.reset();
        replace(error, notice('info', `Schedule "${parsed.value.name}" created.`));
        await this.refreshList();
      } catch (err) {
        replace(error, notice('error', err instanceof ApiError ? err.detail : (err as Error).message));
      }
    });
    replace(this.formBox, h('h2', null, 'New schedule'), form);
    void this.loadBrokers();
  }

  private async loadBrokers(): Promise<void> {
    const c = this.clusterSelect?.value;
    if (!c || !this.fields) return;
    try {
      this.fields.setBrokers(brokerStatuses(await api.cluster(c)).map((b) => b.id));
    } catch {
      this.fields.setBrokers([]);
    }
  }
}
