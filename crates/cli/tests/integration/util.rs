//! Helpers every kind of test here uses: the `triage` command as users run it, its output as
//! text or JSON, the repository's files, a raw HTTP server a test scripts byte by byte, and
//! (from `triage_tests`, shared with the runner's tests) free ports, temp folders, child guards
//! and peak-RSS polling.

use std::io::{BufRead, BufReader, Read};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use triage_tests::process::{Killed, TempDir, free_port, temp_dir, temp_path, wait_with_peak_rss};

/// The `triage` binary, without the API keys of whoever runs the tests and with no standard
/// input (a test that feeds it one says so).
pub fn triage() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_triage"));
    c.env_remove("OPENAI_API_KEY").env_remove("ANTHROPIC_API_KEY").env_remove("TAOTOKEN_API_KEY");
    c.stdin(Stdio::null());
    c
}

/// Standard output, then standard error, as text.
pub fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// Standard output as JSON; on failure the panic shows everything the binary printed.
pub fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(out)))
}

/// The repository's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// What a server from [`serve`] saw.
#[derive(Default, Debug)]
pub struct Seen {
    /// Connections accepted.
    pub connections: AtomicUsize,
    /// Each request's head, in order.
    pub heads: Mutex<Vec<String>>,
    /// Each request's body (of `Content-Length`, at most 1 MiB), in order.
    pub bodies: Mutex<Vec<Vec<u8>>>,
}

/// A server on 127.0.0.1 answering at most `max` connections within `lifetime`, one at a time,
/// then stopping by itself: for each it reads the request's head (bounded) and its body (of
/// `Content-Length`, at most 1 MiB), records both, and hands the head and the stream to `answer`,
/// which writes whatever bytes the test chose; then the connection is closed. Reads time out
/// after 5 s, writes after `write_timeout`. Its port, and what it saw.
pub fn serve(
    max: usize,
    lifetime: Duration,
    write_timeout: Duration,
    answer: impl Fn(&str, &mut TcpStream) + Send + 'static,
) -> (u16, Arc<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let seen = Arc::new(Seen::default());
    let s = Arc::clone(&seen);
    std::thread::spawn(move || {
        let stop = Instant::now() + lifetime;
        let mut served = 0;
        while served < max && Instant::now() < stop {
            let Ok((mut stream, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            };
            served += 1;
            s.connections.fetch_add(1, Ordering::SeqCst);
            let _ = stream.set_nonblocking(false);
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let _ = stream.set_write_timeout(Some(write_timeout));
            let (head, body) = read_head(&mut stream);
            s.heads.lock().unwrap().push(head.clone());
            s.bodies.lock().unwrap().push(body);
            answer(&head, &mut stream);
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
    });
    (port, seen)
}

/// The request head (bounded) and its body (at most 1 MiB).
fn read_head(stream: &mut TcpStream) -> (String, Vec<u8>) {
    let mut r = BufReader::new(stream.try_clone().unwrap());
    let mut head = String::new();
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 || head.len() > 64 * 1024 {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
        head.push_str(&line);
        if line == "\r\n" {
            break;
        }
    }
    let mut body = Vec::new();
    let _ = r.by_ref().take(length.min(1 << 20) as u64).read_to_end(&mut body);
    (head, body)
}
