//! End-to-end tests across crates, one binary (link once). Each module covers one surface.

mod probe;
mod sim;
mod transcripts;
