// `cargo xtask bench site`: the site's analysis speed in Debian's Chromium, as a ratio against
// the native analyzer (`triage analyze`, release build) reading the same file in the same run.
//
// A 30 MiB vLLM log (the corpus' `ttft_queueing.log` repeated) is chosen with "Add files"; the
// figure is the time from the Analyze click to the verdict on screen, measured in the page
// (`performance.now()` at the click, a MutationObserver for the verdict). Runs alternate with
// the native ones and the medians are compared; the machine is shared, so read the ratio, not
// the absolute times. Writes `bench-results/site.json` (path given as the first argument).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import http from 'node:http';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const dist = process.env.SITE_DIST ?? path.join(root, 'site/dist');
const targetDir = process.env.CARGO_TARGET_DIR ?? path.join(root, 'target');
const triageBin = process.env.TRIAGE_RELEASE_BIN ?? path.join(targetDir, 'release/triage');
const out = process.argv[2] ?? path.join(root, 'bench-results/site.json');
const RUNS = Number(process.env.SITE_BENCH_RUNS ?? 5);
const SIZE = 30 * 1024 * 1024;

const MIME = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.wasm': 'application/wasm', '.css': 'text/css' };
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'site-bench-'));
const file = path.join(tmp, 'vllm-30mib.log');
{
  const unit = fs.readFileSync(path.join(root, 'tests/data/incidents/ttft_queueing.log'));
  const fd = fs.openSync(file, 'w');
  let written = 0;
  while (written < SIZE) { fs.writeSync(fd, unit); written += unit.length; }
  fs.closeSync(fd);
}
const bytes = fs.statSync(file).size;

const server = http.createServer((req, res) => {
  const rel = req.url === '/' ? 'index.html' : decodeURIComponent(new URL(req.url, 'http://x').pathname).replace(/^\/+/, '');
  const f = path.join(dist, rel);
  if (!f.startsWith(dist) || !fs.existsSync(f)) { res.writeHead(404); res.end(); return; }
  res.writeHead(200, { 'content-type': MIME[path.extname(f)] ?? 'application/octet-stream', 'cache-control': 'no-cache' });
  res.end(fs.readFileSync(f));
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const origin = `http://127.0.0.1:${server.address().port}`;
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
});

/** One browser run: fresh page, choose the file, click Analyze, time to the verdict. */
async function siteRun() {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${origin}/`);
  await page.waitForSelector('[data-testid=analyze-button]');
  // Let the worker compile its module first, as it does while a user picks a file.
  await page.waitForTimeout(500);
  const chose = Date.now();
  await page.setInputFiles('[data-testid=file-input]', file);
  await page.waitForSelector('.files li');
  const listed = Date.now() - chose;
  const ms = await page.evaluate(() => new Promise((resolve) => {
    const started = performance.now();
    const seen = () => document.querySelector('[data-testid=verdict]');
    const obs = new MutationObserver(() => { if (seen()) { obs.disconnect(); resolve(performance.now() - started); } });
    obs.observe(document.body, { childList: true, subtree: true });
    document.querySelector('[data-testid=analyze-button]').click();
  }));
  const verdict = (await page.textContent('[data-testid=verdict]')).trim();
  // The worker's own stages (`triage:*` measures on its timeline, see static/worker.js).
  const stages = {};
  for (const w of page.workers()) {
    const entries = await w.evaluate(() => performance.getEntriesByType('measure').map((m) => [m.name, m.duration]));
    for (const [name, d] of entries) if (name.startsWith('triage:')) stages[name.slice(7)] = d;
  }
  await context.close();
  return { ms, listed, verdict, stages };
}

function nativeRun() {
  const started = process.hrtime.bigint();
  const json = execFileSync(triageBin, ['analyze', '--format', 'json', file], { maxBuffer: 64 << 20 });
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  return { ms, verdict: JSON.parse(json).verdict };
}

const site = [], native = [], listed = [], stages = {};
let verdicts = new Set();
for (let i = 0; i < RUNS; i++) {
  const n = nativeRun();
  native.push(n.ms);
  const s = await siteRun();
  site.push(s.ms);
  listed.push(s.listed);
  for (const [k, v] of Object.entries(s.stages)) (stages[k] ??= []).push(v);
  verdicts.add(n.verdict);
  if (!s.verdict.includes(n.verdict)) throw new Error(`site verdict ${s.verdict} != native ${n.verdict}`);
}
await browser.close();
server.close();
fs.rmSync(tmp, { recursive: true, force: true });

const mbps = (ms) => bytes / 1e6 / (ms / 1e3);
const result = {
  schema: 'triage.bench.site/v1',
  note: 'medians of alternating runs on a shared machine; compare the ratio, not the absolute times',
  analysis: {
    input_bytes: bytes,
    runs: RUNS,
    verdict: [...verdicts][0],
    site_click_to_verdict_ms: { median: median(site), runs: site.map((x) => +x.toFixed(1)) },
    site_choose_to_listed_ms: { median: median(listed), runs: listed },
    native_analyze_ms: { median: median(native), runs: native.map((x) => +x.toFixed(1)) },
    worker_stage_ms: Object.fromEntries(Object.entries(stages).map(([k, v]) => [k, +median(v).toFixed(1)])),
    site_mb_per_s: +mbps(median(site)).toFixed(1),
    native_mb_per_s: +mbps(median(native)).toFixed(1),
    site_over_native_time: +(median(site) / median(native)).toFixed(2),
  },
};
fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(out, JSON.stringify(result, null, 2) + '\n');
console.log(JSON.stringify(result, null, 2));
