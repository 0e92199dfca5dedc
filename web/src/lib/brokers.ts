// Broker status for the overview: which brokers are up, which were seen before and are gone now
// (fenced or stopped: metadata lists only registered, unfenced brokers), which is the controller.

import type { ClusterDetail } from '../api/types';

export interface BrokerStatus {
  id: number;
  host: string | null;
  port: number | null;
  up: boolean;
  controller: boolean;
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
        leads: leads.get(id) ?? 0,
        outOfIsr: outOfIsr.get(id) ?? 0,
      };
    });
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
