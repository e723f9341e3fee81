//! End-to-end tests across crates, one binary (link once). Each module covers one surface.
// The CPU lock below is held across awaits on purpose: each test runs on its own runtime, and
// the lock only keeps the timing tests and the simulator tests from running at the same time.
#![allow(clippy::await_holding_lock)]

mod probe;
mod sim;
mod transcripts;

/// The probe tests compare timestamps to 2 ms; the simulator tests keep both cores busy. They
/// never overlap: timing tests share the lock for reading (among themselves they run as before),
/// the simulator tests take it alone. On a 2-core machine the debug-build analyzer inside a
/// simulator test otherwise delayed a probe's first token by ~5 ms.
static CPU: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// Held by a test that measures time.
pub(crate) fn timing() -> std::sync::RwLockReadGuard<'static, ()> {
    CPU.read().unwrap_or_else(|e| e.into_inner())
}

/// Held by a test that keeps the CPU busy.
pub(crate) fn heavy() -> std::sync::RwLockWriteGuard<'static, ()> {
    CPU.write().unwrap_or_else(|e| e.into_inner())
}
