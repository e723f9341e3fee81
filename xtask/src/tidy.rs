//! Tidy checks that keep the repository honest: docs that cannot drift from the code.

use std::collections::{BTreeMap, BTreeSet};
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
    for krate in ["analyze", "gpu", "watch", "prometheus", "base"] {
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

/// Rust source reduced to its tokens: identifiers, `::` and single punctuation characters.
/// Comments, string and character literals are dropped (their text names no module).
fn tokens(text: &str) -> Vec<String> {
    tokens_at(text).into_iter().map(|(t, _)| t).collect()
}

/// [`tokens`], each with its line (1-based).
fn tokens_at(text: &str) -> Vec<(String, usize)> {
    let c: Vec<char> = text.chars().collect();
    let (mut out, mut i) = (Vec::new(), 0);
    let mut lines = vec![0usize; c.len() + 1];
    for k in 0..c.len() {
        lines[k + 1] = lines[k] + usize::from(c[k] == '\n');
    }
    let line = |k: usize| lines[k.min(c.len())] + 1;
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let at = |j: usize| c.get(j).copied().unwrap_or(' ');
    while i < c.len() {
        if c[i] == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if c[i] == '/' && at(i + 1) == '*' {
            i += 2;
            while i < c.len() && !(c[i] == '*' && at(i + 1) == '/') {
                i += 1;
            }
            i += 2;
        } else if c[i] == 'r' && (at(i + 1) == '"' || at(i + 1) == '#') && (i == 0 || !ident(c[i - 1])) {
            // A raw string: r"…" or r#"…"#.
            let hashes = (1..).take_while(|&k| at(i + k) == '#').count();
            if at(i + hashes + 1) != '"' {
                out.push(("r".to_owned(), line(i)));
                i += 1;
                continue;
            }
            i += hashes + 2;
            while i < c.len() && !(c[i] == '"' && (1..=hashes).all(|k| at(i + k) == '#')) {
                i += 1;
            }
            i += hashes + 1;
        } else if c[i] == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c[i] == '\'' && (at(i + 1) == '\\' || at(i + 2) == '\'') {
            // A character literal ('x', '\n', '\u{1F600}'); a lifetime has no closing quote.
            i += 2;
            while i < c.len() && c[i] != '\'' {
                i += 1;
            }
            i += 1;
        } else if ident(c[i]) {
            let start = i;
            while i < c.len() && ident(c[i]) {
                i += 1;
            }
            out.push((c[start..i].iter().collect(), line(start)));
        } else if c[i] == ':' && at(i + 1) == ':' {
            out.push(("::".to_owned(), line(i)));
            i += 2;
        } else {
            if !c[i].is_whitespace() {
                out.push((c[i].to_string(), line(i)));
            }
            i += 1;
        }
    }
    out
}

/// `tokens` without the items marked `#[cfg(test)]`, and the names of the modules so marked
/// whose code is in files of their own (`#[cfg(test)] mod tests;`).
fn without_tests(t: Vec<String>) -> (Vec<String>, Vec<String>) {
    let is = |k: usize, s: &str| t.get(k).is_some_and(|x| x == s);
    let (mut out, mut test_files, mut i) = (Vec::new(), Vec::new(), 0);
    while i < t.len() {
        let cfg_test = ["#", "[", "cfg", "(", "test", ")", "]"];
        if !cfg_test.iter().enumerate().all(|(k, s)| is(i + k, s)) {
            out.push(t[i].clone());
            i += 1;
            continue;
        }
        i += cfg_test.len();
        let start = i;
        let is_use = t[start..].iter().take(4).any(|x| x == "use");
        let mut depth = 0usize;
        while i < t.len() {
            match t[i].as_str() {
                "{" => depth += 1,
                "}" => {
                    depth -= 1;
                    if depth == 0 && !is_use {
                        break;
                    }
                }
                ";" if depth == 0 => {
                    if i >= 2 && t[i - 2] == "mod" {
                        test_files.push(t[i - 1].clone());
                    }
                    break;
                }
                _ => {}
            }
            i += 1;
        }
        i += 1;
    }
    (out, test_files)
}

/// The top-level modules of the crate at `src` (its `lib.rs`'s `mod` declarations) and the
/// modules each one names through `crate::…` and `super::…` paths (and, in `lib.rs`, through
/// paths that start with a module's name), tests excluded: a module's tests may drive the whole
/// crate. The root's own items are the node `lib`. Each edge keeps the files that make it.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let (lib, _) = without_tests(tokens(&std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs")));
    let modules: BTreeSet<String> =
        lib.windows(3).filter(|w| w[0] == "mod" && w[2] == ";").map(|w| w[1].clone()).collect();
    // Names the root imports: `crate::name` is the module they come from, or no module of the
    // crate at all (`pub use triage_report as report`).
    let mut imported: BTreeMap<String, Option<String>> = BTreeMap::new();
    for (i, _) in lib.iter().enumerate().filter(|(_, x)| *x == "use") {
        let item: Vec<&String> = lib[i + 1..].iter().take_while(|x| *x != ";").collect();
        let from = item.iter().find(|x| **x != "::").map(|x| x.to_string()).filter(|x| modules.contains(x));
        let last = item.last().map(|x| x.as_str());
        let names = item.windows(2).filter(|w| matches!(w[1].as_str(), "," | "}")).map(|w| w[0]);
        for name in names.chain(last.filter(|l| *l != "}").and(item.last().copied())) {
            imported.insert(name.clone(), from.clone());
        }
    }
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let path_of = |f: &Path| -> Vec<String> {
        let rel = f.strip_prefix(src).expect("under src").with_extension("");
        let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
        if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
            parts.pop();
        }
        parts
    };
    files.sort_by_key(|f| path_of(f).len());
    let mut test_modules: Vec<Vec<String>> = Vec::new();
    let mut graph: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for file in &files {
        let here = path_of(file);
        if test_modules.iter().any(|m| here.starts_with(m)) {
            continue;
        }
        let (t, tests) = without_tests(tokens(&std::fs::read_to_string(file).expect("source")));
        test_modules.extend(tests.into_iter().map(|m| [here.clone(), vec![m]].concat()));
        let from = here.first().cloned().unwrap_or_else(|| "lib".to_owned());
        let rel = file.strip_prefix(src).expect("under src").display().to_string();
        let (mut inline, mut depth) = (Vec::<(String, usize)>::new(), 0usize);
        let is = |k: usize, s: &str| t.get(k).is_some_and(|x| x == s);
        let mut targets = Vec::new();
        for i in 0..t.len() {
            match t[i].as_str() {
                "mod" if is(i + 2, "{") => inline.push((t[i + 1].clone(), depth)),
                "{" => depth += 1,
                "}" => {
                    depth = depth.saturating_sub(1);
                    if inline.last().is_some_and(|m| m.1 == depth) {
                        inline.pop();
                    }
                }
                "crate" | "super" if is(i + 1, "::") && !(i > 0 && is(i - 1, "::")) => {
                    let mut at: Vec<String> =
                        [here.clone(), inline.iter().map(|m| m.0.clone()).collect()].concat();
                    let mut k = i;
                    if t[k] == "crate" {
                        at.clear();
                        k += 2;
                    } else {
                        while is(k, "super") && is(k + 1, "::") {
                            at.pop();
                            k += 2;
                        }
                    }
                    if let Some(top) = at.first() {
                        targets.push(top.clone());
                    } else if is(k, "{") {
                        // `crate::{a, b::c}`: the first name of each part.
                        let mut nest = 0;
                        for j in k..t.len() {
                            match t[j].as_str() {
                                "{" => nest += 1,
                                "}" => nest -= 1,
                                _ if nest == 1 && (t[j - 1] == "{" || t[j - 1] == ",") => {
                                    targets.push(t[j].clone())
                                }
                                _ => {}
                            }
                            if nest == 0 {
                                break;
                            }
                        }
                    } else if let Some(name) = t.get(k) {
                        targets.push(name.clone());
                    }
                }
                name if here.is_empty()
                    && modules.contains(name)
                    && is(i + 1, "::")
                    && !(i > 0 && is(i - 1, "::")) =>
                {
                    targets.push(name.to_owned())
                }
                _ => {}
            }
        }
        for target in targets {
            // A name that is neither a module nor imported by the root is the root's own item.
            let to = match imported.get(&target) {
                _ if modules.contains(&target) => target,
                Some(Some(module)) => module.clone(),
                Some(None) => continue,
                None => "lib".to_owned(),
            };
            if to != from && !(to == "lib" && here.is_empty()) {
                graph.entry(from.clone()).or_default().entry(to).or_default().insert(rel.clone());
            }
        }
    }
    graph
}

/// One cycle of `graph` through each group of modules that reach each other, as `a → b → a`
/// with the files behind each step; empty when the graph is layered.
fn cycles(graph: &BTreeMap<String, BTreeMap<String, BTreeSet<String>>>) -> Vec<String> {
    let reaches = |from: &str, to: &str| -> Option<Vec<String>> {
        // Breadth-first, so the cycle shown is a shortest one.
        let mut came: BTreeMap<String, String> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([from.to_owned()]);
        while let Some(n) = queue.pop_front() {
            for next in graph.get(&n).into_iter().flat_map(|e| e.keys()) {
                if next == to {
                    let mut path = vec![n.clone()];
                    while let Some(p) = came.get(path.last().expect("path")) {
                        path.push(p.clone());
                    }
                    path.reverse();
                    return Some(path);
                }
                if next != from && !came.contains_key(next) {
                    came.insert(next.clone(), n.clone());
                    queue.push_back(next.clone());
                }
            }
        }
        None
    };
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut out = Vec::new();
    for module in graph.keys() {
        if seen.contains(module) {
            continue;
        }
        if let Some(mut path) = reaches(module, module) {
            seen.extend(path.iter().cloned());
            path.push(module.clone());
            let steps: Vec<String> = path
                .windows(2)
                .map(|w| {
                    let files: Vec<&str> = graph[&w[0]][&w[1]].iter().map(String::as_str).take(3).collect();
                    format!("{} → {} ({})", w[0], w[1], files.join(", "))
                })
                .collect();
            out.push(steps.join("; "));
        }
    }
    out
}

#[test]
fn module_paths_are_read_from_code_only() {
    let t = tokens(
        "use crate::a::b; // crate::c\nlet s = \"super::d\"; let c = '\"'; r#\"crate::e\"#; 'x: loop {}",
    );
    assert_eq!(t.iter().filter(|x| *x == "crate" || *x == "super").count(), 1, "{t:?}");
    let (t, tests) = without_tests(tokens(
        "#[cfg(test)]\nuse super::{x, y};\n#[cfg(test)]\nmod tests;\n#[cfg(test)]\nmod inline { fn f() {} }\nfn g() {}",
    ));
    assert_eq!(t.join(" "), "fn g ( ) { }");
    assert_eq!(tests, ["tests"]);
    let graph = BTreeMap::from([
        ("a".to_owned(), BTreeMap::from([("b".to_owned(), BTreeSet::from(["a.rs".to_owned()]))])),
        ("b".to_owned(), BTreeMap::from([("a".to_owned(), BTreeSet::from(["b/mod.rs".to_owned()]))])),
    ]);
    assert_eq!(cycles(&graph), ["a → b (a.rs); b → a (b/mod.rs)"]);
}

/// The modules of the analyzer are layered — the text helpers and rule ids, then the signals,
/// the facts, the parsers, the rules, the `Analyzer` and the Prometheus replay — so each can be
/// read knowing only what is below it: no module reaches, through any other, back to itself.
#[test]
fn analyzer_modules_are_layered() {
    let graph = module_graph(&root().join("crates/analyze/src"));
    assert!(
        graph.contains_key("rules") && graph["rules"].contains_key("facts"),
        "the graph was not read: {graph:?}"
    );
    let cycles = cycles(&graph);
    assert!(cycles.is_empty(), "import cycles between modules of triage-analyze:\n{}", cycles.join("\n"));
}

/// Each function of `text` with a body: its name and how many lines it spans, from `fn` to its
/// closing brace.
fn function_lengths(text: &str) -> Vec<(String, usize)> {
    let t = tokens_at(text);
    let mut out = Vec::new();
    for i in 0..t.len() {
        if t[i].0 != "fn"
            || t.get(i + 1).is_none_or(|n| !n.0.starts_with(|c: char| c.is_alphabetic() || c == '_'))
        {
            continue;
        }
        // The body is the first `{` outside the signature's brackets; a `;` first means none.
        let mut k = i + 2;
        let mut nest = 0i32;
        while k < t.len() {
            match t[k].0.as_str() {
                "(" | "[" => nest += 1,
                ")" | "]" => nest -= 1,
                "{" | ";" if nest == 0 => break,
                _ => {}
            }
            k += 1;
        }
        if k >= t.len() || t[k].0 == ";" {
            continue;
        }
        let mut depth = 0;
        for (tok, line) in &t[k..] {
            match tok.as_str() {
                "{" => depth += 1,
                "}" => {
                    depth -= 1;
                    if depth == 0 {
                        out.push((t[i + 1].0.clone(), line - t[i].1 + 1));
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// Functions longer than this are split into named steps.
const MAX_FUNCTION_LINES: usize = 120;

/// The functions over [`MAX_FUNCTION_LINES`] still waiting to be split (file, function), each
/// with what it is: the count can only go down.
const LONG_FUNCTIONS: &[(&str, &str)] = &[
    // The site's catalogue (one `match` arm per string) and Leptos views (markup, one per page).
    ("site/src/i18n.rs", "t"),
    ("site/src/pages/probe.rs", "ProbePage"),
    ("site/src/pages/triage.rs", "TriagePage"),
    ("site/src/pages/triage.rs", "ReportCharts"),
    ("site/src/pages/cards/review.rs", "view"),
    ("site/src/pages/cards/mod.rs", "CardsPage"),
    ("site/src/pages/prometheus.rs", "PromSource"),
    // Analyzer and estimator steps not split yet.
    ("crates/analyze/src/rules/slow_gpu.rs", "causes"),
    ("crates/analyze/src/parsers/table/kv.rs", "figures"),
    ("crates/analyze/src/parsers/table/vocab.rs", "metric"),
    ("crates/kv/src/estimate/mod.rs", "estimate"),
    ("crates/kv/src/estimate/settings.rs", "resolve"),
    ("crates/kv/src/budget.rs", "plan"),
    // The simulator's scenario catalogue and servers, the filter's hot loop, xtask's site build.
    ("crates/sim-model/src/scenario.rs", "all"),
    ("crates/sim/src/live.rs", "generate"),
    ("crates/sim/src/scripted.rs", "respond"),
    ("plugins/stream-timer/src/fast/mod.rs", "scan"),
    ("xtask/src/site.rs", "build"),
    // Benchmarks' and an integration test's one scenario each.
    ("crates/cli/benches/analyze_big.rs", "main"),
    ("crates/cli/benches/probe.rs", "main"),
    (
        "crates/cli/tests/integration/prometheus.rs",
        "a_real_prometheus_names_the_fault_and_the_replica_or_gpu",
    ),
];

#[test]
fn function_lengths_are_counted_from_fn_to_brace() {
    let text = "trait T { fn f(&self); }\nfn a() {\n    let s = \"{\";\n}\nfn b(x: [u8; 2]) -> u8\nwhere\n{\n    x[0]\n}\n";
    assert_eq!(function_lengths(text), [("a".to_owned(), 3), ("b".to_owned(), 5)]);
}

/// No function grows past [`MAX_FUNCTION_LINES`]: a long one is split into named steps, or waits
/// in [`LONG_FUNCTIONS`], which only shrinks.
#[test]
fn functions_are_short() {
    let mut files = Vec::new();
    rust_files(&root(), &mut files);
    let mut long = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(root()).unwrap_or(f).display().to_string();
        if rel.starts_with("fuzz/") {
            continue;
        }
        for (name, n) in function_lengths(&std::fs::read_to_string(f).unwrap_or_default()) {
            if n > MAX_FUNCTION_LINES {
                long.push((rel.clone(), name, n));
            }
        }
    }
    let new: Vec<String> = long
        .iter()
        .filter(|(f, name, _)| !LONG_FUNCTIONS.contains(&(f.as_str(), name.as_str())))
        .map(|(f, name, n)| format!("{f}: fn {name} is {n} lines"))
        .collect();
    assert!(
        new.is_empty(),
        "functions over {MAX_FUNCTION_LINES} lines (split them into named steps):\n{}",
        new.join("\n")
    );
    let split: Vec<String> = LONG_FUNCTIONS
        .iter()
        .filter(|(f, name)| !long.iter().any(|(lf, ln, _)| lf == f && ln == name))
        .map(|(f, name)| format!("{f}: fn {name}"))
        .collect();
    assert!(split.is_empty(), "now short (or gone): remove from LONG_FUNCTIONS:\n{}", split.join("\n"));
}
