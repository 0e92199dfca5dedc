#!/usr/bin/env node
// Smoke test of the built dashboard against e2e/mock-server.mjs (no Kafka, no kfaild): runs
// dashboard.mjs, then checks the flows the real lab rarely shows — a mutating request without a
// token asks for it and goes through after it is entered, a guard's 409 is shown with its detail,
// and the statistics and schedules pages render, and with a second mock running two client
// profiles (--profiles librdkafka,java) the profiles show side by side where a single profile shows
// none; the mocks check their every API answer against openapi.yaml (--check-schema). Needs
// `npm run build` first.
//
//   node e2e/run-mock.mjs [--out DIR]

import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startMock } from './start-mock.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const outIdx = process.argv.indexOf('--out');
const out = resolve(outIdx > 0 ? process.argv[outIdx + 1] : join(here, 'out'));
const TOKEN = 'mock-token';
await mkdir(out, { recursive: true });

// Every API answer the mock sends in the flows below is checked against openapi.yaml.
const schemaProblems = [];
const mock = await startMock({
  args: ['--token', TOKEN, '--check-schema'],
  onStderr: (text) => {
    process.stderr.write(text);
    for (const line of text.split('\n')) if (line.startsWith('mock: schema: ')) schemaProblems.push(line.slice(14));
  },
});
const url = mock.url;
console.log(`[run-mock] mock at ${url}`);

const run = (args) =>
  new Promise((res) => {
    const p = spawn(process.execPath, args, { stdio: 'inherit' });
    p.on('exit', (c) => res(c ?? 1));
  });

let failed = 0;
let passed = 0;
const check = (ok, msg) => {
  if (ok) {
    passed++;
    console.log(`ok - ${msg}`);
  } else {
    failed++;
    console.log(`not ok - ${msg}`);
  }
};

// A mock whose probe runs two client profiles; java finds the new leader 1.2 s after librdkafka.
let profiled = null;

async function profilesFlow(page) {
  profiled = await startMock({
    args: ['--token', TOKEN, '--check-schema', '--profiles', 'librdkafka,java'],
    onStderr: (text) => {
      process.stderr.write(text);
      for (const line of text.split('\n')) if (line.startsWith('mock: schema: ')) schemaProblems.push(line.slice(14));
    },
  });
  const base = profiled.url;
  await page.goto(`${base}/#/drills/1`);
  await page.waitForSelector('[data-testid=timeline][data-rendered=true]', { timeout: 15000 });
  await page.waitForFunction(() => document.querySelector('[data-testid=timeline]')?.getAttribute('data-lanes') === '6', null, { timeout: 15000 }).catch(() => {});
  const lanes = await page.getAttribute('[data-testid=timeline]', 'data-lanes');
  check(lanes === '6', `the timeline has a lane per partition and profile (${lanes})`);
  const laneGaps = await page.$$eval('[data-testid=lane-gaps] li[data-partition="0"]', (els) => Object.fromEntries(els.map((e) => [e.dataset.profile, Number(e.dataset.longestAckGapS)])));
  check(laneGaps.java - laneGaps.librdkafka > 1, `orders-0's java lane stalls longer than its librdkafka lane (${JSON.stringify(laneGaps)})`);
  const rows = await page.locator('[data-testid=profiles-table] [data-testid=profile-row]').count();
  const cells = await page.$$eval('[data-testid=profile-row][data-partition="0"] td[data-profile]', (els) => els.map((e) => [e.dataset.profile, Number(e.dataset.ackStallUs)]));
  check(rows === 3 && cells.length === 2 && cells[1][1] - cells[0][1] === 1_200_000, `the profiles side by side per partition (${rows} rows, orders-0: ${JSON.stringify(cells)})`);
  const settings = await page.locator('details.profile-settings').count();
  const badges = await page.$$eval('[data-testid=profile-verdict]', (els) => els.map((e) => e.dataset.profile));
  check(settings === 2 && badges.join() === 'librdkafka,java', `each profile's settings and verdict (${settings} expanders, badges ${badges.join()})`);
  await page.screenshot({ path: join(out, '13-profiles-drill.png'), fullPage: true });
  await page.goto(`${base}/#/`);
  const chips = await page.waitForSelector('[data-testid=cluster-profile]', { timeout: 15000 }).then(() => page.$$eval('[data-testid=cluster-profile]', (els) => els.map((e) => `${e.dataset.profile}:${e.dataset.phase}`)), () => []);
  check(chips.join() === 'librdkafka:probing,java:probing', `the cluster card lists its profiles (${chips.join()})`);
  await page.goto(`${base}/#/stats?cluster=lab&fault=kill&period=30d&profile=java`);
  await page.waitForSelector('[data-testid=strip-chart] canvas', { timeout: 8000 });
  const filter = await page.locator('select[name=profile]').inputValue().catch(() => null);
  const profilesShown = await page.$$eval('.stats table tbody tr td:first-child', (els) => [...new Set(els.map((e) => e.textContent))]);
  check(filter === 'java' && profilesShown.join() === 'java', `statistics filter by profile (${filter}: ${profilesShown.join()})`);
  await page.screenshot({ path: join(out, '14-profiles-stats.png'), fullPage: true });
}

try {
  const code = await run([join(here, 'dashboard.mjs'), '--url', url, '--token', TOKEN, '--cluster', 'lab', '--broker', '1', '--out', out]);
  check(code === 0, 'dashboard.mjs passes against the mock');

  const profile = await mkdtemp(join(tmpdir(), 'kfaild-mock-'));
  const ctx = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const page = ctx.pages()[0] ?? (await ctx.newPage());
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));

  // No token yet: starting a drill gets 401, the token box opens, and after Save it goes through.
  await page.goto(`${url}/#/drills?cluster=lab`);
  const form = page.locator('[data-testid=drill-form]');
  await page.waitForSelector('[data-testid=drill-form] select[name=broker] option[value="2"]', { state: 'attached' });
  await form.locator('select[name=broker]').selectOption('2');
  await form.locator('[data-testid=start-drill]').click();
  await page.locator('[data-testid=confirm-ok]').click();
  const asked = await page.waitForSelector('[data-testid=token-dialog]', { timeout: 5000 }).then(() => true, () => false);
  check(asked, 'a 401 opens the token box');
  if (asked) {
    await page.fill('[data-testid=token-input]', TOKEN);
    await page.click('[data-testid=token-save]');
  }
  const moved = await page.waitForURL(/#\/drills\/\d+$/, { timeout: 5000 }).then(() => true, () => false);
  check(moved, 'after the token is entered the drill starts');

  // A second drill while one runs: the guard's 409 detail is shown as is.
  await page.goto(`${url}/#/drills?cluster=lab`);
  await page.waitForSelector('[data-testid=drill-form] select[name=broker] option[value="3"]', { state: 'attached' });
  await form.locator('select[name=broker]').selectOption('3');
  await form.locator('[data-testid=start-drill]').click();
  await page.locator('[data-testid=confirm-ok]').click();
  const refused = await page.waitForSelector('[data-testid=drill-refused]', { timeout: 5000 }).then((e) => e.textContent(), () => null);
  const status = await page.locator('[data-testid=drill-refused]').getAttribute('data-status').catch(() => null);
  check(status === '409' && /still running/.test(refused ?? ''), `a guard refusal shows its detail (${status}: ${refused})`);
  await page.screenshot({ path: join(out, '10-refused.png'), fullPage: true });

  // Abort the running drill from its page.
  await page.goto(`${url}/#/drills`);
  const first = await page.locator('[data-testid=drill-list] a[data-drill-id]').first().getAttribute('data-drill-id');
  await page.goto(`${url}/#/drills/${first}`);
  await page.locator('[data-testid=abort-drill]').click();
  await page.locator('[data-testid=confirm-ok]').click();
  const aborted = await page.waitForSelector('[data-testid=drill-state][data-state=aborted]', { timeout: 8000 }).then(() => true, () => false);
  check(aborted, 'the abort button aborts a running drill');

  // The mock's cluster has an active maintenance window: its card says so.
  await page.goto(`${url}/#/`);
  const maintenance = await page
    .waitForSelector('section.cluster[data-cluster="lab"] [data-testid=maintenance]', { timeout: 15000 })
    .then((el) => el.textContent(), () => null);
  check(/^maintenance until /.test(maintenance ?? ''), `the overview shows the active maintenance window (${maintenance})`);

  // Statistics and schedules render.
  await page.goto(`${url}/#/stats?cluster=lab&fault=kill&period=30d`);
  const strip = await page.waitForSelector('[data-testid=strip-chart] canvas', { timeout: 8000 }).then(() => true, () => false);
  check(strip, 'statistics draws the strip plot');
  await page.screenshot({ path: join(out, '11-stats.png'), fullPage: true });
  await page.goto(`${url}/#/schedules`);
  const sched = await page.waitForSelector('[data-testid=schedule-list] table', { timeout: 8000 }).then(() => true, () => false);
  check(sched, 'schedules lists the seeded schedule');
  await page.screenshot({ path: join(out, '12-schedules.png'), fullPage: true });

  // One profile: no profile table, verdict badges or profile chips.
  await page.goto(`${url}/#/drills/1`);
  await page.waitForSelector('[data-testid=timeline][data-rendered=true]', { timeout: 15000 });
  const single = await page.locator('[data-testid=profiles], [data-testid=profile-verdicts]').count();
  await page.goto(`${url}/#/`);
  await page.waitForSelector('section.cluster[data-cluster="lab"] [data-testid=maintenance]', { timeout: 15000 });
  const chips = await page.locator('[data-testid=cluster-profile]').count();
  check(single === 0 && chips === 0, `one profile shows no profiles (${single} drill sections, ${chips} cluster chips)`);

  await profilesFlow(page);

  check(errors.length === 0, `no uncaught page errors${errors.length ? `: ${errors.join('; ')}` : ''}`);
  check(schemaProblems.length === 0, `every API answer of the mocks matched openapi.yaml${schemaProblems.length ? ` (${schemaProblems.length} did not, first: ${schemaProblems[0]})` : ''}`);
  await ctx.close();
  await rm(profile, { recursive: true, force: true });
} catch (e) {
  failed++;
  console.log(`not ok - ${e?.stack ?? e}`);
} finally {
  mock.stop();
  profiled?.stop();
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
