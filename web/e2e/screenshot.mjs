#!/usr/bin/env node
// Takes a picture of the dashboard's drill page showing a stored drill result, for the README.
//
//   node web/e2e/screenshot.mjs --result lab/results/reproduce/kill-1.json \
//        [--timeline lab/results/reproduce/kill-1.timeline.json] --out docs/images/drill.png
//        [--width 1280] [--dist web/dist]
//
// --result is a drill as `GET /api/v1/drills/{id}` answers it, or a reproduction result that holds
// one under `drill` (and the cluster under `cluster_after`); --timeline is the drill's
// `GET /api/v1/drills/{id}/timeline` (default: the result's name with `.timeline.json`, if it
// exists). Build the dashboard first (scripts/build-web); Chromium is /usr/bin/chromium.
//
// A small server answers the page's requests from those files and serves web/dist. A stored
// result keeps no raw samples, so the lanes' ticks are redrawn from its analysis: one message per
// probe interval, acked and read back at once, except that the partition's measured longest ack
// gap and longest receive gap of each run are left empty. The lanes thus show the stored gaps and
// nothing else; the tables, phases, events and verdict are the stored ones.

import { createServer } from 'node:http';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, extname, join, normalize, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => {
    if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1] ?? 'true']);
    return acc;
  }, []),
);
if (!args.result || !args.out) {
  console.error('usage: screenshot.mjs --result FILE [--timeline FILE] --out PNG [--width PX] [--dist DIR]');
  process.exit(2);
}
const DIST = resolve(args.dist ?? join(here, '..', 'dist'));
const WIDTH = Number(args.width ?? 1280);
const ACK_LATENCY_US = 2_000;
const RECEIVE_AFTER_ACK_US = 1_000;

const stored = JSON.parse(await readFile(args.result, 'utf8'));
const drill = stored.drill ?? stored;
const cluster = stored.cluster_after ?? null;
const timelinePath = args.timeline ?? args.result.replace(/\.json$/, '.timeline.json');
const timeline = existsSync(timelinePath)
  ? JSON.parse(await readFile(timelinePath, 'utf8'))
  : { drill: drill.id, from: drill.started, from_us: drill.started_us, to: drill.finished, to_us: drill.finished_us, fault_us: drill.runs[0]?.fault_us ?? null, items: [], count: 0, truncated: false };
const intervalUs = cluster?.probe?.interval_us ?? 20_000;

const rfc = (us) => {
  const s = Math.floor(us / 1e6);
  return `${new Date(s * 1000).toISOString().slice(0, 19)}.${String(us - s * 1e6).padStart(6, '0')}Z`;
};
const parseUs = (s) => {
  const m = /^(.*?)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$/.exec(s ?? '');
  return m ? Date.parse(`${m[1]}${m[3]}`) * 1000 + Number((m[2] ?? '').padEnd(6, '0').slice(0, 6)) : NaN;
};

/** The measured longest gaps of one partition over the drill's runs, of `kind` (ack or receive). */
function gapsOf(topic, partition, kind) {
  return drill.runs
    .flatMap((r) => r.analysis?.partitions ?? [])
    .filter((p) => p.topic === topic && p.partition === partition)
    .map((p) => p[kind]?.longest_gap)
    .filter((g) => g && !g.open);
}

/** `t` moved to the end of the gap it falls inside, if any: nothing happens inside a gap. */
const outsideGaps = (t, gaps) => gaps.reduce((at, g) => (at > g.start_us && at < g.end_us ? g.end_us : at), t);

function samples(topic, partition, fromUs, toUs) {
  const ackGaps = gapsOf(topic, partition, 'ack');
  const receiveGaps = gapsOf(topic, partition, 'receive');
  const items = [];
  const first = Math.ceil(fromUs / intervalUs) * intervalUs;
  for (let send = first, seq = 0; send < toUs; send += intervalUs, seq++) {
    const ack = outsideGaps(send + ACK_LATENCY_US, ackGaps);
    const receive = outsideGaps(ack + RECEIVE_AFTER_ACK_US, receiveGaps);
    items.push({
      seq, send: rfc(send), send_us: send,
      ack: rfc(ack), ack_us: ack, ack_error: 0, ack_latency_us: ack - send, offset: seq,
      receive: rfc(receive), receive_us: receive, receive_latency_us: receive - send,
    });
  }
  return { items, count: items.length, truncated: false, next: null, from: rfc(fromUs), to: rfc(toUs) };
}

const json = (res, status, body) => {
  res.writeHead(status, { 'Content-Type': status < 400 ? 'application/json' : 'application/problem+json' });
  res.end(JSON.stringify(body));
};
const notFound = (res) => json(res, 404, { type: 'about:blank', title: 'Not Found', status: 404, detail: 'not in the stored result' });
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.svg': 'image/svg+xml', '.png': 'image/png' };

const server = createServer(async (req, res) => {
  const url = new URL(req.url, 'http://localhost');
  const path = decodeURIComponent(url.pathname);
  let m;
  if (path === '/api/v1/clusters') {
    return json(res, 200, { items: cluster ? [{ name: cluster.name, reachable: true }] : [], count: cluster ? 1 : 0 });
  }
  if ((m = /^\/api\/v1\/drills\/(\d+)$/.exec(path))) return Number(m[1]) === drill.id ? json(res, 200, drill) : notFound(res);
  if ((m = /^\/api\/v1\/drills\/(\d+)\/timeline$/.exec(path))) return Number(m[1]) === drill.id ? json(res, 200, timeline) : notFound(res);
  if ((m = /^\/api\/v1\/clusters\/[^/]+\/partitions\/([^/]+)\/(\d+)\/samples$/.exec(path))) {
    const from = Math.max(parseUs(url.searchParams.get('from')), timeline.from_us);
    const to = Math.min(parseUs(url.searchParams.get('to')), timeline.to_us);
    return json(res, 200, samples(m[1], Number(m[2]), from, to));
  }
  if ((m = /^\/api\/v1\/clusters\/([^/]+)$/.exec(path))) return cluster && m[1] === cluster.name ? json(res, 200, cluster) : notFound(res);
  if (path.startsWith('/api/')) return notFound(res);
  const file = normalize(join(DIST, path === '/' ? 'index.html' : path));
  if (!file.startsWith(DIST)) return notFound(res);
  try {
    const body = await readFile(file);
    res.writeHead(200, { 'Content-Type': TYPES[extname(file)] ?? 'application/octet-stream' });
    res.end(body);
  } catch {
    notFound(res);
  }
});
await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
const base = `http://127.0.0.1:${server.address().port}`;

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
});
try {
  const page = await browser.newPage({ viewport: { width: WIDTH, height: 900 }, deviceScaleFactor: 1 });
  page.on('console', (msg) => msg.type() === 'error' && console.error(`browser: ${msg.text()}`));
  // The page as it looked a minute after the drill finished, so "… ago" does not change per run.
  await page.clock.setFixedTime(new Date(Math.floor(drill.finished_us / 1000) + 60_000));
  await page.goto(`${base}/#/drills/${drill.id}`, { waitUntil: 'domcontentloaded' });
  await page.waitForSelector('[data-rendered="true"]', { timeout: 20_000 });
  await page.waitForSelector('[data-testid=events-table]', { timeout: 20_000 });
  await page.waitForTimeout(500);
  // Down to the end of the timeline's card (the events and the analysis tables follow), or the
  // whole page with --full.
  const card = await page.locator('section.card', { has: page.locator('[data-rendered="true"]') }).boundingBox();
  const clip = args.full === 'true' || !card ? undefined : { x: 0, y: 0, width: WIDTH, height: Math.ceil(card.y + card.height + 12) };
  await page.screenshot({ path: args.out, fullPage: true, clip });
  console.log(`screenshot: ${args.out}: drill #${drill.id}, ${drill.fault} of ${JSON.stringify(drill.target)}, created ${drill.created}`);
} finally {
  await browser.close();
  server.close();
}
