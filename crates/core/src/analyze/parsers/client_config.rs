//! Client configurations: Claude Code `settings.json` (`env.ANTHROPIC_BASE_URL` …), Codex
//! `config.toml` (`model_provider`, `[model_providers.X] base_url …`) and shell `export` lines —
//! pretty-printed over many lines or squeezed onto one, as the article prints all three.
//!
//! Lines are read one at a time (the analyzer streams), so each syntax is scanned per line and
//! only JSON nesting and the current TOML table are carried from line to line. That is what
//! makes the one-line forms work: `model_provider = "x" model = "y" [model_providers.x] …` is a
//! run of assignments and table headers, and `{ "env": { "ANTHROPIC_BASE_URL": … } }` is a run of
//! `"key": value` pairs, whatever the line breaks.
//!
//! Each block — one settings.json object, one run of TOML, one run of exports — becomes one
//! [`ClientFacts`]; a section holding several (the article's §2 pasted whole) gives several.
//!
//! **Keys are never kept.** A secret's value (`*_API_KEY`, `*_AUTH_TOKEN`, `sk-…`, `Bearer …`) is
//! replaced with `***` before any evidence is quoted; [`ClientFacts::inline_key`] only records
//! that one was written in clear, and `key_env` names the variable a key is read from.

use super::{Cx, SectionParser};
use crate::analyze::kind::{InputKind, recognize};
use crate::analyze::report::EvidenceLine;
use crate::endpoint::Api;
use std::borrow::Cow;

/// A setting and the line it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Setting<T> {
    pub value: T,
    pub evidence: EvidenceLine,
}

/// A base URL as configured, with the name it was set under.
#[derive(Clone, Debug, PartialEq)]
pub struct UrlSetting {
    /// `ANTHROPIC_BASE_URL`, `OPENAI_BASE_URL`, `base_url` …
    pub name: String,
    /// The wire API the client speaks to it, when the name says (`ANTHROPIC_*` → Anthropic,
    /// `OPENAI_*` and Codex providers → OpenAI). Clients append different paths to a base URL
    /// (`/v1/messages` versus `/chat/completions`), so what is right depends on it.
    pub api: Option<Api>,
    pub url: Setting<String>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClientFacts {
    /// `settings_json`, `codex_toml` or `env`.
    pub format: String,
    /// The base URL the client uses: the active Codex provider's, else the first one set.
    pub base_url: Option<Setting<String>>,
    pub model: Option<Setting<String>>,
    /// Milliseconds (`API_TIMEOUT_MS`, `timeout_ms`, `request_timeout_ms`; a bare `timeout` is
    /// read as seconds, the OpenAI SDKs' unit).
    pub timeout_ms: Option<Setting<f64>>,
    /// `max_retries`, `request_max_retries`, `*_MAX_RETRIES`.
    pub max_retries: Option<Setting<u32>>,
    pub wire_api: Option<Setting<String>>,
    /// The variable the key is read from (never the key itself).
    pub key_env: Option<Setting<String>>,
    /// A key was written in the config in clear (its value is never kept).
    pub inline_key: Option<EvidenceLine>,
    /// Every base URL in the block, in order (a paste may configure several clients).
    pub base_urls: Vec<UrlSetting>,
    /// Codex `model_provider`: which `[model_providers.X]` table is in use.
    pub provider: Option<Setting<String>>,
    /// Codex `stream_idle_timeout_ms`: how long a stream may stay silent before the client drops it.
    pub stream_idle_timeout_ms: Option<Setting<f64>>,
    /// Codex `stream_max_retries`: reconnects of a dropped stream.
    pub stream_max_retries: Option<Setting<u32>>,
}

impl ClientFacts {
    fn is_empty(&self) -> bool {
        self.base_urls.is_empty()
            && self.model.is_none()
            && self.timeout_ms.is_none()
            && self.max_retries.is_none()
            && self.wire_api.is_none()
            && self.key_env.is_none()
            && self.inline_key.is_none()
            && self.provider.is_none()
            && self.stream_idle_timeout_ms.is_none()
            && self.stream_max_retries.is_none()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Json,
    Toml,
    Env,
}

impl Format {
    fn name(self) -> &'static str {
        match self {
            Format::Json => "settings_json",
            Format::Toml => "codex_toml",
            Format::Env => "env",
        }
    }
}

/// A value as written.
#[derive(Clone, Debug, PartialEq)]
enum Value {
    Str(String),
    Num(f64),
    Bool,
    Null,
    /// Arrays, inline tables, dates: nothing a rule reads.
    Other,
}

impl Value {
    fn text(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// Numbers and numeric strings (`settings.json` env values are strings: `"60000"`).
    fn number(&self) -> Option<f64> {
        match self {
            Value::Num(x) => Some(*x),
            Value::Str(s) => s.trim().replace('_', "").parse().ok(),
            _ => None,
        }
        .filter(|x: &f64| x.is_finite())
    }
}

/// `key = value` / `"key": value` / `NAME=value`, with the byte span of the value in the line
/// (so that a secret can be cut out of the quoted evidence).
#[derive(Clone, Debug, PartialEq)]
struct Assign {
    key: String,
    value: Value,
    span: (usize, usize),
}

/// What a setting means, whatever the client calls it.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Slot {
    BaseUrl,
    Model,
    /// Milliseconds per unit of the value.
    Timeout(f64),
    StreamIdle,
    MaxRetries,
    StreamMaxRetries,
    WireApi,
    KeyEnv,
    Provider,
    Secret,
}

fn slot_of(key: &str) -> Option<Slot> {
    // Dotted TOML keys and inline tables (`env.GITHUB_TOKEN`): the last part names the setting.
    let key = key.rsplit('.').next().unwrap_or(key);
    let k = key.trim().to_ascii_lowercase().replace('-', "_");
    let k = k.as_str();
    // Timeouts of other tools (Claude Code's Bash tool, MCP servers) say nothing about the API.
    let other_tool = k.starts_with("bash_") || k.starts_with("mcp_");
    Some(match k {
        "model_provider" => Slot::Provider,
        "wire_api" => Slot::WireApi,
        "env_key" => Slot::KeyEnv,
        "model" | "anthropic_model" | "openai_model" => Slot::Model,
        "stream_idle_timeout_ms" => Slot::StreamIdle,
        "stream_max_retries" => Slot::StreamMaxRetries,
        "max_retries" | "maxretries" | "request_max_retries" => Slot::MaxRetries,
        "base_url" | "baseurl" | "api_base" | "apibase" | "api_base_url" | "openai_api_base"
        | "openai_base_url" | "anthropic_base_url" => Slot::BaseUrl,
        "timeout" | "request_timeout" => Slot::Timeout(1000.0),
        _ if k.ends_with("_base_url") || k.ends_with("_api_base") => Slot::BaseUrl,
        _ if k.ends_with("timeout_ms") && !other_tool => Slot::Timeout(1.0),
        _ if (k.ends_with("_timeout_s")
            || k.ends_with("_timeout_secs")
            || k.ends_with("_timeout_seconds"))
            && !other_tool =>
        {
            Slot::Timeout(1000.0)
        }
        _ if k.ends_with("_max_retries") => Slot::MaxRetries,
        _ if is_secret_name(k) => Slot::Secret,
        _ => return None,
    })
}

/// `$NAME` / `${NAME}` → `NAME`: a key read from the environment, not written in clear.
fn env_reference(v: &str) -> Option<&str> {
    let v = v.trim();
    let name = v.strip_prefix("${").and_then(|r| r.strip_suffix('}')).or_else(|| v.strip_prefix('$'))?;
    (!name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')).then_some(name)
}

// ---------------------------------------------------------------------------------------------
// Secrets: redaction lives in `crate::safe` (one mechanism for every outside string).

pub(crate) use crate::safe::{is_secret_name, redact_patterns as redact_secrets};

// ---------------------------------------------------------------------------------------------
// Scanners: one line of each syntax.

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && (b[i] == b' ' || b[i] == b'\t') {
        i += 1;
    }
    i
}

/// A double-quoted string starting at `start` (the quote): its decoded text, the end of its
/// content and the index after the closing quote (the line's end when it is unterminated).
fn quoted(line: &str, start: usize) -> (String, usize, usize) {
    let b = line.as_bytes();
    let mut out = String::new();
    let mut i = start + 1;
    let mut run = i;
    while i < b.len() {
        match b[i] {
            b'"' => {
                out.push_str(&line[run..i]);
                return (out, i, i + 1);
            }
            b'\\' if i + 1 < b.len() => {
                out.push_str(&line[run..i]);
                let esc = b[i + 1];
                i += 2;
                match esc {
                    b'n' => out.push('\n'),
                    b't' => out.push('\t'),
                    b'u' => {
                        let hex = line.get(i..i + 4).and_then(|h| u32::from_str_radix(h, 16).ok());
                        match hex.and_then(char::from_u32) {
                            Some(c) => {
                                out.push(c);
                                i += 4;
                            }
                            // Not an escape after all: keep the `u`, read on.
                            None => out.push('u'),
                        }
                    }
                    // `\"`, `\\`, `\/`, `\$` and anything else: the character itself.
                    c if c.is_ascii() => out.push(char::from(c)),
                    _ => i -= 1,
                }
                run = i;
            }
            _ => i += 1,
        }
    }
    out.push_str(&line[run.min(b.len())..]);
    (out, b.len(), b.len())
}

/// A bare scalar (number, boolean, null, date) from `i` up to a delimiter.
fn bare(line: &str, i: usize, stop: &[u8]) -> (Value, (usize, usize), usize) {
    let b = line.as_bytes();
    let mut j = i;
    while j < b.len() && !b[j].is_ascii_whitespace() && !stop.contains(&b[j]) {
        j += 1;
    }
    let word = &line[i..j];
    let value = match word {
        "true" | "false" => Value::Bool,
        "null" => Value::Null,
        _ => match word.replace('_', "").parse::<f64>() {
            Ok(x) => Value::Num(x),
            Err(_) => Value::Other,
        },
    };
    (value, (i, j), j)
}

/// `"key": value` pairs on one line of JSON, the change in nesting depth the line makes, and the
/// deepest it went (relative to its start).
fn scan_json(line: &str) -> (Vec<Assign>, i32, i32) {
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

/// One item of a TOML line.
#[derive(Clone, Debug, PartialEq)]
enum TomlItem {
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
fn scan_toml(line: &str) -> (Vec<TomlItem>, bool) {
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

fn is_env_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && (b[0].is_ascii_alphabetic() || b[0] == b'_')
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

/// Does the line start like a shell assignment (`export …`, `NAME=…` in capitals, `$env:…`)?
fn env_shaped(t: &str) -> bool {
    if ["export ", "set ", "setx ", "declare -x ", "$env:"].iter().any(|p| t.starts_with(p)) {
        return true;
    }
    let end = t.find('=').unwrap_or(0);
    end > 0 && is_env_name(&t[..end]) && t[..end].bytes().all(|c| !c.is_ascii_lowercase())
}

/// Shell assignments on one line: `export A="x" export B=y`, `A=x B=y`, `set A=x`,
/// `$env:A = "x"`, `setx A x`. Returns them and whether something could not be read.
fn scan_env(line: &str) -> (Vec<Assign>, bool) {
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

/// The syntax a line (outside any JSON object) is written in.
fn line_format(t: &str) -> Option<Format> {
    if t.starts_with('{') || t.starts_with('"') {
        Some(Format::Json)
    } else if env_shaped(t) {
        Some(Format::Env)
    } else if !scan_toml(t).0.is_empty() {
        Some(Format::Toml)
    } else {
        None
    }
}

// ---------------------------------------------------------------------------------------------
// The parser.

/// The TOML table an assignment is in.
#[derive(Clone, Debug, Default, PartialEq)]
enum Table {
    #[default]
    Root,
    /// `[model_providers.X]`.
    Provider(String),
    /// Tables whose settings belong to something else (`[mcp_servers.x]`, `[profiles.x]` …).
    Ignored,
}

fn table_of(name: &str) -> Table {
    if let Some(p) = name.strip_prefix("model_providers.") {
        // `[model_providers.x.http_headers]` belongs to provider x as well.
        Table::Provider(p.split('.').next().unwrap_or(p).to_owned())
    } else if ["request", "client", "api", "http", "network"].contains(&name) {
        Table::Root
    } else {
        Table::Ignored
    }
}

struct Item {
    provider: Option<String>,
    name: String,
    slot: Slot,
    value: Value,
    evidence: EvidenceLine,
}

/// Most settings kept per block: a config has a few dozen; a runaway paste must not grow memory.
const MAX_ITEMS: usize = 256;

/// One config block being read: a settings.json object, a config.toml, a run of exports.
struct Block {
    format: Format,
    items: Vec<Item>,
    inline_key: Option<EvidenceLine>,
    /// A JSON object was opened in this block…
    json_opened: bool,
    /// …and closed again: another `{` starts another block. A paste that starts inside an
    /// object (its `{` went to another section) stays open until its first object closes.
    json_closed: bool,
}

fn api_of(name: &str, in_provider: bool) -> Option<Api> {
    let n = name.to_ascii_lowercase();
    if n.contains("anthropic") {
        Some(Api::Anthropic)
    } else if n.contains("openai") || in_provider {
        Some(Api::Openai)
    } else {
        None
    }
}

fn to_count(x: f64) -> Option<u32> {
    (x.fract() == 0.0 && (0.0..=1e6).contains(&x)).then_some(x as u32)
}

impl Block {
    fn new(format: Format) -> Block {
        Block { format, items: Vec::new(), inline_key: None, json_opened: false, json_closed: false }
    }

    fn build(self) -> Option<ClientFacts> {
        let mut f = ClientFacts {
            format: self.format.name().to_owned(),
            inline_key: self.inline_key,
            ..Default::default()
        };
        // Codex: the provider `model_provider` names, if its table is here; else the first table.
        let named = self
            .items
            .iter()
            .rev()
            .find(|i| i.slot == Slot::Provider && i.provider.is_none())
            .and_then(|i| i.value.text().map(str::to_owned));
        let chosen = named
            .filter(|n| self.items.iter().any(|i| i.provider.as_ref() == Some(n)))
            .or_else(|| self.items.iter().find_map(|i| i.provider.clone()));
        let mut url_rank = 0;
        for it in self.items {
            let in_scope = it.provider.is_none() || it.provider == chosen;
            if !in_scope && it.slot != Slot::BaseUrl {
                continue;
            }
            let text =
                || it.value.text().map(|s| Setting { value: s.to_owned(), evidence: it.evidence.clone() });
            let number = |scale: f64| {
                it.value.number().map(|x| Setting { value: x * scale, evidence: it.evidence.clone() })
            };
            let count = || {
                it.value
                    .number()
                    .and_then(to_count)
                    .map(|x| Setting { value: x, evidence: it.evidence.clone() })
            };
            match it.slot {
                Slot::BaseUrl => {
                    let Some(url) = text() else { continue };
                    // The active provider's URL is the one in use; then the first set outside any
                    // provider table; other providers' URLs are only listed.
                    let rank = match (&it.provider, in_scope) {
                        (Some(_), true) => 2,
                        (None, _) => 1,
                        (Some(_), false) => 0,
                    };
                    if rank > url_rank {
                        url_rank = rank;
                        f.base_url = Some(url.clone());
                    }
                    f.base_urls.push(UrlSetting {
                        api: api_of(&it.name, it.provider.is_some()),
                        name: it.name.clone(),
                        url,
                    });
                }
                Slot::Model => f.model = text().or(f.model),
                Slot::Timeout(scale) => f.timeout_ms = number(scale).or(f.timeout_ms),
                Slot::StreamIdle => f.stream_idle_timeout_ms = number(1.0).or(f.stream_idle_timeout_ms),
                Slot::MaxRetries => f.max_retries = count().or(f.max_retries),
                Slot::StreamMaxRetries => f.stream_max_retries = count().or(f.stream_max_retries),
                Slot::WireApi => f.wire_api = text().or(f.wire_api),
                Slot::KeyEnv => f.key_env = text().or(f.key_env),
                Slot::Provider => {
                    if it.provider.is_none() {
                        f.provider = text().or(f.provider);
                    }
                }
                Slot::Secret => {}
            }
        }
        (!f.is_empty()).then_some(f)
    }
}

/// Most client configurations kept (blocks after these are read but not kept).
const MAX_CLIENTS: usize = 64;

/// Parser state for one client-config section.
#[derive(Default)]
pub struct ClientParser {
    block: Option<Block>,
    /// JSON nesting depth after the last line (0 outside any object).
    depth: i32,
    /// The TOML table the next assignment belongs to.
    table: Table,
}

impl ClientParser {
    /// Inside a JSON object, or in a JSON block that began inside one.
    fn in_json(&self) -> bool {
        self.depth > 0 || self.block.as_ref().is_some_and(|b| b.format == Format::Json && !b.json_closed)
    }

    fn flush(&mut self, cx: &mut Cx<'_>) {
        // Bounded like the other parsers' facts: a settings object per line, repeated, grew
        // memory without end (about forty times the input).
        if let Some(facts) = self.block.take().and_then(Block::build)
            && cx.facts.clients.len() < MAX_CLIENTS
        {
            cx.facts.clients.push(facts);
        }
        self.depth = 0;
        self.table = Table::Root;
    }

    fn add(&mut self, cx: &mut Cx<'_>, no: usize, table: &Table, a: Assign, evidence: &EvidenceLine) {
        let Some(slot) = slot_of(&a.key) else { return };
        let block = self.block.as_mut().expect("a block is open while a line is read");
        let provider = match table {
            Table::Root => None,
            Table::Provider(p) => Some(p.clone()),
            Table::Ignored => return,
        };
        let (slot, value) = match slot {
            // A key read from a variable (`"$TAOTOKEN_API_KEY"`): its name is worth knowing.
            Slot::Secret => match a.value.text().and_then(env_reference) {
                Some(name) => (Slot::KeyEnv, Value::Str(name.to_owned())),
                None => return,
            },
            Slot::Timeout(_) | Slot::StreamIdle | Slot::MaxRetries | Slot::StreamMaxRetries
                if a.value.number().is_none_or(|x| x < 0.0) =>
            {
                if !matches!(a.value, Value::Null) {
                    cx.issue_in(
                        no,
                        format!("{} is not a non-negative number", a.key),
                        format!("{} 不是非负数", a.key),
                    );
                }
                return;
            }
            Slot::MaxRetries | Slot::StreamMaxRetries if a.value.number().and_then(to_count).is_none() => {
                cx.issue_in(no, format!("{} is not a whole number", a.key), format!("{} 不是整数", a.key));
                return;
            }
            _ => (slot, a.value),
        };
        if block.items.len() < MAX_ITEMS {
            block.items.push(Item { provider, name: a.key, slot, value, evidence: evidence.clone() });
        }
    }
}

/// Kinds whose lines are never part of a config even when they look like one.
fn foreign(t: &str) -> bool {
    matches!(
        recognize(t),
        Some(
            InputKind::BenchOutput
                | InputKind::RequestLog
                | InputKind::SseStream
                | InputKind::OomTrace
                | InputKind::PromMetrics
        )
    )
}

impl SectionParser for ClientParser {
    fn continues(&self, line: &str, _bare: &str, _needles: u64) -> bool {
        let t = line.trim();
        if t.is_empty() {
            return false;
        }
        let shaped = if self.in_json() {
            t.starts_with(['"', '{', '}', '[', ']'])
        } else {
            env_shaped(t) || matches!(scan_toml(t), (items, false) if !items.is_empty())
        };
        shaped && !foreign(t)
    }

    fn line(&mut self, cx: &mut Cx<'_>, no: usize, line: &str) {
        let t = line.trim();
        // A shell prompt before the command (`$ export OPENAI_BASE_URL=…`).
        let t = t.strip_prefix("$ ").unwrap_or(t);
        if t.is_empty() || t.starts_with("//") || (self.depth == 0 && t.starts_with('#')) {
            return;
        }
        let format = if self.depth > 0 || self.in_json() && t.starts_with(['"', '{', '}', '[', ']']) {
            Some(Format::Json)
        } else {
            line_format(t)
        };
        let Some(format) = format else {
            // A stray closing bracket after an object we never saw open is not worth an issue.
            if !t.chars().all(|c| "{}[],".contains(c) || c.is_whitespace()) {
                cx.issue_in(
                    no,
                    "not a client setting (expected settings.json, config.toml or `export NAME=value`)",
                    "不是客户端配置项（应为 settings.json、config.toml 或 `export NAME=value`）",
                );
            }
            return;
        };
        let same_block = self.block.as_ref().is_some_and(|b| {
            b.format == format && !(format == Format::Json && self.depth == 0 && b.json_closed)
        });
        if !same_block {
            self.flush(cx);
            self.block = Some(Block::new(format));
        }
        let (assigns, junk): (Vec<(Table, Assign)>, bool) = match format {
            Format::Json => {
                let (a, delta, peak) = scan_json(t);
                let block = self.block.as_mut().expect("opened above");
                block.json_opened |= self.depth + peak > 0;
                self.depth = (self.depth + delta).max(0);
                if self.depth == 0 && block.json_opened {
                    block.json_closed = true;
                }
                (a.into_iter().map(|a| (Table::Root, a)).collect(), false)
            }
            Format::Toml => {
                let (items, junk) = scan_toml(t);
                let mut out = Vec::new();
                for item in items {
                    match item {
                        TomlItem::Table(name) => self.table = table_of(&name),
                        TomlItem::Assign(a) => out.push((self.table.clone(), a)),
                    }
                }
                (out, junk)
            }
            Format::Env => {
                let (a, junk) = scan_env(t);
                (a.into_iter().map(|a| (Table::Root, a)).collect(), junk)
            }
        };
        if junk {
            cx.issue_in(
                no,
                format!("part of this line could not be read as {}", format.name()),
                format!("该行有部分内容无法按 {} 读取", format.name()),
            );
        }
        // Cut every secret value out of the line before anything quotes it.
        let mut spans: Vec<(usize, usize)> = assigns
            .iter()
            .filter(|(_, a)| {
                slot_of(&a.key) == Some(Slot::Secret)
                    && match &a.value {
                        Value::Str(v) => !v.trim().is_empty() && env_reference(v).is_none(),
                        Value::Num(_) | Value::Other => true,
                        Value::Bool | Value::Null => false,
                    }
            })
            .map(|(_, a)| a.span)
            .filter(|(s, e)| s < e && *e <= t.len() && t.is_char_boundary(*s) && t.is_char_boundary(*e))
            .collect();
        spans.sort_unstable();
        spans.dedup_by(|b, a| b.0 < a.1);
        let mut cut = String::with_capacity(t.len());
        let mut from = 0;
        for (s, e) in &spans {
            cut.push_str(&t[from..*s]);
            cut.push_str("***");
            from = *e;
        }
        cut.push_str(&t[from..]);
        let redacted = redact_secrets(&cut);
        let had_secret = !spans.is_empty() || matches!(redacted, Cow::Owned(_));
        let evidence = cx.evidence(no, &redacted);
        if had_secret {
            let block = self.block.as_mut().expect("opened above");
            block.inline_key.get_or_insert_with(|| evidence.clone());
        }
        for (table, a) in assigns {
            // Values are kept only for settings a rule reads; secrets were turned into `KeyEnv`
            // names above or dropped. Base URLs are redacted too (`?key=…`, `user:pass@`).
            let a = match &a.value {
                Value::Str(s) => {
                    let clean = redact_secrets(s).into_owned();
                    Assign { value: Value::Str(clean), ..a }
                }
                _ => a,
            };
            self.add(cx, no, &table, a, &evidence);
        }
    }

    fn finish(mut self: Box<Self>, cx: &mut Cx<'_>) {
        self.flush(cx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::testutil::{fixture, run};

    const SETTINGS_ONELINE: &str = fixture!("configs/claude_settings_oneline.json");
    const SETTINGS_PRETTY: &str = fixture!("configs/claude_settings.json");
    const CODEX_ONELINE: &str = fixture!("configs/codex_oneline.toml");
    const CODEX: &str = fixture!("configs/codex_config.toml");
    const EXPORTS: &str = fixture!("configs/exports.sh");

    fn no_key_anywhere(facts: &[ClientFacts], secret: &str) {
        let dump = format!("{facts:?}");
        assert!(!dump.contains(secret), "the key leaked: {dump}");
    }

    #[test]
    fn article_settings_json_on_one_line() {
        let (f, sections) = run("paste", SETTINGS_ONELINE).take(|f| f.clients);
        assert_eq!(sections.len(), 1, "{sections:?}");
        assert_eq!(sections[0].kind, InputKind::ClientConfig);
        assert!(sections[0].issues.is_empty(), "{:?}", sections[0].issues);
        assert_eq!(f.len(), 1);
        let c = &f[0];
        assert_eq!(c.format, "settings_json");
        assert_eq!(c.base_url.as_ref().unwrap().value, "https://taotoken.net/api");
        assert_eq!(c.base_urls[0].name, "ANTHROPIC_BASE_URL");
        assert_eq!(c.base_urls[0].api, Some(Api::Anthropic));
        assert_eq!(c.model.as_ref().unwrap().value, "claude-sonnet-4-20250514");
        assert_eq!(c.timeout_ms.as_ref().unwrap().value, 60_000.0);
        let key = c.inline_key.as_ref().unwrap();
        assert!(key.text.contains("\"ANTHROPIC_AUTH_TOKEN\": \"***\""), "{}", key.text);
        no_key_anywhere(&f, "sk-");
    }

    #[test]
    fn pretty_settings_json() {
        let (f, sections) = run("paste", SETTINGS_PRETTY).take(|f| f.clients);
        assert_eq!(f.len(), 1, "{sections:?}");
        let c = &f[0];
        assert_eq!(
            c.base_url.as_ref().unwrap().value,
            "https://gw.example.com/api?utm_source=blog&utm_medium=csdn"
        );
        assert_eq!(c.base_url.as_ref().unwrap().evidence.line, 4);
        assert_eq!(c.timeout_ms.as_ref().unwrap().value, 10_000.0);
        assert_eq!(c.model.as_ref().unwrap().value, "claude-sonnet-4-20250514");
        assert!(c.inline_key.is_some());
        no_key_anywhere(&f, "sk-ant-");
        // The opening `{` and `"env": {` lines carry no client word; the analyzer hands them to
        // the config section that follows, as it does a traceback's head.
        let kinds: Vec<_> = sections.iter().map(|s| (s.kind, s.lines[0])).collect();
        assert_eq!(kinds, [(InputKind::ClientConfig, 1)]);
        assert!(sections[0].issues.is_empty(), "{:?}", sections[0].issues);
    }

    #[test]
    fn article_codex_toml_on_one_line() {
        let (f, sections) = run("paste", CODEX_ONELINE).take(|f| f.clients);
        assert_eq!(sections.len(), 1, "{sections:?}");
        assert!(sections[0].issues.is_empty(), "{:?}", sections[0].issues);
        let c = &f[0];
        assert_eq!(c.format, "codex_toml");
        assert_eq!(c.provider.as_ref().unwrap().value, "taotoken");
        assert_eq!(c.model.as_ref().unwrap().value, "gpt-4o");
        assert_eq!(c.base_url.as_ref().unwrap().value, "https://taotoken.net/api");
        assert_eq!(c.base_urls[0].api, Some(Api::Openai));
        assert_eq!(c.key_env.as_ref().unwrap().value, "TAOTOKEN_API_KEY");
        assert_eq!(c.wire_api.as_ref().unwrap().value, "chat");
        assert_eq!(c.timeout_ms.as_ref().unwrap().value, 60_000.0);
        assert_eq!(c.max_retries.as_ref().unwrap().value, 2);
        assert!(c.inline_key.is_none());
    }

    #[test]
    fn codex_toml_picks_the_active_provider() {
        let (f, sections) = run("paste", CODEX).take(|f| f.clients);
        assert_eq!(sections.len(), 1, "{sections:?}");
        assert!(sections[0].issues.is_empty(), "{:?}", sections[0].issues);
        assert_eq!(f.len(), 1);
        let c = &f[0];
        assert_eq!(c.provider.as_ref().unwrap().value, "gateway");
        assert_eq!(c.base_url.as_ref().unwrap().value, "http://vllm.internal:8000/v1");
        assert_eq!(c.base_urls.len(), 2);
        assert_eq!(c.max_retries.as_ref().unwrap().value, 6);
        assert_eq!(c.stream_max_retries.as_ref().unwrap().value, 10);
        assert_eq!(c.stream_idle_timeout_ms.as_ref().unwrap().value, 20_000.0);
        assert_eq!(c.wire_api.as_ref().unwrap().value, "responses");
        assert_eq!(c.key_env.as_ref().unwrap().value, "GATEWAY_API_KEY");
        // The MCP server's key sits in a table of its own: redacted, counted as a key in clear,
        // and its timeout is not the API's.
        assert!(c.timeout_ms.is_none(), "{:?}", c.timeout_ms);
        assert!(c.inline_key.is_some());
        no_key_anywhere(&f, "ghp_");
    }

    #[test]
    fn article_exports_on_one_line_and_on_many() {
        let (f, sections) = run("paste", EXPORTS).take(|f| f.clients);
        assert_eq!(sections.len(), 1, "{sections:?}");
        assert!(sections[0].issues.is_empty(), "{:?}", sections[0].issues);
        assert_eq!(f.len(), 1);
        let c = &f[0];
        assert_eq!(c.format, "env");
        let names: Vec<_> = c.base_urls.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names, ["ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"]);
        assert_eq!(c.base_url.as_ref().unwrap().value, "https://taotoken.net/api");
        assert_eq!(c.key_env.as_ref().unwrap().value, "TAOTOKEN_API_KEY");
        assert_eq!(c.timeout_ms.as_ref().unwrap().value, 10_000.0);
        assert_eq!(c.max_retries.as_ref().unwrap().value, 5);
        assert!(c.inline_key.as_ref().unwrap().text.contains("TAOTOKEN_API_KEY=\"***\""));
        no_key_anywhere(&f, "sk-");
    }

    #[test]
    fn scanners() {
        let (a, d, peak) = scan_json(r#"{ "env": { "A": "x\"y", "N": 5, "B": true }, "l": ["a", 1] }"#);
        assert_eq!((d, peak), (0, 2));
        let keys: Vec<_> = a.iter().map(|a| a.key.as_str()).collect();
        assert_eq!(keys, ["A", "N", "B"]);
        assert_eq!(a[0].value, Value::Str("x\"y".into()));
        assert_eq!(a[1].value, Value::Num(5.0));
        let (items, junk) = scan_toml(r#"a = "x" [t.u] b = 60_000 c = [1, "]"] d = { e = 1 } # note"#);
        assert!(!junk);
        assert_eq!(items.len(), 6, "{items:?}");
        assert!(matches!(&items[4], TomlItem::Assign(a) if a.key == "d.e"));
        assert_eq!(items[1], TomlItem::Table("t.u".into()));
        assert!(matches!(&items[2], TomlItem::Assign(a) if a.value == Value::Num(60_000.0)));
        let (items, junk) = scan_toml("max_retries 设 2 而不是默认的 5");
        assert!(items.is_empty() && junk);
        assert!(scan_toml("[2026-11-29 10:00:00] Prefill batch").0.is_empty());
        assert_eq!(scan_toml("[[a]é = 1"), (Vec::new(), true));
        assert_eq!(scan_toml("[[a.b]] x = 1").0.len(), 2);
        let (a, junk) = scan_env(r#"export A="1" export B='2'; C=3 $env:D = "4""#);
        assert!(!junk);
        assert_eq!(a.len(), 4);
        assert_eq!(a[3].key, "D");
        assert_eq!(a[3].value, Value::Str("4".into()));
    }

    #[test]
    fn redaction() {
        assert_eq!(redact_secrets("Authorization: Bearer abcdef123"), "Authorization: Bearer ***");
        assert_eq!(redact_secrets(r#""k": "sk-你的TaoToken密钥""#), r#""k": "sk-***""#);
        assert_eq!(
            redact_secrets("https://u:pw@h.example/v1?api_key=abc123&x=1"),
            "https://u:***@h.example/v1?api_key=***&x=1"
        );
        assert_eq!(redact_secrets("ask-me about sk-"), "ask-me about sk-");
        assert!(matches!(redact_secrets("plain text"), Cow::Borrowed(_)));
        let (f, _) = run("paste", "api_key = 12345678\nbase_url = \"http://h/v1\"\n").take(|f| f.clients);
        assert!(f[0].inline_key.as_ref().unwrap().text.contains("api_key = ***"), "{f:?}");
        no_key_anywhere(&f, "12345678");
        assert_eq!(env_reference("${TAOTOKEN_API_KEY}"), Some("TAOTOKEN_API_KEY"));
        assert_eq!(env_reference("sk-1"), None);
    }

    /// Fuzzing found long lines of candidates that are not credentials taking seconds: each `sk-`
    /// and `?` searched to the end of the line again. At this size the old code took minutes.
    #[test]
    fn redaction_is_linear_on_long_lines_of_candidates() {
        for unit in ["sk-$", "?key=$", "????", "&&&&", "?k?k", "Bearer $"] {
            let line = unit.repeat(100_000);
            assert_eq!(redact_secrets(&line), line, "{unit}");
        }
        let line = format!("{}?key={}", "?".repeat(100_000), "x".repeat(100_000));
        assert_eq!(redact_secrets(&line), format!("{}?key=***", "?".repeat(100_000)));
        // A query-parameter name is short; a very long one is not read as one.
        let long = format!("?{}key=abcdef", "a".repeat(crate::safe::MAX_PARAM_NAME));
        assert_eq!(redact_secrets(&long), long);
        let short = format!("?{}key=abcdef", "a".repeat(crate::safe::MAX_PARAM_NAME - 4));
        assert!(redact_secrets(&short).ends_with("key=***"));
    }

    #[test]
    fn prose_and_garbage_are_issues_not_panics() {
        let text =
            "max_retries 设 2 而不是默认的 5\n{ \"env\": { \"API_TIMEOUT_MS\": \"abc\" \n\u{0}\"\\u12\n";
        let (f, sections) = run("paste", text).take(|f| f.clients);
        assert!(f.is_empty(), "{f:?}");
        assert!(!sections[0].issues.is_empty());
        for cut in 0..SETTINGS_ONELINE.len() {
            if SETTINGS_ONELINE.is_char_boundary(cut) {
                let (f, _) = run("paste", &SETTINGS_ONELINE[..cut]).take(|f| f.clients);
                no_key_anywhere(&f, "sk-你");
            }
        }
    }

    #[test]
    fn many_blocks_are_bounded() {
        let line = "{\"env\":{\"ANTHROPIC_BASE_URL\":\"https://x\"}}\n";
        let (f, _) = run("paste", &line.repeat(MAX_CLIENTS * 4)).take(|f| f.clients);
        assert_eq!(f.len(), MAX_CLIENTS);
    }

    #[test]
    fn engine_words_inside_a_config_stay_in_it() {
        let text = "model_provider = \"local\"\n[model_providers.local]\nbase_url = \"http://sglang.svc:30000/v1\"\nmodel = \"vllm.served/llama\"\n";
        let (f, sections) = run("paste", text).take(|f| f.clients);
        assert_eq!(sections.len(), 1, "{sections:?}");
        assert_eq!(f[0].base_url.as_ref().unwrap().value, "http://sglang.svc:30000/v1");
    }
}
