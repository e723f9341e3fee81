//! `key: value` and `key = value` lines, several to a line: `Mean TTFT (ms): 12.5`,
//! `eval rate: 23.98 tokens/s`, `Process:34.76s (3.0ms/T = 338.83T/s), Generate:9.61s`,
//! `prompt eval time = 146712.89 ms / 1294 tokens (113.38 ms per token)`,
//! `first_token latency(min, max, ave): 5.57s, 11.93s, 11.12s`,
//! `10367 prompt tok, 5642.4 prefill tok/s, ttft 1837ms`, `wall=  4.85s  ttft=    55ms`.
//!
//! A line is cut into tokens (words, numbers with their units, separators); each number takes
//! the words before it as its key — or, written value first (`10367 prompt tok`), the words
//! after it — and the vocabulary ([`super::vocab`]) names the figure.

use super::vocab::{Unit, cell_number, figure, leading, metric, normal, stat, unit};

/// Most figures read from one line.
const MAX_PER_LINE: usize = 24;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Tok<'a> {
    Word(&'a str),
    Num(f64, Unit),
    /// `,` `;` `|`: a new key follows.
    Reset,
    /// `:` `=`: the key before it is complete.
    Assign,
    Open,
    Close,
    /// `/` between two figures of one key (`146712.89 ms / 1294 tokens`).
    Slash,
}

/// Leading timestamps and bracketed tags (`2024/07/11 23:37:56`, `[bench]`): not keys.
fn strip_prefix(t: &str) -> &str {
    let mut rest = t.trim_start();
    for _ in 0..4 {
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let tok = &rest[..end];
        let stamp = !tok.is_empty()
            && tok.starts_with(|c: char| c.is_ascii_digit())
            && tok.chars().all(|c| c.is_ascii_digit() || "/-:.,TZ+".contains(c))
            && tok.chars().any(|c| "/-:".contains(c));
        let tag = tok.starts_with('[') && tok.ends_with(']') && tok.len() <= 24;
        if stamp || tag {
            rest = rest[end..].trim_start();
        } else {
            break;
        }
    }
    rest
}

fn tokens(t: &str) -> Vec<Tok<'_>> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    fn flush<'a>(out: &mut Vec<Tok<'a>>, s: &'a str) {
        if s.is_empty() {
            return;
        }
        if s == "/" {
            out.push(Tok::Slash);
            return;
        }
        if let Some(u) = unit(s) {
            // A unit alone (`ms`, `(s)`): it belongs to the number before it, or to the key.
            out.push(Tok::Num(f64::NAN, u));
            return;
        }
        match leading(s) {
            Some((v, "")) => out.push(Tok::Num(v, Unit::None)),
            Some((v, rest)) => match unit(rest) {
                Some(Unit::Percent) => out.push(Tok::Word(s)),
                Some(u) => out.push(Tok::Num(v, u)),
                None => out.push(Tok::Word(s)),
            },
            None => out.push(Tok::Word(s)),
        }
    }
    for (i, c) in t.char_indices() {
        let sep = match c {
            ',' | ';' | '|' => Some(Tok::Reset),
            ':' | '=' | '：' => Some(Tok::Assign),
            '(' | '[' => Some(Tok::Open),
            ')' | ']' => Some(Tok::Close),
            c if c.is_whitespace() => None,
            _ => {
                start.get_or_insert(i);
                continue;
            }
        };
        if let Some(s) = start.take() {
            flush(&mut out, &t[s..i]);
        }
        if let Some(sep) = sep {
            out.push(sep);
        }
        if out.len() > 256 {
            break;
        }
    }
    if let Some(s) = start.take() {
        flush(&mut out, &t[s..]);
    }
    out
}

/// `first_token latency(min, max, ave): 5.57s, 11.93s, 11.12s`: one key, a list of statistics,
/// as many values.
fn stat_list(t: &str, out: &mut Vec<(String, f64)>) -> bool {
    let Some(colon) = t.find(':') else { return false };
    let (key, values) = (&t[..colon], &t[colon + 1..]);
    let (Some(open), true) = (key.find('('), key.trim_end().ends_with(')')) else { return false };
    let inner = &key.trim_end()[open + 1..key.trim_end().len() - 1];
    let stats: Vec<&str> = inner.split(',').map(str::trim).collect();
    if stats.len() < 2 || stats.iter().any(|s| stat(&s.to_ascii_lowercase()) == "value") {
        return false;
    }
    let vals: Vec<&str> = values.split(',').map(str::trim).collect();
    if vals.len() != stats.len() {
        return false;
    }
    let base = normal(&key[..open]);
    let Some(m) = metric(&base) else { return true };
    for (s, v) in stats.iter().zip(vals) {
        if let Some((v, u)) = cell_number(v)
            && let Some(f) = figure(m, stat(&s.to_ascii_lowercase()), u, v)
        {
            out.push(f);
        }
    }
    true
}

/// The figures of one line, in order (`(name, value)`; see [`super::TableFacts`]).
pub(crate) fn figures(line: &str) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    let t = strip_prefix(line);
    if !t.contains([':', '=', '：']) && !t.contains(',') {
        // `ttft 1837ms` alone is still a figure; a line without a digit is not.
        if !t.bytes().any(|b| b.is_ascii_digit()) {
            return out;
        }
    }
    if stat_list(t, &mut out) {
        return out;
    }
    let toks = tokens(t);
    let mut key: Vec<&str> = Vec::new();
    let mut key_unit = Unit::None;
    // The key is complete (`:` or `=` came): the next word starts a new one.
    let mut closed = false;
    // The key of the last figure (a `/` or a `(` after it keeps it).
    let mut last: Option<(Vec<&str>, Unit)> = None;
    let mut outer: Vec<Option<(Vec<&str>, Unit)>> = Vec::new();
    let mut i = 0;
    while i < toks.len() && out.len() < MAX_PER_LINE {
        match toks[i] {
            Tok::Word(w) => {
                if closed {
                    key.clear();
                    key_unit = Unit::None;
                    closed = false;
                }
                if key.len() < 12 {
                    key.push(w);
                }
            }
            Tok::Reset => {
                key.clear();
                key_unit = Unit::None;
                closed = false;
                last = None;
            }
            Tok::Assign => closed = true,
            Tok::Open => {
                outer.push(if key.is_empty() { last.clone() } else { Some((key.clone(), key_unit)) });
            }
            Tok::Close => {
                outer.pop();
            }
            Tok::Slash => {}
            Tok::Num(v, u) if v.is_nan() => {
                // A unit without a number: the key's unit (`Mean TTFT (ms):`).
                key_unit = u;
            }
            Tok::Num(v, mut u) => {
                // A unit written apart (`196 ms`, `113.38 ms per token`).
                let mut j = i + 1;
                if u == Unit::None {
                    let words: Vec<&str> = toks[j..]
                        .iter()
                        .take(3)
                        .map_while(|t| match t {
                            Tok::Word(w) => Some(*w),
                            Tok::Num(x, _) if x.is_nan() => Some(""),
                            _ => None,
                        })
                        .collect();
                    if let Some(Tok::Num(x, u2)) = toks.get(j)
                        && x.is_nan()
                    {
                        u = *u2;
                        j += 1;
                        // `ms per token`
                        if u == Unit::Time(1.0) || u == Unit::Time(1e3) {
                            let per = matches!(toks.get(j), Some(Tok::Word("per")));
                            let token = match toks.get(j + 1) {
                                Some(Tok::Num(x, Unit::Tokens)) => x.is_nan(),
                                Some(Tok::Word(w)) => w.starts_with("tok"),
                                _ => false,
                            };
                            if per && token {
                                u = if u == Unit::Time(1.0) {
                                    Unit::PerToken(1.0)
                                } else {
                                    Unit::PerToken(1e3)
                                };
                                j += 2;
                            }
                        }
                    } else if words.len() >= 2 {
                        // Value first: `10367 prompt tok`, `5642.4 prefill tok/s`.
                        if let Some(Tok::Num(x, u2)) = toks.get(j + words.len() - 1)
                            && x.is_nan()
                        {
                            let k: Vec<&str> = words[..words.len() - 1].to_vec();
                            push(&mut out, &k, *u2, v);
                            i = j + words.len();
                            closed = true;
                            continue;
                        }
                    }
                }
                if u == Unit::None {
                    u = key_unit;
                }
                let (k, ku): (Vec<&str>, Unit) = if !key.is_empty() {
                    (key.clone(), key_unit)
                } else if let Some(Some(o)) = outer.last() {
                    o.clone()
                } else if let Some(l) = &last {
                    l.clone()
                } else {
                    (Vec::new(), Unit::None)
                };
                let u = if u == Unit::None { ku } else { u };
                if !k.is_empty() {
                    push(&mut out, &k, u, v);
                    last = Some((k, ku));
                }
                key.clear();
                key_unit = Unit::None;
                closed = false;
                i = j;
                continue;
            }
        }
        i += 1;
    }
    out
}

fn push(out: &mut Vec<(String, f64)>, key: &[&str], u: Unit, v: f64) {
    let k = normal(&key.join(" "));
    let Some(m) = metric(&k) else { return };
    let u = if u == Unit::None { super::vocab::key_unit(&k) } else { u };
    // A rate named in the key (`decode_TPS=186.86`, `wall_TPS`).
    let u = if u == Unit::None && k.split_whitespace().any(|w| w == "tps" || w == "t/s" || w == "tok/s") {
        Unit::TokRate
    } else {
        u
    };
    if let Some(f) = figure(m, stat(&k), u, v) {
        out.push(f);
    }
}
