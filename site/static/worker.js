// The analysis worker: the analyzer's own wasm module (site/analyzer), loaded the first time
// the page needs it. Files are read as bytes (File.stream) straight into the wasm analyzer.
// Protocol: site/src/worker.rs; stages: ARCHITECTURE.md, "site".
import init, { AnalysisSession, PromSession, call, warm_up } from './triage_site_analyzer.js';

// Loaded, then run once over a small built-in corpus so the engine optimizes the analyzer's hot
// code before the user's input comes (site/analyzer/src/lib.rs, `warm_up`).
const ready = init({ module_or_path: new URL('./triage_site_analyzer_bg.wasm', import.meta.url) })
  .then(() => {
    const t = performance.now();
    warm_up();
    performance.measure('triage:warm-up', { start: t, end: performance.now() });
  })
  .catch((e) => {
    // Without its module this worker can do nothing: say so once, and go. The page fails what
    // it was waiting for and starts a new worker for the next request (site/src/worker.rs).
    self.postMessage({ fatal: `the analyzer module could not load: ${e}` });
    self.close();
    throw e;
  });

const PIECE = 1 << 20;
const TURN_EVERY = 4 << 20;
const PROGRESS_MS = 50;

const CANCELLED = Symbol('cancelled');
let current = null;

const turn = () => new Promise((resolve) => {
  const c = new MessageChannel();
  c.port1.onmessage = () => { c.port1.close(); resolve(); };
  c.port2.postMessage(null);
});

// Feed `each` the bytes of `input` from `start` to `end` (the end of it when omitted); stops
// when `each` returns false. Yields to the event loop now and then so a cancel gets through.
async function read(job, input, each, start = 0, end = undefined) {
  if (input.file) {
    // File.stream() (64 KiB chunks in Chromium) measured faster than reading 4 MiB slices
    // with arrayBuffer() one ahead: 30 against 55 ms of reading on the 30 MiB bench log.
    const blob = start > 0 || end !== undefined ? input.file.slice(start, end) : input.file;
    const reader = blob.stream().getReader();
    let sinceTurn = 0;
    try {
      let next = reader.read();
      for (;;) {
        const { done, value } = await next;
        if (job.cancelled) throw CANCELLED;
        if (done) return true;
        next = reader.read();
        if (each(value) === false) return false;
        sinceTurn += value.length;
        if (sinceTurn >= TURN_EVERY) { sinceTurn = 0; await turn(); }
      }
    } finally {
      reader.cancel().catch(() => {});
    }
  }
  const stop = end === undefined ? input.bytes.length : Math.min(end, input.bytes.length);
  for (let at = start; at < stop; at += PIECE) {
    await turn();
    if (job.cancelled) throw CANCELLED;
    if (each(input.bytes.subarray(at, Math.min(at + PIECE, stop))) === false) return false;
  }
  return true;
}

const size = (input) => (input.file ? input.file.size : input.bytes.length);

async function analyze(job, lang, inputs) {
  const t0 = performance.now();
  await ready;
  const t1 = performance.now();
  performance.measure('triage:ready', { start: t0, end: t1 });
  const session = new AnalysisSession(lang ?? 'en');
  try {
    const total = Math.max(1, inputs.reduce((n, i) => n + size(i), 0));
    let done = 0, told = 0, inWasm = 0;
    for (const input of inputs) {
      session.begin(input.name, Boolean(input.file));
      await read(job, input, (bytes) => {
        const s = performance.now();
        session.feed(bytes);
        inWasm += performance.now() - s;
        done += bytes.length;
        if (performance.now() - told >= PROGRESS_MS) {
          told = performance.now();
          self.postMessage({ id: job.id, progress: done / total });
        }
      });
      session.end();
    }
    const t2 = performance.now();
    performance.measure('triage:read-and-feed', { start: t1, end: t2 });
    performance.measure('triage:feed-in-wasm', { start: t2 - inWasm, end: t2 });
    const report = session.finish();
    const t3 = performance.now();
    performance.measure('triage:finish', { start: t2, end: t3 });
    // The source view: only the regions around the evidence lines are read again (the
    // session marked where lines start as it read), not the whole input.
    for (const input of inputs) {
      if (!session.wants_excerpt(input.name)) continue;
      const plan = session.excerpt_plan(input.name);
      session.excerpt_begin(input.name, Boolean(input.file));
      for (let i = 0; i < plan.length; i += 3) {
        session.excerpt_seek(plan[i + 2]);
        const end = plan[i + 1] < 0 ? undefined : plan[i + 1];
        if (!await read(job, input, (bytes) => session.excerpt_feed(bytes), plan[i], end)) break;
      }
      session.excerpt_end();
    }
    const excerpts = session.excerpts();
    performance.measure('triage:excerpts', { start: t3, end: performance.now() });
    return { report, excerpts, markdown: session.markdown() };
  } finally {
    session.free();
  }
}

// Prometheus exchanges held for the page, by session number (a few at most: one per run).
const proms = new Map();
const MAX_PROMS = 4;

function promStep(msg) {
  if (msg.prom === 'start') {
    const s = new PromSession();
    proms.set(msg.session, s);
    for (const [k, old] of proms) {
      if (proms.size <= MAX_PROMS) break;
      proms.delete(k);
      old.free();
    }
    return s.start(msg.base, msg.selector, msg.start_s, msg.end_s, msg.step_s);
  }
  const s = proms.get(msg.session);
  if (msg.prom === 'close') {
    if (s) { proms.delete(msg.session); s.free(); }
    return null;
  }
  if (!s) return JSON.stringify({ err: { kind: 'state', detail: 'no exchange started' } });
  if (msg.prom === 'answered') return s.answered(msg.status, msg.body, msg.token);
  if (msg.prom === 'report') return s.report(msg.lang, msg.token);
  return JSON.stringify({ err: { kind: 'state', detail: `no such step: ${msg.prom}` } });
}

self.onmessage = async (event) => {
  const msg = event.data;
  if (msg.call !== undefined || msg.prom !== undefined) {
    try {
      await ready;
      const result = msg.call !== undefined ? call(msg.call, msg.args ?? '') : promStep(msg);
      if (result !== null) self.postMessage({ id: msg.id, result });
    } catch (e) {
      if (msg.id !== undefined) self.postMessage({ id: msg.id, error: String(e) });
    }
    return;
  }
  if (msg.cancel !== undefined) {
    if (current && current.id === msg.cancel) current.cancelled = true;
    return;
  }
  if (current) current.cancelled = true;
  const job = { id: msg.run, cancelled: false };
  current = job;
  try {
    const { report, excerpts, markdown } = await analyze(job, msg.lang, msg.inputs);
    self.postMessage({ id: job.id, report, excerpts, markdown });
  } catch (e) {
    self.postMessage(e === CANCELLED ? { id: job.id, cancelled: true } : { id: job.id, error: String(e) });
  } finally {
    if (current === job) current = null;
  }
};
