//! `cargo xtask ci` sets itself up: what the test command needs and a fresh machine lacks is
//! installed (or named, in one line, when it cannot be), with what was installed and how long it
//! took. `.ci/run` only installs the pinned toolchain (cargo needs it to run this) and calls us.
//!
//! - the wasm-bindgen CLI pinned to the site crate's version (`cargo install`, 109 s measured cold on 2 cores);
//! - Debian's `chromium`, `chromium-driver`, `prometheus` (for `prometheus` and `promtool`) and
//!   `npm`, with apt-get when running as root;
//! - the browser tests' npm packages, from the lock file (`npm ci`, in `site::browser_tests`).

use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail};

use crate::site::WASM_BINDGEN_VERSION;

/// Commands the tests run, and the Debian package that provides each.
const APT_TOOLS: &[(&str, &str)] = &[
    ("chromium", "chromium"),
    ("chromedriver", "chromium-driver"),
    ("prometheus", "prometheus"),
    ("promtool", "prometheus"),
    ("npm", "npm"),
    ("node", "nodejs"),
];

fn on_path(cmd: &str) -> bool {
    Command::new("sh").args(["-c", &format!("command -v {cmd}")]).output().is_ok_and(|o| o.status.success())
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn wasm_bindgen_ok() -> bool {
    Command::new("wasm-bindgen")
        .arg("--version")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(WASM_BINDGEN_VERSION))
}

/// The Debian packages whose commands are missing, each once, in order.
fn missing_packages(present: impl Fn(&str) -> bool) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for (cmd, package) in APT_TOOLS {
        if !present(cmd) && !out.contains(package) {
            out.push(package);
        }
    }
    out
}

fn run(what: &str, mut cmd: Command) -> anyhow::Result<()> {
    let started = Instant::now();
    println!("ci setup: installing {what} …");
    let status = cmd.status().with_context(|| format!("starting: {what}"))?;
    if !status.success() {
        bail!("installing {what} failed ({status})");
    }
    println!("ci setup: installed {what} in {:.0} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// Install what is missing, or say in one line which command would.
pub fn ensure_tools() -> anyhow::Result<()> {
    let started = Instant::now();
    let packages = missing_packages(on_path);
    if !packages.is_empty() {
        let line = format!("apt-get install -y --no-install-recommends {}", packages.join(" "));
        if !is_root() || !on_path("apt-get") {
            bail!("missing {}: run as root: {line}", packages.join(", "));
        }
        let mut update = Command::new("apt-get");
        update.args(["update", "-qq"]);
        run("the apt package lists", update)?;
        let mut install = Command::new("apt-get");
        install
            .args(["install", "-y", "-qq", "--no-install-recommends"])
            .args(&packages)
            .env("DEBIAN_FRONTEND", "noninteractive");
        run(&packages.join(", "), install)?;
    }
    ensure_wasm_bindgen()?;
    let took = started.elapsed().as_secs_f64();
    if took >= 1.0 {
        println!("ci setup: done in {took:.0} s");
    } else {
        println!("ci setup: every tool present");
    }
    Ok(())
}

/// The one tool building the site needs: the pinned wasm-bindgen CLI, installed if missing.
pub fn ensure_wasm_bindgen() -> anyhow::Result<()> {
    if !wasm_bindgen_ok() {
        let what = format!("wasm-bindgen-cli {WASM_BINDGEN_VERSION} (cargo install, ~2 min on 2 cores)");
        let mut locked = Command::new("cargo");
        locked.args(["install", "wasm-bindgen-cli", "--locked", "--version", WASM_BINDGEN_VERSION]);
        if let Err(e) = run(&what, locked) {
            // The CLI's own lock file can name a release the index no longer offers (seen
            // 2026-12-04: webpki-roots 1.0.11, yanked): resolve its dependencies afresh then.
            println!("ci setup: {e}; trying again without its lock file");
            let mut unlocked = Command::new("cargo");
            unlocked.args(["install", "wasm-bindgen-cli", "--version", WASM_BINDGEN_VERSION]);
            run(&what, unlocked)?;
        }
        if !wasm_bindgen_ok() {
            bail!(
                "wasm-bindgen {WASM_BINDGEN_VERSION} is still not on PATH after cargo install: add ~/.cargo/bin to PATH"
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_commands_name_their_packages_once() {
        assert!(missing_packages(|_| true).is_empty());
        assert_eq!(
            missing_packages(|c| c != "prometheus" && c != "promtool" && c != "chromedriver"),
            ["chromium-driver", "prometheus"]
        );
        assert_eq!(
            missing_packages(|_| false),
            ["chromium", "chromium-driver", "prometheus", "npm", "nodejs"]
        );
    }
}
