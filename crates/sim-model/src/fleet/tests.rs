//! The fleet's OpenMetrics file: what the format asks (a checker below), determinism, and that
//! the faulty replica's series are the incident `triage sim` writes for the same seed.

use super::*;
use crate::output::clock::EPOCH_UNIX_S;
use std::collections::BTreeMap;

type Labels = Vec<(String, String)>;
type Points = Vec<(u64, f64)>;
/// (name, sorted labels) → [(unix ms, value)].
type Parsed = BTreeMap<(String, Labels), Points>;

fn labels_of(text: &str) -> Labels {
    let mut out: Labels = text
        .split("\",")
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once("=\"").unwrap_or_else(|| panic!("label {p:?}"));
            (k.to_owned(), v.trim_end_matches('"').to_owned())
        })
        .collect();
    out.sort();
    out
}

/// Check the text as OpenMetrics (the rules `promtool tsdb create-blocks-from openmetrics`
/// reads by) and parse it.
fn check(text: &str) -> Parsed {
    assert!(text.ends_with("# EOF\n"), "ends with # EOF");
    assert_eq!(text.matches("# EOF").count(), 1);
    let mut seen_families = std::collections::BTreeSet::new();
    let (mut family, mut kind) = (String::new(), String::new());
    let mut out = Parsed::new();
    for (n, line) in text.lines().enumerate() {
        let n = n + 1;
        if line == "# EOF" {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let name = rest.split(' ').next().unwrap();
            assert!(seen_families.insert(name.to_owned()), "line {n}: family {name} again (not contiguous)");
            family = name.to_owned();
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, k) = rest.split_once(' ').unwrap();
            assert_eq!(name, family, "line {n}: TYPE after its HELP");
            assert!(["gauge", "counter", "histogram"].contains(&k), "line {n}: {k}");
            assert!(
                !(k == "counter" && name.ends_with("_total")),
                "line {n}: counter family named with _total"
            );
            kind = k.to_owned();
            continue;
        }
        assert!(!line.starts_with('#'), "line {n}: {line}");
        let (name, rest) = line.split_once('{').unwrap_or_else(|| panic!("line {n}: labels: {line}"));
        let (labels, rest) = rest.split_once("} ").unwrap();
        let mut fields = rest.split(' ');
        let value: f64 = fields.next().unwrap().parse().unwrap_or_else(|_| panic!("line {n}: value"));
        let ts: f64 = fields.next().unwrap_or_else(|| panic!("line {n}: no timestamp")).parse().unwrap();
        assert!(fields.next().is_none(), "line {n}");
        let suffix =
            name.strip_prefix(family.as_str()).unwrap_or_else(|| panic!("line {n}: {name} outside {family}"));
        let allowed: &[&str] = match kind.as_str() {
            "counter" => &["_total"],
            "histogram" => &["_bucket", "_count", "_sum"],
            _ => &[""],
        };
        assert!(allowed.contains(&suffix), "line {n}: {name} in a {kind}");
        assert_eq!(suffix == "_bucket", labels.contains(",le=\""), "line {n}: le on buckets only");
        let points = out.entry((name.to_owned(), labels_of(labels))).or_default();
        let t_ms = (ts * 1000.0).round() as u64;
        assert!(points.last().is_none_or(|(t, _)| *t < t_ms), "line {n}: time goes back in {name}");
        points.push((t_ms, value));
    }
    out
}

fn cfg(replicas: u32, seed: u64) -> FleetConfig {
    FleetConfig { replicas, start_unix_s: EPOCH_UNIX_S, seed, duration_s: None }
}

fn find(p: &Parsed, name: &str, want: &[(&str, &str)]) -> Vec<(Labels, Points)> {
    p.iter()
        .filter(|((n, l), _)| n == name && want.iter().all(|(k, v)| l.iter().any(|(a, b)| a == k && b == v)))
        .map(|((_, l), v)| (l.clone(), v.clone()))
        .collect()
}

#[test]
fn same_seed_same_file_other_seed_other_file() {
    let s = scenario::find("overload").unwrap();
    let a = run(&s, cfg(3, 7)).unwrap();
    let b = run(&s, cfg(3, 7)).unwrap();
    let c = run(&s, cfg(3, 8)).unwrap();
    assert_eq!(a.openmetrics, b.openmetrics);
    assert_ne!(a.openmetrics, c.openmetrics);
    // The faulty replica moves with the seed: over a few seeds, more than one position.
    let places: std::collections::BTreeSet<usize> = (0..12).map(|seed| faulty_index(seed, 3)).collect();
    assert!(places.len() > 1, "{places:?}");
}

#[test]
fn the_faulty_replica_is_the_incident_triage_sim_writes() {
    let s = scenario::find("kv-pressure").unwrap();
    let seed = scenario::DEFAULT_SEED;
    let fleet = run(&s, cfg(3, seed)).unwrap();
    let parsed = check(&fleet.openmetrics);
    let a = &fleet.answer;
    let faulty = &a.replicas[a.faulty.unwrap()];
    assert!(faulty.faulty && a.replicas.iter().filter(|r| r.faulty).count() == 1);
    assert_eq!(faulty.seed, seed);
    assert_eq!((a.from_unix_s, a.to_unix_s), (EPOCH_UNIX_S + 15, EPOCH_UNIX_S + 240));
    // Every sample of the faulty replica's last /metrics page, with its target's labels.
    let mut sim = Sim::new(s.config(seed));
    sim.run(s.duration_ns());
    let page = sim.metrics_text();
    let mut compared = 0;
    for line in page.lines().filter(|l| !l.starts_with('#')) {
        let (name, rest) = line.split_once('{').unwrap();
        let (labels, value) = rest.split_once("} ").unwrap();
        let mut labels = labels_of(labels);
        for (k, v) in [
            ("instance", faulty.instance.as_str()),
            ("job", "vllm"),
            ("namespace", "llm"),
            ("pod", &faulty.pod),
        ] {
            labels.push((k.to_owned(), v.to_owned()));
        }
        labels.sort();
        let points = &parsed[&(name.to_owned(), labels)];
        let (t, v) = points.last().unwrap();
        assert_eq!(*t, a.to_unix_s * 1000);
        assert_eq!(*v, value.parse::<f64>().unwrap(), "{line}");
        compared += 1;
    }
    assert!(compared > 200, "{compared}");
    // The fault shows on that replica only: preemptions there, none on its peers.
    for r in &a.replicas {
        let p = find(&parsed, "vllm:num_preemptions_total", &[("pod", &r.pod)]);
        let last = p[0].1.last().unwrap().1;
        assert_eq!(last > 0.0, r.faulty, "{} {last}", r.pod);
    }
}

#[test]
fn the_slow_gpu_is_one_among_its_peers() {
    let s = scenario::find("slow-gpu").unwrap();
    let fleet = run(&s, cfg(3, 11)).unwrap();
    let parsed = check(&fleet.openmetrics);
    let a = &fleet.answer;
    let slow = a.faulty_gpu.as_ref().unwrap();
    let host = &a.replicas[a.faulty.unwrap()].hostname;
    let clocks = find(&parsed, "DCGM_FI_DEV_SM_CLOCK", &[]);
    assert_eq!(clocks.len(), 3 * 4, "four GPUs a replica");
    for (labels, points) in &clocks {
        let get = |k: &str| labels.iter().find(|(a, _)| a == k).map(|(_, v)| v.as_str()).unwrap();
        let last = points.last().unwrap().1;
        let is_slow = get("UUID") == slow.uuid;
        assert_eq!(is_slow, get("Hostname") == host && get("gpu") == slow.gpu.to_string());
        assert_eq!(is_slow, last < 900.0, "{labels:?} {last}");
        assert!(
            ["job", "instance", "modelName", "device", "pod", "namespace"]
                .iter()
                .all(|k| labels.iter().any(|(a, _)| a == k))
        );
    }
    let reasons = find(&parsed, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", &[("UUID", &slow.uuid)]);
    assert_eq!(reasons[0].1.last().unwrap().1 as u64 & 0x8, 0x8, "HW slowdown");
}

#[test]
fn a_cold_start_is_down_then_up_and_new() {
    let s = scenario::find("cold-start").unwrap();
    let fleet = run(&s, cfg(3, 5)).unwrap();
    let parsed = check(&fleet.openmetrics);
    let a = &fleet.answer;
    let pod = &a.replicas[a.faulty.unwrap()].pod;
    let up = find(&parsed, "up", &[("pod", pod), ("job", "vllm")]);
    let ups: Vec<f64> = up[0].1.iter().map(|(_, v)| *v).collect();
    assert_eq!(&ups[..3], &[0.0, 0.0, 1.0], "scrapes at 15, 30, 45 s; ready at 45 s");
    let running = find(&parsed, "vllm:num_requests_running", &[("pod", pod)]);
    assert_eq!(running[0].1[0].0, (a.start_unix_s + 45) * 1000, "no /metrics before it is up");
    for r in &a.replicas {
        let started = find(&parsed, "process_start_time_seconds", &[("pod", &r.pod)]);
        let t = started[0].1[0].1 as u64;
        assert_eq!(t == a.start_unix_s, r.faulty, "{}: {t}", r.pod);
    }
    // Starting, its GPU holds the weights only; the KV cache comes with readiness.
    let used = find(&parsed, "DCGM_FI_DEV_FB_USED", &[("pod", pod)]);
    let mib: Vec<f64> = used[0].1.iter().map(|(_, v)| *v).collect();
    assert!(mib[0] < 4096.0 && mib[2] > 100_000.0, "{mib:?}");
    // Every target of every replica answers from the start but the new engine.
    assert_eq!(find(&parsed, "up", &[]).len(), 6);
}

#[test]
fn every_scenario_writes_a_valid_file() {
    for s in scenario::all() {
        let fleet = run(&s, cfg(2, 3)).unwrap();
        let parsed = check(&fleet.openmetrics);
        let a = &fleet.answer;
        assert_eq!(a.replicas.len(), 2);
        assert_eq!(a.scenario, s.name);
        assert_eq!(a.faulty.is_some(), s.class.is_some());
        assert_eq!(a.replicas.iter().filter(|r| r.faulty).count(), usize::from(s.class.is_some()));
        for r in &a.replicas {
            assert!(!find(&parsed, "DCGM_FI_DEV_GPU_UTIL", &[("pod", &r.pod)]).is_empty(), "{}", s.name);
            assert!(
                !find(
                    &parsed,
                    "vllm:kv_cache_usage_perc",
                    &[("pod", &r.pod), ("model_name", scenario::MODEL)]
                )
                .is_empty()
            );
        }
    }
}

#[test]
fn a_fleet_too_large_for_one_file_is_refused_before_it_runs() {
    let s = scenario::find("healthy").unwrap();
    let day = FleetConfig { duration_s: Some(86_400), ..cfg(16, 1) };
    assert_eq!(run(&s, day).unwrap_err(), FleetError::TooLarge { replicas: 16, scrapes: 5_760 });
    assert!(run(&s, FleetConfig { duration_s: Some(60), ..cfg(16, 1) }).is_ok());
}
