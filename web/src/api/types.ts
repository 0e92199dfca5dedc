// Shapes of kfaild's REST API, as ../../openapi.yaml defines them. Every type here is an alias of a
// schema component in schema.gen.ts, which `npm run gen:types` generates from openapi.yaml with
// openapi-typescript (before every build, typecheck and test run; not committed). A change of the
// schema therefore shows up here as a type error where the dashboard relies on the old shape.
// Change openapi.yaml, not this file, when the API changes; this file only names the shapes.
//
// Times come twice: an RFC 3339 string and `*_us`, integer microseconds since the Unix epoch;
// durations named `*_us` are microseconds, `*_seconds` seconds.

import type { components, paths } from './schema.gen';

type Schemas = components['schemas'];

export type { components, paths };

/** An RFC 9457 problem document (`application/problem+json`). */
export type Problem = Schemas['Problem'];

export type ProbePhase = Schemas['ProbePhase'];
export type ClusterSummary = Schemas['ClusterSummary'];
export type ClusterList = Schemas['ClusterList'];
export type Broker = Schemas['Broker'];
export type MetadataState = Schemas['MetadataState'];
export type ProbeState = Schemas['ProbeState'];
export type PartitionProbe = Schemas['PartitionProbe'];
export type PartitionState = Schemas['PartitionState'];
export type TopicState = Schemas['TopicState'];
/** A member of the KRaft quorum as the active controller reports it. */
export type QuorumReplica = Schemas['QuorumReplica'];
export type QuorumState = Schemas['QuorumState'];
export type ControlPlaneState = Schemas['ControlPlaneState'];
export type ControlPlaneRun = Schemas['ControlPlaneRun'];
export type CoordinatorsRun = Schemas['CoordinatorsRun'];
export type SecondFaultRun = Schemas['SecondFaultRun'];
export type RollingRestart = Schemas['RollingRestart'];
export type Observed = Schemas['Observed'];
export type ObservedFault = Schemas['ObservedFault'];
export type RollingStall = Schemas['RollingStall'];
export type ClusterDetail = Schemas['ClusterDetail'];

export type Sample = Schemas['Sample'];
export type SampleList = Schemas['SampleList'];
/** A recorded event (metadata change, client or broker log line, fault, ...). */
export type KafkaEvent = Schemas['Event'];
export type EventList = Schemas['EventList'];
export type Gap = Schemas['Gap'];
export type GapList = Schemas['GapList'];

export type Fault = Schemas['Fault'];
export type DrillState = Schemas['DrillState'];
export type Role = Schemas['Role'];
/** Exactly one member (the schema's minProperties/maxProperties 1). */
export type DrillTarget = Schemas['DrillTarget'];
export type DrillOptions = Schemas['DrillOptions'];
export type DrillRequest = Schemas['DrillRequest'];

/** A stall or gap; `open`: not ended when observation did, duration_us is a lower bound. */
export type Interval = NonNullable<Schemas['Interval']>;
export type KindResult = Schemas['KindResult'];
export type Outcome = NonNullable<KindResult['outcome']>;
export type Phases = Schemas['Phases'];
export type PartitionResult = Schemas['PartitionAnalysis'];
/** What bounded a gray fault's stall (isolate, throttle, disk_full), and its steps. */
export type Mechanism = Schemas['Mechanism'];
export type RunAnalysis = Schemas['RunAnalysis'];
/** One run of a drill; members appear as the run gets that far. */
export type Run = Schemas['Run'];
export type Drill = Schemas['Drill'];
/** What a drill must achieve; the cluster's, with a request's `expect` on top. */
export type Objectives = Schemas['Objectives'];
export type VerdictStatus = Schemas['VerdictStatus'];
export type VerdictCheck = Schemas['VerdictCheck'];
export type Regression = Schemas['Regression'];
export type VerdictDetail = Schemas['Verdict'];
export type DrillList = Schemas['DrillList'];

/** An event with its place in the drill (`relative_s`: seconds from the first run's fault). */
export type TimelineItem = Schemas['TimelineEvent'];
export type Timeline = Schemas['Timeline'];

/** Nearest-rank order statistics in µs. */
export type Quantiles = NonNullable<Schemas['Summary']>;
export type TrendPoint = Schemas['TrendPoint'];
export type StatGroup = Schemas['StatisticsGroup'];
export type Statistics = Schemas['Statistics'];

export type Incident = Schemas['Incident'];
export type IncidentList = Schemas['IncidentList'];

export type MaintenanceWindow = Schemas['MaintenanceWindow'];
export type MaintenanceWindowList = Schemas['MaintenanceWindowList'];

export type Schedule = Schemas['Schedule'];
export type ScheduleList = Schemas['ScheduleList'];
export type ScheduleRequest = Schemas['ScheduleRequest'];
export type ScheduleUpdate = Schemas['ScheduleUpdate'];

/** Every member of the string union T, in the order written; a missing or unknown one is a type error. */
function allOf<T extends string>(members: Record<T, true>): T[] {
  return Object.keys(members) as T[];
}

export const FAULTS: Fault[] = allOf<Fault>({
  kill: true,
  stop: true,
  pause: true,
  restart: true,
  isolate: true,
  throttle: true,
  disk_full: true,
  disk_slow: true,
  rolling_restart: true,
  observed: true,
});

/** The faults the dashboard's drill form starts: the gray ones (isolate, throttle, disk_full) need
 * their own options (from, mode, rate, duration_s) and are started through the API or kfailctl. */
export const FORM_FAULTS: Fault[] = ['kill', 'stop', 'pause', 'restart'];

export const DRILL_STATES: DrillState[] = allOf<DrillState>({
  queued: true,
  preflight: true,
  baseline: true,
  inject: true,
  observe: true,
  recover: true,
  elect: true,
  analyse: true,
  done: true,
  failed: true,
  aborted: true,
});
