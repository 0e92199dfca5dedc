// The mock kfaild (e2e/mock-server.mjs) checked against the same schema the dashboard's types come
// from (../openapi.yaml): the mock is started on a free port, every route it serves is called
// (successes, and the problem documents the dashboard handles), and each response's status,
// content type and body must be one the schema documents for that path and method. The unit-test
// fixtures are checked against their schemas too. See scripts/openapi.mjs for how.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMock } from '../e2e/start-mock.mjs';
import { responseValidator } from '../scripts/openapi.mjs';
import { drill, group, samples, twoProfileDrill, FAULT_US } from './fixtures';

const TOKEN = 'schema-test';
const validator = responseValidator();

/** Operations the mock does not serve (the dashboard does not call them). */
const NOT_SERVED = new Set(['getHealth', 'getReadiness', 'getMetrics', 'listGaps', 'listRecoveries', 'resolveRecovery', 'listAudit', 'listNotifications',
  // The dashboard shows the active maintenance window; opening and closing one is for operators' scripts.
  'openMaintenanceWindow', 'getMaintenanceWindow', 'closeMaintenanceWindow',
  // A mark is a chaos tool's or kfailctl's word that it injected a fault; the dashboard only shows it.
  'markDrill',
  // The steady-state check is for chaos tools and rollouts between their steps, not the dashboard.
  'getSteadyState']);

let stopMock = () => {};
let base = '';
/** operationId → statuses seen. */
const seen = new Map<string, Set<number>>();

beforeAll(async () => {
  const mock = await startMock({ args: ['--token', TOKEN] });
  base = mock.url;
  stopMock = mock.stop;
});

afterAll(() => stopMock());

interface Answer {
  status: number;
  json: any;
  problems: string[];
}

/** One request to the mock; `problems` lists where its answer departs from the schema. */
async function call(method: string, path: string, opts: { body?: unknown; token?: string | null } = {}): Promise<Answer> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  const token = opts.token === undefined ? TOKEN : opts.token;
  if (token && method !== 'GET') headers['Authorization'] = `Bearer ${token}`;
  if (opts.body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(base + path, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
  const text = await res.text();
  const pathname = new URL(base + path).pathname;
  const problems = validator.check({ method, path: pathname, status: res.status, contentType: res.headers.get('content-type'), body: text });
  const op = validator.operation(method, pathname)?.operationId;
  if (op) seen.set(op, (seen.get(op) ?? new Set()).add(res.status));
  let json: unknown = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    // Checked above.
  }
  return { status: res.status, json, problems };
}

/** Calls and expects the status and a body the schema allows (a departure fails the test but the calls go on). */
async function expectServed(method: string, path: string, status: number, opts: { body?: unknown; token?: string | null } = {}): Promise<any> {
  const a = await call(method, path, opts);
  expect.soft(a.problems, `${method} ${path}`).toEqual([]);
  expect(a.status, `${method} ${path}: ${JSON.stringify(a.json)?.slice(0, 300)}`).toBe(status);
  return a.json;
}

const rfc = (us: number) => new Date(us / 1000).toISOString();

describe('the mock server answers as openapi.yaml says', () => {
  it('clusters', async () => {
    const list = await expectServed('GET', '/api/v1/clusters', 200);
    expect(list.count).toBeGreaterThan(0);
    await expectServed('GET', '/api/v1/clusters/lab', 200);
    await expectServed('GET', '/api/v1/clusters/nope', 404);
  });

  it('samples, events and incidents', async () => {
    await expectServed('GET', '/api/v1/clusters/lab/partitions/orders/0/samples', 200);
    const now = Date.now() * 1000;
    const q = `from=${encodeURIComponent(rfc(now - 60e6))}&to=${encodeURIComponent(rfc(now))}&limit=500`;
    const s = await expectServed('GET', `/api/v1/clusters/lab/partitions/orders/1/samples?${q}`, 200);
    expect(s.items.length).toBeGreaterThan(0);
    await expectServed('GET', `/api/v1/clusters/lab/partitions/other/0/samples?${q}`, 200);
    await expectServed('GET', '/api/v1/clusters/lab/partitions/orders/0/samples?from=yesterday', 400);
    await expectServed('GET', `/api/v1/clusters/lab/partitions/orders/0/samples?from=${encodeURIComponent(rfc(now - 90_000e6))}`, 400);
    // The seeded drills are 26 h apart: a week holds all their events.
    const ev = await expectServed('GET', `/api/v1/clusters/lab/events?from=${encodeURIComponent(rfc(now - 7 * 86_400e6))}`, 200);
    expect(ev.items.length).toBeGreaterThan(0);
    await expectServed('GET', '/api/v1/clusters/lab/events', 200);
    const windows = await expectServed('GET', '/api/v1/clusters/lab/maintenance', 200);
    expect(windows.active).toBe(1);
    expect(windows.items[0].active).toBe(true);
    const inc = await expectServed('GET', '/api/v1/clusters/lab/incidents', 200);
    expect(inc.items.length).toBeGreaterThan(0);
  });

  it('finished drills: list, pages, one, timeline, last, statistics', async () => {
    const page = await expectServed('GET', '/api/v1/drills?limit=2', 200);
    expect(page.next_cursor).not.toBeNull();
    await expectServed('GET', `/api/v1/drills?limit=2&cursor=${encodeURIComponent(page.next_cursor)}`, 200);
    await expectServed('GET', '/api/v1/drills?cursor=abc', 400);
    await expectServed('GET', '/api/v1/drills?cluster=lab&state=done&fault=kill', 200);
    const d = await expectServed('GET', `/api/v1/drills/${page.items[0].id}`, 200);
    expect(d.runs[0].analysis.partitions.length).toBe(3);
    const tl = await expectServed('GET', `/api/v1/drills/${d.id}/timeline`, 200);
    expect(tl.items.length).toBeGreaterThan(0);
    await expectServed('GET', '/api/v1/drills/9999', 404);
    await expectServed('GET', '/api/v1/drills/9999/timeline', 404);
    await expectServed('GET', '/api/v1/clusters/lab/drills/last', 200);
    const st = await expectServed('GET', '/api/v1/statistics?cluster=lab&fault=kill', 200);
    expect(st.groups.length).toBeGreaterThan(0);
    await expectServed('GET', '/api/v1/statistics?role=leader&partition=0', 200);
    await expectServed('POST', `/api/v1/drills/${d.id}/abort`, 409);
    await expectServed('GET', `/api/v1/drills/${d.id}/abort`, 405);
  });

  it('a drill started, refused, watched and aborted', async () => {
    const req = { fault: 'kill', target: { broker: 2 }, options: { repeats: 1 } };
    await expectServed('POST', '/api/v1/clusters/lab/drills', 401, { body: req, token: null });
    await expectServed('POST', '/api/v1/clusters/lab/drills', 401, { body: req, token: 'wrong' });
    await expectServed('POST', '/api/v1/clusters/lab/drills', 400, { body: { fault: 'melt', target: { broker: 2 } } });
    const d = await expectServed('POST', '/api/v1/clusters/lab/drills', 202, { body: req });
    expect(d.state).toBe('queued');
    await expectServed('POST', '/api/v1/clusters/lab/drills', 409, { body: { fault: 'stop', target: { leader_of: { topic: 'orders', partition: 1 } } } });
    await expectServed('GET', `/api/v1/drills/${d.id}`, 200);
    const tl = await expectServed('GET', `/api/v1/drills/${d.id}/timeline`, 200);
    expect(tl.fault_us).toBeNull();
    await expectServed('GET', '/api/v1/drills?state=queued', 200);
    const aborted = await expectServed('POST', `/api/v1/drills/${d.id}/abort`, 202);
    expect(aborted.state).toBe('aborted');
    await expectServed('GET', `/api/v1/drills/${d.id}`, 200);
    await expectServed('GET', `/api/v1/drills/${d.id}/timeline`, 200);
  });

  it('schedules', async () => {
    await expectServed('GET', '/api/v1/schedules', 200);
    const body = { cluster: 'lab', name: 'weekly stop', cron: '0 4 * * 1', jitter_s: 60, drill: { fault: 'stop', target: { controller: true } } };
    await expectServed('POST', '/api/v1/schedules', 401, { body, token: null });
    await expectServed('POST', '/api/v1/schedules', 400, { body: { ...body, cron: 'often' } });
    const s = await expectServed('POST', '/api/v1/schedules', 201, { body });
    await expectServed('GET', `/api/v1/schedules/${s.id}`, 200);
    const off = await expectServed('PATCH', `/api/v1/schedules/${s.id}`, 200, { body: { enabled: false } });
    expect(off.enabled).toBe(false);
    await expectServed('DELETE', `/api/v1/schedules/${s.id}`, 204);
    await expectServed('GET', `/api/v1/schedules/${s.id}`, 404);
    await expectServed('GET', '/api/v1/schedules', 200);
  });

  it('unknown paths', async () => {
    await expectServed('GET', '/api/v1/nothing-here', 404);
  });

  it('every operation of the schema was called with success (or is listed as not served)', () => {
    const missing = validator
      .operations()
      .filter((o) => !NOT_SERVED.has(o.operationId) && ![...(seen.get(o.operationId) ?? [])].some((s) => s >= 200 && s < 300))
      .map((o) => `${o.method} ${o.template} (${o.operationId})`);
    expect(missing, 'add the operation to the mock server and to this test, or to NOT_SERVED').toEqual([]);
  });
});

describe('the mock server with two client profiles answers as openapi.yaml says', () => {
  let stop = () => {};
  let url = '';
  beforeAll(async () => {
    const mock = await startMock({ args: ['--token', TOKEN, '--profiles', 'librdkafka,java'] });
    url = mock.url;
    stop = mock.stop;
  });
  afterAll(() => stop());

  const get = async (path: string, status = 200): Promise<any> => {
    const res = await fetch(url + path, { headers: { Accept: 'application/json' } });
    const text = await res.text();
    const problems = validator.check({ method: 'GET', path: new URL(url + path).pathname, status: res.status, contentType: res.headers.get('content-type'), body: text });
    expect.soft(problems, path).toEqual([]);
    expect(res.status, `${path}: ${text.slice(0, 300)}`).toBe(status);
    return JSON.parse(text);
  };

  it('cluster, drill, statistics and samples by profile', async () => {
    const c = await get('/api/v1/clusters/lab');
    expect(c.profiles.map((p: any) => [p.profile, p.client])).toEqual([['librdkafka', 'librdkafka'], ['java', 'java']]);
    const page = await get('/api/v1/drills?state=done&limit=1');
    const d = await get(`/api/v1/drills/${page.items[0].id}`);
    expect(d.runs[0].profile).toBe('librdkafka');
    expect(d.runs[0].profiles.map((p: any) => p.profile)).toEqual(['java']);
    expect(d.verdict_detail.profiles.map((p: any) => p.profile)).toEqual(['librdkafka', 'java']);
    const st = await get('/api/v1/statistics?cluster=lab&fault=kill');
    expect(new Set(st.groups.map((g: any) => g.profile))).toEqual(new Set(['librdkafka', 'java']));
    const now = Date.now() * 1000;
    const q = `from=${encodeURIComponent(rfc(now - 10e6))}&to=${encodeURIComponent(rfc(now))}`;
    await get(`/api/v1/clusters/lab/partitions/orders/0/samples?${q}&profile=java`);
    await get(`/api/v1/clusters/lab/partitions/orders/0/samples?${q}&profile=nope`, 400);
  });
});

describe('the unit-test fixtures follow openapi.yaml', () => {
  it('drill, samples and statistics groups', () => {
    expect(validator.checkSchema('Drill', drill(1))).toEqual([]);
    expect(validator.checkSchema('Drill', twoProfileDrill(2))).toEqual([]);
    expect(validator.checkSchema('StatisticsGroup', group(0, 'leader', [9_400_000], 'java'))).toEqual([]);
    expect(samples(FAULT_US, 5).flatMap((s) => validator.checkSchema('Sample', s))).toEqual([]);
    expect(validator.checkSchema('StatisticsGroup', group(0, 'leader', [9_400_000]))).toEqual([]);
  });
});
