// Shapes of kfaild's REST API (openapi.yaml and the drill endpoints). Times come twice: an
// RFC 3339 string and `*_us`, integer microseconds since the Unix epoch; durations named `*_us`
// are microseconds, `*_seconds` seconds.

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance?: string;
  [extra: string]: unknown;
}

export type ProbePhase = 'starting' | 'setting_up' | 'probing' | 'stopped';

export interface ClusterSummary {
  name: string;
  id: number;
  bootstrap: string;
  reachable: boolean;
  brokers: number[];
  probe_phase: ProbePhase;
  probe_problem: string | null;
}

export interface List<T> {
  items: T[];
  count: number;
}

export interface RangeList<T> extends List<T> {
  truncated: boolean;
  from: string;
  to: string;
}

export interface Broker {
  id: number;
  host: string;
  port: number;
}

export interface PartitionProbe {
  sent: number;
  acked: number;
  received: number;
  send_failed: number;
  lost: number;
  duplicated: number;
  reordered: number;
  late: number;
  gaps: number;
  in_flight: number;
  last_ack: string | null;
  last_ack_us: number | null;
  current_ack_gap_seconds: number | null;
  longest_ack_gap_seconds: number;
  last_receive: string | null;
  last_receive_us: number | null;
  current_receive_gap_seconds: number | null;
  longest_receive_gap_seconds: number;
}

export interface PartitionState {
  partition: number;
  leader: number | null;
  replicas: number[];
  isr: number[];
  error: string | null;
  probe: PartitionProbe | null;
}

export interface TopicState {
  name: string;
  error: string | null;
  partitions: PartitionState[];
}

/** A member of the KRaft quorum as the active controller reports it. */
export interface QuorumReplica {
  id: number;
  log_end_offset: number | null;
  /** Records behind the leader's log end offset; 0 for the leader. */
  lag: number | null;
  /** On the active controller's wall clock. */
  last_caught_up_at_us: number | null;
}

export interface QuorumState {
  /** The active controller; null during an election. */
  leader_id: number | null;
  leader_epoch: number;
  high_watermark: number;
  voters: QuorumReplica[];
  /** The brokers (and controllers without a vote). */
  observers: QuorumReplica[];
  described_at_us: number;
}

export interface ClusterDetail {
  name: string;
  id: number;
  bootstrap: string;
  reachable: boolean;
  metadata: {
    at: string | null;
    at_us: number | null;
    answered_by: number | null;
    polls: number;
    failures: number;
    last_error: string | null;
  };
  /** The active KRaft controller (the quorum's leader), often not one of `brokers`. */
  controller_id: number | null;
  /** Null while unknown. Absent from servers older than DescribeQuorum support. */
  quorum?: QuorumState | null;
  brokers: Broker[];
  topics: TopicState[];
  probe: {
    phase: ProbePhase;
    problem: string | null;
    run_id: string;
    interval_us: number;
    ticks: number;
    skipped_ticks: number;
    max_send_lateness_us: number;
  };
}

export interface Sample {
  seq: number;
  send?: string;
  send_us: number;
  ack?: string | null;
  ack_us: number | null;
  ack_error: number;
  ack_latency_us: number | null;
  offset: number | null;
  receive?: string | null;
  receive_us: number | null;
  receive_latency_us?: number | null;
}

export interface KafkaEvent {
  id?: number;
  t: string;
  t_us: number;
  source: string;
  kind: string;
  broker: number | null;
  topic: string | null;
  partition: number | null;
  detail: Record<string, unknown> | null;
}

export type Fault = 'kill' | 'stop' | 'pause' | 'restart';
export const FAULTS: Fault[] = ['kill', 'stop', 'pause', 'restart'];

export type DrillState =
  | 'queued'
  | 'preflight'
  | 'baseline'
  | 'inject'
  | 'observe'
  | 'recover'
  | 'elect'
  | 'analyse'
  | 'done'
  | 'failed'
  | 'aborted';
export const DRILL_STATES: DrillState[] = [
  'queued',
  'preflight',
  'baseline',
  'inject',
  'observe',
  'recover',
  'elect',
  'analyse',
  'done',
  'failed',
  'aborted',
];

export type DrillTarget =
  | { broker: number }
  | { leader_of: { topic: string; partition: number } }
  | { controller: true }
  | { random: true };

export interface DrillOptions {
  repeats?: number;
  baseline_s?: number;
  observe_min_s?: number;
  observe_timeout_s?: number;
  grace_s?: number;
  pause_s?: number;
  recover_timeout_s?: number;
  preferred_election?: boolean;
  allow_unavailable?: boolean;
}

export interface DrillRequest {
  fault: Fault;
  target: DrillTarget;
  options?: DrillOptions;
}

export type Role = 'leader' | 'follower' | 'follower_out_of_isr' | 'not_a_replica' | 'sole_replica';

export interface Interval {
  start_us: number;
  end_us: number;
  duration_us: number;
  /** Not ended when observation did: duration_us is a lower bound. */
  open?: boolean;
}

export type Outcome = 'stall' | 'none' | 'inconclusive';

export interface KindResult {
  /** Absent in results stored before outcomes existed. */
  outcome?: Outcome;
  /** Set only when outcome is 'stall'. */
  stall: Interval | null;
  longest_gap?: Interval | null;
  baseline: Interval | null;
  ended_by?: { seq: number; at_us: number } | null;
  reason?: string;
  held_ticks?: number;
  probe_idle_us?: number;
  count: number;
}

export interface Phases {
  detection_us: number | null;
  election_us: number | null;
  discovery_us: number | null;
  resume_us: number | null;
  fenced_at_us: number | null;
  new_leader_at_us: number | null;
  client_update_at_us: number | null;
  new_leader: number | null;
  node_back_us?: number | null;
  detection_resolution_us?: number | null;
  election_resolution_us?: number | null;
  discovery_resolution_us?: number | null;
  resume_resolution_us?: number | null;
}

export interface PartitionResult {
  topic: string;
  partition: number;
  role: Role;
  ack: KindResult;
  receive: KindResult;
  sent: number;
  failed: number;
  lost: number;
  unresolved: number;
  awaiting_ack?: number;
  awaiting_receive?: number;
  missing?: number;
  settled?: boolean;
  duplicated: number;
  reordered: number;
  phases: Phases;
}

export interface RunAnalysis {
  fault: Fault;
  target: number;
  fault_us: number;
  departure: 'fenced' | 'controlled_shutdown' | null;
  departure_at_us: number | null;
  recovered_us?: number | null;
  settled?: boolean;
  conclusive?: boolean;
  partitions: PartitionResult[];
}

export interface Run {
  run: number;
  state: string;
  reason?: string | null;
  target: number | null;
  baseline_start_us?: number | null;
  fault_requested_us?: number | null;
  fault_us?: number | null;
  fault_time_source?: string | null;
  observe_end_us?: number | null;
  recovered_us?: number | null;
  preferred_leaders_restored?: boolean | null;
  analysis?: RunAnalysis | null;
}

export interface Drill {
  id: number;
  cluster: string;
  fault: Fault;
  target: DrillTarget;
  options: DrillOptions;
  state: DrillState;
  reason: string | null;
  schedule_id: number | null;
  created: string;
  created_us: number;
  started: string | null;
  started_us: number | null;
  finished: string | null;
  finished_us: number | null;
  runs: Run[];
}

export interface DrillList extends List<Drill> {
  next_cursor: string | null;
}

export interface TimelineItem {
  id?: number;
  t: string;
  t_us: number;
  /** Seconds from the first run's fault; null while no run has finished (runs are stored per run). */
  relative_s: number | null;
  run: number | null;
  source: string;
  kind: string;
  broker: number | null;
  topic: string | null;
  partition: number | null;
  detail: Record<string, unknown> | null;
}

export interface Timeline {
  drill: number;
  fault_us: number | null;
  from_us: number;
  to_us: number;
  count?: number;
  truncated?: boolean;
  items: TimelineItem[];
}

export interface Quantiles {
  min: number;
  median: number;
  p95: number;
  max: number;
}

export interface TrendPoint {
  drill: number;
  run: number;
  at: string;
  at_us: number;
  ack_stall_us: number | null;
}

export interface StatGroup {
  cluster: string;
  topic: string;
  partition: number;
  role: Role;
  fault: Fault;
  count: number;
  ack_stall_us: Quantiles | null;
  receive_stall_us: Quantiles | null;
  detection_us: Quantiles | null;
  election_us: Quantiles | null;
  discovery_us: Quantiles | null;
  resume_us: Quantiles | null;
  trend: TrendPoint[];
}

export interface Statistics {
  drills: number;
  runs: number;
  groups: StatGroup[];
}

export interface Incident {
  start: string;
  start_us: number;
  end: string;
  end_us: number;
  duration_us: number;
  partitions: { topic: string; partition: number; kind: string; duration_us: number }[];
  events: KafkaEvent[];
}

export interface Schedule {
  id: number;
  cluster: string;
  name: string;
  cron: string;
  jitter_s: number;
  enabled: boolean;
  drill: DrillRequest;
  last_run: string | null;
  last_run_us: number | null;
  next_run: string | null;
  next_run_us: number | null;
  last_outcome: string | null;
  created: string;
  created_us: number;
}

export interface ScheduleRequest {
  cluster: string;
  name: string;
  cron: string;
  jitter_s?: number;
  enabled?: boolean;
  drill: DrillRequest;
}
