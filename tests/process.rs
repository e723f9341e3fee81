//! Helpers for tests that run programs: a free port, a child killed when dropped, a fresh
//! folder under the system's temp folder, and a child's peak resident memory.

use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus};
use std::time::Duration;

/// A free port on 127.0.0.1 (for a server that takes a port number, not a listener). Another
/// process may take it before the server binds it: callers that can, retry.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A child process killed (and reaped) when the guard goes.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `triage-test-PID-NAME` under the system's temp folder, with whatever was there removed and
/// nothing created. Names are per process: tests in one binary pick different names.
pub fn temp_path(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("triage-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    p
}

/// [`temp_path`], created as an empty folder (left behind: the caller removes it).
pub fn temp_dir(name: &str) -> PathBuf {
    let d = temp_path(name);
    std::fs::create_dir_all(&d).expect("creating the test folder");
    d
}

/// A folder like [`temp_dir`], removed when dropped — also when a test fails before it is done.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        TempDir(temp_dir(name))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Waits for `child` to end: its exit status and its peak resident memory in MiB — its
/// `VmHWM`, read every 20 ms while it runs (`ru_maxrss` would count the test process's own
/// peak: a spawned child inherits its high-water mark until it execs). Linux only; elsewhere
/// the peak reads 0.
pub fn wait_with_peak_rss(child: &mut Child) -> (ExitStatus, u64) {
    let mut peak_kib = 0u64;
    let status = loop {
        if let Some(kib) =
            std::fs::read_to_string(format!("/proc/{}/status", child.id())).ok().and_then(|s| {
                s.lines().find_map(|l| {
                    l.strip_prefix("VmHWM:").map(|v| v.trim().trim_end_matches(" kB").parse().unwrap_or(0))
                })
            })
        {
            peak_kib = peak_kib.max(kib);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (status, peak_kib / 1024)
}
