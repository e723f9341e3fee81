//! Quantile sketch insert throughput (target ≥ 20 M inserts/s native).
//!
//! Baseline in the same run: pushing the same values into a `Vec<f64>` and sorting it, the
//! exact approach the sketch replaces. The ratio sketch/baseline is the figure to watch;
//! absolute rates depend on the machine.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use triage_base::stats::QuantileSketch;

const N: usize = 1_000_000;

/// Lognormal-ish latencies in seconds (about 1 ms to 20 s, median ~0.1 s) from a fixed-seed
/// xorshift, so every run measures the same input without a `rand` dependency.
fn latencies(n: usize) -> Vec<f64> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut uniform = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    // A sum of three uniforms is roughly normal; its exp is roughly lognormal.
    (0..n).map(|_| ((uniform() + uniform() + uniform() - 1.5) * 6.0 - 2.3).exp()).collect()
}

fn inserts(c: &mut Criterion) {
    let values = latencies(N);
    let mut group = c.benchmark_group("quantiles_of_1m_latencies");
    group.throughput(Throughput::Elements(N as u64));
    group.sample_size(20);
    group.bench_function("sketch_insert", |b| {
        b.iter(|| {
            let mut sketch = QuantileSketch::new();
            for &v in black_box(&values) {
                sketch.insert(v);
            }
            black_box(sketch.quantile(0.99))
        })
    });
    group.bench_function("baseline_vec_push_and_sort", |b| {
        b.iter(|| {
            let mut exact = Vec::new();
            for &v in black_box(&values) {
                exact.push(v);
            }
            exact.sort_unstable_by(f64::total_cmp);
            black_box(exact.get(exact.len() * 99 / 100).copied())
        })
    });
    group.finish();
}

criterion_group!(benches, inserts);
criterion_main!(benches);
