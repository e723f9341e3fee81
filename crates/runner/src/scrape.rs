//! Reading the local engine's `/metrics` over plain HTTP/1.1, loopback only, under one deadline
//! for the whole scrape (connect, send and every read): the runner must never hang on a stuck
//! or trickling engine, and never talk to another host.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use triage_core::safe;

/// Most bytes read from one scrape.
const MAX_BODY: usize = 8 << 20;
/// Most characters of the engine's status line quoted in an error.
const MAX_QUOTE: usize = 160;

/// A validated loopback URL: `http://127.0.0.1:8000/metrics`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineUrl {
    pub addr: SocketAddr,
    pub host: String,
    pub path: String,
}

/// Why a scrape failed, for logs and the `reason` label of
/// `triage_runner_engine_scrape_failures_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ScrapeErrorKind {
    /// Nothing listens there, or the connection was refused or reset while connecting.
    Connect,
    /// The whole scrape did not finish within its deadline.
    Timeout,
    /// The connection broke while sending or reading.
    Io,
    /// The engine answered, but not `200`.
    Status,
    /// The answer is not HTTP.
    Malformed,
    /// The answer is larger than the runner reads (8 MiB).
    TooLarge,
}

impl ScrapeErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ScrapeErrorKind::Connect => "connect",
            ScrapeErrorKind::Timeout => "timeout",
            ScrapeErrorKind::Io => "io",
            ScrapeErrorKind::Status => "status",
            ScrapeErrorKind::Malformed => "malformed",
            ScrapeErrorKind::TooLarge => "too_large",
        }
    }
}

/// A failed scrape: its kind and a one-line message (anything quoted from the engine is
/// redacted, then cut).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScrapeError {
    pub kind: ScrapeErrorKind,
    pub message: String,
}

impl std::fmt::Display for ScrapeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ScrapeError {}

fn err(kind: ScrapeErrorKind, message: String) -> ScrapeError {
    ScrapeError { kind, message }
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::TimedOut | ErrorKind::WouldBlock)
}

impl EngineUrl {
    pub fn parse(url: &str) -> Result<EngineUrl, String> {
        let rest = url.strip_prefix("http://").ok_or_else(|| {
            format!("engine URL {url:?}: only plain http:// on the loopback interface is supported (e.g. http://127.0.0.1:8000/metrics)")
        })?;
        let (hostport, path) =
            rest.split_once('/').map_or((rest, "/metrics".to_owned()), |(h, p)| (h, format!("/{p}")));
        let with_port = if hostport.contains(':') && !hostport.ends_with(']') {
            hostport.to_owned()
        } else {
            format!("{hostport}:80")
        };
        let addr = with_port
            .to_socket_addrs()
            .map_err(|e| format!("engine URL {url:?}: {e}"))?
            .next()
            .ok_or_else(|| format!("engine URL {url:?}: no address"))?;
        if !addr.ip().is_loopback() {
            return Err(format!(
                "engine URL {url:?} is not on the loopback interface; the runner only reads the local engine"
            ));
        }
        Ok(EngineUrl { addr, host: hostport.to_owned(), path })
    }

    /// GET the page within `timeout` from now (see [`EngineUrl::fetch_by`]).
    pub fn fetch(&self, timeout: Duration) -> Result<String, ScrapeError> {
        self.fetch_by(Instant::now() + timeout)
    }

    /// GET the page; the body on a 200, else a classified error. Everything — connecting,
    /// sending, every read — happens before `deadline`: an engine that trickles its answer a
    /// byte at a time fails with [`ScrapeErrorKind::Timeout`] at the deadline, not later.
    pub fn fetch_by(&self, deadline: Instant) -> Result<String, ScrapeError> {
        let addr = self.addr;
        let late = |stage: &str| {
            err(
                ScrapeErrorKind::Timeout,
                format!("{addr}: no complete answer within the scrape deadline ({stage})"),
            )
        };
        let left = || deadline.checked_duration_since(Instant::now()).filter(|d| !d.is_zero());
        let mut s = TcpStream::connect_timeout(&addr, left().ok_or_else(|| late("before connecting"))?)
            .map_err(|e| {
                if is_timeout(&e) {
                    late("connecting")
                } else {
                    err(ScrapeErrorKind::Connect, format!("connecting to {addr}: {e}"))
                }
            })?;
        let req = format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\nAccept: text/plain\r\nConnection: close\r\n\r\n",
            self.path, self.host
        );
        s.set_write_timeout(Some(left().ok_or_else(|| late("sending"))?)).ok();
        s.write_all(req.as_bytes()).map_err(|e| {
            if is_timeout(&e) {
                late("sending")
            } else {
                err(ScrapeErrorKind::Io, format!("sending to {addr}: {e}"))
            }
        })?;
        let mut buf = Vec::new();
        let mut chunk = [0u8; 16 << 10];
        // Where the body starts, how long it is and whether it is chunked, once the header is in.
        let mut framing: Option<(usize, Option<usize>, bool)> = None;
        loop {
            let wait = left().ok_or_else(|| late("reading"))?;
            s.set_read_timeout(Some(wait)).ok();
            let n = match s.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if is_timeout(&e) => return Err(late("reading")),
                Err(e) => return Err(err(ScrapeErrorKind::Io, format!("reading from {addr}: {e}"))),
            };
            if buf.len() + n > MAX_BODY {
                return Err(err(
                    ScrapeErrorKind::TooLarge,
                    format!("{addr}: the answer is larger than {} MiB", MAX_BODY >> 20),
                ));
            }
            buf.extend_from_slice(&chunk[..n]);
            if framing.is_none() {
                framing = header_end(&buf).map(|end| {
                    let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                    (end, content_length(&buf[..end]), head.contains("transfer-encoding: chunked"))
                });
            }
            // Done when the declared length is in, or a chunked body's last chunk came: an
            // engine that keeps the connection open after answering costs nothing.
            match framing {
                Some((start, Some(len), false)) if buf.len() >= start + len => break,
                Some((start, _, true)) if buf.len() > start && buf.ends_with(b"0\r\n\r\n") => break,
                _ => {}
            }
        }
        let text = String::from_utf8_lossy(&buf);
        let (head, body) = text.split_once("\r\n\r\n").ok_or_else(|| {
            err(ScrapeErrorKind::Malformed, format!("{addr}: no HTTP header in the answer"))
        })?;
        let status = head.lines().next().unwrap_or("");
        if !status.starts_with("HTTP/") {
            return Err(err(ScrapeErrorKind::Malformed, format!("{addr}: the answer is not HTTP")));
        }
        if !status.split_whitespace().nth(1).is_some_and(|c| c == "200") {
            return Err(err(
                ScrapeErrorKind::Status,
                format!("{addr} answered \"{}\"", safe::cut(&safe::redact(status), MAX_QUOTE)),
            ));
        }
        if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
            return Ok(dechunk(body));
        }
        let len = content_length(head.as_bytes()).unwrap_or(body.len()).min(body.len());
        Ok(body.get(..len).unwrap_or(body).to_owned())
    }
}

/// Offset just past the blank line that ends an HTTP header.
fn header_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4)
}

/// The `Content-Length` of a header, when it has one.
fn content_length(head: &[u8]) -> Option<usize> {
    String::from_utf8_lossy(head).lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case("content-length").then(|| v.trim().parse().ok())?
    })
}

/// Undo chunked transfer encoding (what a Python engine's HTTP server may send).
fn dechunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim().split(';').next().unwrap_or(""), 16) else { break };
        if n == 0 || after.len() < n || !after.is_char_boundary(n) {
            let end = (0..=n.min(after.len())).rev().find(|&i| after.is_char_boundary(i)).unwrap_or(0);
            out.push_str(&after[..end]);
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].strip_prefix("\r\n").unwrap_or(&after[n..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback() {
        assert!(EngineUrl::parse("http://127.0.0.1:8000/metrics").is_ok());
        assert_eq!(EngineUrl::parse("http://localhost:9/x").unwrap().path, "/x");
        assert!(EngineUrl::parse("http://10.0.0.1:8000/metrics").unwrap_err().contains("loopback"));
        assert!(EngineUrl::parse("https://127.0.0.1/metrics").unwrap_err().contains("http://"));
    }

    #[test]
    fn dechunks() {
        assert_eq!(dechunk("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"), "hello world");
        // A chunk size that ends inside a character does not panic.
        assert_eq!(dechunk("2\r\né\r\n1\r\nxé"), "éx");
        assert_eq!(dechunk("2\r\nxé"), "x");
    }

    #[test]
    fn never_hangs_on_a_silent_server() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = EngineUrl::parse(&format!("http://{}/metrics", l.local_addr().unwrap())).unwrap();
        let started = Instant::now();
        let err = url.fetch(Duration::from_millis(200)).unwrap_err();
        // A real deadline on a real socket: without it the fetch never returns, so the bound can
        // be generous (a loaded 2-core CI machine) and still fail a hang.
        assert!(started.elapsed() < Duration::from_secs(5), "{err}");
        assert_eq!(err.kind, ScrapeErrorKind::Timeout, "{err}");
        drop(l);
    }

    /// A server on 127.0.0.1 that answers every connection with `head`, then one byte of body
    /// every `every`, for at most `for_at_most`, then stops by itself.
    fn trickler(
        head: &'static str,
        every: Duration,
        for_at_most: Duration,
    ) -> (EngineUrl, std::thread::JoinHandle<()>) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = EngineUrl::parse(&format!("http://{}/metrics", l.local_addr().unwrap())).unwrap();
        let h = std::thread::spawn(move || {
            let until = Instant::now() + for_at_most;
            l.set_nonblocking(true).unwrap();
            while Instant::now() < until {
                let Ok((mut c, _)) = l.accept() else {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                };
                c.set_nonblocking(false).ok();
                let _ = c.write_all(head.as_bytes());
                while Instant::now() < until && c.write_all(b"#").is_ok() {
                    std::thread::sleep(every.min(until.saturating_duration_since(Instant::now())));
                }
            }
        });
        (url, h)
    }

    #[test]
    fn one_deadline_for_the_whole_scrape_of_a_trickling_engine() {
        // Each byte comes well within a per-read timeout; the scrape as a whole never ends.
        let (url, server) = trickler(
            "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n",
            Duration::from_millis(200),
            Duration::from_secs(4),
        );
        let started = Instant::now();
        let e = url.fetch(Duration::from_millis(700)).unwrap_err();
        let took = started.elapsed();
        assert_eq!(e.kind, ScrapeErrorKind::Timeout, "{e}");
        assert!(e.message.contains("deadline"), "{e}");
        // A real deadline on a real socket. Not before it; after it, a generous bound (a loaded
        // 2-core machine) that is still well below the 4 s the engine trickles: a scrape that
        // ignored the deadline would end only when the engine stops.
        assert!(took >= Duration::from_millis(650) && took < Duration::from_millis(2500), "took {took:?}");
        server.join().unwrap();
    }

    #[test]
    fn a_declared_length_ends_the_read_without_waiting_for_close() {
        let (url, server) = trickler(
            "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc",
            Duration::from_secs(5),
            Duration::from_secs(4),
        );
        let started = Instant::now();
        // The server keeps the connection open for 4 s, past the 3 s deadline: a read that
        // waited for the close would time out instead of answering.
        assert_eq!(url.fetch(Duration::from_secs(3)).unwrap(), "abc");
        // And it answers long before the deadline (a generous bound: a loaded machine).
        assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
        server.join().unwrap();
    }

    #[test]
    fn statuses_are_classified_and_quoted_safely() {
        let (url, server) = trickler(
            "HTTP/1.1 500 \x1b]0;pwned\x07 sk-abcdefghijklmnopqrstuvwx\r\nContent-Length: 0\r\n\r\n",
            Duration::from_millis(50),
            Duration::from_millis(500),
        );
        let e = url.fetch(Duration::from_secs(2)).unwrap_err();
        assert_eq!(e.kind, ScrapeErrorKind::Status, "{e}");
        assert!(!e.message.contains("abcdefghijklmnop"), "redacted: {e}");
        server.join().unwrap();
        let refused = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let a = l.local_addr().unwrap();
            drop(l);
            EngineUrl::parse(&format!("http://{a}/metrics")).unwrap()
        };
        assert_eq!(refused.fetch(Duration::from_secs(1)).unwrap_err().kind, ScrapeErrorKind::Connect);
    }
}
