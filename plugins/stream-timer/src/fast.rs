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
    pub fn of(c: &'a Classified) -> View<'a> {
        View {
            dialect: c.dialect,
            token: c.token,
            role_only: c.role_only,
            usage: c.usage,
            finish_reason: c.finish_reason.as_deref(),
            error: c.error.as_deref(),
            terminal: c.terminal,
            ping: c.ping,
            response_id: c.response_id.as_deref(),
            not_json: c.not_json,
        }
    }
}

const MAX_DEPTH: u32 = 64;

/// The bytes that end a plain run inside a JSON string: `"`, `\\` and controls.
const STOP: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 0x20 {
        t[c] = true;
        c += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// A JSON string as it stands in the input: its raw bytes and whether it holds escapes.
#[derive(Clone, Copy)]
struct Str<'a> {
    raw: &'a str,
    escaped: bool,
}

impl<'a> Str<'a> {
    /// The value, when it reads the same raw and decoded.
    fn plain(self) -> Option<&'a str> {
        (!self.escaped).then_some(self.raw)
    }
    fn non_empty(self) -> bool {
        !self.raw.is_empty()
    }
}

struct P<'a> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
}

impl<'a> P<'a> {
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn lit(&mut self, word: &[u8]) -> Option<()> {
        self.ws();
        if self.b[self.i..].starts_with(word) {
            self.i += word.len();
            Some(())
        } else {
            None
        }
    }

    /// A string whose escapes are all ones serde_json accepts (lone surrogates refused).
    fn string(&mut self) -> Option<Str<'a>> {
        if !self.eat(b'"') {
            return None;
        }
        let start = self.i;
        let mut escaped = false;
        let b = self.b;
        let mut i = self.i;
        loop {
            // The plain run up to the next quote, backslash or control byte.
            i += b.get(i..)?.iter().position(|&c| STOP[usize::from(c)])?;
            match b[i] {
                b'"' => {
                    let raw = self.s.get(start..i)?;
                    self.i = i + 1;
                    return Some(Str { raw, escaped });
                }
                b'\\' => {
                    escaped = true;
                    match *b.get(i + 1)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                        b'u' => {
                            let hex = b.get(i + 2..i + 6)?;
                            if !hex.iter().all(u8::is_ascii_hexdigit) {
                                return None;
                            }
                            let code =
                                hex.iter().fold(0u32, |a, &h| a * 16 + (h as char).to_digit(16).unwrap_or(0));
                            if (0xD800..=0xDFFF).contains(&code) {
                                return None;
                            }
                            i += 6;
                        }
                        _ => return None,
                    }
                }
                _ => return None,
            }
        }
    }

    /// `null` → `Some(None)`, a string → `Some(Some(s))`, anything else → `None` (bail).
    fn opt_string(&mut self) -> Option<Option<Str<'a>>> {
        match self.peek()? {
            b'n' => self.lit(b"null").map(|_| None),
            b'"' => self.string().map(Some),
            _ => None,
        }
    }

    /// Plain integers and decimals only: an exponent or a long mantissa goes to serde.
    fn number(&mut self) -> Option<()> {
        self.ws();
        let start = self.i;
        if self.b.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        match self.b.get(self.i)? {
            b'0' => self.i += 1,
            b'1'..=b'9' => {
                while self.b.get(self.i).is_some_and(u8::is_ascii_digit) {
                    self.i += 1;
                }
            }
            _ => return None,
        }
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            let digits = self.i;
            while self.b.get(self.i).is_some_and(u8::is_ascii_digit) {
                self.i += 1;
            }
            if self.i == digits {
                return None;
            }
        }
        if matches!(self.b.get(self.i), Some(b'e' | b'E')) || self.i - start > 15 {
            return None;
        }
        Some(())
    }

    fn skip(&mut self, depth: u32) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' => self.string().map(|_| ()),
            b'{' => {
                self.i += 1;
                if self.eat(b'}') {
                    return Some(());
                }
                loop {
                    self.string()?;
                    if !self.eat(b':') {
                        return None;
                    }
                    self.skip(depth + 1)?;
                    if self.eat(b'}') {
                        return Some(());
                    }
                    if !self.eat(b',') {
                        return None;
                    }
                }
            }
            b'[' => {
                self.i += 1;
                if self.eat(b']') {
                    return Some(());
                }
                loop {
                    self.skip(depth + 1)?;
                    if self.eat(b']') {
                        return Some(());
                    }
                    if !self.eat(b',') {
                        return None;
                    }
                }
            }
            b't' => self.lit(b"true"),
            b'f' => self.lit(b"false"),
            b'n' => self.lit(b"null"),
            _ => self.number(),
        }
    }

    /// Walk an object, calling `field` on each key with the parser at its value; `field` must
    /// consume the value. Duplicate keys are the caller's business.
    fn object(&mut self, mut field: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        if !self.eat(b'{') {
            return None;
        }
        if self.eat(b'}') {
            return Some(());
        }
        loop {
            let key = self.string()?.plain()?;
            if !self.eat(b':') {
                return None;
            }
            field(self, key)?;
            if self.eat(b'}') {
                return Some(());
            }
            if !self.eat(b',') {
                return None;
            }
        }
    }

    /// Walk an array, calling `item` on each element; returns the element count.
    fn array(&mut self, mut item: impl FnMut(&mut Self) -> Option<()>) -> Option<usize> {
        if !self.eat(b'[') {
            return None;
        }
        if self.eat(b']') {
            return Some(0);
        }
        let mut n = 0;
        loop {
            item(self)?;
            n += 1;
            if self.eat(b']') {
                return Some(n);
            }
            if !self.eat(b',') {
                return None;
            }
        }
    }
}

/// Set a flag once; a second time means a duplicate field, which serde refuses.
fn once(seen: &mut u32, bit: u32) -> Option<()> {
    if *seen & bit != 0 {
        return None;
    }
    *seen |= bit;
    Some(())
}

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
    ty: Option<Str<'a>>,
    text: Option<Str<'a>>,
    thinking: Option<Str<'a>>,
    partial_json: Option<Str<'a>>,
}

enum Delta<'a> {
    Absent,
    Str(Str<'a>),
    Obj(DeltaObj<'a>),
    Other,
}

fn anthropic_delta<'a>(p: &mut P<'a>) -> Option<DeltaObj<'a>> {
    let mut d = DeltaObj::default();
    p.object(|p, key| {
        let slot = match key {
            "type" => &mut d.ty,
            "text" => &mut d.text,
            "thinking" => &mut d.thinking,
            "partial_json" => &mut d.partial_json,
            _ => return p.skip(2),
        };
        *slot = match p.peek()? {
            b'"' => Some(p.string()?),
            _ => {
                p.skip(2)?;
                None
            }
        };
        Some(())
    })?;
    Some(d)
}

/// Parse `choices` as core's `RawChoice` list would, folding it as `classify_openai` does.
/// `finish` receives the last non-null finish reason (its raw text; escapes bail).
fn choices<'a>(p: &mut P<'a>, c: &mut Choices, finish: &mut Option<&'a str>) -> Option<()> {
    p.array(|p| {
        let mut seen = 0u32;
        p.object(|p, key| match key {
            "delta" => {
                once(&mut seen, 1)?;
                if p.peek()? == b'n' {
                    return p.lit(b"null");
                }
                let mut dseen = 0u32;
                p.object(|p, k| {
                    let bit = match k {
                        "role" => 1,
                        "content" => 2,
                        "reasoning_content" => 4,
                        "reasoning" => 8,
                        "refusal" => 16,
                        "tool_calls" => 32,
                        "function_call" => 64,
                        _ => return p.skip(3),
                    };
                    once(&mut dseen, bit)?;
                    match k {
                        "tool_calls" => {
                            if p.peek()? == b'n' {
                                return p.lit(b"null");
                            }
                            let n = p.array(|p| p.skip(4))?;
                            c.tool |= n > 0;
                            Some(())
                        }
                        "function_call" => {
                            if p.peek()? == b'n' {
                                return p.lit(b"null");
                            }
                            c.tool = true;
                            p.skip(3)
                        }
                        _ => {
                            let v = p.opt_string()?;
                            let non_empty = v.is_some_and(Str::non_empty);
                            match k {
                                "role" => c.role |= v.is_some(),
                                "content" | "refusal" => c.text |= non_empty,
                                _ => c.reasoning |= non_empty,
                            }
                            Some(())
                        }
                    }
                })
            }
            "text" => {
                once(&mut seen, 2)?;
                if p.opt_string()?.is_some_and(Str::non_empty) {
                    c.text = true;
                    c.completions_text = true;
                }
                Some(())
            }
            "finish_reason" => {
                once(&mut seen, 4)?;
                if let Some(f) = p.opt_string()? {
                    *finish = Some(f.plain()?);
                }
                Some(())
            }
            _ => p.skip(2),
        })
    })
    .map(|_| ())
}

/// The fast reading of one event, or `None` to let `classify` decide.
pub fn quick<'a>(data: &'a str) -> Option<View<'a>> {
    let s = data.trim();
    if !s.starts_with('{') {
        return None;
    }
    let mut p = P { s, b: s.as_bytes(), i: 0 };
    let mut seen = 0u32;
    let (mut id, mut object, mut ty) = (None, None, None);
    let mut ch: Option<Choices> = None;
    let mut finish: Option<&'a str> = None;
    let mut delta = Delta::Absent;
    p.object(|p, key| match key {
        "id" => {
            once(&mut seen, 1)?;
            id = p.opt_string()?;
            Some(())
        }
        "object" => {
            once(&mut seen, 2)?;
            object = p.opt_string()?;
            Some(())
        }
        "type" => {
            once(&mut seen, 4)?;
            ty = p.opt_string()?;
            Some(())
        }
        "choices" => {
            once(&mut seen, 8)?;
            let mut c = Choices::default();
            choices(p, &mut c, &mut finish)?;
            ch = Some(c);
            Some(())
        }
        // Usage and errors are rare and need numbers or text read exactly: serde's job.
        "usage" => {
            once(&mut seen, 16)?;
            p.lit(b"null")
        }
        "error" => None,
        "delta" => {
            once(&mut seen, 32)?;
            delta = match p.peek()? {
                b'"' => Delta::Str(p.string()?),
                b'{' => Delta::Obj(anthropic_delta(p)?),
                _ => {
                    p.skip(1)?;
                    Delta::Other
                }
            };
            Some(())
        }
        "message" => {
            once(&mut seen, 64)?;
            p.skip(1)
        }
        "response" => {
            once(&mut seen, 128)?;
            p.skip(1)
        }
        "content_block" => {
            once(&mut seen, 256)?;
            p.skip(1)
        }
        _ => p.skip(1),
    })?;
    p.ws();
    if p.i != p.b.len() {
        return None;
    }
    // Everything compared must read the same raw and decoded.
    let id = match id {
        Some(s) => Some(s.plain()?),
        None => None,
    };
    let object = match object {
        Some(s) => Some(s.plain()?),
        None => None,
    };
    let ty = match ty {
        Some(s) => Some(s.plain()?),
        None => None,
    };
    if let Some(c) = ch {
        let token = if c.text {
            Some(TokenKind::Text)
        } else if c.tool {
            Some(TokenKind::ToolCall)
        } else if c.reasoning {
            Some(TokenKind::Reasoning)
        } else {
            None
        };
        let completions = c.completions_text || object == Some("text_completion");
        return Some(View {
            dialect: Some(if completions { Dialect::OpenaiCompletions } else { Dialect::OpenaiChat }),
            token,
            role_only: c.role && token.is_none(),
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
        let non_empty = matches!(delta, Delta::Str(s) if s.non_empty());
        return Some(View {
            dialect: Some(Dialect::OpenaiResponses),
            token: non_empty.then_some(kind),
            ..View::default()
        });
    }
    if ty == "content_block_delta" {
        let token = match delta {
            Delta::Obj(d) => {
                let has = |v: Option<Str<'_>>| v.is_some_and(Str::non_empty);
                match d.ty.and_then(Str::plain) {
                    Some("text_delta") if has(d.text) => Some(TokenKind::Text),
                    Some("thinking_delta") if has(d.thinking) => Some(TokenKind::Reasoning),
                    Some("input_json_delta") if has(d.partial_json) => Some(TokenKind::ToolCall),
                    // An escaped type name that might decode to one of the above: serde's job.
                    None if d.ty.is_some() => return None,
                    _ => None,
                }
            }
            _ => None,
        };
        return Some(View { dialect: Some(Dialect::Anthropic), token, ..View::default() });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use triage_core::sse::{SseItem, SseParser};
    use triage_core::stream::classify;

    fn same(event: &str, data: &str) -> bool {
        match quick(data) {
            None => false,
            Some(v) => {
                let c = classify(event, data);
                assert_eq!(v, View::of(&c), "{event:?} {data:?}");
                true
            }
        }
    }

    fn recorded() -> Vec<(String, String)> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/sse");
        let mut out = Vec::new();
        let mut names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
        names.sort();
        for path in names {
            let bytes = std::fs::read(&path).unwrap();
            SseParser::new().feed(&bytes, 0, &mut |item| {
                if let SseItem::Event(e) = item {
                    out.push((e.event.to_owned(), e.data.to_owned()));
                }
            });
        }
        out
    }

    #[test]
    fn hot_shapes_take_the_fast_path_and_agree() {
        let hot = [
            r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hi"},"logprobs":null,"finish_reason":null}]}"#,
            r#"{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
            r#"{"choices":[{"delta":{"reasoning_content":"hm","content":null}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":1}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"content":"line\nbreak \u00e9 \"q\""}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"stop"}],"usage":null}"#,
            r#"{"id":"cmpl-1","object":"text_completion","choices":[{"text":" world","index":0,"finish_reason":null}]}"#,
            r#"{"choices":[]}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":""}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"loc"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"x"}}"#,
            r#"{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi","sequence_number":4}"#,
            r#"{"type":"response.reasoning_summary_text.delta","delta":""}"#,
            r#"  {"choices":[{"delta":{"content":"x"}}]}  "#,
        ];
        for data in hot {
            assert!(same("message", data), "{data}");
        }
        for data in [
            "[DONE]",
            r#"{"choices":[{"delta":{"content":"x"}}],"usage":{"prompt_tokens":1}}"#,
            r#"{"error":{"message":"x"}}"#,
            r#"{"type":"message_start","message":{}}"#,
            r#"{"choices":[{"delta":{"content":"x"}}]} trailing"#,
            r#"{"choices":[{"delta":{"content":"x","content":"y"}}]}"#,
            r#"{"choices":[{"delta":{"content":1}}]}"#,
            r#"{"a":1e5,"choices":[]}"#,
            r#"{"choices":[{"delta":{"content":"\ud800"}}]}"#,
            r#"{"type":"response.completed","response":{}}"#,
            "{",
        ] {
            assert!(quick(data).is_none(), "{data}");
        }
    }

    #[test]
    fn agrees_with_classify_on_recorded_events_and_their_mutations() {
        let events = recorded();
        assert!(events.len() > 50);
        let mut fast = 0;
        for (e, d) in &events {
            fast += usize::from(same(e, d));
        }
        // Short documented examples: many lifecycle events; the token events are the fast ones.
        assert!(fast * 3 > events.len(), "the token events take the fast path ({fast}/{})", events.len());
        // Mutations: byte edits, deletions and insertions of JSON-significant bytes.
        let alphabet = br#"{}[]:,"\ nu0e1-.x"#;
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = |n: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n as u64) as usize
        };
        let (mut tried, mut compared) = (0, 0);
        for (e, d) in &events {
            for _ in 0..300 {
                let mut b = d.clone().into_bytes();
                for _ in 0..1 + rnd(3) {
                    let at = rnd(b.len() + 1);
                    match rnd(3) {
                        0 if at < b.len() => b[at] = alphabet[rnd(alphabet.len())],
                        1 if at < b.len() => {
                            b.remove(at);
                        }
                        _ => b.insert(at, alphabet[rnd(alphabet.len())]),
                    }
                }
                if let Ok(s) = String::from_utf8(b) {
                    compared += usize::from(same(e, &s));
                    tried += 1;
                }
            }
        }
        assert!(tried > 10_000);
        assert!(compared > 2_000, "{compared} of {tried} mutations read fast and compared");
    }
}
