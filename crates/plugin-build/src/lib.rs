//! Builds the project's wasm plugins with the `plugin` profile and copies them into one folder,
//! `<target>/plugins/`, where the runner, the proxy-wasm test host and their tests find them.
//!
//! `cargo xtask plugins` and the tests that need a plugin call the same [`build_all`]: the
//! nested cargo uses its own target folder (`<target>/plugins-build`), so a test that builds the
//! plugins never waits on the lock of the `cargo test` that started it, and CI builds them once.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// One plugin: the package, the wasm target it is built for, and the file it is copied to.
#[derive(Clone, Copy, Debug)]
pub struct Plugin {
    pub package: &'static str,
    pub target: &'static str,
    /// The file name under `<target>/plugins/` (or `plugins-test/`).
    pub file: &'static str,
    /// Only for tests: copied to `<target>/plugins-test/`, never next to the real ones.
    pub test_only: bool,
}

impl Plugin {
    /// The crate's artifact name: the package with `-` as `_`, `.wasm`.
    fn artifact(&self) -> String {
        format!("{}.wasm", self.package.replace('-', "_"))
    }
}

/// The GPU rules as a WASI component (world `gpu-rules`).
pub const GPU_RULES: Plugin = Plugin {
    package: "triage-plugin-gpu-rules",
    target: "wasm32-wasip2",
    file: "gpu-rules.wasm",
    test_only: false,
};
/// The whole text analyzer as a WASI component (world `text-analyzer`).
pub const ANALYZER: Plugin = Plugin {
    package: "triage-plugin-analyzer",
    target: "wasm32-wasip2",
    file: "analyzer.wasm",
    test_only: false,
};
/// The proxy-wasm filter (ABI 0.2.1) for Envoy, Istio, Higress, APISIX, Kong.
pub const STREAM_TIMER: Plugin = Plugin {
    package: "triage-stream-timer",
    target: "wasm32-wasip1",
    file: "triage_stream_timer.wasm",
    test_only: false,
};
/// A GPU-rules component that misbehaves on request (the runner's sandbox tests).
pub const HOSTILE: Plugin = Plugin {
    package: "triage-plugin-hostile",
    target: "wasm32-wasip2",
    file: "hostile.wasm",
    test_only: true,
};

/// Every plugin `cargo xtask plugins` builds.
pub const ALL: [Plugin; 4] = [GPU_RULES, ANALYZER, HOSTILE, STREAM_TIMER];

/// The workspace root (this crate sits at `crates/plugin-build`).
pub fn workspace_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.ancestors().nth(2).map_or_else(|| here.to_path_buf(), Path::to_path_buf)
}

/// The cargo target folder: `CARGO_TARGET_DIR` when set, else `<workspace>/target`.
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() { dir } else { workspace_root().join(dir) }
        }
        _ => workspace_root().join("target"),
    }
}

/// Where built plugins are copied: `<target>/plugins/`.
pub fn plugin_dir() -> PathBuf {
    target_dir().join("plugins")
}

/// Where test-only plugins are copied: `<target>/plugins-test/`.
pub fn test_plugin_dir() -> PathBuf {
    target_dir().join("plugins-test")
}

/// Build `plugins` (one cargo invocation per target) and copy them into [`plugin_dir`].
/// Returns the copied paths in the order given.
pub fn build(plugins: &[Plugin]) -> Result<Vec<PathBuf>, String> {
    let target = target_dir();
    let build_dir = target.join("plugins-build");
    for dir in [plugin_dir(), test_plugin_dir()] {
        std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    }
    let mut targets: Vec<&str> = plugins.iter().map(|p| p.target).collect();
    targets.sort_unstable();
    targets.dedup();
    for wasm_target in targets {
        let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()));
        cmd.current_dir(workspace_root())
            .args(["build", "--locked", "--profile", "plugin", "--target", wasm_target, "--target-dir"])
            .arg(&build_dir)
            // A test's environment carries cargo's per-crate variables; the nested build must
            // not see the outer one's target folder or flags meant for the host.
            .env_remove("CARGO_TARGET_DIR")
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .env_remove("CARGO_BUILD_RUSTFLAGS");
        for p in plugins.iter().filter(|p| p.target == wasm_target) {
            cmd.args(["--package", p.package]);
        }
        let status = cmd.status().map_err(|e| format!("starting cargo: {e}"))?;
        if !status.success() {
            return Err(format!("building the {wasm_target} plugins failed ({status})"));
        }
    }
    let mut paths = Vec::new();
    for p in plugins {
        let built = build_dir.join(p.target).join("plugin").join(p.artifact());
        let out = if p.test_only { test_plugin_dir() } else { plugin_dir() };
        let dest = out.join(p.file);
        // Copy then rename: another test process may be loading the previous copy right now.
        let tmp = out.join(format!(".{}.{}", p.file, std::process::id()));
        std::fs::copy(&built, &tmp)
            .and_then(|_| std::fs::rename(&tmp, &dest))
            .map_err(|e| format!("copying {} to {}: {e}", built.display(), dest.display()))?;
        paths.push(dest);
    }
    Ok(paths)
}

/// Build every plugin once per process and return [`plugin_dir`]; for tests and benchmarks.
///
/// # Panics
/// When the build fails: a test that needs a plugin cannot go on without it.
pub fn ensure_built() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| match build(&ALL) {
        Ok(_) => plugin_dir(),
        Err(e) => panic!("could not build the wasm plugins: {e}"),
    })
}

/// Build the WASI components (not the proxy filter) once per process; returns their paths in
/// the order of [`GPU_RULES`], [`ANALYZER`], [`HOSTILE`].
///
/// # Panics
/// When the build fails.
pub fn ensure_components() -> &'static [PathBuf] {
    static PATHS: OnceLock<Vec<PathBuf>> = OnceLock::new();
    PATHS.get_or_init(|| match build(&[GPU_RULES, ANALYZER, HOSTILE]) {
        Ok(paths) => paths,
        Err(e) => panic!("could not build the WASI plugins: {e}"),
    })
}

/// Build `plugins` once per process (per distinct list) and return their paths in the order
/// given; for tests and benchmarks that need only some plugins, so that a plugin that does not
/// build at the moment does not stop the others.
///
/// # Panics
/// When the build fails: a test that needs a plugin cannot go on without it.
pub fn ensure(plugins: &[Plugin]) -> Vec<PathBuf> {
    use std::collections::HashMap;
    use std::sync::Mutex;
    static BUILT: OnceLock<Mutex<HashMap<Vec<&'static str>, Vec<PathBuf>>>> = OnceLock::new();
    let key: Vec<&'static str> = plugins.iter().map(|p| p.package).collect();
    let mut built =
        BUILT.get_or_init(|| Mutex::new(HashMap::new())).lock().unwrap_or_else(|e| e.into_inner());
    if let Some(paths) = built.get(&key) {
        return paths.clone();
    }
    match build(plugins) {
        Ok(paths) => {
            built.insert(key, paths.clone());
            paths
        }
        Err(e) => panic!("could not build the wasm plugins {key:?}: {e}"),
    }
}
