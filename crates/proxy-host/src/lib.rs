//! A proxy-wasm test host: loads a filter into `proxy-wasm-host` 0.2 (ABI 0.2.1, wasmtime) and
//! drives the whole lifecycle the way Envoy does — `_initialize`, root context create,
//! `proxy_on_vm_start`, `proxy_on_configure`, then per request: context create, request headers
//! (lowercase names, pseudo-headers first, as Envoy sends them), request body, response headers,
//! response body chunks with `end_of_stream`, `proxy_on_done`, `proxy_on_log`, `proxy_on_delete`.
//!
//! What the crate leaves to the embedder is here: a mockable clock ([`FakeClock`], both the
//! ABI's wall clock and WASI's monotonic clock), a metric store that keeps every histogram
//! sample and can be read back ([`MetricStore`]; the crate's own store keeps none), a log that
//! can be read back, per-request properties, and switches for hosts that differ: no metrics
//! (every metric call answers `UNIMPLEMENTED`, as APISIX does), metric calls that start failing,
//! and unexpected statuses from header, body and property calls ([`Odd`]).
//!
//! Resets: the filter's guard calls `proxy_set_effective_context` + `proxy_close_stream` (or
//! `proxy_send_local_response`) from `proxy_on_tick`. [`Filter::tick`] records those and then
//! does what Envoy does to a reset stream: `proxy_on_done`, `proxy_on_log`, `proxy_on_delete`
//! without an `end_of_stream`.

mod clock;
mod filter;
mod log;
mod metrics;
mod stream;

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

pub use clock::{FakeClock, WALL_BASE_NS};
pub use filter::{Error, Filter, GuestStats, Options};
pub use log::LogStore;
pub use metrics::{Metric, MetricStore, MetricsMode};
pub use proxy_wasm_host::abi::v0_2_1::types;
pub use stream::{Exchange, Finished, Odd, ResetBy};

/// The path of the built filter (built once per process with the `plugin` profile).
pub fn stream_timer_wasm() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        triage_plugin_build::ensure(&[triage_plugin_build::STREAM_TIMER])
            .into_iter()
            .next()
            .unwrap_or_default()
    })
    .clone()
}

/// A lock whose holder panicked is still the data: a test that failed mid-call keeps its logs.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
