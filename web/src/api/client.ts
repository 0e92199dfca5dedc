// The REST client: JSON in and out, problem documents turned into ApiError, the bearer token for
// mutating requests kept in sessionStorage, and one retry after asking for the token on a 401.

import type {
  ClusterDetail,
  ClusterList,
  Drill,
  DrillList,
  DrillRequest,
  EventList,
  IncidentList,
  MaintenanceWindowList,
  Problem,
  SampleList,
  Schedule,
  ScheduleList,
  ScheduleRequest,
  ScheduleUpdate,
  Statistics,
  Timeline,
} from './types';

const TOKEN_KEY = 'kfaild.token';

export function getToken(): string | null {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

export function setToken(token: string | null): void {
  try {
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    // Storage disabled (private mode): the token lives only as long as the request.
  }
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly problem: Problem | null,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  /** What to show a person: the problem's detail as the server wrote it, else the status. */
  get detail(): string {
    return this.problem?.detail || this.problem?.title || this.message;
  }
}

/** Called on a 401; resolves true when a (new) token was entered and the request may be retried. */
let askForToken: (reason: string) => Promise<boolean> = async () => false;

export function onUnauthorized(handler: (reason: string) => Promise<boolean>): void {
  askForToken = handler;
}

type Query = Record<string, string | number | boolean | null | undefined>;

export function withQuery(path: string, query: Query = {}): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v === null || v === undefined || v === '') continue;
    q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

async function toError(res: Response): Promise<ApiError> {
  let problem: Problem | null = null;
  const text = await res.text().catch(() => '');
  try {
    const j = JSON.parse(text) as Partial<Problem>;
    if (j && typeof j === 'object') {
      problem = { type: 'about:blank', title: res.statusText, status: res.status, detail: '', ...j } as Problem;
    }
  } catch {
    // Not JSON: a proxy's HTML page or plain text.
  }
  const msg = problem?.detail || problem?.title || text.slice(0, 200) || `HTTP ${res.status} ${res.statusText}`;
  return new ApiError(res.status, problem, msg);
}

/**
 * A read. The token, when one was entered, goes along: kfaild then shows the operator the full
 * text (command lines, hosts) it redacts for others. On 401 (kfaild configured with read_auth)
 * asks for a token once and retries.
 */
export async function getJson<T>(path: string, query: Query = {}, signal?: AbortSignal): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    const headers: Record<string, string> = { Accept: 'application/json' };
    const token = getToken();
    if (token) headers['Authorization'] = `Bearer ${token}`;
    const res = await fetch(withQuery(path, query), { headers, signal });
    if (res.status === 401 && attempt === 0) {
      const err = await toError(res);
      const reason = token ? `The token was refused (${err.detail}). Enter the right one.` : 'Reading needs the API token.';
      if (await askForToken(reason)) continue;
      throw err;
    }
    if (!res.ok) throw await toError(res);
    return (await res.json()) as T;
  }
}

/** A mutating request with the bearer token; on 401 asks for a token once and retries. A 403
 * (the viewer token) is an error shown as is. */
export async function send<T>(method: 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    // X-Kfaild-Client: a header a page of another site cannot send without a CORS preflight,
    // which kfaild never grants; it is what lets a body-less change through on a kfaild run
    // with http.auth none.
    const headers: Record<string, string> = { Accept: 'application/json', 'X-Kfaild-Client': 'dashboard' };
    const token = getToken();
    if (token) headers['Authorization'] = `Bearer ${token}`;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    if (res.status === 401 && attempt === 0) {
      const err = await toError(res);
      const reason = token ? `The token was refused (${err.detail}). Enter the right one.` : 'This action needs the API token.';
      if (await askForToken(reason)) continue;
      throw err;
    }
    if (!res.ok) throw await toError(res);
    if (res.status === 204) return undefined as T;
    const text = await res.text();
    return (text ? JSON.parse(text) : undefined) as T;
  }
}

const enc = encodeURIComponent;

export const api = {
  clusters: (s?: AbortSignal) => getJson<ClusterList>('/api/v1/clusters', {}, s),
  cluster: (c: string, s?: AbortSignal) => getJson<ClusterDetail>(`/api/v1/clusters/${enc(c)}`, {}, s),
  samples: (c: string, topic: string, partition: number, q: { profile?: string; from?: string; to?: string; limit?: number }, s?: AbortSignal) =>
    getJson<SampleList>(`/api/v1/clusters/${enc(c)}/partitions/${enc(topic)}/${partition}/samples`, q, s),
  events: (c: string, q: Query, s?: AbortSignal) => getJson<EventList>(`/api/v1/clusters/${enc(c)}/events`, q, s),
  incidents: (c: string, q: Query, s?: AbortSignal) => getJson<IncidentList>(`/api/v1/clusters/${enc(c)}/incidents`, q, s),
  maintenance: (c: string, q: Query, s?: AbortSignal) =>
    getJson<MaintenanceWindowList>(`/api/v1/clusters/${enc(c)}/maintenance`, q, s),
  drills: (q: Query, s?: AbortSignal) => getJson<DrillList>('/api/v1/drills', q, s),
  drill: (id: number, s?: AbortSignal) => getJson<Drill>(`/api/v1/drills/${id}`, {}, s),
  lastDrill: (c: string, s?: AbortSignal) => getJson<Drill>(`/api/v1/clusters/${enc(c)}/drills/last`, {}, s),
  timeline: (id: number, s?: AbortSignal) => getJson<Timeline>(`/api/v1/drills/${id}/timeline`, {}, s),
  statistics: (q: Query, s?: AbortSignal) => getJson<Statistics>('/api/v1/statistics', q, s),
  startDrill: (c: string, req: DrillRequest) => send<Drill>('POST', `/api/v1/clusters/${enc(c)}/drills`, req),
  abortDrill: (id: number) => send<Drill>('POST', `/api/v1/drills/${id}/abort`),
  schedules: (s?: AbortSignal) => getJson<ScheduleList>('/api/v1/schedules', {}, s),
  createSchedule: (req: ScheduleRequest) => send<Schedule>('POST', '/api/v1/schedules', req),
  patchSchedule: (id: number, patch: ScheduleUpdate) => send<Schedule>('PATCH', `/api/v1/schedules/${id}`, patch),
  deleteSchedule: (id: number) => send<void>('DELETE', `/api/v1/schedules/${id}`),
};
