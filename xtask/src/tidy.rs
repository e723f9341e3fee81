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
