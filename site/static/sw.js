// The service worker: the site offline. `cargo xtask site` writes the line below with the build's
// version and every file of site/dist (xtask/src/site.rs, `service_worker`); nothing else here
// changes with a build, so a new deploy is a new script and the browser installs it.
//
// - Only the build's own files are answered, from the cache of their version, filled once at
//   install. Every other request — another origin (the probe's endpoint, a Prometheus), a
//   non-GET, a same-origin path the build does not have — is not touched: it goes to the
//   network as if there were no worker, and nothing is stored.
// - No mix of versions: a new version installs its cache beside the old one and waits (no
//   skipWaiting) until no page of the old one is open; it then deletes the old caches. A page
//   is served by one version from its first byte to its last, and the next visit after the
//   site's pages were closed gets the new one.
const BUILD = null; // cargo xtask site

const CACHE = `triage-${BUILD.version}`;
const FILES = new Set(BUILD.files.map((f) => new URL(f, self.registration.scope).href));
const ROOT = new URL('./', self.registration.scope).href;

self.addEventListener('install', (event) => {
  // Straight from the server (`reload`): an older file in the HTTP cache must not enter a newer
  // version's cache.
  event.waitUntil(caches.open(CACHE).then((c) => c.addAll(BUILD.files.map((f) => new Request(f, { cache: 'reload' })))));
});

self.addEventListener('activate', (event) => {
  event.waitUntil(caches.keys().then((keys) => Promise.all(
    keys.filter((k) => k.startsWith('triage-') && k !== CACHE).map((k) => caches.delete(k)),
  )));
});

self.addEventListener('fetch', (event) => {
  const req = event.request;
  if (req.method !== 'GET') return;
  const url = new URL(req.url);
  url.search = '';
  url.hash = '';
  // The page's own address (`/`, `/index.html`, any `#/page`) is the app shell.
  const key = req.mode === 'navigate' && url.href === ROOT ? ROOT : url.href;
  if (!FILES.has(key)) return;
  event.respondWith(caches.open(CACHE).then((c) => c.match(key)).then((hit) => hit ?? fetch(req)));
});
