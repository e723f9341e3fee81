//! The host calls the filter makes, declared here rather than through the SDK's `hostcalls`:
//! those wrappers panic (and so trap the whole filter) on any status they do not expect, and
//! declare the status as a Rust enum, which is undefined behaviour for a value outside it
//! (ABI 0.2.1's `UNIMPLEMENTED` = 12 is not in the SDK's enum). Here every status is a `u32`
//! and every failure is a value.

use crate::metrics::{MetricHost, MetricKind};
use std::ptr::{null, null_mut};

pub const OK: u32 = 0;
pub const NOT_FOUND: u32 = 1;

pub const LOG_DEBUG: u32 = 1;
pub const LOG_INFO: u32 = 2;
pub const LOG_WARN: u32 = 3;
pub const LOG_ERROR: u32 = 4;

pub const MAP_REQUEST_HEADERS: u32 = 0;
pub const MAP_RESPONSE_HEADERS: u32 = 2;
pub const BUFFER_RESPONSE_BODY: u32 = 1;
pub const BUFFER_PLUGIN_CONFIGURATION: u32 = 7;
pub const STREAM_HTTP_RESPONSE: u32 = 1;

#[link(wasm_import_module = "env")]
unsafe extern "C" {
    fn proxy_log(level: u32, message_data: *const u8, message_size: usize) -> u32;
    fn proxy_get_log_level(return_level: *mut u32) -> u32;
    fn proxy_get_current_time_nanoseconds(return_time: *mut u64) -> u32;
    fn proxy_set_tick_period_milliseconds(period: u32) -> u32;
    fn proxy_get_buffer_bytes(
        buffer_type: u32,
        start: usize,
        max_size: usize,
        return_buffer_data: *mut *mut u8,
        return_buffer_size: *mut usize,
    ) -> u32;
    fn proxy_add_header_map_value(
        map_type: u32,
        key_data: *const u8,
        key_size: usize,
        value_data: *const u8,
        value_size: usize,
    ) -> u32;
    fn proxy_get_header_map_value(
        map_type: u32,
        key_data: *const u8,
        key_size: usize,
        return_value_data: *mut *mut u8,
        return_value_size: *mut usize,
    ) -> u32;
    fn proxy_set_property(
        path_data: *const u8,
        path_size: usize,
        value_data: *const u8,
        value_size: usize,
    ) -> u32;
    fn proxy_define_metric(
        metric_type: u32,
        name_data: *const u8,
        name_size: usize,
        return_id: *mut u32,
    ) -> u32;
    fn proxy_record_metric(metric_id: u32, value: u64) -> u32;
    fn proxy_increment_metric(metric_id: u32, offset: i64) -> u32;
    fn proxy_set_effective_context(context_id: u32) -> u32;
    fn proxy_close_stream(stream_type: u32) -> u32;
    #[allow(
        clippy::too_many_arguments,
        reason = "the proxy-wasm ABI's import, declared as the host exports it"
    )]
    fn proxy_send_local_response(
        status_code: u32,
        status_code_details_data: *const u8,
        status_code_details_size: usize,
        body_data: *const u8,
        body_size: usize,
        headers_data: *const u8,
        headers_size: usize,
        grpc_status: i32,
    ) -> u32;
}

#[link(wasm_import_module = "wasi_snapshot_preview1")]
unsafe extern "C" {
    fn clock_time_get(id: u32, precision: u64, time: *mut u64) -> u16;
    fn random_get(buf: *mut u8, len: usize) -> u16;
}

/// Take ownership of bytes the host wrote into memory it got from `proxy_on_memory_allocate`
/// (the SDK's allocator: a boxed slice of exactly `size` bytes).
fn take(data: *mut u8, size: usize) -> Vec<u8> {
    if data.is_null() || size == 0 {
        return Vec::new();
    }
    // SAFETY: the host allocated `size` bytes at `data` through `proxy_on_memory_allocate`
    // (a `Box<[u8]>` of that length) and hands ownership to the guest.
    unsafe { Vec::from_raw_parts(data, size, size) }
}

pub fn log(level: u32, message: &str) {
    // SAFETY: pointer and length of a live `str`.
    let _ = unsafe { proxy_log(level, message.as_ptr(), message.len()) };
}

/// The host's log level; `LOG_INFO` when it does not say.
pub fn log_level() -> u32 {
    let mut level = LOG_INFO;
    // SAFETY: a valid out pointer.
    match unsafe { proxy_get_log_level(&mut level) } {
        OK => level,
        _ => LOG_INFO,
    }
}

pub fn host_time_ns() -> Option<u64> {
    let mut t = 0u64;
    // SAFETY: a valid out pointer.
    (unsafe { proxy_get_current_time_nanoseconds(&mut t) } == OK).then_some(t)
}

pub fn wasi_clock_ns(id: u32) -> Option<u64> {
    let mut t = 0u64;
    // SAFETY: a valid out pointer.
    (unsafe { clock_time_get(id, 1, &mut t) } == 0).then_some(t)
}

/// `N` bytes from WASI's `random_get` (the host's randomness); `None` when it refuses.
pub fn random_bytes<const N: usize>() -> Option<[u8; N]> {
    let mut b = [0u8; N];
    // SAFETY: a valid buffer of `N` bytes.
    (unsafe { random_get(b.as_mut_ptr(), N) } == 0).then_some(b)
}

pub fn set_tick_period_ms(ms: u32) -> u32 {
    // SAFETY: plain value.
    unsafe { proxy_set_tick_period_milliseconds(ms) }
}

/// Bytes `[start, start + max)` of a buffer; `Err(status)` when the host refuses.
pub fn buffer(buffer_type: u32, start: usize, max: usize) -> Result<Vec<u8>, u32> {
    let (mut data, mut size) = (null_mut::<u8>(), 0usize);
    // SAFETY: valid out pointers; the returned memory is taken over by `take`.
    let status = unsafe { proxy_get_buffer_bytes(buffer_type, start, max, &mut data, &mut size) };
    match status {
        OK => Ok(take(data, size)),
        NOT_FOUND => Ok(Vec::new()),
        // Out pointers of a refused call are not trusted (nor freed): at worst a leak.
        other => Err(other),
    }
}

/// A header's value; `Ok(None)` when absent, `Err(status)` for anything unexpected.
pub fn header(map_type: u32, key: &str) -> Result<Option<Vec<u8>>, u32> {
    let (mut data, mut size) = (null_mut::<u8>(), 0usize);
    // SAFETY: valid key slice and out pointers; the returned memory is taken over by `take`.
    let status =
        unsafe { proxy_get_header_map_value(map_type, key.as_ptr(), key.len(), &mut data, &mut size) };
    match status {
        OK => Ok(Some(take(data, size))),
        NOT_FOUND => Ok(None),
        other => Err(other),
    }
}

/// Add a header to a map; the host's status.
pub fn add_header(map_type: u32, key: &str, value: &str) -> u32 {
    // SAFETY: pointers and lengths of live slices.
    unsafe { proxy_add_header_map_value(map_type, key.as_ptr(), key.len(), value.as_ptr(), value.len()) }
}

/// Set a one-segment property path (Envoy: filter state `wasm.<name>`).
pub fn set_property(name: &str, value: &[u8]) -> u32 {
    // SAFETY: pointers and lengths of live slices.
    unsafe { proxy_set_property(name.as_ptr(), name.len(), value.as_ptr(), value.len()) }
}

pub fn set_effective_context(id: u32) -> u32 {
    // SAFETY: plain value.
    unsafe { proxy_set_effective_context(id) }
}

/// Reset the effective stream's response (Envoy: `resetStream()`, upstream request cancelled).
pub fn close_response() -> u32 {
    // SAFETY: plain value.
    unsafe { proxy_close_stream(STREAM_HTTP_RESPONSE) }
}

/// A local response without headers; `details` goes to Envoy's `%RESPONSE_CODE_DETAILS%`.
pub fn send_local_response(status: u32, details: &str, body: &[u8]) -> u32 {
    // SAFETY: pointers and lengths of live slices; no headers.
    unsafe {
        proxy_send_local_response(
            status,
            details.as_ptr(),
            details.len(),
            body.as_ptr(),
            body.len(),
            null(),
            0,
            -1,
        )
    }
}

/// The real host's metric calls.
pub struct HostMetrics;

impl MetricHost for HostMetrics {
    fn define(&mut self, kind: MetricKind, name: &str) -> Result<u32, u32> {
        let mut id = 0u32;
        // SAFETY: name slice and out pointer are valid.
        match unsafe { proxy_define_metric(kind as u32, name.as_ptr(), name.len(), &mut id) } {
            OK => Ok(id),
            other => Err(other),
        }
    }
    fn record(&mut self, id: u32, value: u64) -> Result<(), u32> {
        // SAFETY: plain values.
        match unsafe { proxy_record_metric(id, value) } {
            OK => Ok(()),
            other => Err(other),
        }
    }
    fn increment(&mut self, id: u32, delta: i64) -> Result<(), u32> {
        // SAFETY: plain values.
        match unsafe { proxy_increment_metric(id, delta) } {
            OK => Ok(()),
            other => Err(other),
        }
    }
}
