//! A fast path for the three event shapes that carry nearly every token — an OpenAI chat or
//! completions chunk (`{"choices":[{"delta":{"content":"…"}}]}`), an Anthropic
//! `content_block_delta` and an OpenAI Responses `response.*.delta` — that reads them without
//! serde or allocation. Anything else, or anything unusual about these (an escape where a
//! value is compared, a duplicate field, a number serde_json might refuse, deep nesting, usage,
//! errors), returns `None` and the event goes to `triage_core::stream::classify`.
//!
//! When it answers, the answer is exactly what `classify` gives (a differential test over every
//! event of the recorded streams and thousands of mutations of them checks it). In the wasm
//! build, `classify` costs a few microseconds per event, most of the filter's per-chunk budget;
//! this costs a few hundred nanoseconds.
//!
//! Here: [`View`] and the event reader ([`quick`], [`quick_text`]) — which top-level fields,
//! `choices` and `delta` fields decide the reading, with duplicates refused through `Seen`.
//! The JSON walking itself is `json_cursor.rs`; the per-stream cache of the last token event's
//! bytes ([`Shape`]) is `shape.rs`.

mod json_cursor;
mod shape;
#[cfg(test)]
mod tests;

use std::marker::PhantomData;

use json_cursor::{JsonCursor, RawStr};
pub use shape::{SHAPE_MAX, Shape};
use triage_core::stream::{Classified, Dialect, TokenKind, Usage};

/// What the state machine needs from one event, borrowed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct View<'a> {
    pub dialect: Option<Dialect>,
    pub token: Option<TokenKind>,
    pub role_only: bool,
    pub usage: Option<Usage>,
    pub finish_reason: Option<&'a str>,
    pub error: Option<&'a str>,
    pub terminal: bool,
    pub ping: bool,
    pub response_id: Option<&'a str>,
    pub not_json: bool,
}

impl<'a> View<'a> {
    pub fn of(classified: &'a Classified) -> View<'a> {
        View {
            dialect: classified.dialect,
            token: classified.token,
            role_only: classified.role_only,
            usage: classified.usage,
            finish_reason: classified.finish_reason.as_deref(),
            error: classified.error.as_deref(),
            terminal: classified.terminal,
            ping: classified.ping,
            response_id: classified.response_id.as_deref(),
            not_json: classified.not_json,
        }
    }
}

/// The fields of one JSON object already read, one bit per field of `F`: a second one is a
/// duplicate key, which serde refuses, so the fast reading bails.
struct Seen<F> {
    bits: u16,
    kind: PhantomData<F>,
}

/// The fields of one kind of object that [`Seen`] tracks: each a distinct bit.
trait Field: Copy {
    fn bit(self) -> u16;
}

impl<F: Field> Seen<F> {
    fn new() -> Seen<F> {
        Seen { bits: 0, kind: PhantomData }
    }

    /// Mark `field` read; `None` when it was read already.
    fn once(&mut self, field: F) -> Option<()> {
        if self.bits & field.bit() != 0 {
            return None;
        }
        self.bits |= field.bit();
        Some(())
    }
}

/// The top-level fields of an event that core's serde types read: each may appear once.
#[derive(Clone, Copy)]
enum EventField {
    Id,
    Object,
    Type,
    Choices,
    Usage,
    Delta,
    Message,
    Response,
    ContentBlock,
}

/// The fields of one element of `choices` that core's serde types read.
#[derive(Clone, Copy)]
enum ChoiceField {
    Delta,
    Text,
    FinishReason,
}

/// The fields of a chat chunk's `delta` that core's serde types read.
#[derive(Clone, Copy)]
enum DeltaField {
    Role,
    Content,
    ReasoningContent,
    Reasoning,
    Refusal,
    ToolCalls,
    FunctionCall,
}

impl Field for EventField {
    fn bit(self) -> u16 {
        1 << self as u16
    }
}

impl Field for ChoiceField {
    fn bit(self) -> u16 {
        1 << self as u16
    }
}

impl Field for DeltaField {
    fn bit(self) -> u16 {
        1 << self as u16
    }
}

/// What `choices` holds, folded over its elements as `classify_openai` folds them.
#[derive(Default)]
struct Choices {
    text: bool,
    reasoning: bool,
    tool: bool,
    role: bool,
    completions_text: bool,
}

/// The top-level `delta` when it is an object (Anthropic): the fields read through
/// `serde_json::Value::get(..).as_str()`, where a repeated key's last value wins.
#[derive(Default, Clone, Copy)]
struct DeltaObj<'a> {
    ty: Option<RawStr<'a>>,
    text: Option<RawStr<'a>>,
    thinking: Option<RawStr<'a>>,
    partial_json: Option<RawStr<'a>>,
}

/// The top-level `delta`: a string (OpenAI Responses), an object (Anthropic), or neither.
enum Delta<'a> {
    Absent,
    Str(RawStr<'a>),
    Obj(DeltaObj<'a>),
    Other,
}

fn anthropic_delta<'a>(cursor: &mut JsonCursor<'a>) -> Option<DeltaObj<'a>> {
    let mut delta = DeltaObj::default();
    cursor.object(|cursor, key| {
        let slot = match key {
            "type" => &mut delta.ty,
            "text" => &mut delta.text,
            "thinking" => &mut delta.thinking,
            "partial_json" => &mut delta.partial_json,
            _ => return cursor.skip(2),
        };
        *slot = match cursor.peek()? {
            b'"' => {
                let value = cursor.string()?;
                if key != "type" {
                    cursor.token_text(Some(value));
                }
                Some(value)
            }
            _ => {
                cursor.skip(2)?;
                None
            }
        };
        Some(())
    })?;
    Some(delta)
}

/// A chat chunk's `delta` object, folded into `folded`.
fn chat_delta(cursor: &mut JsonCursor<'_>, folded: &mut Choices) -> Option<()> {
    let mut seen = Seen::new();
    cursor.object(|cursor, key| {
        let field = match key {
            "role" => DeltaField::Role,
            "content" => DeltaField::Content,
            "reasoning_content" => DeltaField::ReasoningContent,
            "reasoning" => DeltaField::Reasoning,
            "refusal" => DeltaField::Refusal,
            "tool_calls" => DeltaField::ToolCalls,
            "function_call" => DeltaField::FunctionCall,
            _ => return cursor.skip(3),
        };
        seen.once(field)?;
        match field {
            DeltaField::ToolCalls => {
                if cursor.peek()? == b'n' {
                    return cursor.literal(b"null");
                }
                let calls = cursor.array(|cursor| cursor.skip(4))?;
                folded.tool |= calls > 0;
                Some(())
            }
            DeltaField::FunctionCall => {
                if cursor.peek()? == b'n' {
                    return cursor.literal(b"null");
                }
                folded.tool = true;
                cursor.skip(3)
            }
            DeltaField::Role => {
                folded.role |= cursor.opt_string()?.is_some();
                Some(())
            }
            DeltaField::Content
            | DeltaField::Refusal
            | DeltaField::ReasoningContent
            | DeltaField::Reasoning => {
                let value = cursor.opt_string()?;
                cursor.token_text(value);
                let non_empty = value.is_some_and(RawStr::non_empty);
                match field {
                    DeltaField::Content | DeltaField::Refusal => folded.text |= non_empty,
                    _ => folded.reasoning |= non_empty,
                }
                Some(())
            }
        }
    })
}

/// Parse `choices` as core's `RawChoice` list would, folding it as `classify_openai` does.
/// `finish` receives the last non-null finish reason (its raw text; escapes bail).
fn choices<'a>(
    cursor: &mut JsonCursor<'a>,
    folded: &mut Choices,
    finish: &mut Option<&'a str>,
) -> Option<()> {
    cursor
        .array(|cursor| {
            let mut seen = Seen::new();
            cursor.object(|cursor, key| match key {
                "delta" => {
                    seen.once(ChoiceField::Delta)?;
                    if cursor.peek()? == b'n' {
                        return cursor.literal(b"null");
                    }
                    chat_delta(cursor, folded)
                }
                "text" => {
                    seen.once(ChoiceField::Text)?;
                    let value = cursor.opt_string()?;
                    cursor.token_text(value);
                    if value.is_some_and(RawStr::non_empty) {
                        folded.text = true;
                        folded.completions_text = true;
                    }
                    Some(())
                }
                "finish_reason" => {
                    seen.once(ChoiceField::FinishReason)?;
                    if let Some(reason) = cursor.opt_string()? {
                        *finish = Some(reason.plain()?);
                    }
                    Some(())
                }
                _ => cursor.skip(2),
            })
        })
        .map(|_| ())
}

/// The fast reading of one event, or `None` to let `classify` decide.
pub fn quick<'a>(data: &'a str) -> Option<View<'a>> {
    quick_text(data).map(|(view, _)| view)
}

/// [`quick`], and where the event's token text lies in `data` when the answer rests on one
/// non-empty plain string (a chunk's `content`, an Anthropic `text`, a Responses `delta`):
/// the event that differs from this one only inside that string, by another non-empty plain
/// string, reads the same. [`Shape`] keeps that to skip the scan for the next event.
pub fn quick_text<'a>(data: &'a str) -> Option<(View<'a>, Option<(usize, usize)>)> {
    let trimmed = data.trim();
    if !trimmed.starts_with('{') {
        return None;
    }
    let lead = data.len() - data.trim_start().len();
    let mut cursor = JsonCursor::new(trimmed);
    let view = scan(&mut cursor)?;
    let text =
        cursor.only_token_text().filter(|_| Shape::fits(&view)).map(|(from, to)| (lead + from, lead + to));
    Some((view, text))
}

/// The value of a string field compared by its text: `None` when escapes make it unsure.
fn plain_or_absent(value: Option<RawStr<'_>>) -> Option<Option<&str>> {
    match value {
        Some(value) => Some(Some(value.plain()?)),
        None => Some(None),
    }
}

/// Read one event: its top-level fields, then the dialect and reading they make.
fn scan<'a>(cursor: &mut JsonCursor<'a>) -> Option<View<'a>> {
    let mut seen = Seen::new();
    let (mut id, mut object, mut ty) = (None, None, None);
    let mut folded: Option<Choices> = None;
    let mut finish: Option<&'a str> = None;
    let mut delta = Delta::Absent;
    cursor.object(|cursor, key| match key {
        "id" => {
            seen.once(EventField::Id)?;
            id = cursor.opt_string()?;
            Some(())
        }
        "object" => {
            seen.once(EventField::Object)?;
            object = cursor.opt_string()?;
            Some(())
        }
        "type" => {
            seen.once(EventField::Type)?;
            ty = cursor.opt_string()?;
            Some(())
        }
        "choices" => {
            seen.once(EventField::Choices)?;
            let mut choices_read = Choices::default();
            choices(cursor, &mut choices_read, &mut finish)?;
            folded = Some(choices_read);
            Some(())
        }
        // Usage and errors are rare and need numbers or text read exactly: serde's job.
        "usage" => {
            seen.once(EventField::Usage)?;
            cursor.literal(b"null")
        }
        "error" => None,
        "delta" => {
            seen.once(EventField::Delta)?;
            delta = match cursor.peek()? {
                b'"' => {
                    let value = cursor.string()?;
                    cursor.token_text(Some(value));
                    Delta::Str(value)
                }
                b'{' => Delta::Obj(anthropic_delta(cursor)?),
                _ => {
                    cursor.skip(1)?;
                    Delta::Other
                }
            };
            Some(())
        }
        "message" => {
            seen.once(EventField::Message)?;
            cursor.skip(1)
        }
        "response" => {
            seen.once(EventField::Response)?;
            cursor.skip(1)
        }
        "content_block" => {
            seen.once(EventField::ContentBlock)?;
            cursor.skip(1)
        }
        _ => cursor.skip(1),
    })?;
    if !cursor.at_end() {
        return None;
    }
    // Everything compared must read the same raw and decoded.
    let id = plain_or_absent(id)?;
    let object = plain_or_absent(object)?;
    let ty = plain_or_absent(ty)?;
    if let Some(folded) = folded {
        let token = if folded.text {
            Some(TokenKind::Text)
        } else if folded.tool {
            Some(TokenKind::ToolCall)
        } else if folded.reasoning {
            Some(TokenKind::Reasoning)
        } else {
            None
        };
        let completions = folded.completions_text || object == Some("text_completion");
        return Some(View {
            dialect: Some(if completions { Dialect::OpenaiCompletions } else { Dialect::OpenaiChat }),
            token,
            role_only: folded.role && token.is_none(),
            finish_reason: finish,
            response_id: id,
            ..View::default()
        });
    }
    let ty = ty?;
    if ty.starts_with("response.") || object == Some("response") {
        let kind = match ty {
            "response.output_text.delta" | "response.refusal.delta" => TokenKind::Text,
            "response.reasoning_text.delta" | "response.reasoning_summary_text.delta" => TokenKind::Reasoning,
            "response.function_call_arguments.delta"
            | "response.custom_tool_call_input.delta"
            | "response.mcp_call_arguments.delta" => TokenKind::ToolCall,
            _ => return None,
        };
        let non_empty = matches!(delta, Delta::Str(value) if value.non_empty());
        return Some(View {
            dialect: Some(Dialect::OpenaiResponses),
            token: non_empty.then_some(kind),
            ..View::default()
        });
    }
    if ty == "content_block_delta" {
        let token = match delta {
            Delta::Obj(delta) => {
                let has = |value: Option<RawStr<'_>>| value.is_some_and(RawStr::non_empty);
                match delta.ty.and_then(RawStr::plain) {
                    Some("text_delta") if has(delta.text) => Some(TokenKind::Text),
                    Some("thinking_delta") if has(delta.thinking) => Some(TokenKind::Reasoning),
                    Some("input_json_delta") if has(delta.partial_json) => Some(TokenKind::ToolCall),
                    // An escaped type name that might decode to one of the above: serde's job.
                    None if delta.ty.is_some() => return None,
                    _ => None,
                }
            }
            _ => None,
        };
        return Some(View { dialect: Some(Dialect::Anthropic), token, ..View::default() });
    }
    None
}
