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
//!
//! One file per syntax, one per concern: `json.rs` (settings.json `"key": value` pairs and
//! nesting), `toml.rs` (config.toml items and the table an assignment is in), `env.rs` (shell
//! `export`/`set`/`$env:` lines), `block.rs` (what one block's settings make: [`ClientFacts`]);
//! this file has the types every syntax shares (values, the setting a key means, the scalar
//! readers) and the section parser that routes lines between them. Redaction itself is
//! `triage_base::safe`'s: the parsers only say where a secret's value sits in the line.

mod block;
mod env;
mod json;
mod toml;

use super::{Cx, SectionParser};
pub use crate::facts::client_config::{ClientFacts, Setting, UrlSetting};
use crate::kind::{InputKind, recognize};
use crate::report::EvidenceLine;
use block::{Block, Item, MAX_ITEMS};
use env::{env_shaped, scan_env};
use json::scan_json;
use toml::{Table, TomlItem, scan_toml, table_of};
use triage_base::safe::{self, is_secret_name};

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

fn to_count(x: f64) -> Option<u32> {
    (x.fract() == 0.0 && (0.0..=1e6).contains(&x)).then_some(x as u32)
}

// ---------------------------------------------------------------------------------------------
// Scalars every syntax reads the same way.

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
        let spans: Vec<(usize, usize)> = assigns
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
            .collect();
        let (redacted, had_secret) = safe::redact_spans(t, spans);
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
                    let clean = safe::redact_patterns(s).into_owned();
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
mod tests;
