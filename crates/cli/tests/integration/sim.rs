//! `triage sim` and `triage demo SCENARIO` as users run them: the list contract, files written
//! offline and read back by `triage analyze`, determinism by seed, usage errors, live serving.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::{temp_path, triage};

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn list_json_is_name_class_cause() {
    let out = triage().args(["sim", "--list", "--format", "json"]).output().unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let list = v.as_array().unwrap();
    assert!(list.len() >= 11, "{v}");
    for s in list {
        let o = s.as_object().unwrap();
        assert_eq!(o.keys().map(String::as_str).collect::<Vec<_>>(), ["cause", "class", "name"]);
        assert!(
            ["TTFT_HIGH", "TBT_TAIL", "OOM", "THROUGHPUT_ZERO", "CONFIG"]
                .contains(&o["class"].as_str().unwrap()),
            "{s}"
        );
    }
    let text = stdout(&triage().args(["sim", "--list"]).output().unwrap());
    assert!(text.contains("kv-leak") && text.contains("THROUGHPUT_ZERO"), "{text}");
}

#[test]
fn offline_files_are_what_analyze_reads() {
    let dir = temp_path("kv-leak");
    let out = triage().args(["sim", "--scenario", "kv-leak", "--out"]).arg(&dir).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = stdout(&out);
    assert!(text.contains("now: triage analyze"), "{text}");
    for f in ["vllm.log", "metrics.txt", "requests.jsonl", "nvidia-smi.csv", "nvml.jsonl"] {
        assert!(dir.join(f).is_file(), "{f} missing");
    }
    let files: Vec<_> =
        ["vllm.log", "metrics.txt", "requests.jsonl", "nvidia-smi.csv"].iter().map(|f| dir.join(f)).collect();
    let out = triage().arg("analyze").args(&files).args(["--format", "json"]).output().unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["verdict"], "THROUGHPUT_ZERO");
    assert_eq!(report["findings"][0]["rule"], "kv-leak");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_seed_decides_the_incident() {
    let run = |seed: &str, name: &str| {
        let dir = temp_path(name);
        let out = triage()
            .args([
                "sim",
                "--scenario",
                "overload",
                "--seed",
                seed,
                "--duration",
                "60s",
                "--format",
                "json",
                "--out",
            ])
            .arg(&dir)
            .output()
            .unwrap();
        assert!(out.status.success());
        let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(summary["simulated_s"], 60.0);
        assert_eq!(summary["scenario"]["rules"][0], "queueing-exceeds-capacity");
        let log = std::fs::read_to_string(dir.join("requests.jsonl")).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        log
    };
    let (a, b, c) = (run("7", "seed-a"), run("7", "seed-b"), run("8", "seed-c"));
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn usage_errors_exit_2() {
    let out = triage().args(["sim", "--scenario", "no-such-thing", "--out", "/tmp/x"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("kv-leak"));
    let out = triage().args(["sim", "--scenario", "healthy"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = triage().args(["sim"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = triage().args(["demo", "no-such-thing"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn absurd_numbers_are_usage_errors() {
    let sim = |extra: &[&str]| {
        let out = triage().args(["sim", "--scenario", "healthy"]).args(extra).output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    for speed in ["NaN", "inf", "-inf", "0", "-1", "1e9", "0.001", "fast"] {
        let (code, err) = sim(&["--serve", "0", "--lifetime", "1s", "--speed", speed]);
        assert_eq!(code, Some(2), "--speed {speed}: {err}");
        assert!(err.contains("--speed"), "{err}");
    }
    // Each allowed, but together 1000 × 2 min is 33 simulated hours of logs in memory.
    let (code, err) = sim(&["--serve", "0", "--speed", "1000", "--lifetime", "2m"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("at most 24 h"), "{err}");
    for extra in [["--duration", "0s"], ["--duration", "25h"], ["--lifetime", "-1s"]] {
        let (code, err) = sim(&[&["--out", "/nonexistent/never"][..], &extra[..]].concat());
        assert_eq!(code, Some(2), "{extra:?}: {err}");
    }
    let (code, err) = sim(&["--serve", "0", "--force"]);
    assert_eq!(code, Some(2), "{err}");
    // --duration is offline's: with --serve it was silently ignored.
    let (code, err) = sim(&["--serve", "0", "--duration", "10m"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--duration"), "{err}");
}

#[cfg(unix)]
#[test]
fn out_never_writes_through_a_link_nor_over_a_file_without_force() {
    let dir = temp_path("links");
    std::fs::create_dir_all(&dir).unwrap();
    let victim = temp_path("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    std::os::unix::fs::symlink(&victim, dir.join("vllm.log")).unwrap();
    let sim = |out: &std::path::Path, force: bool| {
        let mut c = triage();
        c.args(["sim", "--scenario", "healthy", "--duration", "10s", "--out"]).arg(out);
        if force {
            c.arg("--force");
        }
        let out = c.output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    // A planted link: refused, naming it, and nothing else written either.
    let (code, err) = sim(&dir, false);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("vllm.log") && err.contains("symbolic link") && err.contains("--force"), "{err}");
    assert!(!dir.join("metrics.txt").exists());
    // --force replaces the link itself; what it pointed to is untouched.
    let (code, err) = sim(&dir, true);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    let log = std::fs::symlink_metadata(dir.join("vllm.log")).unwrap();
    assert!(log.is_file(), "a plain file now");
    assert!(std::fs::read_to_string(dir.join("vllm.log")).unwrap().contains("non-default args"));
    // Files from an earlier run are not replaced silently.
    let (code, err) = sim(&dir, false);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("exists") && err.contains("--force"), "{err}");
    // The directory itself must not be a link (with or without a trailing slash).
    let link = temp_path("dir-link");
    std::os::unix::fs::symlink(&dir, &link).unwrap();
    for out in [link.clone(), link.join("")] {
        let (code, err) = sim(&out, true);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("symbolic link"), "{err}");
    }
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let _ = std::fs::remove_file(&link);
    let _ = std::fs::remove_file(&victim);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn demo_names_the_injected_fault() {
    let out = triage().args(["demo", "upstream-cut"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let t = stdout(&out);
    assert!(t.contains("[HTTP 503] server_error"), "{t}");
    assert!(t.contains("verdict: THROUGHPUT_ZERO"), "{t}");
    assert!(t.contains("the analyzer's top finding: upstream-cut (THROUGHPUT_ZERO, confidence 0.65) — the injected fault, named"), "{t}");
    let out = triage().args(["demo", "client-retries", "--format", "json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["named"], true);
    assert_eq!(v["probe"]["schema"], "triage.probe/v1");
    assert_eq!(v["report"]["schema"], "triage.report/v1");
    assert_eq!(v["scenario"]["class"], "CONFIG");
}

#[test]
fn serve_listens_and_stops_by_itself() {
    let mut child = triage()
        .args(["sim", "--scenario", "healthy", "--serve", "0", "--lifetime", "4s", "--format", "json"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    lines.read_line(&mut first).unwrap();
    let v: serde_json::Value = serde_json::from_str(&first).unwrap();
    let metrics = v["metrics"].as_str().unwrap();
    let host = metrics.trim_start_matches("http://").split('/').next().unwrap();
    let mut s = std::net::TcpStream::connect(host).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").unwrap();
    let mut body = String::new();
    s.read_to_string(&mut body).unwrap();
    assert!(body.starts_with("HTTP/1.1 200") && body.contains("vllm:kv_cache_usage_perc"), "{body}");
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success());
            break;
        }
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("still serving long after its lifetime");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn openmetrics_writes_the_fleet_the_same_every_time() {
    let dir = temp_path("openmetrics");
    std::fs::create_dir_all(&dir).unwrap();
    let run = |file: &str, extra: &[&str]| {
        let out = triage()
            .args(["sim", "--scenario", "kv-deadlock", "--format", "json", "--openmetrics"])
            .arg(dir.join(file))
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (std::fs::read_to_string(dir.join(file)).unwrap(), v)
    };
    let (a, v) = run("a.om", &[]);
    let (b, _) = run("b.om", &[]);
    assert_eq!(a, b);
    assert!(a.ends_with("# EOF\n"));
    let fleet = &v["fleet"];
    assert_eq!(fleet["replicas"].as_array().unwrap().len(), 3);
    assert_eq!(fleet["start_unix_s"], 1_795_917_600u64);
    assert_eq!(fleet["from_unix_s"], 1_795_917_615u64, "the first scrape, one interval in");
    assert_eq!(v["scenario"]["rules"][0], "scheduler-stall");
    let faulty = &fleet["replicas"][fleet["faulty"].as_u64().unwrap() as usize];
    let pod = faulty["pod"].as_str().unwrap();
    let instance = faulty["instance"].as_str().unwrap();
    // The faulty replica's cache is full at the end; its peers' is not.
    let usage_line = |p: &str| {
        a.lines()
            .rfind(|l| l.starts_with("vllm:kv_cache_usage_perc{") && l.contains(&format!("pod=\"{p}\"")))
            .unwrap()
            .to_owned()
    };
    let full = usage_line(pod);
    assert!(full.contains(&format!("instance=\"{instance}\"")) && full.contains(" 1.0 "), "{full}");
    for r in fleet["replicas"].as_array().unwrap().iter().filter(|r| r["pod"] != pod) {
        let l = usage_line(r["pod"].as_str().unwrap());
        assert!(!l.contains(" 1.0 "), "{l}");
    }
    // Another start and replica count: the same incident, moved and widened.
    let (c, v) = run("c.om", &["--start", "1800000000", "--replicas", "5", "--seed", "9"]);
    assert_eq!(v["fleet"]["replicas"].as_array().unwrap().len(), 5);
    assert_eq!(v["fleet"]["to_unix_s"], 1_800_000_000u64 + 150);
    assert!(c.contains(" 1800000150\n") && !c.contains(" 17959"), "timestamps moved");
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(unix)]
#[test]
fn openmetrics_usage_errors_and_links() {
    let dir = temp_path("openmetrics-usage");
    std::fs::create_dir_all(&dir).unwrap();
    let sim = |extra: &[&str]| {
        let out = triage()
            .args(["sim", "--scenario", "healthy", "--duration", "30s"])
            .args(extra)
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let file = dir.join("f.om");
    let f = file.to_str().unwrap();
    for extra in [
        &["--openmetrics", f, "--replicas", "0"][..],
        &["--openmetrics", f, "--replicas", "17"],
        &["--openmetrics", f, "--start", "-5"],
        &["--openmetrics", f, "--start", "99999999999"],
        &["--replicas", "3", "--out", f],
        &["--start", "0", "--out", f],
        &["--openmetrics", f, "--out", f],
        &["--openmetrics", f, "--serve", "0"],
        &["--openmetrics", f, "--replicas", "16", "--duration", "24h"],
    ] {
        let (code, err) = sim(extra);
        assert_eq!(code, Some(2), "{extra:?}: {err}");
    }
    assert!(!file.exists());
    // A planted link is refused (and what it points to untouched); --force replaces the link.
    let victim = temp_path("om-victim");
    std::fs::write(&victim, "precious\n").unwrap();
    std::os::unix::fs::symlink(&victim, &file).unwrap();
    let (code, err) = sim(&["--openmetrics", f]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("symbolic link") && err.contains("--force"), "{err}");
    let (code, err) = sim(&["--openmetrics", f, "--force"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert!(std::fs::symlink_metadata(&file).unwrap().is_file());
    assert!(std::fs::read_to_string(&file).unwrap().ends_with("# EOF\n"));
    let (code, err) = sim(&["--openmetrics", f]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("exists"), "{err}");
    let (code, err) = sim(&["--openmetrics", dir.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    // --force replaces regular files (and links themselves) only: never a FIFO or a device.
    let fifo = dir.join("fleet.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success());
    if made {
        let (code, err) = sim(&["--openmetrics", fifo.to_str().unwrap(), "--force"]);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("not a regular file"), "{err}");
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    }
    // A folder that does not exist is a usage error (exit 2), and nothing is created.
    let missing = dir.join("no-such-folder").join("fleet.om");
    let (code, err) = sim(&["--openmetrics", missing.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("does not exist"), "{err}");
    assert!(!dir.join("no-such-folder").exists());
    let _ = std::fs::remove_file(&victim);
    let _ = std::fs::remove_dir_all(&dir);
}
