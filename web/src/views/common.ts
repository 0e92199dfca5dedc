// Pieces shared by the drill pages: the verdict banner, stall bars by role, phase bars, the
// cluster picker.

import type { ClusterSummary, Drill, Run, VerdictStatus } from '../api/types';
import {
  cssToken,
  faultLabel,
  hitBrokers,
  PHASE_LABEL,
  phaseSegments,
  ROLE_LABEL,
  runFaultUs,
  stallRows,
  stallScaleUs,
  type PhaseName,
  objectiveVerdict,
  verdict,
} from '../lib/drill';
import { profileVerdicts } from '../lib/profiles';
import { formatAgo, formatDuration, formatTimestamp, nowUs } from '../lib/time';
import { PHASE_COLOR, ROLE_COLOR } from '../ui/colors';
import { badge, h, select } from '../ui/dom';

const VERDICT_CLASS: Record<VerdictStatus, string> = { pass: 'ok', fail: 'bad', inconclusive: 'warn' };

/** One badge per profile with its own verdict; null with one profile. */
export function profileVerdictBadges(d: Drill): HTMLElement | null {
  const vs = profileVerdicts(d);
  if (vs.length === 0) return null;
  return h(
    'div',
    { class: 'profile-verdicts', 'data-testid': 'profile-verdicts' },
    'By client profile: ',
    vs.map((v) => badge(`${v.profile} ${v.verdict.toUpperCase()}`, `verdict-${VERDICT_CLASS[v.verdict]}`, { 'data-testid': 'profile-verdict', 'data-profile': v.profile, 'data-verdict': v.verdict })),
  );
}

/** kfaild's verdict against the objectives: a badge, then what failed, what could not be measured, and the regressions. */
export function objectiveBlock(d: Drill): HTMLElement | null {
  const o = objectiveVerdict(d);
  if (o.status === null) return null;
  const list = (items: string[], title: string, testid: string) =>
    items.length ? h('div', { class: 'verdict-list' }, h('strong', null, title), h('ul', null, items.map((t) => h('li', { 'data-testid': testid }, t)))) : null;
  return h(
    'div',
    { class: 'objective-verdict', 'data-testid': 'objective-verdict', 'data-verdict': o.status },
    h(
      'div',
      { class: 'verdict-headline' },
      badge(o.status.toUpperCase(), `verdict-${VERDICT_CLASS[o.status]}`),
      ' ',
      o.status === 'pass'
        ? `all ${o.checks - o.notApplicable.length} objective checks met`
        : o.status === 'fail'
          ? `${o.failed.length} of ${o.checks} objective checks failed`
          : o.reason ?? `${o.inconclusive.length} of ${o.checks} objective checks could not be measured`,
      d.regressed ? badge('REGRESSED', 'verdict-warn') : null,
    ),
    profileVerdictBadges(d),
    list(o.failed, 'Failed', 'failed-check'),
    list(o.inconclusive, 'Not measured', 'inconclusive-check'),
    list(o.notApplicable, 'Not applicable', 'not-applicable-check'),
    list(o.regressions, 'Regressions (against the median of earlier drills)', 'regression'),
  );
}

export function verdictBanner(d: Drill): HTMLElement {
  const v = verdict(d);
  const when = d.finished_us ?? d.started_us ?? d.created_us;
  return h(
    'div',
    { class: `verdict verdict-${v.level}`, 'data-testid': 'verdict', 'data-level': v.level },
    objectiveBlock(d),
    h('div', { class: 'verdict-headline' }, v.headline),
    h(
      'div',
      { class: 'verdict-meta' },
      h('a', { href: `#/drills/${d.id}` }, `Drill #${d.id}`),
      ` · ${faultLabel(d.fault)} · ${hitBrokers(d)} · cluster ${d.cluster ?? '(no longer configured)'} · `,
      h('span', { title: formatTimestamp(when) }, `${formatAgo(when, nowUs())} (${formatTimestamp(when)})`),
      d.runs.length > 1 ? ` · ${d.runs.length} runs` : '',
      d.schedule_id !== null ? ` · from schedule #${d.schedule_id}` : '',
    ),
    v.facts.length ? h('ul', { class: 'facts' }, v.facts.map((f) => h('li', null, f))) : null,
  );
}

export function roleBadge(role: keyof typeof ROLE_LABEL): HTMLElement {
  return h('span', { class: `role role-${cssToken(role)}`, style: { borderColor: ROLE_COLOR[role], color: ROLE_COLOR[role] } }, ROLE_LABEL[role] ?? role);
}

function bar(us: number | null, scale: number, color: string, cls: string, label: string): HTMLElement {
  const pct = us === null ? 0 : Math.max(0.5, (100 * us) / scale);
  return h(
    'div',
    { class: `bar-track ${cls}`, title: `${label}: ${formatDuration(us)}` },
    h('div', { class: 'bar-fill', style: { width: `${pct}%`, background: color } }),
    h('span', { class: 'bar-label' }, `${label} ${formatDuration(us)}`),
  );
}

/** Per partition (and run), the ack and receive stall as bars coloured by the partition's role. */
export function stallBars(d: Drill): HTMLElement {
  const rows = stallRows(d);
  if (rows.length === 0) return h('p', { class: 'muted' }, 'No analysis (the drill did not get to inject a fault).');
  const scale = stallScaleUs(rows);
  const multi = d.runs.length > 1;
  return h(
    'div',
    { class: 'stall-bars', 'data-testid': 'stall-bars' },
    rows.map((r) =>
      h(
        'div',
        {
          class: 'stall-row',
          'data-testid': 'partition-row',
          'data-run': r.run,
          'data-topic': r.topic,
          'data-partition': r.partition,
          'data-role': r.role,
          'data-ack-stall-us': r.ack_us ?? '',
        },
        h('div', { class: 'stall-name' }, h('strong', null, r.key), multi ? h('small', null, ` run ${r.run}`) : null, ' ', roleBadge(r.role)),
        h(
          'div',
          { class: 'stall-bars-pair' },
          bar(r.ack_us, scale, ROLE_COLOR[r.role], 'ack', 'writes (ack)'),
          bar(r.receive_us, scale, `${ROLE_COLOR[r.role]}88`, 'receive', 'reads (receive)'),
        ),
      ),
    ),
  );
}

/** Per partition, the stall split into phases as one stacked bar, on a common scale. */
export function phaseBars(d: Drill): HTMLElement {
  const items: { key: string; run: Run; segs: ReturnType<typeof phaseSegments>; role: string }[] = [];
  for (const run of d.runs) {
    for (const p of run.analysis?.partitions ?? []) {
      items.push({ key: `${p.topic}-${p.partition}`, run, segs: phaseSegments(p, runFaultUs(run)), role: p.role });
    }
  }
  if (items.length === 0) return h('p', { class: 'muted' }, 'No phases recorded.');
  const scale = Math.max(1, ...items.map((i) => i.segs.reduce((s, x) => s + x.duration_us, 0)));
  const used = new Set<PhaseName>(items.flatMap((i) => i.segs.map((s) => s.name)));
  const multi = d.runs.length > 1;
  return h(
    'div',
    { class: 'phase-bars' },
    h(
      'div',
      { class: 'legend' },
      (Object.keys(PHASE_LABEL) as PhaseName[])
        .filter((n) => used.has(n))
        .map((n) => h('span', { class: 'legend-item' }, h('i', { style: { background: PHASE_COLOR[n] } }), PHASE_LABEL[n])),
    ),
    items.map((it) =>
      h(
        'div',
        { class: 'phase-row', 'data-partition-key': it.key },
        h('div', { class: 'stall-name' }, h('strong', null, it.key), multi ? h('small', null, ` run ${it.run.run}`) : null, h('small', { class: 'muted' }, ` ${it.role.replace(/_/g, ' ')}`)),
        h(
          'div',
          { class: 'stack' },
          it.segs.length === 0
            ? h('span', { class: 'muted' }, 'no stall')
            : it.segs.map((s) =>
                h(
                  'div',
                  {
                    class: `seg seg-${s.name}`,
                    style: { width: `${(100 * s.duration_us) / scale}%`, background: PHASE_COLOR[s.name] },
                    title: `${PHASE_LABEL[s.name]}: ${formatDuration(s.duration_us)}`,
                  },
                  (100 * s.duration_us) / scale > 12 ? h('span', null, formatDuration(s.duration_us)) : null,
                ),
              ),
        ),
        it.segs.length ? h('div', { class: 'phase-text' }, it.segs.map((s) => `${PHASE_LABEL[s.name]} ${formatDuration(s.duration_us)}`).join(' · ')) : null,
      ),
    ),
  );
}

/** Departure line: how the target left (fenced after the session timeout, or shut down). */
export function departureText(run: Run): string | null {
  const a = run.analysis;
  if (!a) return null;
  const fault = runFaultUs(run);
  if (a.departure === 'fenced') {
    return `Broker ${a.target} was fenced by the controller ${a.departure_at_us !== null && fault !== null ? `${formatDuration(a.departure_at_us - fault)} after the fault` : ''} (session timeout).`;
  }
  if (a.departure === 'controlled_shutdown') {
    return `Broker ${a.target} left by controlled shutdown${a.departure_at_us !== null && fault !== null ? `, ${formatDuration(a.departure_at_us - fault)} after the fault` : ''}.`;
  }
  return `No fencing or controlled shutdown of broker ${a.target} was seen.`;
}

export function clusterPicker(items: readonly ClusterSummary[], value: string | null, onChange: (c: string) => void): HTMLElement {
  const s = select(
    'cluster',
    items.map((c) => [c.name, c.name]),
    value ?? '',
  );
  s.addEventListener('change', () => onChange(s.value));
  return h('label', { class: 'field inline' }, h('span', { class: 'field-label' }, 'Cluster'), s);
}

export function stateBadge(d: Drill): HTMLElement {
  return badge(d.state, `state-${cssToken(d.state)}`, { 'data-testid': 'drill-state', 'data-state': d.state });
}
