// `cargo xtask bench site`: the site's analysis speed in Debian's Chromium, as a ratio against
// the native analyzer (`triage analyze`, release build) reading the same file in the same run,
// and the probe's TTFT error against a bare fetch reader in the same page (see probeRun).
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
import { execFileSync, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const dist = process.env.SITE_DIST ?? path.join(root, 'site/dist');
const targetDir = process.env.CARGO_TARGET_DIR ?? path.join(root, 'target');
const triageBin = process.env.TRIAGE_RELEASE_BIN ?? path.join(targetDir, 'release/triage');
const out = process.argv[2] ?? path.join(root, 'bench-results/site.json');
const RUNS = Number(process.env.SITE_BENCH_RUNS ?? 5);
// Probe runs per concurrency (the figures are their medians; SITE_BENCH_PROBE_CONC lists the
// concurrencies, default 1,6, empty for none; then concurrency 1 with the page's thread busy unless
// SITE_BENCH_PROBE_BUSY=0); SITE_BENCH_PROBE_ONLY=1 skips the analysis part.
const PROBE_RUNS = Number(process.env.SITE_BENCH_PROBE_RUNS ?? 3);
const PROBE_ONLY = process.env.SITE_BENCH_PROBE_ONLY === '1';
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
  const chose = Date.now();
  await page.setInputFiles('[data-testid=file-input]', file);
  await page.waitForSelector('.files li');
  const listed = Date.now() - chose;
  // Choosing a file starts the analysis worker (the analyzer's own module, loaded on demand,
  // then warmed up: site/static/worker.js). A person takes a moment to reach the button; the
  // figure gives it the same 500 ms it gave the worker before that module was split off.
  await page.waitForTimeout(500);
  const ms = await page.evaluate(() => new Promise((resolve, reject) => {
    const started = performance.now();
    // A deadline: a page that never shows a verdict fails the bench instead of hanging it.
    setTimeout(() => reject(new Error('no verdict within 60 s')), 60000);
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
for (let i = 0; i < (PROBE_ONLY ? 0 : RUNS); i++) {
  const n = nativeRun();
  native.push(n.ms);
  const s = await siteRun();
  site.push(s.ms);
  listed.push(s.listed);
  for (const [k, v] of Object.entries(s.stages)) (stages[k] ??= []).push(v);
  verdicts.add(n.verdict);
  if (!s.verdict.includes(n.verdict)) throw new Error(`site verdict ${s.verdict} != native ${n.verdict}`);
}
// The probe: 20 requests at concurrency 1, then at the page's limit (6: HTTP/1.1 connections per
// origin), against the scripted SSE server (CORS, Timing-Allow-Origin), whose record says when it
// wrote each first token. Baseline in the same page and run: a bare fetch reader at the same
// concurrency (fetch(), read the body on the page's thread, stamp the first token with
// performance.now(), from the fetch() call). Errors are TTFT minus the server's record; the first
// `conc` requests of each group pay for the preflight and the connections and are left out.
const PROBE_N = 20;
async function probeRun(conc, busy) {
  const proc = spawn(triageBin, ['scripted-serve', '--requests', String(2 * PROBE_N), '--ttft-ms', '150', '--gap-ms', '15', '--tokens', '12', '--lifetime-s', '120']);
  let text = '';
  proc.stdout.on('data', (d) => { text += d; });
  const exited = new Promise((r) => proc.on('exit', r));
  const deadline = Date.now() + 10000;
  while (!text.includes('\n')) {
    if (Date.now() > deadline) throw new Error('scripted server did not start');
    await new Promise((r) => setTimeout(r, 20));
  }
  const base = JSON.parse(text.split('\n')[0]).listening;
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${origin}/#/probe`);
  await page.waitForSelector('[data-testid=probe-start]');
  // "busy": the page's thread is taken 8 ms in every 33 (a heavy redraw each frame) while both
  // readers run, the condition in which stamps taken on the page's thread come late.
  if (busy) await page.evaluate(() => { setInterval(() => { const t = performance.now(); while (performance.now() - t < 8); }, 33); });
  const bare = await page.evaluate(async ({ base, n, conc }) => {
    const res = [];
    let next = 0;
    const lane = async () => { for (let i = next++; i < n; i = next++) {
      const t0 = performance.now();
      const r = await fetch(`${base}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/event-stream' }, body: '{"model":"m","stream":true}' });
      const reader = r.body.getReader();
      const dec = new TextDecoder();
      let buf = '', first = null;
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        if (first === null && buf.includes('"content":"tok0')) first = performance.now();
      }
      res.push([(buf.match(/chatcmpl-scripted-\d+/) || [''])[0], first - t0]);
    } };
    await Promise.all(Array.from({ length: conc }, lane));
    return res;
  }, { base, n: PROBE_N, conc });
  await page.fill('[data-testid=probe-url]', base);
  await page.fill('[data-testid=probe-model]', 'scripted');
  await page.fill('[data-testid=probe-n]', String(PROBE_N));
  await page.fill('[data-testid=probe-concurrency]', String(conc));
  await page.click('[data-testid=probe-start]');
  await page.waitForFunction(() => !document.querySelector('[data-testid=probe-start]')?.disabled, null, { timeout: 60000 });
  const probed = await page.$$eval('[data-testid=probe-request]', (rows) => rows.map((r) => [r.dataset.responseId, Number(r.dataset.ttft)]));
  // How many requests measured from the wire ("Sent" from Resource Timing), of how many.
  const wire = ((await page.textContent('[data-testid=probe-sent-note]')).match(/(\d+) of (\d+)/) || []).slice(1).map(Number);
  await context.close();
  await Promise.race([exited, new Promise((r) => setTimeout(r, 10000))]);
  proc.kill();
  const records = text.trim().split('\n').slice(1).map((l) => JSON.parse(l));
  const errors = (pairs) => pairs.slice(conc).map(([id, t]) => {
    const rec = records.find((r) => r.response_id === id);
    if (!rec) throw new Error(`no server record for ${id}`);
    return t - rec.ttft_ms;
  });
  return { probe: errors(probed), bare: errors(bare), wire };
}
const quantile = (xs, q) => { const s = [...xs].sort((a, b) => a - b); const i = (s.length - 1) * q; const lo = Math.floor(i); return s[lo] + (s[Math.min(lo + 1, s.length - 1)] - s[lo]) * (i - lo); };
const round3 = (x) => Math.round(x * 1000) / 1000;
const errSummary = (xs) => ({ p50: round3(quantile(xs, 0.5)), p90: round3(quantile(xs, 0.9)), above_2ms: xs.filter((x) => x > 2).length, n: xs.length, errors: xs.map(round3) });
/** `PROBE_RUNS` runs at `conc`; each run's p50/p90, and their medians. */
async function probeFigures(conc, busy = false) {
  const runs = [];
  for (let i = 0; i < PROBE_RUNS; i++) runs.push(await probeRun(conc, busy));
  const side = (k) => {
    const each = runs.map((r) => errSummary(r[k]));
    return { p50_median: round3(median(each.map((e) => e.p50))), p90_median: round3(median(each.map((e) => e.p90))), runs: each, ...(k === 'probe' ? { sent_from_wire: runs.map((r) => r.wire) } : {}) };
  };
  const probe = side('probe'), bare = side('bare');
  return {
    requests: PROBE_N,
    concurrency: conc,
    page_busy: busy,
    site_probe_error_ms: probe,
    bare_fetch_error_ms: bare,
    site_over_bare_p50: +(probe.p50_median / Math.max(bare.p50_median, 0.001)).toFixed(2),
  };
}
const probe = [];
const concs = (process.env.SITE_BENCH_PROBE_CONC ?? '1,6').split(',').filter(Boolean).map(Number);
for (const conc of concs) probe.push(await probeFigures(conc));
if (concs.length > 0 && process.env.SITE_BENCH_PROBE_BUSY !== '0') probe.push(await probeFigures(1, true));

await browser.close();
server.close();
fs.rmSync(tmp, { recursive: true, force: true });

const mbps = (ms) => bytes / 1e6 / (ms / 1e3);
const result = {
  schema: 'triage.bench.site/v1',
  note: 'medians of alternating runs on a shared machine; compare the ratio, not the absolute times',
  analysis: PROBE_ONLY ? null : {
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
  probe: {
    note: 'TTFT minus the server record, warm requests; medians of the runs\' p50 and p90; the probe reads and stamps in its worker (static/probe-worker.js)',
    runs: PROBE_RUNS,
    by_concurrency: probe,
  },
};
fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(out, JSON.stringify(result, null, 2) + '\n');
console.log(JSON.stringify(result, null, 2));
