// The probe's reader (`browser::ProbeWorker`): fetches and reads the stream off the page's
// thread, so drawing the live charts cannot delay a stamp. Plain JS, no wasm.
//
// One clock: every time posted back is on the page's `performance.now()` timeline,
// page = worker now + (worker timeOrigin - page timeOrigin); the page sends its timeOrigin
// with each request. The key arrives in `headers`, goes to `url` (the endpoint the user named)
// and nowhere else; nothing is kept after the request ends.
//
// In:  {go: id, url, headers: [[k, v]], body, timeout_ms, origin}
//      {wire: id, url, called, ended}  (Resource Timing lookup, page times)
//      {reset: n}                      (a run's Resource Timing afresh, room for n entries)
// Out: {id, sent, url}, {id, head: {status, redirect, content_type, retry_after, at}},
//      {id, chunk (Uint8Array, its buffer transferred), at}, {id, end, error?: {kind, message}},
//      {id, wire: {sent, head} | null}
let shift = 0;
const now = () => performance.now() + shift;
const message = (e) => (e && e.message) || String(e);

async function go({ go: id, url, headers, body, timeout_ms, origin }) {
  shift = performance.timeOrigin - origin;
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), timeout_ms);
  const fail = (kind, e) => ({ kind: ctl.signal.aborted ? 'timeout' : kind, message: message(e) });
  let error;
  try {
    const req = new Request(url, { method: 'POST', mode: 'cors', redirect: 'manual', headers, body, signal: ctl.signal });
    postMessage({ id, sent: now(), url: req.url });
    let resp;
    try { resp = await fetch(req); } catch (e) { error = fail('rejected', e); return; }
    const at = now();
    const h = (k) => resp.headers.get(k);
    postMessage({ id, head: {
      status: resp.status,
      redirect: resp.type === 'opaqueredirect' || (resp.status >= 300 && resp.status < 400),
      content_type: h('content-type') ?? '', retry_after: h('retry-after'), at,
    } });
    if (!resp.body) return;
    const reader = resp.body.getReader();
    for (;;) {
      let r;
      try { r = await reader.read(); } catch (e) { error = fail('body', e); return; }
      const at = now();
      if (r.done) return;
      const v = r.value;
      postMessage({ id, chunk: v, at }, [v.buffer]);
    }
  } catch (e) {
    error = fail('rejected', e);
  } finally {
    clearTimeout(timer);
    postMessage({ id, end: now(), error });
  }
}

// The entry of the fetch of `url` called at `called` and read to its end at `ended` (page
// times): one entry that started within 10 ms after the call (the page has checked no other
// fetch was called that close) and ended by `ended`; the browser adds it once the body is
// complete, possibly a turn later, hence a few polls (6 × 5 ms at most).
async function wire({ wire: id, url, called, ended }) {
  for (let i = 0; i < 6; i++) {
    const mine = performance.getEntriesByName(url).filter((e) => {
      const start = e.startTime + shift;
      return start >= called - 0.05 && start < called + 10 && e.responseEnd > 0 && e.responseEnd + shift <= ended + 1;
    });
    if (mine.length > 1) break;
    if (mine.length === 1) {
      const e = mine[0];
      if (e.requestStart <= 0) break;
      const sent = e.connectStart > 0 && e.connectEnd > e.connectStart ? e.connectStart : e.requestStart;
      postMessage({ id, wire: { sent: sent + shift, head: e.responseStart + shift } });
      return;
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  postMessage({ id, wire: null });
}

onmessage = ({ data }) => {
  if (data.go !== undefined) go(data);
  else if (data.wire !== undefined) wire(data);
  else if (data.reset !== undefined) {
    performance.clearResourceTimings();
    performance.setResourceTimingBufferSize(Math.max(250, 2 * data.reset));
  }
};
