//! The host's log: every line the guest logged, with its level, readable back by the test.

use std::sync::Mutex;

use proxy_wasm_host::abi::v0_2_1::types::LogLevel;
use proxy_wasm_host::abi::v0_2_1::{LogContext, LogSink};

use crate::lock;

/// Every line the guest logged.
#[derive(Debug, Default)]
pub struct LogStore(Mutex<Vec<(LogLevel, String)>>);

impl LogSink for LogStore {
    fn log(&self, _: LogContext<'_>, level: LogLevel, message: &[u8]) {
        lock(&self.0).push((level, String::from_utf8_lossy(message).into_owned()));
    }
}

impl LogStore {
    pub fn lines(&self) -> Vec<(LogLevel, String)> {
        lock(&self.0).clone()
    }
    pub fn clear(&self) {
        lock(&self.0).clear();
    }
}
