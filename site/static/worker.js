// The analysis worker: the same wasm module, off the page's thread, for large inputs. It is
// started (and the module compiled) when the triage page opens, so a click does not wait for it.
import init, { worker_analyze } from './triage_site.js';

const ready = init({ module_or_path: new URL('./triage_site_bg.wasm', import.meta.url) });

self.onmessage = async (event) => {
  try {
    await ready;
    const { names, texts, lang } = event.data;
    const report = worker_analyze(names, texts, lang ?? 'en', (p) => self.postMessage({ progress: p }));
    self.postMessage({ report });
  } catch (e) {
    self.postMessage({ error: String(e) });
  }
};
