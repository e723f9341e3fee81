//! End-to-end tests live in `tests/*.rs`; this library only hosts shared helpers.
