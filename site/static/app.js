// Start the wasm app. Relative URLs: the folder works under any path, or from a local server.
import init, { mount } from './triage_site.js';

await init({ module_or_path: new URL('./triage_site_bg.wasm', import.meta.url) });
mount();
// The static line painted while the wasm loaded.
document.getElementById('boot')?.remove();
