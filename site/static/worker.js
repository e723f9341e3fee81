// The analysis worker: files read as bytes (File.stream) straight into the wasm analyzer.
// Protocol and stages: ARCHITECTURE.md, "site".
import init, { AnalysisSession } from './triage_site.js';

const ready = init({ module_or_path: new URL('./triage_site_bg.wasm', import.meta.url) });

const PIECE = 1 << 20;
const PROGRESS_MS = 50;
const TURN_EVERY = 4 << 20;

const CANCELLED = Symbol('cancelled');
let current = null;

const turn = () => new Promise((resolve) => {
  const c = new MessageChannel();
  c.port1.onmessage = () => { c.port1.close(); resolve(); };
  c.port2.postMessage(null);
});

async function read(job, input, each) {
  if (input.file) {
    const reader = input.file.stream().getReader();
    let sinceTurn = 0;
    try {
      let next = reader.read();
      for (;;) {
        const { done, value } = await next;
        if (job.cancelled) throw CANCELLED;
        if (done) return;
        next = reader.read();
        if (each(value) === false) return;
        sinceTurn += value.length;
        if (sinceTurn >= TURN_EVERY) { sinceTurn = 0; await turn(); }
      }
    } finally {
      reader.cancel().catch(() => {});
    }
  }
  for (let at = 0; at < input.bytes.length; at += PIECE) {
    await turn();
    if (job.cancelled) throw CANCELLED;
    if (each(input.bytes.subarray(at, at + PIECE)) === false) return;
  }
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
    for (const input of inputs) {
      if (!session.wants_excerpt(input.name)) continue;
      session.excerpt_begin(input.name, Boolean(input.file));
      await read(job, input, (bytes) => session.excerpt_feed(bytes));
      session.excerpt_end();
    }
    const excerpts = session.excerpts();
    performance.measure('triage:excerpts', { start: t3, end: performance.now() });
    return { report, excerpts };
  } finally {
    session.free();
  }
}

self.onmessage = async (event) => {
  const msg = event.data;
  if (msg.cancel !== undefined) {
    if (current && current.id === msg.cancel) current.cancelled = true;
    return;
  }
  if (current) current.cancelled = true;
  const job = { id: msg.run, cancelled: false };
  current = job;
  try {
    const { report, excerpts } = await analyze(job, msg.lang, msg.inputs);
    self.postMessage({ id: job.id, report, excerpts });
  } catch (e) {
    self.postMessage(e === CANCELLED ? { id: job.id, cancelled: true } : { id: job.id, error: String(e) });
  } finally {
    if (current === job) current = null;
  }
};
