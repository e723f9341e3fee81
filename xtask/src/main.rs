//! `cargo xtask`: the project's automation, in Rust so it runs wherever cargo does.
//!
//! `cargo xtask ci` is exactly what CI runs (and what to run before pushing).
//! `cargo xtask codegen [--check]` writes (checks) the sources generated from data.
//! `cargo xtask bench [core|probe]` runs the benchmarks and writes their figures to
//! `bench-results/`. Tidy checks (docs naming every crate, file headers) are `#[test]`s in
//! `tidy.rs`, so `cargo test` runs them too.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::{Context, bail};

mod codegen;
mod icon;
mod setup;
mod site;
#[cfg(test)]
mod tidy;

/// Crates the pure core must never depend on: I/O runtimes, hosts, browser glue, entropy.
const FORBIDDEN_IN_CORE: &[&str] =
    &["tokio", "reqwest", "hyper", "wasmtime", "leptos", "web-sys", "js-sys", "getrandom", "wasm-bindgen"];

/// Crates the site's page must not link: what judges (the rules, their docs, the parsers) is in
/// the analysis worker's module, loaded when first needed, never in the first visit's.
const NOT_IN_THE_PAGE: &[&str] = &["triage-analyze", "triage-core", "triage-deck", "triage-gpu"];

/// Targets the core must build for.
const CORE_TARGETS: &[&str] = &["wasm32-unknown-unknown", "wasm32-wasip1", "wasm32-wasip2"];

const USAGE: &str = "usage: cargo xtask <command>

commands:
  ci               generated sources checked, fmt, clippy -D warnings, all tests, core (and the
                   sim model) for wasm, purity,
                   the site built and tested in Chromium
  bench [WHAT]     benchmarks; WHAT = core | probe | analyze | sim | runner | proxy | site | all (default all);
                   figures in bench-results/
  plugins          build the wasm plugins (GPU rules and analyzer components for wasm32-wasip2,
                   the proxy-wasm filter for wasm32-wasip1) into <target>/plugins/
  gpu-check [--prepare]
                   on a machine with an NVIDIA GPU: build the runner (release) and the GPU-rules
                   plugin into <target>/gpu-check/, run scripts/gpu-check.sh on it (`run --once`
                   and a 20 s sample), save the output under tests/data/gpu-check/;
                   --prepare only builds the bundle to carry (see docs/runner.md)
  codegen [--check]
                   write the generated sources from their data (the analyzer's signal table
                   from tests/data/catalogue/signals.tsv); --check fails if one is stale
  purity           only the core dependency check
  proptest [CASES] the property tests on purpose: fresh random seeds, CASES cases each (default
                   4096); a failure is saved under proptest-regressions/ — commit it (CI draws
                   the same cases on every run, PROPTEST_RNG_SEED in .cargo/config.toml)
  setup            install what the others need and lack (wasm-bindgen-cli; Chromium,
                   chromedriver and Prometheus from apt as root); ci and site-test run it
  site             build the static site into site/dist (installs wasm-bindgen-cli if missing)
  site-test        build the site, then run its browser tests (Chromium, playwright-core)
  serve [PORT]     serve site/dist on 127.0.0.1 (default 8080)
";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = workspace_root();
    std::env::set_current_dir(&root)?;
    match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some("bench") => bench(args.get(1).map(String::as_str).unwrap_or("all")),
        Some("codegen") => match args.get(1).map(String::as_str) {
            None => codegen::run(&root, false),
            Some("--check") => codegen::run(&root, true),
            Some(other) => bail!("unknown codegen option {other:?}: expected --check or nothing"),
        },
        Some("purity") => purity(),
        Some("proptest") => {
            let cases =
                args.get(1).map(|c| c.parse()).transpose().context("CASES must be a number")?.unwrap_or(4096);
            proptest(cases)
        }
        Some("plugins") => plugins(),
        Some("gpu-check") => gpu_check(args.get(1).is_some_and(|a| a == "--prepare")),
        Some("setup") => setup::ensure_tools(),
        Some("site") => setup::ensure_wasm_bindgen().and_then(|_| site::build()).map(|_| ()),
        Some("site-test") => {
            setup::ensure_tools().and_then(|_| site::build()).and_then(|_| site::browser_tests()).map(|_| ())
        }
        Some("serve") => {
            let port =
                args.get(1).map(|p| p.parse()).transpose().context("port must be a number")?.unwrap_or(8080);
            site::serve(port)
        }
        Some("-h" | "--help" | "help") | None => {
            print!("{USAGE}");
            Ok(())
        }
        Some(other) => bail!("unknown command {other:?}\n{USAGE}"),
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()))
}

/// Run one step, echoing it and its duration; fail with its exit status.
fn step(name: &str, mut cmd: Command) -> anyhow::Result<()> {
    eprintln!("\n==> {name}");
    let started = Instant::now();
    let status = cmd.status().with_context(|| format!("starting {name}"))?;
    eprintln!(
        "<== {name}: {} in {:.1} s",
        if status.success() { "ok" } else { "FAILED" },
        started.elapsed().as_secs_f64()
    );
    if !status.success() {
        bail!("{name} failed ({status})");
    }
    Ok(())
}

/// The crates with property tests.
const PROPERTY_TESTED: &[&str] = &["triage-base", "triage-analyze", "triage-cards"];

/// The seed CI's property tests draw from (as `.cargo/config.toml` sets for a plain `cargo test`).
const CI_PROPTEST_SEED: &str = "28";

/// The property tests (in the pure crates) with seeds from the clock and `cases` cases each.
/// proptest saves each failure's seed under the crate's `proptest-regressions/`, replayed first
/// by every later run, CI's included.
fn proptest(cases: u32) -> anyhow::Result<()> {
    let seed =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(1);
    eprintln!("proptest: seed {seed}, {cases} cases per property (rerun: PROPTEST_RNG_SEED={seed})");
    let mut test = cargo();
    test.args(["test", "--lib", "--locked", "--release", "--features", "triage-cards/review"]);
    for package in PROPERTY_TESTED {
        test.args(["--package", package]);
    }
    test.env("PROPTEST_RNG_SEED", seed.to_string()).env("PROPTEST_CASES", cases.to_string());
    step("property tests", test).inspect_err(|_| {
        eprintln!(
            "proptest: a failure's seed is now in the crate's proptest-regressions/ — commit it with the fix"
        )
    })
}

fn ci() -> anyhow::Result<()> {
    let started = Instant::now();
    setup::ensure_tools()?;
    // Cheap, and a stale generated file would fail rustfmt or the tests later less clearly.
    eprintln!("\n==> generated sources (cargo xtask codegen --check)");
    codegen::run(&workspace_root(), true)?;
    let mut fmt = cargo();
    fmt.args(["fmt", "--all", "--", "--check"]);
    step("rustfmt", fmt)?;

    // The site is a wasm crate: checked for its own target, tested in a browser below.
    let mut clippy = cargo();
    clippy.args([
        "clippy",
        "--workspace",
        "--exclude",
        "triage-site",
        "--all-targets",
        "--locked",
        // Core's review feature is the site's only (and the site is checked below): on here so
        // its code and tests are linted and run natively.
        "--features",
        "triage-core/review",
        "--",
        "-D",
        "warnings",
    ]);
    step("clippy", clippy)?;
    let mut clippy_site = cargo();
    clippy_site.args([
        "clippy",
        "--package",
        "triage-site",
        "--package",
        "triage-site-analyzer",
        "--target",
        "wasm32-unknown-unknown",
        "--all-targets",
        "--locked",
        "--",
        "-D",
        "warnings",
    ]);
    step("clippy (site, wasm32)", clippy_site)?;

    // The plugins, for their wasm targets: linted there, then built once into <target>/plugins
    // (the runner's and the proxy host's tests use them).
    clippy_plugins("wasm32-wasip2", "WASI components")?;
    clippy_plugins("wasm32-wasip1", "proxy-wasm filter")?;
    plugins()?;

    let mut test = cargo();
    test.args([
        "test",
        "--workspace",
        "--exclude",
        "triage-site",
        "--locked",
        "--features",
        "triage-core/review",
    ]);
    // The same cases on every run, whatever the caller's environment says: a fresh clone cannot
    // fail at random. `cargo xtask proptest` is the random run.
    test.env("PROPTEST_RNG_SEED", CI_PROPTEST_SEED);
    let (mut passed, mut failed) =
        step_counting_tests("tests", test).inspect_err(|_| println!("ci: tests failed"))?;

    for target in CORE_TARGETS {
        let mut build = cargo();
        build.args(["build", "--package", "triage-core", "--locked", "--target", target]);
        step(&format!("triage-core for {target}"), build)?;
    }
    // The simulator's model runs in the browser (the site's drills): it must build for wasm too.
    let mut sim = cargo();
    sim.args(["build", "--package", "triage-sim-model", "--locked", "--target", "wasm32-unknown-unknown"]);
    step("triage-sim-model for wasm32-unknown-unknown", sim)?;
    purity()?;

    // Component tests of the site, in headless Chromium through chromedriver.
    let mut components = cargo();
    components
        .args(["test", "--package", "triage-site", "--target", "wasm32-unknown-unknown", "--locked"])
        .env("CHROMEDRIVER", "/usr/bin/chromedriver")
        .env("CARGO_PROFILE_DEV_DEBUG", "0");
    let (p, f) = step_counting_tests("site component tests (wasm-bindgen-test)", components)?;
    passed += p;
    failed += f;

    site::build()?;
    match site::browser_tests() {
        Ok((p, f)) => {
            passed += p;
            failed += f;
        }
        Err(e) => {
            println!("ci: {passed} passed, {failed} failed (and the browser tests failed)");
            return Err(e);
        }
    }
    eprintln!("\nxtask ci: all steps passed in {:.0} s", started.elapsed().as_secs_f64());
    // The plain closing line CI reads.
    println!("ci: {passed} passed, {failed} failed");
    Ok(())
}

/// Clippy `-D warnings` on every plugin built for `target`.
fn clippy_plugins(target: &str, what: &str) -> anyhow::Result<()> {
    let mut clippy = cargo();
    clippy.args(["clippy", "--locked", "--target", target]);
    for p in triage_plugin_build::ALL.iter().filter(|p| p.target == target) {
        clippy.args(["--package", p.package]);
    }
    clippy.args(["--", "-D", "warnings"]);
    step(&format!("clippy ({what}, {target})"), clippy)
}

/// `cargo xtask plugins`: every plugin, one cargo invocation per wasm target.
fn plugins() -> anyhow::Result<()> {
    eprintln!("\n==> plugins");
    let started = Instant::now();
    let paths = triage_plugin_build::build(&triage_plugin_build::ALL).map_err(|e| anyhow::anyhow!(e))?;
    for p in &paths {
        let size = std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        eprintln!("    {} ({:.0} KiB)", p.display(), size as f64 / 1024.0);
    }
    eprintln!("<== plugins: ok in {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// `cargo xtask gpu-check [--prepare]`: what a GPU machine can tell us, in one short script.
/// Builds the release runner and the GPU-rules plugin into `<target>/gpu-check/` (the bundle to
/// carry to a GPU machine), then, without `--prepare`, runs `scripts/gpu-check.sh` on it, which
/// keeps the runner's output under `tests/data/gpu-check/` for the team to read and replay.
fn gpu_check(prepare_only: bool) -> anyhow::Result<()> {
    let mut build = cargo();
    build.args(["build", "--release", "--locked", "--package", "triage-runner"]);
    step("triage-runner (release)", build)?;
    plugins()?;
    let target = triage_plugin_build::target_dir();
    let bundle = target.join("gpu-check");
    std::fs::create_dir_all(bundle.join("plugins"))?;
    std::fs::copy(target.join("release/triage-runner"), bundle.join("triage-runner"))?;
    // Line tables make the release binary ~120 MB; the bundle travels, so drop them (~18 MB).
    if Command::new("strip").arg(bundle.join("triage-runner")).status().map(|s| !s.success()).unwrap_or(true)
    {
        eprintln!("gpu-check: `strip` failed or is missing; the bundle keeps its debug info");
    }
    // Only the GPU rules: the analyzer component is not a per-tick plugin.
    std::fs::copy(
        triage_plugin_build::plugin_dir().join("gpu-rules.wasm"),
        bundle.join("plugins/gpu-rules.wasm"),
    )?;
    eprintln!("gpu-check bundle: {}", bundle.display());
    if prepare_only {
        return Ok(());
    }
    let mut script = Command::new("sh");
    script.arg("scripts/gpu-check.sh").arg(&bundle).arg("tests/data/gpu-check");
    step("scripts/gpu-check.sh", script)
}

/// Like [`step`], echoing the test output while summing cargo test's `test result:` lines.
pub(crate) fn step_counting_tests(name: &str, mut cmd: Command) -> anyhow::Result<(u64, u64)> {
    use std::io::{BufRead, BufReader};
    eprintln!("\n==> {name}");
    let started = Instant::now();
    let mut child =
        cmd.stdout(std::process::Stdio::piped()).spawn().with_context(|| format!("starting {name}"))?;
    let (mut passed, mut failed) = (0, 0);
    if let Some(out) = child.stdout.take() {
        for line in BufReader::new(out).lines() {
            let line = line?;
            println!("{line}");
            if let Some((p, f)) = parse_test_result(&line) {
                passed += p;
                failed += f;
            }
        }
    }
    let status = child.wait()?;
    eprintln!(
        "<== {name}: {} in {:.1} s ({passed} passed, {failed} failed)",
        if status.success() { "ok" } else { "FAILED" },
        started.elapsed().as_secs_f64()
    );
    if !status.success() {
        bail!("{name} failed ({status}): {passed} passed, {failed} failed");
    }
    Ok((passed, failed))
}

/// `test result: ok. 74 passed; 0 failed; 0 ignored; …` → (74, 0); node's test runner closes
/// with `# pass 8` and `# fail 0` lines, counted the same way.
fn parse_test_result(line: &str) -> Option<(u64, u64)> {
    let t = line.trim();
    if let Some(n) = t.strip_prefix("# pass ").and_then(|n| n.trim().parse().ok()) {
        return Some((n, 0));
    }
    if let Some(n) = t.strip_prefix("# fail ").and_then(|n| n.trim().parse().ok()) {
        return Some((0, n));
    }
    let rest = line.trim().strip_prefix("test result: ")?;
    let count = |word: &str| -> Option<u64> {
        rest.split([';', '.'])
            .find_map(|part| part.trim().strip_suffix(word).and_then(|n| n.trim().parse().ok()))
    };
    Some((count(" passed").or(count("passed"))?, count(" failed").or(count("failed")).unwrap_or(0)))
}

/// The pure crates' dependency trees (every target) must contain none of [`FORBIDDEN_IN_CORE`].
fn purity() -> anyhow::Result<()> {
    for package in ["triage-core", "triage-sim-model"] {
        purity_of(package)?;
    }
    page_links_no_rule()
}

/// The site's page depends on what it shows and drives; [`NOT_IN_THE_PAGE`] stays out of its
/// crate graph (the analysis worker, `site/analyzer`, links them).
fn page_links_no_rule() -> anyhow::Result<()> {
    let out = cargo()
        .args([
            "tree",
            "--package",
            "triage-site",
            "--edges",
            "normal,build",
            "--target",
            "wasm32-unknown-unknown",
        ])
        .args(["--prefix", "none", "--locked"])
        .output()
        .context("running cargo tree")?;
    if !out.status.success() {
        bail!("cargo tree failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let tree = String::from_utf8_lossy(&out.stdout);
    let mut found: Vec<&str> = tree
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| NOT_IN_THE_PAGE.contains(n))
        .collect();
    found.sort_unstable();
    found.dedup();
    if !found.is_empty() {
        bail!(
            "the site's page (triage-site) links {}: what judges belongs to the analysis worker (site/analyzer)",
            found.join(", ")
        );
    }
    eprintln!("<== the site's page links none of {}", NOT_IN_THE_PAGE.join(", "));
    Ok(())
}

fn purity_of(package: &str) -> anyhow::Result<()> {
    eprintln!("\n==> {package} purity");
    let out = cargo()
        .args([
            "tree",
            "--package",
            package,
            "--edges",
            "normal,build",
            "--target",
            "all",
            "--prefix",
            "none",
            "--locked",
        ])
        .output()
        .context("running cargo tree")?;
    if !out.status.success() {
        bail!("cargo tree failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let tree = String::from_utf8_lossy(&out.stdout);
    let found = forbidden_in_tree(&tree);
    if !found.is_empty() {
        bail!("{package} must stay pure, but depends on: {}", found.join(", "));
    }
    let crates: std::collections::BTreeSet<&str> =
        tree.lines().filter_map(|l| l.split_whitespace().next()).collect();
    eprintln!(
        "<== {package} purity: ok ({} crates in its tree, none of {})",
        crates.len(),
        FORBIDDEN_IN_CORE.join(", ")
    );
    Ok(())
}

fn forbidden_in_tree(tree: &str) -> Vec<String> {
    let mut found: Vec<String> = tree
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| FORBIDDEN_IN_CORE.contains(name))
        .map(str::to_owned)
        .collect();
    found.sort();
    found.dedup();
    found
}

fn bench(what: &str) -> anyhow::Result<()> {
    // Benches run with their package as the working directory: give them absolute paths.
    let results = workspace_root().join("bench-results");
    std::fs::create_dir_all(&results)?;
    let out = |name: &str| results.join(name).to_string_lossy().into_owned();
    let core = || {
        let mut c = cargo();
        c.args(["bench", "--package", "triage-base", "--package", "triage-analyze", "--locked"]);
        step("criterion benches (triage-base: sse, sketch; triage-analyze: analyze)", c)
    };
    let probe = || {
        let mut c = cargo();
        c.args(["bench", "--package", "triage-cli", "--bench", "probe", "--locked", "--"])
            .arg(out("probe.json"));
        step("probe timing error vs the scripted server", c)
    };
    let analyze = || {
        let mut c = cargo();
        c.args(["bench", "--package", "triage-cli", "--bench", "analyze_big", "--locked", "--"])
            .arg(out("analyze.json"));
        step("1 GiB request log: analyzer throughput and memory", c)
    };
    let runner = || {
        let mut c = cargo();
        c.args(["bench", "--package", "triage-runner", "--bench", "runner", "--locked", "--"])
            .arg(out("runner.json"));
        step("runner: plugin calls, instantiation, CPU and memory at 10 Hz x 8 GPUs", c)
    };
    let proxy = || {
        let mut c = cargo();
        c.args(["bench", "--package", "triage-proxy-host", "--bench", "proxy_host", "--locked"]);
        step("proxy-wasm filter: cost per chunk, memory per stream, 10 000 streams", c)
    };
    let sim = || {
        let mut c = cargo();
        c.args(["bench", "--package", "triage-sim-model", "--bench", "sim", "--locked", "--"])
            .arg(out("sim.json"));
        step("simulator: 100 000 requests at 1 000 concurrency", c)
    };
    let site = || {
        site::build()?;
        let mut build = cargo();
        build.args(["build", "--release", "--package", "triage-cli", "--locked"]);
        step("triage (release): the native baseline", build)?;
        site::bench(&out("site.json"))
    };
    match what {
        "site" => site(),
        "sim" => sim(),
        "runner" => runner(),
        "proxy" => proxy(),
        "core" => core(),
        "probe" => probe(),
        "analyze" => analyze(),
        "all" => core()
            .and_then(|()| probe())
            .and_then(|()| analyze())
            .and_then(|()| sim())
            .and_then(|()| runner())
            .and_then(|()| proxy()),
        other => {
            bail!("unknown bench {other:?}: expected core, probe, analyze, sim, runner, proxy, site or all")
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn purity_check_finds_forbidden_crates() {
        let tree = "triage-core v0.1.0 (/x)\nserde v1.0.0\ntokio v1.54.1\nmemchr v2.8.3\ntokio v1.54.1\n";
        assert_eq!(super::forbidden_in_tree(tree), vec!["tokio".to_owned()]);
        assert!(super::forbidden_in_tree("serde v1\nserde_json v1\n").is_empty());
    }

    #[test]
    fn test_result_lines_are_counted() {
        let line =
            "test result: ok. 74 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 3.30s";
        assert_eq!(super::parse_test_result(line), Some((74, 2)));
        assert_eq!(super::parse_test_result("running 3 tests"), None);
        assert_eq!(super::parse_test_result("# pass 8"), Some((8, 0)));
        assert_eq!(super::parse_test_result("# fail 1"), Some((0, 1)));
    }
}
