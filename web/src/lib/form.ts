// Turns the drill and schedule forms' raw values into API request bodies, with the checks a person
// should hear about before the server refuses. The server validates again.

import type { DrillOptions, DrillRequest, DrillTarget, Fault, ScheduleRequest } from '../api/types';
import { FORM_FAULTS } from '../api/types';

export type TargetKind = 'broker' | 'leader_of' | 'controller' | 'random';

export interface DrillFormValues {
  fault: string;
  targetKind: TargetKind;
  broker: string;
  topic: string;
  partition: string;
  repeats: string;
  grace_s: string;
  pause_s: string;
  baseline_s: string;
  observe_min_s: string;
  observe_timeout_s: string;
  recover_timeout_s: string;
  preferred_election: boolean;
  allow_unavailable: boolean;
}

export const EMPTY_DRILL_FORM: DrillFormValues = {
  fault: 'kill',
  targetKind: 'broker',
  broker: '',
  topic: '',
  partition: '0',
  repeats: '1',
  grace_s: '',
  pause_s: '',
  baseline_s: '',
  observe_min_s: '',
  observe_timeout_s: '',
  recover_timeout_s: '',
  preferred_election: true,
  allow_unavailable: false,
};

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

const TOPIC_RE = /^[a-zA-Z0-9._-]{1,249}$/;

function intField(raw: string, name: string, min: number, max: number): Parsed<number | undefined> {
  const s = raw.trim();
  if (s === '') return { ok: true, value: undefined };
  if (!/^-?[0-9]+$/.test(s)) return { ok: false, error: `${name} must be a whole number` };
  const n = Number(s);
  if (n < min || n > max) return { ok: false, error: `${name} must be between ${min} and ${max}` };
  return { ok: true, value: n };
}

export function parseTarget(v: Pick<DrillFormValues, 'targetKind' | 'broker' | 'topic' | 'partition'>): Parsed<DrillTarget> {
  switch (v.targetKind) {
    case 'broker': {
      const b = intField(v.broker, 'broker', 0, 2147483647);
      if (!b.ok) return b;
      if (b.value === undefined) return { ok: false, error: 'choose the broker to target' };
      return { ok: true, value: { broker: b.value } };
    }
    case 'leader_of': {
      const topic = v.topic.trim();
      if (!TOPIC_RE.test(topic) || topic === '.' || topic === '..') return { ok: false, error: 'topic must be a Kafka topic name' };
      const p = intField(v.partition, 'partition', 0, 2147483647);
      if (!p.ok) return p;
      if (p.value === undefined) return { ok: false, error: 'partition is required' };
      return { ok: true, value: { leader_of: { topic, partition: p.value } } };
    }
    case 'controller':
      return { ok: true, value: { controller: true } };
    case 'random':
      return { ok: true, value: { random: true } };
  }
}

export function parseDrillForm(v: DrillFormValues): Parsed<DrillRequest> {
  if (!(FORM_FAULTS as string[]).includes(v.fault)) return { ok: false, error: `unknown fault "${v.fault}"` };
  const fault = v.fault as Fault;
  const target = parseTarget(v);
  if (!target.ok) return target;
  const options: DrillOptions = {};
  const fields: [keyof DrillOptions, string, number, number][] = [
    ['repeats', v.repeats, 1, 100],
    ['grace_s', v.grace_s, 0, 3600],
    ['baseline_s', v.baseline_s, 0, 3600],
    ['observe_min_s', v.observe_min_s, 0, 3600],
    ['observe_timeout_s', v.observe_timeout_s, 1, 86400],
    ['recover_timeout_s', v.recover_timeout_s, 1, 86400],
  ];
  if (fault === 'pause') fields.push(['pause_s', v.pause_s, 1, 3600]);
  for (const [key, raw, min, max] of fields) {
    const r = intField(raw, key, min, max);
    if (!r.ok) return r;
    if (r.value !== undefined) (options as Record<string, number>)[key] = r.value;
  }
  // grace_s only means something for a graceful stop (stop, restart).
  if (fault !== 'stop' && fault !== 'restart') delete options.grace_s;
  options.preferred_election = v.preferred_election;
  options.allow_unavailable = v.allow_unavailable;
  return { ok: true, value: { fault, target: target.value, options } };
}

const CONFIRM_VERB: Record<Fault, string> = {
  kill: 'SIGKILL',
  stop: 'Stop (SIGTERM)',
  pause: 'Pause (SIGSTOP)',
  restart: 'Restart',
  isolate: 'Isolate',
  throttle: 'Throttle',
  disk_full: 'Fill the disk of',
  disk_slow: 'Slow the disk of',
  rolling_restart: 'Restart, one at a time,',
  observed: 'Watch, without injecting anything,',
};

/** The sentence the confirmation dialog asks, naming the broker. */
export function confirmText(req: DrillRequest, cluster: string): string {
  const t = req.target ?? { every_broker: true };
  let who: string;
  if (t.broker !== undefined) who = `broker ${t.broker}`;
  else if (t.every_broker) who = 'every broker';
  else if (t.nodes) who = `nodes ${t.nodes.join(', ')}`;
  else if (t.leader_of) who = `the broker leading ${t.leader_of.topic}-${t.leader_of.partition}`;
  else if (t.controller) who = 'the controller';
  else who = 'a random broker';
  const o = req.options ?? {};
  const parts = [`${CONFIRM_VERB[req.fault]} ${who} of cluster "${cluster}"`];
  if (req.fault === 'pause' && o.pause_s !== undefined) parts.push(`for ${o.pause_s} s`);
  if ((o.repeats ?? 1) > 1) parts.push(`${o.repeats} times`);
  let s = `${parts.join(' ')}?`;
  if (o.allow_unavailable) s += ' Partitions may go offline: allow_unavailable is set.';
  return s;
}

export interface ScheduleFormValues {
  cluster: string;
  name: string;
  cron: string;
  jitter_s: string;
  enabled: boolean;
}

const CRON_MACROS = ['@hourly', '@daily', '@midnight', '@weekly', '@monthly', '@yearly', '@annually'];

/**
 * A crontab(5) line as kfaild takes it (five fields: minute hour day-of-month month day-of-week,
 * evaluated in UTC, or a macro such as @daily), loosely checked; the server checks it exactly.
 */
export function looksLikeCron(s: string): boolean {
  const t = s.trim().toLowerCase();
  if (CRON_MACROS.includes(t)) return true;
  const f = t.split(/\s+/);
  if (f.length !== 5) return false;
  return f.every((x) => /^[0-9*/,a-z-]+$/.test(x));
}

export function parseScheduleForm(v: ScheduleFormValues, drill: DrillFormValues): Parsed<ScheduleRequest> {
  if (v.cluster.trim() === '') return { ok: false, error: 'choose a cluster' };
  const name = v.name.trim();
  if (name === '') return { ok: false, error: 'name is required' };
  if (!looksLikeCron(v.cron)) return { ok: false, error: 'cron must have 5 fields (minute hour day month weekday, UTC), e.g. "0 3 * * 1", or a macro such as @daily' };
  const jitter = intField(v.jitter_s, 'jitter_s', 0, 86400);
  if (!jitter.ok) return jitter;
  const d = parseDrillForm(drill);
  if (!d.ok) return d;
  const req: ScheduleRequest = { cluster: v.cluster.trim(), name, cron: v.cron.trim().replace(/\s+/g, ' '), enabled: v.enabled, drill: d.value };
  if (jitter.value !== undefined) req.jitter_s = jitter.value;
  return { ok: true, value: req };
}
