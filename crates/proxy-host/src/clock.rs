//! The host's clock: a monotonic clock the test moves by hand, which also answers the ABI's
//! wall clock (from a fixed origin) and WASI's clocks.

use std::sync::atomic::{AtomicU64, Ordering};

use proxy_wasm_host::abi::v0_2_1::Clock;

/// The fake wall clock's origin: 2025-11-30T00:00:00Z in Unix nanoseconds. The ABI's
/// `proxy_get_current_time_nanoseconds` and WASI's realtime clock answer `WALL_BASE_NS + now`.
pub const WALL_BASE_NS: u64 = 1_764_460_800_000_000_000;

/// A monotonic clock the test moves by hand. Starts at 1 s.
#[derive(Debug)]
pub struct FakeClock(AtomicU64);

impl Default for FakeClock {
    fn default() -> Self {
        FakeClock(AtomicU64::new(1_000_000_000))
    }
}

impl FakeClock {
    pub fn now(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
    /// Set the time; the clock never goes back (a smaller value is ignored).
    pub fn set(&self, ns: u64) {
        self.0.fetch_max(ns, Ordering::SeqCst);
    }
    pub fn advance(&self, ns: u64) {
        self.0.fetch_add(ns, Ordering::SeqCst);
    }
}

impl Clock for FakeClock {
    fn realtime_nanos(&self) -> u64 {
        WALL_BASE_NS + self.now()
    }
    fn monotonic_nanos(&self) -> u64 {
        self.now()
    }
}
