//! The `triage` binary's integration tests, one test binary for all of them: one link of the
//! CLI's test dependencies instead of one per file, and one copy of the helpers (`util`) instead
//! of one per file. One module per kind of test; run one kind with a filter, e.g.
//! `cargo test -p triage-cli --test integration -- hostile::`.
//!
//! The tests of one binary run in parallel: every server a test starts listens on a port of its
//! own, and every folder it writes has a name no other test here uses (`util::temp_dir`).

mod util;

mod backfill;
mod cards;
mod cli;
mod gpu_recordings;
mod hostile;
mod interop;
mod kernel_stamps;
mod kv;
mod open_loop;
mod otlp;
mod prometheus;
mod sim;
mod trace;
mod watch;
