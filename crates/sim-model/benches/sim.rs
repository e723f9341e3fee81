//! How fast the simulator runs: 100,000 requests from 1,000 closed-loop clients (the issue's
//! target: ≤ 2 s), reported against a same-run baseline and written as JSON
//! (default `bench-results/sim.json`).
//!
//! Baseline: the irreducible part of the same work — draw the same 100,000 prompt and output
//! lengths and observe one inter-token gap per output token in the same histogram. The
//! simulator does that and everything else (scheduling, KV blocks, preemption checks, logs,
//! metrics), so the ratio is the cost of the model itself per token.
//!
//! `cargo bench -p triage-sim-model --bench sim [-- OUT.json]`

// A bench is a host, not the model: it reads the wall clock and writes its report.
#![allow(clippy::disallowed_methods)]

use std::time::Instant;

use triage_sim_model::engine::{EngineConfig, GatewayConfig, NS, SimConfig};
use triage_sim_model::output::metrics::{Histogram, ITL_BUCKETS};
use triage_sim_model::rng::Rng;
use triage_sim_model::workload::{Arrivals, ClientBehaviour, Stream, Workload};
use triage_sim_model::{Sim, scenario};

const REQUESTS: u64 = 100_000;
const CLIENTS: u32 = 1_000;

fn config(max_num_seqs: u32) -> SimConfig {
    let mut chat = Stream::chat(0.0, 300.0, 120.0);
    chat.arrivals = Arrivals::Closed { clients: CLIENTS, think_s: 0.0 };
    chat.limit = Some(REQUESTS);
    chat.client = ClientBehaviour { timeout_s: None, max_retries: 0, backoff_s: 1.0 };
    let mut engine = EngineConfig::h200(scenario::MODEL);
    engine.max_num_seqs = max_num_seqs;
    SimConfig {
        seed: 1,
        engine,
        gateway: GatewayConfig::default(),
        workload: Workload { streams: vec![chat] },
        gpus: None,
        client_file: None,
    }
}

struct Run {
    wall_s: f64,
    render_s: f64,
    simulated_s: f64,
    tokens: u64,
    steps: u64,
    log_bytes: usize,
}

fn simulate(max_num_seqs: u32) -> Run {
    let started = Instant::now();
    let mut sim = Sim::new(config(max_num_seqs));
    let mut t = 0;
    loop {
        t += 60 * NS;
        sim.run(t);
        let done = sim.totals();
        if done.finished + done.client_gone + done.rejected >= REQUESTS {
            break;
        }
    }
    let wall_s = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let files = sim.artifacts();
    let render_s = started.elapsed().as_secs_f64();
    let totals = sim.totals();
    assert_eq!(totals.finished, REQUESTS);
    Run {
        wall_s,
        render_s,
        simulated_s: sim.now_ns() as f64 / 1e9,
        tokens: totals.generated_tokens,
        steps: totals.steps,
        log_bytes: files.iter().map(|f| f.content.len()).sum(),
    }
}

fn baseline() -> (f64, u64) {
    let started = Instant::now();
    let chat = Stream::chat(0.0, 300.0, 120.0);
    let mut rng = Rng::derive(1, 1);
    let mut itl = Histogram::new(ITL_BUCKETS);
    let mut tokens = 0u64;
    for _ in 0..REQUESTS {
        let _prompt = chat.prompt.sample(&mut rng);
        let out = chat.output.sample(&mut rng);
        for _ in 0..out {
            itl.observe(std::hint::black_box(0.065));
        }
        tokens += u64::from(out);
    }
    std::hint::black_box(itl.count());
    (started.elapsed().as_secs_f64(), tokens)
}

fn main() {
    let out = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .unwrap_or_else(|| "bench-results/sim.json".into());
    let (base_s, base_tokens) = baseline();
    let wide = simulate(1024);
    let default = simulate(256);
    for (name, r) in [("max_num_seqs 1024", &wide), ("max_num_seqs 256", &default)] {
        println!(
            "{REQUESTS} requests, {CLIENTS} closed-loop clients, {name}: simulated {:.0} s in {:.3} s ({:.0}× real time; {} steps, {} tokens), files rendered in {:.3} s ({:.1} MB); {}",
            r.simulated_s,
            r.wall_s,
            r.simulated_s / r.wall_s,
            r.steps,
            r.tokens,
            r.render_s,
            r.log_bytes as f64 / 1e6,
            if r.wall_s + r.render_s <= 2.0 { "within the 2 s target" } else { "OVER the 2 s target" }
        );
    }
    println!(
        "baseline (same lengths, one histogram observe per token, {base_tokens} tokens): {base_s:.3} s; the simulator costs {:.1}× / {:.1}× that",
        wide.wall_s / base_s,
        default.wall_s / base_s
    );
    let figure = |r: &Run| {
        serde_json::json!({
            "wall_s": (r.wall_s * 1e4).round() / 1e4,
            "render_s": (r.render_s * 1e4).round() / 1e4,
            "simulated_s": r.simulated_s.round(),
            "steps": r.steps,
            "tokens": r.tokens,
            "files_bytes": r.log_bytes,
            "ratio_vs_baseline": (r.wall_s / base_s * 10.0).round() / 10.0,
            "meets_target": r.wall_s + r.render_s <= 2.0,
        })
    };
    let json = serde_json::json!({
        "schema": "triage.bench.sim/v1",
        "requests": REQUESTS,
        "clients": CLIENTS,
        "target_s": 2.0,
        "baseline_s": (base_s * 1e4).round() / 1e4,
        "max_num_seqs_1024": figure(&wide),
        "max_num_seqs_256": figure(&default),
    });
    if let Some(dir) = std::path::Path::new(&out).parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    std::fs::write(&out, serde_json::to_string_pretty(&json).expect("json") + "\n")
        .expect("writing the bench report");
    println!("written to {out}");
}
