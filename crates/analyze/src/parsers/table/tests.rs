//! The table reader's tests: each shape, units and separators, bounds and hostile lines.

use super::*;
use crate::testutil::run;

fn rows(text: &str) -> Vec<Row> {
    run("paste", text).facts.tables.rows
}

fn get(r: &Row, k: &str) -> f64 {
    r.get(k).unwrap_or_else(|| panic!("{k} missing in {:?}", r.values))
}

#[test]
fn markdown_without_the_leading_pipe_and_units_in_cells() {
    let r = rows(
        "Output len | Served req/s | Mean TTFT | Mean TPOT |\n|---|---|---|---|\n64 | 1.20 | 210 ms | 21.0 ms |\n2,048 | 0.31 | 12,500 ms | 21.4 ms |\n",
    );
    assert_eq!(r.len(), 2);
    assert_eq!(get(&r[1], "output_len"), 2048.0);
    assert_eq!(get(&r[1], "ttft_ms.mean"), 12_500.0);
    assert_eq!(get(&r[0], "tpot_ms.mean"), 21.0);
    assert_eq!(r[1].line("ttft_ms.mean").unwrap().line, 4);
    assert_eq!(r[0].table, r[1].table);
}

#[test]
fn box_drawn_statistics_table() {
    let t = "┃ Statistic ┃ avg ┃ p99 ┃\n┡━━━━━╇━━━━╇━━━━┩\n│ Time To First Token (ms) │ 1,250.50 │ 3,010.00 │\n│ Request latency (ns) │ 4,000,000,000 │ 5,000,000,000 │\n";
    let r = rows(t);
    assert_eq!(r.len(), 1);
    assert_eq!(get(&r[0], "ttft_ms.mean"), 1250.5);
    assert_eq!(get(&r[0], "ttft_ms.p99"), 3010.0);
    assert_eq!(get(&r[0], "e2e_ms.mean"), 4000.0);
}

#[test]
fn space_aligned_with_units_in_the_names() {
    let r = rows("conc   P50 TTFT (s)   P50 ITL (ms)\n2      0.41         12.5\n16     3.90         13.0\n");
    // `conc` is no known name; the two others make the header.
    assert_eq!(r.len(), 2);
    assert_eq!(get(&r[1], "ttft_ms.median"), 3900.0);
    assert_eq!(get(&r[0], "itl_ms.median"), 12.5);
}

#[test]
fn tab_separated_columns_per_configuration() {
    let r = rows("prompt tokens\t0-512\t512-2048\noutput tok/s\t900\t450\n");
    assert_eq!(r.len(), 2);
    assert_eq!(get(&r[0], "input_len"), 256.0);
    assert_eq!(get(&r[1], "output_tps"), 450.0);
}

#[test]
fn csv_rows() {
    let r = rows("batch,mean ttft (ms),mean itl (ms)\n8,320.5,14.1\n64,2210.0,18.9\n");
    assert_eq!(r.len(), 2);
    assert_eq!(get(&r[1], "batch"), 64.0);
    assert_eq!(get(&r[1], "ttft_ms.mean"), 2210.0);
}

#[test]
fn transposed_markdown_with_a_word_header() {
    let r = rows(
        "| Metric | before | after |\n|---|---|---|\n| **P50 ITL (ms)** | 250.1 | **30.2** |\n| Mean TTFT (ms) | 900 | 450 |\n| Δ | −50% | flat |\n",
    );
    assert_eq!(r.len(), 2);
    assert_eq!(r[0].label, "before");
    assert_eq!(get(&r[0], "itl_ms.median"), 250.1);
    assert_eq!(get(&r[1], "ttft_ms.mean"), 450.0);
}

#[test]
fn llama_bench_rows() {
    let r = rows(
        "| model | size | backend | ngl | test | t/s |\n| --- | ---: | --- | --: | ---: | ---: |\n| llama 8B Q4_0 | 4.33 GiB | CUDA | 99 | pp512 | 3,900.10 ± 12.00 |\n| llama 8B Q4_0 | 4.33 GiB | CUDA | 99 | tg 128 | 120.55 ± 0.30 |\n",
    );
    assert_eq!(get(&r[0], "pp_tps"), 3900.1);
    assert_eq!(get(&r[1], "tg_tps"), 120.55);
    assert_eq!(get(&r[1], "tg_n"), 128.0);
    assert_eq!(get(&r[1], "model_gib"), 4.33);
    assert_eq!(r[0].subject, r[1].subject);
}

#[test]
fn key_value_lines_of_many_shapes() {
    let one = |l: &str| kv::figures(l);
    assert_eq!(one("Mean TTFT (ms): 12.5"), vec![("ttft_ms.mean".to_owned(), 12.5)]);
    assert_eq!(one("eval rate:            7.50 tokens/s"), vec![("decode_tps".to_owned(), 7.5)]);
    assert_eq!(
        one("first_token latency(min, max, ave): 1.5s, 3.25s, 2.0s"),
        vec![
            ("ttft_ms.min".to_owned(), 1500.0),
            ("ttft_ms.max".to_owned(), 3250.0),
            ("ttft_ms.mean".to_owned(), 2000.0)
        ]
    );
    let p = one(
        "prompt eval time =   8123.40 ms /   512 tokens (   15.87 ms per token,    63.03 tokens per second)",
    );
    assert_eq!(p[0], ("prefill_ms".to_owned(), 8123.4));
    assert_eq!(p[1], ("prefill_tokens".to_owned(), 512.0));
    assert_eq!(p[2], ("prefill_ms_per_token".to_owned(), 15.87));
    let k = one(
        "CtxLimit: 900/4096, Process:2.10s (2.3ms/T = 428.57T/s), Generate:6.00s (60.0ms/T = 16.67T/s), Total:8.10s (12.35T/s)",
    );
    assert!(k.contains(&("prefill_ms".to_owned(), 2100.0)), "{k:?}");
    assert!(k.contains(&("decode_ms_per_token".to_owned(), 60.0)), "{k:?}");
    assert!(k.contains(&("e2e_ms.value".to_owned(), 8100.0)), "{k:?}");
    let b = one("[bench] long-prompt run 2/3: 40000 prompt tok, 6100.5 prefill tok/s, ttft 6557ms");
    assert_eq!(
        b,
        vec![
            ("input_len".to_owned(), 40000.0),
            ("prefill_tps".to_owned(), 6100.5),
            ("ttft_ms.value".to_owned(), 6557.0)
        ]
    );
    let w = one("  run-3      wall=  6.10s  ttft=    61ms  toks= 1000  decode_TPS=170.20");
    assert!(
        w.contains(&("ttft_ms.value".to_owned(), 61.0)) && w.contains(&("decode_tps".to_owned(), 170.2)),
        "{w:?}"
    );
    // Prose with a number is not a figure; a timestamp prefix is not a key.
    assert!(one("Restarting process in 5000ms (Attempt 3/5)").is_empty());
    assert_eq!(one("2025/01/02 10:11:12 Concurrency: 4"), vec![("concurrency".to_owned(), 4.0)]);
}

#[test]
fn blocks_split_on_blank_lines_and_repeated_keys() {
    let r = rows(
        "Response time: 12.0\nResponse time: 0.9\n\nConcurrency: 2\nThroughput: 3.5 req/s\nMean latency (ms): 410\n",
    );
    assert_eq!(r.len(), 3);
    assert!(r.iter().all(|x| x.block && x.table == r[0].table));
    assert_eq!(get(&r[2], "concurrency"), 2.0);
}

#[test]
fn rows_are_bounded_and_junk_is_safe() {
    let mut t = String::from("| concurrency | mean ttft (ms) |\n|---|---|\n");
    for i in 0..(MAX_ROWS + 50) {
        t.push_str(&format!("| {i} | {} |\n", i * 3));
    }
    let r = run("paste", &t).facts.tables;
    assert_eq!(r.rows.len(), MAX_ROWS);
    assert_eq!(r.dropped, 50);
    for junk in [
        "| | |",
        "┃┃┃",
        "a:b:c:=,,,((",
        "1,2,3",
        "(((((1 ms",
        "ttft: 1e400 ms",
        "| ttft | \n| 1 | 2 | 3 | 4 |",
        "x = -",
        "Δ: −",
    ] {
        let _ = rows(junk);
    }
}
