//! What one SSE event of an LLM stream means: token, reasoning, tool call, usage, finish, error…
//!
//! One classifier reads all three wire dialects by the shape of the payload, so a pasted
//! transcript needs no hint: OpenAI chat completions (and legacy completions) chunks with
//! `choices[].delta`, OpenAI Responses events (`"type": "response.output_text.delta"` …) and
//! Anthropic Messages events (`message_start`, `content_block_delta`, …).
//!
//! A role-only first chunk (`{"delta":{"role":"assistant"}}`) and an empty `content` are not
//! tokens: counting them would make TTFT look better than what a user sees.

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;

/// The wire dialect an event was recognised as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dialect {
    /// OpenAI Chat Completions (`chat.completion.chunk`, `choices[].delta`).
    OpenaiChat,
    /// OpenAI legacy Completions (`text_completion`, `choices[].text`).
    OpenaiCompletions,
    /// OpenAI Responses (`response.*` events).
    OpenaiResponses,
    /// Anthropic Messages (`message_start`, `content_block_delta`, …).
    Anthropic,
    /// None of the above.
    Unknown,
}

/// Which kind of generated content an event carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenKind {
    /// Answer text (counts for TTFO).
    Text,
    /// Reasoning / thinking text (counts for TTFT, not TTFO).
    Reasoning,
    /// Tool-call name or arguments (counts for TTFT and TTFO: it is the answer).
    ToolCall,
}

/// The main meaning of an event; see [`Classified`] for everything it carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// A delta that only names the role (`{"role": "assistant"}`).
    RoleOnly,
    /// Answer text.
    Text,
    /// Reasoning or thinking text.
    Reasoning,
    /// A tool-call name or arguments.
    ToolCall,
    /// A usage report only.
    Usage,
    /// A finish reason only.
    Finish,
    /// An error reported in the stream.
    Error,
    /// The end of the stream (`[DONE]`, `message_stop`, `response.completed`).
    Done,
    /// A keep-alive (`ping` event).
    Ping,
    /// Bookkeeping without content (`message_start`, `response.created`, `content_block_stop`).
    Lifecycle,
    /// Nothing recognised.
    Unknown,
}

/// Token usage as the server reported it. Field names are normalised.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens (`prompt_tokens` / `input_tokens`).
    pub input_tokens: Option<u64>,
    /// Generated tokens (`completion_tokens` / `output_tokens`), reasoning included where the server counts it there.
    pub output_tokens: Option<u64>,
    /// Reasoning tokens, when the server reports them apart.
    pub reasoning_tokens: Option<u64>,
}

impl Usage {
    /// Later reports win field by field (Anthropic sends input in `message_start` and output in
    /// `message_delta`).
    pub fn merge(&mut self, other: Usage) {
        self.input_tokens = other.input_tokens.or(self.input_tokens);
        self.output_tokens = other.output_tokens.or(self.output_tokens);
        self.reasoning_tokens = other.reasoning_tokens.or(self.reasoning_tokens);
    }
}

/// Everything one event tells.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Classified {
    /// The dialect the event's shape shows, when it shows one.
    pub dialect: Option<Dialect>,
    /// The generated content this event carries, if any. Answer text wins over reasoning when
    /// one event carries both.
    pub token: Option<TokenKind>,
    /// The delta only names the role.
    pub role_only: bool,
    /// The usage report the event carries.
    pub usage: Option<Usage>,
    /// The finish reason the event carries (`stop`, `length`, `end_turn`, …).
    pub finish_reason: Option<String>,
    /// An error reported in-stream (`event: error`, `{"error": …}`, `response.failed`).
    pub error: Option<String>,
    /// `[DONE]`, `message_stop`, `response.completed` and the like: nothing follows.
    pub terminal: bool,
    /// A keep-alive (`ping` event).
    pub ping: bool,
    /// The server's id for the response (`chatcmpl-…`, `msg_…`, `resp_…`), for correlating
    /// with server logs.
    pub response_id: Option<String>,
    /// The payload was not JSON of any known shape (and not `[DONE]`).
    pub not_json: bool,
}

impl Classified {
    /// The event's main meaning: an error first, then content, then bookkeeping.
    pub fn kind(&self) -> EventKind {
        if self.error.is_some() {
            EventKind::Error
        } else if let Some(t) = self.token {
            match t {
                TokenKind::Text => EventKind::Text,
                TokenKind::Reasoning => EventKind::Reasoning,
                TokenKind::ToolCall => EventKind::ToolCall,
            }
        } else if self.finish_reason.is_some() {
            EventKind::Finish
        } else if self.usage.is_some() {
            EventKind::Usage
        } else if self.role_only {
            EventKind::RoleOnly
        } else if self.terminal {
            EventKind::Done
        } else if self.ping {
            EventKind::Ping
        } else if self.dialect.is_some() {
            EventKind::Lifecycle
        } else {
            EventKind::Unknown
        }
    }
}

#[derive(Deserialize, Default)]
struct RawUsage {
    #[serde(default, alias = "input_tokens")]
    prompt_tokens: Option<u64>,
    #[serde(default, alias = "output_tokens")]
    completion_tokens: Option<u64>,
    #[serde(default, alias = "output_tokens_details")]
    completion_tokens_details: Option<RawDetails>,
}

#[derive(Deserialize, Default)]
struct RawDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

impl From<RawUsage> for Usage {
    fn from(u: RawUsage) -> Usage {
        Usage {
            input_tokens: u.prompt_tokens,
            output_tokens: u.completion_tokens,
            reasoning_tokens: u.completion_tokens_details.and_then(|d| d.reasoning_tokens),
        }
    }
}

/// A JSON string kept only as whether it is empty, so reading it copies nothing, even when it
/// carries escapes. Anything but a string (or `null`, through `Option`) is an error, as a
/// borrowed string's would be.
#[derive(Clone, Copy, Default)]
struct Text {
    non_empty: bool,
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Text, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Text;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Text, E> {
                Ok(Text { non_empty: !v.is_empty() })
            }
        }
        d.deserialize_str(V)
    }
}

/// A JSON string, borrowed from the payload when it carries no escapes. (`Option<Cow<str>>`
/// with `#[serde(borrow)]` does not borrow: serde copies it.)
#[derive(Clone)]
struct Str<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Str<'a>, D::Error> {
        struct V<'a>(std::marker::PhantomData<Str<'a>>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Str<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Str<'a>, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Str<'a>, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(V(std::marker::PhantomData))
    }
}

impl std::ops::Deref for Str<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

/// Any JSON value, kept as a string when it is one (borrowed when it carries no escapes), else
/// as nothing: what `Value::as_str` would have given, without building the value.
#[derive(Clone, Default)]
struct AnyStr<'a>(Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for AnyStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<AnyStr<'a>, D::Error> {
        d.deserialize_any(AnyVisitor(|s: Cow<'a, str>| AnyStr(Some(s)), AnyStr(None)))
    }
}

impl AnyStr<'_> {
    fn non_empty(&self) -> bool {
        self.0.as_deref().is_some_and(|s| !s.is_empty())
    }
}

/// Visits any value: a string goes to the closure, anything else (consumed without being
/// kept) is the default.
struct AnyVisitor<F, T>(F, T);

impl<'de: 'a, 'a, F: FnOnce(Cow<'a, str>) -> T, T> Visitor<'de> for AnyVisitor<F, T> {
    type Value = T;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any value")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<T, E> {
        Ok((self.0)(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        Ok((self.0)(Cow::Owned(v.to_owned())))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<T, E> {
        Ok(self.1)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<T, E> {
        Ok(self.1)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<T, E> {
        Ok(self.1)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<T, E> {
        Ok(self.1)
    }
    fn visit_unit<E: de::Error>(self) -> Result<T, E> {
        Ok(self.1)
    }
    fn visit_none<E: de::Error>(self) -> Result<T, E> {
        Ok(self.1)
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<T, A::Error> {
        while seq.next_element::<de::IgnoredAny>()?.is_some() {}
        Ok(self.1)
    }
    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        while map.next_entry::<de::IgnoredAny, de::IgnoredAny>()?.is_some() {}
        Ok(self.1)
    }
}

/// A JSON array kept only as whether it has elements (which are skipped, not built).
#[derive(Clone, Copy, Default)]
struct Items {
    non_empty: bool,
}

impl<'de> Deserialize<'de> for Items {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Items, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Items;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Items, A::Error> {
                let mut non_empty = false;
                while seq.next_element::<de::IgnoredAny>()?.is_some() {
                    non_empty = true;
                }
                Ok(Items { non_empty })
            }
        }
        d.deserialize_seq(V)
    }
}

#[derive(Deserialize, Default)]
struct RawDelta {
    #[serde(default)]
    role: Option<de::IgnoredAny>,
    #[serde(default)]
    content: Option<Text>,
    #[serde(default)]
    reasoning_content: Option<Text>,
    #[serde(default)]
    reasoning: Option<Text>,
    #[serde(default)]
    tool_calls: Option<Items>,
    #[serde(default)]
    function_call: Option<de::IgnoredAny>,
    #[serde(default)]
    refusal: Option<Text>,
}

#[derive(Deserialize, Default)]
struct RawChoice<'a> {
    #[serde(default)]
    delta: Option<RawDelta>,
    /// Legacy completions.
    #[serde(default)]
    text: Option<Text>,
    #[serde(default, borrow)]
    finish_reason: Option<Str<'a>>,
}

/// `choices`, folded as they are read (no list is built): what the chunk's choices carry.
#[derive(Default)]
struct Choices<'a> {
    text: bool,
    reasoning: bool,
    tool: bool,
    role: bool,
    /// A choice with legacy completions' `text`.
    completions: bool,
    /// The last choice's finish reason that has one.
    finish_reason: Option<Str<'a>>,
}

impl<'de: 'a, 'a> Deserialize<'de> for Choices<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Choices<'a>, D::Error> {
        struct V<'a>(std::marker::PhantomData<Choices<'a>>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Choices<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an array of choices")
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Choices<'a>, A::Error> {
                let mut c = Choices::default();
                while let Some(choice) = seq.next_element::<RawChoice<'a>>()? {
                    if let Some(d) = &choice.delta {
                        let ne = |t: &Option<Text>| t.is_some_and(|t| t.non_empty);
                        c.text |= ne(&d.content) || ne(&d.refusal);
                        c.reasoning |= ne(&d.reasoning_content) || ne(&d.reasoning);
                        c.tool |= d.tool_calls.is_some_and(|t| t.non_empty) || d.function_call.is_some();
                        c.role |= d.role.is_some();
                    }
                    if choice.text.is_some_and(|t| t.non_empty) {
                        c.text = true;
                        c.completions = true;
                    }
                    if choice.finish_reason.is_some() {
                        c.finish_reason = choice.finish_reason;
                    }
                }
                Ok(c)
            }
        }
        d.deserialize_seq(V(std::marker::PhantomData))
    }
}

/// The top-level `delta`: Responses' text, or Anthropic's object (the fields read of it).
enum Delta<'a> {
    Text(bool),
    Object(DeltaObject<'a>),
    Other,
}

#[derive(Deserialize, Default)]
struct DeltaObject<'a> {
    #[serde(default, rename = "type", borrow)]
    ty: AnyStr<'a>,
    #[serde(default, borrow)]
    text: AnyStr<'a>,
    #[serde(default, borrow)]
    thinking: AnyStr<'a>,
    #[serde(default, borrow)]
    partial_json: AnyStr<'a>,
    #[serde(default, borrow)]
    stop_reason: AnyStr<'a>,
}

impl<'de: 'a, 'a> Deserialize<'de> for Delta<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Delta<'a>, D::Error> {
        struct V<'a>(std::marker::PhantomData<Delta<'a>>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Delta<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any value")
            }
            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Delta<'a>, A::Error> {
                DeltaObject::deserialize(de::value::MapAccessDeserializer::new(map)).map(Delta::Object)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Delta<'a>, E> {
                Ok(Delta::Text(!v.is_empty()))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Delta<'a>, E> {
                Ok(Delta::Other)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Delta<'a>, E> {
                Ok(Delta::Other)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Delta<'a>, E> {
                Ok(Delta::Other)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Delta<'a>, E> {
                Ok(Delta::Other)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Delta<'a>, E> {
                Ok(Delta::Other)
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Delta<'a>, A::Error> {
                while seq.next_element::<de::IgnoredAny>()?.is_some() {}
                Ok(Delta::Other)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

impl Delta<'_> {
    fn object(&self) -> Option<&DeltaObject<'_>> {
        match self {
            Delta::Object(o) => Some(o),
            _ => None,
        }
    }
}

/// The union of the three dialects' top-level fields. A token event's fields are read without
/// building anything on the heap (strings borrowed, arrays folded); only lifecycle and error
/// events' objects are built as values.
#[derive(Deserialize, Default)]
struct RawPayload<'a> {
    #[serde(default, rename = "type", borrow)]
    ty: Option<Str<'a>>,
    #[serde(default, borrow)]
    id: Option<Str<'a>>,
    #[serde(default, borrow)]
    object: Option<Str<'a>>,
    #[serde(default, borrow)]
    choices: Option<Choices<'a>>,
    #[serde(default)]
    usage: Option<RawUsage>,
    #[serde(default)]
    error: Option<Value>,
    /// Anthropic: an object; Responses: the delta text.
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default)]
    message: Option<Value>,
    #[serde(default)]
    response: Option<Value>,
    #[serde(default)]
    content_block: Option<Value>,
}

fn error_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Object(m) => {
            // Responses `error` events carry `"type": "error"` and the real kind in `code`.
            let kind = m
                .get("code")
                .and_then(Value::as_str)
                .or_else(|| m.get("type").and_then(Value::as_str).filter(|t| *t != "error"));
            let msg = m.get("message").and_then(Value::as_str);
            match (kind, msg) {
                (Some(k), Some(m)) => format!("{k}: {m}"),
                (None, Some(m)) => m.to_owned(),
                (Some(k), None) => k.to_owned(),
                (None, None) => v.to_string(),
            }
        }
        other => other.to_string(),
    }
}

fn usage_of(v: &Value) -> Option<Usage> {
    let u = v.get("usage")?;
    if u.is_null() {
        return None;
    }
    serde_json::from_value::<RawUsage>(u.clone()).ok().map(Usage::from)
}

/// Classify one event by its `event:` name and its data.
pub fn classify(event: &str, data: &str) -> Classified {
    classify_with(event, data, true)
}

/// [`classify`], copying the response id out only when `want_id` (a stream timer that has one
/// already skips it). A token event of any dialect is read without allocating, unless its
/// strings carry JSON escapes (the JSON reader then copies them once into its scratch buffer).
pub fn classify_with(event: &str, data: &str, want_id: bool) -> Classified {
    let mut c = Classified::default();
    let trimmed = data.trim();
    if trimmed == "[DONE]" {
        c.terminal = true;
        return c;
    }
    let payload: RawPayload<'_> = match serde_json::from_str(trimmed) {
        Ok(p) => p,
        Err(_) => {
            c.not_json = true;
            if event == "error" {
                c.error = Some(trimmed.to_owned());
            } else if event == "ping" {
                c.ping = true;
            }
            return c;
        }
    };
    let ty = payload.ty.as_deref().unwrap_or(if event == "message" { "" } else { event });

    if let Some(choices) = &payload.choices {
        classify_openai(&payload, choices, want_id, &mut c);
        return c;
    }
    if ty.starts_with("response.") || payload.object.as_deref() == Some("response") {
        classify_responses(ty, &payload, &mut c);
        return c;
    }
    match ty {
        "message_start"
        | "content_block_start"
        | "content_block_delta"
        | "content_block_stop"
        | "message_delta"
        | "message_stop"
        | "ping" => classify_anthropic(ty, &payload, &mut c),
        "error" => {
            c.dialect =
                Some(if payload.error.is_some() { Dialect::Anthropic } else { Dialect::OpenaiResponses });
            c.error = Some(match &payload.error {
                Some(e) => error_text(e),
                None => serde_json::from_str::<Value>(trimmed)
                    .map(|v| error_text(&v))
                    .unwrap_or_else(|_| trimmed.to_owned()),
            });
        }
        _ => {
            // A bare `{"error": …}` (vLLM and gateways send this mid-stream), or `event: error`.
            if let Some(e) = &payload.error {
                c.error = Some(error_text(e));
            } else if event == "error" {
                c.error = Some(trimmed.to_owned());
            }
            if let Some(u) = &payload.usage {
                c.usage = Some(Usage {
                    input_tokens: u.prompt_tokens,
                    output_tokens: u.completion_tokens,
                    reasoning_tokens: None,
                });
            }
        }
    }
    c
}

fn classify_openai(p: &RawPayload<'_>, choices: &Choices<'_>, want_id: bool, c: &mut Classified) {
    c.dialect = Some(if p.object.as_deref() == Some("text_completion") || choices.completions {
        Dialect::OpenaiCompletions
    } else {
        Dialect::OpenaiChat
    });
    if want_id {
        c.response_id = p.id.as_deref().map(str::to_owned);
    }
    c.finish_reason = choices.finish_reason.as_deref().map(str::to_owned);
    let (text, reasoning, tool, role) = (choices.text, choices.reasoning, choices.tool, choices.role);
    c.token = if text {
        Some(TokenKind::Text)
    } else if tool {
        Some(TokenKind::ToolCall)
    } else if reasoning {
        Some(TokenKind::Reasoning)
    } else {
        None
    };
    c.role_only = role && c.token.is_none();
    if let Some(u) = &p.usage {
        c.usage = Some(Usage {
            input_tokens: u.prompt_tokens,
            output_tokens: u.completion_tokens,
            reasoning_tokens: u.completion_tokens_details.as_ref().and_then(|d| d.reasoning_tokens),
        });
    }
    if let Some(e) = &p.error {
        c.error = Some(error_text(e));
    }
}

fn classify_responses(ty: &str, p: &RawPayload<'_>, c: &mut Classified) {
    c.dialect = Some(Dialect::OpenaiResponses);
    let delta_non_empty = matches!(p.delta, Some(Delta::Text(true)));
    match ty {
        "response.output_text.delta" | "response.refusal.delta" if delta_non_empty => {
            c.token = Some(TokenKind::Text)
        }
        "response.reasoning_text.delta" | "response.reasoning_summary_text.delta" if delta_non_empty => {
            c.token = Some(TokenKind::Reasoning)
        }
        "response.function_call_arguments.delta"
        | "response.custom_tool_call_input.delta"
        | "response.mcp_call_arguments.delta"
            if delta_non_empty =>
        {
            c.token = Some(TokenKind::ToolCall)
        }
        "response.completed" | "response.incomplete" | "response.failed" => {
            c.terminal = true;
            if let Some(r) = &p.response {
                c.response_id = r.get("id").and_then(Value::as_str).map(str::to_owned);
                c.usage = usage_of(r);
                let status = r.get("status").and_then(Value::as_str).unwrap_or(&ty["response.".len()..]);
                let reason =
                    r.get("incomplete_details").and_then(|d| d.get("reason")).and_then(Value::as_str);
                c.finish_reason = Some(reason.unwrap_or(status).to_owned());
                if ty == "response.failed" {
                    let err = r.get("error").filter(|e| !e.is_null()).map(error_text);
                    c.error = Some(err.unwrap_or_else(|| "response failed".to_owned()));
                }
            } else {
                c.finish_reason = Some(ty["response.".len()..].to_owned());
            }
        }
        "response.created" | "response.in_progress" | "response.queued" => {
            if let Some(r) = &p.response {
                c.response_id = r.get("id").and_then(Value::as_str).map(str::to_owned);
            }
        }
        _ => {}
    }
}

fn classify_anthropic(ty: &str, p: &RawPayload<'_>, c: &mut Classified) {
    c.dialect = Some(Dialect::Anthropic);
    match ty {
        "message_start" => {
            if let Some(m) = &p.message {
                c.response_id = m.get("id").and_then(Value::as_str).map(str::to_owned);
                c.usage = usage_of(m);
            }
        }
        "content_block_start" => {
            let block = p.content_block.as_ref();
            let block_ty = block.and_then(|b| b.get("type")).and_then(Value::as_str);
            let has = |field: &str| {
                block.and_then(|b| b.get(field)).and_then(Value::as_str).is_some_and(|s| !s.is_empty())
            };
            c.token = match block_ty {
                // The tool's name is generated output: the model has started answering.
                Some("tool_use" | "server_tool_use") => Some(TokenKind::ToolCall),
                Some("text") if has("text") => Some(TokenKind::Text),
                Some("thinking") if has("thinking") => Some(TokenKind::Reasoning),
                _ => None,
            };
        }
        "content_block_delta" => {
            let d = p.delta.as_ref().and_then(Delta::object);
            let dty = d.and_then(|d| d.ty.0.as_deref());
            let has = |field: Option<&AnyStr<'_>>| field.is_some_and(AnyStr::non_empty);
            c.token = match dty {
                Some("text_delta") if has(d.map(|d| &d.text)) => Some(TokenKind::Text),
                Some("thinking_delta") if has(d.map(|d| &d.thinking)) => Some(TokenKind::Reasoning),
                Some("input_json_delta") if has(d.map(|d| &d.partial_json)) => Some(TokenKind::ToolCall),
                // `signature_delta` closes a thinking block: no generated token.
                _ => None,
            };
        }
        "message_delta" => {
            c.finish_reason = p
                .delta
                .as_ref()
                .and_then(Delta::object)
                .and_then(|d| d.stop_reason.0.as_deref())
                .map(str::to_owned);
            if let Some(u) = &p.usage {
                c.usage = Some(Usage {
                    input_tokens: u.prompt_tokens,
                    output_tokens: u.completion_tokens,
                    reasoning_tokens: None,
                });
            }
        }
        "message_stop" => c.terminal = true,
        "ping" => c.ping = true,
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(event: &str, data: &str) -> EventKind {
        classify(event, data).kind()
    }

    #[test]
    fn openai_chat_chunks() {
        let role = r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}"#;
        let c = classify("message", role);
        assert_eq!(c.kind(), EventKind::RoleOnly);
        assert_eq!(c.response_id.as_deref(), Some("chatcmpl-1"));
        assert_eq!(c.dialect, Some(Dialect::OpenaiChat));
        let text = r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}"#;
        assert_eq!(kind("message", text), EventKind::Text);
        let fin = r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#;
        let c = classify("message", fin);
        assert_eq!(c.kind(), EventKind::Finish);
        assert_eq!(c.finish_reason.as_deref(), Some("stop"));
        let usage = r#"{"id":"chatcmpl-1","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":12,"total_tokens":21,"completion_tokens_details":{"reasoning_tokens":4}}}"#;
        let c = classify("message", usage);
        assert_eq!(c.kind(), EventKind::Usage);
        assert_eq!(
            c.usage,
            Some(Usage { input_tokens: Some(9), output_tokens: Some(12), reasoning_tokens: Some(4) })
        );
        assert_eq!(kind("message", "[DONE]"), EventKind::Done);
        assert!(classify("message", " [DONE] ").terminal);
    }

    #[test]
    fn openai_reasoning_and_tool_calls() {
        let r1 = r#"{"choices":[{"delta":{"reasoning_content":"Let me think"}}]}"#;
        assert_eq!(kind("message", r1), EventKind::Reasoning);
        let r2 = r#"{"choices":[{"delta":{"reasoning":"hmm","content":null}}]}"#;
        assert_eq!(kind("message", r2), EventKind::Reasoning);
        let both = r#"{"choices":[{"delta":{"reasoning_content":"a","content":"b"}}]}"#;
        assert_eq!(kind("message", both), EventKind::Text);
        let tool = r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}"#;
        assert_eq!(kind("message", tool), EventKind::ToolCall);
        let fin = r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#;
        assert_eq!(classify("message", fin).finish_reason.as_deref(), Some("tool_calls"));
    }

    #[test]
    fn openai_legacy_completions() {
        let t = r#"{"id":"cmpl-1","object":"text_completion","choices":[{"text":" world","index":0,"finish_reason":null}]}"#;
        let c = classify("message", t);
        assert_eq!(c.kind(), EventKind::Text);
        assert_eq!(c.dialect, Some(Dialect::OpenaiCompletions));
    }

    #[test]
    fn openai_error_in_stream() {
        let e = r#"{"error":{"message":"The server had an error","type":"server_error","code":null}}"#;
        let c = classify("message", e);
        assert_eq!(c.kind(), EventKind::Error);
        assert_eq!(c.error.as_deref(), Some("server_error: The server had an error"));
        // vLLM-style error object with code.
        let v = r#"{"object":"error","message":"max tokens exceeded","type":"BadRequestError","code":400}"#;
        // No "error" field and no choices: unknown, not a crash.
        assert_eq!(kind("message", v), EventKind::Unknown);
    }

    #[test]
    fn anthropic_messages_events() {
        let start = r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude","stop_reason":null,"usage":{"input_tokens":25,"output_tokens":1}}}"#;
        let c = classify("message_start", start);
        assert_eq!(c.kind(), EventKind::Usage);
        assert_eq!(c.response_id.as_deref(), Some("msg_1"));
        assert_eq!(c.usage.and_then(|u| u.input_tokens), Some(25));
        let block = r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#;
        assert_eq!(kind("content_block_start", block), EventKind::Lifecycle);
        assert_eq!(kind("ping", r#"{"type": "ping"}"#), EventKind::Ping);
        let d = r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}"#;
        assert_eq!(kind("content_block_delta", d), EventKind::Text);
        let th = r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"I need to"}}"#;
        assert_eq!(kind("content_block_delta", th), EventKind::Reasoning);
        let sig = r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}"#;
        assert_eq!(kind("content_block_delta", sig), EventKind::Lifecycle);
        let tool = r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}"#;
        assert_eq!(kind("content_block_start", tool), EventKind::ToolCall);
        let js = r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"location\":"}}"#;
        assert_eq!(kind("content_block_delta", js), EventKind::ToolCall);
        let md = r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}"#;
        let c = classify("message_delta", md);
        assert_eq!(c.finish_reason.as_deref(), Some("end_turn"));
        assert_eq!(c.usage.and_then(|u| u.output_tokens), Some(15));
        let stop = r#"{"type":"message_stop"}"#;
        assert_eq!(kind("message_stop", stop), EventKind::Done);
        let err = r#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#;
        let c = classify("error", err);
        assert_eq!(c.error.as_deref(), Some("overloaded_error: Overloaded"));
    }

    #[test]
    fn openai_responses_events() {
        let created = r#"{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress"}}"#;
        let c = classify("response.created", created);
        assert_eq!(c.kind(), EventKind::Lifecycle);
        assert_eq!(c.response_id.as_deref(), Some("resp_1"));
        let d = r#"{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi","sequence_number":4}"#;
        assert_eq!(kind("response.output_text.delta", d), EventKind::Text);
        let r = r#"{"type":"response.reasoning_summary_text.delta","item_id":"rs_1","output_index":0,"summary_index":0,"delta":"**Plan**"}"#;
        assert_eq!(kind("response.reasoning_summary_text.delta", r), EventKind::Reasoning);
        let f = r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":"{\""}"#;
        assert_eq!(kind("response.function_call_arguments.delta", f), EventKind::ToolCall);
        let done = r#"{"type":"response.completed","response":{"id":"resp_1","object":"response","status":"completed","usage":{"input_tokens":36,"output_tokens":87,"output_tokens_details":{"reasoning_tokens":64},"total_tokens":123}}}"#;
        let c = classify("response.completed", done);
        assert!(c.terminal);
        assert_eq!(c.finish_reason.as_deref(), Some("completed"));
        assert_eq!(
            c.usage,
            Some(Usage { input_tokens: Some(36), output_tokens: Some(87), reasoning_tokens: Some(64) })
        );
        let failed = r#"{"type":"response.failed","response":{"id":"resp_1","status":"failed","error":{"code":"server_error","message":"boom"}}}"#;
        assert_eq!(classify("response.failed", failed).error.as_deref(), Some("server_error: boom"));
        let err = r#"{"type":"error","code":"ERR_SOMETHING","message":"Something went wrong","param":null,"sequence_number":1}"#;
        assert_eq!(classify("error", err).error.as_deref(), Some("ERR_SOMETHING: Something went wrong"));
    }

    #[test]
    fn garbage_is_unknown_never_a_panic() {
        for data in ["", "{", "null", "[1,2]", "\"str\"", "{\"choices\":5}", "<html>", "{\"type\":7}"] {
            let c = classify("message", data);
            assert!(c.token.is_none(), "{data}");
        }
        assert_eq!(kind("error", "upstream timed out"), EventKind::Error);
    }
}
