// End-to-end tests of the built site (site/dist) in Debian's Chromium, driven by playwright-core.
//
// The site is served from 127.0.0.1 by a tiny static server started here; the probe test starts
// the scripted SSE server (`triage scripted-serve`, with CORS) and compares the browser's TTFT
// with the server's own record. Screenshots go to site/e2e/screenshots/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import { spawn, execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const dist = process.env.SITE_DIST ?? path.join(root, 'site/dist');
const targetDir = process.env.CARGO_TARGET_DIR ?? path.join(root, 'target');
const triageBin = process.env.TRIAGE_BIN ?? path.join(targetDir, 'debug/triage');
const shots = path.join(here, 'screenshots');
const figures = {};

const MIME = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.wasm': 'application/wasm', '.css': 'text/css', '.json': 'application/json', '.webmanifest': 'application/manifest+json', '.svg': 'image/svg+xml', '.png': 'image/png' };

let server, origin, browser;

/** Serve the files of `dir` on 127.0.0.1 (a free port). */
async function serveDir(dir) {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    const rel = url.pathname === '/' ? 'index.html' : decodeURIComponent(url.pathname).replace(/^\/+/, '');
    const file = path.join(dir, rel);
    if (!file.startsWith(dir) || !fs.existsSync(file)) { res.writeHead(404); res.end('not found'); return; }
    res.writeHead(200, { 'content-type': MIME[path.extname(file)] ?? 'application/octet-stream', 'cache-control': 'no-cache' });
    res.end(fs.readFileSync(file));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { server, origin: `http://127.0.0.1:${server.address().port}` };
}

before(async () => {
  assert.ok(fs.existsSync(path.join(dist, 'index.html')), `site not built: ${dist} (run cargo xtask site)`);
  fs.mkdirSync(shots, { recursive: true });
  ({ server, origin } = await serveDir(dist));
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
  });
});

after(async () => {
  await browser?.close();
  server?.close();
  fs.writeFileSync(path.join(shots, 'figures.json'), JSON.stringify(figures, null, 2) + '\n');
  console.log('site figures:', JSON.stringify(figures));
});

/** A fresh page (own storage) that records every request it makes. */
/** A fresh context on the built site. Its service worker is blocked: a test that routes the
 *  site's own files (a module answering 404) must see its route take effect, and a worker
 *  installed at idle would answer from its cache, past `page.route`. The offline tests open
 *  their own contexts with the worker allowed. */
async function open(hash = '') {
  const context = await browser.newContext({ viewport: { width: 1200, height: 1000 }, serviceWorkers: 'block' });
  const page = await context.newPage();
  const requests = [];
  page.on('request', (r) => requests.push(r.url()));
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`${origin}/${hash}`);
  await page.waitForSelector('[data-testid=lang-toggle]');
  return { page, context, requests, errors };
}

/** Start the scripted SSE server (CORS, Timing-Allow-Origin); `done()` waits for it to exit
 *  and returns its record of each request. */
async function scriptedServer(requests, { ttftMs, gapMs, tokens, lifetimeS = 60 }) {
  const proc = spawn(triageBin, ['scripted-serve', '--requests', String(requests), '--ttft-ms', String(ttftMs), '--gap-ms', String(gapMs), '--tokens', String(tokens), '--lifetime-s', String(lifetimeS)]);
  let out = '';
  proc.stdout.on('data', (d) => { out += d; });
  const exited = new Promise((r) => proc.on('exit', r));
  while (!out.includes('\n')) await new Promise((r) => setTimeout(r, 20));
  const base = JSON.parse(out.split('\n')[0]).listening;
  const done = async () => {
    await exited;
    return out.trim().split('\n').slice(1).map((l) => JSON.parse(l));
  };
  return { base, done };
}

function onlyOrigins(requests, allowed) {
  const outside = requests.filter((u) => !allowed.some((a) => u.startsWith(a)) && !u.startsWith('data:') && !u.startsWith('blob:'));
  assert.deepEqual(outside, [], 'requests left the page');
}

test('first paint: the app is up fast and asks nothing from elsewhere', async () => {
  const { page, context, requests, errors } = await open();
  const ms = await page.evaluate(() => {
    const nav = performance.getEntriesByType('navigation')[0];
    return performance.now() - (nav ? nav.startTime : 0);
  });
  const fcp = await page.evaluate(() => performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? null);
  figures.app_ready_ms = Math.round(ms);
  figures.first_contentful_paint_ms = fcp && Math.round(fcp);
  assert.ok(fcp !== null && fcp <= 500, `first contentful paint ${fcp} ms > 500 ms`);
  onlyOrigins(requests, [origin]);
  assert.deepEqual(errors, []);
  await page.screenshot({ path: path.join(shots, 'home.png') });
  // A first visit downloads the page's module only: the analyzer's (the worker's) waits until
  // something needs it — here, the user starting to type.
  await page.waitForTimeout(300);
  const files = () => requests.map((u) => new URL(u).pathname.replace(/^\//, ''));
  assert.ok(files().includes('triage_site_bg.wasm'), files().join(' '));
  assert.ok(!files().some((f) => f.startsWith('triage_site_analyzer') || f === 'worker.js'), `loaded before needed: ${files().join(' ')}`);
  await page.focus('[data-testid=paste-input]');
  const t0 = Date.now();
  while (!files().includes('triage_site_analyzer_bg.wasm') && Date.now() - t0 < 5000) await page.waitForTimeout(20);
  assert.ok(files().includes('triage_site_analyzer_bg.wasm'), `the analyzer was not fetched on focus: ${files().join(' ')}`);
  await context.close();
});

test('a pasted incident gets its verdict and ranked findings with evidence', async () => {
  const { page, context, requests } = await open();
  const log = fs.readFileSync(path.join(root, 'tests/data/incidents/ttft_queueing.log'), 'utf8');
  await page.fill('[data-testid=paste-input]', log);
  await page.click('[data-testid=analyze-button]');
  const verdict = await page.textContent('[data-testid=verdict]');
  assert.match(verdict, /TTFT_HIGH/);
  const rules = await page.$$eval('[data-testid=finding]', (els) => els.map((e) => e.getAttribute('data-rule')));
  assert.equal(rules[0], 'queueing-exceeds-capacity');
  const evidence = await page.textContent('[data-testid=finding] .evidence');
  assert.match(evidence, /paste:\d+/);
  assert.match(await page.textContent('.source pre'), /Waiting: \d+ reqs/);
  // The vLLM stats became charts that actually drew something.
  for (const id of ['chart-vllm-queue', 'chart-vllm-kv', 'chart-throughput']) {
    const inked = await page.$eval(`[data-testid=${id}]`, (c) => c.getContext('2d').getImageData(0, 0, c.width, c.height).data.some((x, i) => i % 4 === 3 && x > 0));
    assert.ok(inked, `${id} is blank`);
  }
  await page.screenshot({ path: path.join(shots, 'triage.png'), fullPage: true });
  onlyOrigins(requests, [origin]);
  await context.close();
});

test('an analyzer module that cannot load is an error on the page, and the next try starts a new worker', async () => {
  const { page, context, requests } = await open();
  // The worker's module answers 404 (a broken deploy, a proxy in the way).
  await page.route('**/triage_site_analyzer_bg.wasm', (r) => r.fulfill({ status: 404, body: 'not here' }));
  const log = fs.readFileSync(path.join(root, 'tests/data/incidents/ttft_queueing.log'), 'utf8');
  await page.fill('[data-testid=paste-input]', log);
  await page.click('[data-testid=analyze-button]');
  const error = await page.waitForSelector('section.input p.error', { timeout: 15000 });
  assert.match(await error.textContent(), /could not load/);
  assert.equal(await page.$('[data-testid=analyze-progress]'), null, 'still shows progress');
  // Fixed: the next click starts a new worker, which loads and answers.
  await page.unroute('**/triage_site_analyzer_bg.wasm');
  await page.click('[data-testid=analyze-button]');
  assert.match(await page.textContent('[data-testid=verdict]'), /TTFT_HIGH/);
  assert.equal(await page.$('section.input p.error'), null);
  onlyOrigins(requests, [origin]);
  await context.close();
});

test('SGLang batch lines become running/queue, token usage and throughput charts', async () => {
  const { page, context, requests } = await open();
  const log = fs.readFileSync(path.join(root, 'tests/data/sglang/server.log'), 'utf8');
  await page.fill('[data-testid=paste-input]', log);
  await page.click('[data-testid=analyze-button]');
  await page.waitForSelector('[data-testid=verdict]');
  for (const id of ['chart-sglang-queue', 'chart-sglang-kv', 'chart-throughput']) {
    const inked = await page.$eval(`[data-testid=${id}]`, (c) => c.getContext('2d').getImageData(0, 0, c.width, c.height).data.some((x, i) => i % 4 === 3 && x > 0));
    assert.ok(inked, `${id} is blank`);
  }
  assert.equal(await page.$('[data-testid=chart-vllm-queue]'), null);
  await page.screenshot({ path: path.join(shots, 'triage-sglang.png'), fullPage: true });
  onlyOrigins(requests, [origin]);
  await context.close();
});

test('a 10 MB paste is analysed off the page thread in under 2 s', async () => {
  const { page, context } = await open();
  const line = (i) => `{"request_id":"r${i}","enqueue_time":${1764460800 + i * 0.01},"first_token_time":${1764460800.3 + i * 0.01},"last_token_time":${1764460802 + i * 0.01},"finish_time":${1764460802.01 + i * 0.01},"prompt_tokens":${200 + (i % 900)},"output_tokens":80,"status":200}\n`;
  let text = '';
  for (let i = 0; text.length < 10 * 1024 * 1024; i++) text += line(i);
  // A real paste: a ClipboardEvent carrying the text, as the browser fires on Ctrl+V.
  await page.evaluate((t) => {
    const data = new DataTransfer();
    data.setData('text/plain', t);
    document.querySelector('[data-testid=paste-input]').dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
  }, text);
  await page.waitForSelector('.files li');
  const started = Date.now();
  await page.click('[data-testid=analyze-button]');
  await page.waitForSelector('[data-testid=verdict]', { timeout: 20000 });
  const took = Date.now() - started;
  figures.paste_10mb_ms = took;
  figures.paste_10mb_bytes = text.length;
  assert.match(await page.textContent('[data-testid=verdict]'), /HEALTHY|CONFIG|TTFT_HIGH/);
  assert.ok(took <= 2000, `10 MB took ${took} ms`);
  await context.close();
});

/** Analyse what `provide(page)` puts on the page; the report section's HTML once it is shown. */
async function reportHtml(provide) {
  const { page, context, errors } = await open();
  await provide(page);
  await page.click('[data-testid=analyze-button]');
  await page.waitForSelector('[data-testid=verdict]', { timeout: 20000 });
  const html = await page.$eval('.report', (e) => e.outerHTML);
  assert.deepEqual(errors, []);
  return { html, page, context };
}

test('a chosen file streamed into the worker gives the report its text gives when pasted', async () => {
  const BOM = Buffer.from([0xef, 0xbb, 0xbf]);
  const cases = [
    ['a vLLM log', fs.readFileSync(path.join(root, 'tests/data/incidents/ttft_queueing.log'))],
    // A BOM (File.text() dropped it), broken UTF-8 and a CJK character in an evidence line.
    ['broken UTF-8', Buffer.concat([BOM, fs.readFileSync(path.join(root, 'tests/data/oom/h200_200gib.txt')), Buffer.from('\nRuntimeError: CUDA error: out of memory '), Buffer.from([0xff, 0xfe, 0x20, 0xe4, 0xb8, 0xad, 0xe6]), Buffer.from('\nnext\n')])],
  ];
  for (const [what, bytes] of cases) {
    // What the page analysed before: the file read as text (replacement characters, no BOM).
    const text = new TextDecoder().decode(bytes);
    const pasted = await reportHtml((page) => page.fill('[data-testid=paste-input]', text));
    await pasted.context.close();
    const streamed = await reportHtml(async (page) => {
      await page.setInputFiles('[data-testid=file-input]', { name: 'paste', mimeType: 'text/plain', buffer: bytes });
      await page.waitForSelector('.files li');
    });
    assert.ok(pasted.html.includes('data-testid="finding"'), `${what}: no finding`);
    assert.equal(streamed.html, pasted.html, `${what}: the streamed report differs`);
    if (what === 'broken UTF-8') assert.ok(streamed.html.includes('\uFFFD'), 'the broken line is not shown');
    // The language switch analyses the same file again (in the worker) in Chinese.
    await streamed.page.click('[data-testid=lang-toggle]');
    await streamed.page.waitForFunction(() => /[\u4e00-\u9fff]/.test(document.querySelector('[data-testid=finding] p')?.textContent ?? ''));
    await streamed.context.close();
  }
});

test('a GPU recording added as a file: the CLI\'s findings, and each GPU\'s clock and power over time with the straggler', async () => {
  const file = path.join(root, 'tests/data/nvml/h200x8_one_slow.jsonl');
  const cli = JSON.parse(execFileSync(triageBin, ['analyze', '--format', 'json', file], { maxBuffer: 64 << 20 }));
  assert.equal(cli.verdict, 'TBT_TAIL');
  const { page, context, requests } = await open();
  await page.setInputFiles('[data-testid=file-input]', { name: 'h200x8_one_slow.jsonl', mimeType: 'application/x-ndjson', buffer: fs.readFileSync(file) });
  await page.waitForSelector('.files li');
  await page.click('[data-testid=analyze-button]');
  await page.waitForSelector('[data-testid=verdict]', { timeout: 20000 });
  assert.match(await page.textContent('[data-testid=verdict]'), /TBT_TAIL/);
  const rules = await page.$$eval('[data-testid=finding]', (els) => els.map((e) => e.getAttribute('data-rule')));
  assert.deepEqual(rules, cli.findings.map((f) => f.rule));
  assert.match(await page.textContent('[data-testid=finding-subject]'), /gpu="5"/);
  for (const id of ['chart-gpu-sm-clock', 'chart-gpu-power']) {
    const inked = await page.$eval(`[data-testid=${id}]`, (c) => c.getContext('2d').getImageData(0, 0, c.width, c.height).data.some((x, i) => i % 4 === 3 && x > 0));
    assert.ok(inked, `${id} is blank`);
  }
  // The straggler's line is drawn in red (#d9534f) on the clock chart.
  const red = await page.$eval('[data-testid=chart-gpu-sm-clock]', (c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    for (let i = 0; i < d.length; i += 4) if (d[i] === 0xd9 && d[i + 1] === 0x53 && d[i + 2] === 0x4f) return true;
    return false;
  });
  assert.ok(red, 'no red straggler line');
  await page.screenshot({ path: path.join(shots, 'triage-gpu-recording.png'), fullPage: true });
  onlyOrigins(requests, [origin]);
  await context.close();
});

test('an nvidia-smi --query-gpu loop pasted: read as a recording, the CLI\'s findings and the charts with the straggler', async () => {
  const file = path.join(root, 'tests/data/smi/query_loop_8gpu_one_slow.csv');
  const cli = JSON.parse(execFileSync(triageBin, ['analyze', '--format', 'json', file], { maxBuffer: 64 << 20 }));
  assert.equal(cli.verdict, 'TBT_TAIL');
  const { page, context, requests } = await open();
  await page.fill('[data-testid=paste-input]', fs.readFileSync(file, 'utf8'));
  await page.click('[data-testid=analyze-button]');
  await page.waitForSelector('[data-testid=verdict]', { timeout: 20000 });
  assert.match(await page.textContent('[data-testid=verdict]'), /TBT_TAIL/);
  const rules = await page.$$eval('[data-testid=finding]', (els) => els.map((e) => e.getAttribute('data-rule')));
  assert.deepEqual(rules, cli.findings.map((f) => f.rule));
  assert.match(await page.textContent('[data-testid=finding-subject]'), /gpu="5"/);
  const red = await page.$eval('[data-testid=chart-gpu-sm-clock]', (c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    for (let i = 0; i < d.length; i += 4) if (d[i] === 0xd9 && d[i + 1] === 0x53 && d[i + 2] === 0x4f) return true;
    return false;
  });
  assert.ok(red, 'no red straggler line');
  onlyOrigins(requests, [origin]);
  await context.close();
});

test('a 30 MiB file shows progress, can be cancelled, and is analysed when asked again', async () => {
  const unit = fs.readFileSync(path.join(root, 'tests/data/incidents/ttft_queueing.log'));
  const big = path.join(fs.mkdtempSync(path.join(fs.realpathSync(process.env.TMPDIR ?? '/tmp'), 'site-e2e-')), 'vllm.log');
  fs.writeFileSync(big, Buffer.concat(Array(Math.ceil((30 << 20) / unit.length)).fill(unit)));
  const { page, context, requests, errors } = await open();
  await page.setInputFiles('[data-testid=file-input]', big);
  await page.waitForSelector('.files li');
  // Click, then Cancel as soon as it shows (in the page, so before the analysis can end).
  await page.evaluate(() => new Promise((resolve) => {
    const obs = new MutationObserver(() => {
      const cancel = document.querySelector('[data-testid=analyze-cancel]');
      if (cancel) { obs.disconnect(); cancel.click(); resolve(); }
    });
    obs.observe(document.body, { childList: true, subtree: true });
    document.querySelector('[data-testid=analyze-button]').click();
  }));
  await page.waitForSelector('[data-testid=analyze-cancelled]');
  await page.waitForSelector('[data-testid=analyze-progress]', { state: 'detached' });
  assert.equal(await page.$('[data-testid=verdict]'), null, 'a cancelled run showed a report');
  // Asked again: progress moves while the worker reads, the page keeps answering, and the report comes.
  const seen = await page.evaluate(() => new Promise((resolve) => {
    const values = [];
    let frames = 0;
    const tick = () => {
      frames++;
      const p = document.querySelector('[data-testid=analyze-progress]');
      if (p) values.push(Number(p.value));
      if (document.querySelector('[data-testid=verdict]')) resolve({ values, frames });
      else requestAnimationFrame(tick);
    };
    document.querySelector('[data-testid=analyze-button]').click();
    requestAnimationFrame(tick);
  }));
  assert.ok(seen.values.some((v) => v > 0 && v < 1), `no progress shown between 0 and 1: ${JSON.stringify(seen.values)}`);
  assert.ok(seen.frames > 2, 'the page did not draw while the worker ran');
  assert.equal(await page.$('[data-testid=analyze-cancelled]'), null);
  assert.match(await page.textContent('[data-testid=verdict]'), /TTFT_HIGH/);
  assert.match(await page.textContent('.files li'), new RegExp(`${fs.statSync(big).size} B`));
  onlyOrigins(requests, [origin]);
  assert.deepEqual(errors, []);
  fs.rmSync(path.dirname(big), { recursive: true, force: true });
  await context.close();
});

test('the KV page reproduces the CLI', async () => {
  const cli = JSON.parse(execFileSync(triageBin, ['kv', '--model', 'llama-3.1-8b', '--gpu', 'h100', '--max-model-len', '32768', '--format', 'json']));
  const { page, context } = await open('#/kv');
  await page.waitForSelector('[data-testid=kv-bytes-per-token]');
  const num = async (id) => Number((await page.textContent(`[data-testid=${id}]`)).replace(/[^0-9.]/g, ''));
  assert.equal(await num('kv-bytes-per-token'), cli.bytes_per_token_per_rank);
  assert.equal(await num('kv-tokens'), cli.tokens);
  assert.equal(await num('kv-blocks'), cli.blocks);
  assert.equal(await num('kv-concurrency'), cli.max_concurrency);
  // With the KV memory given, the same code gives the same tokens as `--available-kv-gib`.
  const cli2 = JSON.parse(execFileSync(triageBin, ['kv', '--model', 'llama-3.1-8b', '--available-kv-gib', '54.62', '--max-model-len', '32768', '--format', 'json']));
  await page.fill('[data-testid=kv-available]', '54.62');
  await page.waitForFunction((t) => document.querySelector('[data-testid=kv-tokens]')?.textContent.replace(/,/g, '') === String(t), cli2.tokens);
  await page.screenshot({ path: path.join(shots, 'kv.png'), fullPage: true });
  await context.close();
});

const frontId = (page) => page.getAttribute('[data-testid=card-front]', 'data-card');
const waitText = (page, id, text) =>
  page.waitForFunction(([id, t]) => document.querySelector(`[data-testid=${id}]`)?.textContent === t, [id, String(text)]);

/** Click `testid` and return the text of the file it downloads. */
async function downloaded(page, testid) {
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click(`[data-testid=${testid}]`)]);
  return { name: dl.suggestedFilename(), text: fs.readFileSync(await dl.path(), 'utf8') };
}

test('flashcards: ten cards by keyboard with a typed number and one undo; reload keeps them; export → import restores them exactly', async () => {
  const { page, context } = await open('#/cards');
  await page.waitForSelector('[data-testid=card-front]');
  // The page has the CLI's whole deck, log-reading and numeric cards included.
  const deck = JSON.parse(execFileSync(triageBin, ['cards', '--format', 'json'])).cards;
  assert.ok(deck.some((c) => c.kind === 'log') && deck.some((c) => c.kind === 'numeric'));
  assert.equal(Number(await page.textContent('[data-testid=cards-total]')), deck.length);
  assert.equal(await page.textContent('[data-testid=cards-new]'), '20');
  const seen = [];
  let undone = false;
  let typed = 0;
  while (seen.length < 10) {
    const id = await frontId(page);
    assert.ok(!seen.includes(id), `${id} came back before it was due`);
    const numeric = (await page.getAttribute('[data-testid=card-front]', 'data-kind')) === 'numeric';
    if (numeric && !undone) {
      // The one undo, pressed while the numeric card's empty answer box has the focus: u still
      // undoes there, and the card it takes back is on screen again, unanswered.
      await page.waitForFunction(() => document.activeElement?.getAttribute('data-testid') === 'card-answer');
      await page.keyboard.press('u');
      const back = seen.pop();
      await page.waitForFunction((id) => document.querySelector('[data-testid=card-front]')?.getAttribute('data-card') === id, back);
      await waitText(page, 'cards-reviewed', seen.length);
      assert.equal(await page.$('[data-testid=card-back]'), null);
      undone = true;
      continue;
    }
    if (numeric) {
      // The answer box has the focus: type the number, Enter checks it and shows the answer.
      const card = deck.find((c) => c.id === id);
      await page.waitForFunction(() => document.activeElement?.getAttribute('data-testid') === 'card-answer');
      assert.equal(await page.inputValue('[data-testid=card-answer]'), '', 'no key meant for another card was typed here');
      await page.keyboard.type(card.answer.toLocaleString('en-US', { maximumFractionDigits: 6 }));
      await page.keyboard.press('Enter');
      await page.waitForSelector('[data-testid=card-verdict]');
      await page.waitForSelector('[data-testid=card-verdict][data-correct=true]');
      typed += 1;
    } else {
      await page.keyboard.press(' ');
    }
    await page.waitForSelector('[data-testid=card-back]');
    await page.keyboard.press('3');
    seen.push(id);
    await waitText(page, 'cards-reviewed', seen.length);
  }
  assert.ok(undone && typed >= 1, 'kinds take turns, so a numeric card comes up in the first ten');
  // Good on a new card is a learning step (10 minutes): ten learning, ten new left today.
  await waitText(page, 'cards-learning', 10);
  assert.equal(await page.textContent('[data-testid=cards-new]'), '10');
  assert.equal(await page.textContent('[data-testid=cards-due]'), '0');
  await page.screenshot({ path: path.join(shots, 'cards.png') });

  await page.reload();
  await page.waitForSelector('[data-testid=card-front]');
  assert.equal(await page.textContent('[data-testid=cards-reviewed]'), '10');
  assert.equal(await page.textContent('[data-testid=cards-learning]'), '10');
  assert.ok(!seen.includes(await frontId(page)), 'reviewed cards are not due again yet');

  const exported = await downloaded(page, 'cards-export');
  assert.equal(exported.name, 'triage-cards-progress.json');
  const progress = JSON.parse(exported.text);
  assert.equal(progress.schema, 'triage.cards.progress/v2');
  assert.deepEqual(progress.log.map((e) => e.id), seen);
  assert.ok(progress.log.some((e) => e.typed_ok === true));
  await context.close();

  // Another browser profile: nothing reviewed; a broken file is refused and changes nothing;
  // the export imports, and exporting again gives the same file.
  const other = await open('#/cards');
  await other.page.waitForSelector('[data-testid=card-front]');
  assert.equal(await other.page.textContent('[data-testid=cards-reviewed]'), '0');
  // (The download's own file goes with the profile that downloaded it: keep a copy.)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cards-'));
  const broken = path.join(dir, 'broken.json');
  const saved = path.join(dir, 'triage-cards-progress.json');
  fs.writeFileSync(broken, exported.text.slice(0, exported.text.length / 2));
  fs.writeFileSync(saved, exported.text);
  await other.page.setInputFiles('[data-testid=cards-import]', broken);
  await other.page.waitForSelector('[data-testid=cards-import-error]');
  assert.equal(await other.page.textContent('[data-testid=cards-reviewed]'), '0');
  // Valid progress the browser's storage cannot take (filled to its quota here) is refused up
  // front: nothing kept, the old progress on screen, and a reload shows the same. It once said
  // "Progress imported", worked on the new progress, and a reload silently reverted it.
  await other.page.evaluate(() => {
    for (let i = 0, size = 1 << 20; size >= 64; i++) {
      try {
        localStorage.setItem(`filler${i}`, 'x'.repeat(size));
      } catch {
        size >>= 1;
      }
    }
  });
  await other.page.setInputFiles('[data-testid=cards-import]', saved);
  await other.page.waitForSelector('[data-testid=cards-import-unsaved]');
  assert.match(await other.page.textContent('[data-testid=cards-import-unsaved]'), /nothing was kept and your progress is unchanged/);
  assert.equal(await other.page.$('[data-testid=cards-import-ok]'), null);
  assert.equal(await other.page.textContent('[data-testid=cards-reviewed]'), '0');
  await other.page.evaluate(() => {
    for (const k of Object.keys(localStorage)) if (k.startsWith('filler')) localStorage.removeItem(k);
  });
  await other.page.reload();
  await other.page.waitForSelector('[data-testid=card-front]');
  assert.equal(await other.page.textContent('[data-testid=cards-reviewed]'), '0');
  // An answer on screen when the import comes is not left there: the queue starts over.
  await other.page.keyboard.press(' ');
  await other.page.waitForSelector('[data-testid=card-back]');
  await other.page.setInputFiles('[data-testid=cards-import]', saved);
  await other.page.waitForSelector('[data-testid=cards-import-ok]');
  await other.page.waitForSelector('[data-testid=card-back]', { state: 'detached' });
  await waitText(other.page, 'cards-reviewed', 10);
  assert.equal(await other.page.textContent('[data-testid=cards-learning]'), '10');
  assert.equal((await downloaded(other.page, 'cards-export')).text, exported.text);
  fs.rmSync(dir, { recursive: true, force: true });
  await other.context.close();
});

test('flashcards: saved progress that cannot be read is said, kept aside, and not overwritten', async () => {
  const { page, context } = await open('#/cards');
  await page.evaluate(() => localStorage.setItem('triage.cards.v2', '{"schema": "triage.cards.progress/v2", "cards": {'));
  await page.reload();
  await page.waitForSelector('[data-testid=cards-unreadable]');
  assert.match(await page.textContent('[data-testid=cards-unreadable]'), /triage\.cards\.v2\.unreadable/);
  await page.waitForSelector('[data-testid=card-front]');
  assert.equal(await page.textContent('[data-testid=cards-reviewed]'), '0');
  await page.keyboard.press(' ');
  await page.keyboard.press('3');
  await waitText(page, 'cards-reviewed', 1);
  const kept = await page.evaluate(() => localStorage.getItem('triage.cards.v2.unreadable'));
  assert.equal(kept, '{"schema": "triage.cards.progress/v2", "cards": {');
  await context.close();
});

test('flashcards: a topic filter, bury and suspend, the card browser, the progress charts and the Anki file', async () => {
  const { page, context } = await open('#/cards');
  await page.waitForSelector('[data-testid=card-front]');
  const deck = JSON.parse(execFileSync(triageBin, ['cards', '--format', 'json'])).cards;
  const byId = new Map(deck.map((c) => [c.id, c]));
  // Only OOM cards once the topic is picked.
  await page.selectOption('[data-testid=cards-tag]', 'oom');
  await page.waitForFunction((ids) => ids.includes(document.querySelector('[data-testid=card-front]')?.getAttribute('data-card')), deck.filter((c) => c.tags.includes('oom')).map((c) => c.id));
  const buried = await frontId(page);
  assert.ok(byId.get(buried).tags.includes('oom'));
  await page.keyboard.press('b');
  await page.waitForFunction((id) => document.querySelector('[data-testid=card-front]')?.getAttribute('data-card') !== id, buried);
  const suspended = await frontId(page);
  await page.click('[data-testid=card-suspend]');
  await page.waitForFunction((id) => document.querySelector('[data-testid=card-front]')?.getAttribute('data-card') !== id, suspended);
  for (let i = 0; i < 2; i++) {
    const id = await frontId(page);
    assert.ok(id !== buried && id !== suspended && byId.get(id).tags.includes('oom'));
    await page.click('[data-testid=card-show]');
    await page.click('[data-testid=rate-easy]');
    await waitText(page, 'cards-reviewed', i + 1);
  }

  // The browser: every topic again, searched; the suspended card says so and is restored.
  await page.selectOption('[data-testid=cards-tag]', '');
  await page.click('[data-testid=cards-tab-browse]');
  await page.fill('[data-testid=browse-search]', 'kv-leak');
  await page.waitForSelector('[data-testid=browse-row][data-card^="rule:kv-leak:"]');
  const rows = await page.$$eval('[data-testid=browse-row]', (rs) => rs.map((r) => r.getAttribute('data-card')));
  assert.ok(rows.filter((id) => id.startsWith('rule:kv-leak')).length >= 4, rows.join(' '));
  await page.fill('[data-testid=browse-search]', suspended);
  const row = `[data-testid=browse-row][data-card="${suspended}"]`;
  await page.waitForSelector(`${row}[data-suspended=true]`);
  await page.click(`${row} [data-testid=browse-suspend]`);
  await page.waitForSelector(`${row}[data-suspended=false]`);

  // Progress: two ratings today, both of new cards (not counted as recall); a forecast.
  await page.click('[data-testid=cards-tab-stats]');
  await waitText(page, 'stats-today', 2);
  assert.equal(await page.textContent('[data-testid=stats-retention]'), '–');
  for (const id of ['chart-retention', 'chart-reviews', 'chart-forecast']) {
    const inked = await page.$eval(`[data-testid=${id}]`, (c) => {
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 3; i < d.length; i += 4) n += d[i] > 0 ? 1 : 0;
      return n;
    });
    assert.ok(inked > 500, `${id} drew ${inked} pixels`);
  }
  await page.screenshot({ path: path.join(shots, 'cards-stats.png'), fullPage: true });

  // The Anki file from the page is the CLI's, byte for byte.
  const anki = await downloaded(page, 'cards-anki');
  assert.equal(anki.name, 'triage-cards-anki.tsv');
  assert.equal(anki.text, execFileSync(triageBin, ['cards', '--format', 'tsv'], { encoding: 'utf8' }));

  // A browser that stops keeping what is saved (storage full): the page says so, not nothing.
  await page.click('[data-testid=cards-tab-review]');
  await page.waitForSelector('[data-testid=card-front]');
  assert.equal(await page.$('[data-testid=cards-unsaved]'), null);
  // In Chinese the same card asks and answers in Chinese, and the buttons say when it comes back.
  const before = await frontId(page);
  await page.click('[data-testid=lang-toggle]');
  await page.waitForFunction(() => /[\u4e00-\u9fff]/.test(document.querySelector('[data-testid=card-front]')?.textContent ?? ''));
  assert.equal(await frontId(page), before);
  await page.keyboard.press(' ');
  assert.match(await page.textContent('[data-testid=card-back]'), /[\u4e00-\u9fff]/);
  assert.match(await page.textContent('[data-testid=rate-good]'), /良好.*(分钟|小时|天)/);
  await page.click('[data-testid=lang-toggle]');
  await page.evaluate(() => {
    Storage.prototype.setItem = () => {
      throw new DOMException('full', 'QuotaExceededError');
    };
  });
  await page.keyboard.press(' ');
  await page.keyboard.press('4');
  await page.waitForSelector('[data-testid=cards-unsaved]');
  await context.close();
});

const CJK = /[\u4e00-\u9fff]/;

test('switching to 中文 with an incident analysed shows Chinese findings: same rules and verdict', async () => {
  const { page, context, errors } = await open();
  const log = fs.readFileSync(path.join(root, 'tests/data/incidents/ttft_queueing.log'), 'utf8');
  await page.fill('[data-testid=paste-input]', log);
  await page.click('[data-testid=analyze-button]');
  await page.waitForSelector('[data-testid=finding]');
  const read = () => page.evaluate(() => ({
    verdict: document.querySelector('[data-testid=verdict] strong').textContent,
    rules: [...document.querySelectorAll('[data-testid=finding]')].map((e) => e.getAttribute('data-rule')),
    title: document.querySelector('[data-testid=finding] h3').textContent,
    summary: document.querySelector('[data-testid=finding] p').textContent,
    definition: document.querySelector('.figures td.def')?.textContent ?? '',
  }));
  const en = await read();
  assert.equal(en.verdict, 'TTFT_HIGH');
  assert.ok(!CJK.test(en.title) && !CJK.test(en.summary), en.summary);
  await page.click('[data-testid=lang-toggle]');
  await page.waitForFunction(() => /[\u4e00-\u9fff]/.test(document.querySelector('[data-testid=finding] p')?.textContent ?? ''));
  const zh = await read();
  assert.equal(zh.verdict, en.verdict);
  assert.deepEqual(zh.rules, en.rules);
  assert.match(zh.title, CJK);
  assert.match(zh.summary, CJK);
  assert.match(zh.definition, CJK);
  // The numbers are the same: every number in the English summary is in the Chinese one.
  for (const n of en.summary.match(/\d+(\.\d+)?/g)) assert.ok(zh.summary.includes(n), `${n} missing from ${zh.summary}`);
  await page.screenshot({ path: path.join(shots, 'triage-zh.png'), fullPage: true });

  // Large inputs go through the Web Worker: it analyses in the UI language too.
  const big = log.repeat(Math.ceil((1.2 * 1024 * 1024) / log.length));
  await page.fill('[data-testid=paste-input]', '');
  await page.evaluate((t) => {
    const data = new DataTransfer();
    data.setData('text/plain', t);
    document.querySelector('[data-testid=paste-input]').dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
  }, big);
  await page.waitForSelector('.files li');
  await page.click('[data-testid=analyze-button]');
  // The new report lists the large paste (`paste-1`) as its input.
  await page.waitForFunction(() => [...document.querySelectorAll('.inputs td')].some((td) => td.textContent === 'paste-1'), null, { timeout: 20000 });
  const worker = await read();
  assert.equal(worker.rules[0], 'queueing-exceeds-capacity');
  assert.match(worker.summary, CJK);

  // And back: English again, in place.
  await page.click('[data-testid=lang-toggle]');
  await page.waitForFunction(() => !/[\u4e00-\u9fff]/.test(document.querySelector('[data-testid=finding] p')?.textContent ?? '中'));
  assert.equal((await read()).rules[0], 'queueing-exceeds-capacity');
  assert.deepEqual(errors, []);
  await context.close();
});

test('the playbook lints a generated client config as you type', async () => {
  const { page, context } = await open('#/playbook');
  // The rule docs come from the analysis worker (its module loads when the playbook opens).
  await page.waitForSelector('[data-testid=playbook-branch]');
  assert.ok((await page.$$('[data-testid=playbook-branch]')).length >= 20);
  await page.fill('[data-testid=gen-timeout]', '10000');
  await page.waitForSelector('[data-testid=gen-finding][data-rule=timeout-too-short]');
  await page.fill('[data-testid=gen-base]', 'https://gateway.example.com/api?utm_source=blog');
  await page.waitForSelector('[data-testid=gen-finding][data-rule=base-url-wrong]');
  await context.close();
});

test('a drill simulates an incident in the page and the analyzer names it', async () => {
  const { page, context, requests } = await open('#/drill');
  await page.fill('[data-testid=drill-seed]', '3');
  await page.click('[data-testid=drill-start]');
  await page.waitForSelector('[data-testid=drill-symptom]');
  assert.ok((await page.$$('[data-testid=drill-file]')).length >= 3);
  const choices = await page.$$('[data-testid=drill-choice]');
  assert.ok(choices.length >= 11);
  await choices[0].click();
  const verdict = await page.waitForSelector('[data-testid=drill-verdict]');
  const answer = await verdict.getAttribute('data-answer');
  // The answer's rules are among what the analyzer finds in the drill's own files.
  const text = await verdict.textContent();
  const rules = text.split(' — ').pop().split(', ').map((r) => r.trim());
  const found = await page.$$eval('[data-testid=finding]', (els) => els.map((e) => e.getAttribute('data-rule')));
  assert.ok(rules.some((r) => found.includes(r)), `${answer}: expected one of ${rules}, found ${found}`);
  await page.click(`[data-testid=drill-choice][data-name="${answer}"]`);
  // The check is the worker's: its verdict replaces the last one when it comes.
  await page.waitForSelector(`[data-testid=drill-verdict][data-answer="${answer}"][data-correct=true]`);
  await page.screenshot({ path: path.join(shots, 'drill.png'), fullPage: true });
  onlyOrigins(requests, [origin]);
  await context.close();
});

test('a probe against the scripted SSE server: TTFT equals the server record ±2 ms', async () => {
  // Requests 0..n-1: a bare JS fetch timed from the fetch() call (what the browser's hand-over
  // to the socket adds, measured in the same run); n..2n-1: the site's probe, which measures
  // from when the browser began sending (Resource Timing; the scripted server sends
  // Timing-Allow-Origin). Both are compared with the server's record of when it wrote the
  // first token, counted from the request's first byte. The first request of each group pays
  // for the CORS preflight and the connection, so the checks use the warm ones.
  const n = 7;
  const { base, done } = await scriptedServer(2 * n, { ttftMs: 150, gapMs: 15, tokens: 12, lifetimeS: 90 });
  const { page, context, requests } = await open('#/probe');
  const raw = await page.evaluate(async ({ base, n }) => {
    const res = [];
    for (let i = 0; i < n; i++) {
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
    }
    return res;
  }, { base, n });
  await page.fill('[data-testid=probe-url]', base);
  await page.fill('[data-testid=probe-model]', 'scripted');
  await page.fill('[data-testid=probe-n]', String(n));
  await page.click('[data-testid=probe-start]');
  await page.waitForFunction(() => document.querySelector('[data-testid=probe-start]') && !document.querySelector('[data-testid=probe-start]').disabled, null, { timeout: 30000 });
  assert.equal((await page.$$('[data-testid=probe-failure]')).length, 0, await page.textContent('.failures'));
  assert.ok(Number(await page.textContent('[data-testid=probe-ttft-p50]')) > 150);
  const probed = await page.$$eval('[data-testid=probe-request]', (rows) => rows.map((r) => [r.dataset.responseId, Number(r.dataset.ttft)]));
  const traced = await page.$$eval('[data-testid=probe-request]', (rows) => rows.map((r) => [r.dataset.responseId, r.dataset.traceId]));
  const records = await done();
  assert.equal(records.length, 2 * n);
  // Each probe request carried a W3C traceparent of its own, and its row shows that trace id.
  const ids = new Set();
  for (const [id, trace] of traced) {
    const seen = records.find((r) => r.response_id === id).traceparent;
    assert.match(seen ?? '', /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/, `request ${id} sent ${seen}`);
    assert.equal(seen.slice(3, 35), trace, `request ${id}: row ${trace}, sent ${seen}`);
    ids.add(trace);
  }
  assert.equal(ids.size, n, 'a fresh trace id per request');
  assert.ok(records.filter((r) => !probed.some(([id]) => id === r.response_id)).every((r) => r.traceparent === null), 'the bare fetch() sent none');
  const errors = (pairs) => pairs.map(([id, t]) => t - records.find((r) => r.response_id === id).ttft_ms);
  const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor((s.length - 1) / 2)]; };
  const round = (x) => Math.round(x * 1000) / 1000;
  const probeErr = errors(probed);
  const rawErr = errors(raw);
  figures.probe_ttft_error_ms = probeErr.map(round);
  figures.browser_floor_ttft_error_ms = rawErr.map(round);
  figures.probe_ttft_error_median_ms = round(median(probeErr.slice(1)));
  figures.browser_floor_error_median_ms = round(median(rawErr.slice(1)));
  const warm = probeErr.slice(1);
  figures.probe_ttft_error_best_ms = round(Math.min(...warm));
  figures.browser_floor_error_best_ms = round(Math.min(...rawErr.slice(1)));
  // Every request measured from the wire, and none before the server wrote its token.
  assert.match(await page.textContent('[data-testid=probe-sent-note]'), new RegExp(`\\b${n} of ${n}\\b`));
  // Read and stamped in the probe worker (static/probe-worker.js), and the page says so.
  assert.ok(page.workers().some((w) => w.url().endsWith('/probe-worker.js')), 'the probe worker runs');
  assert.match(await page.textContent('[data-testid=probe-timing-note]'), /background worker/);
  assert.ok(warm.every((e) => e >= -0.5), `the probe saw a token before the server wrote it: ${warm}`);
  // Within ±2 ms of the server's record: the median warm request, and at least half of them
  // (a 2-core VM shared with builds can delay any one request's chunk in the renderer). A
  // machine that loaded delays a bare fetch() in the same page as much: the bound is 2 ms over
  // that floor when the floor itself is above 2 ms (it failed once while two other builds ran:
  // the probe's warm median 4.7 ms, its worst 23.8 ms).
  const floor = Math.max(0, median(rawErr.slice(1)));
  const bound = 2 + (floor > 2 ? floor : 0);
  const within = warm.filter((e) => e <= bound).length;
  assert.ok(median(warm) <= bound && within * 2 >= warm.length, `probe TTFT errors ${warm} ms, bare fetch() ${rawErr.slice(1)} ms`);
  await page.screenshot({ path: path.join(shots, 'probe.png'), fullPage: true });
  onlyOrigins(requests, [origin, base.replace(/\/v1$/, '')]);
  await context.close();
});

test('a probe failure is explained, and rewritten when the language switches', async () => {
  // A port nothing listens on: fetch rejects, which a page cannot tell from a CORS refusal.
  const closed = http.createServer();
  await new Promise((r) => closed.listen(0, '127.0.0.1', r));
  const port = closed.address().port;
  await new Promise((r) => closed.close(r));
  const { page, context } = await open('#/probe');
  await page.fill('[data-testid=probe-url]', `http://127.0.0.1:${port}/v1`);
  await page.fill('[data-testid=probe-n]', '1');
  await page.click('[data-testid=probe-start]');
  await page.waitForSelector('[data-testid=probe-failure]', { timeout: 20000 });
  const en = await page.textContent('[data-testid=probe-failure]');
  assert.equal(await page.getAttribute('[data-testid=probe-failure]', 'data-kind'), 'cors');
  assert.match(en, /allowed-origins/);
  assert.doesNotMatch(en, CJK);
  await page.click('[data-testid=lang-toggle]');
  const zh = await page.textContent('[data-testid=probe-failure]');
  assert.match(zh, CJK, zh);
  assert.match(zh, /allowed-origins/);
  await page.click('[data-testid=lang-toggle]');
  assert.equal(await page.textContent('[data-testid=probe-failure]'), en);
  await context.close();
});

test('a redirect is a failure, and nothing (no key) goes to where it points', async () => {
  const hits = [];
  const target = http.createServer((req, res) => { hits.push(req.url); res.writeHead(200); res.end('{}'); });
  await new Promise((r) => target.listen(0, '127.0.0.1', r));
  const elsewhere = `http://127.0.0.1:${target.address().port}/steal`;
  const cors = { 'access-control-allow-origin': '*', 'access-control-allow-headers': '*', 'access-control-allow-methods': 'POST, OPTIONS' };
  const redirector = http.createServer((req, res) => {
    if (req.method === 'OPTIONS') { res.writeHead(204, cors); res.end(); return; }
    res.writeHead(307, { ...cors, location: elsewhere });
    res.end();
  });
  await new Promise((r) => redirector.listen(0, '127.0.0.1', r));
  const { page, context } = await open('#/probe');
  await page.fill('[data-testid=probe-url]', `http://127.0.0.1:${redirector.address().port}/v1`);
  await page.fill('[data-testid=probe-key]', 'sk-browser-secret-123456789');
  await page.fill('[data-testid=probe-n]', '1');
  await page.click('[data-testid=probe-start]');
  await page.waitForSelector('[data-testid=probe-failure]', { timeout: 20000 });
  assert.equal(await page.getAttribute('[data-testid=probe-failure]', 'data-kind'), 'redirect');
  assert.doesNotMatch(await page.textContent('body'), /sk-browser-secret/);
  assert.deepEqual(hits, [], 'the redirect target received nothing');
  await context.close();
  redirector.close();
  target.close();
});

test('probe charts fill while the stream is still running', async () => {
  // One slow stream: 14 tokens 150 ms apart (about 2 s).
  const { base, done } = await scriptedServer(1, { ttftMs: 100, gapMs: 150, tokens: 14 });
  const { page, context } = await open('#/probe');
  await page.fill('[data-testid=probe-url]', base);
  await page.fill('[data-testid=probe-n]', '1');
  // Switched off here: the request goes out without a traceparent (checked on the record below).
  await page.uncheck('[data-testid=probe-traceparent]');
  await page.click('[data-testid=probe-start]');
  // Mid-stream: some tokens counted and gaps charted, the run not over.
  await page.waitForFunction(() => Number(document.querySelector('[data-testid=probe-itl-chart]')?.dataset.points) >= 3, null, { timeout: 10000 });
  assert.ok(await page.isDisabled('[data-testid=probe-start]'), 'the run is still going');
  assert.match(await page.textContent('[data-testid=probe-live]'), /^1 in flight · ([3-9]|1[0-3]) tokens received/);
  assert.equal(await page.getAttribute('[data-testid=probe-ttft-chart]', 'data-points'), '1');
  await page.screenshot({ path: path.join(shots, 'probe-live.png') });
  await page.waitForFunction(() => !document.querySelector('[data-testid=probe-start]').disabled, null, { timeout: 20000 });
  assert.equal(await page.$('[data-testid=probe-live]'), null);
  // The finished record replaces the live view: each gap counted once.
  assert.equal(await page.getAttribute('[data-testid=probe-itl-chart]', 'data-points'), '13');
  assert.equal(await page.getAttribute('[data-testid=probe-ttft-chart]', 'data-points'), '1');
  assert.equal(await page.getAttribute('[data-testid=probe-request]', 'data-trace-id'), '');
  const [record] = await done();
  assert.equal(record.traceparent, null, 'no traceparent when switched off');
  await context.close();
});

test('a concurrent probe: requests called together keep their fetch() call as "sent"', async () => {
  // Four at a time: requests of one wave are called within a millisecond and end together, the
  // case where one request could be matched with another's Resource Timing entry (all have
  // the same URL). A wrong match moves "sent" to another request's start, which can put the
  // TTFT below the server's own; the page takes no entry for such requests.
  const n = 8;
  const { base, done } = await scriptedServer(n, { ttftMs: 80, gapMs: 10, tokens: 5 });
  const { page, context } = await open('#/probe');
  await page.fill('[data-testid=probe-url]', base);
  await page.fill('[data-testid=probe-n]', String(n));
  await page.fill('[data-testid=probe-concurrency]', '4');
  await page.click('[data-testid=probe-start]');
  await page.waitForFunction(() => !document.querySelector('[data-testid=probe-start]').disabled, null, { timeout: 30000 });
  assert.equal((await page.$$('[data-testid=probe-failure]')).length, 0);
  const probed = await page.$$eval('[data-testid=probe-request]', (rows) => rows.map((r) => [r.dataset.responseId, Number(r.dataset.ttft)]));
  const records = await done();
  const errs = probed.map(([id, t]) => t - records.find((r) => r.response_id === id).ttft_ms);
  figures.concurrent_probe_ttft_error_ms = errs.map((x) => Math.round(x * 1000) / 1000);
  // Never before the server wrote the token. (Above it by whatever the browser and the server
  // add before the server's record starts: preflights, connection set-up, the accept queue —
  // tens of ms with four streams at once on a 2-core VM, for requests timed from fetch().)
  // The bound is -1.5 ms, not 0: Resource Timing's requestStart is stamped in the browser's
  // network process and carried over to the page's clock, and that carrying-over put one
  // wire-timed request 0.78 ms early in a CI run with nothing else on the machine. A wrong match
  // (another request's start) is what this guards against, and that is tens of ms here.
  assert.ok(errs.every((e) => e >= -1.5), `TTFT errors ${errs}`);
  const note = await page.textContent('[data-testid=probe-sent-note]');
  figures.concurrent_probe_wire_timed = Number(note.match(/for (\d+) of 8/)[1]);
  await context.close();
});

// ---- Diagnose straight from Prometheus ----

const PROM_WINDOW_S = 7200;
const promProcs = [];
after(() => { for (const p of promProcs) p.kill('SIGKILL'); });

/** A real Prometheus on 127.0.0.1 over `data` (backfilled blocks, or none), allowing `cors` as
 *  its CORS origin regex; killed by `stop()`, at the end of the tests, or after `lifetimeS`. */
async function startPrometheus(dir, data, cors, lifetimeS = 300) {
  const config = path.join(dir, 'prometheus.yml');
  fs.writeFileSync(config, 'global:\n  scrape_interval: 1h\n  evaluation_interval: 1h\n');
  const probe = http.createServer();
  await new Promise((r) => probe.listen(0, '127.0.0.1', r));
  const port = probe.address().port;
  await new Promise((r) => probe.close(r));
  const proc = spawn(process.env.PROMETHEUS ?? 'prometheus', [
    `--config.file=${config}`, `--storage.tsdb.path=${data}`,
    // Backfilled data is hours old: a long retention keeps it from being deleted at start.
    '--storage.tsdb.retention.time=100y',
    `--web.listen-address=127.0.0.1:${port}`, `--web.cors.origin=${cors}`, '--log.level=warn',
  ], { stdio: 'ignore' });
  promProcs.push(proc);
  const killer = setTimeout(() => proc.kill('SIGKILL'), lifetimeS * 1000);
  killer.unref();
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60000;
  for (;;) {
    assert.ok(proc.exitCode === null, `prometheus exited (${proc.exitCode})`);
    assert.ok(Date.now() < deadline, 'prometheus not ready within 60 s');
    const ready = await fetch(`${url}/-/ready`, { signal: AbortSignal.timeout(2000) }).then((r) => r.ok, () => false);
    if (ready) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return { url, stop: () => { clearTimeout(killer); proc.kill('SIGKILL'); } };
}

/** `triage sim SCENARIO --openmetrics`, backfilled by promtool: the fleet's answer key and the
 *  folder of blocks. The window is a whole two-hour block that ended at least two hours ago. */
function backfill(dir, scenario) {
  const start = Math.floor((Date.now() / 1000 - 2 * PROM_WINDOW_S) / PROM_WINDOW_S) * PROM_WINDOW_S;
  const file = path.join(dir, `${scenario}.om`);
  const out = execFileSync(triageBin, ['sim', '--scenario', scenario, '--replicas', '3', '--format', 'json', '--start', String(start), '--openmetrics', file], { timeout: 120000, maxBuffer: 64 << 20 });
  const data = path.join(dir, 'data');
  execFileSync(process.env.PROMTOOL ?? 'promtool', ['tsdb', 'create-blocks-from', 'openmetrics', '--quiet', file, data], { timeout: 120000, stdio: 'ignore' });
  return { fleet: JSON.parse(out).fleet, start, data };
}

test('a Grafana link diagnoses a faulty fleet straight from a CORS-enabled Prometheus', { timeout: 300000 }, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'triage-e2e-prom-'));
  let prom;
  try {
    const { fleet, start, data } = backfill(dir, 'kv-leak');
    prom = await startPrometheus(dir, data, '.*');
    // As Grafana writes ${__from} and ${__to}: unix milliseconds.
    const link = `#/triage?prometheus=${encodeURIComponent(prom.url)}&from=${start * 1000}&to=${(start + PROM_WINDOW_S) * 1000}`;
    const { page, context, requests, errors } = await open(link);
    const sent = [];
    page.on('request', (r) => { if (r.url().startsWith(prom.url)) sent.push({ url: r.url(), method: r.method(), headers: r.headers() }); });
    assert.equal(await page.inputValue('[data-testid=prom-url]'), prom.url);
    assert.equal(await page.inputValue('[data-testid=prom-from]'), String(start * 1000));
    // A link waits for one click: nothing was asked yet.
    await page.waitForSelector('[data-testid=prom-from-link]');
    assert.deepEqual(sent, []);
    // A token: sent to this Prometheus only (a preflight, then the header), never stored.
    await page.fill('[data-testid=prom-token]', 'prom-token-secret-42');
    await page.click('[data-testid=prom-run]');
    await page.waitForSelector('[data-testid=prom-report] [data-testid=verdict], [data-testid=prom-error]', { timeout: 90000 });
    const failed = await page.$('[data-testid=prom-error]');
    assert.equal(failed, null, await failed?.textContent());
    assert.match(await page.textContent('[data-testid=prom-report] [data-testid=verdict]'), new RegExp(fleet.class));
    const findings = await page.$$eval('[data-testid=prom-report] [data-testid=finding]', (els) => els.map((e) => ({ rule: e.getAttribute('data-rule'), text: e.textContent })));
    assert.ok(findings.length > 0, 'no finding');
    assert.ok(fleet.rules.includes(findings[0].rule), `top finding ${findings[0].rule}, want one of ${fleet.rules}`);
    const faulty = fleet.replicas[fleet.faulty];
    assert.ok([faulty.pod, faulty.instance].some((n) => n && findings[0].text.includes(n)), `the top finding does not name ${faulty.pod} / ${faulty.instance}: ${findings[0].text}`);
    assert.match(await page.textContent('[data-testid=prom-report] [data-testid=finding-subject]'), /instance=|pod=/);
    // The fleet view lists the three replicas and links each query to Prometheus's graph UI.
    assert.equal((await page.$$('[data-testid=fleet-view] [data-testid=fleet-replica]')).length, 3);
    const links = await page.$$eval('[data-testid=fleet-view] a', (as) => as.map((a) => a.href));
    assert.ok(links.length === 4 && links.every((h) => h.startsWith(`${prom.url}/graph?`)), links.join(' '));
    // Both questions went to Prometheus with the token; nothing went anywhere else.
    const posts = sent.filter((r) => r.method === 'POST').map((r) => new URL(r.url).pathname);
    // The series, their own samples over the recent slice, the families' window, the engines'
    // liveness (up, process_start_time_seconds).
    assert.deepEqual(posts, ['/api/v1/series', '/api/v1/query', '/api/v1/query_range', '/api/v1/query_range']);
    assert.ok(sent.filter((r) => r.method === 'POST').every((r) => r.headers.authorization === 'Bearer prom-token-secret-42'));
    onlyOrigins(requests, [origin, prom.url]);
    assert.doesNotMatch(await page.evaluate(() => JSON.stringify(localStorage)), /prom-token-secret/);
    assert.doesNotMatch(await page.textContent('body'), /prom-token-secret/);
    // Into the ticket: the JSON the page saves is the report shown, and no token in it.
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid=prom-report] [data-testid=download-json]')]);
    const saved = fs.readFileSync(await download.path(), 'utf8');
    assert.equal(JSON.parse(saved).schema, 'triage.report/v1');
    assert.match(JSON.parse(saved).verdict, new RegExp(fleet.class));
    assert.doesNotMatch(saved, /prom-token-secret/);
    // The report follows the language: the same answer read again, in Chinese.
    await page.click('[data-testid=lang-toggle]');
    await page.waitForFunction(() => /[\u4e00-\u9fff]/.test(document.querySelector('[data-testid=prom-report] [data-testid=finding] p:not([data-testid])')?.textContent ?? ''));
    assert.deepEqual(errors, []);
    await page.screenshot({ path: path.join(shots, 'prometheus.png'), fullPage: true });
    // Ticked, the token is kept for this URL only: offered again for it, not for another.
    await page.check('[data-testid=prom-remember]');
    await page.click('[data-testid=prom-run]');
    await page.waitForFunction(() => (localStorage.getItem('triage.prom.token') ?? '').includes('prom-token-secret-42'));
    const again = await context.newPage();
    await again.goto(`${origin}/${link}`);
    await again.waitForSelector('[data-testid=prom-url]');
    assert.equal(await again.inputValue('[data-testid=prom-token]'), 'prom-token-secret-42');
    await again.goto(`${origin}/#/triage?prometheus=${encodeURIComponent('http://127.0.0.1:9')}`);
    await again.reload();
    await again.waitForSelector('[data-testid=prom-url]');
    assert.equal(await again.inputValue('[data-testid=prom-token]'), '');
    await context.close();
  } finally {
    prom?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a Prometheus that does not answer CORS, or no server at all: the error says which two it may be', { timeout: 120000 }, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'triage-e2e-prom-'));
  let prom;
  try {
    prom = await startPrometheus(dir, path.join(dir, 'data'), 'https://elsewhere\\.invalid');
    const closed = http.createServer();
    await new Promise((r) => closed.listen(0, '127.0.0.1', r));
    const nobody = `http://127.0.0.1:${closed.address().port}`;
    await new Promise((r) => closed.close(r));
    for (const url of [prom.url, nobody]) {
      const { page, context, requests } = await open(`#/triage?prometheus=${encodeURIComponent(url)}&from=2026-12-01T00:00:00Z&to=2026-12-01T01:00:00Z`);
      await page.click('[data-testid=prom-run]');
      await page.waitForSelector('[data-testid=prom-error]', { timeout: 60000 });
      assert.equal(await page.getAttribute('[data-testid=prom-error]', 'data-kind'), 'cors');
      assert.match(await page.textContent('[data-testid=prom-error]'), /CORS or unreachable/);
      assert.match(await page.textContent('[data-testid=prom-error]'), /--web\.cors\.origin/);
      onlyOrigins(requests, [origin, url]);
      await context.close();
    }
    // Not Prometheus (the site's own server answers 404 HTML), a bad selector, a bad window.
    const { page, context } = await open(`#/triage?prometheus=${encodeURIComponent(origin)}`);
    await page.click('[data-testid=prom-run]');
    await page.waitForSelector('[data-testid=prom-error]', { timeout: 30000 });
    assert.equal(await page.getAttribute('[data-testid=prom-error]', 'data-kind'), 'not-prometheus');
    await page.fill('[data-testid=prom-selector]', '{job=');
    await page.click('[data-testid=prom-run]');
    await page.waitForSelector('[data-testid=prom-error][data-kind=selector]', { timeout: 30000 });
    await page.fill('[data-testid=prom-selector]', '');
    await page.fill('[data-testid=prom-from]', 'yesterday');
    await page.click('[data-testid=prom-run]');
    await page.waitForSelector('[data-testid=prom-error][data-kind=window]', { timeout: 30000 });
    await context.close();
  } finally {
    prom?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

// ---- Hostile Prometheus answers: the tab's memory and the reading deadline ----

/** A hostile "Prometheus" on 127.0.0.1 that answers every request with `answer(req, res, path)`
 *  (CORS allowed, so the page may read what it sends). It stops by itself — listener and open
 *  connections — after `lifetimeS`, or when `stop()` is called. */
async function hostileProm(answer, lifetimeS) {
  const server = http.createServer((req, res) => {
    res.setHeader('access-control-allow-origin', '*');
    if (req.method === 'OPTIONS') {
      res.writeHead(204, { 'access-control-allow-headers': 'authorization, content-type, accept', 'access-control-allow-methods': 'POST' });
      res.end();
      return;
    }
    req.resume();
    answer(req, res, new URL(req.url, 'http://x').pathname);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const stop = () => { clearTimeout(timer); server.close(); server.closeAllConnections(); };
  const timer = setTimeout(stop, lifetimeS * 1000);
  timer.unref();
  return { url: `http://127.0.0.1:${server.address().port}`, stop };
}

/** Every renderer process of the browser (a tab and its workers share one) with its resident
 *  memory now and at its peak (`VmRSS`, `VmHWM`), in MiB, by pid. Chromium lists its processes
 *  (`SystemInfo.getProcessInfo`); the kernel keeps each one's high-water mark, so a peak between
 *  two looks is not missed. `Performance.getMetrics` would see the page's JS heap only, not the
 *  worker's, nor the wasm memories and array buffers where an answer's bytes live. */
async function rendererMemory(cdp) {
  const { processInfo } = await cdp.send('SystemInfo.getProcessInfo');
  const mem = new Map();
  for (const p of processInfo.filter((p) => p.type === 'renderer')) {
    let status;
    try { status = fs.readFileSync(`/proc/${p.id}/status`, 'utf8'); } catch { continue; }
    const kib = (k) => Number(status.match(new RegExp(`${k}:\\s+(\\d+) kB`))[1]);
    mem.set(p.id, { rss: kib('VmRSS') / 1024, peak: kib('VmHWM') / 1024 });
  }
  return mem;
}

/** A matrix of one engine series over the last hour, every 15 s: the slice and the range a
 *  Prometheus that scrapes one vLLM would answer. */
function oneEngineMatrix() {
  const now = Math.floor(Date.now() / 1000);
  const values = [];
  for (let t = now - 3600; t <= now; t += 15) values.push([t, '1']);
  return JSON.stringify({ status: 'success', data: { resultType: 'matrix', result: [{ metric: { __name__: 'vllm:num_requests_running', instance: 'a:8000', job: 'vllm' }, values }] } });
}

// Before the streaming reader every label set was parsed into a map before any bound applied:
// this answer took a tab from 1 to 3.6 GB when the issue was filed, and the site built from the
// commit before the reader, measured by this test (2026-12-07, Chromium 156 headless, 2 cores),
// from 147 to 2,672 MiB. Now the tab's renderer goes from ~150 to ~380 MiB: the body is held a
// few times over (the stream's chunks, the whole answer handed to the worker, the worker's copy
// in its module) but never parsed into values. What one answer may add is the issue's 512 MB;
// the tab's peak, the page and the analyzer's module included, must stay under 768 MiB.
const TAB_GROWTH_BOUND_MIB = 512;
const TAB_PEAK_BOUND_MIB = 768;

test('a 63 MiB /api/v1/series answer of 7.3 M tiny label sets: the tab stays under its memory bound and the report says what was cut', { timeout: 180000 }, async () => {
  // As many `{"a":""}` as fit under the page's 64 MiB body bound: each a label set without an
  // instance, so all of them are one instance, too many to read.
  const SETS = 7_300_000;
  const head = '{"status":"success","data":[';
  const set = '{"a":""},';
  let series = Buffer.alloc(head.length + SETS * set.length + 1);
  series.write(head);
  series.fill(set, head.length, head.length + SETS * set.length);
  series.write(']}', series.length - 2);
  assert.ok(series.length > 62 << 20 && series.length < 64 << 20, `${series.length} B`);
  const paths = [];
  const matrix = oneEngineMatrix();
  const prom = await hostileProm((req, res, p) => {
    paths.push(p);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(p === '/api/v1/series' ? series : matrix);
  }, 150);
  const cdp = await browser.newBrowserCDPSession();
  try {
    const { page, context, requests, errors } = await open(`#/triage?prometheus=${encodeURIComponent(prom.url)}`);
    const before = await rendererMemory(cdp);
    const started = Date.now();
    await page.click('[data-testid=prom-run]');
    await page.waitForSelector('[data-testid=prom-report], [data-testid=prom-error]', { timeout: 90000 });
    const took = Date.now() - started;
    const after = await rendererMemory(cdp);
    // The tab is the renderer that grew: it held the body at least once (63 MiB).
    const grown = [...after].map(([pid, m]) => ({ pid, peak: m.peak, grew: m.peak - (before.get(pid)?.rss ?? 0) }));
    const tab = grown.reduce((a, b) => (b.grew > a.grew ? b : a));
    console.log(`series answer: tab ${tab.pid} ${Math.round(before.get(tab.pid)?.rss ?? 0)} MiB before, ${Math.round(tab.peak)} MiB peak; every renderer's peak ${grown.map((g) => Math.round(g.peak)).join(', ')} MiB; ${took} ms`);
    assert.ok(tab.grew >= 60, `no renderer grew by the body's size: ${JSON.stringify(grown)}`);
    assert.ok(tab.grew < TAB_GROWTH_BOUND_MIB, `the tab grew by ${Math.round(tab.grew)} MiB (bound ${TAB_GROWTH_BOUND_MIB} MiB)`);
    for (const g of grown) assert.ok(g.peak < TAB_PEAK_BOUND_MIB, `renderer ${g.pid} peaked at ${Math.round(g.peak)} MiB (bound ${TAB_PEAK_BOUND_MIB} MiB)`);
    figures.prom_series_63mib_tab_peak_mib = Math.round(tab.peak);
    figures.prom_series_63mib_tab_before_mib = Math.round(before.get(tab.pid)?.rss ?? 0);
    figures.prom_series_63mib_ms = took;
    const failed = await page.$('[data-testid=prom-error]');
    assert.equal(failed, null, await failed?.textContent());
    // The series bound is said, with the count of what the server offered.
    const cut = await page.textContent('[data-testid=fleet-view]');
    assert.match(cut, new RegExp(`${SETS} series match; the first instance alone has more than --max-series \\d+`));
    // The series, the slice, the range, then the liveness of the engine the range answer holds
    // (no instance was known to be read before it).
    assert.deepEqual(paths, ['/api/v1/series', '/api/v1/query', '/api/v1/query_range', '/api/v1/query_range']);
    onlyOrigins(requests, [origin, prom.url]);
    assert.deepEqual(errors, []);
    await context.close();
  } finally {
    series = null;
    await cdp.detach();
    prom.stop();
  }
});

test('a Prometheus that trickles its answer forever: the deadline ends it on time and says the server\'s time ran out', { timeout: 60000 }, async () => {
  // The page's deadline is 30 s per query; a test may only shorten it (window.__triageTestDeadlineMs).
  const DEADLINE_MS = 2000;
  const asked = [];
  const prom = await hostileProm((req, res, p) => {
    const r = { path: p, at: Date.now(), closed: null, bytes: 0 };
    asked.push(r);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"status":"success","data":[');
    // A label set every 50 ms, never the end.
    const drip = setInterval(() => { res.write('{"a":""},'); r.bytes += 9; }, 50);
    res.on('close', () => { clearInterval(drip); r.closed = Date.now(); });
  }, 40);
  try {
    const { page, context, requests, errors } = await open(`#/triage?prometheus=${encodeURIComponent(prom.url)}`);
    await page.evaluate((ms) => { window.__triageTestDeadlineMs = ms; }, DEADLINE_MS);
    await page.click('[data-testid=prom-run]');
    await page.waitForSelector('[data-testid=prom-error]', { timeout: 20000 });
    const shown = Date.now();
    assert.equal(asked.length, 1, JSON.stringify(asked));
    const [q] = asked;
    assert.equal(q.path, '/api/v1/series');
    assert.ok(q.bytes > 0, 'nothing trickled');
    assert.equal(await page.getAttribute('[data-testid=prom-error]', 'data-kind'), 'timeout');
    const said = await page.textContent('[data-testid=prom-error]');
    assert.ok(said.startsWith(`${prom.url}/api/v1/series: `), said);
    assert.match(said, /no complete answer in time \(2 s per query, 60 s in all\): the time ran out waiting for the server/);
    // The page let go of the connection at its deadline, and said so at once.
    assert.ok(q.closed !== null, 'the page kept the connection open');
    const closedAfter = q.closed - q.at;
    assert.ok(closedAfter >= DEADLINE_MS - 100 && closedAfter <= DEADLINE_MS + 1000, `closed ${closedAfter} ms after the request`);
    assert.ok(shown - q.at <= DEADLINE_MS + 1500, `the error came ${shown - q.at} ms after the request`);
    figures.prom_trickle_closed_after_ms = closedAfter;
    // In Chinese too, with the same deadline.
    await page.click('[data-testid=lang-toggle]');
    await page.waitForFunction(() => /每次查询 2 秒.*超时的是等待服务器/.test(document.querySelector('[data-testid=prom-error]')?.textContent ?? ''));
    onlyOrigins(requests, [origin, prom.url]);
    assert.deepEqual(errors, []);
    await context.close();
  } finally {
    prom.stop();
  }
});

// The site anywhere: every page at every width from a phone to a wide screen.
const PAGES = ['triage', 'probe', 'kv', 'playbook', 'cards', 'drill'];
const WIDTHS = [360, 390, 768, 1280, 1920];

/** Whether the page scrolls sideways, and the elements that stick out past the viewport. */
async function sideways(page) {
  return page.evaluate(() => {
    const iw = window.innerWidth;
    const out = [...document.querySelectorAll('body *')]
      .filter((el) => el.getBoundingClientRect().right > iw + 1)
      .slice(0, 5)
      .map((el) => `${el.tagName.toLowerCase()}.${el.className}[${el.getAttribute('data-testid') ?? ''}]`);
    return { scrollWidth: document.documentElement.scrollWidth, innerWidth: iw, out };
  });
}

test('the site anywhere: no page scrolls sideways from 360 to 1920 px, and the menu, the language toggle and the tap targets work on a phone', { timeout: 300000 }, async () => {
  const log = fs.readFileSync(path.join(root, 'tests/data/incidents/ttft_queueing.log'), 'utf8');
  for (const width of WIDTHS) {
    const context = await browser.newContext({ viewport: { width, height: 900 } });
    const page = await context.newPage();
    const requests = [];
    page.on('request', (r) => requests.push(r.url()));
    for (const slug of PAGES) {
      await page.goto(`${origin}/#/${slug}`);
      await page.waitForSelector('[data-testid=lang-toggle]');
      if (slug === 'triage') {
        // With a report on screen: findings, evidence lines, tables, charts and the source view.
        await page.fill('[data-testid=paste-input]', log);
        await page.click('[data-testid=analyze-button]');
        await page.waitForSelector('[data-testid=verdict]');
      }
      if (slug === 'playbook') {
        // Every branch open: the long example lines and the generator's command block.
        await page.waitForSelector('[data-testid=playbook-branch]');
        await page.evaluate(() => document.querySelectorAll('details').forEach((d) => { d.open = true; }));
      }
      if (slug === 'cards') {
        await page.waitForSelector('[data-testid=card-front]');
        await page.click('[data-testid=card-show]');
        await page.waitForSelector('[data-testid=rate-good]');
      }
      if (slug === 'drill') await page.waitForTimeout(200);
      const s = await sideways(page);
      assert.ok(s.scrollWidth <= s.innerWidth, `#/${slug} at ${width} px is ${s.scrollWidth} px wide: ${s.out.join(', ')}`);
      // The language toggle is on screen at every width.
      const toggle = await page.$eval('[data-testid=lang-toggle]', (b) => b.getBoundingClientRect().toJSON());
      assert.ok(toggle.right <= width && toggle.width > 0, `lang toggle off screen at ${width} px`);
      if (width <= 390 && slug === 'cards') {
        // Rating a card by thumb: every rating button is at least 44 px tall and wide.
        for (const id of ['rate-again', 'rate-hard', 'rate-good', 'rate-easy']) {
          const b = await page.$eval(`[data-testid=${id}]`, (e) => e.getBoundingClientRect().toJSON());
          assert.ok(b.height >= 44 && b.width >= 44, `${id} is ${b.width}×${b.height} at ${width} px`);
        }
      }
      if (width <= 390 && slug === 'triage') {
        for (const id of ['analyze-button', 'copy-markdown', 'download-json', 'lang-toggle', 'menu-toggle']) {
          const b = await page.$eval(`[data-testid=${id}]`, (e) => e.getBoundingClientRect().toJSON());
          assert.ok(b.height >= 44, `${id} is ${b.height} px tall at ${width} px`);
        }
      }
      await page.screenshot({ path: path.join(shots, `anywhere-${width}-${slug}.png`) });
    }
    // Narrow: the six links fold into a menu that opens, navigates and folds again; wide: the
    // links are in the header and the menu button is not.
    const menuShown = await page.isVisible('[data-testid=menu-toggle]');
    if (width <= 390) {
      assert.ok(menuShown, `no menu button at ${width} px`);
      assert.ok(!(await page.isVisible('[data-testid=nav-kv]')), 'the links show before the menu is opened');
      await page.click('[data-testid=menu-toggle]');
      await page.click('[data-testid=nav-kv]');
      await page.waitForFunction(() => location.hash === '#/kv');
      assert.ok(!(await page.isVisible('[data-testid=nav-probe]')), 'the menu stays open after choosing a page');
    } else if (width >= 1280) {
      assert.ok(!menuShown, `a menu button at ${width} px`);
      for (const slug of PAGES) assert.ok(await page.isVisible(`[data-testid=nav-${slug}]`), `nav-${slug} hidden at ${width} px`);
    }
    onlyOrigins(requests, [origin]);
    await context.close();
  }
});

// Into the ticket: what the page copies and downloads is what the CLI prints.
test('Copy as Markdown and Download JSON give the bytes triage analyze --format markdown / json prints, in both languages', async () => {
  const dir = path.join(root, 'tests/data/incidents');
  const name = 'ttft_queueing.log';
  const cli = (format, lang) => execFileSync(triageBin, ['analyze', '--format', format, '--lang', lang, name], { cwd: dir, maxBuffer: 64 << 20 }).toString('utf8');
  const { page, context, requests } = await open();
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
  await page.setInputFiles('[data-testid=file-input]', { name, mimeType: 'text/plain', buffer: fs.readFileSync(path.join(dir, name)) });
  await page.waitForSelector('.files li');
  await page.click('[data-testid=analyze-button]');
  for (const lang of ['en', 'zh']) {
    if (lang === 'zh') {
      // The language switch analyses the same file again; the exports follow it.
      await page.click('[data-testid=lang-toggle]');
      await page.waitForFunction(() => /[\u4e00-\u9fff]/.test(document.querySelector('[data-testid=finding] p')?.textContent ?? ''));
    }
    await page.waitForSelector('[data-testid=copy-markdown]');
    await page.evaluate(() => navigator.clipboard.writeText(''));
    await page.click('[data-testid=copy-markdown]');
    await page.waitForFunction(() => /Copied|已复制/.test(document.querySelector('[data-testid=copy-status]')?.textContent ?? ''));
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    const markdown = cli('markdown', lang);
    assert.ok(markdown.startsWith('# '), markdown.slice(0, 80));
    assert.equal(copied, markdown, `${lang}: the copied Markdown differs from the CLI's`);
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('[data-testid=download-json]')]);
    assert.equal(download.suggestedFilename(), 'triage-report.json');
    const saved = fs.readFileSync(await download.path(), 'utf8');
    const json = cli('json', lang);
    assert.equal(JSON.parse(saved).schema, 'triage.report/v1');
    assert.equal(saved, json, `${lang}: the downloaded JSON differs from the CLI's`);
  }
  onlyOrigins(requests, [origin]);
  await context.close();
});

// The probe's results into the ticket: the JSON has the CLI's shape, field for field.
test('the probe\'s results: Copy as Markdown and Download JSON in the triage.probe/v1 shape triage probe --format json prints, the key redacted', async () => {
  const n = 3;
  const { base, done } = await scriptedServer(2 * n, { ttftMs: 40, gapMs: 5, tokens: 6 });
  const env = { ...process.env };
  for (const k of ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'TAOTOKEN_API_KEY']) delete env[k];
  const cli = JSON.parse(execFileSync(triageBin, ['probe', base, '--model', 'scripted', '--requests', String(n), '--max-tokens', '16', '--prompt', 'Explain continuous batching in one paragraph.', '--format', 'json'], { env }).toString('utf8'));
  // `send_ms` (dispatch → the request's last byte written) is the kernel-stamped transport's own
  // (docs/contracts.md): a browser's fetch() cannot see the write, so the page has no such field.
  for (const r of cli.requests) delete r.send_ms;
  const { page, context, requests } = await open('#/probe');
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
  await page.fill('[data-testid=probe-url]', base);
  await page.fill('[data-testid=probe-model]', 'scripted');
  await page.fill('[data-testid=probe-key]', 'sk-browser-secret-123456789');
  await page.fill('[data-testid=probe-max-tokens]', '16');
  await page.fill('[data-testid=probe-n]', String(n));
  assert.equal(await page.$('[data-testid=probe-download-json]'), null, 'exports before any run');
  await page.click('[data-testid=probe-start]');
  await page.waitForSelector('[data-testid=probe-download-json]', { timeout: 30000 });
  const { name, text } = await downloaded(page, 'probe-download-json');
  assert.equal(name, 'triage-probe.json');
  assert.ok(text.endsWith('}\n'), 'pretty, with a final newline, as the CLI prints it');
  const site = JSON.parse(text);
  // The same keys at every depth (an array: its first element's; strings and numbers: their type).
  const shape = (v) => {
    if (Array.isArray(v)) return v.length && typeof v[0] === 'object' ? [shape(v[0])] : 'array';
    if (v && typeof v === 'object') return Object.fromEntries(Object.keys(v).map((k) => [k, shape(v[k])]));
    return v === null ? 'null' : typeof v;
  };
  const siteShape = shape(site);
  const cliShape = shape(cli);
  assert.deepEqual(siteShape, cliShape);
  assert.deepEqual(Object.keys(site), Object.keys(cli), 'top-level fields in the CLI\'s order');
  assert.deepEqual(Object.keys(site.requests[0]), Object.keys(cli.requests[0]), 'request fields in the CLI\'s order');
  assert.equal(site.schema, 'triage.probe/v1');
  assert.equal(site.url, cli.url);
  assert.deepEqual(site.config, { ...cli.config });
  assert.deepEqual(site.definitions, cli.definitions);
  assert.equal(site.quantile_method, cli.quantile_method);
  assert.equal(site.summary.ok, n);
  assert.equal(site.requests.length, n);
  // The clocks differ by nature: the CLI may stamp with the kernel, a browser stamps in user space.
  assert.ok(site.requests.every((r) => r.ok && /^chatcmpl-scripted-\d+$/.test(r.response_id) && r.stamp_source === 'user'), JSON.stringify(site.requests[0]));
  assert.doesNotMatch(text, /sk-browser-secret/);
  // The Markdown: the page's figures, every request's id, no key.
  await page.evaluate(() => navigator.clipboard.writeText(''));
  await page.click('[data-testid=probe-copy-markdown]');
  await page.waitForFunction(() => /Copied/.test(document.querySelector('[data-testid=probe-copy-status]')?.textContent ?? ''));
  const md = await page.evaluate(() => navigator.clipboard.readText());
  assert.match(md, new RegExp(`^# Probe: ${n} ok, 0 failed\n`));
  const p50 = (await page.textContent('[data-testid=probe-ttft-p50]')).trim();
  assert.ok(md.includes(`| TTFT | ${p50} |`), md);
  for (const r of site.requests) assert.ok(md.includes(r.response_id), r.response_id);
  assert.doesNotMatch(md, /sk-browser-secret/);
  // In Chinese the Markdown follows the page; the JSON stays the CLI's, in English.
  await page.click('[data-testid=lang-toggle]');
  await page.click('[data-testid=probe-copy-markdown]');
  await page.waitForFunction(() => /已复制/.test(document.querySelector('[data-testid=probe-copy-status]')?.textContent ?? ''));
  assert.match(await page.evaluate(() => navigator.clipboard.readText()), new RegExp(`^# 探测: ${n} ok, 0 failed\n`));
  assert.equal((await downloaded(page, 'probe-download-json')).text, text);
  assert.equal((await done()).length, 2 * n);
  onlyOrigins(requests, [origin, base.replace(/\/v1$/, '')]);
  await context.close();
});

/** The build's version and files, as `cargo xtask site` wrote them into the service worker. */
function swBuild() {
  const text = fs.readFileSync(path.join(dist, 'sw.js'), 'utf8');
  return JSON.parse(text.match(/^const BUILD = (.*);$/m)[1]);
}

/** Every URL in the page's Cache Storage, by cache name. */
const cacheContents = (page) => page.evaluate(async () => {
  const out = {};
  for (const k of await caches.keys()) out[k] = (await (await caches.open(k)).keys()).map((r) => r.url);
  return out;
});

test('offline: after one visit every page renders and works without the network, installable, from the build\'s own files', { timeout: 180000 }, async () => {
  const build = swBuild();
  assert.match(build.version, /^[0-9a-f]{16}$/);
  for (const f of ['./', 'index.html', 'app.js', 'triage_site.js', 'triage_site_bg.wasm', 'worker.js', 'triage_site_analyzer.js', 'triage_site_analyzer_bg.wasm', 'probe-worker.js', 'deck.json', 'style.css', 'manifest.webmanifest', 'icon-192.png', 'icon-512.png', 'icon.svg']) {
    assert.ok(build.files.includes(f), `${f} is not cached: ${build.files}`);
  }
  assert.ok(!build.files.includes('sw.js'));
  const context = await browser.newContext({ viewport: { width: 1200, height: 1000 } });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`${origin}/`);
  await page.waitForSelector('[data-testid=lang-toggle]');
  // Registered once the page is up; ready when installed, that is, when the build is cached.
  await page.evaluate(() => navigator.serviceWorker.ready);
  const cached = await cacheContents(page);
  assert.deepEqual(Object.keys(cached), [`triage-${build.version}`]);
  assert.deepEqual([...cached[`triage-${build.version}`]].sort(), build.files.map((f) => new URL(f, `${origin}/`).href).sort());
  // Installable: the manifest parses, and its icons are there.
  const cdp = await context.newCDPSession(page);
  const manifest = await cdp.send('Page.getAppManifest');
  assert.deepEqual(manifest.errors, [], JSON.stringify(manifest.errors));
  const parsed = JSON.parse(manifest.data);
  assert.equal(parsed.display, 'standalone');
  for (const icon of parsed.icons) {
    const r = await page.evaluate(async (src) => { const r = await fetch(src); return [r.status, r.headers.get('content-type'), (await r.arrayBuffer()).byteLength]; }, icon.src);
    assert.equal(r[0], 200, icon.src);
    assert.ok(r[2] > 100, icon.src);
  }
  const png = fs.readFileSync(path.join(dist, 'icon-512.png'));
  assert.equal(png.subarray(1, 4).toString(), 'PNG');
  assert.equal(png.readUInt32BE(16), 512);

  await context.setOffline(true);
  await page.reload();
  await page.waitForSelector('[data-testid=lang-toggle]');
  assert.ok(await page.evaluate(() => navigator.serviceWorker.controller !== null), 'the reload was not served by the worker');
  const log = fs.readFileSync(path.join(root, 'tests/data/incidents/ttft_queueing.log'), 'utf8');
  await page.fill('[data-testid=paste-input]', log);
  await page.click('[data-testid=analyze-button]');
  assert.match(await page.textContent('[data-testid=verdict]'), /TTFT_HIGH/);
  await page.screenshot({ path: path.join(shots, 'offline-triage.png') });
  // Every page, each in a fresh tab opened offline.
  for (const slug of PAGES) {
    const tab = await context.newPage();
    tab.on('pageerror', (e) => errors.push(`${slug}: ${e}`));
    await tab.goto(`${origin}/#/${slug}`);
    await tab.waitForSelector('[data-testid=lang-toggle]');
    if (slug === 'triage') await tab.waitForSelector('[data-testid=paste-input]');
    if (slug === 'probe') await tab.waitForSelector('[data-testid=probe-start]');
    if (slug === 'kv') await tab.waitForFunction(() => /\d/.test(document.querySelector('[data-testid=kv-tokens]')?.textContent ?? ''));
    if (slug === 'playbook') await tab.waitForSelector('[data-testid=playbook-branch]');
    if (slug === 'cards') {
      await tab.waitForSelector('[data-testid=card-front]');
      await tab.click('[data-testid=card-show]');
      await tab.waitForSelector('[data-testid=rate-good]');
    }
    if (slug === 'drill') {
      await tab.fill('[data-testid=drill-seed]', '3');
      await tab.click('[data-testid=drill-start]');
      await tab.waitForSelector('[data-testid=drill-symptom]');
    }
    await tab.screenshot({ path: path.join(shots, `offline-${slug}.png`) });
    await tab.close();
  }
  // What needs the network says so while offline (navigator.onLine, its events), in both
  // languages: its run button explains instead of starting requests that cannot leave, except
  // for a server on this machine, which a browser reaches offline.
  const probe = await context.newPage();
  probe.on('pageerror', (e) => errors.push(`probe notice: ${e}`));
  await probe.goto(`${origin}/#/probe`);
  const triage = await context.newPage();
  triage.on('pageerror', (e) => errors.push(`prometheus notice: ${e}`));
  await triage.goto(`${origin}/#/triage`);
  await triage.click('[data-testid=prom-source] summary');
  const notice = (tab, scope) => tab.textContent(`${scope} [data-testid=offline-notice]`);
  assert.match(await notice(probe, ''), /offline.*network/i);
  assert.match(await notice(triage, '[data-testid=prom-source]'), /offline.*Prometheus server over the network/i);
  await probe.fill('[data-testid=probe-url]', 'https://api.example.com/v1');
  assert.ok(await probe.isDisabled('[data-testid=probe-start]'));
  assert.match(await probe.textContent('[data-testid=probe-start]'), /needs the network/);
  await probe.fill('[data-testid=probe-url]', 'http://localhost:8000/v1');
  assert.ok(await probe.isEnabled('[data-testid=probe-start]'), 'an endpoint on this machine is reachable offline');
  await triage.fill('[data-testid=prom-url]', 'https://prometheus.example.com');
  assert.ok(await triage.isDisabled('[data-testid=prom-run]'));
  assert.match(await triage.textContent('[data-testid=prom-run]'), /needs the network/);
  await triage.fill('[data-testid=prom-url]', 'http://127.0.0.1:9090');
  assert.ok(await triage.isEnabled('[data-testid=prom-run]'));
  await triage.fill('[data-testid=prom-url]', 'https://prometheus.example.com');
  await probe.fill('[data-testid=probe-url]', 'https://api.example.com/v1');
  for (const tab of [probe, triage]) await tab.click('[data-testid=lang-toggle]');
  assert.match(await notice(probe, ''), /离线/);
  assert.match(await notice(triage, '[data-testid=prom-source]'), /离线.*Prometheus/);
  assert.match(await probe.textContent('[data-testid=probe-start]'), /需要网络/);
  for (const tab of [probe, triage]) await tab.click('[data-testid=lang-toggle]');
  await probe.screenshot({ path: path.join(shots, 'offline-probe-notice.png') });
  await triage.screenshot({ path: path.join(shots, 'offline-prometheus-notice.png') });
  // Back online: the notices go, the buttons work again.
  await context.setOffline(false);
  await probe.waitForSelector('[data-testid=offline-notice]', { state: 'detached' });
  await triage.waitForSelector('[data-testid=offline-notice]', { state: 'detached' });
  assert.ok(await probe.isEnabled('[data-testid=probe-start]'));
  assert.match(await probe.textContent('[data-testid=probe-start]'), /Start probe/);
  assert.ok(await triage.isEnabled('[data-testid=prom-run]'));
  assert.match(await triage.textContent('[data-testid=prom-run]'), /Query Prometheus/);
  await probe.close();
  await triage.close();
  assert.deepEqual(errors, []);
  // Nothing was added to the cache by using the site.
  assert.deepEqual(Object.keys(await cacheContents(page)), [`triage-${build.version}`]);
  assert.equal((await cacheContents(page))[`triage-${build.version}`].length, build.files.length);
  await context.close();
});

test('offline: a probe under the service worker goes to the network every time and is never stored', async () => {
  const { base, done } = await scriptedServer(2, { ttftMs: 20, gapMs: 5, tokens: 4 });
  const endpoint = base.replace(/\/v1$/, '');
  const context = await browser.newContext({ viewport: { width: 1200, height: 1000 } });
  const seen = [];
  context.on('response', (r) => { if (r.url().startsWith(endpoint)) seen.push([r.url(), r.fromServiceWorker()]); });
  const page = await context.newPage();
  await page.goto(`${origin}/#/probe`);
  await page.waitForSelector('[data-testid=lang-toggle]');
  await page.evaluate(() => navigator.serviceWorker.ready);
  await page.reload();
  await page.waitForSelector('[data-testid=probe-start]');
  assert.ok(await page.evaluate(() => navigator.serviceWorker.controller !== null), 'the page is not under the worker');
  await page.fill('[data-testid=probe-url]', base);
  await page.fill('[data-testid=probe-model]', 'scripted');
  await page.fill('[data-testid=probe-n]', '1');
  const ids = [];
  for (let run = 0; run < 2; run++) {
    await page.click('[data-testid=probe-start]');
    await page.waitForFunction((before) => {
      const row = document.querySelector('[data-testid=probe-request]');
      return row && row.dataset.responseId && !before.includes(row.dataset.responseId) && !document.querySelector('[data-testid=probe-start]').disabled;
    }, ids, { timeout: 30000 });
    ids.push(await page.getAttribute('[data-testid=probe-request]', 'data-response-id'));
  }
  // Two answers, both the server's: the second was not the first replayed.
  assert.deepEqual(ids, ['chatcmpl-scripted-0', 'chatcmpl-scripted-1']);
  assert.equal((await done()).length, 2);
  assert.ok(seen.every(([, sw]) => !sw), `answered by the worker: ${JSON.stringify(seen)}`);
  const cached = Object.values(await cacheContents(page)).flat();
  assert.ok(cached.length > 0);
  assert.ok(cached.every((u) => u.startsWith(`${origin}/`)), `stored from elsewhere: ${cached.filter((u) => !u.startsWith(`${origin}/`))}`);
  await context.close();
});

test('offline: a new deploy is a new cache, and a page never mixes two versions', { timeout: 120000 }, async () => {
  // A copy of the build on its own server, "deployed" again with one file changed.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'triage-site-'));
  for (const f of fs.readdirSync(dist)) fs.copyFileSync(path.join(dist, f), path.join(dir, f));
  const { server: srv, origin: at } = await serveDir(dir);
  const v1 = swBuild().version;
  const context = await browser.newContext({ viewport: { width: 1200, height: 1000 } });
  const page = await context.newPage();
  await page.goto(`${at}/`);
  await page.waitForSelector('[data-testid=lang-toggle]');
  await page.evaluate(() => navigator.serviceWorker.ready);
  await page.reload();
  await page.waitForSelector('[data-testid=lang-toggle]');
  const style = () => page.evaluate(() => fetch('./style.css').then((r) => r.text()));
  const v2 = 'f'.repeat(16);
  fs.appendFileSync(path.join(dir, 'style.css'), '\n/* deployed again */\n');
  const sw = fs.readFileSync(path.join(dir, 'sw.js'), 'utf8');
  fs.writeFileSync(path.join(dir, 'sw.js'), sw.replace(`"version":"${v1}"`, `"version":"${v2}"`));
  // The browser finds the new worker; it installs its own cache and waits: the open page keeps
  // the files of its version.
  await page.evaluate(() => navigator.serviceWorker.getRegistration().then((r) => r.update()));
  const t0 = Date.now();
  while (!(await page.evaluate(() => navigator.serviceWorker.getRegistration().then((r) => Boolean(r.waiting))))) {
    assert.ok(Date.now() - t0 < 20000, 'the new version was not installed');
    await page.waitForTimeout(100);
  }
  assert.deepEqual(Object.keys(await cacheContents(page)).sort(), [`triage-${v1}`, `triage-${v2}`].sort());
  assert.doesNotMatch(await style(), /deployed again/, 'the open page got a file of the new version');
  // A reload keeps the old version while the page is open; the next visit after it was
  // closed gets the new one, and the old cache is gone.
  await page.reload();
  await page.waitForSelector('[data-testid=lang-toggle]');
  assert.doesNotMatch(await style(), /deployed again/, 'a reload mixed in a file of the new version');
  await page.close();
  const next = await context.newPage();
  await next.goto(`${at}/`);
  await next.waitForSelector('[data-testid=lang-toggle]');
  assert.match(await next.evaluate(() => fetch('./style.css').then((r) => r.text())), /deployed again/);
  const t1 = Date.now();
  while (Object.keys(await cacheContents(next)).join() !== `triage-${v2}`) {
    assert.ok(Date.now() - t1 < 10000, 'the old cache was kept');
    await next.waitForTimeout(100);
  }
  await context.close();
  srv.close();
  fs.rmSync(dir, { recursive: true, force: true });
});
