#!/usr/bin/env node
// A stand-in for kfaild's HTTP API, for developing the dashboard and smoke-testing the browser
// test without Kafka. It serves web/dist like kfaild does (index.html at "/", files at
// "/assets/<file>" and "/<file>") and answers the API with synthetic, self-consistent data: the
// lab's three brokers and topic `orders` (assignment 1:2:3, 2:3:1, 3:1:2), probe samples every
// 20 ms generated from the clock, and drills that run through their states in about 20 s with
// stalls of the article's size (kill: ~9.4 s where the target leads, ~8.6 s where it follows).
//
//   node e2e/mock-server.mjs [--port 8090] [--token secret] [--history 6] [--dist ../dist] [--check-schema]
//                            [--profiles librdkafka,java]
//
// --check-schema validates every API answer against openapi.yaml as it is sent and prints each
// departure on stderr as "mock: schema: ..." (npm run e2e:mock turns them into a failed check).
//
// --profiles names the probe's client profiles, the primary first (default: one, librdkafka). With
// more than one, the cluster lists each profile's probe, every run carries the others' analyses
// (`profiles`), the verdict one per profile, statistics a group per profile, and samples answer
// ?profile=: a profile after the primary discovers the new leader PROFILE_LAG_US later.
//
// It is not kfaild: shapes follow ../../openapi.yaml (test/mock-schema.test.ts checks every route's
// answers against it; --check-schema checks each answer as it is sent), numbers are made up.

import { createServer } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import { dirname, extname, join, normalize, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => {
    if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1] && !all[i + 1].startsWith('--') ? all[i + 1] : 'true']);
    return acc;
  }, []),
);
const here = dirname(fileURLToPath(import.meta.url));
const PORT = Number(args.port ?? 8090);
const TOKEN = args.token ?? 'secret';
const DIST = resolve(args.dist ?? join(here, '..', 'dist'));
const HISTORY = Number(args.history ?? 6);
const schema = args['check-schema'] === 'true' ? (await import('../scripts/openapi.mjs')).responseValidator() : null;
const INTERVAL = 20_000;
const CLUSTER = 'lab';
const BROKERS = [1, 2, 3];
const ASSIGNMENT = [
  [1, 2, 3],
  [2, 3, 1],
  [3, 1, 2],
];
const TOPIC = 'orders';
const PROFILES = String(args.profiles ?? 'librdkafka').split(',').filter(Boolean);
const PRIMARY = PROFILES[0];
const MULTI = PROFILES.length > 1;
const PROFILE_CLIENT = (name) => (name === 'java' || name === 'wire' ? name : 'librdkafka');
const PROFILE_SETTINGS = (name) => (name === 'java' ? { 'metadata.max.age.ms': '300000', 'request.timeout.ms': '30000' } : { 'topic.metadata.refresh.interval.ms': '10000', 'message.timeout.ms': '30000' });
// How much later than the primary each profile's client finds the new leader (µs).
const PROFILE_LAG_US = (name) => (name === PRIMARY ? 0 : 1_200_000 * PROFILES.indexOf(name));

const nowUs = () => Date.now() * 1000;
const rfc = (us) => {
  const s = Math.floor(us / 1e6);
  return `${new Date(s * 1000).toISOString().slice(0, 19)}.${String(us - s * 1e6).padStart(6, '0')}Z`;
};
const parseTime = (s) => {
  if (!s) return null;
  const m = /^(.*?)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$/.exec(s);
  if (!m) return NaN;
  const base = Date.parse(`${m[1]}${m[3]}`);
  if (Number.isNaN(base)) return NaN;
  return base * 1000 + Number((m[2] ?? '').padEnd(6, '0').slice(0, 6));
};
// A deterministic pseudo-random number in [0, 1) from integers.
const rnd = (...xs) => {
  let h = 2166136261;
  for (const x of xs) {
    h ^= Number(BigInt.asUintN(32, BigInt(Math.floor(x))));
    h = Math.imul(h, 16777619) >>> 0;
  }
  h ^= h >>> 13;
  h = Math.imul(h, 0x5bd1e995) >>> 0;
  return ((h ^ (h >>> 15)) >>> 0) / 4294967296;
};

// ---- drills -------------------------------------------------------------------------------------

/** @type {any[]} */
const drills = [];
let nextDrillId = 1;
/** @type {any[]} */
const schedules = [];
let nextScheduleId = 1;

function roleOf(target, p) {
  const reps = ASSIGNMENT[p];
  if (reps[0] === target) return 'leader';
  return reps.includes(target) ? 'follower' : 'not_a_replica';
}

/** The plan of one run: absolute times of everything that will happen. */
function planRun(d, run, faultUs) {
  const target = d.runTargets[run - 1];
  const k = d.id * 10 + run;
  const o = d.options;
  const kill = d.fault === 'kill';
  const pause = d.fault === 'pause';
  const fenceAfter = Math.round(kill ? 8_300_000 + rnd(k, 1) * 600_000 : pause ? Math.min(8_500_000, (o.pause_s ?? 10) * 1e6) : 60_000 + rnd(k, 1) * 40_000);
  const fenced = faultUs + fenceAfter;
  const parts = ASSIGNMENT.map((reps, p) => {
    const role = roleOf(target, p);
    let stall = null;
    const start = faultUs - Math.floor(rnd(k, p, 2) * INTERVAL);
    const phases = { detection_us: null, election_us: null, discovery_us: null, resume_us: null, fenced_at_us: null, new_leader_at_us: null, client_update_at_us: null, new_leader: null };
    if (role !== 'not_a_replica') {
      phases.fenced_at_us = fenced;
      phases.detection_us = kill || pause ? fenced - faultUs : null;
      if (role === 'leader') {
        const election = Math.round(150_000 + rnd(k, p, 3) * 300_000);
        const discovery = Math.round(50_000 + rnd(k, p, 4) * 400_000);
        const resume = Math.round(20_000 + rnd(k, p, 5) * 60_000);
        phases.new_leader_at_us = fenced + election;
        phases.client_update_at_us = phases.new_leader_at_us + discovery;
        phases.election_us = election;
        phases.discovery_us = discovery;
        phases.resume_us = resume;
        phases.new_leader = reps[1];
        stall = { start_us: start, end_us: phases.client_update_at_us + resume };
      } else {
        const resume = Math.round(30_000 + rnd(k, p, 6) * 120_000);
        phases.resume_us = resume;
        stall = { start_us: start, end_us: fenced + resume };
      }
      stall.duration_us = stall.end_us - stall.start_us;
    }
    return { p, role, stall, phases };
  });
  const recovered = faultUs + Math.max(12_000_000, fenceAfter + 3_000_000);
  return { run, target, faultUs, fenced, parts, recovered, back: recovered + 6_000_000 };
}

function createDrill(body, createdUs, scheduleId = null) {
  const o = body.options ?? {};
  const repeats = o.repeats ?? 1;
  const t = body.target;
  const pickTarget = (i) => {
    if (t.broker !== undefined) return t.broker;
    if (t.leader_of) return ASSIGNMENT[t.leader_of.partition % 3][0];
    if (t.controller) return 2;
    return BROKERS[Math.floor(rnd(nextDrillId, i) * 3)];
  };
  const d = {
    id: nextDrillId++,
    cluster: CLUSTER,
    fault: body.fault,
    target: t,
    options: o,
    expect: body.expect ?? null,
    then: body.then ?? null,
    schedule_id: scheduleId,
    created_us: createdUs,
    runTargets: Array.from({ length: repeats }, (_, i) => pickTarget(i)),
    aborted_us: null,
  };
  const baseline = (o.baseline_s ?? 3) * 1e6;
  const startUs = createdUs + 400_000;
  d.plans = [];
  let cursor = startUs;
  for (let r = 1; r <= repeats; r++) {
    const baselineStart = cursor + 300_000;
    const fault = baselineStart + baseline;
    const plan = planRun(d, r, fault);
    plan.baselineStart = baselineStart;
    plan.observeEnd = Math.max(...plan.parts.map((p) => p.stall?.end_us ?? fault)) + (o.observe_min_s ?? 2) * 1e6;
    plan.recovered = Math.max(plan.recovered, plan.observeEnd + 1_000_000);
    plan.elected = plan.recovered + 1_500_000;
    plan.analysed = plan.elected + 500_000;
    d.plans.push(plan);
    cursor = plan.analysed;
  }
  d.started_us = startUs;
  d.finish_us = cursor;
  drills.push(d);
  return d;
}

function stateAt(d, now) {
  if (d.aborted_us !== null && now >= d.aborted_us) return 'aborted';
  if (now < d.created_us + 200_000) return 'queued';
  if (now < d.started_us + 300_000) return 'preflight';
  for (const p of d.plans) {
    if (now < p.faultUs) return 'baseline';
    if (now < p.faultUs + 100_000) return 'inject';
    if (now < p.observeEnd) return 'observe';
    if (now < p.recovered) return 'recover';
    if (now < p.elected) return 'elect';
    if (now < p.analysed) return 'analyse';
  }
  return 'done';
}

function drillJson(d, now = nowUs()) {
  const state = stateAt(d, now);
  const terminal = state === 'done' || state === 'aborted';
  const finished = terminal ? (state === 'aborted' ? d.aborted_us : d.finish_us) : null;
  // Like kfaild, a run appears in `runs` when it has ended (analysed, or cut short by an abort).
  const runs = d.plans
    .filter((p) => (d.aborted_us === null ? now >= p.analysed : p.faultUs < d.aborted_us && (now >= p.analysed || now >= d.aborted_us)))
    .map((p) => {
      const done = now >= p.analysed && (d.aborted_us === null || p.analysed <= d.aborted_us);
      // Like kfaild, a member appears once the run got that far (absent, not null, before).
      const run = {
        run: p.run,
        fault: d.fault,
        state: done ? 'done' : 'aborted',
        target: p.target,
        baseline_start_us: p.baselineStart,
        fault_requested_us: p.faultUs - 180,
        fault_us: p.faultUs,
        fault_at: rfc(p.faultUs),
        fault_time_source: 'local',
      };
      if (!done) run.reason = 'aborted on request during observe';
      if (now >= p.observeEnd) run.observe_end_us = p.observeEnd;
      if (now >= p.recovered) run.recovered_us = p.recovered;
      if (now >= p.elected && (d.options.preferred_election ?? true)) run.preferred_leaders_restored = true;
      if (done) run.analysis = analysisJson(d, p);
      if (done && MULTI) {
        run.profile = PRIMARY;
        run.profiles = PROFILES.slice(1).map((name) => ({ profile: name, client: PROFILE_CLIENT(name), probe_client: PROFILE_SETTINGS(name), analysis: analysisJson(d, p, name) }));
      }
      return run;
    });
  return {
    id: d.id,
    cluster: d.cluster,
    fault: d.fault,
    target: d.target,
    options: d.options,
    state,
    reason: state === 'aborted' ? 'aborted on request during observe' : null,
    schedule_id: d.schedule_id,
    created: rfc(d.created_us),
    created_us: d.created_us,
    started: now >= d.started_us ? rfc(d.started_us) : null,
    started_us: now >= d.started_us ? d.started_us : null,
    finished: finished ? rfc(finished) : null,
    finished_us: finished,
    runs,
    ...mockVerdict(d, state, runs),
  };
}

/**
 * The verdict as kfaild computes it (server/analysis/verdict.cc), for the ack and receive stall
 * objectives only: the request's `expect.max_ack_stall_s` over the default 15 s (5 s after a stop or
 * restart). A drill that started and did not finish is inconclusive; one still running has none.
 */
function mockVerdict(d, state, runs) {
  const objectives = { max_ack_stall_s: 15, max_receive_stall_s: 15, by_fault: { stop: { max_ack_stall_s: 5, max_receive_stall_s: 5 }, restart: { max_ack_stall_s: 5, max_receive_stall_s: 5 } } };
  const regression = { window: 5, factor: 1.5, min_runs: 3, min_delta_s: 1 };
  const base = { expect: d.expect ?? null, then: d.then ?? null, regressed: null, verdict: null, verdict_detail: null, rolling_restart: null, observed: null };
  if (state !== 'done' && state !== 'failed' && state !== 'aborted') return base;
  if (state !== 'done') {
    const detail = { verdict: 'inconclusive', objectives, checks: [], regressions: [], regression, reason: `the drill ${state}: aborted on request during observe` };
    return { ...base, verdict: 'inconclusive', regressed: false, verdict_detail: detail };
  }
  const checks = [];
  const views = (run) => [{ profile: PRIMARY, analysis: run.analysis }, ...(run.profiles ?? [])];
  for (const run of runs) {
    for (const view of views(run)) for (const p of view.analysis.partitions) {
      for (const kind of ['ack', 'receive']) {
        const key = `max_${kind}_stall_s`;
        let threshold = objectives.by_fault[d.fault]?.[key] ?? objectives[key];
        let source = objectives.by_fault[d.fault]?.[key] !== undefined ? `by_fault.${d.fault}.${key}` : key;
        if (d.expect?.[key] !== undefined) [threshold, source] = [d.expect[key], key];
        const measured = p[kind].stall ? p[kind].stall.duration_us / 1e6 : 0;
        checks.push({ objective: key, source, threshold, measured, unit: 's', status: measured <= threshold ? 'pass' : 'fail', run: run.run, topic: p.topic, partition: p.partition, role: p.role, reason: '', ...(view.profile === PRIMARY ? {} : { profile: view.profile }) });
      }
    }
  }
  // The mock's fourth kill regressed (a fixed, recognisable case for the dashboard's tests).
  const regressions = d.fault === 'kill' && d.id === 4 && runs[0]?.analysis
    ? [{ kind: 'ack', role: 'leader', topic: TOPIC, partition: 0, run: 1, stall_s: checks[0].measured, median_s: checks[0].measured / 1.6, factor: 1.6, previous: 3 }]
    : [];
  const verdictOf = (cs) => (cs.some((c) => c.status === 'fail') ? 'fail' : 'pass');
  const verdict = verdictOf(checks);
  const detail = { verdict, objectives: { ...objectives, ...(d.expect ?? {}) }, checks, regressions, regression };
  if (MULTI) detail.profiles = PROFILES.map((name) => ({ profile: name, verdict: verdictOf(checks.filter((c) => (c.profile ?? PRIMARY) === name)) }));
  return { ...base, verdict, regressed: regressions.length > 0, verdict_detail: detail };
}

function analysisJson(d, p, profile = PRIMARY) {
  const lag = PROFILE_LAG_US(profile);
  const later = (x) => (lag === 0 || x.role !== 'leader' ? x : { ...x, stall: { ...x.stall, end_us: x.stall.end_us + lag, duration_us: x.stall.duration_us + lag }, phases: { ...x.phases, discovery_us: x.phases.discovery_us + lag, client_update_at_us: x.phases.client_update_at_us + lag } });
  return {
    fault: d.fault,
    target: p.target,
    fault_us: p.faultUs,
    departure: d.fault === 'stop' || d.fault === 'restart' ? 'controlled_shutdown' : 'fenced',
    departure_at_us: p.fenced,
    partitions: p.parts.map(later).map((x) => ({
      topic: TOPIC,
      partition: x.p,
      role: x.role,
      ack: { stall: x.stall, baseline: { start_us: p.baselineStart + 1e6, end_us: p.baselineStart + 1e6 + 31_000, duration_us: 31_000 }, count: 900 },
      receive: {
        stall: x.stall && { start_us: x.stall.start_us + 1_000, end_us: x.stall.end_us + 40_000, duration_us: x.stall.duration_us + 39_000 },
        baseline: { start_us: p.baselineStart + 2e6, end_us: p.baselineStart + 2e6 + 35_000, duration_us: 35_000 },
        count: 900,
      },
      sent: 900,
      failed: 0,
      lost: 0,
      unresolved: 0,
      duplicated: 0,
      reordered: 0,
      phases: x.phases,
    })),
  };
}

/** Events of one drill as kfaild would record them, with absolute times. */
function drillEvents(d, now) {
  const ev = [];
  const add = (t, source, kind, extra = {}) => {
    if (t <= now && (d.aborted_us === null || t <= d.aborted_us + 3e6)) ev.push({ t_us: Math.round(t), source, kind, broker: null, topic: null, partition: null, detail: {}, ...extra });
  };
  for (const p of d.plans) {
    add(p.faultUs, 'injector', 'fault', { broker: p.target, detail: { fault: d.fault, drill: d.id, run: p.run, time_source: 'local' } });
    add(p.fenced, 'broker_log', d.fault === 'stop' || d.fault === 'restart' ? 'controlled_shutdown' : 'fenced', { broker: p.target, detail: { text: `Fencing broker ${p.target} because its session has timed out.` } });
    add(p.fenced + 40_000, 'metadata', 'broker_gone', { broker: p.target });
    for (const x of p.parts) {
      if (x.role === 'leader') {
        add(x.phases.new_leader_at_us, 'metadata', 'leader_change', { topic: TOPIC, partition: x.p, broker: x.phases.new_leader, detail: { from: p.target, leader: x.phases.new_leader } });
        add(x.phases.new_leader_at_us - 20_000, 'broker_log', 'leader_epoch_start', { topic: TOPIC, partition: x.p, broker: x.phases.new_leader, detail: { epoch: 7 } });
        add(x.phases.client_update_at_us, 'client', 'client_leader_update', { topic: TOPIC, partition: x.p, detail: { leader: x.phases.new_leader } });
      }
      if (x.role !== 'not_a_replica') add(p.fenced + 30_000 + x.p * 1000, 'metadata', 'isr_shrink', { topic: TOPIC, partition: x.p, detail: { removed: [p.target] } });
    }
    add(p.recovered - 800_000, 'injector', d.fault === 'pause' ? 'resumed' : 'started', { broker: p.target });
    add(p.recovered, 'injector', 'recovered', { broker: p.target });
    add(p.back, 'metadata', 'broker_back', { broker: p.target });
    for (const x of p.parts) if (x.role !== 'not_a_replica') add(p.back + 500_000 + x.p * 1000, 'metadata', 'isr_expand', { topic: TOPIC, partition: x.p, detail: { added: [p.target] } });
  }
  return ev.sort((a, b) => a.t_us - b.t_us);
}

/** Stall windows of partition p (from every drill), as [start, end) of held-back acks. */
function stallsOf(p, now, profile = PRIMARY) {
  const out = [];
  for (const d of drills) {
    for (const plan of d.plans) {
      const x = plan.parts[p];
      const lag = x.role === 'leader' ? PROFILE_LAG_US(profile) : 0;
      if (x.stall && plan.faultUs <= now) out.push([plan.faultUs, x.stall.end_us + lag, x.stall.start_us]);
    }
  }
  return out;
}

function brokerDownAt(b, now) {
  for (const d of drills) for (const p of d.plans) if (p.target === b && now >= p.fenced && now < p.back && p.faultUs <= now) return true;
  return false;
}

// ---- samples ------------------------------------------------------------------------------------

function samples(p, fromUs, toUs, limit, now, profile = PRIMARY) {
  const stalls = stallsOf(p, now, profile);
  const items = [];
  const end = Math.min(toUs, now);
  let seq = Math.ceil(fromUs / INTERVAL);
  for (; seq * INTERVAL < end && items.length < limit; seq++) {
    const send = seq * INTERVAL + p * 3;
    let ack = send + 1_500 + Math.floor(rnd(seq, p) * 4_000);
    for (const [f, e, s] of stalls) {
      if (ack > s && send < e && ack < e) ack = e + Math.floor((send - s) / 200);
      else if (send >= f && send < e) ack = Math.max(ack, e);
    }
    const recv = ack + 800 + Math.floor(rnd(seq, p, 9) * 1_500);
    items.push({
      seq,
      send: rfc(send),
      send_us: send,
      ack: ack <= now ? rfc(ack) : null,
      ack_us: ack <= now ? ack : null,
      ack_error: 0,
      ack_latency_us: ack <= now ? ack - send : null,
      offset: ack <= now ? seq : null,
      receive: recv <= now ? rfc(recv) : null,
      receive_us: recv <= now ? recv : null,
      receive_latency_us: recv <= now ? recv - send : null,
    });
  }
  const truncated = seq * INTERVAL < end;
  // As kfaild pages past a limit: the next page starts at the first sample left out.
  const next = truncated ? `?from=${encodeURIComponent(rfc(seq * INTERVAL))}&to=${encodeURIComponent(rfc(toUs))}&limit=${limit}` : null;
  return { items, count: items.length, truncated, next, from: rfc(fromUs), to: rfc(toUs) };
}

function lastAck(p, now) {
  // The newest ack at or before now, from the last second of samples.
  const s = samples(p, now - 60_000_000, now, 100_000, now).items.filter((x) => x.ack_us !== null);
  let best = null;
  for (const x of s) if (best === null || x.ack_us > best) best = x.ack_us;
  return best;
}

// ---- statistics ---------------------------------------------------------------------------------

const quant = (vals, q) => {
  if (!vals.length) return null;
  const s = [...vals].sort((a, b) => a - b);
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return Math.round(s[lo] + (s[hi] - s[lo]) * (pos - lo));
};
const summary = (vals) => (vals.length ? { min: quant(vals, 0), median: quant(vals, 0.5), p95: quant(vals, 0.95), max: quant(vals, 1), count: vals.length } : null);

function statistics(q, now) {
  const from = parseTime(q.get('from')) ?? -Infinity;
  const to = parseTime(q.get('to')) ?? Infinity;
  const groups = new Map();
  let nDrills = 0;
  let nRuns = 0;
  for (const d of drills) {
    const j = drillJson(d, now);
    if (j.state !== 'done') continue;
    if (q.get('cluster') && q.get('cluster') !== d.cluster) continue;
    if (q.get('fault') && q.get('fault') !== d.fault) continue;
    if (d.created_us < from || d.created_us >= to) continue;
    nDrills++;
    for (const run of j.runs) {
      nRuns++;
      for (const [profile, p] of [{ profile: PRIMARY, analysis: run.analysis }, ...(run.profiles ?? [])].flatMap((v) => v.analysis.partitions.map((x) => [v.profile, x]))) {
        if (q.get('role') && q.get('role') !== p.role) continue;
        if (q.get('partition') && Number(q.get('partition')) !== p.partition) continue;
        const key = `${profile}/${p.topic}/${p.partition}/${p.role}`;
        if (!groups.has(key)) groups.set(key, { cluster: d.cluster, profile, topic: p.topic, partition: p.partition, role: p.role, fault: d.fault, rows: [] });
        groups.get(key).rows.push({ d, j, run, p });
      }
    }
  }
  const pick = (rows, f) => rows.map(f).filter((v) => v !== null && v !== undefined);
  const regressedAt = (r, kind) =>
    (r.j.verdict_detail?.regressions ?? []).some((x) => x.kind === kind && x.run === r.run.run && x.topic === r.p.topic && x.partition === r.p.partition);
  return {
    drills: nDrills,
    runs: nRuns,
    truncated: false,
    groups: [...groups.values()].map((g) => ({
      cluster: g.cluster,
      profile: g.profile,
      topic: g.topic,
      partition: g.partition,
      role: g.role,
      fault: g.fault,
      count: g.rows.length,
      ack_stall_us: summary(pick(g.rows, (r) => r.p.ack.stall?.duration_us)),
      receive_stall_us: summary(pick(g.rows, (r) => r.p.receive.stall?.duration_us)),
      detection_us: summary(pick(g.rows, (r) => r.p.phases.detection_us)),
      election_us: summary(pick(g.rows, (r) => r.p.phases.election_us)),
      discovery_us: summary(pick(g.rows, (r) => r.p.phases.discovery_us)),
      resume_us: summary(pick(g.rows, (r) => r.p.phases.resume_us)),
      trend: g.rows.map((r) => ({ drill: r.d.id, run: r.run.run, at: rfc(r.run.fault_us), at_us: r.run.fault_us, ack_stall_us: r.p.ack.stall?.duration_us ?? null, receive_stall_us: r.p.receive.stall?.duration_us ?? null, ack_regressed: regressedAt(r, 'ack'), receive_regressed: regressedAt(r, 'receive') })),
      regressions: g.rows.filter((r) => regressedAt(r, 'ack') || regressedAt(r, 'receive')).length,
    })),
  };
}

// ---- HTTP ---------------------------------------------------------------------------------------

function send(res, status, body, headers = {}) {
  const text = body === undefined ? '' : JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store', ...headers });
  res.end(text);
}

function problem(res, status, type, title, detail, instance, headers = {}, extra = {}) {
  res.writeHead(status, { 'Content-Type': 'application/problem+json', ...headers });
  res.end(JSON.stringify({ type: `urn:kfaild:problem:${type}`, title, status, detail, instance, ...extra }));
}

async function body(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const text = Buffer.concat(chunks).toString('utf8');
  if (!text) return {};
  return JSON.parse(text);
}

const MIME = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.css': 'text/css', '.svg': 'image/svg+xml', '.png': 'image/png', '.json': 'application/json', '.ico': 'image/x-icon' };

async function serveStatic(req, res, path) {
  const rel = path === '/' ? 'index.html' : path.slice(1);
  // Only "/" and "/assets/<file>" or "/<file>", like kfaild.
  if (rel.includes('..') || !/^(assets\/)?[A-Za-z0-9._-]+$/.test(rel)) return problem(res, 404, 'not-found', 'Not Found', `no such path: ${path}`, path);
  const file = normalize(join(DIST, rel));
  try {
    const st = await stat(file);
    if (!st.isFile()) throw new Error('not a file');
    const data = await readFile(file);
    res.writeHead(200, { 'Content-Type': MIME[extname(file)] ?? 'application/octet-stream', 'Content-Length': data.length });
    res.end(req.method === 'HEAD' ? undefined : data);
  } catch {
    problem(res, 404, 'not-found', 'Not Found', `no such path: ${path}`, path);
  }
}

function clusterDetail(now) {
  const down = new Set(BROKERS.filter((b) => brokerDownAt(b, now)));
  const partitions = ASSIGNMENT.map((reps, p) => {
    const isr = reps.filter((r) => !down.has(r));
    const leader = isr[0] ?? null;
    const la = lastAck(p, now);
    const gap = la === null ? null : (now - la) / 1e6;
    return {
      partition: p,
      leader,
      replicas: reps,
      isr,
      error: null,
      probe: {
        sent: Math.floor(now / INTERVAL) % 1_000_000,
        acked: Math.floor(now / INTERVAL) % 1_000_000 - 2,
        received: Math.floor(now / INTERVAL) % 1_000_000 - 3,
        send_failed: 0,
        lost: 0,
        duplicated: 0,
        reordered: 0,
        late: 0,
        gaps: drills.length,
        in_flight: 2,
        outstanding: 1,
        oldest_outstanding_age_seconds: gap === null ? null : Math.max(gap, 0.002),
        held_ticks: 0,
        holding_since_us: null,
        last_ack: la === null ? null : rfc(la),
        last_ack_us: la,
        current_ack_gap_seconds: gap,
        longest_ack_gap_seconds: 9.41,
        last_receive: la === null ? null : rfc(la + 900),
        last_receive_us: la === null ? null : la + 900,
        current_receive_gap_seconds: gap,
        longest_receive_gap_seconds: 9.45,
      },
    };
  });
  // Combined mode: the three nodes are brokers and the KRaft quorum's voters; the first node up leads.
  const controller = BROKERS.find((b) => !down.has(b)) ?? null;
  const logEnd = Math.floor(now / 500_000);
  const quorum = {
    leader_id: controller,
    leader_epoch: 1 + drills.filter((d) => d.plans.some((p) => p.fenced <= now)).length,
    high_watermark: logEnd,
    voters: BROKERS.map((id) => (down.has(id) ? { id, log_end_offset: null, lag: null, last_caught_up_at_us: null } : { id, log_end_offset: logEnd, lag: 0, last_caught_up_at_us: now - 100_000 })),
    observers: [],
    described_at_us: now - 300_000,
  };
  const profiles = MULTI
    ? PROFILES.map((name, i) => ({
        profile: name,
        client: PROFILE_CLIENT(name),
        phase: 'probing',
        problem: null,
        run_id: `00c0ffee00c0ff${String(i).padStart(2, '0')}`,
        ticks: Math.floor(now / INTERVAL),
        held_ticks: 0,
        client_settings: PROFILE_SETTINGS(name),
        partitions: partitions.map((x) => ({ topic: TOPIC, partition: x.partition, probe: x.probe })),
      }))
    : [];
  return {
    name: CLUSTER,
    id: 1,
    bootstrap: '127.0.0.1:19091,127.0.0.1:19092,127.0.0.1:19093',
    reachable: true,
    metadata: { at: rfc(now - 50_000), at_us: now - 50_000, answered_by: controller, polls: 1000, failures: 0, last_error: null },
    controller_id: controller,
    quorum,
    brokers: BROKERS.filter((b) => !down.has(b)).map((id) => ({ id, host: '127.0.0.1', port: 19090 + id })),
    topics: [{ name: TOPIC, error: null, partitions }],
    control_plane: {
      interval_us: 500_000,
      operations: Math.floor(now / 500_000),
      failures: 0,
      gaps: 0,
      last_ok_us: now - 120_000,
      current_gap_seconds: 0.12,
      failing_since_us: null,
      last_latency_seconds: 0.004,
      longest_gap_seconds: 0.51,
      last_error: null,
      quorum: controller === null ? null : { leader_id: controller, leader_epoch: quorum.leader_epoch, leader_since_us: now - 60_000_000, last_answer_us: now - 200_000, answered_by: `127.0.0.1:${19090 + controller}` },
      quorum_error: controller === null ? 'no voter answered' : null,
      leader_changes: quorum.leader_epoch - 1,
      requests_via: 2,
    },
    coordinators: {
      group: 'kfaild-probe-lab',
      commits: {
        interval_us: 100_000,
        operations: Math.floor(now / 100_000),
        failures: 0,
        gaps: 0,
        last_ok_us: now - 40_000,
        current_gap_seconds: 0.04,
        failing_since_us: null,
        last_latency_seconds: 0.003,
        longest_gap_seconds: 0.11,
        last_error: null,
      },
      group_coordinator: controller === null ? null : { node: controller, partition: '__consumer_offsets-17', since_us: now - 60_000_000, last_answer_us: now - 200_000 },
      transactional_id: null,
      transactions: null,
      transaction_coordinator: null,
      watch_error: null,
      moves: 0,
    },
    probe: {
      phase: 'probing',
      problem: null,
      run_id: '00c0ffee00c0ffee',
      interval_us: INTERVAL,
      ticks: Math.floor(now / INTERVAL),
      skipped_ticks: 0,
      held_ticks: 0,
      max_send_lateness_us: 900,
      sender_scheduling: 'SCHED_FIFO 1',
      client_settings: { acks: 'all', 'enable.idempotence': 'true', 'message.timeout.ms': '30000', 'max.in.flight.requests.per.connection': '5', retries: '2147483647' },
    },
    profiles,
  };
}

function authorized(req) {
  return req.headers.authorization === `Bearer ${TOKEN}`;
}

function validateDrill(b) {
  if (!b || typeof b !== 'object') return 'body must be a JSON object';
  if (!['kill', 'stop', 'pause', 'restart'].includes(b.fault)) return 'fault: must be one of kill, stop, pause, restart';
  const t = b.target;
  if (!t || typeof t !== 'object') return 'target: required';
  if (t.broker !== undefined && !BROKERS.includes(t.broker)) return `target.broker: ${t.broker} is not in the inventory`;
  if (t.broker === undefined && !t.leader_of && !t.controller && !t.random) return 'target: one of broker, leader_of, controller, random';
  const o = b.options ?? {};
  if (o.repeats !== undefined && (!Number.isInteger(o.repeats) || o.repeats < 1 || o.repeats > 100)) return 'options.repeats: must be between 1 and 100';
  return null;
}

async function api(req, res, url) {
  const now = nowUs();
  const path = url.pathname;
  const q = url.searchParams;
  const m = (re) => re.exec(path);
  const mutating = ['POST', 'PATCH', 'DELETE', 'PUT'].includes(req.method);
  if (mutating && !authorized(req)) return problem(res, 401, 'unauthorized', 'Unauthorized', 'a bearer token is required', path, { 'WWW-Authenticate': 'Bearer' });

  if (path === '/api/v1/clusters') {
    const d = clusterDetail(now);
    return send(res, 200, { items: [{ name: CLUSTER, id: 1, bootstrap: d.bootstrap, reachable: true, brokers: d.brokers.map((b) => b.id), probe_phase: 'probing', probe_problem: null }], count: 1 });
  }
  let r;
  if ((r = m(/^\/api\/v1\/clusters\/([^/]+)$/))) {
    if (decodeURIComponent(r[1]) !== CLUSTER) return problem(res, 404, 'unknown-cluster', 'Not Found', `no cluster named "${decodeURIComponent(r[1])}"`, path);
    return send(res, 200, clusterDetail(now));
  }
  if ((r = m(/^\/api\/v1\/clusters\/([^/]+)\/partitions\/([^/]+)\/(\d+)\/samples$/))) {
    const to = parseTime(q.get('to')) ?? now;
    const from = parseTime(q.get('from')) ?? to - 300e6;
    if (Number.isNaN(from) || Number.isNaN(to)) return problem(res, 400, 'invalid-parameter', 'Bad Request', 'from/to: not RFC 3339', path);
    if (to - from > 86_400e6) return problem(res, 400, 'invalid-parameter', 'Bad Request', 'range longer than 24 hours', path);
    const p = Number(r[3]);
    const profile = q.get('profile') ?? PRIMARY;
    if (!PROFILES.includes(profile)) return problem(res, 400, 'invalid-parameter', 'Bad Request', `profile: the cluster has no profile "${profile}"`, path);
    if (decodeURIComponent(r[2]) !== TOPIC || p > 2) return send(res, 200, { items: [], count: 0, truncated: false, next: null, from: rfc(from), to: rfc(to) });
    return send(res, 200, samples(p, from, to, Number(q.get('limit') ?? 100000), now, profile));
  }
  if ((r = m(/^\/api\/v1\/clusters\/([^/]+)\/events$/))) {
    const to = parseTime(q.get('to')) ?? now;
    const from = parseTime(q.get('from')) ?? to - 86_400e6;
    const items = drills.flatMap((d) => drillEvents(d, now)).filter((e) => e.t_us >= from && e.t_us < to).map((e, i) => ({ id: i + 1, t: rfc(e.t_us), ...e }));
    return send(res, 200, { items, count: items.length, truncated: false, next: null, from: rfc(from), to: rfc(to) });
  }
  if ((r = m(/^\/api\/v1\/clusters\/([^/]+)\/incidents$/))) {
    const to = parseTime(q.get('to')) ?? now;
    const from = parseTime(q.get('from')) ?? to - 7 * 86_400e6;
    const s = now - 3 * 3600e6;
    const incident = { start: rfc(s), start_us: s, end: rfc(s + 2_300_000), end_us: s + 2_300_000, duration_us: 2_300_000, partitions: [{ topic: TOPIC, partition: 1, kind: 'ack', start_us: s, end_us: s + 2_300_000, duration_us: 2_300_000 }], events: [{ id: 1, t: rfc(s + 100_000), t_us: s + 100_000, source: 'metadata', kind: 'isr_shrink', broker: 3, topic: TOPIC, partition: 1, detail: { removed: [3] } }] };
    const items = incident.end_us >= from && incident.end_us < to ? [incident] : [];
    return send(res, 200, { items, count: items.length, truncated: false, next: null, from: rfc(from), to: rfc(to) });
  }
  if ((r = m(/^\/api\/v1\/clusters\/([^/]+)\/maintenance$/)) && req.method === 'GET') {
    // One active window, opened an hour ago for two hours: the overview's badge.
    const to = parseTime(q.get('to')) ?? now + 1;
    const from = parseTime(q.get('from')) ?? to - 7 * 86_400e6;
    const started = now - 3600e6;
    const ends = now + 3600e6;
    const window = { id: 1, cluster: CLUSTER, reason: 'broker 2 kernel update', opened_by: 'operator (api, 127.0.0.1)', started: rfc(started), started_us: started, ends: rfc(ends), ends_us: ends, closed: null, closed_us: null, closed_by: null, active: true, silences: [] };
    const items = started < to && ends > from ? [window] : [];
    return send(res, 200, { items, count: items.length, active: items.length ? 1 : null, from: rfc(from), to: rfc(to) });
  }
  if ((r = m(/^\/api\/v1\/clusters\/([^/]+)\/drills\/last$/))) {
    const done = drills.filter((d) => stateAt(d, now) === 'done').sort((a, b) => b.id - a.id);
    if (!done.length) return problem(res, 404, 'no-drill', 'Not Found', `no finished drill on cluster ${CLUSTER}`, path);
    return send(res, 200, drillJson(done[0], now));
  }
  if ((r = m(/^\/api\/v1\/clusters\/([^/]+)\/drills$/)) && req.method === 'POST') {
    let b;
    try {
      b = await body(req);
    } catch (e) {
      return problem(res, 400, 'invalid-body', 'Bad Request', `body: ${e.message}`, path);
    }
    const bad = validateDrill(b);
    if (bad) return problem(res, 400, 'invalid-body', 'Bad Request', bad, path);
    const running = drills.find((d) => !['done', 'failed', 'aborted'].includes(stateAt(d, now)));
    if (running) {
      const why = `drill ${running.id} is still running on cluster ${CLUSTER}; one drill at a time`;
      return problem(res, 409, 'drill-refused', 'Drill refused', why, path, {}, { reason: why });
    }
    if (b.target.broker !== undefined && brokerDownAt(b.target.broker, now)) {
      const why = `broker ${b.target.broker} is not registered: the cluster is not healthy enough for a drill`;
      return problem(res, 409, 'drill-refused', 'Drill refused', why, path, {}, { reason: why });
    }
    const d = createDrill(b, now);
    return send(res, 202, drillJson(d, now), { Location: `/api/v1/drills/${d.id}` });
  }
  if (path === '/api/v1/drills') {
    let list = drills.map((d) => drillJson(d, now)).sort((a, b) => b.id - a.id);
    for (const k of ['cluster', 'state', 'fault', 'verdict']) if (q.get(k)) list = list.filter((d) => d[k] === q.get(k));
    // As kfaild: the cursor is the last id of the page (an integer), sent as a string.
    const cursor = q.get('cursor');
    if (cursor) {
      if (!/^[1-9]\d*$/.test(cursor)) return problem(res, 400, 'invalid-parameter', 'Invalid parameter', 'cursor: must be an integer ≥ 1', path);
      list = list.filter((d) => d.id < Number(cursor));
    }
    const limit = Number(q.get('limit') ?? 50);
    const page = list.slice(0, limit);
    const next = list.length > limit ? String(page.at(-1).id) : null;
    return send(res, 200, { items: page, count: page.length, next_cursor: next });
  }
  if ((r = m(/^\/api\/v1\/drills\/(\d+)(\/timeline|\/abort)?$/))) {
    const d = drills.find((x) => x.id === Number(r[1]));
    if (!d) return problem(res, 404, 'unknown-drill', 'Unknown drill', `no drill has id ${r[1]}`, path);
    if (r[2] === '/abort') {
      if (req.method !== 'POST') return problem(res, 405, 'method-not-allowed', 'Method Not Allowed', 'POST only', path, { Allow: 'POST' });
      const st = stateAt(d, now);
      if (['done', 'failed', 'aborted'].includes(st)) return problem(res, 409, 'drill-finished', 'Drill already finished', `drill ${d.id} is already ${st}`, path, {}, { state: st });
      d.aborted_us = now;
      return send(res, 202, drillJson(d, now));
    }
    if (r[2] === '/timeline') {
      // As kfaild: the window spans the stored runs (from the first baseline to the last
      // recovery), else the drill's start to now; 1 s before and 5 s after; relative_s and
      // fault_us stay null until the first run is stored.
      const j = drillJson(d, now);
      const first = j.runs[0];
      const fault = first ? first.fault_us : null;
      let from = j.started_us ?? j.created_us;
      let to = j.finished_us ?? now;
      for (const run of j.runs) {
        from = Math.min(from, run.baseline_start_us ?? from);
        to = Math.max(to, run.recovered_us ?? run.observe_end_us ?? to);
      }
      from -= 1_000_000;
      to += 5_000_000;
      const items = drillEvents(d, now)
        .filter((e) => e.t_us >= from && e.t_us < to)
        .map((e, i) => ({ id: i + 1, t: rfc(e.t_us), ...e, relative_s: fault === null ? null : (e.t_us - fault) / 1e6, run: j.runs.length ? 1 : null }));
      return send(res, 200, { drill: d.id, fault_us: fault, from: rfc(from), from_us: from, to: rfc(to), to_us: to, count: items.length, truncated: false, items });
    }
    return send(res, 200, drillJson(d, now));
  }
  if (path === '/api/v1/statistics') return send(res, 200, statistics(q, now));
  if (path === '/api/v1/schedules') {
    if (req.method === 'POST') {
      const b = await body(req);
      if (!b.name || !b.cron || b.cron.trim().split(/\s+/).length !== 5) return problem(res, 400, 'invalid-body', 'Bad Request', 'cron: must have 5 fields', path);
      const bad = validateDrill(b.drill);
      if (bad) return problem(res, 400, 'invalid-body', 'Bad Request', `drill.${bad}`, path);
      const s = { id: nextScheduleId++, cluster: b.cluster, name: b.name, cron: b.cron, jitter_s: b.jitter_s ?? 0, enabled: b.enabled ?? true, drill: b.drill, last_run: null, last_run_us: null, next_run: rfc(now + 3600e6), next_run_us: now + 3600e6, last_outcome: null, created: rfc(now), created_us: now };
      schedules.push(s);
      return send(res, 201, s, { Location: `/api/v1/schedules/${s.id}` });
    }
    return send(res, 200, { items: schedules, count: schedules.length });
  }
  if ((r = m(/^\/api\/v1\/schedules\/(\d+)$/))) {
    const i = schedules.findIndex((s) => s.id === Number(r[1]));
    if (i < 0) return problem(res, 404, 'unknown-schedule', 'Unknown schedule', `no schedule has id ${r[1]}`, path);
    if (req.method === 'DELETE') {
      schedules.splice(i, 1);
      res.writeHead(204);
      return res.end();
    }
    if (req.method === 'PATCH') Object.assign(schedules[i], await body(req));
    return send(res, 200, schedules[i]);
  }
  return problem(res, 404, 'not-found', 'Not Found', `no such path: ${path}`, path);
}

function seedHistory() {
  const now = nowUs();
  for (let i = 0; i < HISTORY; i++) {
    const fault = i % 4 === 3 ? 'stop' : 'kill';
    createDrill({ fault, target: { broker: 1 }, options: { repeats: 1 } }, now - (HISTORY - i) * 26 * 3600e6);
  }
  if (HISTORY > 0) {
    schedules.push({ id: nextScheduleId++, cluster: CLUSTER, name: 'nightly kill of broker 1', cron: '0 3 * * *', jitter_s: 300, enabled: true, drill: { fault: 'kill', target: { broker: 1 }, options: {} }, last_run: rfc(now - 20 * 3600e6), last_run_us: now - 20 * 3600e6, next_run: rfc(now + 4 * 3600e6), next_run_us: now + 4 * 3600e6, last_outcome: 'done', created: rfc(now - 10 * 86400e6), created_us: now - 10 * 86400e6 });
  }
}

seedHistory();

/** With --check-schema: checks the answer to an API request against openapi.yaml when it is sent. */
function checkAnswer(req, res, path) {
  const writeHead = res.writeHead.bind(res);
  const end = res.end.bind(res);
  let contentType = null;
  res.writeHead = (status, headers = {}) => {
    contentType = headers['Content-Type'] ?? null;
    return writeHead(status, headers);
  };
  res.end = (chunk, ...rest) => {
    if (req.method !== 'HEAD') {
      const body = chunk === undefined ? '' : String(chunk);
      for (const p of schema.check({ method: req.method, path, status: res.statusCode, contentType, body })) console.error(`mock: schema: ${p}`);
    }
    return end(chunk, ...rest);
  };
}

const server = createServer(async (req, res) => {
  try {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (schema && url.pathname.startsWith('/api/')) checkAnswer(req, res, url.pathname);
    if (url.pathname.startsWith('/api/')) await api(req, res, url);
    else if (req.method === 'GET' || req.method === 'HEAD') await serveStatic(req, res, url.pathname);
    else problem(res, 405, 'method-not-allowed', 'Method Not Allowed', 'GET only', url.pathname, { Allow: 'GET, HEAD' });
  } catch (e) {
    problem(res, 500, 'internal-error', 'Internal error', String(e?.stack ?? e), req.url ?? '');
  }
});
server.listen(PORT, '127.0.0.1', () => {
  const addr = server.address();
  console.log(`mock kfaild on http://127.0.0.1:${addr.port} (token "${TOKEN}", dist ${DIST})`);
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => server.close(() => process.exit(0)));
