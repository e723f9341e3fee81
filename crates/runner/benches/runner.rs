//! Runner benchmarks, each against a baseline measured in the same run:
//! - a GPU-rules plugin call for one tick of 8 GPUs, vs the same rules compiled in natively;
//! - instantiation: compiling the component, and instantiating it from its `InstancePre`;
//! - the whole runner replaying 8 GPUs at 10 Hz (the recorded pace): CPU share of one core and
//!   memory, with the plugin vs with the built-in rules.
//!
//! `cargo bench -p triage-runner --bench runner -- [OUT.json]` (`cargo xtask bench runner`).
//! Targets (a node agent must cost the GPU node next to nothing): ≤ 1 % of one core and ≤ 40 MB RSS
//! at 10 Hz with 8 GPUs; a call ≤ 100 µs.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use triage_core::gpu::series::Series;
use triage_core::gpu::{GpuWatch, WatchConfig};
use triage_runner::host::{Limits, PluginHost};

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn run_stats(args: &[&str]) -> (f64, f64, f64, f64) {
    let out = Command::new(env!("CARGO_BIN_EXE_triage-runner")).args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let line = err.lines().find(|l| l.starts_with("triage-runner stats:")).expect("stats line");
    let num = |after: &str| -> f64 {
        let rest = &line[line.find(after).unwrap() + after.len()..];
        rest.trim_start().split([' ', '(']).next().unwrap().parse().unwrap()
    };
    // (cpu % of one core, steady cpu %, rss now MiB, peak MiB)
    let cpu_pct: f64 = line.split('(').nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    (cpu_pct, num("steady"), num("rss now"), num("peak"))
}

fn main() {
    let out_path = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let paths = triage_plugin_build::ensure_components();
    let rules = std::fs::read(&paths[0]).unwrap();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/nvml/h200x8_one_slow.jsonl");
    let series = Series::parse(&std::fs::read_to_string(&data).unwrap());
    let ticks: Vec<_> = series.ticks.iter().filter(|t| t.len() == 8).cloned().collect();

    // Instantiation.
    let host = PluginHost::new(Limits::default()).unwrap();
    let started = Instant::now();
    let _ = host.compile(&rules).unwrap();
    let compile_ms = started.elapsed().as_secs_f64() * 1e3;
    let mut host = host;
    host.add("gpu-rules", &rules).unwrap();
    let mut first_calls = Vec::new();
    for _ in 0..20 {
        // A fresh host instance each time: the first call instantiates from the InstancePre.
        let mut h = PluginHost::new(Limits::default()).unwrap();
        h.add("gpu-rules", &rules).unwrap();
        let started = Instant::now();
        h.tick(&ticks[0], None);
        let first = started.elapsed();
        let started = Instant::now();
        h.tick(&ticks[1], None);
        let second = started.elapsed();
        first_calls.push((first.saturating_sub(second)).as_secs_f64() * 1e6);
    }
    let instantiate_us = percentile(&mut first_calls, 0.5);

    // Calls: plugin vs native, same ticks, interleaved rounds.
    let mut watch = GpuWatch::new(WatchConfig::default());
    let (mut plugin_us, mut native_us) = (Vec::new(), Vec::new());
    for round in 0..5 {
        for t in &ticks {
            let started = Instant::now();
            let calls = host.tick(t, None);
            plugin_us.push(started.elapsed().as_secs_f64() * 1e6);
            assert!(calls[0].result.is_ok(), "round {round}: {:?}", calls[0].result);
            let started = Instant::now();
            std::hint::black_box(watch.observe(t, None));
            native_us.push(started.elapsed().as_secs_f64() * 1e6);
        }
    }
    let (p50, p99) = (percentile(&mut plugin_us, 0.5), percentile(&mut plugin_us, 0.99));
    let (n50, n99) = (percentile(&mut native_us, 0.5), percentile(&mut native_us, 0.99));

    // The whole runner at the recorded pace (10 Hz, 8 GPUs) for 20 s.
    let dir = std::env::temp_dir().join(format!("triage-runner-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("gpu-rules.wasm"), &rules).unwrap();
    let d = data.to_str().unwrap();
    let common =
        ["run", "--replay", d, "--speed", "recorded", "--duration-s", "20", "--no-listen", "--stats"];
    let mut with_plugin: Vec<&str> = common.to_vec();
    with_plugin.extend(["--plugins", dir.to_str().unwrap()]);
    let mut builtin: Vec<&str> = common.to_vec();
    builtin.push("--builtin-rules");
    let (cpu_b, steady_b, rss_b, peak_b) = run_stats(&builtin);
    let (cpu_p, steady_p, rss_p, peak_p) = run_stats(&with_plugin);
    let _ = std::fs::remove_dir_all(&dir);

    let report = format!(
        "runner benchmarks ({} ticks of 8 GPUs from h200x8_one_slow.jsonl)\n\
         plugin call, 8 samples: p50 {p50:.1} µs, p99 {p99:.1} µs (target ≤ 100 µs); native rules p50 {n50:.1} µs, p99 {n99:.1} µs; ratio p50 {:.1}×\n\
         compile the component (Cranelift): {compile_ms:.0} ms; instantiate from InstancePre: {instantiate_us:.0} µs\n\
         runner at 10 Hz × 8 GPUs for 20 s: plugin {steady_p:.2} % of one core after start-up ({cpu_p:.2} % with it: compiling the component), RSS {rss_p:.1} MiB (peak {peak_p:.1}); built-in rules {steady_b:.2} % ({cpu_b:.2} %), RSS {rss_b:.1} MiB (peak {peak_b:.1}); steady CPU ratio {:.2}× (targets ≤ 1 %, ≤ 40 MB)",
        ticks.len(),
        p50 / n50.max(1e-9),
        steady_p / steady_b.max(1e-9),
    );
    println!("{report}");
    if let Some(p) = out_path {
        let json = serde_json::json!({
            "plugin_call_us": {"p50": p50, "p99": p99},
            "native_call_us": {"p50": n50, "p99": n99},
            "compile_ms": compile_ms,
            "instantiate_us": instantiate_us,
            "runner_10hz_8gpu": {
                "plugin": {"cpu_pct_of_one_core": cpu_p, "steady_cpu_pct": steady_p, "rss_mib": rss_p, "peak_rss_mib": peak_p},
                "builtin": {"cpu_pct_of_one_core": cpu_b, "steady_cpu_pct": steady_b, "rss_mib": rss_b, "peak_rss_mib": peak_b}
            },
            "report": report,
        });
        std::fs::write(&p, serde_json::to_string_pretty(&json).unwrap()).unwrap();
    }
}
