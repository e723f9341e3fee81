//! A GPU-rules component that misbehaves on request, for the runner's sandbox tests (never
//! deployed: `cargo xtask plugins` puts it under `<target>/plugins-test/`).
//!
//! The first sample's `uuid` chooses the behaviour: `hostile:loop` (spins forever),
//! `hostile:bomb` (allocates until the memory limit), `hostile:trap` (panics, which aborts:
//! a wasm `unreachable`), `hostile:huge` (answers 20,000 findings), `hostile:slow` (burns a
//! few million instructions, then answers); anything else answers one finding, `hostile-ok`.

#![allow(
    clippy::too_many_arguments,
    reason = "wit-bindgen's generated glue passes a record's fields as separate arguments"
)]

wit_bindgen::generate!({
    world: "gpu-rules",
    path: "../wit",
});

struct Plugin;

fn finding(t: f64, n: u32) -> Finding {
    Finding {
        t,
        gpu: Some(n),
        class: "TBT_TAIL".into(),
        rule: "hostile-ok".into(),
        title: format!("finding {n}"),
        confidence: 0.1,
        evidence: Vec::new(),
        remediation: String::new(),
    }
}

impl Guest for Plugin {
    fn analyze(samples: Vec<GpuSample>, _engine: Option<EngineSample>) -> Vec<Finding> {
        let mode = samples.first().map(|s| s.uuid.clone()).unwrap_or_default();
        let t = samples.first().map_or(0.0, |s| s.t);
        match mode.as_str() {
            "hostile:loop" => {
                let mut x: u64 = 0;
                loop {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
            }
            "hostile:bomb" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![1u8; 1 << 20]);
                    std::hint::black_box(&hoard);
                }
            }
            "hostile:trap" => panic!("hostile plugin traps on purpose"),
            "hostile:huge" => (0..20_000).map(|n| finding(t, n)).collect(),
            "hostile:slow" => {
                let mut x: u64 = 1;
                for i in 0..3_000_000u64 {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
                }
                vec![finding(t, (x % 2) as u32)]
            }
            _ => vec![finding(t, 0)],
        }
    }
}

export!(Plugin);
