//! Reading the local engine's `/metrics` over plain HTTP/1.1, loopback only, with a short
//! timeout: the runner must never hang on a stuck engine, and never talk to another host.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

/// Most bytes read from one scrape.
const MAX_BODY: usize = 8 << 20;

/// A validated loopback URL: `http://127.0.0.1:8000/metrics`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineUrl {
    pub addr: SocketAddr,
    pub host: String,
    pub path: String,
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

    /// GET the page; the body on a 200, else an error that says what came back.
    pub fn fetch(&self, timeout: Duration) -> Result<String, String> {
        let mut s = TcpStream::connect_timeout(&self.addr, timeout)
            .map_err(|e| format!("connecting to {}: {e}", self.addr))?;
        s.set_read_timeout(Some(timeout)).ok();
        s.set_write_timeout(Some(timeout)).ok();
        let req = format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\nAccept: text/plain\r\nConnection: close\r\n\r\n",
            self.path, self.host
        );
        s.write_all(req.as_bytes()).map_err(|e| format!("sending: {e}"))?;
        let mut buf = Vec::new();
        s.take(MAX_BODY as u64).read_to_end(&mut buf).map_err(|e| format!("reading: {e}"))?;
        let text = String::from_utf8_lossy(&buf);
        let (head, body) = text.split_once("\r\n\r\n").ok_or("no HTTP header in the answer")?;
        let status = head.lines().next().unwrap_or("");
        if !status.split_whitespace().nth(1).is_some_and(|c| c == "200") {
            return Err(format!("answered {status:?}"));
        }
        if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
            return Ok(dechunk(body));
        }
        Ok(body.to_owned())
    }
}

/// Undo chunked transfer encoding (what a Python engine's HTTP server may send).
fn dechunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim().split(';').next().unwrap_or(""), 16) else { break };
        if n == 0 || after.len() < n {
            out.push_str(&after[..n.min(after.len())]);
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
    }

    #[test]
    fn never_hangs_on_a_silent_server() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = EngineUrl::parse(&format!("http://{}/metrics", l.local_addr().unwrap())).unwrap();
        let started = std::time::Instant::now();
        let err = url.fetch(Duration::from_millis(200)).unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(2), "{err}");
        drop(l);
    }
}
