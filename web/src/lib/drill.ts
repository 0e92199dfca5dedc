// What a drill means to a person: its verdict, the stall per partition and role, the phases of
// each stall and how it compares with earlier drills of the same kind. Pure functions.

import type {
  ControlPlaneRun,
  CoordinatorsRun,
  Drill,
  DrillState,
  DrillTarget,
  Fault,
  KindResult,
  Mechanism,
  ObservedFault,
  PartitionResult,
  Phases,
  Role,
  Run,
  RollingRestart,
  RollingStall,
  SecondFaultRun,
  StatGroup,
  VerdictCheck,
  VerdictStatus,
} from '../api/types';
import { formatDuration } from './time';
import { laneKey, sortPartitions } from './timeline';

const TERMINAL: ReadonlySet<DrillState> = new Set(['done', 'failed', 'aborted']);

export function isTerminal(state: DrillState): boolean {
  return TERMINAL.has(state);
}

export function isRunning(state: DrillState): boolean {
  return !TERMINAL.has(state);
}

export function targetLabel(t: DrillTarget | null | undefined): string {
  if (!t) return '—';
  if (t.broker !== undefined) return `broker ${t.broker}`;
  if (t.leader_of) return `leader of ${t.leader_of.topic}-${t.leader_of.partition}`;
  if (t.controller) return 'the controller';
  if (t.random) return 'a random broker';
  if (t.every_broker) return 'every broker';
  if (t.nodes) return `nodes ${t.nodes.join(', ')}`;
  if (t.coordinator_of !== undefined) {
    const c = t.coordinator_of;
    if (c === 'group') return "kfaild's group coordinator";
    if (c === 'transaction') return "kfaild's transaction coordinator";
    return 'group' in c ? `coordinator of group ${c.group}` : `coordinator of transactional id ${c.transactional_id}`;
  }
  return JSON.stringify(t);
}

const FAULT_VERB: Record<Fault, string> = {
  kill: 'Kill (SIGKILL)',
  stop: 'Stop (SIGTERM, controlled shutdown)',
  pause: 'Pause (SIGSTOP, a GC-like freeze)',
  restart: 'Restart (stop, then start)',
  isolate: 'Isolate (network cut, then healed)',
  throttle: 'Throttle (bandwidth limit, then healed)',
  disk_full: 'Disk full (log dir filled, then freed)',
  disk_slow: 'Disk slow',
  rolling_restart: 'Rolling restart (each node stopped and started, one at a time)',
  observed: 'Observed (a fault someone else injected)',
};

export function faultLabel(f: Fault): string {
  return FAULT_VERB[f] ?? f;
}

/** Who injected one fault of an observed drill: "marked by chaos toolkit (broker 1 fenced)", "found by kfaild: broker 1 fenced". */
export function observedFaultText(f: ObservedFault): string {
  const seen = f.departure ? `broker ${f.departure.broker} ${f.departure.kind.replace('_', ' ')}` : null;
  if (f.mark) {
    const who = f.mark.by ? `marked by ${f.mark.by}` : 'marked';
    return seen ? `${who} (${seen})` : `${who}${f.broker !== null ? ` on broker ${f.broker}` : ''}, no departure seen`;
  }
  return `found by kfaild: ${seen ?? 'a fault'}`;
}

/** The "observed:" line of an observed drill, null for any other; while it waits, what it waits for. */
export function observedLine(d: Drill): string | null {
  if (d.fault !== 'observed') return null;
  const faults = d.observed?.faults ?? d.runs.flatMap((r) => (r.observed_fault ? [r.observed_fault] : []));
  if (!faults.length) {
    return isTerminal(d.state) ? 'observed: no fault was marked or seen in the window' : 'observed: waiting for a fault (kfaild injects nothing)';
  }
  const missing = d.observed?.missing ? `; not whole again at the end: ${d.observed.missing}` : '';
  return `observed: injected by ${faults.map(observedFaultText).join('; ')}${missing}`;
}

export const ROLE_LABEL: Record<Role, string> = {
  leader: 'leader',
  follower: 'follower',
  follower_out_of_isr: 'follower (out of ISR)',
  not_a_replica: 'not a replica',
  sole_replica: 'sole replica (offline)',
  below_min_isr: 'below min.insync.replicas (offline for writes)',
  isolated_leader: 'isolated leader',
  isolated_follower: 'isolated follower',
  throttled_leader: 'throttled leader',
  throttled_follower: 'throttled follower',
};

export const MECHANISM_LABEL: Record<Mechanism['name'], string> = {
  none: 'none',
  session_timeout: 'fencing (session timeout)',
  client_timeout: "client's request timeout",
  stale_leader: 'stale leader (request timeout)',
  isr_shrink: 'ISR shrink (replica lag)',
  heal: 'heal → reconnect',
  node_back: 'node back',
  shared_request: "shared request (the client's)",
};

/**
 * What bounded a stall, and the event that ended it: "ISR shrink (replica lag), ended by isr_shrink";
 * for a shared request, the partition it waited on and the cluster's stall beside the client's.
 */
export function mechanismText(m: Mechanism | null | undefined): string {
  if (!m) return '—';
  const label = MECHANISM_LABEL[m.name] ?? m.name;
  if (m.waited_on) {
    const cluster = m.cluster_stall_us === null || m.cluster_stall_us === undefined ? 'not known' : m.cluster_stall_us === 0 ? '0 s' : formatDuration(m.cluster_stall_us);
    return `${label}: waited on ${m.waited_on.topic}-${m.waited_on.partition}; cluster's stall ${cluster}, client's ${formatDuration(m.client_stall_us)}`;
  }
  if (m.explained && m.ended_by) return `${label}, ended by ${m.ended_by}`;
  return m.reason ? `${label}, unexplained` : label;
}

/** The broker(s) the runs actually hit, e.g. "broker 1" or "brokers 1, 3". */
export function hitBrokers(drill: Drill): string {
  const ids = [
    ...new Set(
      drill.runs.flatMap((r) => [r.target, r.second_fault?.state === 'injected' ? r.second_fault.target : undefined]).filter((t): t is number => t !== undefined),
    ),
  ];
  if (ids.length === 0) return drill.then ? `${targetLabel(drill.target)} and ${targetLabel(drill.then.target)}` : targetLabel(drill.target);
  return ids.length === 1 ? `broker ${ids[0]}` : `brokers ${ids.join(', ')}`;
}

export interface Worst {
  duration_us: number;
  topic: string;
  partition: number;
  role: Role;
  run: number;
}

/** The longest stall of a kind over every run and partition of a drill. */
export function worstStall(drill: Drill, kind: 'ack' | 'receive'): Worst | null {
  let best: Worst | null = null;
  for (const run of drill.runs) {
    for (const p of run.analysis?.partitions ?? []) {
      const d = p[kind].stall?.duration_us;
      if (d === undefined || d === null) continue;
      if (best === null || d > best.duration_us) {
        best = { duration_us: d, topic: p.topic, partition: p.partition, role: p.role, run: run.run };
      }
    }
  }
  return best;
}

export interface Totals {
  sent: number;
  failed: number;
  lost: number;
  /** Of lost, those acked before kfaild restarted its consumer's reading of their partition: not known to be the cluster's. */
  lostConsumerStuck: number;
  unresolved: number;
  duplicated: number;
  reordered: number;
}

export function totals(drill: Drill): Totals {
  const t: Totals = { sent: 0, failed: 0, lost: 0, lostConsumerStuck: 0, unresolved: 0, duplicated: 0, reordered: 0 };
  for (const run of drill.runs) {
    for (const p of run.analysis?.partitions ?? []) {
      t.sent += p.sent;
      t.failed += p.failed;
      t.lost += p.lost;
      t.lostConsumerStuck += p.lost_consumer_stuck ?? 0;
      t.unresolved += p.unresolved;
      t.duplicated += p.duplicated;
      t.reordered += p.reordered;
    }
  }
  return t;
}

/** kfaild's verdict against the objectives (server/analysis/verdict.h), as the page shows it. */
export interface ObjectiveVerdict {
  status: VerdictStatus | null;
  /** Checks that failed, then those that could not be measured, one sentence each. */
  failed: string[];
  inconclusive: string[];
  /** Checks whose objective the fault's mechanism makes meaningless, with the reason. */
  notApplicable: string[];
  regressions: string[];
  /** Why a drill that did not finish has no measured verdict. */
  reason: string | null;
  checks: number;
}

function checkText(c: VerdictCheck, multiRun: boolean): string {
  const where = c.topic !== null ? `${c.topic}-${c.partition}${c.role ? ` (${ROLE_LABEL[c.role as Role] ?? c.role})` : ''}` : 'the run';
  const unit = c.unit === 's' ? ' s' : ` ${c.unit}`;
  const measured = c.measured === null ? 'not measured' : `${c.unit === 's' ? c.measured.toFixed(2) : c.measured}${unit}`;
  const run = multiRun ? `, run ${c.run}` : '';
  // A check of another profile than the primary names it: the same objective, another client.
  const profile = c.profile ? `, profile ${c.profile}` : '';
  const why = c.reason ? ` — ${c.reason}` : '';
  return `${c.objective} on ${where}${run}${profile}: ${measured}, limit ${c.threshold}${unit} (${c.source})${why}`;
}

export function objectiveVerdict(drill: Drill): ObjectiveVerdict {
  const detail = drill.verdict_detail;
  const multiRun = drill.runs.length > 1;
  const checks = detail?.checks ?? [];
  return {
    status: drill.verdict,
    failed: checks.filter((c) => c.status === 'fail').map((c) => checkText(c, multiRun)),
    inconclusive: checks.filter((c) => c.status === 'inconclusive').map((c) => checkText(c, multiRun)),
    notApplicable: checks.filter((c) => c.status === 'not_applicable').map((c) => checkText(c, multiRun)),
    regressions: (detail?.regressions ?? []).map(
      (r) =>
        `${r.kind} stall of ${r.topic}-${r.partition} (${ROLE_LABEL[r.role as Role] ?? r.role}${multiRun ? `, run ${r.run}` : ''}): ` +
        `${r.stall_s.toFixed(2)} s, ${r.factor.toFixed(1)}× the median ${r.median_s.toFixed(2)} s of ${r.previous} earlier`,
    ),
    reason: detail?.reason ?? null,
    checks: checks.length,
  };
}

export type VerdictLevel = 'ok' | 'warn' | 'bad' | 'running';

export interface Verdict {
  level: VerdictLevel;
  /** One sentence an on-call engineer reads first. */
  headline: string;
  /** Supporting facts, one per line. */
  facts: string[];
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/**
 * The verdict: `bad` when the drill failed or acked messages were lost, `warn` when it was
 * aborted, sends failed, messages were duplicated, reordered or never resolved, or a stall never
 * ended (no stall found on a partition with the target as leader); `ok` otherwise. The headline
 * says how long writes stopped, and where.
 */
export function verdict(drill: Drill): Verdict {
  const facts: string[] = [];
  if (isRunning(drill.state)) {
    return { level: 'running', headline: `Drill #${drill.id} is running (${drill.state})`, facts };
  }
  const ack = worstStall(drill, 'ack');
  const rcv = worstStall(drill, 'receive');
  const t = totals(drill);
  const runs = drill.runs.length;
  if (ack) {
    facts.push(
      `Writes (acks) stopped up to ${formatDuration(ack.duration_us)} on ${ack.topic}-${ack.partition} (${ROLE_LABEL[ack.role]}` +
        `${runs > 1 ? `, run ${ack.run}` : ''})`,
    );
  }
  if (rcv) {
    facts.push(`Reads stopped up to ${formatDuration(rcv.duration_us)} on ${rcv.topic}-${rcv.partition} (${ROLE_LABEL[rcv.role]})`);
  }
  const lostByCluster = t.lost - t.lostConsumerStuck;
  facts.push(
    lostByCluster === 0 ? 'No acknowledged message lost' : `${plural(lostByCluster, 'acknowledged message')} lost`,
  );
  if (t.lostConsumerStuck > 0) {
    facts.push(
      `${plural(t.lostConsumerStuck, 'acknowledged message')} not read back while kfaild's consumer read nothing ` +
        '(it restarted the consumer): not known to be lost',
    );
  }
  if (t.failed > 0) facts.push(`${plural(t.failed, 'send')} failed`);
  if (t.duplicated > 0) facts.push(`${plural(t.duplicated, 'message')} duplicated`);
  if (t.reordered > 0) facts.push(`${plural(t.reordered, 'message')} reordered`);
  if (t.unresolved > 0) facts.push(`${plural(t.unresolved, 'message')} still unresolved at analysis`);
  const unknown = inconclusive(drill);
  for (const u of unknown) facts.push(`No figure for the ${u.kind} stall of ${u.key}: ${u.reason}`);

  if (drill.state === 'failed') {
    return { level: 'bad', headline: `Failed: ${drill.reason ?? 'no reason given'}`, facts };
  }
  if (drill.state === 'aborted') {
    return { level: 'warn', headline: `Aborted${drill.reason ? `: ${drill.reason}` : ''}`, facts };
  }
  if (lostByCluster > 0) {
    return { level: 'bad', headline: `Data loss: ${plural(lostByCluster, 'acknowledged message')} never read back`, facts };
  }
  const headline = ack
    ? `Writes stopped for ${formatDuration(ack.duration_us)} at worst (${ack.topic}-${ack.partition}, ${ROLE_LABEL[ack.role]})`
    : 'No stall spanning the fault';
  // kfaild's verdict against the objectives decides when there is one.
  if (drill.verdict === 'fail') return { level: 'bad', headline, facts };
  if (drill.verdict === 'inconclusive') return { level: 'warn', headline, facts };
  const warn =
    t.failed > 0 || t.duplicated > 0 || t.reordered > 0 || t.unresolved > 0 || t.lostConsumerStuck > 0 || unknown.length > 0;
  return { level: warn ? 'warn' : 'ok', headline, facts };
}

/** The partitions and kinds whose stall the analysis could not measure, with its reason. */
export function inconclusive(drill: Drill): { key: string; kind: 'ack' | 'receive'; reason: string }[] {
  const out: { key: string; kind: 'ack' | 'receive'; reason: string }[] = [];
  for (const run of drill.runs) {
    for (const p of run.analysis?.partitions ?? []) {
      for (const kind of ['ack', 'receive'] as const) {
        if (p[kind].outcome === 'inconclusive') {
          const key = `${p.topic}-${p.partition}${drill.runs.length > 1 ? ` (run ${run.run})` : ''}`;
          out.push({ key, kind, reason: p[kind].reason ?? 'unknown' });
        }
      }
    }
  }
  return out;
}

export type MeasuredPhase = 'detection' | 'election' | 'discovery' | 'resume' | 'node_back';

/**
 * A phase as a person reads it, never negative: below its resolution "≤ resolution" (results
 * stored before `below_resolution` may hold a negative value: the same), "n/a" when the fault
 * time's uncertainty hides it, else its length.
 */
export function phaseText(ph: Phases, name: MeasuredPhase): string {
  const value = ph[`${name}_us`];
  if (value === null || value === undefined) return '—';
  if (ph.inconclusive && name in ph.inconclusive) return 'n/a';
  if ((ph.below_resolution ?? []).includes(name) || value < 0) {
    const resolution = ph[`${name}_resolution_us` as const];
    return `≤ ${formatDuration(resolution ?? 0)}`;
  }
  return formatDuration(value);
}

/** A kind's stall as a person reads it: its length, "none" (within the noise) or "n/a". */
export function stallText(k: KindResult): string {
  if (k.outcome === 'none') return 'none';
  if (k.outcome === 'inconclusive') return 'n/a';
  return formatDuration(k.stall?.duration_us);
}

// A run's control plane in one row: its stall (or why there is none), the quorum's leaderless time
// and elections, and the new leader. Null when the run has no control-plane analysis.
export function controlPlaneRow(c: ControlPlaneRun | undefined): string[] | null {
  if (!c) return null;
  const seconds = (s: number) => formatDuration(Math.round(s * 1e6));
  const stall = c.outcome === 'stall' && c.stall ? seconds(c.stall.duration_s) : c.outcome === 'none' ? 'none' : 'n/a';
  const q = c.quorum;
  return [
    stall,
    q.watched ? (q.leaderless_s === null ? 'none' : `≤ ${seconds(q.leaderless_s)}`) : 'not watched',
    q.watched ? String(q.epoch_increments) : '—',
    q.new_leader === null ? '—' : String(q.new_leader),
    `${c.operations} / ${c.failed}`,
    c.reason ?? q.reason ?? '',
  ];
}

// A run's coordinators in one row: the commits' and the transactions' stalls, the phases fault →
// the group's coordinator moved → the first commit, and the moves. Null without the section.
export function coordinatorsRow(c: CoordinatorsRun | undefined): string[] | null {
  if (!c) return null;
  const seconds = (s: number) => formatDuration(Math.round(s * 1e6));
  const stall = (s: CoordinatorsRun['commits'] | null) =>
    s === null ? '—' : s.outcome === 'stall' && s.stall ? seconds(s.stall.duration_s) : s.outcome === 'none' ? 'none' : 'n/a';
  return [
    stall(c.commits),
    stall(c.transactions),
    c.phases.coordinator_moved_s === null ? '—' : seconds(c.phases.coordinator_moved_s),
    c.phases.first_commit_s === null ? '—' : seconds(c.phases.first_commit_s),
    c.moves.map((m) => `${m.type} ${m.key}: ${m.from}→${m.to}${m.partition ? ` (${m.partition})` : ''}`).join(', ') || (c.watched ? 'none' : 'not watched'),
    c.commits.reason ?? c.reason ?? '',
  ];
}

// A compound drill's second fault in one row: the node it hit, when after the first, what became
// of it, the order the nodes came back in, and the worst ack stall of the first fault alone (up to
// the second). Null for a run without one.
export function secondFaultRow(r: Run, f: SecondFaultRun | undefined): string[] | null {
  if (!f) return null;
  const apart = f.fault_us !== undefined && r.fault_us !== undefined ? formatDuration(f.fault_us - r.fault_us) : '—';
  let firstWorst: number | null = null;
  for (const p of f.first_analysis?.partitions ?? []) {
    if (p.ack.outcome === 'stall' && p.ack.stall) firstWorst = Math.max(firstWorst ?? 0, p.ack.stall.duration_us);
  }
  return [
    `${f.fault} of ${f.target === undefined ? '—' : `node ${f.target}`}`,
    `${f.after_s} s (${apart})`,
    f.state,
    r.recovery_order?.join(' → ') ?? '—',
    f.first_analysis ? (firstWorst === null ? 'none' : formatDuration(firstWorst)) : '—',
    f.reason ?? '',
  ];
}

// A rolling restart's step stall: "2.250 s orders-1 (leader, ack)".
function rollingStallText(w: RollingStall | null | undefined): string {
  if (!w) return 'none';
  return `${formatDuration(w.seconds * 1e6)} ${w.topic}-${w.partition} (${w.role}, ${w.kind})`;
}

// A rolling restart in rows: one per step (step, node, verdict, ack and receive partition-seconds,
// stalled partitions, worst stall), then the totals. Empty without one.
export function rollingRows(r: RollingRestart | null | undefined): string[][] {
  if (!r) return [];
  const rows = r.steps.map((s) => [
    String(s.step),
    `node ${s.node}`,
    s.verdict,
    formatDuration(s.ack_partition_seconds * 1e6),
    formatDuration(s.receive_partition_seconds * 1e6),
    s.inconclusive_partitions ? `${s.stalled_partitions} (${s.inconclusive_partitions} inconclusive)` : String(s.stalled_partitions),
    rollingStallText(s.worst_stall),
  ]);
  rows.push([
    'all',
    `${r.steps.length} of ${r.plan.length}`,
    r.verdict,
    formatDuration(r.ack_partition_seconds * 1e6),
    formatDuration(r.receive_partition_seconds * 1e6),
    String(r.steps.reduce((n, s) => n + s.stalled_partitions, 0)),
    r.worst_stall ? `${rollingStallText(r.worst_stall)} at step ${r.worst_stall.step}` : 'none',
  ]);
  return rows;
}

// Each run's fault as seconds from the drill's first one: where a rolling restart's steps begin
// on its timeline.
export function stepOffsets(d: Drill): { step: number; node: number | undefined; at_s: number }[] {
  const first = d.runs.find((r) => r.fault_us !== undefined)?.fault_us;
  if (first === undefined) return [];
  return d.runs.flatMap((r) =>
    r.fault_us === undefined ? [] : [{ step: r.step ?? r.run, node: r.target, at_s: (r.fault_us - first) / 1e6 }],
  );
}

export interface StallRow {
  key: string;
  topic: string;
  partition: number;
  role: Role;
  run: number;
  ack_us: number | null;
  receive_us: number | null;
  baseline_ack_us: number | null;
  result: PartitionResult;
}

/** One row per run and partition, ordered by run, topic, partition. */
export function stallRows(drill: Drill): StallRow[] {
  const rows: StallRow[] = [];
  for (const run of drill.runs) {
    const parts = sortPartitions([...(run.analysis?.partitions ?? [])]);
    for (const p of parts) {
      rows.push({
        key: laneKey(p),
        topic: p.topic,
        partition: p.partition,
        role: p.role,
        run: run.run,
        ack_us: p.ack.stall?.duration_us ?? null,
        receive_us: p.receive.stall?.duration_us ?? null,
        baseline_ack_us: p.ack.baseline?.duration_us ?? null,
        result: p,
      });
    }
  }
  return rows;
}

/** The largest value among the rows' stalls, for a common bar scale (at least 1 µs). */
export function stallScaleUs(rows: readonly StallRow[]): number {
  let m = 1;
  for (const r of rows) m = Math.max(m, r.ack_us ?? 0, r.receive_us ?? 0);
  return m;
}

export type PhaseName = 'before_fault' | 'detection' | 'election' | 'discovery' | 'resume' | 'unexplained';

export const PHASE_LABEL: Record<PhaseName, string> = {
  before_fault: 'last ack → fault',
  detection: 'detection',
  election: 'election',
  discovery: 'client discovery',
  resume: 'resume',
  unexplained: 'not attributed',
};

export interface PhaseSegment {
  name: PhaseName;
  duration_us: number;
}

/**
 * The stall of one partition split into phases, in order. `before_fault` is the time between the
 * last ack and the fault (at most one probe interval); `unexplained` is what the observed phases
 * do not cover (a phase whose event was not seen). Segments with no duration are left out.
 */
export function phaseSegments(p: PartitionResult, faultUs: number | null | undefined): PhaseSegment[] {
  const stall = p.ack.stall;
  const ph: Phases = p.phases;
  const segs: PhaseSegment[] = [];
  if (stall && faultUs !== null && faultUs !== undefined && faultUs > stall.start_us) {
    segs.push({ name: 'before_fault', duration_us: Math.min(faultUs - stall.start_us, stall.duration_us) });
  }
  const add = (name: PhaseName, v: number | null) => {
    if (v !== null && v !== undefined && v > 0) segs.push({ name, duration_us: v });
  };
  add('detection', ph.detection_us);
  add('election', ph.election_us);
  add('discovery', ph.discovery_us);
  add('resume', ph.resume_us);
  if (stall) {
    const covered = segs.reduce((s, x) => s + x.duration_us, 0);
    const rest = stall.duration_us - covered;
    // Below a millisecond the difference is rounding between clocks, not a missing phase.
    if (rest > 1000) segs.push({ name: 'unexplained', duration_us: rest });
  }
  return segs;
}

/** The fault time of the run a row belongs to. */
export function runFaultUs(run: Run): number | null {
  return run.analysis?.fault_us ?? run.fault_us ?? null;
}

export interface Comparison {
  key: string;
  role: Role;
  current_us: number | null;
  /** Stalls of the same partition and role in earlier drills of the same fault, newest first. */
  previous: { drill: number; duration_us: number | null }[];
  median_us: number | null;
  /** current / median of the previous drills; null without both. */
  ratio: number | null;
}

export function median(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/**
 * Compares the current drill's first-run ack stall per partition with earlier drills (any order
 * given; only `done` drills of the same cluster and fault with an id below the current one count).
 */
export function compareWithPrevious(current: Drill, others: readonly Drill[], maxPrevious = 10): Comparison[] {
  const prev = others
    .filter((d) => d.id < current.id && d.state === 'done' && d.fault === current.fault && d.cluster === current.cluster)
    .sort((a, b) => b.id - a.id)
    .slice(0, maxPrevious);
  const rows = stallRows(current).filter((r) => r.run === (current.runs[0]?.run ?? r.run));
  return rows.map((r) => {
    const previous = prev.map((d) => {
      // The same role matters more than the same partition: a kill of broker 2 makes p1 the
      // leader's partition. Prefer a partition with the same role and name, then the same name.
      const parts = d.runs.flatMap((run) => run.analysis?.partitions ?? []);
      const same = parts.find((p) => laneKey(p) === r.key && p.role === r.role);
      return { drill: d.id, duration_us: same?.ack.stall?.duration_us ?? null };
    });
    const vals = previous.map((p) => p.duration_us).filter((v): v is number => v !== null);
    const med = median(vals);
    return {
      key: r.key,
      role: r.role,
      current_us: r.ack_us,
      previous,
      median_us: med,
      ratio: med && r.ack_us !== null ? r.ack_us / med : null,
    };
  });
}

/** The statistics group for a partition and role, if the statistics endpoint returned one. */
export function findGroup(
  groups: readonly StatGroup[],
  cluster: string | null,
  topic: string,
  partition: number,
  role: Role,
  fault: Fault,
): StatGroup | undefined {
  return groups.find(
    (g) => g.cluster === cluster && g.topic === topic && g.partition === partition && g.role === role && g.fault === fault,
  );
}

/** A CSS-safe class name for a state or role. */
export function cssToken(s: string): string {
  return s.replace(/[^a-z0-9_-]/gi, '_');
}
