// Broker status for the overview: which brokers are up, which were seen before and are gone now
// (fenced or stopped: metadata lists only registered, unfenced brokers); and the KRaft
// controllers: which node is the active controller (the quorum's leader, from DescribeQuorum, not
// the Metadata answer's controller id, which in KRaft is a random broker) and which vote. A
// dedicated controller is in no broker list, so it gets a status of its own.

import type { ClusterDetail, ControlPlaneState } from '../api/types';

export interface BrokerStatus {
  id: number;
  host: string | null;
  port: number | null;
  up: boolean;
  /** The active KRaft controller (a broker that is also a controller, in combined mode). */
  controller: boolean;
  /** A voter of the KRaft quorum. */
  voter: boolean;
  /** Probe partitions this broker leads. */
  leads: number;
  /** Probe partitions this broker is a replica of but not in the ISR. */
  outOfIsr: number;
}

/**
 * Every broker known: in the last metadata answer, named as a replica, or seen earlier
 * (`remembered`, e.g. from previous polls in this page). Sorted by id.
 */
export function brokerStatuses(detail: ClusterDetail, remembered: Iterable<number> = []): BrokerStatus[] {
  const voters = new Set((detail.quorum?.voters ?? []).map((v) => v.id));
  const up = new Map(detail.brokers.map((b) => [b.id, b]));
  const ids = new Set<number>([...up.keys(), ...remembered]);
  const leads = new Map<number, number>();
  const outOfIsr = new Map<number, number>();
  for (const t of detail.topics) {
    for (const p of t.partitions) {
      for (const r of p.replicas) {
        ids.add(r);
        if (!p.isr.includes(r)) outOfIsr.set(r, (outOfIsr.get(r) ?? 0) + 1);
      }
      if (p.leader !== null) leads.set(p.leader, (leads.get(p.leader) ?? 0) + 1);
    }
  }
  return [...ids]
    .sort((a, b) => a - b)
    .map((id) => {
      const b = up.get(id);
      return {
        id,
        host: b?.host ?? null,
        port: b?.port ?? null,
        up: b !== undefined,
        controller: detail.controller_id === id,
        voter: voters.has(id),
        leads: leads.get(id) ?? 0,
        outOfIsr: outOfIsr.get(id) ?? 0,
      };
    });
}

export interface ControllerStatus {
  id: number;
  /** The quorum's leader. */
  active: boolean;
  voter: boolean;
  /** Metadata records behind the leader; null when unknown. */
  lag: number | null;
  /** On the active controller's wall clock; null when unknown. */
  lastCaughtUpAtUs: number | null;
}

/**
 * The controllers that are not brokers (`brokers` as brokerStatuses returned them): the quorum's
 * voters and its leader, sorted by id. Empty while the quorum is unknown.
 */
export function controllerStatuses(detail: ClusterDetail, brokers: readonly BrokerStatus[]): ControllerStatus[] {
  const quorum = detail.quorum;
  if (!quorum) return [];
  const brokerIds = new Set(brokers.map((b) => b.id));
  const members = new Map(quorum.voters.map((v) => [v.id, v]));
  const ids = new Set(members.keys());
  if (quorum.leader_id !== null) ids.add(quorum.leader_id);
  return [...ids]
    .filter((id) => !brokerIds.has(id))
    .sort((a, b) => a - b)
    .map((id) => {
      const v = members.get(id);
      return {
        id,
        active: quorum.leader_id === id,
        voter: v !== undefined,
        lag: v?.lag ?? null,
        lastCaughtUpAtUs: v?.last_caught_up_at_us ?? null,
      };
    });
}

/** "controller 100 (active, voter)". */
export function controllerLabel(c: ControllerStatus): string {
  const roles = [c.active ? 'active' : null, c.voter ? 'voter' : null].filter((r) => r !== null);
  return `controller ${c.id}${roles.length ? ` (${roles.join(', ')})` : ''}`;
}

/** Health of a probe partition from its current ack gap, relative to the probe interval. */
export type ProbeHealth = 'ok' | 'slow' | 'stalled' | 'idle';

export function probeHealth(currentGapS: number | null, intervalUs: number): ProbeHealth {
  if (currentGapS === null) return 'idle';
  const intervalS = intervalUs / 1e6;
  if (currentGapS > Math.max(1, 25 * intervalS)) return 'stalled';
  if (currentGapS > Math.max(0.2, 5 * intervalS)) return 'slow';
  return 'ok';
}

// One line on the control-plane probe: whether the active controller answers metadata operations
// and who leads the quorum (the control probe's watch).
export function controlPlaneLine(c: ControlPlaneState): string {
  const ms = (s: number) => `${Math.round(s * 1000)} ms`;
  const interval = c.interval_us / 1e6;
  const gap = c.current_gap_seconds;
  let state: string;
  if (gap === null) state = 'control plane: no answer yet';
  else if (gap > 3 * interval) state = `control plane: no answer for ${gap.toFixed(1)} s${c.last_error ? ` (${c.last_error})` : ''}`;
  else state = `control plane answering${c.last_latency_seconds === null ? '' : ` in ${ms(c.last_latency_seconds)}`}`;
  const leader = c.quorum ? ` · quorum leader ${c.quorum.leader_id}, epoch ${c.quorum.leader_epoch}` : c.quorum_error ? ` · quorum: ${c.quorum_error}` : '';
  return state + leader + (c.leader_changes > 0 ? ` · ${c.leader_changes} leader change${c.leader_changes === 1 ? '' : 's'} seen` : '');
}
