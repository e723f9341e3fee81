//! The runner end to end: replaying the real H200 series through the GPU-rules component,
//! the sandbox against hostile components, reloading, the analyzer component, and the
//! exposition (a real Prometheus scrapes it in `prometheus.rs`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use triage_core::gpu::engine::EngineSeries;
use triage_core::gpu::series::Series;
use triage_core::gpu::{GpuSample, WatchConfig};
use triage_runner::host::{Failure, Limits, PluginHost, World};
use triage_runner::{EngineSource, Rules, Runner};

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
                            || matches!(bad.result, Err(Failure::Deadline | Failure::Memory)),
                        "{mode}: {bad:?}"
                    ),
                    None => assert!(i == 3, "{mode}: disabled only after three failures"),
                },
                _ if i < 3 => {
                    let bad = bad.unwrap();
                    let kind = match &bad.result {
                        Err(Failure::Deadline) => "deadline",
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
    for tick in &series.ticks {
        let a = plugged.tick(tick.clone());
        let b = builtin.tick(tick.clone());
        let titles = |v: &[(String, triage_core::gpu::GpuFinding)]| {
            v.iter().map(|(_, f)| f.title.clone()).collect::<Vec<_>>()
        };
        assert_eq!(titles(&a.raised), titles(&b.raised));
        assert_eq!(titles(&a.cleared), titles(&b.cleared));
    }
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
