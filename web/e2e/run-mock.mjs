#!/usr/bin/env node
// Smoke test of the built dashboard against e2e/mock-server.mjs (no Kafka, no kfaild): runs
// dashboard.mjs, then checks the flows the real lab rarely shows — a mutating request without a
// token asks for it and goes through after it is entered, a guard's 409 is shown with its detail,
// and the statistics and schedules pages render; the mock checks its every API answer against
// openapi.yaml (--check-schema). Needs `npm run build` first.
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

  check(errors.length === 0, `no uncaught page errors${errors.length ? `: ${errors.join('; ')}` : ''}`);
  check(schemaProblems.length === 0, `every API answer of the mock matched openapi.yaml${schemaProblems.length ? ` (${schemaProblems.length} did not, first: ${schemaProblems[0]})` : ''}`);
  await ctx.close();
  await rm(profile, { recursive: true, force: true });
} catch (e) {
  failed++;
  console.log(`not ok - ${e?.stack ?? e}`);
} finally {
  mock.stop();
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
