//! `cargo xtask site` (build `site/dist`) and `cargo xtask serve` (serve it on 127.0.0.1).
//!
//! The build is plain cargo + the wasm-bindgen CLI (pinned to the crate's exact version) + a
//! copy of `site/static`: no bundler, no downloads, reproducible offline. Sizes are measured and
//! the gzip budget enforced here.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

use crate::{cargo, step, step_counting_tests, workspace_root};

/// The whole `site/dist`, gzip-compressed file by file, must stay under this.
///
/// The site is two wasm modules: the page (built for size, what a first visit waits for) and
/// the analysis worker's (everything that judges, built for speed, loaded the first time the
/// page needs it). Each carries its own std, alloc and serde_json, so the total is larger than
/// one module would be; the budgets that matter are [`FIRST_VISIT_BUDGET_GZIP_BYTES`] and
/// [`ANALYZER_BUDGET_GZIP_BYTES`]. This total is a ratchet over both and over what is fetched on
/// demand (`deck.json`, the workers' scripts): a little above the last measured total, so growth
/// is noticed and raised on purpose. Each raise, with the sizes measured and what was tried to
/// avoid it, is recorded in `docs/measurements.md`.
pub const BUDGET_GZIP_BYTES: u64 = 1_444 * 1024;
/// What the first visit downloads ([`FIRST_VISIT`]) must stay under this: 600 KB gzip, what a
/// user waits for before any page works. Everything that judges is loaded on demand (see
/// [`BUDGET_GZIP_BYTES`]), so this budget does not grow with the rules.
pub const FIRST_VISIT_BUDGET_GZIP_BYTES: u64 = 600_000;
/// The analysis worker's module (`triage_site_analyzer_bg.wasm`), loaded on demand. Built for
/// speed (`opt-level = 3`, so the browser reads a log at close to native speed; `"z"` would be
/// smaller and about a third slower), it grows with the rules and their docs in two languages:
/// the last measured size with a little room (`docs/measurements.md`).
pub const ANALYZER_BUDGET_GZIP_BYTES: u64 = 812 * 1024;
/// The analysis worker's wasm module, as `wasm-bindgen` names it.
pub const ANALYZER_WASM: &str = "triage_site_analyzer_bg.wasm";
/// What the first visit to the page downloads; everything else in `site/dist` is loaded on
/// demand (`worker.js` and the analyzer's module the first time the page needs them;
/// `deck.json` when the cards page opens; `probe-worker.js` when a probe starts).
pub const FIRST_VISIT: &[&str] =
    &["index.html", "style.css", "app.js", "triage_site.js", "triage_site_bg.wasm"];
/// The whole flashcard deck, fetched by the cards page (`site/src/pages/cards/mod.rs`).
pub const DECK_FILE: &str = "deck.json";
/// The service worker's script (`site/static/sw.js`, its file list written by the build):
/// registered by `app.js` once the page is up, so not part of the first visit's wait.
pub const SERVICE_WORKER: &str = "sw.js";
/// The wasm-bindgen version the site crate pins (`=0.2.130` in site/Cargo.toml).
pub const WASM_BINDGEN_VERSION: &str = "0.2.130";

pub fn dist() -> PathBuf {
    workspace_root().join("site/dist")
}

fn gzip_len(path: &Path) -> anyhow::Result<u64> {
    let out = Command::new("gzip").args(["-9", "-c"]).arg(path).output().context("running gzip")?;
    Ok(out.stdout.len() as u64)
}

/// Build `site/dist`; returns (raw bytes, gzip bytes).
pub fn build() -> anyhow::Result<(u64, u64)> {
    let version = Command::new("wasm-bindgen").arg("--version").output();
    match version {
        Ok(o) if String::from_utf8_lossy(&o.stdout).contains(WASM_BINDGEN_VERSION) => {}
        Ok(o) => bail!(
            "wasm-bindgen {} found, {WASM_BINDGEN_VERSION} needed: cargo install wasm-bindgen-cli --version {WASM_BINDGEN_VERSION}",
            String::from_utf8_lossy(&o.stdout).trim()
        ),
        Err(_) => {
            bail!("wasm-bindgen not found: cargo install wasm-bindgen-cli --version {WASM_BINDGEN_VERSION}")
        }
    }
    let target_dir = std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| workspace_root().join("target"));
    let out = dist();
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out)?;
    // Two modules: the page (`triage-site`, built for size: a first visit waits for it) and the
    // analysis worker's (`triage-site-analyzer`, built for speed: loaded when first needed).
    for (package, profile, file) in [
        ("triage-site", "site", "triage_site.wasm"),
        ("triage-site-analyzer", "site-analyzer", "triage_site_analyzer.wasm"),
    ] {
        let mut c = cargo();
        c.args([
            "build",
            "--package",
            package,
            "--target",
            "wasm32-unknown-unknown",
            "--profile",
            profile,
            "--locked",
        ]);
        // Wasm SIMD (memchr's line and needle searches use it): every browser that runs the
        // site's module workers has it (Chrome 91, Firefox 89, Safari 16.4). Measured on the
        // 30 MiB log of `cargo xtask bench site`: the analyzer's feed 369 → 337 ms, and 3 KB gzip
        // smaller. Set for this build only, through the target's variable.
        c.env("CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS", "-C target-feature=+simd128");
        step(&format!("{package} wasm (profile {profile}, simd128)"), c)?;
        let wasm = target_dir.join(format!("wasm32-unknown-unknown/{profile}/{file}"));
        let mut wb = Command::new("wasm-bindgen");
        // No name or producers section: function names are for debuggers, not for users (~3 KB gzip).
        wb.args([
            "--target",
            "web",
            "--no-typescript",
            "--remove-name-section",
            "--remove-producers-section",
            "--out-dir",
        ])
        .arg(&out)
        .arg(&wasm);
        step(&format!("wasm-bindgen ({package})"), wb)?;
    }
    for entry in std::fs::read_dir(workspace_root().join("site/static"))? {
        let entry = entry?;
        std::fs::copy(entry.path(), out.join(entry.file_name()))?;
    }
    // The whole flashcard deck as data the cards page fetches when it opens, built here,
    // natively, by the same core (`triage cards` prints the same cards). The page's wasm holds no
    // card text and no rule docs: those are the analyzer's, in the worker's module.
    std::fs::write(out.join(DECK_FILE), serde_json::to_string(&triage_deck::deck())?)?;
    // The app icons the manifest names (`site/static/manifest.webmanifest`), drawn here.
    std::fs::write(out.join("icon.svg"), crate::icon::svg())?;
    for side in [192, 512] {
        std::fs::write(out.join(format!("icon-{side}.png")), crate::icon::png(side))?;
    }
    service_worker(&out)?;
    let (mut raw, mut gz, mut first_raw, mut first_gz) = (0, 0, 0, 0);
    let mut on_demand = serde_json::Map::new();
    let mut files: Vec<_> = std::fs::read_dir(&out)?.filter_map(Result::ok).map(|e| e.path()).collect();
    files.sort();
    for f in &files {
        let name = f.file_name().unwrap_or_default().to_string_lossy().into_owned();
        let (r, g) = (std::fs::metadata(f)?.len(), gzip_len(f)?);
        let first = FIRST_VISIT.contains(&name.as_str());
        eprintln!(
            "  {name:<28} {r:>9} B  {g:>8} B gzip  {}",
            if first { "first visit" } else { "on demand" }
        );
        raw += r;
        gz += g;
        if first {
            first_raw += r;
            first_gz += g;
        } else {
            on_demand.insert(name, serde_json::json!({"bytes": r, "gzip_bytes": g}));
        }
    }
    eprintln!("  site/dist: {raw} B, {gz} B gzip (budget {BUDGET_GZIP_BYTES} B gzip)");
    eprintln!(
        "  first visit ({}): {first_raw} B, {first_gz} B gzip (budget {FIRST_VISIT_BUDGET_GZIP_BYTES} B gzip)",
        FIRST_VISIT.join(", ")
    );
    if gz > BUDGET_GZIP_BYTES {
        bail!("site/dist is {gz} B gzip, over the {BUDGET_GZIP_BYTES} B budget");
    }
    if first_gz > FIRST_VISIT_BUDGET_GZIP_BYTES {
        bail!("the first visit loads {first_gz} B gzip, over the {FIRST_VISIT_BUDGET_GZIP_BYTES} B budget");
    }
    let analyzer_gz = gzip_len(&out.join(ANALYZER_WASM))?;
    if analyzer_gz > ANALYZER_BUDGET_GZIP_BYTES {
        bail!("{ANALYZER_WASM} is {analyzer_gz} B gzip, over the {ANALYZER_BUDGET_GZIP_BYTES} B budget");
    }
    let results = workspace_root().join("bench-results");
    std::fs::create_dir_all(&results)?;
    let json = serde_json::json!({
        "schema": "triage.bench.site/v1",
        "dist_bytes": raw,
        "dist_gzip_bytes": gz,
        "budget_gzip_bytes": BUDGET_GZIP_BYTES,
        "first_visit_bytes": first_raw,
        "first_visit_gzip_bytes": first_gz,
        "first_visit_budget_gzip_bytes": FIRST_VISIT_BUDGET_GZIP_BYTES,
        "analyzer_gzip_bytes": analyzer_gz,
        "analyzer_budget_gzip_bytes": ANALYZER_BUDGET_GZIP_BYTES,
        "on_demand": on_demand,
    });
    std::fs::write(results.join("site-size.json"), serde_json::to_string_pretty(&json)? + "\n")?;
    Ok((raw, gz))
}

/// The service worker's script: `site/static/sw.js` with its `BUILD` line written — the build's
/// version (a hash of every file's name and bytes) and the files it caches, every file of
/// `site/dist` but itself, with `./` for the page's own address. A new deploy changes the
/// version, so the browser installs the new worker, which caches the new files under a new name.
/// Called last, when `out` holds everything else.
fn service_worker(out: &Path) -> anyhow::Result<()> {
    const MARK: &str = "const BUILD = null; // cargo xtask site";
    let path = out.join(SERVICE_WORKER);
    let template = std::fs::read_to_string(&path).context("reading site/static/sw.js")?;
    if !template.contains(MARK) {
        bail!("site/static/sw.js lost its line `{MARK}`");
    }
    let mut names: Vec<String> = std::fs::read_dir(out)?
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != SERVICE_WORKER)
        .collect();
    names.sort();
    // FNV-1a, 64 bits, over the worker's own script and every file: a version name, not a
    // defence.
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    };
    eat(template.as_bytes());
    for name in &names {
        eat(name.as_bytes());
        eat(&[0]);
        eat(&std::fs::read(out.join(name))?);
    }
    let mut files = vec!["./".to_owned()];
    files.extend(names);
    let build = serde_json::json!({ "version": format!("{hash:016x}"), "files": files });
    std::fs::write(&path, template.replace(MARK, &format!("const BUILD = {build};")))?;
    Ok(())
}

fn mime(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()) {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript",
        Some("wasm") => "application/wasm",
        Some("css") => "text/css",
        Some("json") => "application/json",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("webmanifest") => "application/manifest+json",
        _ => "application/octet-stream",
    }
}

/// Serve `site/dist` on 127.0.0.1:`port` until killed. Small and dependency-free on purpose:
/// it exists to look at the site and to run the browser tests, not to host it.
pub fn serve(port: u16) -> anyhow::Result<()> {
    let root = dist();
    if !root.join("index.html").is_file() {
        bail!("site/dist is not built: run `cargo xtask site` first");
    }
    let listener = TcpListener::bind(("127.0.0.1", port)).context("binding 127.0.0.1")?;
    eprintln!("serving {} on http://{}/", root.display(), listener.local_addr()?);
    for stream in listener.incoming() {
        let Ok(mut s) = stream else { continue };
        let root = root.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            let n = s.read(&mut buf).unwrap_or(0);
            let req = String::from_utf8_lossy(&buf[..n]);
            let path = req.split_whitespace().nth(1).unwrap_or("/");
            let path = path.split(['?', '#']).next().unwrap_or("/");
            let rel = if path == "/" { "index.html" } else { path.trim_start_matches('/') };
            let file = root.join(rel);
            let inside =
                file.canonicalize().ok().is_some_and(|f| root.canonicalize().is_ok_and(|r| f.starts_with(r)));
            let (status, body, ctype) = match std::fs::read(&file) {
                Ok(b) if inside => ("200 OK", b, mime(&file)),
                _ => ("404 Not Found", b"not found".to_vec(), "text/plain"),
            };
            let head = format!(
                "HTTP/1.1 {status}\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = s.write_all(head.as_bytes()).and_then(|()| s.write_all(&body));
        });
    }
    Ok(())
}

/// The Playwright tests in `site/e2e` against the built site, in Debian's Chromium. Installs the
/// npm packages from the lock file when missing; needs the debug `triage` binary (built by the
/// test step) for the KV and probe comparisons.
pub fn browser_tests() -> anyhow::Result<(u64, u64)> {
    let e2e = workspace_root().join("site/e2e");
    if !e2e.join("node_modules/playwright-core").is_dir() {
        let mut npm = Command::new("npm");
        npm.args(["ci", "--no-audit", "--no-fund"]).current_dir(&e2e);
        step("npm ci (site/e2e)", npm)?;
    }
    let mut build = cargo();
    build.args(["build", "--package", "triage-cli", "--locked"]);
    step("triage binary for the browser tests", build)?;
    let mut node = Command::new("node");
    node.args(["--test", "--test-concurrency=1", "site.test.mjs"]).current_dir(&e2e);
    step_counting_tests("browser tests (site/e2e)", node)
}

/// `cargo xtask bench site`: the site's analysis of a 30 MiB vLLM log in Chromium against the
/// native analyzer on the same file, in the same run (`site/e2e/bench.mjs`); writes `out`.
pub fn bench(out: &str) -> anyhow::Result<()> {
    let e2e = workspace_root().join("site/e2e");
    if !e2e.join("node_modules/playwright-core").is_dir() {
        let mut npm = Command::new("npm");
        npm.args(["ci", "--no-audit", "--no-fund"]).current_dir(&e2e);
        step("npm ci (site/e2e)", npm)?;
    }
    let mut node = Command::new("node");
    node.args(["bench.mjs", out]).current_dir(&e2e);
    step("site: analysis in Chromium vs the native analyzer", node)
}
