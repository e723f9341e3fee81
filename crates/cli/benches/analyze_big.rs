//! A 1 GB request log through the analyzer: throughput and peak memory (target ≤ 64 MB); then
//! a 64 MiB vLLM server log, five passes, the best reported (stats, access lines, request adds and aborts, warnings, now and
//! then an error with its traceback): throughput (target ≥ 300 MB/s), which is what every line's
//! alarm and known-message scan costs on the logs people paste.
//!
//! The log is a 16 MiB block of realistic JSON lines fed 64 times (1 GiB in all), as a file
//! would be read: 64 KiB at a time. Baselines in the same run: the process's peak RSS before
//! the analysis (the allocator, the block itself) and a memchr line count over the same bytes.
//! Then a 24-hour GPU recording (8 GPUs at 1 Hz, the runner's NVML JSON lines, written an hour
//! at a time so the input itself is never held): throughput beside the vLLM log's, and the
//! peak RSS the reading added (a recording must read in bounded memory, at least as fast as logs).
//! Figures go to stdout and to the JSON file named by the first non-flag argument
//! (default `bench-results/analyze.json`).

use std::time::Instant;

use triage_core::analyze::Analyzer;

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn block(bytes: usize) -> Vec<u8> {
    let mut s = String::with_capacity(bytes + 512);
    let mut i = 0u64;
    while s.len() < bytes {
        let t = 1_764_460_800.0 + i as f64 * 0.01;
        let prompt = 100 + (i * 7919) % 9000;
        s.push_str(&format!(
            "{{\"request_id\":\"req-{i:010}\",\"enqueue_time\":{t:.3},\"scheduled_time\":{:.3},\"first_token_time\":{:.3},\"last_token_time\":{:.3},\"finish_time\":{:.3},\"prompt_tokens\":{prompt},\"output_tokens\":{},\"status\":{}}}\n",
            t + (i % 17) as f64 * 0.02,
            t + 0.3 + prompt as f64 * 0.0001,
            t + 4.0,
            t + 4.01,
            20 + i % 700,
            if i.is_multiple_of(997) { 504 } else { 200 }
        ));
        i += 1;
    }
    s.into_bytes()
}

/// A vLLM V1 server log as it scrolls under load: mostly stats and access lines, each request
/// added and finished, some aborted, a warning now and then, and every ~50,000 lines an error
/// with its traceback.
fn vllm_block(bytes: usize) -> Vec<u8> {
    let mut s = String::with_capacity(bytes + 4096);
    let mut i = 0u64;
    while s.len() < bytes {
        let (mm, ss) = ((i / 60) % 60, i % 60);
        let p = "(APIServer pid=2215)";
        match i % 10 {
            0 => s.push_str(&format!("{p} INFO 11-29 10:{mm:02}:{ss:02} [loggers.py:123] Engine 000: Avg prompt throughput: {}.0 tokens/s, Avg generation throughput: {}.5 tokens/s, Running: {} reqs, Waiting: {} reqs, GPU KV cache usage: {}.5%, Prefix cache hit rate: 41.2%\n", 900 + i % 300, 1400 + i % 200, 20 + i % 44, i % 9, 40 + i % 50)),
            1..=4 => s.push_str(&format!("{p} INFO:     10.0.{}.{}:5{:04} - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n", i % 7, i % 250, i % 9999)),
            5 | 6 => s.push_str(&format!("{p} INFO 11-29 10:{mm:02}:{ss:02} [async_llm.py:261] Added request chatcmpl-{i:016x}.\n")),
            7 => s.push_str(&format!("{p} INFO 11-29 10:{mm:02}:{ss:02} [async_llm.py:444] Aborted request(s) chatcmpl-{:016x}.\n", i - 2)),
            8 => s.push_str(&format!("(EngineCore_0 pid=3121) DEBUG 11-29 10:{mm:02}:{ss:02} [core.py:380] EngineCore loop iteration {i} scheduled 32 requests\n")),
            _ if i % 50_000 == 9 => s.push_str("(EngineCore_0 pid=3121) ERROR 11-29 10:00:00 [core.py:702] EngineCore encountered a fatal error.\n(EngineCore_0 pid=3121) ERROR 11-29 10:00:00 [core.py:702] Traceback (most recent call last):\n(EngineCore_0 pid=3121) ERROR 11-29 10:00:00 [core.py:702]   File \"/usr/lib/python3/vllm/v1/engine/core.py\", line 693, in run_engine_core\n(EngineCore_0 pid=3121) ERROR 11-29 10:00:00 [core.py:702] RuntimeError: CUDA error: an illegal memory access was encountered\n"),
            _ => s.push_str(&format!("{p} WARNING 11-29 10:{mm:02}:{ss:02} [protocol.py:93] The following fields were present in the request but ignored: {{'stream_options_{}'}}\n", i % 5)),
        }
        i += 1;
    }
    s.into_bytes()
}

/// One hour of an 8-GPU recording at 1 Hz, from `hour`: busy the first half of each hour (GPU 5
/// a straggler at 800 MHz, HW slowdown, every sixth hour), idle the second.
fn recording_hour(hour: u64, out: &mut String) {
    out.clear();
    for sec in 0..3600u64 {
        let t = 1_795_990_000.0 + (hour * 3600 + sec) as f64;
        let busy = sec < 1800;
        for gpu in 0..8u32 {
            let slow = busy && gpu == 5 && hour.is_multiple_of(6);
            let (sm, power, util, reasons) = match (busy, slow) {
                (true, true) => (800, 690_000, 99, 8),
                (true, false) => (1800, 690_000, 99, 4),
                _ => (1980, 120_000, 0, 1),
            };
            out.push_str(&format!(
                "{{\"t\": {:.6}, \"gpu\": {gpu}, \"sm_clock_mhz\": {sm}, \"graphics_clock_mhz\": {sm}, \"mem_clock_mhz\": 3201, \"max_sm_clock_mhz\": 1980, \"power_mw\": {power}, \"power_limit_mw\": 700000, \"util_gpu_pct\": {util}, \"util_mem_pct\": 0, \"mem_used_bytes\": 644939776, \"mem_total_bytes\": 150754820096, \"temp_c\": 60, \"pstate\": 0, \"clock_event_reasons\": {reasons}, \"pcie_tx_kbps\": 1141, \"pcie_rx_kbps\": 413}}\n",
                t + f64::from(gpu) * 0.0001
            ));
        }
    }
}

fn main() {
    let out = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .unwrap_or_else(|| "bench-results/analyze.json".into());
    let block = block(16 << 20);
    let repeats = (1usize << 30) / block.len();
    let total = (block.len() * repeats) as f64;
    let rss_before = peak_rss_kib();

    let started = Instant::now();
    let mut lines = 0usize;
    for _ in 0..repeats {
        for chunk in block.chunks(64 * 1024) {
            lines += memchr::memchr_iter(b'\n', std::hint::black_box(chunk)).count();
        }
    }
    let baseline_s = started.elapsed().as_secs_f64();

    let started = Instant::now();
    let mut a = Analyzer::new();
    a.begin("big.jsonl");
    for _ in 0..repeats {
        for chunk in block.chunks(64 * 1024) {
            a.feed(chunk);
        }
    }
    let report = a.finish();
    let analyze_s = started.elapsed().as_secs_f64();
    let rss_after = peak_rss_kib();
    let rows = report.figures.get("request_log.requests").and_then(|f| f.value.as_u64()).unwrap_or(0);
    assert_eq!(rows as usize, lines, "every line is a request");

    let mb_s = total / analyze_s / 1e6;
    let growth_mb = rss_after.saturating_sub(rss_before) as f64 / 1024.0;
    println!(
        "1 GiB request log ({lines} rows): analyzer {analyze_s:.2} s = {mb_s:.0} MB/s; memchr baseline {baseline_s:.2} s ({:.1}× faster)",
        analyze_s / baseline_s
    );
    println!(
        "peak RSS: {:.1} MB before, {:.1} MB after; the analysis added {growth_mb:.1} MB (target ≤ 64 MB)",
        rss_before as f64 / 1024.0,
        rss_after as f64 / 1024.0
    );

    // A vLLM log: 16 MiB fed 4 times (64 MiB) to a fresh analyzer, five times over; against a
    // memchr line count over the same bytes. The best pass is the figure (the least disturbed
    // by other work on a shared machine); the median is printed beside it.
    let vllm = vllm_block(16 << 20);
    let vllm_total = (vllm.len() * 4) as f64;
    let started = Instant::now();
    let mut vllm_lines = 0usize;
    for _ in 0..4 {
        for chunk in vllm.chunks(64 * 1024) {
            vllm_lines += memchr::memchr_iter(b'\n', std::hint::black_box(chunk)).count();
        }
    }
    let vllm_baseline_s = started.elapsed().as_secs_f64();
    let mut passes = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        let mut a = Analyzer::new();
        a.begin("vllm.log");
        for _ in 0..4 {
            for chunk in vllm.chunks(64 * 1024) {
                a.feed(chunk);
            }
        }
        let vllm_report = a.finish();
        passes.push(started.elapsed().as_secs_f64());
        assert!(
            vllm_report.findings.iter().any(|f| f.rule == "unclaimed-error" || f.rule == "generic-gpu-fault"),
            "the log's illegal memory accesses have no exact cause in it: unexplained, or a GPU fault read from their words"
        );
    }
    passes.sort_by(f64::total_cmp);
    let vllm_s = passes[0];
    let vllm_median_mb_s = vllm_total / passes[passes.len() / 2] / 1e6;
    let vllm_mb_s = vllm_total / vllm_s / 1e6;
    println!(
        "64 MiB vLLM log ({vllm_lines} lines): analyzer best of 5 {vllm_s:.2} s = {vllm_mb_s:.0} MB/s (target ≥ 300 MB/s; median {vllm_median_mb_s:.0} MB/s); memchr baseline {vllm_baseline_s:.2} s ({:.1}× faster)",
        vllm_s / vllm_baseline_s
    );
    // A 24-hour GPU recording, an hour at a time (generating it is not timed); three passes, the
    // best reported (as the vLLM log's), the peak RSS growth of the first.
    let rss_before_rec = peak_rss_kib();
    let mut hour_text = String::new();
    let mut rec_passes = Vec::new();
    let (mut rec_bytes, mut rec_growth_mb) = (0usize, 0.0f64);
    for pass in 0..3 {
        let mut rec_s = 0.0f64;
        rec_bytes = 0;
        let mut a = Analyzer::new();
        a.begin("day.jsonl");
        for hour in 0..24 {
            recording_hour(hour, &mut hour_text);
            rec_bytes += hour_text.len();
            let started = Instant::now();
            for chunk in hour_text.as_bytes().chunks(64 * 1024) {
                a.feed(chunk);
            }
            rec_s += started.elapsed().as_secs_f64();
        }
        let started = Instant::now();
        let rec_report = a.finish();
        rec_s += started.elapsed().as_secs_f64();
        if pass == 0 {
            rec_growth_mb = peak_rss_kib().saturating_sub(rss_before_rec) as f64 / 1024.0;
        }
        let stragglers = rec_report
            .findings
            .iter()
            .filter(|f| {
                f.rule == "slow-gpu" && f.subject.as_ref().and_then(|s| s.gpu.as_deref()) == Some("5")
            })
            .count();
        assert_eq!(stragglers, 4, "GPU 5 is a straggler in hours 0, 6, 12 and 18");
        rec_passes.push(rec_s);
    }
    rec_passes.sort_by(f64::total_cmp);
    let rec_s = rec_passes[0];
    let rec_mb_s = rec_bytes as f64 / rec_s / 1e6;
    println!(
        "24 h GPU recording (8 GPUs at 1 Hz, {:.0} MB): analyzer best of 3 {rec_s:.2} s = {rec_mb_s:.0} MB/s ({:.2}× the vLLM log's rate); peak RSS grew {rec_growth_mb:.1} MB (the hour being written is ~{:.0} MB of it)",
        rec_bytes as f64 / 1e6,
        rec_mb_s / vllm_mb_s,
        hour_text.capacity() as f64 / 1e6
    );
    let json = serde_json::json!({
        "schema": "triage.bench.analyze/v1",
        "gpu_recording_bytes": rec_bytes,
        "gpu_recording_analyzer_s": (rec_s * 1000.0).round() / 1000.0,
        "gpu_recording_analyzer_mb_s": rec_mb_s.round(),
        "gpu_recording_ratio_vs_vllm_log": (rec_mb_s / vllm_mb_s * 100.0).round() / 100.0,
        "gpu_recording_peak_rss_growth_mb": rec_growth_mb,
        "vllm_log_bytes": vllm_total,
        "vllm_log_analyzer_s": (vllm_s * 1000.0).round() / 1000.0,
        "vllm_log_analyzer_mb_s": vllm_mb_s.round(),
        "vllm_log_analyzer_median_mb_s": vllm_median_mb_s.round(),
        "vllm_log_passes": passes.len(),
        "vllm_log_baseline_memchr_s": (vllm_baseline_s * 1000.0).round() / 1000.0,
        "vllm_log_ratio_vs_baseline": (vllm_s / vllm_baseline_s * 10.0).round() / 10.0,
        "vllm_log_target_mb_s": 300,
        "vllm_log_meets_target": vllm_mb_s >= 300.0,
        "input_bytes": total,
        "rows": lines,
        "analyzer_s": (analyze_s * 1000.0).round() / 1000.0,
        "analyzer_mb_s": mb_s.round(),
        "baseline_memchr_s": (baseline_s * 1000.0).round() / 1000.0,
        "ratio_vs_baseline": (analyze_s / baseline_s * 10.0).round() / 10.0,
        "peak_rss_before_mb": rss_before as f64 / 1024.0,
        "peak_rss_after_mb": rss_after as f64 / 1024.0,
        "analysis_memory_mb": growth_mb,
        "target_memory_mb": 64,
        "meets_memory_target": growth_mb <= 64.0,
    });
    if let Some(dir) = std::path::Path::new(&out).parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    std::fs::write(&out, serde_json::to_string_pretty(&json).expect("json") + "\n")
        .expect("writing the bench report");
    println!("written to {out}");
}
