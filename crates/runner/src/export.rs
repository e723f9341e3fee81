//! Prometheus exposition: per-GPU gauges named like NVIDIA's DCGM exporter (so existing
//! dashboards and alerts read them), the active findings, and the runner's own health; served
//! over HTTP on a loopback address by a small thread.
//!
//! Names and units (DCGM's): `DCGM_FI_DEV_SM_CLOCK`, `DCGM_FI_DEV_MEM_CLOCK`,
//! `DCGM_FI_DEV_MAX_SM_CLOCK` (MHz); `DCGM_FI_DEV_POWER_USAGE`,
//! `DCGM_FI_DEV_ENFORCED_POWER_LIMIT` (W); `DCGM_FI_DEV_GPU_UTIL`, `DCGM_FI_DEV_MEM_COPY_UTIL`
//! (%); `DCGM_FI_DEV_FB_USED`, `DCGM_FI_DEV_FB_FREE` (MiB); `DCGM_FI_DEV_GPU_TEMP` (°C);
//! `DCGM_FI_DEV_CLOCKS_EVENT_REASONS` (NVML bitmask); `DCGM_FI_DEV_POWER_VIOLATION`,
//! `DCGM_FI_DEV_THERMAL_VIOLATION` (µs, cumulative); `DCGM_FI_DEV_ECC_DBE_VOL_TOTAL`;
//! `DCGM_FI_DEV_XID_ERRORS` (the last XID code). Labels as DCGM's: `gpu`, `UUID`, `device`,
//! `modelName`.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use triage_core::gpu::series::{Meta, MetaGpu};
use triage_core::gpu::{GpuFinding, GpuSample};

use crate::host::PluginStatus;

/// The runner's own counters.
#[derive(Clone, Debug, Default)]
pub struct Counters {
    pub ticks: u64,
    pub samples: u64,
    pub raised: std::collections::BTreeMap<String, u64>,
    pub plugin_calls: std::collections::BTreeMap<String, u64>,
    pub plugin_failures: std::collections::BTreeMap<(String, String), u64>,
    pub engine_up: Option<bool>,
    pub last_tick_seconds: f64,
    /// Last XID code per GPU.
    pub last_xid: std::collections::BTreeMap<u32, u64>,
    /// Failed engine scrapes by reason (`ScrapeErrorKind::as_str`).
    pub engine_failures: std::collections::BTreeMap<String, u64>,
    /// GPU-rules plugins loaded now; `None` with the built-in rules.
    pub plugins_loaded: Option<usize>,
}

/// A label value: the exposition format's three escapes, and the characters a terminal acts
/// on (a plugin's rule id, a file name) replaced, since the format has no escape for them.
fn esc(v: &str) -> String {
    v.chars()
        .map(|c| if triage_core::safe::is_unsafe_char(c) && c != '\t' { '\u{fffd}' } else { c })
        .collect::<String>()
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Render the exposition for the latest tick.
pub fn render(
    meta: Option<&Meta>,
    samples: &[GpuSample],
    findings: &[(String, GpuFinding)],
    plugins: &[PluginStatus],
    c: &Counters,
) -> String {
    let mut out = String::new();
    let label_of = gpu_labels(meta, samples);
    gpu_gauges(&mut out, samples, &label_of);
    gpu_errors(&mut out, samples, &label_of, c);
    active_findings(&mut out, findings);
    runner_health(&mut out, plugins, c);
    out
}

/// Each GPU's labels (`gpu`, `UUID`, `device`, `modelName`), one per sample.
fn gpu_labels(meta: Option<&Meta>, samples: &[GpuSample]) -> Vec<String> {
    // Each GPU's labels, made once per sample with the meta looked up by index: linear in the
    // GPUs (a search of the meta per sample and gauge was quadratic).
    let by_index: HashMap<u32, &MetaGpu> =
        meta.map(|m| m.gpus.iter().map(|g| (g.index, g)).collect()).unwrap_or_default();
    samples
        .iter()
        .map(|s| {
            let g = by_index.get(&s.gpu);
            let uuid = s.uuid.as_deref().or(g.map(|g| g.uuid.as_str())).unwrap_or_default();
            format!(
                "gpu=\"{}\",UUID=\"{}\",device=\"nvidia{}\",modelName=\"{}\"",
                s.gpu,
                esc(uuid),
                s.gpu,
                esc(g.map(|g| g.name.as_str()).unwrap_or_default())
            )
        })
        .collect()
}

/// The DCGM-named gauges and counters, each with the GPUs that have a value for it.
fn gpu_gauges(out: &mut String, samples: &[GpuSample], label_of: &[String]) {
    type Get = fn(&GpuSample) -> Option<f64>;
    let gauges: [(&str, &str, &str, Get); 13] = [
        ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", |s| s.sm_clock_mhz.map(f64::from)),
        ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", |s| {
            s.mem_clock_mhz.map(f64::from)
        }),
        ("DCGM_FI_DEV_MAX_SM_CLOCK", "gauge", "Maximum SM clock frequency (in MHz).", |s| {
            s.max_sm_clock_mhz.map(f64::from)
        }),
        ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", |s| {
            s.power_mw.map(|p| f64::from(p) / 1000.0)
        }),
        ("DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "gauge", "Enforced power limit (in W).", |s| {
            s.power_limit_mw.map(|p| f64::from(p) / 1000.0)
        }),
        (
            "DCGM_FI_DEV_GPU_UTIL",
            "gauge",
            "GPU utilization (in %): share of the sample period in which a kernel ran.",
            |s| s.util_gpu_pct.map(f64::from),
        ),
        ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", |s| {
            s.util_mem_pct.map(f64::from)
        }),
        ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", |s| {
            s.mem_used_bytes.map(|b| (b >> 20) as f64)
        }),
        ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", |s| {
            match (s.mem_total_bytes, s.mem_used_bytes) {
                (Some(t), Some(u)) => Some((t.saturating_sub(u) >> 20) as f64),
                _ => None,
            }
        }),
        ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", |s| s.temp_c.map(f64::from)),
        (
            "DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
            "gauge",
            "Active clock event (throttle) reasons, NVML bitmask: 0x4 SW power cap, 0x8 HW slowdown, 0x20 SW thermal, 0x40 HW thermal, 0x80 HW power brake.",
            |s| s.clock_event_reasons.map(|r| r as f64),
        ),
        (
            "DCGM_FI_DEV_POWER_VIOLATION",
            "counter",
            "Throttling duration due to power constraints (in us).",
            |s| s.violation_power_ns.map(|n| (n / 1000) as f64),
        ),
        (
            "DCGM_FI_DEV_THERMAL_VIOLATION",
            "counter",
            "Throttling duration due to thermal constraints (in us).",
            |s| s.violation_thermal_ns.map(|n| (n / 1000) as f64),
        ),
    ];
    for (name, kind, help, get) in gauges {
        let rows: Vec<String> = samples
            .iter()
            .zip(label_of)
            .filter_map(|(s, l)| get(s).map(|v| format!("{name}{{{l}}} {v}\n")))
            .collect();
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        rows.iter().for_each(|r| out.push_str(r));
    }
}

/// Double-bit ECC errors (GPUs that report them) and the last XID code of every GPU.
fn gpu_errors(out: &mut String, samples: &[GpuSample], label_of: &[String], c: &Counters) {
    let ecc: Vec<String> = samples
        .iter()
        .zip(label_of)
        .filter_map(|(s, l)| s.ecc_uncorrected.map(|v| format!("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{{{l}}} {v}\n")))
        .collect();
    if !ecc.is_empty() {
        out.push_str("# HELP DCGM_FI_DEV_ECC_DBE_VOL_TOTAL Total number of double-bit volatile ECC errors.\n# TYPE DCGM_FI_DEV_ECC_DBE_VOL_TOTAL counter\n");
        ecc.iter().for_each(|r| out.push_str(r));
    }
    out.push_str("# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error encountered (0: none seen).\n# TYPE DCGM_FI_DEV_XID_ERRORS gauge\n");
    for (s, l) in samples.iter().zip(label_of) {
        let _ =
            writeln!(out, "DCGM_FI_DEV_XID_ERRORS{{{l}}} {}", c.last_xid.get(&s.gpu).copied().unwrap_or(0));
    }
}

/// The active findings and their confidence.
fn active_findings(out: &mut String, findings: &[(String, GpuFinding)]) {
    out.push_str("# HELP triage_finding_active A finding of the GPU rules is active (1) on this GPU (gpu=\"\" for node-wide ones).\n# TYPE triage_finding_active gauge\n");
    for (plugin, f) in findings {
        let _ = writeln!(
            out,
            "triage_finding_active{{gpu=\"{}\",rule=\"{}\",class=\"{}\",plugin=\"{}\"}} 1",
            f.gpu.map(|g| g.to_string()).unwrap_or_default(),
            esc(&f.rule),
            f.class.as_str(),
            esc(plugin)
        );
    }
    out.push_str("# HELP triage_finding_confidence Confidence (0-1) of each active finding.\n# TYPE triage_finding_confidence gauge\n");
    for (plugin, f) in findings {
        let _ = writeln!(
            out,
            "triage_finding_confidence{{gpu=\"{}\",rule=\"{}\",class=\"{}\",plugin=\"{}\"}} {}",
            f.gpu.map(|g| g.to_string()).unwrap_or_default(),
            esc(&f.rule),
            f.class.as_str(),
            esc(plugin),
            f.confidence
        );
    }
}

/// The runner's own health: ticks, samples, the engine's scrapes and each plugin's calls.
fn runner_health(out: &mut String, plugins: &[PluginStatus], c: &Counters) {
    out.push_str("# HELP triage_findings_raised_total Findings raised since start, by rule.\n# TYPE triage_findings_raised_total counter\n");
    for (rule, n) in &c.raised {
        let _ = writeln!(out, "triage_findings_raised_total{{rule=\"{}\"}} {n}", esc(rule));
    }
    let _ = writeln!(
        out,
        "# HELP triage_runner_ticks_total Sampling ticks since start.\n# TYPE triage_runner_ticks_total counter\ntriage_runner_ticks_total {}",
        c.ticks
    );
    let _ = writeln!(
        out,
        "# HELP triage_runner_samples_total GPU samples taken since start.\n# TYPE triage_runner_samples_total counter\ntriage_runner_samples_total {}",
        c.samples
    );
    let _ = writeln!(
        out,
        "# HELP triage_runner_tick_seconds Wall time of the last tick: sampling, engine scrape and every plugin call.\n# TYPE triage_runner_tick_seconds gauge\ntriage_runner_tick_seconds {}",
        c.last_tick_seconds
    );
    if let Some(up) = c.engine_up {
        let _ = writeln!(
            out,
            "# HELP triage_runner_engine_up The last scrape of the engine's /metrics succeeded.\n# TYPE triage_runner_engine_up gauge\ntriage_runner_engine_up {}",
            u8::from(up)
        );
    }
    if !c.engine_failures.is_empty() {
        out.push_str("# HELP triage_runner_engine_scrape_failures_total Failed scrapes of the engine's /metrics since start, by reason (connect, timeout, io, status, malformed, too_large).\n# TYPE triage_runner_engine_scrape_failures_total counter\n");
        for (reason, n) in &c.engine_failures {
            let _ =
                writeln!(out, "triage_runner_engine_scrape_failures_total{{reason=\"{}\"}} {n}", esc(reason));
        }
    }
    if let Some(n) = c.plugins_loaded {
        let _ = writeln!(
            out,
            "# HELP triage_runner_plugins_loaded GPU-rules plugins loaded from the plugin folder (0: no rules run).\n# TYPE triage_runner_plugins_loaded gauge\ntriage_runner_plugins_loaded {n}"
        );
    }
    out.push_str("# HELP triage_runner_plugin_disabled A plugin was disabled after repeated failures (1) until its file changes.\n# TYPE triage_runner_plugin_disabled gauge\n");
    for p in plugins {
        let _ = writeln!(
            out,
            "triage_runner_plugin_disabled{{plugin=\"{}\"}} {}",
            esc(&p.name),
            u8::from(p.disabled)
        );
    }
    out.push_str("# HELP triage_runner_plugin_call_seconds Wall time of the plugin's last call.\n# TYPE triage_runner_plugin_call_seconds gauge\n");
    for p in plugins {
        let _ = writeln!(
            out,
            "triage_runner_plugin_call_seconds{{plugin=\"{}\"}} {}",
            esc(&p.name),
            p.last_call.as_secs_f64()
        );
    }
    out.push_str("# HELP triage_runner_plugin_calls_total Plugin calls since start.\n# TYPE triage_runner_plugin_calls_total counter\n");
    for (p, n) in &c.plugin_calls {
        let _ = writeln!(out, "triage_runner_plugin_calls_total{{plugin=\"{}\"}} {n}", esc(p));
    }
    out.push_str("# HELP triage_runner_plugin_failures_total Failed plugin calls (trap, fuel, deadline, memory, instantiate) since start.\n# TYPE triage_runner_plugin_failures_total counter\n");
    for ((p, reason), n) in &c.plugin_failures {
        let _ = writeln!(
            out,
            "triage_runner_plugin_failures_total{{plugin=\"{}\",reason=\"{reason}\"}} {n}",
            esc(p)
        );
    }
}

/// The latest exposition, shared with the HTTP thread.
pub type Shared = Arc<Mutex<String>>;

/// Connections answered at once, each on its own thread; past it a new connection is told 503
/// at once instead of waiting behind the others.
pub const MAX_CONNECTIONS: usize = 64;

/// Serve `GET /metrics` on `addr`: a thread accepts, and each connection is answered on a
/// thread of its own (at most [`MAX_CONNECTIONS`]) that gives it 2 s to send its request — so an
/// idle or slow client never delays a scrape (one at a time, 30 idle connections made a scrape
/// miss Prometheus' 10 s timeout).
pub fn serve(addr: SocketAddr, page: Shared) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr)?;
    let bound = listener.local_addr()?;
    std::thread::Builder::new().name("exposition".into()).spawn(move || {
        let open = Arc::new(AtomicUsize::new(0));
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let _ = conn.set_write_timeout(Some(Duration::from_secs(2)));
            if open.load(Ordering::Acquire) >= MAX_CONNECTIONS {
                let _ = respond(&mut conn, "503 Service Unavailable", "too many connections\n");
                continue;
            }
            open.fetch_add(1, Ordering::AcqRel);
            let (page, done) = (page.clone(), Arc::clone(&open));
            let spawned = std::thread::Builder::new().name("exposition-conn".into()).spawn(move || {
                answer(conn, &page);
                done.fetch_sub(1, Ordering::AcqRel);
            });
            if spawned.is_err() {
                open.fetch_sub(1, Ordering::AcqRel);
            }
        }
    })?;
    Ok(bound)
}

/// Read one request (2 s at most) and answer it.
fn answer(mut conn: std::net::TcpStream, page: &Shared) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
    let mut buf = [0u8; 2048];
    let n = conn.read(&mut buf).unwrap_or(0);
    let req = String::from_utf8_lossy(&buf[..n]);
    let path = req.split_whitespace().nth(1).unwrap_or("");
    let (status, body) = match path.split('?').next().unwrap_or("") {
        "/metrics" => ("200 OK", page.lock().map(|p| p.clone()).unwrap_or_default()),
        "/" => ("200 OK", "triage-runner: metrics at /metrics\n".to_owned()),
        _ => ("404 Not Found", "not found\n".to_owned()),
    };
    let _ = respond(&mut conn, status, &body);
}

fn respond(conn: &mut std::net::TcpStream, status: &str, body: &str) -> std::io::Result<()> {
    write!(
        conn,
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpStream;
    use std::time::Instant;

    /// The answer to `GET path`; a connection the server closed or reset answers "" (a refused
    /// connection may be reset before its 503 is read).
    fn get(addr: SocketAddr, path: &str) -> String {
        let Ok(mut c) = TcpStream::connect(addr) else { return String::new() };
        let _ = c.set_read_timeout(Some(Duration::from_secs(5)));
        let _ = write!(c, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n");
        let mut out = String::new();
        let _ = c.read_to_string(&mut out);
        out
    }

    /// Idle connections (opened, nothing sent) do not delay a scrape: each waits on its own
    /// thread. One at a time, 30 of them made a scrape take past Prometheus' 10 s timeout.
    #[test]
    fn a_scrape_is_answered_while_idle_connections_are_held() {
        let page: Shared = Arc::new(Mutex::new("triage_runner_up 1\n".to_owned()));
        let addr = serve("127.0.0.1:0".parse().unwrap(), page).unwrap();
        let idle: Vec<TcpStream> = (0..30).map(|_| TcpStream::connect(addr).unwrap()).collect();
        std::thread::sleep(Duration::from_millis(50));
        let started = Instant::now();
        let answer = get(addr, "/metrics");
        assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
        assert!(answer.ends_with("triage_runner_up 1\n"), "{answer}");
        assert!(started.elapsed() < Duration::from_secs(1), "{:?}", started.elapsed());
        drop(idle);
    }

    /// Past the bound a connection is told 503 at once, and the server serves again once the
    /// idle ones are gone.
    #[test]
    fn connections_past_the_bound_are_refused_not_queued() {
        let page: Shared = Arc::new(Mutex::new("x 1\n".to_owned()));
        let addr = serve("127.0.0.1:0".parse().unwrap(), page).unwrap();
        let idle: Vec<TcpStream> = (0..MAX_CONNECTIONS).map(|_| TcpStream::connect(addr).unwrap()).collect();
        // Once the server has taken them all (a loaded machine may take a moment), the next is
        // refused at once: a 503, or the connection closed before its request was read.
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let started = Instant::now();
            let answer = get(addr, "/metrics");
            if answer.is_empty() || answer.starts_with("HTTP/1.1 503") {
                assert!(started.elapsed() < Duration::from_secs(1), "{:?}", started.elapsed());
                break;
            }
            assert!(Instant::now() < deadline, "never refused: {answer}");
            std::thread::sleep(Duration::from_millis(50));
        }
        drop(idle);
        // The idle threads end within their 2 s read deadline.
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let answer = get(addr, "/metrics");
            if answer.starts_with("HTTP/1.1 200 OK") {
                break;
            }
            assert!(Instant::now() < deadline, "{answer}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}
