//! Byte searches eight bytes at a time (SWAR), for targets where `memchr` has no vector search:
//! wasm32 without `simd128`, where it works four bytes at a time, and where every iteration of
//! a per-byte loop also pays wasmtime's interruption check. Used by the SSE parser's line
//! search on wasm32 and by the proxy filter's JSON string scan.
//!
//! Each flag function marks, in the high bit of each byte of a word, the bytes it is looking
//! for. Flags can also appear above a true one (a borrow carries up), never below it, so the
//! lowest flag — the only one [`first`] reads — is always exact, and flags can be ORed.
//!
//! [`finder!`](crate::finder) is the other byte search: a substring finder built once per call
//! site.

/// The substring searcher [`finder!`](crate::finder) builds (re-exported so the macro works in
/// crates that do not depend on `memchr`).
pub use memchr::memmem::Finder;

/// A substring search built once per call site: `finder!("needle").find(hay.as_bytes())`.
/// `str::find` with a string sets its searcher up on every call, which costs more than the
/// search on the short lines of a log.
#[macro_export]
macro_rules! finder {
    ($needle:literal) => {{
        static FINDER: ::std::sync::LazyLock<$crate::words::Finder<'static>> =
            ::std::sync::LazyLock::new(|| $crate::words::Finder::new($needle));
        &*FINDER
    }};
}

/// Whether `needle` occurs in `hay`: `str::contains`, cheaper on wasm32 for the many short
/// searches of a line's recognition. There std's substring search builds its two-way searcher
/// on every call (natively it has a vector search for short needles that needs none): in the
/// site's analyzer (V8, 2026-12-08) that setup was the largest single cost of recognising a
/// section and 3 % of the feed of the 30 MiB vLLM log of `cargo xtask bench site`. This looks
/// for the needle's first byte with `memchr` (vectorised with `simd128`) and compares the rest
/// there. Natively it is `str::contains`.
#[inline]
pub fn contains(hay: &str, needle: &str) -> bool {
    #[cfg(target_arch = "wasm32")]
    {
        contains_bytes(hay.as_bytes(), needle.as_bytes())
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        hay.contains(needle)
    }
}

/// [`contains`]' search on wasm32 (on every target for its tests): each occurrence of the
/// needle's first byte, then the rest compared. Quadratic at worst in the needle's length,
/// which is a constant of the caller's.
pub fn contains_bytes(hay: &[u8], needle: &[u8]) -> bool {
    let Some((&first, rest)) = needle.split_first() else { return true };
    let Some(last_start) = hay.len().checked_sub(needle.len()) else { return false };
    let mut from = 0;
    while from <= last_start {
        let Some(i) = memchr::memchr(first, &hay[from..=last_start]) else { return false };
        let at = from + i;
        if hay[at + 1..].starts_with(rest) {
            return true;
        }
        from = at + 1;
    }
    false
}

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// Flags the bytes of `x` equal to `c`.
pub fn equal(x: u64, c: u8) -> u64 {
    let y = x ^ (LO * u64::from(c));
    y.wrapping_sub(LO) & !y & HI
}

/// Flags the bytes of `x` below `n` (`n` ≤ 0x80).
pub fn below(x: u64, n: u8) -> u64 {
    x.wrapping_sub(LO * u64::from(n)) & !x & HI
}

/// The first byte of `b` that `flags` marks in its word (little-endian) or, in the last
/// fewer-than-eight bytes, that `is` accepts. The two must describe the same bytes.
pub fn first(b: &[u8], flags: impl Fn(u64) -> u64, is: impl Fn(u8) -> bool) -> Option<usize> {
    let (words, tail) = b.as_chunks::<8>();
    for (i, w) in words.iter().enumerate() {
        let m = flags(u64::from_le_bytes(*w));
        if m != 0 {
            return Some(i * 8 + (m.trailing_zeros() / 8) as usize);
        }
    }
    tail.iter().position(|&c| is(c)).map(|p| words.len() * 8 + p)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `contains_bytes` agrees with `str::contains` on every short haystack over a small
    /// alphabet, for needles of every length up to beyond the haystack's.
    #[test]
    fn contains_is_str_contains() {
        let alphabet = [b'a', b'b', b'\n', 0xc3];
        let words = |len: usize| {
            (0..alphabet.len().pow(len as u32)).map(move |mut k| {
                (0..len)
                    .map(|_| {
                        let c = alphabet[k % alphabet.len()];
                        k /= alphabet.len();
                        c
                    })
                    .collect::<Vec<u8>>()
            })
        };
        for hay_len in 0..=6 {
            for hay in words(hay_len) {
                for needle_len in 0..=4 {
                    for needle in words(needle_len) {
                        let expected =
                            hay.windows(needle.len().max(1)).any(|w| needle.is_empty() || w == needle)
                                || needle.is_empty();
                        assert_eq!(contains_bytes(&hay, &needle), expected, "{hay:?} {needle:?}");
                    }
                }
            }
        }
        for (hay, needle) in
            [("Serving Benchmark Result", "Benchmark"), ("vLLM", "vllm"), ("", ""), ("ab", "abc")]
        {
            assert_eq!(contains(hay, needle), hay.contains(needle));
            assert_eq!(contains_bytes(hay.as_bytes(), needle.as_bytes()), hay.contains(needle));
        }
    }

    /// Every byte value, alone and around others, at every offset of a word and in the tail.
    #[test]
    fn flags_find_exactly_the_first_match() {
        let fill = [b'a', 0x00, 0x1f, 0x20, 0x7f, 0x80, 0xff, b'"', b'\\', b'\n', b'\r'];
        for len in 0..20 {
            for at in 0..len {
                for &f in &fill {
                    for target in 0..=255u8 {
                        let mut b = vec![f; len];
                        b[at] = target;
                        let is_eq = |c: u8| c == b'\n' || c == b'\r';
                        let got = first(&b, |x| equal(x, b'\n') | equal(x, b'\r'), is_eq);
                        assert_eq!(got, b.iter().position(|&c| is_eq(c)), "{b:?}");
                        let is_lt = |c: u8| c < 0x20 || c == b'"';
                        let got = first(&b, |x| below(x, 0x20) | equal(x, b'"'), is_lt);
                        assert_eq!(got, b.iter().position(|&c| is_lt(c)), "{b:?}");
                    }
                }
            }
        }
    }
}
