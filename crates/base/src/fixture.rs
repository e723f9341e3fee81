//! Test fixtures by name: a file under the repository's `tests/data/` named by its path there
//! (`fixture!("smi/smi_idle.txt")`), the same from every crate of the workspace (each sits two
//! folders below the root), instead of a `../../../tests/data/…` path that depends on where the
//! test sits. For tests only: embedding happens where the macro is used.

/// A file under the repository's `tests/data/`, as `&'static str` (embedded at compile time).
#[doc(hidden)]
#[macro_export]
macro_rules! fixture {
    ($path:literal) => {
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/", $path))
    };
}

/// As [`fixture!`], as `&'static [u8]` (for a test that feeds bytes).
#[doc(hidden)]
#[macro_export]
macro_rules! fixture_bytes {
    ($path:literal) => {
        include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/", $path))
    };
}
