//! Real scrape intervals: the simulator scrapes every 15 s; production Prometheus
//! often every 30 s, a minute or two. Each scenario's fleet is thinned to one scrape every 15,
//! 30, 60 and 120 s — each target's scrape times jittered by up to 3 s, its fifth scrape missed
//! (`up` 0, no other sample) — backfilled into one Prometheus, and analysed: the healthy fleet
//! stays HEALTHY, every fault that shows in metrics keeps its class and names its replica. A
//! range query finer than the interval repeats each sample; read as a counter that stopped, it
//! called a healthy fleet scraped once a minute an outage.
//!
//! The same for two scrapes pasted minutes apart (`curl /metrics` twice, no timestamps).

use std::fmt::Write as _;

use super::*;

/// Scrape intervals tried, in seconds (multiples of the simulator's 15 s).
const INTERVALS: &[u64] = &[15, 30, 60, 120];
/// Most seconds a scrape time moves either way.
const JITTER_S: f64 = 3.0;
/// The scrape every target misses (0-based, counted at the thinned interval).
const MISSED: u64 = 4;
/// Long enough for four scrapes twice over at 120 s, short enough that every incident lasts it.
const DURATION: &str = "9m";

/// A small deterministic hash of a target and a scrape: the jitter, in [-1, 1].
fn unit(instance: &str, n: u64) -> f64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in instance.bytes().chain(n.to_le_bytes()) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    (h % 2001) as f64 / 1000.0 - 1.0
}

/// The simulator's OpenMetrics (every 15 s from `first_s`) as Prometheus would have stored it
/// scraping every `every_s` s: the other scrapes dropped, each target's times jittered, scrape
/// [`MISSED`] of every target failed.
pub fn thin(om: &str, first_s: u64, every_s: u64) -> String {
    let mut out = String::with_capacity(om.len() / (every_s / 15) as usize + 1024);
    for line in om.lines() {
        if line.starts_with('#') {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let (head, ts) = line.rsplit_once(' ').expect("a sample line ends with its timestamp");
        let t: u64 = ts.parse().expect("whole seconds");
        let since = t - first_s;
        if !since.is_multiple_of(every_s) {
            continue;
        }
        let n = since / every_s;
        let instance = head.split("instance=\"").nth(1).and_then(|r| r.split('"').next()).unwrap_or("");
        let head = if n == MISSED {
            if !head.starts_with("up{") {
                continue;
            }
            format!("{} 0", head.rsplit_once(' ').unwrap().0)
        } else {
            head.to_owned()
        };
        let at = t as f64 + JITTER_S * unit(instance, n);
        writeln!(out, "{head} {at:.3}").unwrap();
    }
    out
}

#[test]
fn thinning_keeps_one_scrape_in_four_and_misses_one() {
    let om = (0..12u64)
        .map(|k| {
            format!("up{{instance=\"a\"}} 1 {}\nx_total{{instance=\"a\"}} {k} {}\n", 15 + 15 * k, 15 + 15 * k)
        })
        .collect::<String>()
        + "# EOF\n";
    let thinned = thin(&om, 15, 60);
    let samples: Vec<&str> = thinned.lines().filter(|l| !l.starts_with('#')).collect();
    // Scrapes 0, 1, 2 kept (the fifth would be the missed one), every time within the jitter.
    assert_eq!(samples.len(), 6, "{thinned}");
    for (line, t) in samples.iter().zip([15.0, 15.0, 75.0, 75.0, 135.0, 135.0]) {
        let at: f64 = line.rsplit_once(' ').unwrap().1.parse().unwrap();
        assert!((at - t).abs() <= JITTER_S, "{line}");
    }
    let missed = thin(&om, 15, 15);
    assert!(
        missed.contains("up{instance=\"a\"} 0") && !missed.contains("x_total{instance=\"a\"} 4 "),
        "{missed}"
    );
}

#[test]
fn every_scrape_interval_keeps_the_class_and_the_replica() {
    let Some(tools) = prom::tools() else { return };
    let names: Vec<&str> = NAMED.to_vec();
    let dir = prom::TempDir::new("intervals");
    let mut runs: Vec<(&str, u64, Option<&str>)> =
        names.iter().flat_map(|n| INTERVALS.iter().map(move |&e| (*n, e, Some(DURATION)))).collect();
    // The issue's own case: the healthy fleet over the scenario's three minutes, scraped once
    // a minute or every two minutes (two or three samples a series) — no stall can be seen, and
    // none is said.
    runs.extend([("healthy", 60, None), ("healthy", 120, None)]);
    let base = base_unix_s(runs.len() as u64);
    let mut files = Vec::new();
    let mut fleets = Vec::new();
    for (k, (name, every, duration)) in runs.iter().enumerate() {
        let seed = scenario::DEFAULT_SEED + k as u64;
        let start = base + k as u64 * WINDOW_S;
        let (file, fleet) = write_fleet_for(dir.path(), name, seed, start, *duration);
        let first = fleet["from_unix_s"].as_u64().unwrap();
        let om = std::fs::read_to_string(&file).unwrap();
        let thinned = dir.path().join(format!("{name}-{every}s-{k}.om"));
        std::fs::write(&thinned, thin(&om, first, *every)).unwrap();
        std::fs::remove_file(&file).unwrap();
        files.push(thinned);
        fleets.push((*name, *every, fleet));
    }
    let p = Prometheus::start(&tools, dir, &files);
    let mut failures = Vec::new();
    for (name, every, fleet) in &fleets {
        let (from, to) = (fleet["from_unix_s"].as_u64().unwrap(), fleet["to_unix_s"].as_u64().unwrap());
        match analyze(&p.url(), from, to) {
            Err(e) => failures.push(format!("{name} at {every} s: {e}")),
            Ok(r) => {
                if let Err(e) = judge(fleet, &r) {
                    failures.push(format!("{name} at {every} s: {e}"));
                }
                // The report says the interval it found (within the jitter) and what it limits.
                let scraping = &r["prometheus"]["scraping"];
                let found = scraping["interval_s"].as_f64().unwrap_or(0.0);
                if (found - *every as f64).abs() > JITTER_S {
                    failures.push(format!("{name} at {every} s: scrape interval found {scraping}"));
                }
                if !scraping["limits"].as_str().unwrap_or("").contains("one scrape every") {
                    failures.push(format!("{name} at {every} s: no limits said: {scraping}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "wrong at a real scrape interval:\n{}", failures.join("\n"));
}

/// `curl /metrics` twice, `gap_s` apart: one replica's samples at two scrape times, without
/// Prometheus's labels and timestamps.
fn two_pasted_scrapes(om: &str, instance: &str, at_s: u64, gap_s: u64) -> String {
    let mut text = String::new();
    for t in [at_s, at_s + gap_s] {
        for line in om.lines().filter(|l| !l.starts_with('#')) {
            let (head, ts) = line.rsplit_once(' ').unwrap();
            if ts.parse::<u64>() != Ok(t) || !head.contains(&format!("instance=\"{instance}\"")) {
                continue;
            }
            let (series, value) = head.rsplit_once(' ').unwrap();
            let (name, labels) = series.split_once('{').unwrap_or((series, "}"));
            let kept: Vec<&str> = labels
                .trim_end_matches('}')
                .split(',')
                .filter(|l| {
                    !l.is_empty()
                        && !["instance=", "job=", "namespace=", "pod="].iter().any(|p| l.starts_with(p))
                })
                .collect();
            writeln!(text, "{name}{{{}}} {value}", kept.join(",")).unwrap();
        }
    }
    text
}

/// Two scrapes pasted one, two and five minutes apart: the healthy replica is HEALTHY, the
/// faulty one keeps its class wherever its engine's metrics show it.
#[test]
fn two_scrapes_pasted_minutes_apart() {
    let dir = prom::TempDir::new("pasted");
    for (name, class) in [
        ("healthy", "HEALTHY"),
        ("overload", "TTFT_HIGH"),
        ("kv-pressure", "TBT_TAIL"),
        ("kv-deadlock", "THROUGHPUT_ZERO"),
    ] {
        let (file, fleet) =
            write_fleet_for(dir.path(), name, scenario::DEFAULT_SEED, 1_795_917_600, Some(DURATION));
        let om = std::fs::read_to_string(&file).unwrap();
        let first = fleet["from_unix_s"].as_u64().unwrap();
        let faulty = fleet["faulty"].as_u64().map(|f| f as usize);
        for (r, replica) in fleet["replicas"].as_array().unwrap().iter().enumerate() {
            let want = if Some(r) == faulty { class } else { "HEALTHY" };
            for gap in [60, 120, 300] {
                let paste = dir.path().join(format!("{name}-{r}-{gap}.prom"));
                let text = two_pasted_scrapes(&om, replica["instance"].as_str().unwrap(), first + 120, gap);
                assert!(text.lines().count() > 40, "{name}: {text}");
                std::fs::write(&paste, text).unwrap();
                let out = triage().args(["analyze", "--format", "json"]).arg(&paste).output().unwrap();
                let report: Value = serde_json::from_slice(&out.stdout).unwrap();
                assert_eq!(
                    report["verdict"],
                    want,
                    "{name}, replica {r}, scrapes {gap} s apart: {:?}",
                    rules_of(report["findings"].as_array().unwrap())
                );
            }
        }
    }
}
