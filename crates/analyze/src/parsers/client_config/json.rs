//! settings.json: `"key": value` pairs on one line and the nesting the line opens or closes.

use super::{Assign, Value, bare, quoted, skip_ws};

/// `"key": value` pairs on one line of JSON, the change in nesting depth the line makes, and the
/// deepest it went (relative to its start).
pub(super) fn scan_json(line: &str) -> (Vec<Assign>, i32, i32) {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut depth = 0;
    let mut peak = 0;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                let (text, _, end) = quoted(line, i);
                let j = skip_ws(b, end);
                if j < b.len() && b[j] == b':' {
                    let v = skip_ws(b, j + 1);
                    if v < b.len() && b[v] == b'"' {
                        let (s, content_end, next) = quoted(line, v);
                        out.push(Assign { key: text, value: Value::Str(s), span: (v + 1, content_end) });
                        i = next;
                    } else if v < b.len() && !matches!(b[v], b'{' | b'[') {
                        let (value, span, next) = bare(line, v, b",}]");
                        out.push(Assign { key: text, value, span });
                        i = next;
                    } else {
                        // A nested object or array: the loop walks into it.
                        i = v;
                    }
                } else {
                    i = end;
                }
            }
            b'{' | b'[' => {
                depth += 1;
                peak = peak.max(depth);
                i += 1;
            }
            b'}' | b']' => {
                depth -= 1;
                i += 1;
            }
            _ => i += 1,
        }
    }
    (out, depth, peak)
}
