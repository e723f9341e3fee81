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
