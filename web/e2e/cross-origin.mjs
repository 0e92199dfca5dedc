#!/usr/bin/env node
// A hostile page on a second local origin tries to make the browser change kfaild, in a real
// (system) Chromium driven by playwright-core:
//
//   node web/e2e/cross-origin.mjs --url http://127.0.0.1:PORT [--cluster lab] [--broker 1]
//
// This script serves the page itself, from http://127.0.0.1:<another port>/ (same host, another
// origin: "same-site" to the browser), and the page tries, against --url:
//   1. fetch POST .../clusters/{cluster}/drills, mode "no-cors", a text/plain JSON body;
//   2. fetch POST /api/v1/drills/1/abort, mode "no-cors", no body;
//   3. a plain HTML form, enctype="text/plain", POST /api/v1/schedules, whose one field is built
//      so that the body reads as the JSON of a schedule that kills the broker every minute;
//   4. fetch POST .../drills, mode "cors", with Content-Type: application/json (needs a
//      preflight, which kfaild never grants).
// It prints one line per attempt ("attempt N: sent" / "attempt N: blocked by the browser: ...")
// and exits 0 once all four were made (whether they were refused is for the caller to check,
// through kfaild's API and audit log), 1 when the page could not run them, 2 on bad arguments.
// Never downloads a browser: --chromium (default /usr/bin/chromium) must exist.

import { createServer } from 'node:http';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const opt = { url: null, cluster: 'lab', broker: '1', chromium: '/usr/bin/chromium' };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i += 2) {
  const key = argv[i].replace(/^--/, '');
  if (!(key in opt) || argv[i + 1] === undefined) {
    console.error(`cross-origin.mjs: bad argument ${argv[i]}`);
    process.exit(2);
  }
  opt[key] = argv[i + 1];
}
if (!opt.url) {
  console.error('usage: node cross-origin.mjs --url URL [--cluster lab] [--broker 1] [--chromium PATH]');
  process.exit(2);
}
if (!existsSync(opt.chromium)) {
  console.error(`cross-origin.mjs: no browser at ${opt.chromium}`);
  process.exit(2);
}
const target = opt.url.replace(/\/+$/, '');
const drill = JSON.stringify({ fault: 'kill', target: { broker: Number(opt.broker) } });
// A text/plain form sends "name=value": the name carries the JSON up to a string that swallows
// the "=" and the value.
const formName = `{"cluster":"${opt.cluster}","name":"every minute","cron":"* * * * *","drill":${drill},"x":"`;
const formValue = '"}';

const attackerPage = `<!doctype html>
<html><body>
<iframe name="sink" style="display:none"></iframe>
<form id="f" method="POST" enctype="text/plain" action="${target}/api/v1/schedules" target="sink">
  <input type="hidden" name='${formName}' value='${formValue}'>
</form>
<script src="/attack.js"></script>
</body></html>`;

const attackScript = `
const results = [];
const note = (n, what) => results.push('attempt ' + n + ': ' + what);
async function run() {
  try {
    await fetch(${JSON.stringify(`${target}/api/v1/clusters/${opt.cluster}/drills`)},
      { method: 'POST', mode: 'no-cors', headers: { 'Content-Type': 'text/plain' }, body: ${JSON.stringify(drill)} });
    note(1, 'sent');
  } catch (e) { note(1, 'blocked by the browser: ' + e.message); }
  try {
    await fetch(${JSON.stringify(`${target}/api/v1/drills/1/abort`)}, { method: 'POST', mode: 'no-cors' });
    note(2, 'sent');
  } catch (e) { note(2, 'blocked by the browser: ' + e.message); }
  await new Promise((resolve) => {
    const sink = document.querySelector('iframe[name=sink]');
    sink.addEventListener('load', resolve, { once: true });
    setTimeout(resolve, 5000);
    document.getElementById('f').submit();
  });
  note(3, 'sent');
  try {
    const r = await fetch(${JSON.stringify(`${target}/api/v1/clusters/${opt.cluster}/drills`)},
      { method: 'POST', mode: 'cors', headers: { 'Content-Type': 'application/json' }, body: ${JSON.stringify(drill)} });
    note(4, 'sent, status ' + r.status);
  } catch (e) { note(4, 'blocked by the browser: ' + e.message); }
  window.attackDone = results;
}
run();
`;

const server = createServer((req, res) => {
  if (req.url === '/attack.js') {
    res.writeHead(200, { 'Content-Type': 'text/javascript' });
    res.end(attackScript);
  } else {
    res.writeHead(200, { 'Content-Type': 'text/html' });
    res.end(attackerPage);
  }
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const origin = `http://127.0.0.1:${server.address().port}`;
console.log(`[cross-origin] hostile page at ${origin}/, target ${target}`);

const profile = await mkdtemp(join(tmpdir(), 'kfaild-xo-'));
let context;
let code = 0;
try {
  context = await chromium.launchPersistentContext(profile, {
    executablePath: opt.chromium,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
  });
  const page = context.pages()[0] ?? (await context.newPage());
  await page.goto(`${origin}/`, { waitUntil: 'domcontentloaded' });
  const results = await page.waitForFunction(() => window.attackDone, null, { timeout: 30_000 });
  const lines = await results.jsonValue();
  for (const line of lines) console.log(line);
  if (lines.length !== 4) {
    console.error(`cross-origin.mjs: the page made ${lines.length} of 4 attempts`);
    code = 1;
  }
} catch (e) {
  console.error(`cross-origin.mjs: ${e.message}`);
  code = 1;
} finally {
  await context?.close().catch(() => undefined);
  server.close();
  await rm(profile, { recursive: true, force: true });
}
process.exit(code);
