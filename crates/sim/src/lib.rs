//! Scripted SSE server for tests and demos.
