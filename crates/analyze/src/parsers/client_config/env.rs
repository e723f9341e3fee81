//! Shell assignments: `export A="x"`, `A=x B=y`, `set A=x`, `setx A x`, `$env:A = "x"`.

use super::{Assign, Value, quoted, skip_ws};

fn is_env_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && (b[0].is_ascii_alphabetic() || b[0] == b'_')
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

/// Does the line start like a shell assignment (`export …`, `NAME=…` in capitals, `$env:…`)?
pub(super) fn env_shaped(t: &str) -> bool {
    if ["export ", "set ", "setx ", "declare -x ", "$env:"].iter().any(|p| t.starts_with(p)) {
        return true;
    }
    let end = t.find('=').unwrap_or(0);
    end > 0 && is_env_name(&t[..end]) && t[..end].bytes().all(|c| !c.is_ascii_lowercase())
}

/// Shell assignments on one line: `export A="x" export B=y`, `A=x B=y`, `set A=x`,
/// `$env:A = "x"`, `setx A x`. Returns them and whether something could not be read.
pub(super) fn scan_env(line: &str) -> (Vec<Assign>, bool) {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        while i < b.len() && (b[i].is_ascii_whitespace() || b[i] == b';' || b[i] == b'&') {
            i += 1;
        }
        if i >= b.len() || b[i] == b'#' {
            return (out, false);
        }
        let rest = &line[i..];
        let mut setx = false;
        for (kw, is_setx) in [("export ", false), ("declare -x ", false), ("set ", false), ("setx ", true)] {
            if rest.starts_with(kw) {
                i = skip_ws(b, i + kw.len());
                setx = is_setx;
                break;
            }
        }
        let powershell = line[i..].starts_with("$env:");
        if powershell {
            i += 5;
        }
        let start = i;
        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
            i += 1;
        }
        let name = &line[start..i];
        if !is_env_name(name) {
            return (out, true);
        }
        let j = if powershell { skip_ws(b, i) } else { i };
        i = if j < b.len() && b[j] == b'=' {
            if powershell { skip_ws(b, j + 1) } else { j + 1 }
        } else if setx && j < b.len() && b[j] == b' ' {
            skip_ws(b, j)
        } else if j >= b.len() || b[j].is_ascii_whitespace() {
            // `export NAME` (no value): nothing to read.
            continue;
        } else {
            return (out, true);
        };
        let (value, span, next) = match b.get(i) {
            Some(b'"') => {
                let (s, content_end, next) = quoted(line, i);
                (s, (i + 1, content_end), next)
            }
            Some(b'\'') => {
                let end = line[i + 1..].find('\'').map_or(b.len(), |e| i + 1 + e);
                (line[i + 1..end].to_owned(), (i + 1, end), (end + 1).min(b.len()))
            }
            _ => {
                let end = line[i..].find(|c: char| c.is_whitespace() || c == ';').map_or(b.len(), |e| i + e);
                (line[i..end].to_owned(), (i, end), end)
            }
        };
        out.push(Assign { key: name.to_owned(), value: Value::Str(value), span });
        i = next;
    }
}
