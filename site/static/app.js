// Start the wasm app. Relative URLs: the folder works under any path, or from a local server.
import init, { mount } from './triage_site.js';

await init({ module_or_path: new URL('./triage_site_bg.wasm', import.meta.url) });
mount();
// The static line painted while the wasm loaded.
document.getElementById('boot')?.remove();
// Offline after this visit: the service worker (sw.js) caches the build, registered once the
// page is up and idle, so a first visit does not wait for it.
const sw = navigator.serviceWorker;
if (sw) {
  const register = () => sw.register('./sw.js', { scope: './' }).catch(() => {});
  if (self.requestIdleCallback) requestIdleCallback(register, { timeout: 2000 });
  else setTimeout(register, 500);
}
