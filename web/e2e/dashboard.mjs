#!/usr/bin/env node
// Browser test of the kfaild dashboard, in a real (system) Chromium driven by playwright-core.
//
//   node web/e2e/dashboard.mjs --url http://127.0.0.1:PORT --token TOKEN --cluster lab --broker 1 --out DIR
//
// Checks, in order:
//   1. the overview lists three brokers of the cluster, all up;
//   2. with the token set in the settings box, a kill drill of the broker started from the form
//      (confirming the dialog) lands on its detail page and reaches state `done` (≤ --timeout-s);
//   3. the drill's timeline drew the lanes and a visible ack gap ≥ --min-gap-s on partition 0;
//   4. the last-drill page shows that drill with one row per probe partition and the roles, its
//      verdict first (as the API has it, with every failed check)
//      given by --roles (default leader,follower,follower: broker 1 on the lab's assignment);
//   5. nothing the pages did broke kfaild's Content-Security-Policy (console violations).
// Exits 0 when every check passes, 1 with a message naming the failed check otherwise, 2 on bad
// arguments. Screenshots (png) go to --out. Never downloads a browser: --chromium (default
// /usr/bin/chromium) must exist.

import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium } from 'playwright-core';

function parseArgs(argv) {
  const out = {
    url: null,
    token: null,
    cluster: 'lab',
    broker: '1',
    fault: 'kill',
    out: 'e2e-out',
    'timeout-s': '180',
    'min-gap-s': '1',
    roles: 'leader,follower,follower',
    topic: '',
    chromium: '/usr/bin/chromium',
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--help' || a === '-h') {
      console.log('usage: node dashboard.mjs --url URL --token TOKEN [--cluster lab] [--broker 1] [--out DIR] [--timeout-s 180] [--min-gap-s 1] [--roles leader,follower,follower] [--topic T] [--chromium PATH]');
      process.exit(0);
    }
    if (!a.startsWith('--') || !(a.slice(2) in out)) usage(`unknown argument ${a}`);
    const v = argv[++i];
    if (v === undefined) usage(`${a} needs a value`);
    out[a.slice(2)] = v;
  }
  if (!out.url) usage('--url is required');
  if (!out.token) usage('--token is required');
  return out;
}

function usage(msg) {
  console.error(`dashboard.mjs: ${msg}`);
  process.exit(2);
}

const opt = parseArgs(process.argv.slice(2));
const base = opt.url.replace(/\/+$/, '');
const outDir = resolve(opt.out);
const timeoutMs = Number(opt['timeout-s']) * 1000;
const minGap = Number(opt['min-gap-s']);
const expectedRoles = opt.roles.split(',').map((s) => s.trim()).filter(Boolean);

class CheckFailed extends Error {}
const fail = (msg) => {
  throw new CheckFailed(msg);
};
const log = (msg) => console.log(`[dashboard] ${msg}`);

if (!existsSync(opt.chromium)) {
  console.error(`dashboard.mjs: no browser at ${opt.chromium} (install it: apt-get install -y chromium)`);
  process.exit(2);
}

await mkdir(outDir, { recursive: true });
const profile = await mkdtemp(join(tmpdir(), 'kfaild-e2e-'));
const consoleErrors = [];
let context;
let page;
let step = 'start';
const passed = [];

async function shot(name, fullPage = true) {
  const path = join(outDir, `${name}.png`);
  await page.screenshot({ path, fullPage }).catch((e) => log(`screenshot ${name} failed: ${e.message}`));
  log(`screenshot ${path}`);
}

try {
  context = await chromium.launchPersistentContext(profile, {
    executablePath: opt.chromium,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport: { width: 1366, height: 900 },
  });
  page = context.pages()[0] ?? (await context.newPage());
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(m.text());
  });
  page.on('pageerror', (e) => consoleErrors.push(`pageerror: ${e.message}`));

  // 1. Overview: three brokers.
  step = 'overview lists three brokers';
  await page.goto(`${base}/#/`, { waitUntil: 'domcontentloaded' });
  const card = page.locator(`section.cluster[data-cluster="${opt.cluster}"]`);
  await card.waitFor({ timeout: 20_000 }).catch(() => fail(`no card for cluster "${opt.cluster}" on the overview`));
  const brokers = card.locator('[data-testid=broker]');
  await page
    .waitForFunction((c) => document.querySelectorAll(`section.cluster[data-cluster="${c}"] [data-testid=broker]`).length >= 3, opt.cluster, { timeout: 20_000 })
    .catch(() => undefined);
  const states = await brokers.evaluateAll((els) => els.map((e) => `${e.getAttribute('data-broker-id')}:${e.getAttribute('data-state')}`));
  if (states.length !== 3) fail(`expected 3 brokers on the overview, found ${states.length} (${states.join(', ')})`);
  const down = states.filter((s) => !s.endsWith(':up'));
  if (down.length) fail(`brokers not up before the drill: ${down.join(', ')}`);
  // Let a sparkline draw before the picture.
  await page.waitForSelector(`section.cluster[data-cluster="${opt.cluster}"] .spark canvas`, { timeout: 10_000 }).catch(() => undefined);
  await shot('01-overview');
  passed.push(`overview lists 3 brokers (${states.join(', ')})`);

  // 2. Token, then a drill from the form.
  step = 'set the token';
  await page.click('[data-testid=token-button]');
  await page.fill('[data-testid=token-input]', opt.token);
  await page.click('[data-testid=token-save]');
  // The dialog's close event, which stores the token, is dispatched after the click returns.
  const stored = await page
    .waitForFunction((t) => sessionStorage.getItem('kfaild.token') === t, opt.token, { timeout: 5000 })
    .then(() => opt.token, () => page.evaluate(() => sessionStorage.getItem('kfaild.token')));
  if (stored !== opt.token) fail('the token was not kept in sessionStorage');
  passed.push('token kept in sessionStorage');

  step = 'start a drill from the form';
  await page.goto(`${base}/#/drills?cluster=${encodeURIComponent(opt.cluster)}`, { waitUntil: 'domcontentloaded' });
  const form = page.locator('[data-testid=drill-form]');
  await form.waitFor({ timeout: 20_000 });
  await form.locator('select[name=cluster]').selectOption(opt.cluster);
  await form.locator('select[name=fault]').selectOption(opt.fault);
  await form.locator('select[name=target_kind]').selectOption('broker');
  await page
    .waitForSelector(`[data-testid=drill-form] select[name=broker] option[value="${opt.broker}"]`, { state: 'attached', timeout: 20_000 })
    .catch(() => fail(`broker ${opt.broker} is not offered in the drill form`));
  await form.locator('select[name=broker]').selectOption(opt.broker);
  await form.locator('[data-testid=start-drill]').click();
  const dialog = page.locator('[data-testid=confirm-dialog]');
  await dialog.waitFor({ timeout: 5_000 }).catch(() => fail('no confirmation dialog after "Start drill"'));
  const question = (await dialog.locator('[data-testid=confirm-text]').textContent()) ?? '';
  if (!question.includes(`broker ${opt.broker}`)) fail(`the confirmation does not name broker ${opt.broker}: "${question}"`);
  await shot('02-confirm', false);
  await dialog.locator('[data-testid=confirm-ok]').click();
  passed.push(`confirmation named the broker: "${question}"`);

  step = 'drill accepted';
  const accepted = await Promise.race([
    page.waitForURL(/#\/drills\/\d+$/, { timeout: 20_000 }).then(() => 'ok'),
    page.waitForSelector('[data-testid=drill-refused]', { timeout: 20_000 }).then(() => 'refused'),
    // A 401 reopens the token box: the token given is not the one kfaild was configured with.
    page.waitForSelector('[data-testid=token-dialog]', { timeout: 20_000 }).then(() => 'unauthorized'),
  ]).catch(() => 'timeout');
  if (accepted === 'unauthorized') {
    await shot('02-unauthorized');
    fail('kfaild answered 401: it refused the token given with --token');
  }
  if (accepted === 'refused') {
    const detail = await page.locator('[data-testid=drill-refused]').textContent();
    const status = await page.locator('[data-testid=drill-refused]').getAttribute('data-status');
    await shot('02-refused');
    fail(`kfaild refused the drill (HTTP ${status}): ${detail}`);
  }
  if (accepted !== 'ok') fail('the page did not move to the drill detail after confirming');
  const drillId = Number(/#\/drills\/(\d+)$/.exec(page.url())[1]);
  log(`drill #${drillId} started`);
  passed.push(`drill #${drillId} accepted and its detail page opened`);

  step = `drill #${drillId} reaches done`;
  const t0 = Date.now();
  let tookMidShot = false;
  let lastState = '';
  for (;;) {
    const st = await page.locator('[data-testid=drill-state]').getAttribute('data-state', { timeout: 10_000 }).catch(() => null);
    if (st && st !== lastState) {
      log(`state ${st} after ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      lastState = st;
    }
    if (st === 'done') break;
    if (st === 'failed' || st === 'aborted') {
      const reason = await page.locator('[data-testid=drill-reason]').textContent().catch(() => '');
      await shot('03-drill-failed');
      fail(`drill #${drillId} ended ${st}: ${reason}`);
    }
    if (!tookMidShot && st === 'observe') {
      await page.waitForTimeout(3000);
      await shot('03-drill-running');
      tookMidShot = true;
    }
    if (Date.now() - t0 > timeoutMs) {
      await shot('03-drill-timeout');
      fail(`drill #${drillId} not done after ${opt['timeout-s']} s (state ${st})`);
    }
    await page.waitForTimeout(1000);
  }
  passed.push(`drill #${drillId} done after ${((Date.now() - t0) / 1000).toFixed(1)} s`);

  // 3. The timeline shows the gap on partition 0.
  step = 'timeline shows a gap on partition 0';
  await page
    .waitForSelector('[data-testid=timeline][data-state=done][data-rendered=true]', { timeout: 30_000 })
    .catch(() => fail('the timeline chart was not rendered for the finished drill'));
  await page.waitForSelector('[data-testid=lane-gaps] li[data-partition="0"]', { timeout: 30_000 }).catch(() => fail('no lane for partition 0'));
  const lanes = await page.locator('[data-testid=lane-gaps] li').evaluateAll((els) =>
    els.map((e) => ({
      key: e.getAttribute('data-lane'),
      topic: e.getAttribute('data-topic'),
      partition: e.getAttribute('data-partition'),
      acks: Number(e.getAttribute('data-acks')),
      gap: e.getAttribute('data-longest-ack-gap-s') === '' ? null : Number(e.getAttribute('data-longest-ack-gap-s')),
      text: e.textContent,
    })),
  );
  for (const l of lanes) log(`lane ${l.text}`);
  const chartInfo = await page.locator('[data-testid=timeline]').evaluate((el) => {
    const c = el.querySelector('canvas');
    return { ticks: Number(el.getAttribute('data-ticks')), canvas: c ? { w: c.width, h: c.height } : null };
  });
  if (!chartInfo.canvas || chartInfo.canvas.w === 0) fail('the timeline has no canvas');
  if (!(chartInfo.ticks > 0)) fail('the timeline drew no ack ticks');
  const p0 = lanes.filter((l) => l.partition === '0' && (!opt.topic || l.topic === opt.topic));
  if (!p0.length) fail('no timeline lane for partition 0');
  const best = p0.reduce((a, b) => ((b.gap ?? -1) > (a.gap ?? -1) ? b : a));
  if (best.acks < 2 || best.gap === null) fail(`lane ${best.key} has ${best.acks} acks: no gap to see`);
  if (best.gap < minGap) fail(`longest ack gap on ${best.key} is ${best.gap} s, expected ≥ ${minGap} s`);
  await shot('04-drill-detail');
  passed.push(`timeline: ${chartInfo.ticks} ack ticks; ${best.key} longest ack gap ${best.gap.toFixed(3)} s ≥ ${minGap} s`);

  // 4. The last-drill page.
  step = 'last-drill page shows partitions with roles';
  await page.goto(`${base}/#/last?cluster=${encodeURIComponent(opt.cluster)}`, { waitUntil: 'domcontentloaded' });
  await page
    .waitForSelector(`[data-testid=last-drill][data-drill-id="${drillId}"]`, { timeout: 20_000 })
    .catch(async () => {
      const shown = await page.locator('[data-testid=last-drill]').getAttribute('data-drill-id').catch(() => null);
      fail(`the last-drill page shows drill ${shown ?? 'none'}, expected #${drillId}`);
    });
  const rows = await page.locator('[data-testid=last-drill] [data-testid=partition-row][data-run="1"]').evaluateAll((els) =>
    els.map((e) => ({ key: `${e.getAttribute('data-topic')}-${e.getAttribute('data-partition')}`, role: e.getAttribute('data-role'), stall: e.getAttribute('data-ack-stall-us') })),
  );
  const roles = rows.map((r) => r.role);
  log(`last drill rows: ${rows.map((r) => `${r.key}=${r.role} (${r.stall} µs)`).join(', ')}`);
  if (rows.length !== expectedRoles.length) fail(`expected ${expectedRoles.length} partitions on the last-drill page, found ${rows.length}: ${rows.map((r) => r.key).join(', ')}`);
  if (roles.join(',') !== expectedRoles.join(',')) fail(`roles ${roles.join(', ')}; expected ${expectedRoles.join(', ')}`);
  // The verdict against the objectives comes first, as kfaild's API has it, with every failed check.
  step = 'last-drill page shows the verdict first';
  const apiDrill = await (await fetch(`${base}/api/v1/drills/${drillId}`, { headers: { Authorization: `Bearer ${opt.token}` } })).json();
  if (!apiDrill.verdict) fail(`drill #${drillId} has no verdict in the API`);
  const banner = page.locator('[data-testid=last-drill] [data-testid=verdict]');
  const firstPart = await banner.locator(':scope > *').first().getAttribute('data-testid').catch(() => null);
  if (firstPart !== 'objective-verdict') fail(`the verdict banner starts with ${firstPart ?? 'nothing'}, not the verdict`);
  const shownVerdict = await banner.locator('[data-testid=objective-verdict]').getAttribute('data-verdict');
  if (shownVerdict !== apiDrill.verdict) fail(`the page shows verdict ${shownVerdict}, the API ${apiDrill.verdict}`);
  const failedApi = apiDrill.verdict_detail.checks.filter((c) => c.status === 'fail').length;
  const failedShown = await banner.locator('[data-testid=failed-check]').count();
  if (failedShown !== failedApi) fail(`the page lists ${failedShown} failed checks, the API has ${failedApi}`);
  passed.push(`verdict first: ${shownVerdict} with ${failedShown} failed check(s), as the API`);
  await shot('05-last-drill');
  await page.setViewportSize({ width: 390, height: 844 });
  await page.waitForTimeout(300);
  await shot('06-last-drill-phone');
  passed.push(`last-drill page: ${rows.map((r) => `${r.key} ${r.role}`).join(', ')}`);

  // kfaild serves the dashboard under a Content-Security-Policy without inline script or style:
  // anything the page needs that the policy refuses is a failure, not noise.
  step = 'no Content-Security-Policy violation';
  const violations = consoleErrors.filter((m) => /Content Security Policy/i.test(m));
  if (violations.length) fail(`the page broke kfaild's Content-Security-Policy:\n  ${violations.join('\n  ')}`);
  passed.push('no Content-Security-Policy violation');
  if (consoleErrors.length) log(`console errors (not failing the test):\n  ${consoleErrors.join('\n  ')}`);
  for (const p of passed) console.log(`ok - ${p}`);
  console.log(`${passed.length} passed, 0 failed`);
  await context.close();
  await rm(profile, { recursive: true, force: true });
  process.exit(0);
} catch (e) {
  if (page) await shot('failure');
  for (const p of passed) console.log(`ok - ${p}`);
  const msg = e instanceof CheckFailed ? e.message : `${e?.stack ?? e}`;
  console.error(`not ok - ${step}: ${msg}`);
  if (consoleErrors.length) console.error(`browser console errors:\n  ${consoleErrors.join('\n  ')}`);
  console.log(`${passed.length} passed, 1 failed`);
  await context?.close().catch(() => undefined);
  await rm(profile, { recursive: true, force: true });
  process.exit(1);
}
