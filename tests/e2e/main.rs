//! End-to-end tests across crates, one binary (link once). Each module covers one surface.
// The CPU lock below is held across awaits on purpose: each test runs on its own runtime, and
// the lock only keeps the timing tests and the simulator tests from running at the same time.
#![allow(clippy::await_holding_lock)]

mod probe;
mod sim;
mod transcripts;

/// The probe tests compare timestamps to 2 ms; the simulator tests keep both cores busy. Each
/// takes the lock alone, so a probe test never shares the 2 cores with another probe or
/// simulator test (a probe's first token was seen ~5 ms late under such load).
static CPU: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// Held by a probe test (which measures time) or a simulator test (which keeps the CPU busy).
pub(crate) fn heavy() -> std::sync::RwLockWriteGuard<'static, ()> {
    CPU.write().unwrap_or_else(|e| e.into_inner())
}
