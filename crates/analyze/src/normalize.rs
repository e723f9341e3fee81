//! Undo the damage a paste goes through before anything is recognised.
//!
//! What people paste has passed through a chat box, a bug tracker, a terminal and a log
//! collector: markdown quotes, bold and backticks; a box frame drawn by a log viewer; prefixes
//! of journald, docker compose, Docker Desktop, CRI and `kubectl logs --prefix`; HTML left from
//! a web page; a JSON logger wrapping the engine's line with its quotes escaped; a progress bar
//! glued to the next line; two records merged on one line. [`clean`] takes one physical line
//! (ANSI and the trailing CR already gone) and gives back what the engine printed — one logical
//! line, or several when a JSON wrapper held an escaped newline or two records were merged.
//! Each logical line keeps the physical line's number, so evidence cites what the user pasted.
//!
//! Cheap on clean lines: a line that starts with a letter and holds none of the few bytes damage
//! leaves (`` ` ``, `<`, `&`, `**`, a progress bar's `it/s]`) is handed back borrowed after a
//! handful of byte tests.

use super::text::finder;
use std::borrow::Cow;

/// The logical lines of one physical line.
pub enum Clean<'a> {
    /// One line (most lines: borrowed, unchanged).
    One(Cow<'a, str>),
    /// Several lines, in order.
    Many(Vec<String>),
}

/// What the engine printed on this physical line: see the module docs.
pub fn clean(line: &str) -> Clean<'_> {
    // Frames and prefixes, outermost first; each may uncover the next. Each is a slice of the
    // line: nothing is copied until markup has to be removed.
    let mut bare = line;
    for _ in 0..4 {
        let Some(inner) = strip_outer(bare) else { break };
        bare = inner;
    }
    let s: Cow<'_, str> = markup(bare).map_or(Cow::Borrowed(bare), Cow::Owned);
    if let Some(parts) = unwrap_json(&s) {
        let mut out = Vec::new();
        for p in parts {
            match clean(&p) {
                Clean::One(c) => out.push(c.into_owned()),
                Clean::Many(v) => out.extend(v),
            }
        }
        return Clean::Many(out);
    }
    if let Some(parts) = split_glued(&s) {
        return Clean::Many(parts);
    }
    Clean::One(s)
}

/// The line without one outer layer: a markdown quote, a box frame, a log viewer's gutter, a
/// collector's prefix. `None` when there is none.
fn strip_outer(line: &str) -> Option<&str> {
    let t = line.trim_start();
    let b = t.as_bytes();
    let first = *b.first()?;
    // Markdown quote: `> text`, `>> text` (not `>=`, not a shell redirect mid-line).
    if first == b'>' && b.get(1).is_none_or(|c| *c == b' ' || *c == b'>') {
        return Some(t.trim_start_matches('>').strip_prefix(' ').unwrap_or(t.trim_start_matches('>')));
    }
    // `kubectl logs --prefix`: `[pod/name/container] message`.
    if first == b'['
        && t.starts_with("[pod/")
        && let Some(end) = t.find("] ")
    {
        return Some(&t[end + 2..]);
    }
    // A box frame drawn around each line (`│ ERROR … │`): one bar each side, no other.
    for bar in ["│", "┃", "║"] {
        if let Some(rest) = t.strip_prefix(bar) {
            let inner = rest.trim_end();
            if let Some(inner) = inner.strip_suffix(bar)
                && !inner.contains(bar)
            {
                return Some(inner.strip_prefix(' ').unwrap_or(inner).trim_end());
            }
            if !rest.contains(bar) {
                return Some(rest.strip_prefix(' ').unwrap_or(rest));
            }
        }
    }
    // A log viewer's gutter (`  | ERROR …`) or docker compose's `service-1  | ` / `[name] | `:
    // one bar, and no other in the rest (a table row has several).
    let head = &b[..b.len().min(64)];
    if let Some(i) = memchr::memchr_iter(b'|', head).find(|&i| b.get(i + 1) == Some(&b' ')) {
        let name = t[..i].trim_end();
        let rest = &t[i + 2..];
        let word = name.bytes().any(|c| c.is_ascii_alphabetic())
            && name.bytes().all(|c| c.is_ascii_alphanumeric() || b"-_.[]/".contains(&c));
        // Compose's own names (`engine-1`, `engine_1`, `[name]`) are prefixes whatever follows
        // (an access line's own bars); a padded word or a bare gutter only when no table row
        // follows (more bars, or a closing one).
        let sure = word && (compose_index(name) || name.starts_with('['));
        let maybe = (name.is_empty() && !rest.trim_end().ends_with('|')) || (word && i >= name.len() + 2);
        if sure || maybe && !rest.contains(" |") && !rest.contains("| ") {
            return Some(rest);
        }
    }
    // journald: `Jun 18 10:21:37 host ident[pid]: message`.
    if let Some(rest) = journald(t) {
        return Some(rest);
    }
    // CRI (containerd, CRI-O): `2024-05-01T10:00:00.123456789Z stdout F message`.
    if first.is_ascii_digit()
        && let Some(sp) = t.find(' ')
        && iso_datetime(&t[..sp])
    {
        let rest = &t[sp + 1..];
        for stream in ["stdout F ", "stderr F ", "stdout P ", "stderr P "] {
            if let Some(msg) = rest.strip_prefix(stream) {
                return Some(msg);
            }
        }
    }
    // Docker Desktop's log view: `2025-01-19 19:58:17 ` before the container's own line (which
    // starts with its own stamp or a bracket).
    if b.len() > 20
        && first.is_ascii_digit()
        && b[4] == b'-'
        && b[10] == b' '
        && b[13] == b':'
        && b[16] == b':'
        && b[19] == b' '
        && (t[20..].starts_with("time=") || t[20..].starts_with('['))
    {
        return Some(&t[20..]);
    }
    None
}

/// Compose v2's `service-1`: a name ending in `-` and the replica's number.
fn compose_index(name: &str) -> bool {
    let index = |(_, n): (&str, &str)| !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit());
    name.rsplit_once('-').is_some_and(index) || name.rsplit_once('_').is_some_and(index)
}

fn journald(t: &str) -> Option<&str> {
    const MONTHS: [&str; 12] =
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let b = t.as_bytes();
    if b.len() < 20 || !MONTHS.iter().any(|m| t.starts_with(m)) || b[3] != b' ' {
        return None;
    }
    // `Jun 18 10:21:37 ` (the day may be space-padded).
    let rest = t[4..].trim_start();
    let (day, rest) = rest.split_once(' ')?;
    let (time, rest) = rest.split_once(' ')?;
    if !day.bytes().all(|c| c.is_ascii_digit()) || time.len() < 8 || time.as_bytes()[2] != b':' {
        return None;
    }
    let (_host, rest) = rest.split_once(' ')?;
    let colon = rest.find(": ")?;
    let ident = &rest[..colon];
    if ident.is_empty() || ident.contains(' ') {
        return None;
    }
    Some(&rest[colon + 2..])
}

/// `2024-05-01T10:00:00Z`, `2024-05-01T10:00:00.123+08:00`: a date, `T`, a time.
fn iso_datetime(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 19
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
}

/// Markdown emphasis, backticks and HTML left in the line, removed; `None` when there are none.
fn markup(line: &str) -> Option<String> {
    let b = line.as_bytes();
    let backtick = memchr::memchr(b'`', b).is_some();
    let html = memchr::memchr2(b'<', b'&', b).is_some();
    let bold = memchr::memchr(b'*', b).is_some() && finder!("**").find(b).is_some();
    if !(backtick || html || bold) {
        return None;
    }
    let mut s = line.to_owned();
    if bold && s.matches("**").count().is_multiple_of(2) {
        s = s.replace("**", "");
    }
    if backtick {
        let t = s.trim();
        if t.starts_with("```") {
            // A fence line: nothing of the engine's.
            return Some(String::new());
        }
        let odd = |x: &str| x.matches('`').count() % 2 == 1;
        let mut t = t.to_owned();
        if t.starts_with('`')
            && !t.starts_with("``")
            && (odd(&t) || t[1..].starts_with(|c: char| c == '[' || c.is_ascii_digit()))
        {
            t.remove(0);
        }
        if t.ends_with('`') && odd(&t) {
            t.pop();
        }
        s = t;
    }
    if html {
        s = strip_html(&s);
    }
    (s != line).then_some(s)
}

/// Tags of the markup a web page or a clipboard leaves; nothing else in angle brackets is
/// touched (`<module>`, `<class 'x'>`, `<|im_end|>` are the engine's own).
const TAGS: &[&str] = &[
    "span", "div", "pre", "code", "p", "br", "body", "html", "head", "td", "tr", "th", "table", "tbody",
    "thead", "b", "i", "em", "strong", "font", "col", "colgroup", "a", "li", "ul", "ol", "sup", "sub",
    "meta", "style",
];

fn strip_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('<') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let name_start = after.strip_prefix('/').unwrap_or(after);
        let name_len = name_start.find(|c: char| !c.is_ascii_alphanumeric()).unwrap_or(name_start.len());
        let name = name_start[..name_len].to_ascii_lowercase();
        match (TAGS.contains(&name.as_str()), after.find('>')) {
            (true, Some(end)) if !after[..end].contains('<') => rest = &after[end + 1..],
            _ => {
                out.push('<');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    if out.contains('&') {
        for (entity, ch) in [
            ("&lt;", "<"),
            ("&gt;", ">"),
            ("&quot;", "\""),
            ("&#39;", "'"),
            ("&#x27;", "'"),
            ("&nbsp;", " "),
            ("&amp;", "&"),
        ] {
            if out.contains(entity) {
                out = out.replace(entity, ch);
            }
        }
    }
    out
}

/// A JSON logger's line (Docker's `json-file`, Kubernetes and Loki exports, pino, structlog):
/// the message it wraps, unescaped, split at its newlines. `None` for any other line (a request
/// log row, an error body, a config).
fn unwrap_json(line: &str) -> Option<Vec<String>> {
    let t = line.trim();
    // Error bodies are read as such; tracing's JSON (TGI: `"fields":{"message":…}`) has its
    // own parser.
    if !t.starts_with('{') {
        return None;
    }
    let b = t.as_bytes();
    let docker = t.starts_with("{\"log\":\"");
    if t.starts_with("{\"error\"")
        || t.starts_with("{\"object\"")
        || t.starts_with("{\"type\"")
        || !docker && (finder!("\"fields\":").find(b).is_some() || finder!("\"target\":\"").find(b).is_some())
    {
        return None;
    }
    let (key_at, key) = [
        (finder!("\"log\":").find(b), "\"log\":"),
        (finder!("\"msg\":").find(b), "\"msg\":"),
        (finder!("\"message\":").find(b), "\"message\":"),
    ]
    .into_iter()
    .filter_map(|(at, k)| at.map(|i| (i, k)))
    .min_by_key(|(i, _)| *i)?;
    let value = t[key_at + key.len()..].trim_start().strip_prefix('"')?;
    let text = unescape(value)?;
    let level = ["\"level\":\"", "\"level\": \"", "\"severity\":\""]
        .iter()
        .find_map(|k| t.find(k).map(|i| &t[i + k.len()..]))
        .and_then(|v| v.split('"').next())
        .map(str::to_ascii_uppercase)
        .filter(|l| matches!(l.as_str(), "ERROR" | "FATAL" | "CRITICAL"));
    let mut parts: Vec<String> = text.split('\n').map(|p| p.trim_end_matches('\r').to_owned()).collect();
    while parts.len() > 1 && parts.last().is_some_and(|p| p.trim().is_empty()) {
        parts.pop();
    }
    if let (Some(level), Some(first)) = (level, parts.first_mut())
        && !first.contains("level=")
        && !first.contains("ERROR")
    {
        *first = format!("{level} {first}");
    }
    Some(parts)
}

/// A JSON string's content up to its closing quote, unescaped; `None` if it never closes (a
/// line cut mid-string gives what it has).
fn unescape(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(out),
            '\\' => match chars.next()? {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                'u' => {
                    let hex: String = chars.by_ref().take(4).collect();
                    let ch =
                        u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32).unwrap_or('\u{fffd}');
                    if ch != '\u{1b}' {
                        out.push(ch);
                    } else {
                        // An escaped ANSI colour: drop the sequence up to its final letter.
                        for c in chars.by_ref() {
                            if c.is_ascii_alphabetic() {
                                break;
                            }
                        }
                    }
                }
                other => out.push(other),
            },
            c => out.push(c),
        }
    }
    (!out.is_empty()).then_some(out)
}

/// A progress bar glued to the next record (`… 5.00it/s]INFO 07-07 …`), a carriage return
/// inside the line, or two records merged (`… code null2024-11-15T06:11:47.441Z [APP]::…`):
/// the pieces, else `None`.
fn split_glued(line: &str) -> Option<Vec<String>> {
    let b = line.as_bytes();
    let mut cuts: Vec<usize> = Vec::new();
    for i in memchr::memchr_iter(b'\r', b) {
        cuts.push(i);
    }
    // A progress bar's `…it/s]` or `…s/it]` with the next record right after it (each `]` is
    // looked at: a line has few).
    for close in memchr::memchr_iter(b']', b) {
        let end = close + 1;
        let bar = close >= 4 && matches!(&b[close - 4..close], b"it/s" | b"s/it");
        if bar && end < b.len() && !b[end].is_ascii_whitespace() {
            cuts.push(end);
        }
    }
    // Merged records: the line starts with a stamp and the same year's stamp starts again right
    // after a letter or digit.
    if b.len() > 40 && iso_datetime(line.get(..19).unwrap_or("")) {
        // Each later `T` that sits where a stamp's would (few per line: no searcher set up).
        let year = &b[..5];
        for t in memchr::memchr_iter(b'T', &b[29..]).map(|t| t + 29) {
            let i = t - 10;
            if &b[i..i + 5] == year
                && b[i - 1].is_ascii_alphanumeric()
                && line.get(i..i + 19).is_some_and(iso_datetime)
            {
                cuts.push(i);
            }
        }
    }
    if cuts.is_empty() {
        return None;
    }
    triage_base::sort::sort(&mut cuts);
    let mut out = Vec::new();
    let mut from = 0;
    for c in cuts {
        if c > from && line.is_char_boundary(c) {
            out.push(line[from..c].trim_end_matches('\r').to_owned());
            from = if b[c] == b'\r' { c + 1 } else { c };
        }
    }
    out.push(line[from..].to_owned());
    out.retain(|p| !p.trim().is_empty());
    (out.len() > 1).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(line: &str) -> String {
        match clean(line) {
            Clean::One(s) => s.into_owned(),
            Clean::Many(v) => v.join("\n"),
        }
    }

    #[test]
    fn clean_lines_are_borrowed() {
        for l in [
            "INFO 11-29 10:00:05 [loggers.py:123] Engine 000: Avg prompt throughput: 1.0 tokens/s",
            "| model | size | t/s |",
            "| qwen2 7B | 5.07 GiB | 1443.02 ± 4.16 |",
            "128 | 0.95 | 196 ms | 18.2 ms |",
            "  File \"x.py\", line 3, in <module>",
            "# TYPE vllm:num_requests_waiting gauge",
            "{\"request_id\":\"a\",\"enqueue_time\":1}",
            "{\"error\":{\"message\":\"bad\"}}",
        ] {
            assert!(matches!(clean(l), Clean::One(Cow::Borrowed(_))), "{l}");
        }
    }

    #[test]
    fn each_kind_of_damage() {
        let cases = [
            ("> ERROR 07-01 x.py:1] boom", "ERROR 07-01 x.py:1] boom"),
            (">> > RuntimeError: CUDA error", "RuntimeError: CUDA error"),
            (
                "│ ERROR 09-27 06:46:46 engine.py:157] RuntimeError: x                │",
                "ERROR 09-27 06:46:46 engine.py:157] RuntimeError: x",
            ),
            ("  | ERROR 07-01 13:54:43 worker.py:120] died", "ERROR 07-01 13:54:43 worker.py:120] died"),
            (
                "vllm-service  | INFO 06-16 09:55:14 [launcher.py:34] Route: /pooling",
                "INFO 06-16 09:55:14 [launcher.py:34] Route: /pooling",
            ),
            ("tabbyapi-1  | 2025-03-14 11:05:29.634 ERROR: boom", "2025-03-14 11:05:29.634 ERROR: boom"),
            (
                "[llama-cpp] | Exception: Requested tokens (2285) exceed context window of 2048",
                "Exception: Requested tokens (2285) exceed context window of 2048",
            ),
            (
                "Jun 18 10:21:37 node.example python[14750]: llama_context: graph nodes  = 2886",
                "llama_context: graph nodes  = 2886",
            ),
            ("Jan  5 01:02:03 host ollama[99]: time=x level=ERROR msg=boom", "time=x level=ERROR msg=boom"),
            (
                "2024-05-01T10:00:00.123456789Z stderr F ERROR 05-01 10:00:00 x.py:1] boom",
                "ERROR 05-01 10:00:00 x.py:1] boom",
            ),
            (
                "2025-01-19 19:58:17 time=2025-01-19T17:58:17.608+08:00 level=ERROR msg=x",
                "time=2025-01-19T17:58:17.608+08:00 level=ERROR msg=x",
            ),
            ("[pod/vllm-0/engine] ERROR 05-01 boom", "ERROR 05-01 boom"),
            ("**RuntimeError: CUDA error: out of memory**", "RuntimeError: CUDA error: out of memory"),
            (
                "`[2024-03-16 13:38:14.615] [INFO] [LM STUDIO SERVER] Context",
                "[2024-03-16 13:38:14.615] [INFO] [LM STUDIO SERVER] Context",
            ),
            (
                "`400: {'error': 'Invalid model name. Call `/v1/models` to view'}`",
                "400: {'error': 'Invalid model name. Call `/v1/models` to view'}",
            ),
            ("```text", ""),
            ("# TYPE vllm:num_requests_waiting gauge", "# TYPE vllm:num_requests_waiting gauge"),
            ("# gpu    pwr  gtemp", "# gpu    pwr  gtemp"),
            ("CUDA error: out of memory</span></pre></body></html>", "CUDA error: out of memory"),
            (
                "<span class=\"x\">msg=&quot;llama runner terminated&quot; &lt;none&gt;</span>",
                "msg=\"llama runner terminated\" <none>",
            ),
        ];
        for (damaged, clean) in cases {
            assert_eq!(one(damaged), clean, "{damaged}");
        }
        // Python's own angle brackets and `**kwargs` stay.
        assert_eq!(one("  File \"x.py\", line 1, in <module>"), "  File \"x.py\", line 1, in <module>");
        assert_eq!(one("    return func(*args, **kwargs)"), "    return func(*args, **kwargs)");
    }

    #[test]
    fn wrapped_and_glued_lines_come_apart() {
        let docker = r#"{"log":"ERROR 05-01 10:00:00 x.py:1] boom\nTraceback (most recent call last):\n","stream":"stderr","time":"2024-05-01T10:00:00Z"}"#;
        assert_eq!(one(docker), "ERROR 05-01 10:00:00 x.py:1] boom\nTraceback (most recent call last):");
        let pino = r#"{"level":50,"time":1,"msg":"time=2025 level=ERROR source=server.go:449 msg=\"llama runner terminated\" error=\"exit status 0xc0000409\"\n"}"#;
        assert_eq!(
            one(pino),
            r#"time=2025 level=ERROR source=server.go:449 msg="llama runner terminated" error="exit status 0xc0000409""#
        );
        let app = r#"{"level":"error","ts":"x","message":"CUDA out of memory"}"#;
        assert_eq!(one(app), "ERROR CUDA out of memory");
        let tqdm = "  0%|          | 0/50 [00:00<?, ?it/s]Token indices sequence length is longer";
        assert_eq!(
            one(tqdm),
            "  0%|          | 0/50 [00:00<?, ?it/s]\nToken indices sequence length is longer"
        );
        let merged = "2024-11-15T06:11:47.441Z [APP]::Process exited with code null2024-11-15T06:11:47.441Z [APP]::Restarting process in 5000ms";
        assert_eq!(
            one(merged),
            "2024-11-15T06:11:47.441Z [APP]::Process exited with code null\n2024-11-15T06:11:47.441Z [APP]::Restarting process in 5000ms"
        );
        assert_eq!(one("a\rINFO b"), "a\nINFO b");
    }

    #[test]
    fn hostile_lines_do_not_panic() {
        for l in [
            "{\"log\":\"\\u",
            "{\"log\":\"\\",
            "│",
            "> ",
            "`",
            "<",
            "&amp",
            "Jun ",
            "2024-05-01T10:00:00",
            "{\"msg\":",
            "é│é│",
            "| é",
            "**",
            "<span",
        ] {
            let _ = one(l);
        }
    }
}
