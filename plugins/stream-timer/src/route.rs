//! Which requests are LLM streams: path patterns on the request, `content-type` on the response.
//!
//! A pattern is a path where `*` matches any run of bytes (slashes included); the query string
//! is ignored. Matching is linear in the path for the common one-star patterns and never
//! allocates, so requests on other routes cost a header read and a few byte comparisons.

use crate::config::Route;
use std::fmt;

/// A parsed path pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pattern {
    text: String,
}

/// Why a pattern was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatternError {
    Empty,
    NoLeadingSlash,
    TooLong,
    TooManyStars,
    HasQuery,
}

impl fmt::Display for PatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PatternError::Empty => "a path pattern must not be empty",
            PatternError::NoLeadingSlash => "a path pattern must start with '/' or '*'",
            PatternError::TooLong => "a path pattern is at most 256 bytes",
            PatternError::TooManyStars => "a path pattern has at most 4 '*'",
            PatternError::HasQuery => "a path pattern cannot hold '?' (the query string is ignored)",
        })
    }
}

impl Pattern {
    pub fn parse(text: &str) -> Result<Pattern, PatternError> {
        if text.is_empty() {
            return Err(PatternError::Empty);
        }
        if !(text.starts_with('/') || text.starts_with('*')) {
            return Err(PatternError::NoLeadingSlash);
        }
        if text.len() > 256 {
            return Err(PatternError::TooLong);
        }
        if text.bytes().filter(|&b| b == b'*').count() > 4 {
            return Err(PatternError::TooManyStars);
        }
        if text.contains('?') {
            return Err(PatternError::HasQuery);
        }
        Ok(Pattern { text: text.to_owned() })
    }

    /// Matches every path.
    pub fn any() -> Pattern {
        Pattern { text: "*".to_owned() }
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Does `path` (query string already removed) match?
    pub fn matches(&self, path: &[u8]) -> bool {
        glob(self.text.as_bytes(), path)
    }
}

/// Classic star-only glob with single backtrack point: O(|pattern| · |path|) worst case,
/// linear for one star.
fn glob(pat: &[u8], s: &[u8]) -> bool {
    let (mut p, mut i) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while i < s.len() {
        if p < pat.len() && pat[p] == b'*' {
            star = Some((p, i));
            p += 1;
        } else if p < pat.len() && pat[p] == s[i] {
            p += 1;
            i += 1;
        } else if let Some((sp, si)) = star {
            p = sp + 1;
            i = si + 1;
            star = Some((sp, si + 1));
        } else {
            return false;
        }
    }
    pat[p..].iter().all(|&b| b == b'*')
}

/// The path without its query string or fragment.
pub fn strip_query(path: &[u8]) -> &[u8] {
    match path.iter().position(|&b| b == b'?' || b == b'#') {
        Some(i) => &path[..i],
        None => path,
    }
}

/// The index of the first route whose patterns match `path` (query ignored).
pub fn match_route(routes: &[Route], path: &[u8]) -> Option<usize> {
    let path = strip_query(path);
    routes.iter().position(|r| r.patterns.iter().any(|p| p.matches(path)))
}

/// `content-type: text/event-stream` (any case, parameters allowed).
pub fn is_event_stream(content_type: &[u8]) -> bool {
    const WANT: &[u8] = b"text/event-stream";
    let ct = content_type.trim_ascii_start();
    ct.len() >= WANT.len()
        && ct[..WANT.len()].eq_ignore_ascii_case(WANT)
        && ct[WANT.len()..].first().is_none_or(|&b| b == b';' || b == b' ' || b == b'\t')
}

/// The `:status` header as a number (`None` when absent or not three digits).
pub fn parse_status(value: &[u8]) -> Option<u16> {
    let v = value.trim_ascii();
    if v.len() != 3 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(v.iter().fold(0u16, |a, d| a * 10 + u16::from(d - b'0')))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Settings;

    #[test]
    fn glob_matching() {
        let p = |s: &str| Pattern::parse(s).unwrap();
        assert!(p("*/chat/completions").matches(b"/v1/chat/completions"));
        assert!(p("*/chat/completions").matches(b"/openai/deployments/x/chat/completions"));
        assert!(!p("*/chat/completions").matches(b"/v1/chat/completions/x"));
        assert!(p("/v1/*").matches(b"/v1/"));
        assert!(p("/v1/*/messages").matches(b"/v1/a/b/messages"));
        assert!(!p("/v1/*/messages").matches(b"/v1/messages"));
        assert!(p("*").matches(b""));
        assert!(p("/a*b*c").matches(b"/aXXbYYc"));
        assert!(!p("/a*b*c").matches(b"/aXXbYY"));
        assert!(p("/exact").matches(b"/exact"));
        assert!(!p("/exact").matches(b"/exactly"));
        assert_eq!(Pattern::parse("v1"), Err(PatternError::NoLeadingSlash));
        assert_eq!(Pattern::parse(""), Err(PatternError::Empty));
        assert_eq!(Pattern::parse("/*/*/*/*/*"), Err(PatternError::TooManyStars));
        assert_eq!(Pattern::parse("/a?b"), Err(PatternError::HasQuery));
        // Pathological input stays fast (bounded stars, quadratic at worst).
        let long = vec![b'a'; 100_000];
        assert!(!p("*a*a*a*b").matches(&long));
    }

    #[test]
    fn default_routes() {
        let s = Settings::default();
        assert_eq!(match_route(&s.routes, b"/v1/chat/completions?x=1"), Some(0));
        assert_eq!(match_route(&s.routes, b"/v1/completions"), Some(1));
        assert_eq!(match_route(&s.routes, b"/v1/responses"), Some(2));
        assert_eq!(match_route(&s.routes, b"/v1/messages#f"), Some(3));
        assert_eq!(match_route(&s.routes, b"/v1/models"), None);
        assert_eq!(match_route(&s.routes, b"/healthz"), None);
        assert_eq!(match_route(&s.routes, b""), None);
    }

    #[test]
    fn content_type_and_status() {
        assert!(is_event_stream(b"text/event-stream"));
        assert!(is_event_stream(b"Text/Event-Stream; charset=utf-8"));
        assert!(!is_event_stream(b"text/event-streamx"));
        assert!(!is_event_stream(b"application/json"));
        assert!(!is_event_stream(b""));
        assert_eq!(parse_status(b"200"), Some(200));
        assert_eq!(parse_status(b" 429 "), Some(429));
        assert_eq!(parse_status(b"2000"), None);
        assert_eq!(parse_status(b"abc"), None);
    }
}
