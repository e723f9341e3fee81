//! `JsonCursor`: a position in one JSON document, read forward without serde or allocation —
//! whitespace, literals, strings (their raw bytes, escapes checked as serde_json checks them),
//! plain numbers, objects and arrays walked through callbacks, and any value skipped. It answers
//! `None` for anything serde might read differently (an exponent, a long mantissa, a lone
//! surrogate, nesting deeper than [`MAX_DEPTH`]), and the event goes to `classify`.
//!
//! Also here: [`stop_at`], the search for the end of a plain run inside a string, which the
//! kept shape ([`super::shape`]) uses to check a token text.

/// The deepest nesting [`JsonCursor::skip`] walks into before it gives up.
const MAX_DEPTH: u32 = 64;

/// The bytes that end a plain run inside a JSON string: `"`, `\\` and controls.
const STOP: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < 0x20 {
        table[byte] = true;
        byte += 1;
    }
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table
};

/// The first byte at or after `from` that ends a plain run (`STOP`): `"`, `\\` or below 0x20,
/// eight bytes per step ([`triage_core::words`]). In wasm, where the per-byte loop also pays an
/// interruption check per iteration, this is most of the scanner's speed on ids, model names
/// and text.
pub(super) fn stop_at(bytes: &[u8], from: usize) -> Option<usize> {
    use triage_core::words::{below, equal, first};
    let flags = |x| equal(x, b'"') | equal(x, b'\\') | below(x, 0x20);
    Some(from + first(bytes.get(from..)?, flags, |c| STOP[usize::from(c)])?)
}

/// A JSON string as it stands in the input: its raw bytes and whether it holds escapes.
#[derive(Clone, Copy)]
pub(super) struct RawStr<'a> {
    pub(super) raw: &'a str,
    escaped: bool,
    /// Where `raw` starts in the scanned text.
    at: usize,
}

impl<'a> RawStr<'a> {
    /// The value, when it reads the same raw and decoded.
    pub(super) fn plain(self) -> Option<&'a str> {
        (!self.escaped).then_some(self.raw)
    }

    pub(super) fn non_empty(self) -> bool {
        !self.raw.is_empty()
    }
}

/// A read position in one JSON document (leading and trailing whitespace trimmed), and the
/// token texts met on the way.
pub(super) struct JsonCursor<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    /// How many non-empty strings that can make the event a token were read
    /// ([`JsonCursor::token_text`]).
    token_texts: u32,
    /// Where the last of them lies in `text`: start and end.
    last_token_text: (usize, usize),
}

impl<'a> JsonCursor<'a> {
    /// A cursor at the start of `text`.
    pub(super) fn new(text: &'a str) -> JsonCursor<'a> {
        JsonCursor { text, bytes: text.as_bytes(), pos: 0, token_texts: 0, last_token_text: (0, 0) }
    }

    /// Where the one token text of the document lies (start and end in the text), when exactly
    /// one was read.
    pub(super) fn only_token_text(&self) -> Option<(usize, usize)> {
        (self.token_texts == 1).then_some(self.last_token_text)
    }

    /// Whether the whole text was read (trailing whitespace aside).
    pub(super) fn at_end(&mut self) -> bool {
        self.skip_whitespace();
        self.pos == self.bytes.len()
    }

    /// `value` is a value whose non-emptiness can make the event a token (content, text, …).
    pub(super) fn token_text(&mut self, value: Option<RawStr<'a>>) {
        if let Some(value) = value.filter(|value| value.non_empty()) {
            self.token_texts += 1;
            self.last_token_text = (value.at, value.at + value.raw.len());
        }
    }

    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    /// The next byte that is not whitespace, not consumed.
    pub(super) fn peek(&mut self) -> Option<u8> {
        self.skip_whitespace();
        self.bytes.get(self.pos).copied()
    }

    /// Consume `byte` when it comes next (after whitespace).
    fn eat(&mut self, byte: u8) -> bool {
        if self.peek() == Some(byte) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// Consume the literal `word` (`null`, `true`, `false`) when it comes next.
    pub(super) fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.skip_whitespace();
        if self.bytes[self.pos..].starts_with(word) {
            self.pos += word.len();
            Some(())
        } else {
            None
        }
    }

    /// A string whose escapes are all ones serde_json accepts (lone surrogates refused).
    pub(super) fn string(&mut self) -> Option<RawStr<'a>> {
        if !self.eat(b'"') {
            return None;
        }
        let start = self.pos;
        let mut escaped = false;
        let bytes = self.bytes;
        let mut pos = self.pos;
        loop {
            // The plain run up to the next quote, backslash or control byte.
            pos = stop_at(bytes, pos)?;
            match bytes[pos] {
                b'"' => {
                    let raw = self.text.get(start..pos)?;
                    self.pos = pos + 1;
                    return Some(RawStr { raw, escaped, at: start });
                }
                b'\\' => {
                    escaped = true;
                    match *bytes.get(pos + 1)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => pos += 2,
                        b'u' => {
                            let hex = bytes.get(pos + 2..pos + 6)?;
                            if !hex.iter().all(u8::is_ascii_hexdigit) {
                                return None;
                            }
                            let code = hex.iter().fold(0u32, |acc, &digit| {
                                acc * 16 + (digit as char).to_digit(16).unwrap_or(0)
                            });
                            if (0xD800..=0xDFFF).contains(&code) {
                                return None;
                            }
                            pos += 6;
                        }
                        _ => return None,
                    }
                }
                _ => return None,
            }
        }
    }

    /// `null` → `Some(None)`, a string → `Some(Some(s))`, anything else → `None` (bail).
    pub(super) fn opt_string(&mut self) -> Option<Option<RawStr<'a>>> {
        match self.peek()? {
            b'n' => self.literal(b"null").map(|_| None),
            b'"' => self.string().map(Some),
            _ => None,
        }
    }

    /// Plain integers and decimals only: an exponent or a long mantissa goes to serde.
    fn number(&mut self) -> Option<()> {
        self.skip_whitespace();
        let start = self.pos;
        if self.bytes.get(self.pos) == Some(&b'-') {
            self.pos += 1;
        }
        match self.bytes.get(self.pos)? {
            b'0' => self.pos += 1,
            b'1'..=b'9' => {
                while self.bytes.get(self.pos).is_some_and(u8::is_ascii_digit) {
                    self.pos += 1;
                }
            }
            _ => return None,
        }
        if self.bytes.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            let digits = self.pos;
            while self.bytes.get(self.pos).is_some_and(u8::is_ascii_digit) {
                self.pos += 1;
            }
            if self.pos == digits {
                return None;
            }
        }
        if matches!(self.bytes.get(self.pos), Some(b'e' | b'E')) || self.pos - start > 15 {
            return None;
        }
        Some(())
    }

    /// Consume any one value, `depth` levels down in the document.
    pub(super) fn skip(&mut self, depth: u32) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' => self.string().map(|_| ()),
            b'{' => {
                self.pos += 1;
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
                self.pos += 1;
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
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => self.number(),
        }
    }

    /// Walk an object, calling `field` on each key with the cursor at its value; `field` must
    /// consume the value. Duplicate keys are the caller's business.
    pub(super) fn object(&mut self, mut field: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
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
    pub(super) fn array(&mut self, mut item: impl FnMut(&mut Self) -> Option<()>) -> Option<usize> {
        if !self.eat(b'[') {
            return None;
        }
        if self.eat(b']') {
            return Some(0);
        }
        let mut count = 0;
        loop {
            item(self)?;
            count += 1;
            if self.eat(b']') {
                return Some(count);
            }
            if !self.eat(b',') {
                return None;
            }
        }
    }
}
