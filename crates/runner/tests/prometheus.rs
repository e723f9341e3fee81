//! A real Prometheus (Debian's `prometheus` package) scrapes the runner on 127.0.0.1 while it
//! replays the eight-GPU fixture, and its query API returns the gauges and the straggler.
//!
//! Needs `/usr/bin/prometheus` (`.ci/run` installs it). Set `TRIAGE_SKIP_PROMETHEUS=1` to skip
//! on a machine without it; without either, the test fails and says how to get it.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use triage_runner::scrape::EngineUrl;

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn query(port: u16, q: &str) -> serde_json::Value {
    let enc: String = q
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"_-.".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    let url = EngineUrl::parse(&format!("http://127.0.0.1:{port}/api/v1/query?query={enc}")).unwrap();
    match url.fetch(Duration::from_secs(2)) {
        Ok(body) => serde_json::from_str(&body).unwrap_or(serde_json::Value::Null),
        Err(_) => serde_json::Value::Null,
    }
}

fn results(v: &serde_json::Value) -> Vec<serde_json::Value> {
    v["data"]["result"].as_array().cloned().unwrap_or_default()
}

#[test]
fn prometheus_scrapes_the_runner_and_queries_the_gauges_and_findings() {
    let prom = Path::new("/usr/bin/prometheus");
    if !prom.exists() {
        if std::env::var_os("TRIAGE_SKIP_PROMETHEUS").is_some() {
            eprintln!("skipped: no /usr/bin/prometheus and TRIAGE_SKIP_PROMETHEUS is set");
            return;
        }
        panic!(
            "this test needs a real Prometheus: `apt-get install prometheus` (or set TRIAGE_SKIP_PROMETHEUS=1)"
        );
    }
    let plugins = std::env::temp_dir().join(format!("triage-runner-prom-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&plugins);
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(&triage_plugin_build::ensure_components()[0], plugins.join("gpu-rules.wasm")).unwrap();
    let series: PathBuf =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/nvml/h200x8_one_slow.jsonl");

    // The runner: replay at 4× (the matmul phase, with GPU 5 slow, starts ~2.5 s in), then keep
    // serving until 40 s have passed. It stops by itself; dropped, it is killed.
    let mut runner = Command::new(env!("CARGO_BIN_EXE_triage-runner"))
        .args(["run", "--replay"])
        .arg(&series)
        .args(["--speed", "4", "--duration-s", "40", "--listen", "127.0.0.1:0", "--plugins"])
        .arg(&plugins)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = runner.stderr.take().unwrap();
    let runner = Killed(runner);
    let mut lines = BufReader::new(stderr).lines();
    let addr = loop {
        let line = lines.next().expect("the runner says where it serves").unwrap();
        if let Some(rest) = line.strip_prefix("triage-runner: metrics on http://") {
            break rest.trim_end_matches("/metrics").to_owned();
        }
    };
    std::thread::spawn(move || for _ in lines {});

    let dir = std::env::temp_dir().join(format!("triage-prom-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: triage-runner\n    static_configs:\n      - targets: ['{addr}']\n"),
    )
    .unwrap();
    let port = free_port();
    let started = Instant::now();
    let _prom = Killed(
        Command::new(prom)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--log.level=warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );

    let deadline = Instant::now() + Duration::from_secs(40);
    let (mut clocks, mut slow) = (Vec::new(), Vec::new());
    while Instant::now() < deadline && (clocks.len() < 8 || slow.is_empty()) {
        std::thread::sleep(Duration::from_millis(500));
        clocks = results(&query(port, "DCGM_FI_DEV_SM_CLOCK"));
        slow = results(&query(port, "max_over_time(triage_finding_active{rule=\"slow-gpu\"}[5m])"));
    }
    eprintln!("prometheus answered after {:.1} s", started.elapsed().as_secs_f64());
    assert_eq!(clocks.len(), 8, "8 GPUs' SM clocks: {clocks:?}");
    assert!(
        clocks
            .iter()
            .all(|r| r["metric"]["job"] == "triage-runner" && r["metric"]["modelName"] == "NVIDIA H200")
    );
    assert_eq!(slow.len(), 1, "{slow:?}");
    assert_eq!(slow[0]["metric"]["gpu"], "5");
    assert_eq!(slow[0]["metric"]["class"], "TBT_TAIL");
    assert_eq!(slow[0]["value"][1], "1");
    let up = results(&query(port, "up{job=\"triage-runner\"}"));
    assert_eq!(up[0]["value"][1], "1");
    drop(runner);
    let _ = std::fs::remove_dir_all(&dir);
}
