//! Lines of the same shape (equal but for their digits) scanned once: the shape cache.

use super::*;

/// Lines of the same shape (equal but for their digits) are read alike: first needles, [`AUX`],
/// the capacity keys and the vLLM parser's needles have no digits (a test holds this), so the
/// answer depends only on the shape and on the digit-bearing parts recomputed from the aux bits
/// (status codes, capacity figures, rates) — unless a signal whose first needle occurs has a
/// digit in another needle (`exitcode  : -9`): such lines are scanned each time. A big log is a
/// few shapes repeated: its periodic stats, access lines and per-request messages (`Aborted
/// request …`) are scanned once per shape.
///
/// Lines that differ in hex ids (`chatcmpl-3f2a…`) are different shapes. Zeroing hex tokens as
/// well was tried: on a vLLM log with an id in a third of its lines it cost more (a byte-wise
/// pass over every such line) than the scans it saved, as lines naming a request id mostly hold
/// a first needle (`Aborted request`) and are scanned anyway.
#[derive(Debug, Default)]
pub struct ScanCache {
    quiet: std::collections::HashMap<u64, Quiet, std::hash::BuildHasherDefault<ShapeHasher>>,
}

/// What a shape's lines share: the signals, the aux bits and the alarm their shape makes.
#[derive(Clone, Debug)]
pub(super) struct Quiet {
    signals: Vec<usize>,
    aux: u32,
    vllm: u64,
    families: u32,
    alarm: Option<Alarm>,
}

/// Shapes remembered at most; then the cache starts afresh, so that the shapes a log prints
/// later (after a burst of one-off lines) are remembered too.
pub(super) const MAX_SHAPES: usize = 4_096;

impl ScanCache {
    /// The line's scan, and whether its shape alone makes it an alarm (digit-bearing alarms —
    /// a 5xx status, a capacity at or below zero — are [`alarm_of`]'s to add).
    pub(super) fn scan(&mut self, t: &str, line: &str) -> (Scan, Option<Alarm>) {
        let shape = shape_of(line.as_bytes());
        if let Some(q) = self.quiet.get(&shape) {
            let mut out = Scan {
                signals: q.signals.clone(),
                aux: q.aux,
                vllm: q.vllm,
                families: q.families,
                digit_bound: false,
            };
            if q.aux & aux::CAPACITY != 0
                && capacity_not_positive(line)
                && let Some(i) = SIGNALS.iter().position(|s| s.needles[0] == CAPACITY_SIGNAL)
            {
                out.signals.push(i);
                triage_base::sort::sort(&mut out.signals);
            }
            return (out, q.alarm);
        }
        let out = scan(line);
        let alarm = shape_alarm(t, &out);
        if !out.digit_bound {
            if self.quiet.len() >= MAX_SHAPES {
                self.quiet.clear();
            }
            // The capacity signal is recomputed from each line's figure.
            let signals =
                out.signals.iter().copied().filter(|&i| SIGNALS[i].needles[0] != CAPACITY_SIGNAL).collect();
            self.quiet.insert(
                shape,
                Quiet { signals, aux: out.aux, vllm: out.vllm, families: out.families, alarm },
            );
        }
        (out, alarm)
    }
}

/// The key is a hash already.
#[derive(Default)]
pub(super) struct ShapeHasher(u64);

impl std::hash::Hasher for ShapeHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// A hash of the line with every ASCII digit read as `0`, eight bytes at a time.
pub(super) fn shape_of(line: &[u8]) -> u64 {
    const LO7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const HI: u64 = 0x8080_8080_8080_8080;
    const ZEROS: u64 = 0x3030_3030_3030_3030;
    let mix = |h: u64, w: u64| (h.rotate_left(26) ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let normal = |x: u64| {
        // Exact per byte: ASCII bytes from '0' to '9' (no carry crosses a byte: x & 0x7f + 0x50
        // stays below 0x100).
        let x7 = x & LO7;
        let ge_0 = x7.wrapping_add(0x5050_5050_5050_5050) & HI;
        let ge_colon = x7.wrapping_add(0x4646_4646_4646_4646) & HI;
        let digit = ge_0 & !ge_colon & !x & HI;
        let m = (digit >> 7) * 0xff;
        (x & !m) | (m & ZEROS)
    };
    let (words, tail) = line.as_chunks::<8>();
    let mut h = line.len() as u64;
    for w in words {
        h = mix(h, normal(u64::from_le_bytes(*w)));
    }
    if !tail.is_empty() {
        let mut last = [0u8; 8];
        last[..tail.len()].copy_from_slice(tail);
        h = mix(h, normal(u64::from_le_bytes(last)));
    }
    h
}
