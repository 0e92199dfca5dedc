// Client profiles (probe.profiles): one probe per profile on the same partitions, each its own
// producer and consumer. A run analyses the primary profile as `analysis` (its name in
// `run.profile`) and every other one in `run.profiles`; these functions put them side by side.
// With one profile there is no `profiles` and every function here answers "nothing to show".
// Pure functions.

import type { ClusterDetail, Drill, PartitionResult, ProbePhase, Role, Run, RunAnalysis, VerdictStatus } from '../api/types';
import { mechanismText, phaseText, stallText } from './drill';
import { laneKey, sortPartitions, type PartitionRef } from './timeline';

/** One profile's view of a run: its analysis, or why there is none. */
export interface ProfileView {
  profile: string;
  /** null for the primary: the run does not name its client. */
  client: string | null;
  primary: boolean;
  analysis: RunAnalysis | null;
  problem: string | null;
  /** The profile's client settings in force, when the run recorded them. */
  settings: Record<string, string> | null;
}

/** Every profile's view of a run, the primary first; empty when the run has one profile. */
export function runProfiles(run: Run): ProfileView[] {
  if (!run.profiles?.length) return [];
  const primary: ProfileView = {
    profile: run.profile ?? 'primary',
    client: null,
    primary: true,
    analysis: run.analysis ?? null,
    problem: run.analysis ? null : (run.reason ?? 'not analysed'),
    settings: run.probe_client ?? null,
  };
  return [
    primary,
    ...run.profiles.map((p) => ({
      profile: p.profile,
      client: p.client,
      primary: false,
      analysis: p.analysis ?? null,
      problem: p.analysis ? null : (p.problem ?? 'not analysed'),
      settings: p.probe_client ?? null,
    })),
  ];
}

/** The profile names a drill's runs report, the primary first, without repeats. */
export function drillProfiles(d: Drill): string[] {
  const names = new Set<string>();
  for (const run of d.runs) for (const v of runProfiles(run)) names.add(v.profile);
  return [...names];
}

/** The profile names a cluster probes with, the primary first; empty with one profile. */
export function clusterProfiles(c: ClusterDetail): string[] {
  return c.profiles.length > 1 ? c.profiles.map((p) => p.profile) : [];
}

/** One profile's figures on one partition, as the table shows them. */
export interface ProfileCell {
  ack: string;
  receive: string;
  discovery: string;
  resume: string;
  mechanism: string;
  ack_us: number | null;
}

export interface ProfileRow extends PartitionRef {
  key: string;
  /** The partition's role in the primary's view (the same fault, so the same in every view). */
  role: Role | null;
  /** One per view of `ProfileTable.views`, null where that view has no figures for the partition. */
  cells: (ProfileCell | null)[];
}

export interface ProfileTable {
  run: number;
  views: ProfileView[];
  rows: ProfileRow[];
}

function cell(p: PartitionResult): ProfileCell {
  return {
    ack: stallText(p.ack),
    receive: stallText(p.receive),
    discovery: phaseText(p.phases, 'discovery'),
    resume: phaseText(p.phases, 'resume'),
    mechanism: mechanismText(p.mechanism),
    ack_us: p.ack.stall?.duration_us ?? null,
  };
}

/** A run's profiles side by side: one row per partition, one cell per profile; null with one profile. */
export function profileTable(run: Run): ProfileTable | null {
  const views = runProfiles(run);
  if (views.length === 0) return null;
  const refs = new Map<string, PartitionRef>();
  for (const v of views) for (const p of v.analysis?.partitions ?? []) refs.set(laneKey(p), { topic: p.topic, partition: p.partition });
  const rows = sortPartitions([...refs.values()]).map((ref) => {
    const key = laneKey(ref);
    const found = views.map((v) => v.analysis?.partitions.find((p) => laneKey(p) === key) ?? null);
    return {
      ...ref,
      key,
      role: found.find((p) => p !== null)?.role ?? null,
      cells: found.map((p) => (p ? cell(p) : null)),
    };
  });
  return { run: run.run, views, rows };
}

/** The verdict of each profile, the primary first; empty with one profile. */
export function profileVerdicts(d: Drill): { profile: string; verdict: VerdictStatus }[] {
  return d.verdict_detail?.profiles ?? [];
}

/** A profile of the cluster's probe as the cluster card lists it. */
export interface ProfileStateRow {
  profile: string;
  client: string;
  phase: ProbePhase;
  problem: string | null;
  primary: boolean;
  settings: Record<string, string>;
}

/** The cluster's profiles, the primary first; empty with one profile. */
export function profileStateRows(c: ClusterDetail): ProfileStateRow[] {
  return c.profiles.map((p, i) => ({ profile: p.profile, client: p.client, phase: p.phase, problem: p.problem, primary: i === 0, settings: p.client_settings }));
}

/** Settings as one line each, sorted by key: "acks=all". */
export function settingsLines(settings: Record<string, string> | null): string[] {
  if (!settings) return [];
  return Object.keys(settings)
    .sort()
    .map((k) => `${k}=${settings[k]}`);
}
