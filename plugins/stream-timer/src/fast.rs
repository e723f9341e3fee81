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

/// The first byte at or after `i` that ends a plain run (`STOP`): `"`, `\\` or below 0x20,
/// eight bytes per step ([`triage_core::words`]). In wasm, where the per-byte loop also pays an
/// interruption check per iteration, this is most of the scanner's speed on ids, model names
/// and text.
fn stop_at(b: &[u8], i: usize) -> Option<usize> {
    use triage_core::words::{below, equal, first};
    let flags = |x| equal(x, b'"') | equal(x, b'\\') | below(x, 0x20);
    Some(i + first(b.get(i..)?, flags, |c| STOP[usize::from(c)])?)
}

/// A JSON string as it stands in the input: its raw bytes and whether it holds escapes.
#[derive(Clone, Copy)]
struct Str<'a> {
    raw: &'a str,
    escaped: bool,
    /// Where `raw` starts in the scanned text.
    at: usize,
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
    /// How many non-empty strings that can make the event a token were read, and the last.
    texts: u32,
    text: (usize, usize),
}

impl<'a> P<'a> {
    /// `v` is a value whose non-emptiness can make the event a token (content, text, …).
    fn token_text(&mut self, v: Option<Str<'a>>) {
        if let Some(v) = v.filter(|v| v.non_empty()) {
            self.texts += 1;
            self.text = (v.at, v.at + v.raw.len());
        }
    }

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
            i = stop_at(b, i)?;
            match b[i] {
                b'"' => {
                    let raw = self.s.get(start..i)?;
                    self.i = i + 1;
                    return Some(Str { raw, escaped, at: start });
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
            b'"' => {
                let v = p.string()?;
                if key != "type" {
                    p.token_text(Some(v));
                }
                Some(v)
            }
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
                            if k != "role" {
                                p.token_text(v);
                            }
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
                let v = p.opt_string()?;
                p.token_text(v);
                if v.is_some_and(Str::non_empty) {
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
    quick_text(data).map(|(v, _)| v)
}

/// [`quick`], and where the event's token text lies in `data` when the answer rests on one
/// non-empty plain string (a chunk's `content`, an Anthropic `text`, a Responses `delta`):
/// the event that differs from this one only inside that string, by another non-empty plain
/// string, reads the same. [`Shape`] keeps that to skip the scan for the next event.
pub fn quick_text<'a>(data: &'a str) -> Option<(View<'a>, Option<(usize, usize)>)> {
    let s = data.trim();
    if !s.starts_with('{') {
        return None;
    }
    let lead = data.len() - data.trim_start().len();
    let mut p = P { s, b: s.as_bytes(), i: 0, texts: 0, text: (0, 0) };
    let view = scan(&mut p)?;
    let text = (p.texts == 1 && Shape::fits(&view)).then(|| (lead + p.text.0, lead + p.text.1));
    Some((view, text))
}

fn scan<'a>(p: &mut P<'a>) -> Option<View<'a>> {
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
                b'"' => {
                    let v = p.string()?;
                    p.token_text(Some(v));
                    Delta::Str(v)
                }
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

/// The longest event text (without its token text) a [`Shape`] keeps: 512 bytes of heap per
/// stream at most. Token events are 150–300 bytes around their text in every dialect seen.
pub const SHAPE_MAX: usize = 512;

/// After this many events in a row that do not fit the kept shape (any events: lifecycle ones
/// between content blocks count too, and a fitting token event starts the count again), a
/// stream stops keeping one (a server that varies other fields per event, such as OpenAI's
/// `obfuscation` padding).
const SHAPE_MISSES: u8 = 8;

/// The last token event of a stream with its token text cut out, and what it read as.
///
/// Servers send every token event of a stream in one shape: the same bytes around a different
/// text (`{"id":"chatcmpl-…","choices":[{"index":0,"delta":{"content":"` … `"},…}]}`). An
/// event with exactly those bytes before and after a non-empty plain string (no quote,
/// backslash or control byte) is the same JSON document but for that string, and [`quick`]
/// reads it the same — which two comparisons and one scan of the text establish, instead of a
/// walk of the whole document (its strings, numbers and nesting). Everything else goes to
/// [`quick`], whose answer, when it rests on one such string, becomes the kept shape.
#[derive(Debug, Clone, Default)]
pub struct Shape {
    around: Box<[u8]>,
    prefix: usize,
    read_as: Option<(Option<Dialect>, TokenKind)>,
    misses: u8,
}

impl Shape {
    /// Views a shape may stand for: a plain token event, nothing else read from it.
    fn fits(v: &View<'_>) -> bool {
        v.token.is_some()
            && !v.role_only
            && v.usage.is_none()
            && v.finish_reason.is_none()
            && v.error.is_none()
            && !v.terminal
            && !v.ping
            && !v.not_json
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.around.len()
    }

    /// [`quick`]'s reading of `data`, from the kept shape when `data` fits it, as the timer
    /// reads an event ([`Shape::hit`] on its bytes, else [`Shape::learn`] from its text). A view
    /// read from the shape carries no response id: the event that made the shape gave it
    /// already.
    #[cfg(test)]
    pub fn read<'a>(&mut self, data: &'a str) -> Option<View<'a>> {
        match self.hit(data.as_bytes()) {
            Some(v) => Some(v),
            None => self.learn(data),
        }
    }

    /// The reading of an event that fits the kept shape, from its raw bytes. Bytes that are not
    /// UTF-8 change nothing: they can only sit inside the text (everything around it is the
    /// kept, valid bytes), where U+FFFD replaces them and the text stays non-empty and plain.
    /// `None` when it does not fit; then [`Shape::learn`] from the event's text.
    pub fn hit(&mut self, data: &[u8]) -> Option<View<'static>> {
        let (dialect, token) = self.read_as?;
        if self.fits_bytes(data) {
            self.misses = 0;
            return Some(View { dialect, token: Some(token), ..View::default() });
        }
        self.misses += 1;
        if self.misses >= SHAPE_MISSES {
            *self = Shape { misses: SHAPE_MISSES, ..Shape::default() };
        }
        None
    }

    /// [`quick`]'s reading of an event that missed, kept as the shape when it can be one.
    pub fn learn<'a>(&mut self, data: &'a str) -> Option<View<'a>> {
        let (view, text) = quick_text(data)?;
        if let (Some((from, to)), Some(token)) = (text, view.token)
            && self.misses < SHAPE_MISSES
            && data.len() - (to - from) <= SHAPE_MAX
        {
            let b = data.as_bytes();
            self.around = [&b[..from], &b[to..]].concat().into_boxed_slice();
            self.prefix = from;
            self.read_as = Some((view.dialect, token));
        }
        Some(view)
    }

    fn fits_bytes(&self, d: &[u8]) -> bool {
        let (before, after) = self.around.split_at(self.prefix);
        d.len() > self.around.len()
            && same_bytes(&d[..before.len()], before)
            && same_bytes(&d[d.len() - after.len()..], after)
            && stop_at(&d[before.len()..d.len() - after.len()], 0).is_none()
    }
}

/// `a == b` for slices of one length, eight bytes per step (the slice comparison is a
/// byte-by-byte `memcmp` in wasm).
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let ((a8, a_rest), (b8, b_rest)) = (a.as_chunks::<8>(), b.as_chunks::<8>());
    a.len() == b.len()
        && a8.iter().zip(b8).all(|(x, y)| u64::from_ne_bytes(*x) == u64::from_ne_bytes(*y))
        && a_rest == b_rest
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

    /// The events of every recorded stream, one list per stream.
    fn recorded_streams() -> Vec<Vec<(String, String)>> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/sse");
        let mut names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
        names.sort();
        names
            .iter()
            .map(|path| {
                let mut out = Vec::new();
                SseParser::new().feed(&std::fs::read(path).unwrap(), 0, &mut |item| {
                    if let SseItem::Event(e) = item {
                        out.push((e.event.to_owned(), e.data.to_owned()));
                    }
                });
                out
            })
            .collect()
    }

    fn recorded() -> Vec<(String, String)> {
        recorded_streams().into_iter().flatten().collect()
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
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let (mut tried, mut compared) = (0, 0);
        for (e, d) in &events {
            for _ in 0..300 {
                let b = rng.mutate(d, br#"{}[]:,"\ nu0e1-.x"#, None);
                if let Ok(s) = String::from_utf8(b) {
                    compared += usize::from(same(e, &s));
                    tried += 1;
                }
            }
        }
        assert!(tried > 10_000);
        assert!(compared > 2_000, "{compared} of {tried} mutations read fast and compared");
    }

    /// xorshift64: the tests' mutations, the same on every run.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            let x = &mut self.0;
            *x ^= *x << 13;
            *x ^= *x >> 7;
            *x ^= *x << 17;
            (*x % n as u64) as usize
        }

        /// `d` with one to three bytes replaced, removed or inserted (from `alphabet`); with
        /// `around`, half the edits fall inside that range.
        fn mutate(&mut self, d: &str, alphabet: &[u8], around: Option<(usize, usize)>) -> Vec<u8> {
            let mut b = d.as_bytes().to_vec();
            for _ in 0..1 + self.below(3) {
                let at = match around {
                    Some((from, to)) if self.below(2) == 0 => from + self.below(to - from + 1),
                    _ => self.below(b.len() + 1),
                }
                .min(b.len());
                match self.below(3) {
                    0 if at < b.len() => b[at] = alphabet[self.below(alphabet.len())],
                    1 if at < b.len() => {
                        b.remove(at);
                    }
                    _ => b.insert(at, alphabet[self.below(alphabet.len())]),
                }
            }
            b
        }
    }

    /// What a shape may leave out: the response id (the event that made the shape gave it).
    fn without_id(v: View<'_>) -> View<'_> {
        View { response_id: None, ..v }
    }

    /// Every recorded event, in stream order, read through one shape per stream: the same as
    /// `quick` (and so as `classify`).
    #[test]
    fn shape_reads_recorded_streams_as_quick_does() {
        let (mut hits, mut total) = (0, 0);
        for events in recorded_streams() {
            let mut shape = Shape::default();
            for (_, d) in events {
                hits += usize::from(shape.read_as.is_some() && shape.fits_bytes(d.as_bytes()));
                let v = shape.read(&d);
                assert_eq!(v.map(without_id), quick(&d).map(without_id), "{d}");
                assert!(shape.heap_bytes() <= SHAPE_MAX);
                total += 1;
            }
        }
        // The documentation streams are short; Responses events carry a sequence number, so
        // each reads in full.
        assert!(total > 50 && hits >= 6, "{hits} of {total} events read from the shape");
    }

    /// A token event learnt, then every mutation of the next one (edits anywhere: around the
    /// text, inside it, quotes and backslashes into it, a different length) reads as `quick`
    /// reads it. Ids aside, exactly.
    #[test]
    fn shape_agrees_with_quick_on_mutated_next_events() {
        let events: Vec<String> = recorded()
            .into_iter()
            .map(|(_, d)| d)
            .filter(|d| quick_text(d).is_some_and(|(_, t)| t.is_some()))
            .collect();
        assert!(events.len() > 10, "token events with a shape: {}", events.len());
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let (mut hits, mut tried) = (0, 0);
        for d in &events {
            let (_, text) = quick_text(d).unwrap();
            let (from, to) = text.unwrap();
            for _ in 0..400 {
                let mut shape = Shape::default();
                assert!(shape.read(d).is_some());
                // Half the mutations inside the text, where the shape still applies.
                let b = rng.mutate(d, "{}[]:,\"\\ nu0e1-.x\u{e9}".as_bytes(), Some((from, to)));
                let Ok(next) = String::from_utf8(b) else { continue };
                hits += usize::from(shape.read_as.is_some() && shape.fits_bytes(next.as_bytes()));
                let v = shape.read(&next);
                assert_eq!(v.map(without_id), quick(&next).map(without_id), "{d}\n→ {next}");
                tried += 1;
            }
        }
        assert!(tried > 4_000 && hits > 500, "{hits} of {tried} read from the shape");
    }

    #[test]
    fn shape_gives_up_on_streams_that_never_repeat_and_keeps_no_large_event() {
        let mut shape = Shape::default();
        for i in 0..20 {
            let d =
                format!(r#"{{"choices":[{{"delta":{{"content":"x"}}}}],"obfuscation":"{}"}}"#, "p".repeat(i));
            assert_eq!(shape.read(&d).and_then(|v| v.token), Some(TokenKind::Text));
        }
        assert_eq!(shape.heap_bytes(), 0, "no shape kept after {SHAPE_MISSES} misses in a row");
        assert!(shape.read_as.is_none());

        let mut shape = Shape::default();
        let big =
            format!(r#"{{"pad":"{}","choices":[{{"delta":{{"content":"x"}}}}]}}"#, "p".repeat(SHAPE_MAX));
        assert!(shape.read(&big).is_some());
        assert_eq!(shape.heap_bytes(), 0);

        // An event with two texts (n > 1 choices) gives no shape; one with one text does.
        let mut shape = Shape::default();
        shape.read(r#"{"choices":[{"delta":{"content":"a"}},{"delta":{"content":"b"}}]}"#);
        assert_eq!(shape.heap_bytes(), 0);
        let one = r#"{"choices":[{"delta":{"content":"a"}}]}"#;
        shape.read(one);
        assert_eq!(shape.heap_bytes(), one.len() - 1);
        // Bytes that are not UTF-8 inside the text read as their U+FFFD replacement would.
        for text in [&b"\xff"[..], b"a\xc3", b"\xe4\xb8", b"\xed\xa0\x80"] {
            let mut shape = Shape::default();
            shape.read(one);
            let next = [&br#"{"choices":[{"delta":{"content":""#[..], text, br#""}}]}"#].concat();
            let lossy = String::from_utf8_lossy(&next);
            assert_eq!(shape.hit(&next).map(without_id), quick(&lossy).map(without_id), "{lossy}");
            assert!(shape.hit(&next).is_some());
        }
        // An empty text is not a token: the shape does not answer for it.
        let empty = r#"{"choices":[{"delta":{"content":""}}]}"#;
        assert_eq!(shape.read(empty).map(|v| v.token), Some(None));
    }
}
