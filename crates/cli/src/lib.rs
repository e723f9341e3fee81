//! The `triage` library: the CLI's commands, usable from tests and benches.
