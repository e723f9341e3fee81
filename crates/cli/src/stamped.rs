//! The probe's own HTTP/1.1 transport for plain `http://` on Linux: hyper's client over a
//! connector of ours whose sockets carry kernel receive timestamps.
//!
//! Each connection enables `SO_TIMESTAMPNS` ([`crate::rxstamp`]) and reads with `recvmsg`;
//! [`Stamped`] keeps the kernel time (`CLOCK_REALTIME` ns) of its latest read in a shared cell
//! that hyper puts in every response's extensions ([`Arrivals`]). When the body yields a chunk,
//! that read is the one that delivered the chunk's last bytes — or a later one, if hyper read
//! ahead, which only ever makes the stamp later, never earlier than the truth. hyper follows no
//! redirect, so the probe's guarantees hold as with reqwest; the probe's deadline wraps every
//! step, and the connect itself is bounded by the request timeout.

use std::future::Future;
use std::io;
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Uri;
use hyper::body::Incoming;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::{TokioExecutor, TokioTimer};
use tokio::io::{AsyncWrite, Interest};
use tokio::net::TcpStream;

/// The kernel receive time (`CLOCK_REALTIME` ns, 0 = none yet) of a connection's latest read.
#[derive(Clone, Debug, Default)]
pub struct Arrivals(Arc<AtomicI64>);

impl Arrivals {
    /// The latest read's kernel stamp, if the kernel has given one.
    pub fn latest(&self) -> Option<i64> {
        Some(self.0.load(Ordering::Acquire)).filter(|&s| s > 0)
    }
}

/// A TCP stream whose reads record their kernel receive time.
pub struct Stamped {
    tcp: TcpStream,
    arrivals: Arrivals,
    /// Bytes are read here (initialised memory, so no unsafe for hyper's cursor), then copied.
    scratch: Box<[u8]>,
}

const SCRATCH: usize = 16 * 1024;

impl Read for Stamped {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let want = buf.remaining().min(this.scratch.len());
        loop {
            ready!(this.tcp.poll_read_ready(cx))?;
            let fd = this.tcp.as_raw_fd();
            let scratch = &mut this.scratch[..want];
            match this.tcp.try_io(Interest::READABLE, || crate::rxstamp::recv(fd, scratch)) {
                Ok((n, stamp)) => {
                    if let Some(s) = stamp.filter(|_| n > 0) {
                        this.arrivals.0.store(s, Ordering::Release);
                    }
                    buf.put_slice(&this.scratch[..n]);
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl Write for Stamped {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().tcp).poll_write(cx, buf)
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_flush(cx)
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_shutdown(cx)
    }
}

impl Connection for Stamped {
    fn connected(&self) -> Connected {
        Connected::new().extra(self.arrivals.clone())
    }
}

/// Connects `http://host:port` with Nagle off and receive timestamps on.
#[derive(Clone)]
pub struct Connector {
    timeout: Duration,
}

type Connecting = Pin<Box<dyn Future<Output = io::Result<Stamped>> + Send>>;

impl tower_service::Service<Uri> for Connector {
    type Response = Stamped;
    type Error = io::Error;
    type Future = Connecting;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Connecting {
        let timeout = self.timeout;
        Box::pin(async move {
            let host =
                uri.host().unwrap_or_default().trim_start_matches('[').trim_end_matches(']').to_owned();
            let port = uri.port_u16().unwrap_or(80);
            let connect = async {
                let mut last = None;
                for addr in tokio::net::lookup_host((host.as_str(), port)).await? {
                    match TcpStream::connect(addr).await {
                        Ok(s) => return Ok(s),
                        Err(e) => last = Some(e),
                    }
                }
                Err(last.unwrap_or_else(|| io::Error::other(format!("failed to lookup address {host}"))))
            };
            let tcp = tokio::time::timeout(timeout, connect)
                .await
                .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "connect timed out"))??;
            tcp.set_nodelay(true)?;
            crate::rxstamp::enable(tcp.as_raw_fd())?;
            Ok(Stamped { tcp, arrivals: Arrivals::default(), scratch: vec![0; SCRATCH].into_boxed_slice() })
        })
    }
}

/// hyper's pooled HTTP/1.1 client over [`Connector`].
pub type StampedClient = Client<Connector, Full<Bytes>>;

/// The client: at most `idle` idle connections kept per host, for 90 s (as reqwest's default).
pub fn client(idle: usize, timeout: Duration) -> StampedClient {
    Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(idle)
        .pool_idle_timeout(Duration::from_secs(90))
        .pool_timer(TokioTimer::new())
        .build(Connector { timeout })
}

/// A response body that says when each chunk's bytes arrived.
pub struct Body {
    body: Incoming,
    arrivals: Option<Arrivals>,
}

impl Body {
    /// Take the body of `resp`, with its connection's arrival cell.
    pub fn of(resp: hyper::Response<Incoming>) -> (hyper::http::response::Parts, Body) {
        let (parts, body) = resp.into_parts();
        let arrivals = parts.extensions.get::<Arrivals>().cloned();
        (parts, Body { body, arrivals })
    }

    /// The next data chunk and the kernel stamp (`CLOCK_REALTIME` ns) of the read that
    /// completed it; `None` at the end of the body. Trailers are skipped.
    pub async fn chunk(&mut self) -> Result<Option<(Bytes, Option<i64>)>, hyper::Error> {
        loop {
            let Some(frame) = self.body.frame().await else { return Ok(None) };
            if let Ok(data) = frame?.into_data() {
                let stamp = self.arrivals.as_ref().and_then(Arrivals::latest);
                return Ok(Some((data, stamp)));
            }
        }
    }
}
