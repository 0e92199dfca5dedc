// Drill detail (#/drills/<id>): state and abort while running; a timeline with one lane per probe
// partition (a tick per ack, so the stall is an empty stretch) and markers for the events; the
// events as a table relative to the fault; the analysis per run.

import { api, ApiError } from '../api/client';
import type { ClusterDetail, Drill, Sample, Timeline } from '../api/types';
import { controlPlaneRow, coordinatorsRow, rollingRows, secondFaultRow, stepOffsets, cssToken, faultLabel, hitBrokers, isRunning, mechanismText, observedLine, PHASE_LABEL, phaseText, ROLE_LABEL, runFaultUs, stallText, targetLabel } from '../lib/drill';
import { SampleWindow } from '../lib/gaps';
import { clusterProfiles, drillProfiles } from '../lib/profiles';
import {
  buildLane,
  coverageNote,
  drillPartitions,
  eventRows,
  laneRefKey,
  laneRefs,
  laneSummary,
  markers,
  sortPartitions,
  thinMarkers,
  timelineOrigin,
  xRange,
  type Lane,
  type MarkerCategory,
  type PartitionRef,
} from '../lib/timeline';
import { formatDuration, formatRelative, formatTimestamp, rfc3339FromUs } from '../lib/time';
import { TimelineChart } from '../ui/charts';
import { MARKER_COLOR } from '../ui/colors';
import { confirmDialog } from '../ui/dialogs';
import { h, notice, replace, table } from '../ui/dom';
import { departureText, phaseBars, roleBadge, stallBars, stateBadge, verdictBanner } from './common';
import { profilesSection } from './profiles';
import type { View } from './view';

const DAY_US = 86_400_000_000;

const CATEGORY_LABEL: Record<MarkerCategory, string> = {
  fault: 'fault',
  fenced: 'fenced / shutdown',
  leader: 'leader change',
  client: 'client update',
  recovery: 'recovery',
  isr: 'ISR change',
  broker: 'broker gone / back, controller',
  probe: 'probe held back / idle',
};

export class DrillView implements View {
  readonly el = h('section', { class: 'page drill' });
  private readonly head = h('div');
  private readonly actions = h('div', { class: 'toolbar' });
  private readonly summary = h('div');
  private readonly timelineCard = h('section', { class: 'card' });
  private readonly chartBox = h('div', { class: 'timeline-chart', 'data-testid': 'timeline' });
  private readonly readout = h('div', { class: 'readout muted' }, 'Drag across the chart to zoom, double-click to reset.');
  private readonly laneList = h('ul', { class: 'lane-gaps', 'data-testid': 'lane-gaps' });
  private readonly legend = h('div', { class: 'legend' });
  private readonly timelineNote = h('div');
  private readonly events = h('div');
  private readonly analysis = h('div');
  private readonly showReceive = h('input', { type: 'checkbox', checked: true });
  private chart: TimelineChart | null = null;
  private drill: Drill | null = null;
  private timeline: Timeline | null = null;
  private lanes: Lane[] = [];
  private readonly windows = new Map<string, SampleWindow>();
  private lastState: string | null = null;
  private lastSamplesAt = 0;
  private probePartitions: PartitionRef[] | null = null;
  private probeProfiles: string[] = [];
  private finalLoaded = false;

  constructor(private readonly id: number) {
    this.showReceive.addEventListener('change', () => this.drawChart());
    replace(
      this.timelineCard,
      h('h2', null, 'Timeline'),
      h('p', { class: 'muted' }, 'One lane per probe partition (with several client profiles, one per partition and profile, side by side): a tick per ack (upper half) and per receipt (lower half). A stall is the empty stretch; the longest ack gap is shaded with its length. Times in seconds from the fault.'),
      h('label', { class: 'check' }, this.showReceive, ' show receipts'),
      this.legend,
      this.chartBox,
      this.readout,
      this.laneList,
      this.timelineNote,
    );
    replace(
      this.el,
      h('p', { class: 'crumbs' }, h('a', { href: '#/drills' }, '← Drills')),
      this.head,
      this.actions,
      this.summary,
      this.timelineCard,
      h('section', { class: 'card' }, h('h2', null, 'Events'), this.events),
      this.analysis,
    );
  }

  async refresh(signal: AbortSignal): Promise<void> {
    let d: Drill;
    try {
      d = await api.drill(this.id, signal);
    } catch (e) {
      if (signal.aborted) throw e;
      if (e instanceof ApiError && e.status === 404) {
        replace(this.head, h('h1', null, `Drill #${this.id}`), notice('error', `No drill #${this.id}.`));
        this.drill = null;
        return;
      }
      replace(this.summary, notice('error', `Cannot read drill #${this.id}: ${(e as Error).message}`));
      throw e;
    }
    const changed = d.state !== this.lastState || JSON.stringify(d.runs) !== JSON.stringify(this.drill?.runs);
    this.drill = d;
    this.renderHead(d);
    if (changed) this.renderSummary(d);
    this.lastState = d.state;

    const running = isRunning(d.state);
    if (!running && this.finalLoaded) return;
    await this.refreshTimeline(d, signal);
    // While running the samples grow; re-read them every few seconds, and once more at the end.
    if (!running || Date.now() - this.lastSamplesAt > 3000) {
      await this.refreshSamples(d, signal);
      this.lastSamplesAt = Date.now();
      if (!running) this.finalLoaded = true;
    }
    this.drawChart();
  }

  pollMs(): number | null {
    if (!this.drill) return 5000;
    return isRunning(this.drill.state) || !this.finalLoaded ? 1500 : null;
  }

  destroy(): void {
    this.chart?.destroy();
  }

  private renderHead(d: Drill): void {
    replace(
      this.head,
      h('h1', null, `Drill #${d.id} `, stateBadge(d)),
      h(
        'p',
        { class: 'muted' },
        `${faultLabel(d.fault)} of ${targetLabel(d.target)}${d.runs.some((r) => r.target !== undefined) ? ` (hit: ${hitBrokers(d)})` : ''} · cluster ${d.cluster ?? '(no longer configured)'} · created ${formatTimestamp(d.created_us)}`,
        d.started_us ? ` · started ${formatTimestamp(d.started_us)}` : '',
        d.finished_us ? ` · finished ${formatTimestamp(d.finished_us)}` : '',
      ),
      d.reason ? notice(d.state === 'failed' ? 'error' : 'warn', d.reason, { 'data-testid': 'drill-reason' }) : null,
    );
    if (isRunning(d.state)) {
      const btn = h('button', { type: 'button', class: 'danger', 'data-testid': 'abort-drill' }, 'Abort drill');
      const err = h('span');
      btn.addEventListener('click', async () => {
        const ok = await confirmDialog('Abort the drill?', `Abort drill #${d.id}? kfaild stops the drill and brings ${hitBrokers(d)} back.`, 'Abort');
        if (!ok) return;
        btn.disabled = true;
        try {
          await api.abortDrill(d.id);
          replace(err, notice('info', 'Abort requested.'));
        } catch (e) {
          replace(err, notice('error', e instanceof ApiError ? e.detail : (e as Error).message));
          btn.disabled = false;
        }
      });
      if (!this.actions.querySelector('[data-testid=abort-drill]')) replace(this.actions, btn, err);
    } else {
      replace(this.actions);
    }
  }

  private renderSummary(d: Drill): void {
    const runRows = d.runs.map((r) => [
      r.step !== undefined ? `${r.run} (step)` : String(r.run),
      r.state,
      r.target === undefined ? '—' : `broker ${r.target}`,
      formatTimestamp(runFaultUs(r)),
      r.fault_time_source
        ? r.fault_time_uncertainty_us !== undefined
          ? `${r.fault_time_source} ± ${formatDuration(r.fault_time_uncertainty_us)}`
          : r.fault_time_source
        : '—',
      r.fault_requested_us && r.fault_us ? formatDuration(r.fault_us - r.fault_requested_us) : '—',
      r.recovered_us && runFaultUs(r) ? formatRelative((r.recovered_us - runFaultUs(r)!) / 1e6) : '—',
      r.preferred_leaders_restored === undefined ? '—' : r.preferred_leaders_restored ? 'yes' : 'no',
      r.reason ?? '',
    ]);
    const steps = stepOffsets(d);
    const observed = observedLine(d);
    replace(
      this.summary,
      isRunning(d.state) ? null : verdictBanner(d),
      observed ? h('p', { class: 'observed', 'data-testid': 'observed' }, observed) : null,
      d.rolling_restart
        ? h(
            'section',
            { class: 'card', 'data-testid': 'rolling-restart' },
            h('h2', null, 'Rolling restart'),
            h(
              'p',
              { class: 'muted' },
              d.rolling_restart.by === 'observed'
                ? `Faults seen one after another (not kfaild's): brokers ${d.rolling_restart.plan.join(' → ')}.`
                : `${d.rolling_restart.by === 'kill' ? 'Killed' : 'Stopped'} and started one at a time, ${d.rolling_restart.between_s} s apart: nodes ${d.rolling_restart.plan.join(' → ')}.`,
              steps.length > 1 ? ` On the timeline the steps begin at ${steps.map((s) => `+${s.at_s.toFixed(1)} s (step ${s.step})`).join(', ')}.` : '',
              d.rolling_restart.ended_at_step ? ` Ended at step ${d.rolling_restart.ended_at_step}: no later step ran.` : '',
            ),
            table(['step', 'node', 'verdict', 'ack partition·s', 'receive partition·s', 'stalled partitions', 'worst stall'], rollingRows(d.rolling_restart)),
          )
        : null,
      d.runs.length
        ? h(
            'section',
            { class: 'card' },
            h('h2', null, 'Runs'),
            table(['run', 'state', 'target', 'fault at', 'fault time from', 'fault − request', 'recovered', 'preferred leaders restored', 'reason'], runRows),
          )
        : h('p', { class: 'muted' }, `No run yet (${d.state}).`),
    );
    const analysed = d.runs.some((r) => r.analysis);
    replace(
      this.analysis,
      analysed
        ? [
            h(
              'div',
              { class: 'grid-2' },
              h('section', { class: 'card' }, h('h2', null, 'Stall per partition'), stallBars(d)),
              h('section', { class: 'card' }, h('h2', null, 'Phases'), ...d.runs.map((r) => (departureText(r) ? h('p', null, d.runs.length > 1 ? `Run ${r.run}: ` : '', departureText(r)) : null)), phaseBars(d)),
            ),
            profilesSection(d),
            h('section', { class: 'card' }, h('h2', null, 'Analysis'), this.analysisTable(d)),
            d.runs.some((r) => r.second_fault)
              ? h(
                  'section',
                  { class: 'card', 'data-testid': 'second-fault' },
                  h('h2', null, 'Second fault'),
                  h('p', { class: 'muted' }, "The analysis above is the second fault's; the first fault alone is measured up to it."),
                  table(
                    ['run', 'second fault', 'after the first', 'state', 'recovered in order', 'first fault alone: worst ack stall', 'note'],
                    d.runs.flatMap((r) => {
                      const row = secondFaultRow(r, r.second_fault);
                      return row ? [[String(r.run), ...row]] : [];
                    }),
                  ),
                )
              : null,
            d.runs.some((r) => r.control_plane)
              ? h(
                  'section',
                  { class: 'card', 'data-testid': 'control-plane' },
                  h('h2', null, 'Control plane'),
                  table(
                    ['run', 'stall', 'quorum leaderless', 'elections', 'new quorum leader', 'operations / failed', 'note'],
                    d.runs.flatMap((r) => {
                      const row = controlPlaneRow(r.control_plane);
                      return row ? [[String(r.run), ...row]] : [];
                    }),
                  ),
                )
              : null,
            d.runs.some((r) => r.coordinators)
              ? h(
                  'section',
                  { class: 'card', 'data-testid': 'coordinators' },
                  h('h2', null, 'Coordinators'),
                  table(
                    ['run', 'commit stall', 'transaction stall', 'coordinator moved', 'first commit', 'moves', 'note'],
                    d.runs.flatMap((r) => {
                      const row = coordinatorsRow(r.coordinators);
                      return row ? [[String(r.run), ...row]] : [];
                    }),
                  ),
                )
              : null,
          ]
        : null,
    );
  }

  private analysisTable(d: Drill): HTMLElement {
    const rows = d.runs.flatMap((run) =>
      sortPartitions([...(run.analysis?.partitions ?? [])]).map((p) => [
        String(run.run),
        `${p.topic}-${p.partition}`,
        roleBadge(p.role),
        stallText(p.ack),
        stallText(p.receive),
        formatDuration(p.ack.baseline?.duration_us),
        `${p.sent} / ${p.failed} / ${p.lost}`,
        `${p.duplicated} / ${p.reordered} / ${p.unresolved}`,
        phaseText(p.phases, 'detection'),
        phaseText(p.phases, 'election'),
        phaseText(p.phases, 'discovery'),
        phaseText(p.phases, 'resume'),
        p.phases.new_leader === null ? '—' : String(p.phases.new_leader),
        mechanismText(p.mechanism),
      ]),
    );
    return table(
      ['run', 'partition', 'role', 'ack stall', 'receive stall', 'baseline ack gap', 'sent / failed / lost', 'dup / reord / unresolved', PHASE_LABEL.detection, PHASE_LABEL.election, PHASE_LABEL.discovery, PHASE_LABEL.resume, 'new leader', 'mechanism'],
      rows,
    );
  }

  private async refreshTimeline(d: Drill, signal: AbortSignal): Promise<void> {
    try {
      this.timeline = await api.timeline(d.id, signal);
      replace(this.timelineNote);
    } catch (e) {
      if (signal.aborted) throw e;
      replace(this.timelineNote, notice('warn', `Timeline unavailable: ${(e as Error).message}`));
      return;
    }
    const origin = timelineOrigin(d, this.timeline);
    const rows = eventRows(this.timeline.items, origin?.us ?? null);
    replace(
      this.events,
      rows.length === 0
        ? h('p', { class: 'muted' }, 'No events recorded yet.')
        : table(
            [origin?.what === 'start' ? 't (from start)' : 't (from fault)', 'run', 'source', 'kind', 'broker', 'partition', 'detail'],
            rows.map((r) => [
              h('span', { class: 'mono', title: origin?.what === 'start' ? 'from the drill’s start (no fault yet)' : 'from the fault' }, formatRelative(r.relative, 3)),
              r.run === null ? '' : String(r.run),
              r.source,
              h('span', { class: r.category ? 'event-kind' : '', style: r.category ? { color: MARKER_COLOR[r.category] } : {} }, r.kind),
              r.broker === null ? '' : String(r.broker),
              r.partition,
              h('span', { class: 'detail' }, r.detail),
            ]),
            { 'data-testid': 'events-table' },
          ),
    );
  }

  private async partitionsFor(d: Drill, cluster: string, signal: AbortSignal): Promise<PartitionRef[]> {
    const analysed = drillPartitions(d);
    if (analysed.length) return analysed;
    if (this.probePartitions) return this.probePartitions;
    // Before the analysis, lanes come from the cluster's probe partitions.
    const c: ClusterDetail = await api.cluster(cluster, signal);
    this.probePartitions = sortPartitions(c.topics.flatMap((t) => t.partitions.filter((p) => p.probe).map((p) => ({ topic: t.name, partition: p.partition }))));
    this.probeProfiles = clusterProfiles(c);
    return this.probePartitions;
  }

  private async refreshSamples(d: Drill, signal: AbortSignal): Promise<void> {
    const tl = this.timeline;
    if (!tl) return;
    const origin = timelineOrigin(d, tl);
    if (origin === null) {
      replace(this.timelineNote, notice('info', 'The drill has not started yet.'));
      this.lanes = [];
      return;
    }
    const cluster = d.cluster;
    if (cluster === null) {
      replace(this.timelineNote, notice('warn', 'No raw samples: the drill’s cluster is no longer configured.'));
      this.lanes = [];
      return;
    }
    let parts: PartitionRef[];
    try {
      parts = await this.partitionsFor(d, cluster, signal);
    } catch (e) {
      if (signal.aborted) throw e;
      replace(this.timelineNote, notice('warn', `Cannot find the probe partitions: ${(e as Error).message}`));
      return;
    }
    // With several client profiles, a lane per partition and profile (each profile's own stream).
    const analysedProfiles = drillProfiles(d);
    const refs = laneRefs(parts, analysedProfiles.length ? analysedProfiles : this.probeProfiles);
    const truncated: string[] = [];
    const errors: string[] = [];
    const lanes = await Promise.all(
      refs.map(async (p) => {
        const key = laneRefKey(p);
        let w = this.windows.get(key);
        if (!w) {
          w = new SampleWindow(DAY_US);
          this.windows.set(key, w);
        }
        const from = Math.max(tl.from_us, w.size ? w.nextFromUs(tl.to_us) : tl.from_us);
        try {
          const res = await api.samples(cluster, p.topic, p.partition, { profile: p.profile, from: rfc3339FromUs(from), to: rfc3339FromUs(tl.to_us), limit: 100_000 }, signal);
          if (res.truncated) truncated.push(key);
          w.merge(res.items, tl.to_us);
        } catch (e) {
          if (signal.aborted) throw e;
          errors.push(`${key}: ${(e as Error).message}`);
        }
        const inWindow: Sample[] = w.samples().filter((s) => s.send_us >= tl.from_us && s.send_us < tl.to_us);
        return buildLane(p, inWindow, origin.us);
      }),
    );
    this.lanes = lanes;
    const coverage = coverageNote(lanes, (tl.from_us - origin.us) / 1e6);
    replace(
      this.timelineNote,
      coverage ? notice('warn', coverage, { 'data-testid': 'coverage-note' }) : null,
      tl.truncated ? notice('warn', 'The drill window has more events than the timeline lists: some are missing.') : null,
      truncated.length ? notice('warn', `Samples cut by the limit for ${truncated.join(', ')}: the lanes may end early.`) : null,
      errors.length ? notice('warn', `Samples unavailable: ${errors.join('; ')}`) : null,
    );
  }

  private drawChart(): void {
    const d = this.drill;
    const tl = this.timeline;
    if (!d || !tl) return;
    const origin = timelineOrigin(d, tl);
    if (origin === null) return;
    const range = xRange(tl.from_us, tl.to_us, origin.us);
    if (!(range[1] > range[0])) return;
    const ms = markers(tl.items, origin.us);
    const span = range[1] - range[0];
    const model = {
      lanes: this.lanes,
      markers: thinMarkers(ms, span / 150),
      range,
      showReceive: this.showReceive.checked,
      xLabel: origin.what === 'fault' ? 'seconds from the fault' : 'seconds from the drill’s start (no fault yet)',
    };
    if (this.chart) this.chart.update(model);
    else this.chart = new TimelineChart(this.chartBox, model, this.readout);

    const ticks = this.lanes.reduce((s, l) => s + l.ack.length, 0);
    this.chartBox.dataset['rendered'] = 'true';
    this.chartBox.dataset['lanes'] = String(this.lanes.length);
    this.chartBox.dataset['ticks'] = String(ticks);
    this.chartBox.dataset['state'] = d.state;
    this.chartBox.dataset['origin'] = origin.what;
    const cats = [...new Set(ms.map((m) => m.category))];
    replace(
      this.legend,
      h('span', { class: 'legend-item' }, h('i', { class: 'tick ack' }), 'ack'),
      this.showReceive.checked ? h('span', { class: 'legend-item' }, h('i', { class: 'tick receive' }), 'receipt') : null,
      h('span', { class: 'legend-item' }, h('i', { class: 'gapbox' }), 'longest ack gap'),
      cats.map((c) => h('span', { class: 'legend-item' }, h('i', { class: 'vline', style: { background: MARKER_COLOR[c] } }), CATEGORY_LABEL[c])),
    );
    replace(
      this.laneList,
      this.lanes.map((l) => {
        const role = d.runs[0]?.analysis?.partitions.find((p) => p.topic === l.topic && p.partition === l.partition)?.role;
        return h(
          'li',
          {
            'data-lane': l.key,
            'data-topic': l.topic,
            'data-partition': l.partition,
            'data-profile': l.profile,
            'data-acks': l.ack.length,
            'data-longest-ack-gap-s': l.longestAck ? l.longestAck.duration_s.toFixed(3) : '',
            'data-longest-receive-gap-s': l.longestReceive ? l.longestReceive.duration_s.toFixed(3) : '',
            'data-open-ack-gap-s': l.openAck && isRunning(d.state) ? l.openAck.duration_s.toFixed(3) : '',
            class: role ? `role-${cssToken(role)}` : '',
          },
          laneSummary(l),
          l.openAck && isRunning(d.state) ? h('strong', null, ` · no ack for ${formatDuration(l.openAck.duration_s * 1e6)} so far`) : '',
          role ? ` · ${ROLE_LABEL[role]}` : '',
          l.failed ? ` · ${l.failed} failed sends` : '',
        );
      }),
    );
  }
}
