//! config.toml: the items of one line (table headers, assignments, inline tables) and the table
//! an assignment belongs to.

use super::{Assign, Value, bare, quoted, skip_ws};

/// One item of a TOML line.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum TomlItem {
    /// `[a.b]` (quotes removed).
    Table(String),
    Assign(Assign),
}

fn is_bare_key_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
}

/// A TOML key (bare, quoted or dotted) at `i`: the key with quotes removed, and the index after it.
fn toml_key(line: &str, mut i: usize) -> Option<(String, usize)> {
    let b = line.as_bytes();
    let mut key = String::new();
    loop {
        i = skip_ws(b, i);
        if i < b.len() && b[i] == b'"' {
            let (s, _, next) = quoted(line, i);
            key.push_str(&s);
            i = next;
        } else if i < b.len() && b[i] == b'\'' {
            let end = line[i + 1..].find('\'').map(|e| i + 1 + e)?;
            key.push_str(&line[i + 1..end]);
            i = end + 1;
        } else {
            let start = i;
            while i < b.len() && is_bare_key_byte(b[i]) {
                i += 1;
            }
            if i == start {
                return None;
            }
            key.push_str(&line[start..i]);
        }
        let j = skip_ws(b, i);
        if j < b.len() && b[j] == b'.' {
            key.push('.');
            i = j + 1;
        } else {
            return Some((key, i));
        }
    }
}

/// Skip a balanced `[…]` or `{…}` (strings inside may hold brackets); the index after it.
fn skip_balanced(line: &str, i: usize) -> usize {
    let b = line.as_bytes();
    let mut depth = 0;
    let mut j = i;
    while j < b.len() {
        match b[j] {
            b'"' => {
                j = quoted(line, j).2;
                continue;
            }
            b'\'' => {
                j = line[j + 1..].find('\'').map_or(b.len(), |e| j + 1 + e + 1);
                continue;
            }
            b'[' | b'{' => depth += 1,
            b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
        j += 1;
    }
    b.len()
}

/// A TOML value at `i`, or `None` when what follows `=` is not one (prose, a log line).
fn toml_value(line: &str, i: usize) -> Option<(Value, (usize, usize), usize)> {
    let b = line.as_bytes();
    let rest = &line[i..];
    if rest.starts_with("\"\"\"") || rest.starts_with("'''") {
        // Multi-line strings: not read (no client setting needs one); the rest of the line is it.
        return Some((Value::Other, (i, b.len()), b.len()));
    }
    match b.get(i)? {
        b'"' => {
            let (s, content_end, next) = quoted(line, i);
            Some((Value::Str(s), (i + 1, content_end), next))
        }
        b'\'' => {
            let end = rest[1..].find('\'').map_or(b.len(), |e| i + 1 + e);
            Some((Value::Str(line[i + 1..end].to_owned()), (i + 1, end), (end + 1).min(b.len())))
        }
        b'[' | b'{' => {
            let end = skip_balanced(line, i);
            Some((Value::Other, (i, end), end))
        }
        _ => {
            let (value, span, next) = bare(line, i, b"#,");
            let word = &line[span.0..span.1];
            // Dates and times are valid TOML; anything else bare is not a value.
            let date = word.starts_with(|c: char| c.is_ascii_digit())
                && word.bytes().all(|c| c.is_ascii_digit() || b"-:T.Z+".contains(&c));
            let ok =
                !matches!(value, Value::Other) || date || matches!(word, "inf" | "nan" | "+inf" | "-inf");
            ok.then_some((value, span, next))
        }
    }
}

/// The items of a TOML line, and whether something after them could not be read. An empty list
/// means the line is not TOML at all.
pub(super) fn scan_toml(line: &str) -> (Vec<TomlItem>, bool) {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        // Commas only separate the items of an inline table (read by recursion below).
        while i < b.len() && matches!(b[i], b' ' | b'\t' | b',') {
            i += 1;
        }
        if i >= b.len() || b[i] == b'#' {
            return (out, false);
        }
        if b[i] == b'[' {
            let double = b.get(i + 1) == Some(&b'[');
            let open = if double { 2 } else { 1 };
            let Some(close) = line[i + open..].find(']').map(|e| i + open + e) else {
                return (out, true);
            };
            let name = &line[i + open..close];
            let Some((key, after)) = toml_key(name, 0) else {
                return (out, true);
            };
            if skip_ws(name.as_bytes(), after) != name.len() {
                return (out, true);
            }
            // `[[array.of.tables]]` must close with `]]`.
            if double && b.get(close + 1) != Some(&b']') {
                return (out, true);
            }
            out.push(TomlItem::Table(key));
            i = close + open;
            continue;
        }
        let Some((key, after)) = toml_key(line, i) else {
            return (out, true);
        };
        let j = skip_ws(b, after);
        if j >= b.len() || b[j] != b'=' {
            return (out, true);
        }
        let at = skip_ws(b, j + 1);
        let Some((value, span, next)) = toml_value(line, at) else {
            return (out, true);
        };
        // An inline table (`env = { "TOKEN" = "…" }`, `http_headers = { … }`): its assignments
        // count too, so a key inside one is found and cut out like any other.
        if b[at] == b'{' && span.1 > span.0 + 1 {
            let inner_end = if b[span.1 - 1] == b'}' { span.1 - 1 } else { span.1 };
            let base = span.0 + 1;
            for item in scan_toml(&line[base..inner_end]).0 {
                if let TomlItem::Assign(a) = item {
                    out.push(TomlItem::Assign(Assign {
                        key: format!("{key}.{}", a.key),
                        value: a.value,
                        span: (a.span.0 + base, a.span.1 + base),
                    }));
                }
            }
        }
        out.push(TomlItem::Assign(Assign { key, value, span }));
        i = next;
    }
}

/// The TOML table an assignment is in.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) enum Table {
    #[default]
    Root,
    /// `[model_providers.X]`.
    Provider(String),
    /// Tables whose settings belong to something else (`[mcp_servers.x]`, `[profiles.x]` …).
    Ignored,
}

pub(super) fn table_of(name: &str) -> Table {
    if let Some(p) = name.strip_prefix("model_providers.") {
        // `[model_providers.x.http_headers]` belongs to provider x as well.
        Table::Provider(p.split('.').next().unwrap_or(p).to_owned())
    } else if ["request", "client", "api", "http", "network"].contains(&name) {
        Table::Root
    } else {
        Table::Ignored
    }
}
