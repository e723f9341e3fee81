//! Text that came from outside, made safe to show: secrets redacted, then cut, then escaped.
//!
//! Every string a server, a log or a plugin handed us goes through this module before a person
//! sees it, in this order:
//!
//! 1. **Redact** ([`Secrets::redact`]): the exact secrets the user gave us (API key, every
//!    `--header` value) and anything shaped like a credential ([`redact_patterns`]: `sk-…`,
//!    `Bearer …`, `?key=`, `user:password@`) become `***`.
//! 2. **Cut** ([`Secrets::excerpt`], [`cut`]): shortened for quoting. Redaction runs first, so
//!    a key that straddles the cut leaks none of its characters.
//! 3. **Escape** ([`escape_controls`], [`escape_json_controls`]) at the moment of printing:
//!    control characters (ESC, BEL, BS, C1 such as U+009B CSI, bidirectional overrides) are
//!    shown as `\x1b`, `\u009b`, so no quoted byte can retitle, clear or recolour a terminal.
//!
//! Hosts apply step 3 at their single output point (the CLI's and runner's `print`), so it
//! holds for every line they write, quoted or not.

use std::borrow::Cow;

/// Secrets shorter than this are not searched for: they would mangle ordinary text, and real
/// keys are longer.
pub const MIN_SECRET_LEN: usize = 4;

/// The exact secrets of one run (an API key, header values), plus the credential patterns every
/// outside string is checked for.
#[derive(Clone, Debug, Default)]
pub struct Secrets {
    /// Longest first, so a secret that contains another is replaced whole.
    exact: Vec<String>,
}

impl Secrets {
    /// No secrets yet; [`Secrets::redact`] still masks credential-shaped words.
    pub fn new() -> Secrets {
        Secrets::default()
    }

    /// Remember `secret` (trimmed). A header value such as `Bearer abc…` also adds its last
    /// word, since servers echo the token without the scheme.
    pub fn add(&mut self, secret: &str) {
        let s = secret.trim();
        for candidate in [Some(s), s.rsplit_once(' ').map(|(_, last)| last)].into_iter().flatten() {
            if candidate.len() >= MIN_SECRET_LEN && !self.exact.iter().any(|e| e == candidate) {
                self.exact.push(candidate.to_owned());
            }
        }
        crate::sort::sort_by_key(&mut self.exact, |e| std::cmp::Reverse(e.len()));
    }

    /// HTTP basic auth: the password, `user:password` and the header value the run sends
    /// (`Basic` + base64 of `user:password`) — a server that echoes the header quotes that.
    pub fn add_basic(&mut self, user: &str, password: &str) {
        self.add(password);
        self.add(&format!("{user}:{password}"));
        self.add(&basic_credential(user, password));
    }

    /// Builder form of [`Secrets::add`].
    pub fn with(mut self, secret: &str) -> Secrets {
        self.add(secret);
        self
    }

    /// True when no exact secret was added.
    pub fn is_empty(&self) -> bool {
        self.exact.is_empty()
    }

    /// `text` with every known secret and every credential-shaped word replaced by `***`.
    /// Borrowed when nothing was found.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for secret in &self.exact {
            if out.contains(secret.as_str()) {
                out = Cow::Owned(out.replace(secret.as_str(), "***"));
            }
        }
        match redact_patterns(&out) {
            Cow::Borrowed(_) => out,
            Cow::Owned(s) => Cow::Owned(s),
        }
    }

    /// [`Secrets::redact`] for text that was cut *before* it reached us (a body's first 512
    /// bytes): a trailing fragment of four or more characters that starts a known secret is
    /// redacted too, so a key straddling that earlier cut leaks nothing.
    pub fn redact_truncated<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = self.redact(text);
        for secret in &self.exact {
            let longest = (MIN_SECRET_LEN..secret.len())
                .rev()
                .filter(|&n| secret.is_char_boundary(n))
                .find(|&n| out.ends_with(&secret[..n]));
            if let Some(n) = longest {
                let keep = out.len() - n;
                out = Cow::Owned(format!("{}***", &out[..keep]));
            }
        }
        out
    }

    /// Up to `max_chars` characters of `text` on one line (whitespace runs become one space),
    /// redacted before it is cut.
    pub fn excerpt(&self, text: &str, max_chars: usize) -> String {
        let redacted = self.redact(text);
        let one_line: String = redacted.split_whitespace().collect::<Vec<_>>().join(" ");
        cut(&one_line, max_chars)
    }
}

/// The credential of an `Authorization: Basic` header: standard base64 (with padding) of
/// `user:password`.
pub fn basic_credential(user: &str, password: &str) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let raw = format!("{user}:{password}");
    let mut out = String::with_capacity(raw.len().div_ceil(3) * 4);
    for chunk in raw.as_bytes().chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A `Basic` header's value: base64 of eight characters or more, with a digit or `+/=` (so
/// `Basic usage` in prose stays).
fn basic_value(v: &str) -> bool {
    v.len() >= 8
        && v.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'='))
        && v.bytes().any(|c| c.is_ascii_digit() || matches!(c, b'+' | b'/' | b'='))
}

/// Redact with the credential patterns only (no exact secrets known).
pub fn redact(text: &str) -> Cow<'_, str> {
    redact_patterns(text)
}

/// `text` cut to at most `max_chars` characters, with `…` when something was cut. Only ever
/// call it on text that is already redacted.
pub fn cut(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

/// Is `c` a character a terminal may act on: C0 controls other than newline and tab, DEL, C1
/// controls, and the invisible formatting characters that reorder or hide text (bidi embeddings,
/// overrides and isolates, zero-width marks).
pub fn is_unsafe_char(c: char) -> bool {
    matches!(c,
        '\0'..='\x08' | '\x0b'..='\x1f' | '\x7f' | '\u{80}'..='\u{9f}'
        | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
}

/// `s` with every unsafe character ([`is_unsafe_char`]) written as an escape: C0 and DEL as
/// `\x1b`, the rest as `\u009b`. Newlines and tabs stay. Borrowed when there is nothing to do.
pub fn escape_controls(s: &str) -> Cow<'_, str> {
    escape_with(s, |c, out| {
        let n = c as u32;
        if n < 0x80 {
            out.push_str(&format!("\\x{n:02x}"));
        } else {
            out.push_str(&format!("\\u{n:04x}"));
        }
    })
}

/// Serialised JSON made safe for a terminal without changing the value it encodes: the unsafe
/// characters `serde_json` writes raw (DEL, C1, bidi controls) become `\u00XX` escapes, which
/// JSON readers decode back to the same character. C0 controls are already escaped by
/// `serde_json`; raw ones outside strings would not be JSON.
pub fn escape_json_controls(json: &str) -> Cow<'_, str> {
    escape_with(json, |c, out| out.push_str(&format!("\\u{:04x}", c as u32)))
}

fn escape_with(s: &str, write: impl Fn(char, &mut String)) -> Cow<'_, str> {
    // Fast path: the unsafe characters are ASCII controls or start with 0xC2 (U+0080–U+009F),
    // 0xE2 (U+2000–U+2FFF) or 0xEF (U+FEFF).
    let b = s.as_bytes();
    if !b
        .iter()
        .any(|&x| x < 0x20 && x != b'\n' && x != b'\t' || x == 0x7f || x == 0xc2 || x == 0xe2 || x == 0xef)
    {
        return Cow::Borrowed(s);
    }
    if !s.chars().any(is_unsafe_char) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if is_unsafe_char(c) {
            write(c, &mut out);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Characters that end a token when redacting (`sk-…` inside JSON, URLs, shell words).
fn token_end(c: char) -> bool {
    c.is_whitespace() || matches!(c, '"' | '\'' | ',' | '}' | ']' | ')' | '&' | ';' | '`')
}

/// Longest query-parameter name [`redact_patterns`] reads (`?api_key=`, `&x-goog-api-key=`).
pub(crate) const MAX_PARAM_NAME: usize = 256;

/// The first position at or after a given one where a character matches (or the line's end),
/// remembering the stretch `lo..hi` known to hold no match before `hi`: asked again from inside
/// it, the answer is known; asked from further right, only new text is searched. Linear over a
/// line when the starting points only move right.
struct NextHit {
    lo: usize,
    hi: usize,
}

impl NextHit {
    fn new(line: &str) -> NextHit {
        NextHit { lo: line.len(), hi: line.len() }
    }

    /// `from` is a char boundary of `line`, at most its length.
    fn find(&mut self, line: &str, from: usize, hit: impl Fn(char) -> bool) -> usize {
        if (self.lo..=self.hi).contains(&from) {
            return self.hi;
        }
        // Left of the known stretch only the gap needs searching; right of it, the rest.
        let limit = if from < self.lo { self.lo } else { line.len() };
        let found = line.get(from..limit).and_then(|s| s.find(&hit)).map(|e| from + e);
        match found {
            Some(at) => self.hi = at,
            None if from < self.lo => {}
            None => self.hi = line.len(),
        }
        self.lo = from;
        self.hi
    }
}

/// Replace what looks like a credential anywhere in `line` with `***`: `sk-…` keys, `Bearer …`
/// tokens, `key=`/`token=` query parameters, `user:password@` in URLs. Borrowed when nothing was
/// found. Every line the analyzer quotes goes through it (`analyze::text::quote_redacted`), and
/// a client config's lines after [`redact_spans`], so a key in an unexpected place (an
/// `http_headers` table, a URL) is not quoted either.
pub fn redact_patterns(line: &str) -> Cow<'_, str> {
    // Most lines hold none of the places a secret starts: say so with SIMD searches.
    let b = line.as_bytes();
    if memchr::memchr2(b'?', b'&', b).is_none()
        && crate::finder!("sk-").find(b).is_none()
        && crate::finder!("earer ").find(b).is_none()
        && crate::finder!("asic ").find(b).is_none()
        && crate::finder!("://").find(b).is_none()
    {
        return Cow::Borrowed(line);
    }
    let mut out = String::new();
    let mut copied = 0;
    let mut i = 0;
    let b = line.as_bytes();
    // Every candidate looks ahead (to its value's end, to a parameter's `=`); on a long line of
    // candidates (`sk-$sk-$…`, `????…`) looking afresh each time is quadratic. Each kind of
    // look-ahead starts further right as `i` moves on, so its last answer is remembered.
    let mut key_end = NextHit::new(line);
    let mut param_end = NextHit::new(line);
    let mut name_end = NextHit::new(line);
    while i < b.len() {
        let rest = &line[i..];
        let boundary = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_' || b[i - 1] == b'-');
        let (skip, ends) = if boundary && rest.starts_with("sk-") {
            (Some(3), &mut key_end)
        } else if rest.starts_with("Bearer ") || rest.starts_with("bearer ") {
            (Some(7), &mut key_end)
        } else if (rest.starts_with("Basic ") || rest.starts_with("basic "))
            && basic_value(&rest[6..rest[6..].find(token_end).map_or(rest.len(), |e| 6 + e)])
        {
            (Some(6), &mut key_end)
        } else if b[i] == b'?' || b[i] == b'&' {
            // The parameter's name runs to the first of `=&" ` and must end at `=`; names longer
            // than `MAX_PARAM_NAME` are not parameters (and would make every `?` cost a long copy).
            let e = name_end.find(line, i + 1, |c| matches!(c, '=' | '&' | ' ' | '"')) - i;
            let name =
                (b.get(i + e) == Some(&b'=') && e <= MAX_PARAM_NAME).then(|| rest[1..e].to_ascii_lowercase());
            let skip = name.and_then(|name| {
                (name == "key" || name == "token" || is_secret_name(&name) || name.ends_with("key"))
                    .then_some(e + 1)
            });
            (skip, &mut param_end)
        } else {
            (None, &mut key_end)
        };
        if let Some(skip) = skip {
            let start = i + skip;
            let end = ends.find(line, start, token_end);
            // Too short to be a credential (`sk-` in prose, `Bearer` followed by a variable).
            if end - start >= 3 && !line[start..end].starts_with('$') && &line[start..end] != "***" {
                out.push_str(&line[copied..start]);
                out.push_str("***");
                copied = end;
                i = end;
                continue;
            }
        }
        i += rest.chars().next().map_or(1, char::len_utf8);
    }
    // `scheme://user:password@host`
    let mut s = if copied == 0 {
        Cow::Borrowed(line)
    } else {
        out.push_str(&line[copied..]);
        Cow::Owned(out)
    };
    if let Some(p) = s.find("://") {
        let auth_end = s[p + 3..].find(['/', '"', '\'', ' ']).map_or(s.len(), |e| p + 3 + e);
        if let Some(at) = s[p + 3..auth_end].rfind('@')
            && let Some(colon) = s[p + 3..p + 3 + at].find(':')
        {
            let (from, to) = (p + 3 + colon + 1, p + 3 + at);
            if &s[from..to] != "***" {
                s = Cow::Owned(format!("{}***{}", &s[..from], &s[to..]));
            }
        }
    }
    s
}

/// `line` with the byte `spans` a parser found a secret's value in (`"ANTHROPIC_AUTH_TOKEN":
/// "…"`, `api_key = …`) each replaced by `***`, then [`redact_patterns`] over the rest; and
/// whether anything was redacted. Spans that are empty, out of the line or not on character
/// boundaries are skipped, and a span starting inside the one before it is dropped, so a
/// parser's spans can never make the function panic or quote half a secret.
pub fn redact_spans(line: &str, mut spans: Vec<(usize, usize)>) -> (String, bool) {
    spans.retain(|&(s, e)| s < e && e <= line.len() && line.is_char_boundary(s) && line.is_char_boundary(e));
    crate::sort::sort(&mut spans);
    spans.dedup_by(|b, a| b.0 < a.1);
    let mut cut = String::with_capacity(line.len());
    let mut from = 0;
    for (s, e) in &spans {
        cut.push_str(&line[from..*s]);
        cut.push_str("***");
        from = *e;
    }
    cut.push_str(&line[from..]);
    let redacted = redact_patterns(&cut);
    let any = !spans.is_empty() || matches!(redacted, Cow::Owned(_));
    (redacted.into_owned(), any)
}

/// A setting or parameter name (lower case, `-` as `_`) that holds a credential.
pub fn is_secret_name(k: &str) -> bool {
    k.ends_with("api_key")
        || k.ends_with("apikey")
        || k.ends_with("auth_token")
        || k.ends_with("_token")
        || k == "token"
        || k.contains("secret")
        || k.contains("password")
        || k == "authorization"
        || k == "x_api_key"
}

/// Quote a line that came from outside: secrets redacted first, then shortened (a key that
/// straddles the cut leaks nothing).
pub fn quote_redacted(line: &str) -> String {
    quote(&redact_patterns(line))
}

/// Shorten a line for quoting as evidence.
pub fn quote(line: &str) -> String {
    const MAX: usize = 300;
    let t = line.trim();
    if t.len() <= MAX {
        return t.to_owned();
    }
    match t.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &t[..i]),
        None => t.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_auth_is_a_credential_shape_and_an_exact_secret() {
        assert_eq!(basic_credential("admin", "s3cret-password-42"), "YWRtaW46czNjcmV0LXBhc3N3b3JkLTQy");
        assert_eq!(basic_credential("a", "b"), "YTpi");
        assert_eq!(basic_credential("ab", "cd"), "YWI6Y2Q=");
        // Echoed back by a server, in a header line or JSON: redacted by shape alone.
        for echoed in [
            "Authorization: Basic YWRtaW46czNjcmV0LXBhc3N3b3JkLTQy",
            r#"{"error":"denied for basic YWRtaW46czNjcmV0LXBhc3N3b3JkLTQy"}"#,
        ] {
            let r = redact_patterns(echoed);
            assert!(!r.contains("YWRtaW46"), "{r}");
        }
        // Prose keeps its words.
        assert_eq!(redact_patterns("Basic usage: see the docs"), "Basic usage: see the docs");
        // The run's own encoded credential is an exact secret, whatever precedes it.
        let mut s = Secrets::new();
        s.add_basic("admin", "s3cret-password-42");
        let r = s.redact("echo:YWRtaW46czNjcmV0LXBhc3N3b3JkLTQy and admin:s3cret-password-42");
        assert!(!r.contains("YWRtaW46") && !r.contains("s3cret"), "{r}");
    }

    #[test]
    fn a_key_straddling_the_cut_leaks_nothing() {
        let key = "sk-live-0123456789abcdefghij";
        let s = Secrets::new().with(key);
        for pad in 0..60 {
            let text = format!("{}{key} and more", "x".repeat(pad));
            let e = s.excerpt(&text, 40);
            assert!(!e.contains("sk-l") && !e.contains("0123"), "{pad}: {e}");
        }
        // Without the key known, the pattern still catches it.
        assert!(!Secrets::new().excerpt(&format!("{}{key}", "x ".repeat(10)), 24).contains("sk-l"));
    }

    #[test]
    fn a_key_cut_before_it_reached_us_is_redacted_too() {
        let s = Secrets::new().with("abcdefgh12345678");
        assert_eq!(s.redact_truncated("body: abcdefgh1"), "body: ***");
        assert_eq!(s.redact_truncated("body: abc"), "body: abc");
    }

    #[test]
    fn header_values_and_their_tokens_are_secrets() {
        let s = Secrets::new().with("Bearer tok_ABCDEFGH").with("abc");
        assert_eq!(s.redact("echo: Bearer tok_ABCDEFGH"), "echo: ***");
        assert_eq!(s.redact("token was tok_ABCDEFGH."), "token was ***.");
        // Too short to search for.
        assert_eq!(s.redact("abc"), "abc");
        assert_eq!(Secrets::new().with("ab").redact("abc"), "abc");
        let key = Secrets::new().with("sk-abcdef123");
        assert_eq!(key.redact("auth failed for sk-abcdef123"), "auth failed for ***");
    }

    #[test]
    fn controls_are_escaped_and_text_is_kept() {
        assert_eq!(escape_controls("plain\ttext\n"), "plain\ttext\n");
        assert!(matches!(escape_controls("中文 ok"), Cow::Borrowed(_)));
        assert_eq!(escape_controls("\x1b]0;pwned\x07\x08"), "\\x1b]0;pwned\\x07\\x08");
        assert_eq!(escape_controls("a\u{9b}31mb\u{202e}c\x7f\r"), "a\\u009b31mb\\u202ec\\x7f\\x0d");
        let json = serde_json::to_string("x\u{9b}y\u{7f}\u{1b}").unwrap();
        let safe = escape_json_controls(&json);
        assert!(!safe.chars().any(is_unsafe_char), "{safe}");
        assert_eq!(serde_json::from_str::<String>(&safe).unwrap(), "x\u{9b}y\u{7f}\u{1b}");
    }

    #[test]
    fn patterns() {
        assert_eq!(
            redact("url https://u:pw@h/x?api_key=abcdef&b=1"),
            "url https://u:***@h/x?api_key=***&b=1"
        );
        assert_eq!(redact("Authorization: Bearer abc.def"), "Authorization: Bearer ***");
        assert!(matches!(redact("nothing here"), Cow::Borrowed(_)));
    }

    /// A parser's spans are cut whatever they are: overlapping, reversed, past the end, inside a
    /// character; the patterns still run over the rest.
    #[test]
    fn spans_are_cut_then_patterns_run() {
        let line = r#""api_key": "k123", "x": "Bearer abcdef", "n": "你好""#;
        let (s, any) = redact_spans(line, vec![(12, 16), (13, 15), (40, 30), (0, 999), (50, 51)]);
        assert_eq!(s, r#""api_key": "***", "x": "Bearer ***", "n": "你好""#);
        assert!(any);
        assert_eq!(redact_spans("plain", Vec::new()), ("plain".to_owned(), false));
        assert_eq!(redact_spans("a = 1234", vec![(4, 8)]), ("a = ***".to_owned(), true));
    }

    /// What a client config holds: tokens, keys in quoted values (any script), URL credentials.
    #[test]
    fn patterns_in_settings() {
        assert_eq!(redact_patterns("Authorization: Bearer abcdef123"), "Authorization: Bearer ***");
        assert_eq!(redact_patterns(r#""k": "sk-你的TaoToken密钥""#), r#""k": "sk-***""#);
        assert_eq!(
            redact_patterns("https://u:pw@h.example/v1?api_key=abc123&x=1"),
            "https://u:***@h.example/v1?api_key=***&x=1"
        );
        assert_eq!(redact_patterns("ask-me about sk-"), "ask-me about sk-");
        assert!(matches!(redact_patterns("plain text"), Cow::Borrowed(_)));
    }

    /// Fuzzing found long lines of candidates that are not credentials taking seconds: each `sk-`
    /// and `?` searched to the end of the line again. At this size the old code took minutes.
    #[test]
    fn redaction_is_linear_on_long_lines_of_candidates() {
        for unit in ["sk-$", "?key=$", "????", "&&&&", "?k?k", "Bearer $"] {
            let line = unit.repeat(100_000);
            assert_eq!(redact_patterns(&line), line, "{unit}");
        }
        let line = format!("{}?key={}", "?".repeat(100_000), "x".repeat(100_000));
        assert_eq!(redact_patterns(&line), format!("{}?key=***", "?".repeat(100_000)));
        // A query-parameter name is short; a very long one is not read as one.
        let long = format!("?{}key=abcdef", "a".repeat(MAX_PARAM_NAME));
        assert_eq!(redact_patterns(&long), long);
        let short = format!("?{}key=abcdef", "a".repeat(MAX_PARAM_NAME - 4));
        assert!(redact_patterns(&short).ends_with("key=***"));
    }
}
