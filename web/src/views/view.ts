// What the router mounts: a view renders into `el`, fetches in `refresh` (called at mount and
// then by the poller while the page is visible), and says how often it wants to be polled.

import type { ClusterSummary } from '../api/types';
import { api } from '../api/client';

export interface View {
  readonly el: HTMLElement;
  /** Fetches and renders. The signal aborts when the view is left. */
  refresh(signal: AbortSignal): Promise<void>;
  /** Milliseconds until the next refresh; null to stop polling. Read after every refresh. */
  pollMs(): number | null;
  destroy?(): void;
}

let clustersCache: { at: number; items: ClusterSummary[] } | null = null;

/** The configured clusters, fetched at most every 30 s. */
export async function clusters(signal?: AbortSignal): Promise<ClusterSummary[]> {
  if (clustersCache && Date.now() - clustersCache.at < 30_000) return clustersCache.items;
  const list = await api.clusters(signal);
  clustersCache = { at: Date.now(), items: list.items };
  return list.items;
}

const CLUSTER_KEY = 'kfaild.cluster';

/** The cluster a page shows: the route's, else the last chosen, else the first configured. */
export function chooseCluster(fromRoute: string | null, items: readonly ClusterSummary[]): string | null {
  const names = items.map((c) => c.name);
  if (fromRoute) return fromRoute;
  let remembered: string | null = null;
  try {
    remembered = localStorage.getItem(CLUSTER_KEY);
  } catch {
    remembered = null;
  }
  if (remembered && names.includes(remembered)) return remembered;
  return names[0] ?? null;
}

export function rememberCluster(name: string): void {
  try {
    localStorage.setItem(CLUSTER_KEY, name);
  } catch {
    // Storage disabled: the choice lasts for this page only.
  }
}
