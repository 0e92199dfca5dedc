// Client profiles on the pages: a drill's profiles side by side per partition and the cluster
// probe's profiles (the verdict per profile is in common.ts). Nothing is shown with one profile.

import type { ClusterDetail, Drill } from '../api/types';
import { cssToken } from '../lib/drill';
import { profileStateRows, profileTable, settingsLines, type ProfileTable, type ProfileView } from '../lib/profiles';
import { badge, h, notice } from '../ui/dom';
import { roleBadge } from './common';

const CELL_HEADS = ['ack stall', 'receive stall', 'discovery', 'resume', 'mechanism'];

function settingsDetails(v: ProfileView): HTMLElement {
  const lines = settingsLines(v.settings);
  return h(
    'details',
    { class: 'more profile-settings', 'data-profile': v.profile },
    h('summary', null, `${v.profile}${v.client ? ` (${v.client})` : ''}${v.primary ? ', primary' : ''}: settings in force`),
    lines.length ? h('pre', { class: 'mono' }, lines.join('\n')) : h('p', { class: 'muted' }, 'Not recorded for this run.'),
  );
}

function profileTableEl(t: ProfileTable, multiRun: boolean): HTMLElement {
  const n = CELL_HEADS.length;
  const head = h(
    'thead',
    null,
    h(
      'tr',
      null,
      h('th', { scope: 'col', rowspan: 2 }, 'partition'),
      h('th', { scope: 'col', rowspan: 2 }, 'role'),
      t.views.map((v) => h('th', { scope: 'colgroup', colspan: n, class: 'profile-group' }, v.profile, v.primary ? h('small', { class: 'muted' }, ' primary') : null)),
    ),
    h('tr', null, t.views.map(() => CELL_HEADS.map((c) => h('th', { scope: 'col' }, c)))),
  );
  const body = h(
    'tbody',
    null,
    t.rows.map((r) =>
      h(
        'tr',
        { 'data-testid': 'profile-row', 'data-run': t.run, 'data-topic': r.topic, 'data-partition': r.partition },
        h('td', null, r.key),
        h('td', null, r.role ? roleBadge(r.role) : '—'),
        r.cells.map((c, i) => {
          const v = t.views[i]!;
          if (!c) return h('td', { colspan: n, class: 'muted' }, v.problem ? '— (see the problem above)' : '—');
          return [
            h('td', { class: 'profile-first', 'data-profile': v.profile, 'data-ack-stall-us': c.ack_us ?? '' }, c.ack),
            h('td', null, c.receive),
            h('td', null, c.discovery),
            h('td', null, c.resume),
            h('td', null, c.mechanism),
          ];
        }),
      ),
    ),
  );
  return h(
    'div',
    { class: 'profile-run', 'data-run': t.run },
    multiRun ? h('h3', null, `Run ${t.run}`) : null,
    t.views.map((v) => (v.problem ? notice('warn', `Profile ${v.profile}: ${v.problem}`, { 'data-testid': 'profile-problem', 'data-profile': v.profile }) : null)),
    h('div', { class: 'table-wrap' }, h('table', { class: 'profiles', 'data-testid': 'profiles-table' }, head, body)),
    t.views.map(settingsDetails),
  );
}

/** A drill's client profiles side by side per partition and run; null with one profile. */
export function profilesSection(d: Drill): HTMLElement | null {
  const tables = d.runs.map(profileTable).filter((t): t is ProfileTable => t !== null);
  if (tables.length === 0) return null;
  return h(
    'section',
    { class: 'card', 'data-testid': 'profiles' },
    h('h2', null, 'Client profiles'),
    h('p', { class: 'muted' }, 'Each profile is its own producer and consumer on the same partitions, with its own client settings: the same fault as each client saw it.'),
    tables.map((t) => profileTableEl(t, d.runs.length > 1)),
  );
}

/** The cluster probe's profiles (name, client, phase, problem); null with one profile. */
export function clusterProfilesBlock(c: ClusterDetail): HTMLElement | null {
  const rows = profileStateRows(c);
  if (rows.length === 0) return null;
  return h(
    'div',
    { class: 'cluster-profiles', 'data-testid': 'cluster-profiles' },
    h('strong', null, 'Client profiles: '),
    rows.map((r) =>
      h(
        'span',
        { class: 'profile-chip', 'data-testid': 'cluster-profile', 'data-profile': r.profile, 'data-phase': r.phase, title: settingsLines(r.settings).join('\n') },
        `${r.profile} (${r.client}${r.primary ? ', primary' : ''}) `,
        badge(r.phase, `${r.phase === 'probing' && !r.problem ? 'ok' : 'warn'} phase-${cssToken(r.phase)}`),
        r.problem ? h('span', { class: 'profile-problem' }, ` ${r.problem}`) : null,
        ' ',
      ),
    ),
  );
}
