//! A real Prometheus for tests: over backfilled blocks (`promtool tsdb create-blocks-from
//! openmetrics` turns OpenMetrics files into TSDB blocks) or scraping a target, served on
//! 127.0.0.1 (a free port) until dropped, when it is killed and its folder removed.
//!
//! Needs Debian's `prometheus` package (`prometheus` and `promtool`, 2.42; `.ci/run` installs
//! it). Without it the tests fail and say how to get it, unless `TRIAGE_SKIP_PROMETHEUS=1`:
//! then they say they skipped.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub use crate::process::TempDir;
use crate::process::free_port;

/// How long Prometheus may take to load the blocks and say it is ready.
const READY_WITHIN: Duration = Duration::from_secs(60);
/// How long promtool may take per file.
const BACKFILL_WITHIN: Duration = Duration::from_secs(120);
/// Most bytes read from one HTTP answer.
const MAX_BODY: u64 = 16 << 20;

/// `(prometheus, promtool)`, or `None` when they are absent and the skip is asked for.
pub fn tools() -> Option<(PathBuf, PathBuf)> {
    let find = |name: &str| -> Option<PathBuf> {
        let fixed = Path::new("/usr/bin").join(name);
        if fixed.exists() {
            return Some(fixed);
        }
        std::env::var_os("PATH")
            .and_then(|p| std::env::split_paths(&p).map(|d| d.join(name)).find(|c| c.is_file()))
    };
    match (find("prometheus"), find("promtool")) {
        (Some(p), Some(t)) => Some((p, t)),
        _ if std::env::var_os("TRIAGE_SKIP_PROMETHEUS").is_some() => {
            eprintln!("skipped: no prometheus/promtool and TRIAGE_SKIP_PROMETHEUS is set");
            None
        }
        _ => panic!(
            "these tests need a real Prometheus and promtool: `apt-get install prometheus` (or set TRIAGE_SKIP_PROMETHEUS=1)"
        ),
    }
}

/// Wait for `child` at most `within`; kill it past that.
fn wait_for(mut child: Child, within: Duration, what: &str) -> std::process::Output {
    let deadline = Instant::now() + within;
    loop {
        if child.try_wait().expect("waiting").is_some() {
            return child.wait_with_output().expect("reading its output");
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} took longer than {within:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A running Prometheus over backfilled blocks. Dropped: killed, then its folder removed.
pub struct Prometheus {
    child: Child,
    /// Dropped after `drop` has killed the child.
    _dir: TempDir,
    pub port: u16,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    /// Backfill every OpenMetrics file in `files` into `dir/data`, then start Prometheus on it.
    pub fn start(tools: &(PathBuf, PathBuf), dir: TempDir, files: &[PathBuf]) -> Prometheus {
        let (prometheus, promtool) = tools;
        let data = dir.path().join("data");
        for f in files {
            let child = Command::new(promtool)
                .args(["tsdb", "create-blocks-from", "openmetrics", "--quiet"])
                .arg(f)
                .arg(&data)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("starting promtool");
            let out = wait_for(child, BACKFILL_WITHIN, "promtool tsdb create-blocks-from openmetrics");
            assert!(
                out.status.success(),
                "promtool refused {}: {}{}",
                f.display(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        // No scrape targets: the backfilled blocks are all it holds. Backfilled data is hours
        // old; a century's retention keeps Prometheus from deleting it at start.
        let config = "global:\n  scrape_interval: 1h\n  evaluation_interval: 1h\n";
        Prometheus::launch(prometheus, dir, config, &["--storage.tsdb.retention.time=100y"])
    }

    /// Start Prometheus scraping `target` (`host:port`, path `/metrics`) every second as job
    /// `job`, with nothing backfilled.
    pub fn scraping(tools: &(PathBuf, PathBuf), dir: TempDir, job: &str, target: &str) -> Prometheus {
        let config = format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: {job}\n    static_configs:\n      - targets: ['{target}']\n"
        );
        Prometheus::launch(&tools.0, dir, &config, &[])
    }

    /// Write `config`, start Prometheus on `dir/data` and wait until it is ready.
    fn launch(prometheus: &Path, dir: TempDir, config: &str, extra: &[&str]) -> Prometheus {
        let data = dir.path().join("data");
        let config_path = dir.path().join("prometheus.yml");
        std::fs::write(&config_path, config).unwrap();
        let mut last_log = String::new();
        // A free port can be taken between our probe and Prometheus' bind: three tries.
        for _ in 0..3 {
            let port = free_port();
            let log = dir.path().join("prometheus.log");
            let mut child = Command::new(prometheus)
                .arg(format!("--config.file={}", config_path.display()))
                .arg(format!("--storage.tsdb.path={}", data.display()))
                .args(extra)
                .arg(format!("--web.listen-address=127.0.0.1:{port}"))
                .arg("--log.level=warn")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(&log).unwrap())
                .spawn()
                .expect("starting prometheus");
            let deadline = Instant::now() + READY_WITHIN;
            while Instant::now() < deadline {
                if child.try_wait().unwrap().is_some() {
                    break;
                }
                if matches!(http_get(port, "/-/ready"), Some((200, _))) {
                    return Prometheus { child, _dir: dir, port };
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            last_log = std::fs::read_to_string(&log).unwrap_or_default();
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("prometheus was not ready within {READY_WITHIN:?}: {last_log}");
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn get(&self, path: &str) -> Option<(u16, String)> {
        http_get(self.port, path)
    }

    /// An instant query at `time` (unix s): the result vector.
    pub fn query(&self, promql: &str, time: u64) -> Vec<serde_json::Value> {
        let (status, body) = self
            .get(&format!("/api/v1/query?query={}&time={time}", encode(promql)))
            .expect("prometheus answers");
        assert_eq!(status, 200, "{promql}: {body}");
        let v: serde_json::Value = serde_json::from_str(&body).expect("JSON");
        v["data"]["result"].as_array().cloned().unwrap_or_default()
    }

    /// An instant query at Prometheus's now: the result vector, empty when nothing answered or
    /// the answer was not a query result (for polling until the data is there).
    pub fn poll(&self, promql: &str) -> Vec<serde_json::Value> {
        let Some((_, body)) = self.get(&format!("/api/v1/query?query={}", encode(promql))) else {
            return Vec::new();
        };
        let v: serde_json::Value = serde_json::from_str(&body).unwrap_or(serde_json::Value::Null);
        v["data"]["result"].as_array().cloned().unwrap_or_default()
    }
}

/// `promql` percent-encoded for a query string.
fn encode(promql: &str) -> String {
    promql
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"_-.".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// `GET path` from 127.0.0.1:`port` over HTTP/1.0 (the answer ends with the connection): status
/// and body, or `None` when nothing answered. Bounded in time and size.
fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    s.set_write_timeout(Some(Duration::from_secs(2))).ok()?;
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").as_bytes()).ok()?;
    let mut raw = Vec::new();
    s.take(MAX_BODY).read_to_end(&mut raw).ok()?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.split(' ').nth(1)?.parse().ok()?;
    Some((status, body.to_owned()))
}
