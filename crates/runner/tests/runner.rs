//! The runner end to end: replaying the real H200 series through the GPU-rules component,
//! the sandbox against hostile components, reloading, the analyzer component, and the
//! exposition (a real Prometheus scrapes it in `prometheus.rs`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use triage_core::gpu::engine::EngineSeries;
use triage_core::gpu::series::Series;
use triage_core::gpu::{GpuSample, WatchConfig};
use triage_runner::host::{Failure, Limits, PluginHost, World};
use triage_runner::{EngineSource, Rules, Runner};
use triage_tests::process::wait_with_peak_rss;

const RUNNER: &str = env!("CARGO_BIN_EXE_triage-runner");

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data").join(rel)
}

fn components() -> (PathBuf, PathBuf, PathBuf) {
    let p = triage_plugin_build::ensure_components();
    (p[0].clone(), p[1].clone(), p[2].clone())
}

/// A fresh folder holding only the GPU-rules component.
fn plugin_folder(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("triage-runner-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(components().0, dir.join("gpu-rules.wasm")).unwrap();
    dir
}

fn phase_of(t: f64) -> String {
    let marks: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data("nvml/h200_phases.json")).unwrap()).unwrap();
    let mut phase = "before".to_owned();
    for m in marks["marks"].as_array().unwrap() {
        if m["t"].as_f64().unwrap() <= t {
            phase = m["phase"].as_str().unwrap().to_owned();
        }
    }
    phase
}

fn replay_cli(args: &[&str]) -> Vec<serde_json::Value> {
    let out = Command::new(RUNNER).arg("replay").args(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn replay_of_the_real_h200_series_names_the_power_cap_and_the_held_memory() {
    let dir = plugin_folder("h200");
    let series = data("nvml/h200_series.jsonl");
    let engine = data("nvml/engine_nothing_running.prom");
    let lines = replay_cli(&[
        series.to_str().unwrap(),
        "--engine",
        engine.to_str().unwrap(),
        "--speed",
        "max",
        "--format",
        "jsonl",
        "--plugins",
        dir.to_str().unwrap(),
    ]);
    let got: Vec<(String, String)> = lines
        .iter()
        .map(|l| (l["rule"].as_str().unwrap().to_owned(), phase_of(l["t"].as_f64().unwrap())))
        .collect();
    assert_eq!(
        got,
        [
            ("gpu-power-cap".to_owned(), "matmul_load".to_owned()),
            ("kv-leak".to_owned(), "memory_full_no_compute".to_owned())
        ]
    );
    for l in &lines {
        for field in ["t", "gpu", "class", "rule", "title"] {
            assert!(!l[field].is_null(), "{field} missing in {l}");
        }
        assert_eq!(l["gpu"], 0);
    }
    let cap = &lines[0];
    assert_eq!(cap["class"], "TBT_TAIL");
    let title = cap["title"].as_str().unwrap();
    let sm: u32 = title.split("SM ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!(
        (1440..=1530).contains(&sm) && title.contains("of 1980 MHz") && title.contains("of 700 W"),
        "{title}"
    );
    assert!(cap["evidence"][0].as_str().unwrap().contains("0x4 (sw_power_cap)"));
    assert!(lines[1]["title"].as_str().unwrap().contains("memory full"), "{}", lines[1]);

    // The sandboxed component answers exactly what the core's rules answer natively.
    let native = triage_runner::native_replay(
        &Series::parse(&std::fs::read_to_string(&series).unwrap()),
        Some(&EngineSeries::parse(&std::fs::read_to_string(&engine).unwrap())),
    );
    let native_titles: Vec<&str> = native.iter().map(|f| f.title.as_str()).collect();
    let plugin_titles: Vec<&str> = lines.iter().map(|l| l["title"].as_str().unwrap()).collect();
    assert_eq!(plugin_titles, native_titles);

    // Without the engine's word, memory held at utilisation 0 is not called a leak.
    let quiet = replay_cli(&[series.to_str().unwrap(), "--plugins", dir.to_str().unwrap()]);
    assert_eq!(quiet.iter().map(|l| l["rule"].as_str().unwrap()).collect::<Vec<_>>(), ["gpu-power-cap"]);
}

#[test]
fn eight_gpu_fixture_flags_gpu_5_as_the_straggler() {
    let dir = plugin_folder("x8");
    let lines = replay_cli(&[
        data("nvml/h200x8_one_slow.jsonl").to_str().unwrap(),
        "--plugins",
        dir.to_str().unwrap(),
    ]);
    let slow: Vec<&serde_json::Value> = lines.iter().filter(|l| l["rule"] == "slow-gpu").collect();
    assert_eq!(slow.len(), 1, "{lines:#?}");
    assert_eq!(slow[0]["gpu"], 5);
    let title = slow[0]["title"].as_str().unwrap();
    assert!(
        title.contains("800 MHz") && title.contains("1800 MHz") && title.contains("hw_slowdown"),
        "{title}"
    );
    assert_eq!(phase_of(slow[0]["t"].as_f64().unwrap()), "matmul_load");
}

fn tick_with(uuid: &str, t: f64) -> Vec<GpuSample> {
    (0..8)
        .map(|gpu| GpuSample {
            t,
            gpu,
            uuid: Some(uuid.to_owned()),
            sm_clock_mhz: Some(1800),
            max_sm_clock_mhz: Some(1980),
            util_gpu_pct: Some(90),
            ..GpuSample::default()
        })
        .collect()
}

#[test]
fn hostile_components_are_contained_and_the_good_one_keeps_answering() {
    let (rules, _, hostile) = components();
    let mut report = Vec::new();
    for (mode, expect) in [
        ("hostile:loop", "deadline"),
        ("hostile:bomb", "memory"),
        ("hostile:trap", "trap"),
        ("hostile:huge", "truncated"),
    ] {
        let limits =
            Limits { memory_bytes: 32 << 20, fuel: 2_000_000_000, deadline: Duration::from_millis(100) };
        let mut host = PluginHost::new(limits).unwrap();
        assert_eq!(host.add("gpu-rules", &std::fs::read(&rules).unwrap()).unwrap(), World::GpuRules);
        assert_eq!(host.add("hostile", &std::fs::read(&hostile).unwrap()).unwrap(), World::GpuRules);
        let mut worst = Duration::ZERO;
        for i in 0..4 {
            let started = Instant::now();
            let calls = host.tick(&tick_with(mode, f64::from(i)), None);
            let took = started.elapsed();
            worst = worst.max(took);
            let good =
                calls.iter().find(|c| c.plugin == "gpu-rules").expect("the good plugin is called every tick");
            assert!(good.result.is_ok(), "{mode}: {:?}", good.result);
            let bad = calls.iter().find(|c| c.plugin == "hostile");
            match expect {
                // A flood is cut to MAX_FINDINGS, or (a slow debug host lifting it) stopped by
                // the deadline; either way the host goes on.
                "truncated" => match bad {
                    Some(bad) => assert!(
                        (bad.truncated && bad.result == Ok(triage_runner::host::MAX_FINDINGS))
                            || matches!(
                                bad.result,
                                Err(Failure::Deadline | Failure::OutOfFuel | Failure::Memory)
                            ),
                        "{mode}: {bad:?}"
                    ),
                    None => assert!(i == 3, "{mode}: disabled only after three failures"),
                },
                _ if i < 3 => {
                    let bad = bad.unwrap();
                    let kind = match &bad.result {
                        // A runaway loop is stopped by whichever bound it meets first: the
                        // epoch deadline, or (on a fast machine, 2e9 units inside 100 ms)
                        // the fuel. Both are containment; neither may let it run on.
                        Err(Failure::Deadline | Failure::OutOfFuel) => "deadline",
                        Err(Failure::Memory) => "memory",
                        Err(Failure::Trap(_)) => "trap",
                        other => panic!("{mode}: unexpected {other:?}"),
                    };
                    assert_eq!(kind, expect, "{mode}");
                    assert_eq!(bad.disabled, i == 2, "{mode}: disabled after 3 failures in a row");
                }
                // Disabled: not called any more.
                _ => assert!(bad.is_none(), "{mode}: a disabled plugin was called"),
            }
            assert!(took < Duration::from_secs(5), "{mode}: tick took {took:?}");
        }
        if expect != "truncated" {
            assert!(host.status().iter().any(|s| s.name == "hostile" && s.disabled));
        }
        report.push(format!("{mode}: worst tick {:.1} ms", worst.as_secs_f64() * 1e3));
    }
    // Containment times, for the notes (the deadline is 100 ms; a memory bomb stops at the limit).
    eprintln!("containment: {}", report.join("; "));
}

#[test]
fn plugins_reload_when_their_files_change() {
    let (rules, _, hostile) = components();
    let dir = plugin_folder("reload");
    let mut host =
        PluginHost::open(&dir, Limits { deadline: Duration::from_millis(50), ..Limits::default() }).unwrap();
    assert_eq!(host.paths(World::GpuRules).len(), 1);
    // A broken file is reported with why, and does not stop the others.
    std::fs::write(dir.join("broken.wasm"), b"\0asm not really").unwrap();
    std::fs::copy(&hostile, dir.join("hostile.wasm")).unwrap();
    let loaded = host.reload();
    assert_eq!(loaded, ["hostile"]);
    let errors = host.errors();
    assert_eq!(errors.len(), 1);
    assert!(errors[0].0 == "broken" && errors[0].1.contains("not a valid component"), "{errors:?}");
    // Unchanged files are not loaded again.
    assert!(host.reload().is_empty());
    for i in 0..3 {
        host.tick(&tick_with("hostile:trap", f64::from(i)), None);
    }
    assert!(host.status().iter().any(|s| s.name == "hostile" && s.disabled));
    // A new version of the file brings it back.
    std::thread::sleep(Duration::from_millis(20));
    std::fs::copy(&rules, dir.join("hostile.wasm")).unwrap();
    assert_eq!(host.reload(), ["hostile"]);
    assert!(host.status().iter().all(|s| !s.disabled));
    let calls = host.tick(&tick_with("hostile:trap", 10.0), None);
    assert!(calls.iter().all(|c| c.result.is_ok()), "{calls:?}");
    // Removed files are forgotten.
    std::fs::remove_file(dir.join("hostile.wasm")).unwrap();
    std::fs::remove_file(dir.join("broken.wasm")).unwrap();
    host.reload();
    assert_eq!(host.status().len(), 1);
    assert!(host.errors().is_empty());
}

#[test]
fn analyzer_component_gives_the_native_report() {
    let (_, analyzer, _) = components();
    let files = [data("smi/synthetic_8gpu_one_slow.txt"), data("oom/h200_200gib.txt")];
    let out =
        Command::new(RUNNER).arg("analyze").args(&files).arg("--plugin").arg(&analyzer).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let from_plugin: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut a = triage_core::analyze::Analyzer::new();
    for f in &files {
        a.begin(&f.display().to_string());
        a.feed(&std::fs::read(f).unwrap());
        a.end();
    }
    let native = serde_json::to_value(a.finish()).unwrap();
    assert_eq!(from_plugin["schema"], "triage.report/v1");
    assert_eq!(from_plugin, native);
    assert!(!native["findings"].as_array().unwrap().is_empty());
}

#[test]
fn once_prints_dcgm_gauges_and_active_findings() {
    let dir = plugin_folder("once");
    let out = Command::new(RUNNER)
        .args(["run", "--once", "--replay"])
        .arg(data("nvml/h200x8_one_slow.jsonl"))
        .arg("--plugins")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("# TYPE DCGM_FI_DEV_SM_CLOCK gauge"), "{text}");
    assert!(text.contains("DCGM_FI_DEV_SM_CLOCK{gpu=\"5\",UUID=\"GPU-00000000-0000-0000-0000-000000000005\",device=\"nvidia5\",modelName=\"NVIDIA H200\"} 1980"), "{text}");
    assert!(text.contains("DCGM_FI_DEV_POWER_USAGE{gpu=\"0\""));
    assert!(text.contains("triage_runner_plugin_calls_total{plugin=\"gpu-rules\"} 1"));
}

#[test]
fn builtin_rules_and_plugins_agree_tick_by_tick() {
    let (rules, _, _) = components();
    let series = Series::parse(&std::fs::read_to_string(data("nvml/h200x8_one_slow.jsonl")).unwrap());
    let mut host = PluginHost::new(Limits::default()).unwrap();
    host.add("gpu-rules", &std::fs::read(rules).unwrap()).unwrap();
    let mut plugged = Runner::new(Rules::Plugins(Box::new(host)), EngineSource::None, series.meta.clone());
    let mut builtin = Runner::new(Runner::builtin(), EngineSource::None, series.meta.clone());
    // Two runners that never raise anything would agree too: count what was compared.
    let mut raised = 0;
    for tick in &series.ticks {
        let a = plugged.tick(tick.clone());
        let b = builtin.tick(tick.clone());
        let titles = |v: &[(String, triage_core::gpu::GpuFinding)]| {
            v.iter().map(|(_, f)| f.title.clone()).collect::<Vec<_>>()
        };
        assert_eq!(titles(&a.raised), titles(&b.raised));
        assert_eq!(titles(&a.cleared), titles(&b.cleared));
        raised += b.raised.len();
    }
    assert!(raised > 0, "the capture of one slow GPU raises a finding");
    assert_eq!(WatchConfig::default().sustain_s, 2.0);
}

#[test]
fn without_nvml_it_says_so_and_exits_3() {
    if Path::new("/dev/nvidiactl").exists() {
        return; // a GPU machine: `cargo xtask gpu-check` covers it.
    }
    let out = Command::new(RUNNER).args(["run", "--once", "--builtin-rules"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no NVIDIA driver") && err.contains("replay"), "{err}");
}

/// A one-page HTTP server on 127.0.0.1 answering `body` to `n` requests, then stopping.
fn serve_metrics(body: &'static str, n: usize) -> String {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in l.incoming().take(n) {
            let Ok(mut c) = conn else { continue };
            let mut buf = [0u8; 1024];
            let _ = c.read(&mut buf);
            let _ = write!(
                c,
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
        }
    });
    format!("http://{addr}/metrics")
}

#[test]
fn run_scrapes_the_engine_records_the_series_and_logs_findings() {
    let dir = plugin_folder("engine");
    let url = serve_metrics(
        "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine=\"0\"} 0\nvllm:num_requests_waiting{engine=\"0\"} 4\nvllm:kv_cache_usage_perc{engine=\"0\"} 0.97\n",
        1000,
    );
    let out_dir = std::env::temp_dir().join(format!("triage-runner-run-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out_dir);
    std::fs::create_dir_all(&out_dir).unwrap();
    let (log, rec) = (out_dir.join("findings.jsonl"), out_dir.join("series.jsonl"));
    let series = data("nvml/h200_series.jsonl");
    let out = Command::new(RUNNER)
        .args(["run", "--replay"])
        .arg(&series)
        .args(["--speed", "max", "--no-listen", "--engine-url", &url, "--findings-log"])
        .arg(&log)
        .arg("--record")
        .arg(&rec)
        .arg("--plugins")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<serde_json::Value> =
        std::fs::read_to_string(&log).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let events: Vec<(String, String)> = lines
        .iter()
        .map(|l| (l["event"].as_str().unwrap().to_owned(), l["rule"].as_str().unwrap().to_owned()))
        .collect();
    // The power cap clears 2 s after the matmul phase, as the held memory becomes a leak: the
    // same tick, so order the log by rule within each event kind.
    let of =
        |kind: &str| events.iter().filter(|(e, _)| e == kind).map(|(_, r)| r.as_str()).collect::<Vec<_>>();
    assert_eq!(of("raised"), ["gpu-power-cap", "kv-leak"], "{events:?}");
    assert_eq!(of("cleared"), ["gpu-power-cap", "kv-leak"], "{events:?}");
    let leak = lines.iter().find(|l| l["rule"] == "kv-leak").unwrap();
    assert!(leak["confidence"].as_f64().unwrap() >= 0.85, "requests waiting behind a full cache: {leak}");
    assert!(leak["evidence"][1].as_str().unwrap().contains("waiting 4, KV usage 97.0 %"), "{leak}");
    // The recorded series is the replayed one, sample for sample.
    let a = Series::parse(&std::fs::read_to_string(&series).unwrap());
    let b = Series::parse(&std::fs::read_to_string(&rec).unwrap());
    assert!(b.issues.is_empty(), "{:?}", b.issues);
    assert_eq!(a.meta, b.meta);
    assert_eq!(a.ticks, b.ticks);
    let _ = std::fs::remove_dir_all(&out_dir);
}

/// A server on 127.0.0.1 that answers each connection with a 200 header, then trickles its body
/// one byte every 200 ms; it stops by itself `for_at_most` after its first connection (or after
/// two minutes without one: a slow start of the runner under test must not find it gone).
fn trickling_engine(for_at_most: Duration) -> String {
    use std::io::Write;
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    l.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let mut until = Instant::now() + Duration::from_secs(120);
        let mut first = true;
        let mut open = Vec::new();
        let mut last_byte = Instant::now();
        while Instant::now() < until {
            if let Ok((mut c, _)) = l.accept() {
                if std::mem::take(&mut first) {
                    until = Instant::now() + for_at_most;
                }
                let _ = c.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n# HELP");
                open.push(c);
            }
            if last_byte.elapsed() >= Duration::from_millis(200) {
                last_byte = Instant::now();
                open.retain_mut(|c| c.write_all(b"#").is_ok());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    format!("http://{addr}/metrics")
}

#[test]
fn a_trickling_engine_fails_its_scrape_at_the_deadline_and_the_run_ends_on_time() {
    let dir = plugin_folder("trickle");
    let url = trickling_engine(Duration::from_secs(8));
    let out = Command::new(RUNNER)
        .args(["run", "--replay"])
        .arg(data("nvml/h200_series.jsonl"))
        .args([
            "--speed",
            "max",
            "--no-listen",
            "--duration-s",
            "1.5",
            "--stats",
            "--engine-url",
            &url,
            "--plugins",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // The run's own wall time (from the first tick, start-up excluded): 1.5 s + at most one
    // scrape deadline (0.5 s); before, the first scrape lasted as long as the engine trickled.
    let wall: f64 = err
        .split("stats: wall ")
        .nth(1)
        .and_then(|w| w.split(' ').next())
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no stats line: {err}"));
    assert!((1.4..3.0).contains(&wall), "ran {wall} s: {err}");
    assert!(err.contains("engine metrics:") && err.contains("scrape deadline"), "{err}");
}

#[test]
fn replay_skips_a_line_that_is_not_utf8_and_says_which() {
    let dir = plugin_folder("utf8");
    let mut bytes = std::fs::read(data("nvml/h200x8_one_slow.jsonl")).unwrap();
    // Line 3 (a sample of GPU 1) gets a byte that is not UTF-8 inside a key.
    let starts: Vec<usize> = std::iter::once(0)
        .chain(bytes.iter().enumerate().filter(|(_, b)| **b == b'\n').map(|(i, _)| i + 1))
        .collect();
    bytes.insert(starts[2] + 3, 0xff);
    let file = std::env::temp_dir().join(format!("triage-runner-utf8-{}.jsonl", std::process::id()));
    std::fs::write(&file, &bytes).unwrap();
    let out = Command::new(RUNNER).arg("replay").arg(&file).arg("--plugins").arg(&dir).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains(":3: not UTF-8 (byte 0xff at column 4); line skipped"), "{err}");
    let lines: Vec<serde_json::Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(lines.iter().any(|l| l["rule"] == "slow-gpu" && l["gpu"] == 5), "{lines:?}");
    let _ = std::fs::remove_file(&file);
}

#[test]
fn a_removed_plugin_folder_is_said_once_and_counted_until_it_is_back() {
    let dir = plugin_folder("gone");
    let host = PluginHost::open(&dir, Limits::default()).unwrap();
    let mut runner = Runner::new(Rules::Plugins(Box::new(host)), EngineSource::None, None);
    runner.tick(tick_with("ok", 1.0));
    assert!(runner.exposition().contains("\ntriage_runner_plugins_loaded 1\n"));
    fn reload(r: &mut Runner) -> Vec<String> {
        match &mut r.rules {
            Rules::Plugins(h) => {
                h.reload();
                h.take_notices()
            }
            Rules::Builtin(_) => unreachable!(),
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    let said = reload(&mut runner);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(said[0].contains("cannot be read") && said[0].contains("unloaded"), "{said:?}");
    runner.tick(tick_with("ok", 2.0));
    assert!(runner.exposition().contains("\ntriage_runner_plugins_loaded 0\n"));
    assert!(reload(&mut runner).is_empty(), "said once");
    // Back: said again, and the rules run again.
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(components().0, dir.join("gpu-rules.wasm")).unwrap();
    let said = reload(&mut runner);
    assert!(said.iter().any(|n| n.contains("is back")), "{said:?}");
    assert!(said.iter().any(|n| n.contains("gpu-rules (re)loaded")), "{said:?}");
    let tick = runner.tick(tick_with("ok", 3.0));
    assert_eq!(tick.calls.len(), 1);
    assert!(runner.exposition().contains("\ntriage_runner_plugins_loaded 1\n"));
    // Emptied rather than removed: said too.
    std::fs::remove_file(dir.join("gpu-rules.wasm")).unwrap();
    let said = reload(&mut runner);
    assert!(said.len() == 1 && said[0].contains("no GPU-rules plugin left"), "{said:?}");
}

#[test]
fn a_file_that_is_not_a_component_is_one_line_with_its_name() {
    let (rules, _, _) = components();
    let dir = plugin_folder("magic");
    std::fs::write(dir.join("foo.wasm"), b"#!/bin/sh\necho not wasm\n").unwrap();
    let real = std::fs::read(&rules).unwrap();
    std::fs::write(dir.join("cut.wasm"), &real[..real.len() / 2]).unwrap();
    let out = Command::new(RUNNER)
        .arg("replay")
        .arg(data("nvml/h200_series.jsonl"))
        .arg("--plugins")
        .arg(&dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "one line per broken file: {err}");
    assert_eq!(lines[1], "triage-runner: plugin foo.wasm: not a WebAssembly file (bad magic number)");
    assert!(lines[0].starts_with("triage-runner: plugin cut.wasm: not a valid component: "), "{err}");
}

#[test]
fn usage_errors_exit_2_with_the_reason() {
    let series = data("nvml/h200_series.jsonl");
    let s = series.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["replay", s, "--plugin-memory-mib", "0"], "--plugin-memory-mib"),
        (&["replay", s, "--plugin-memory-mib=-1"], "not negative"),
        (&["replay", s, "--plugin-memory-mib", "99999999999999"], "from 1 to 65536"),
        (&["replay", s, "--plugin-deadline-ms", "0"], "--plugin-deadline-ms"),
        (&["replay", s, "--speed", "NaN"], "factor above 0"),
        (&["replay", s, "--speed", "inf"], "factor above 0"),
        (&["replay", s, "--speed", "0"], "factor above 0"),
        (&["replay", s, "--speed=-2"], "factor above 0"),
        (&["run", "--once", "--interval-ms", "0"], "--interval-ms"),
        (&["run", "--once", "--duration-s", "NaN"], "finite"),
        (&["run", "--once", "--duration-s", "inf"], "finite"),
        (&["run", "--once", "--duration-s=-1"], "above 0"),
        (&["run", "--once", "--duration-s", "0"], "above 0"),
        (&["run", "--once", "--speed", "nan"], "factor above 0"),
        (&["record", "--out", "/nonexistent/x", "--duration-s", "nan"], "finite"),
        (&["record", "--out", "/nonexistent/x", "--interval-ms=-5"], "not negative"),
        (&["analyze", "--section-mib", "0", "x"], "--section-mib"),
    ];
    for (args, says) in cases {
        let out = Command::new(RUNNER).args(*args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(err.lines().count() <= 4, "{args:?}: short: {err}");
    }
}

#[test]
fn text_from_outside_cannot_drive_the_terminal() {
    let (_, _, hostile) = components();
    let evil = "ev\x1b]0;pwned\x07il\u{9b}2J";
    let dir = std::env::temp_dir().join(format!("triage-runner-test-evil-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // A plugin whose name (its file name) carries the sequences, and a broken one likewise.
    std::fs::copy(&hostile, dir.join(format!("{evil}.wasm"))).unwrap();
    std::fs::write(dir.join(format!("{evil}-broken.wasm")), b"nope").unwrap();
    let raw = |s: &str| s.contains('\x1b') || s.contains('\x07') || s.contains('\u{9b}');
    for format in ["text", "jsonl"] {
        let out = Command::new(RUNNER)
            .arg("replay")
            .arg(data("nvml/h200_series.jsonl"))
            .args(["--format", format, "--plugins"])
            .arg(&dir)
            .output()
            .unwrap();
        let (stdout, stderr) =
            (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap());
        assert!(out.status.success(), "{stderr}");
        assert!(!stdout.is_empty() && !raw(&stdout) && !raw(&stderr), "{stdout}\n{stderr}");
        if format == "text" {
            assert!(stdout.contains("ev\\x1b]0;pwned\\x07il\\u009b2J"), "{stdout}");
        } else {
            let first: serde_json::Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
            assert_eq!(first["plugin"], evil, "JSON keeps the value");
        }
        assert!(
            stderr.contains("ev\\x1b]0;pwned\\x07il\\u009b2J-broken.wasm: not a WebAssembly file"),
            "{stderr}"
        );
    }
    // An engine whose status line carries them.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/metrics", l.local_addr().unwrap());
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for c in l.incoming().take(3) {
            let Ok(mut c) = c else { continue };
            let mut buf = [0u8; 1024];
            let _ = c.read(&mut buf);
            let _ = c.write_all(
                "HTTP/1.1 500 ev\x1b]0;pwned\x07il\u{9b}2J\r\nContent-Length: 0\r\n\r\n".as_bytes(),
            );
        }
    });
    let rules_dir = plugin_folder("evil-engine");
    let out = Command::new(RUNNER)
        .args(["run", "--once", "--replay"])
        .arg(data("nvml/h200_series.jsonl"))
        .args(["--engine-url", &url, "--plugins"])
        .arg(&rules_dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{stderr}");
    assert!(
        !raw(&stderr) && stderr.contains("answered \"HTTP/1.1 500 ev\\x1b]0;pwned\\x07il\\u009b2J\""),
        "{stderr}"
    );
    assert!(
        String::from_utf8(out.stdout)
            .unwrap()
            .contains("triage_runner_engine_scrape_failures_total{reason=\"status\"} 1")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn analyze_streams_natively_and_in_bounded_sections() {
    let (_, analyzer, _) = components();
    let files = [data("smi/synthetic_8gpu_one_slow.txt"), data("oom/h200_200gib.txt")];
    let run = |extra: &[&str], files: &[PathBuf]| {
        let out = Command::new(RUNNER).arg("analyze").args(files).args(extra).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let docs: Vec<serde_json::Value> = serde_json::Deserializer::from_slice(&out.stdout)
            .into_iter::<serde_json::Value>()
            .map(Result::unwrap)
            .collect();
        (docs, String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (native, _) = run(&["--builtin-rules"], &files);
    let (plugged, _) = run(&["--plugin", analyzer.to_str().unwrap()], &files);
    assert_eq!(native.len(), 1);
    assert_eq!(native, plugged, "small inputs: one call, the same report");
    // A file larger than a section: one report per section, each bounded, nothing lost.
    let big = std::env::temp_dir().join(format!("triage-runner-big-{}.log", std::process::id()));
    let one = std::fs::read_to_string(data("oom/h200_200gib.txt")).unwrap();
    let copies = (3 << 20) / one.len() + 1;
    std::fs::write(&big, one.repeat(copies)).unwrap();
    let (reports, err) =
        run(&["--plugin", analyzer.to_str().unwrap(), "--section-mib", "1"], std::slice::from_ref(&big));
    assert!(reports.len() >= 3, "{} reports: {err}", reports.len());
    assert!(reports.iter().all(|r| r["schema"] == "triage.report/v1"));
    assert!(err.contains("one report per section"), "{err}");
    let names: Vec<&str> = reports.iter().map(|r| r["inputs"][0]["name"].as_str().unwrap_or("")).collect();
    assert!(names[1].contains("(section 2 from line "), "{names:?}");
    let _ = std::fs::remove_file(&big);
}

/// Without `--plugins`, `$TRIAGE_RUNNER_PLUGINS` or the install path, `replay` falls back to the
/// built-in rules and says so (a developer machine has no /usr/local/lib/triage-runner).
#[test]
fn replay_without_plugins_falls_back_to_the_builtin_rules_with_a_note() {
    if Path::new("/usr/local/lib/triage-runner/plugins").exists() {
        return; // an installed runner: the install path is used, as documented
    }
    let out = Command::new(RUNNER)
        .arg("replay")
        .arg(data("nvml/h200x8_one_slow.jsonl"))
        .env_remove("TRIAGE_RUNNER_PLUGINS")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("using the built-in rules") && err.contains("cargo xtask plugins"), "{err}");
    assert_eq!(err.lines().filter(|l| l.contains("built-in rules")).count(), 1, "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("slow-gpu"), "the rules ran");
}

/// The captures `cargo xtask gpu-check` took on a real H200 (2026-12-04, driver 580.159.04,
/// `tests/data/gpu-check/`): 20 s at 100 ms of an idle GPU, recorded by the runner there. They
/// replay here: every tick read, the GPU as NVML named it, idle readings (SM at its idle clock,
/// nothing running), and no finding — natively and through the sandboxed plugin alike — and
/// the runner's own capture says what it found on the machine (its plugin loaded, DCGM names).
#[test]
fn the_gpu_check_captures_from_a_real_h200_replay_quietly() {
    let path = data("gpu-check/series.jsonl");
    let series = Series::parse(&std::fs::read_to_string(&path).unwrap());
    assert!(series.issues.is_empty(), "{:?}", series.issues);
    let meta = series.meta.as_ref().expect("the recorder's meta line");
    assert_eq!(meta.driver.as_deref(), Some("580.159.04"));
    assert_eq!(meta.gpus.len(), 1);
    assert_eq!(meta.gpus[0].name, "NVIDIA H200");
    assert_eq!(series.ticks.len(), 200, "20 s at 100 ms");
    assert!(series.ticks.iter().all(|t| t.len() == 1));
    let idle = series.ticks.iter().flatten().filter(|s| s.util_gpu_pct == Some(0)).count();
    assert!(idle >= 190, "an idle GPU: {idle} of 200 ticks at 0 % utilisation");

    assert!(triage_runner::native_replay(&series, None).is_empty());
    let dir = plugin_folder("gpu-check");
    let lines =
        replay_cli(&[path.to_str().unwrap(), "--plugins", dir.to_str().unwrap(), "--format", "jsonl"]);
    assert!(lines.is_empty(), "{lines:?}");
    // In text, a quiet replay says so (on stderr) rather than printing nothing.
    let out = Command::new(RUNNER)
        .args(["replay", path.to_str().unwrap(), "--plugins", dir.to_str().unwrap(), "--format", "text"])
        .output()
        .unwrap();
    assert!(out.status.success() && out.stdout.is_empty());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("replayed 200 ticks of 1 GPU(s): 0 finding(s) raised"), "{said}");

    let once = std::fs::read_to_string(data("gpu-check/once.txt")).unwrap();
    assert!(once.contains("exit: 0"), "{once}");
    assert!(once.contains("triage_runner_plugins_loaded 1"), "{once}");
    assert!(once.contains("DCGM_FI_DEV_SM_CLOCK{gpu=\"0\""), "{once}");
    let sample = std::fs::read_to_string(data("gpu-check/sample-20s.txt")).unwrap();
    assert!(sample.contains("ticks 200"), "{sample}");
}

/// Runs `triage-runner` to its end: exit code, stderr, peak resident memory in MiB (see
/// [`wait_with_peak_rss`]).
fn run_measured(args: &[&std::ffi::OsStr]) -> (Option<i32>, String, u64) {
    let err =
        std::env::temp_dir().join(format!("triage-runner-rss-{}-{}.err", std::process::id(), args.len()));
    let mut child = Command::new(RUNNER)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let (status, peak_mib) = wait_with_peak_rss(&mut child);
    let text = std::fs::read_to_string(&err).unwrap_or_default();
    let _ = std::fs::remove_file(&err);
    (status.code(), text, peak_mib)
}

/// A replay reads its series a line at a time: memory does not follow the file's size, a line
/// too long is an issue with its number (the rest is replayed), and a file without line ends
/// (`/dev/zero`) ends in an error instead of growing until allocation fails.
#[test]
fn replay_streams_its_series_in_bounded_memory() {
    let os = |s: &str| std::ffi::OsString::from(s);
    let file = std::env::temp_dir().join(format!("triage-runner-big-{}.jsonl", std::process::id()));
    {
        // 40 MB: the real series again and again, each copy later in time; line 3 is 2 MiB.
        let text = std::fs::read_to_string(data("nvml/h200_series.jsonl")).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let mut f = std::io::BufWriter::new(std::fs::File::create(&file).unwrap());
        writeln!(f, "{}", lines[0]).unwrap();
        writeln!(f, "{}", lines[1]).unwrap();
        writeln!(f, "{{\"t\": 1, \"x\": \"{}\"}}", "x".repeat(2 << 20)).unwrap();
        for copy in 0..240 {
            for l in &lines[1..] {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                let mut v = v;
                v["t"] = serde_json::json!(v["t"].as_f64().unwrap() + f64::from(copy) * 60.0);
                writeln!(f, "{v}").unwrap();
            }
        }
    }
    let size = std::fs::metadata(&file).unwrap().len() >> 20;
    let (code, err, rss) = run_measured(&[
        &os("replay"),
        file.as_os_str(),
        &os("--builtin-rules"),
        &os("--format"),
        &os("text"),
    ]);
    eprintln!("replay of {size} MiB: {rss} MiB peak");
    let _ = std::fs::remove_file(&file);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains(":3: longer than 1024 KiB; line skipped"), "{err}");
    assert!(err.contains("replayed 107761 ticks of 1 GPU(s)"), "{err}");
    assert!(rss < 48, "{rss} MiB for a {size} MiB series: {err}");

    let started = Instant::now();
    let (code, err, rss) = run_measured(&[&os("replay"), &os("/dev/zero"), &os("--builtin-rules")]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("line 1 runs on past 64 MiB without a line end"), "{err}");
    assert!(rss < 48, "{rss} MiB: {err}");
    assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());
}

/// The plugin folder's files are checked before they are read whole: one too large is refused
/// by its size, a core module (the proxy-wasm filter) skipped in one line, a folder of junk
/// said in a few lines and a count; a folder that is a symlink loop is named as one.
#[test]
fn plugin_files_are_checked_before_they_are_read_and_failures_summarised() {
    let os = |s: &str| std::ffi::OsString::from(s);
    let dir = plugin_folder("junk");
    // 1.5 GB, sparse: nothing is written, nothing should be read.
    std::fs::File::create(dir.join("huge.wasm")).unwrap().set_len(1_500_000_000).unwrap();
    std::fs::write(dir.join("triage_stream_timer.wasm"), b"\0asm\x01\0\0\0\x01\x04\x01\x60\0\0").unwrap();
    for i in 0..200 {
        std::fs::write(dir.join(format!("junk{i:03}.wasm")), b"MZ not a plugin").unwrap();
    }
    let series = data("nvml/h200_series.jsonl");
    let (code, err, rss) =
        run_measured(&[&os("replay"), series.as_os_str(), &os("--plugins"), dir.as_os_str()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(rss < 200, "{rss} MiB: {err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 5, "{err}");
    assert!(
        err.contains("plugin huge.wasm: 1430 MiB, larger than the 64 MiB a plugin may be: not read"),
        "{err}"
    );
    assert!(err.contains("plugin junk000.wasm: not a WebAssembly file (bad magic number)"), "{err}");
    assert!(err.contains("198 more plugin files failed to load"), "{err}");
    assert!(
        err.contains("skipped triage_stream_timer.wasm: a core WebAssembly module, not a component"),
        "{err}"
    );
    assert!(!err.contains("not a valid component"), "{err}");

    let link = std::env::temp_dir().join(format!("triage-runner-loop-{}", std::process::id()));
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&link, &link).unwrap();
    let out = Command::new(RUNNER).arg("replay").arg(&series).arg("--plugins").arg(&link).output().unwrap();
    let _ = std::fs::remove_file(&link);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("is a symlink loop") && !err.contains("does not exist"), "{err}");
}
