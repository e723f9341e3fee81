//! `Shape`: the per-stream cache of the last token event's bytes around its text, so that the
//! next event of the same shape reads with two comparisons and one scan of its text instead of
//! a walk of the whole document. How much it may keep ([`SHAPE_MAX`]) and when a stream stops
//! keeping one (`SHAPE_MISSES`) are here too.

use super::json_cursor::stop_at;
#[cfg(doc)]
use super::quick;
use super::{View, quick_text};
use triage_core::stream::{Dialect, TokenKind};

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
    pub(super) fn fits(view: &View<'_>) -> bool {
        view.token.is_some()
            && !view.role_only
            && view.usage.is_none()
            && view.finish_reason.is_none()
            && view.error.is_none()
            && !view.terminal
            && !view.ping
            && !view.not_json
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
            let bytes = data.as_bytes();
            self.around = [&bytes[..from], &bytes[to..]].concat().into_boxed_slice();
            self.prefix = from;
            self.read_as = Some((view.dialect, token));
        }
        Some(view)
    }

    /// Whether `data` is the kept bytes around a non-empty plain text.
    fn fits_bytes(&self, data: &[u8]) -> bool {
        let (before, after) = self.around.split_at(self.prefix);
        data.len() > self.around.len()
            && same_bytes(&data[..before.len()], before)
            && same_bytes(&data[data.len() - after.len()..], after)
            && stop_at(&data[before.len()..data.len() - after.len()], 0).is_none()
    }
}

/// `a == b` for slices of one length, eight bytes per step (the slice comparison is a
/// byte-by-byte `memcmp` in wasm).
fn same_bytes(left: &[u8], right: &[u8]) -> bool {
    let ((left8, left_rest), (right8, right_rest)) = (left.as_chunks::<8>(), right.as_chunks::<8>());
    left.len() == right.len()
        && left8.iter().zip(right8).all(|(x, y)| u64::from_ne_bytes(*x) == u64::from_ne_bytes(*y))
        && left_rest == right_rest
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fast::quick;
    use crate::fast::tests::{Rng, recorded, recorded_streams};

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
