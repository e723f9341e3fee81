//! Tidy checks that keep the repository honest: docs that cannot drift from the code.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    super::workspace_root()
}

fn read(path: impl AsRef<Path>) -> String {
    let p = root().join(path);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()))
}

/// Workspace members, from the root Cargo.toml's `members = [ … ]`.
fn members() -> Vec<String> {
    let manifest = read("Cargo.toml");
    let start = manifest.find("members = [").expect("workspace members");
    let list = &manifest[start..];
    let list = &list[..list.find(']').expect("end of members")];
    list.split('"').skip(1).step_by(2).map(str::to_owned).collect()
}

fn package_name(member: &str) -> String {
    let manifest = read(Path::new(member).join("Cargo.toml"));
    manifest
        .lines()
        .find_map(|l| l.strip_prefix("name = \""))
        .and_then(|l| l.strip_suffix('"'))
        .unwrap_or_else(|| panic!("{member}: no package name"))
        .to_owned()
}

#[test]
fn architecture_names_every_workspace_member() {
    let arch = read("ARCHITECTURE.md");
    let members = members();
    assert!(members.len() >= 4, "{members:?}");
    for m in members {
        let name = package_name(&m);
        assert!(arch.contains(&format!("`{m}`")), "ARCHITECTURE.md does not mention the folder `{m}`");
        assert!(arch.contains(&format!("`{name}`")), "ARCHITECTURE.md does not mention the package `{name}`");
    }
}

#[test]
fn ci_script_runs_the_readme_test_command() {
    let readme = read("README.md");
    assert!(readme.contains("cargo xtask ci"), "README.md must name the test command");
    let ci = read(".ci/run");
    assert!(ci.lines().any(|l| l.trim() == "cargo xtask ci"), ".ci/run must call `cargo xtask ci`");
    assert!(ci.contains("rustup toolchain install"), ".ci/run must install the pinned toolchain");
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name();
        let name = name.to_string_lossy();
        if p.is_dir() {
            if !matches!(name.as_ref(), "target" | "node_modules" | "dist" | ".git" | "bench-results") {
                rust_files(&p, out);
            }
        } else if name.ends_with(".rs") {
            out.push(p);
        }
    }
}

#[test]
fn every_rust_file_says_what_it_is_for() {
    let mut files = Vec::new();
    rust_files(&root(), &mut files);
    assert!(files.len() > 10);
    let missing: Vec<_> = files
        .iter()
        .filter(|f| !std::fs::read_to_string(f).unwrap_or_default().trim_start().starts_with("//!"))
        .map(|f| f.strip_prefix(root()).unwrap_or(f).display().to_string())
        .collect();
    assert!(missing.is_empty(), "files without a leading //! line: {missing:?}");
}

#[test]
fn no_ignored_or_should_panic_tests() {
    let mut files = Vec::new();
    rust_files(&root(), &mut files);
    // Built from pieces so this file does not flag itself.
    let banned = [format!("#[{}]", "ignore"), format!("#[{}", "should_panic")];
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        for b in &banned {
            assert!(
                !text.contains(b.as_str()),
                "{} uses {b}: assert the wrong behaviour and add a FIXME instead",
                f.display()
            );
        }
    }
}

/// Most lines of code a file holds before it must say why it is that long.
const MAX_CODE_LINES: usize = 700;

/// Lines of code in a Rust file: not blank, not only a comment, and before a trailing
/// `#[cfg(test)] mod tests { … }` (tests beside the code do not make it harder to read).
fn code_lines(text: &str) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    let tests_at = lines
        .iter()
        .enumerate()
        .position(|(i, l)| {
            l.trim_end() == "#[cfg(test)]"
                && lines[i + 1..]
                    .iter()
                    .find(|n| !n.trim_start().starts_with("#["))
                    .is_some_and(|n| n.starts_with("mod tests {") || n.starts_with("pub(crate) mod tests {"))
        })
        .unwrap_or(lines.len());
    lines[..tests_at]
        .iter()
        .filter(|l| {
            let t = l.trim();
            !t.is_empty() && !t.starts_with("//")
        })
        .count()
}

/// A test file: in a `tests/` folder, or a `tests.rs` module.
fn is_test_file(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == "tests.rs") || path.components().any(|c| c.as_os_str() == "tests")
}

/// The file's `//! Size:` line, if its header has one.
fn size_reason(text: &str) -> Option<&str> {
    text.lines()
        .take_while(|l| l.starts_with("//!"))
        .find_map(|l| l.strip_prefix("//! Size:"))
        .map(str::trim)
        .filter(|r| !r.is_empty())
}

#[test]
fn code_lines_count_code_only() {
    let text = "//! Doc.\n\nuse x;\n// comment\n    /// doc\nfn a() {\n}\n\n#[cfg(test)]\nmod tests {\n    fn b() {}\n}\n";
    assert_eq!(code_lines(text), 3);
    // A `#[cfg(test)]` item that is not the tests module counts.
    assert_eq!(code_lines("#[cfg(test)]\nfn helper() {}\n"), 2);
    assert_eq!(code_lines("#[cfg(test)]\n#[allow(x)]\nmod tests {\n}\n"), 0);
    assert_eq!(size_reason("//! What.\n//! Size: a data table.\nuse x;\n"), Some("a data table."));
    assert_eq!(size_reason("//! What.\n\n//! Size: too late\n"), None);
    assert!(is_test_file(Path::new("crates/cli/tests/integration/kv.rs")));
    assert!(is_test_file(Path::new("crates/kv/src/reconcile/tests.rs")));
    assert!(!is_test_file(Path::new("crates/kv/src/estimate/mod.rs")));
}

/// No non-test file holds more than `MAX_CODE_LINES` lines of code unless its header says why
/// (`//! Size: …`): past that a file is usually several concerns, and splitting it by concern
/// is the default. A reason on a file within the bound is stale and must go.
#[test]
fn long_files_say_why() {
    let mut files = Vec::new();
    rust_files(&root(), &mut files);
    let mut long = Vec::new();
    let mut stale = Vec::new();
    for f in files.iter().filter(|f| !is_test_file(f.strip_prefix(root()).unwrap_or(f))) {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        let (n, reason) = (code_lines(&text), size_reason(&text));
        let name = f.strip_prefix(root()).unwrap_or(f).display().to_string();
        match (n > MAX_CODE_LINES, reason) {
            (true, None) => long.push(format!("{name} ({n} lines of code)")),
            (false, Some(_)) => stale.push(format!("{name} ({n} lines of code)")),
            _ => {}
        }
    }
    assert!(
        long.is_empty(),
        "over {MAX_CODE_LINES} lines of code: split by concern, or write `//! Size: <reason>` in the header: {long:?}"
    );
    assert!(
        stale.is_empty(),
        "a `//! Size:` reason on a file within {MAX_CODE_LINES} lines of code: {stale:?}"
    );
}

/// The crates (under `crates/`) that make the pure core.
const PURE_CRATES: &[&str] =
    &["base", "report", "kv", "gpu", "watch", "prometheus", "analyze", "cards", "deck", "core"];

/// Every pure crate reads the one sans-I/O clippy configuration (a link to `crates/base/clippy.toml`).
#[test]
fn pure_crates_share_the_clippy_rules() {
    let rules = read("crates/base/clippy.toml");
    for c in PURE_CRATES {
        assert_eq!(read(format!("crates/{c}/clippy.toml")), rules, "crates/{c}/clippy.toml");
    }
}

/// The code lines (before a trailing tests module) of `text` that call one of std's slice sorts.
fn std_sort_calls(text: &str) -> Vec<usize> {
    const CALLS: &[&str] = &[
        ".sort()",
        ".sort_by(",
        ".sort_by_key(",
        ".sort_unstable()",
        ".sort_unstable_by(",
        ".sort_unstable_by_key(",
    ];
    let lines: Vec<&str> = text.lines().collect();
    let end = lines.iter().position(|l| l.trim_end() == "#[cfg(test)]").unwrap_or(lines.len());
    (0..end)
        .filter(|&i| !lines[i].trim_start().starts_with("//") && CALLS.iter().any(|c| lines[i].contains(c)))
        .map(|i| i + 1)
        .collect()
}

#[test]
fn std_sort_calls_are_found() {
    assert_eq!(std_sort_calls("let a = 1;\nv.sort_by(|a, b| a.cmp(b));\n// x.sort()\n"), [2]);
    assert!(std_sort_calls("crate::sort::sort_by(&mut v, f);\n#[cfg(test)]\nv.sort();\n").is_empty());
}

/// The pure crates and the site sort with `triage_base::sort`: each std sort instantiation is
/// ~3.5 KB of the site's wasm (40 of them were 17 KB gzip).
#[test]
fn core_and_site_sort_with_one_sort() {
    let mut files = Vec::new();
    for dir in PURE_CRATES.iter().map(|c| format!("crates/{c}/src")).chain(["site/src".to_owned()]) {
        rust_files(&root().join(dir), &mut files);
    }
    let mut found = Vec::new();
    for f in files.iter().filter(|f| !is_test_file(f) && !f.ends_with("sort.rs")) {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        for line in std_sort_calls(&text) {
            found.push(format!("{}:{line}", f.strip_prefix(root()).unwrap_or(f).display()));
        }
    }
    assert!(found.is_empty(), "std sorts in the pure crates or the site (use triage_base::sort): {found:?}");
}

/// Metric names in a Rust source's string literals, before its `#[cfg(test)]` part: every name
/// of another project's series the code reads starts with one of these.
fn metric_names(text: &str) -> Vec<String> {
    const PREFIXES: &[&str] = &[
        "vllm:",
        "sglang:",
        "tgi_",
        "trtllm_",
        "dynamo_frontend_",
        "gen_ai_server_",
        "litellm_",
        "DCGM_FI_",
    ];
    let code = text.find("#[cfg(test)]").map_or(text, |i| &text[..i]);
    let mut out = Vec::new();
    for piece in code.split('"').skip(1).step_by(2) {
        let ok = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
        if PREFIXES.iter().any(|p| piece.starts_with(p) && piece.len() > p.len()) && piece.chars().all(ok) {
            out.push(piece.to_owned());
        }
    }
    out
}

#[test]
fn metric_names_read_are_in_the_crosswalk() {
    let doc = read("docs/metrics-crosswalk.md");
    let listed = |n: &str| doc.contains(&format!("`{n}`"));
    let mut files = Vec::new();
    for krate in ["analyze", "gpu", "watch", "prometheus"] {
        rust_files(&root().join("crates").join(krate).join("src"), &mut files);
    }
    let mut missing = Vec::new();
    let mut seen = 0;
    for f in files.iter().filter(|f| !is_test_file(f)) {
        for n in metric_names(&std::fs::read_to_string(f).unwrap_or_default()) {
            seen += 1;
            let base =
                ["_bucket", "_count", "_sum", "_total"].iter().find_map(|x| n.strip_suffix(x)).unwrap_or(&n);
            if !listed(&n) && !listed(base) {
                missing.push(format!("{n} ({})", f.strip_prefix(root()).unwrap_or(f).display()));
            }
        }
    }
    assert!(seen > 50, "the scan found only {seen} names");
    missing.sort();
    missing.dedup();
    assert!(missing.is_empty(), "docs/metrics-crosswalk.md does not list: {missing:#?}");
}

#[test]
fn metric_names_are_found_in_code_only() {
    let text = "const A: &str = \"vllm:num_requests_waiting\";\nlet s = \"vllm: not a name\";\n#[cfg(test)]\nmod tests { const B: &str = \"sglang:x\"; }\n";
    assert_eq!(metric_names(text), vec!["vllm:num_requests_waiting".to_owned()]);
}
