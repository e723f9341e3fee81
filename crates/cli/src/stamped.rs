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
//!
//! Two more things only this transport can see. When each write returned ([`Arrivals::last_write`]):
//! the last one before a response is the instant the request's last byte was handed to the
//! kernel, which the probe counts TTFT from (a 200 KB prompt's write is not the server's
//! latency). And connections opened ahead of the timed requests ([`StampedClient::warm`]):
//! a run opens as many as it will use, at most [`RAMP`] connects at once, before its first
//! request, so a 1,024-stream run does not start with 1,024 simultaneous handshakes inside its
//! first requests' TTFT.

use std::future::Future;
use std::io;
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

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

/// A connection's latest read and write: the kernel receive time of the read (`CLOCK_REALTIME`
/// ns, 0 = none yet) and the instant the latest write returned (ns since [`base`] + 1, 0 =
/// none yet).
#[derive(Clone, Debug, Default)]
pub struct Arrivals(Arc<(AtomicI64, AtomicU64)>);

/// The process's origin for write instants.
fn base() -> Instant {
    static BASE: OnceLock<Instant> = OnceLock::new();
    *BASE.get_or_init(Instant::now)
}

impl Arrivals {
    /// The latest read's kernel stamp, if the kernel has given one.
    pub fn latest(&self) -> Option<i64> {
        Some(self.0.0.load(Ordering::Acquire)).filter(|&s| s > 0)
    }

    /// When the connection's latest write returned (its bytes were in the kernel's hands).
    pub fn last_write(&self) -> Option<Instant> {
        let ns = self.0.1.load(Ordering::Acquire);
        (ns > 0).then(|| base() + Duration::from_nanos(ns - 1))
    }

    fn wrote(&self) {
        let ns = u64::try_from(base().elapsed().as_nanos()).unwrap_or(u64::MAX - 1);
        self.0.1.store(ns + 1, Ordering::Release);
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
                        this.arrivals.0.0.store(s, Ordering::Release);
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
        let this = self.get_mut();
        let written = Pin::new(&mut this.tcp).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = written
            && n > 0
        {
            this.arrivals.wrote();
        }
        written
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

/// Connections opened ahead of the requests, by `host:port`, handed out before new ones.
#[derive(Clone, Default)]
struct Spares(Arc<Mutex<Vec<(String, Stamped)>>>);

impl Spares {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(String, Stamped)>> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A spare connection to `authority` that is still open and has nothing unread (a server
    /// that closed an idle connection, or wrote on one unasked, is not trusted with a request).
    fn take(&self, authority: &str) -> Option<Stamped> {
        let mut spares = self.lock();
        while let Some(i) = spares.iter().position(|(a, _)| a == authority) {
            let (_, s) = spares.swap_remove(i);
            if crate::rxstamp::idle_and_open(s.tcp.as_raw_fd()) {
                return Some(s);
            }
        }
        None
    }
}

/// Connects `http://host:port` with Nagle off and receive timestamps on.
#[derive(Clone)]
pub struct Connector {
    timeout: Duration,
    spares: Spares,
}

type Connecting = Pin<Box<dyn Future<Output = io::Result<Stamped>> + Send>>;

fn authority(host: &str, port: u16) -> String {
    format!("{host}:{port}")
}

fn host_port(uri: &Uri) -> (String, u16) {
    let host = uri.host().unwrap_or_default().trim_start_matches('[').trim_end_matches(']').to_owned();
    (host, uri.port_u16().unwrap_or(80))
}

/// A new connection to `host:port`, bounded by `timeout`.
async fn connect(host: String, port: u16, timeout: Duration) -> io::Result<Stamped> {
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
}

impl tower_service::Service<Uri> for Connector {
    type Response = Stamped;
    type Error = io::Error;
    type Future = Connecting;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Connecting {
        let timeout = self.timeout;
        let (host, port) = host_port(&uri);
        let spare = self.spares.take(&authority(&host, port));
        Box::pin(async move {
            match spare {
                Some(s) => Ok(s),
                None => connect(host, port, timeout).await,
            }
        })
    }
}

/// Most connections [`StampedClient::warm`] opens at once.
pub const RAMP: usize = 32;

/// hyper's pooled HTTP/1.1 client over [`Connector`], with the connections opened ahead.
pub struct StampedClient {
    http: Client<Connector, Full<Bytes>>,
    spares: Spares,
    timeout: Duration,
}

impl StampedClient {
    /// Send `req` (hyper's client: no redirect followed).
    pub fn request(&self, req: hyper::Request<Full<Bytes>>) -> hyper_util::client::legacy::ResponseFuture {
        self.http.request(req)
    }

    /// Open `n` connections to `url`'s host ahead of the timed requests, at most [`RAMP`] at
    /// once; the requests take them before opening their own. It stops at the first connect
    /// that fails and when none has completed for [`WARM_PATIENCE`] (or the request timeout,
    /// if shorter): what could not be opened is left to the requests, which report why.
    /// Returns how many opened.
    pub async fn warm(&self, url: &str, n: usize) -> usize {
        let Ok(uri) = url.parse::<Uri>() else { return 0 };
        let (host, port) = host_port(&uri);
        let key = authority(&host, port);
        let patience = self.timeout.min(WARM_PATIENCE);
        let mut set = tokio::task::JoinSet::new();
        let (mut started, mut opened) = (0, 0);
        loop {
            while started < n && set.len() < RAMP {
                set.spawn(connect(host.clone(), port, self.timeout));
                started += 1;
            }
            match tokio::time::timeout(patience, set.join_next()).await {
                Ok(Some(Ok(Ok(s)))) => {
                    self.spares.lock().push((key.clone(), s));
                    opened += 1;
                }
                Ok(Some(_)) | Ok(None) | Err(_) => break,
            }
        }
        set.abort_all();
        opened
    }
}

/// How long [`StampedClient::warm`] waits for the next connection before leaving the rest to
/// the requests.
pub const WARM_PATIENCE: Duration = Duration::from_secs(3);

/// The client: at most `idle` idle connections kept per host, for 90 s (as reqwest's default).
pub fn client(idle: usize, timeout: Duration) -> StampedClient {
    let spares = Spares::default();
    let http = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(idle)
        .pool_idle_timeout(Duration::from_secs(90))
        .pool_timer(TokioTimer::new())
        .build(Connector { timeout, spares: spares.clone() });
    StampedClient { http, spares, timeout }
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

    /// When the connection's latest write returned: read with the response's headers, the
    /// instant the request's last byte was handed to the kernel.
    pub fn last_write(&self) -> Option<Instant> {
        self.arrivals.as_ref().and_then(Arrivals::last_write)
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
