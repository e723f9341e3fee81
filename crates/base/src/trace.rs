//! W3C Trace Context: the `traceparent` header a probe sends so that a request it timed can be
//! looked up in the tracing backend that the server (vLLM, a gateway) reports to.
//!
//! `traceparent: 00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`, lowercase hex, neither
//! id all zeros (<https://www.w3.org/TR/trace-context/#traceparent-header>). Nothing here draws
//! random numbers: the host passes in the bytes of its own randomness
//! ([`TraceParent::from_random`]) — the CLI the operating system's, the browser
//! `crypto.getRandomValues`.

use std::fmt;

/// The header's name (lowercase, as HTTP/2 sends it).
pub const HEADER: &str = "traceparent";

/// A trace id: 16 bytes, written as 32 lowercase hex digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TraceId(pub [u8; 16]);

impl fmt::Display for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_hex(f, &self.0)
    }
}

/// A parsed or generated `traceparent`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceParent {
    /// The version byte (`00` is the only one defined).
    pub version: u8,
    /// The trace the request belongs to.
    pub trace_id: TraceId,
    /// The caller's span id (here: the probe's request).
    pub parent_id: [u8; 8],
    /// The trace flags; bit 0 is `sampled`.
    pub flags: u8,
}

fn write_hex(f: &mut impl fmt::Write, bytes: &[u8]) -> fmt::Result {
    bytes.iter().try_for_each(|b| write!(f, "{b:02x}"))
}

/// `n` bytes from exactly `2n` lowercase hex digits.
fn lower_hex<const N: usize>(s: &str) -> Option<[u8; N]> {
    let b = s.as_bytes();
    if b.len() != 2 * N {
        return None;
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; N];
    for (i, o) in out.iter_mut().enumerate() {
        *o = (digit(b[2 * i])? << 4) | digit(b[2 * i + 1])?;
    }
    Some(out)
}

impl TraceParent {
    /// A fresh, sampled `traceparent` from 24 random bytes: the first 16 make the trace id, the
    /// last 8 the parent id. An id that came out all zeros (invalid) gets its last byte set to 1.
    pub fn from_random(bytes: [u8; 24]) -> TraceParent {
        let mut trace = [0u8; 16];
        let mut parent = [0u8; 8];
        trace.copy_from_slice(&bytes[..16]);
        parent.copy_from_slice(&bytes[16..]);
        if trace == [0; 16] {
            trace[15] = 1;
        }
        if parent == [0; 8] {
            parent[7] = 1;
        }
        TraceParent { version: 0, trace_id: TraceId(trace), parent_id: parent, flags: 1 }
    }

    /// Whether the sampled flag is set.
    pub fn sampled(&self) -> bool {
        self.flags & 1 == 1
    }

    /// The header's value: `00-<trace id>-<parent id>-<flags>`.
    pub fn header_value(&self) -> String {
        self.to_string()
    }

    /// Parse a `traceparent` value (surrounding whitespace ignored). `None` for anything the
    /// specification says to ignore: upper-case hex, version `ff`, an all-zero id, a version
    /// `00` value of any length but 55, a later version whose extra part does not start with `-`.
    pub fn parse(value: &str) -> Option<TraceParent> {
        let v = value.trim();
        let [version] = lower_hex::<1>(v.get(..2)?)?;
        if version == 0xff || (version == 0 && v.len() != 55) || (v.len() > 55 && v.as_bytes()[55] != b'-') {
            return None;
        }
        let b = v.as_bytes();
        if v.len() < 55 || b[2] != b'-' || b[35] != b'-' || b[52] != b'-' {
            return None;
        }
        let trace_id = lower_hex::<16>(v.get(3..35)?)?;
        let parent_id = lower_hex::<8>(v.get(36..52)?)?;
        let [flags] = lower_hex::<1>(v.get(53..55)?)?;
        if trace_id == [0; 16] || parent_id == [0; 8] {
            return None;
        }
        Some(TraceParent { version, trace_id: TraceId(trace_id), parent_id, flags })
    }
}

impl fmt::Display for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:02x}-{}-", self.version, self.trace_id)?;
        write_hex(f, &self.parent_id)?;
        write!(f, "-{:02x}", self.flags)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn fresh_values_are_well_formed_sampled_and_round_trip() {
        let mut bytes = [0u8; 24];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(37).wrapping_add(0xa5);
        }
        let tp = TraceParent::from_random(bytes);
        let v = tp.header_value();
        assert_eq!(v.len(), 55);
        assert!(v.starts_with("00-") && v.ends_with("-01"), "{v}");
        assert!(tp.sampled());
        assert_eq!(tp.trace_id.to_string().len(), 32);
        assert!(v.bytes().all(|c| c == b'-' || c.is_ascii_digit() || (b'a'..=b'f').contains(&c)), "{v}");
        assert_eq!(TraceParent::parse(&v), Some(tp));
        assert_eq!(&v[3..35], tp.trace_id.to_string());
    }

    #[test]
    fn all_zero_randomness_still_makes_valid_ids() {
        let tp = TraceParent::from_random([0; 24]);
        assert_eq!(tp.header_value(), "00-00000000000000000000000000000001-0000000000000001-01");
        assert!(TraceParent::parse(&tp.header_value()).is_some());
    }

    #[test]
    fn parses_the_specification_example() {
        let tp = TraceParent::parse(&format!("  {SPEC} ")).unwrap();
        assert_eq!(tp.trace_id.to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(tp.parent_id, [0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7]);
        assert!(tp.sampled());
        assert_eq!(tp.to_string(), SPEC);
        let unsampled = TraceParent::parse(&SPEC.replace("-01", "-00")).unwrap();
        assert!(!unsampled.sampled());
        // A later version may carry more fields after a dash.
        let later = TraceParent::parse(&format!("01{}-what-comes-next", &SPEC[2..])).unwrap();
        assert_eq!((later.version, later.trace_id), (1, tp.trace_id));
    }

    #[test]
    fn refuses_what_the_specification_says_to_ignore() {
        for bad in [
            "",
            "00",
            &SPEC.to_uppercase(),
            &SPEC.replace("4bf9", "4BF9"),
            &format!("ff{}", &SPEC[2..]),
            &format!("{SPEC}-00"),
            &SPEC[..54],
            &format!("01{}x", &SPEC[2..]),
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0x",
            "0é-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            assert_eq!(TraceParent::parse(bad), None, "{bad:?}");
        }
    }
}
