//! Interop: both sides of `triage` against code written elsewhere.
//!
//! - The official `openai` and `anthropic` Python SDKs against `triage sim --serve` (the live
//!   simulator as users reproduce an incident with their own application): chat, legacy
//!   completions and Messages, streamed and not, model lists, and the error each SDK documents
//!   for an incident (`RateLimitError` with `Retry-After`, a gateway's 503, a 400 for a prompt
//!   past `max_model_len`). The checks are `tests/interop/sdk_clients.py`.
//! - `triage probe` against guidellm's mock server (an OpenAI-compatible streaming server from
//!   PyPI), told its time to first token and inter-token latency: the probe must measure what
//!   the server was told, within the tolerances below.
//! - The official OpenTelemetry protobuf definitions (`opentelemetry-proto`) read the probe's
//!   OTLP export: `otlp.rs` runs `tests/interop/otlp_check.py` through [`py`].
//!
//! The Python side runs in a venv this test creates from PyPI with every package pinned
//! (`tests/interop/requirements.txt`, installed `--no-deps --only-binary :all:`), cached under
//! the cargo target directory by the hash of that file and of python3: cold, a minute or two;
//! warm, seconds.
//! Every process is bounded by a deadline and killed when the test ends; the servers listen on
//! 127.0.0.1 only and stop by themselves (their lifetime, or their standard input closing).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::util::{Killed, free_port, repo, text, triage};

/// Creating the venv (download and install) may take this long, cold.
const VENV_DEADLINE: Duration = Duration::from_secs(600);
/// The SDK checks, the Python interpreter's start included.
const SDK_DEADLINE: Duration = Duration::from_secs(180);
/// guidellm's mock server imports transformers before it listens.
const MOCK_START_DEADLINE: Duration = Duration::from_secs(90);

fn interop(file: &str) -> PathBuf {
    repo().join("tests/interop").join(file)
}

/// Run `cmd` to its end, or kill it at `deadline`; stdout and stderr are captured.
pub(crate) fn run_bounded(mut cmd: Command, deadline: Duration) -> Result<Output, String> {
    let what = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{what}: {e}"))?;
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut buf);
            }
            buf
        })
    };
    let out = drain(child.stdout.take().map(|s| Box::new(s) as Box<dyn Read + Send>));
    let err = drain(child.stderr.take().map(|s| Box::new(s) as Box<dyn Read + Send>));
    let until = Instant::now() + deadline;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            let (o, e) = (out.join().unwrap_or_default(), err.join().unwrap_or_default());
            return Err(format!(
                "{what}: still running after {deadline:?}, killed\n{}\n{}",
                String::from_utf8_lossy(&o),
                String::from_utf8_lossy(&e)
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Ok(Output { status, stdout: out.join().unwrap_or_default(), stderr: err.join().unwrap_or_default() })
}

/// FNV-1a: a stable name for the venv of one requirements file and interpreter.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

/// Whether this python3 can make a venv with pip in it.
fn has_venv() -> bool {
    let mut c = Command::new("python3");
    c.args(["-c", "import venv, ensurepip"]);
    run_bounded(c, Duration::from_secs(60)).is_ok_and(|o| o.status.success())
}

/// Debian's python3 lacks `venv` until `python3-venv` is installed: as root, install it.
fn ensure_venv_module() -> Result<(), String> {
    if has_venv() {
        return Ok(());
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Err("python3 cannot create a venv (Debian: `apt-get install -y python3-venv` as root)".into());
    }
    for args in [&["update"][..], &["install", "-y", "--no-install-recommends", "python3-venv"][..]] {
        let mut c = Command::new("apt-get");
        c.args(args).env("DEBIAN_FRONTEND", "noninteractive");
        let out = run_bounded(c, Duration::from_secs(300))?;
        if !out.status.success() {
            return Err(format!("apt-get {args:?} failed:\n{}", text(&out)));
        }
    }
    if has_venv() {
        Ok(())
    } else {
        Err("python3-venv installed, and python3 still cannot make a venv".into())
    }
}

/// The venv's python, created once per requirements file (and per test process).
fn python() -> &'static Path {
    static VENV: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match VENV.get_or_init(make_venv) {
        Ok(p) => p,
        Err(e) => panic!("the interop venv: {e}"),
    }
}

fn make_venv() -> Result<PathBuf, String> {
    let requirements = interop("requirements.txt");
    let mut key = std::fs::read(&requirements).map_err(|e| format!("{}: {e}", requirements.display()))?;
    // A venv belongs to the interpreter that made it: a new python3 gets a new venv.
    let mut c = Command::new("python3");
    c.args(["-c", "import sys; print(sys.version, sys.executable)"]);
    key.extend(run_bounded(c, Duration::from_secs(60)).map(|o| o.stdout).unwrap_or_default());
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("interop-venv-{:016x}", fnv(&key)));
    let python = dir.join("bin/python");
    if dir.join("complete").exists() {
        return Ok(python);
    }
    ensure_venv_module()?;
    let started = Instant::now();
    // Built aside and renamed into place: an interrupted run never leaves a half venv behind.
    let partial = dir.with_extension(format!("partial-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&partial);
    let mut c = Command::new("python3");
    c.args(["-m", "venv"]).arg(&partial);
    let out = run_bounded(c, Duration::from_secs(120))?;
    if !out.status.success() {
        return Err(format!("python3 -m venv failed:\n{}", text(&out)));
    }
    let mut c = Command::new(partial.join("bin/python"));
    c.args(["-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--no-deps"])
        .args(["--only-binary", ":all:", "-r"])
        .arg(&requirements);
    let out = run_bounded(c, VENV_DEADLINE)?;
    if !out.status.success() {
        let _ = std::fs::remove_dir_all(&partial);
        return Err(format!("pip install -r {} failed:\n{}", requirements.display(), text(&out)));
    }
    std::fs::write(partial.join("complete"), b"").map_err(|e| e.to_string())?;
    if std::fs::rename(&partial, &dir).is_err() {
        // Another test process finished first: use its venv.
        let _ = std::fs::remove_dir_all(&partial);
    }
    eprintln!("interop venv created in {:.1} s: {}", started.elapsed().as_secs_f64(), dir.display());
    Ok(python)
}

/// A Python command with the venv's interpreter, no proxy for 127.0.0.1 and no API keys.
pub(crate) fn py(script: &str) -> Command {
    let mut c = Command::new(python());
    c.arg(interop(script));
    for k in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"] {
        c.env_remove(k);
    }
    for k in [
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_AUTH_TOKEN",
    ] {
        c.env_remove(k);
    }
    c.env("NO_PROXY", "127.0.0.1,localhost").env("PYTHONUNBUFFERED", "1");
    c
}

/// `triage sim --scenario NAME --serve 0`: the guard and the server's root URL.
fn serve(scenario: &str) -> (Killed, String) {
    let mut child = triage()
        .args(["sim", "--scenario", scenario, "--serve", "0", "--lifetime", "240s", "--format", "json"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let guard = Killed(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx.recv_timeout(Duration::from_secs(60)).expect("triage sim --serve said where it listens");
    let v: serde_json::Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
    let base = v["listening"].as_str().unwrap();
    assert!(base.starts_with("http://127.0.0.1:"), "{base}");
    (guard, base.trim_end_matches("/v1").to_owned())
}

#[test]
fn the_official_sdks_against_the_live_simulator() {
    let python = python();
    assert!(python.exists());
    let servers: Vec<(&str, (Killed, String))> =
        ["healthy", "client-retries", "upstream-cut"].into_iter().map(|s| (s, serve(s))).collect();
    let mut c = py("sdk_clients.py");
    c.args(servers.iter().map(|(name, (_, root))| format!("{name}={root}")));
    let started = Instant::now();
    let out = run_bounded(c, SDK_DEADLINE).unwrap_or_else(|e| panic!("{e}"));
    let report = text(&out);
    eprintln!("{report}(in {:.1} s)", started.elapsed().as_secs_f64());
    assert!(out.status.success(), "the SDK checks failed:\n{report}");
    assert!(report.contains("openai 3.57.0, anthropic 2.15.0"), "{report}");
    assert!(report.contains(", 0 did not"), "{report}");
}

/// `GET path` answered 200.
fn answers(port: u16, path: &str) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else { return false };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let req = format!("GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n");
    if s.write_all(req.as_bytes()).is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    s.read_exact(&mut head).is_ok() && head.ends_with(b"200")
}

#[test]
fn the_probe_measures_guidellms_mock_server_as_it_was_told() {
    // What the server is told: its time to first token, its gap between tokens, its tokens.
    let (ttft_ms, itl_ms, tokens, requests) = (300.0, 25.0, 16u64, 8u64);
    let port = free_port();
    let log = std::env::temp_dir().join(format!("triage-interop-guidellm-{}.log", std::process::id()));
    let mut c = py("guidellm_mock.py");
    c.args([port.to_string(), ttft_ms.to_string(), itl_ms.to_string(), tokens.to_string(), "180".into()])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap());
    let _mock = Killed(c.spawn().unwrap());
    let started = Instant::now();
    while !answers(port, "/v1/models") {
        let log = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(started.elapsed() < MOCK_START_DEADLINE, "guidellm's mock server did not start:\n{log}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let url = format!("http://127.0.0.1:{port}/v1");
    let mut c = triage();
    c.args(["probe", &url, "--model", "mock", "-n", &requests.to_string(), "-c", "2"]).args([
        "--max-tokens",
        &tokens.to_string(),
        "--timeout",
        "20s",
        "--format",
        "json",
    ]);
    let out = run_bounded(c, Duration::from_secs(120)).unwrap_or_else(|e| panic!("{e}"));
    assert!(out.status.success(), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let s = &v["summary"];
    let figure = |name: &str, q: &str| s[name][q].as_f64().unwrap_or_else(|| panic!("{name}.{q}: {s}"));
    eprintln!("told ttft {ttft_ms} ms, itl {itl_ms} ms; measured ttft {}, itl {}", s["ttft_ms"], s["itl_ms"]);
    assert_eq!(s["output_tokens"], tokens * requests, "{s}");
    assert_eq!(s["ttft_ms"]["n"], requests, "{s}");
    // The server sleeps the time it was told, then writes: never earlier (the probe starts its
    // clock before sending), later by its own work (sanic, a tokenizer) and scheduling.
    let (ttft_p50, ttft_min) = (figure("ttft_ms", "p50"), figure("ttft_ms", "min"));
    assert!(ttft_min >= ttft_ms - 2.0, "TTFT {ttft_min} ms before the {ttft_ms} ms the server waits");
    assert!(ttft_p50 <= ttft_ms + 120.0, "TTFT p50 {ttft_p50} ms, told {ttft_ms} ms (tolerance +120 ms)");
    let itl_p50 = figure("itl_ms", "p50");
    assert!(
        (itl_ms - 3.0..=itl_ms + 10.0).contains(&itl_p50),
        "ITL p50 {itl_p50} ms, told {itl_ms} ms (tolerance -3/+10 ms)"
    );
}
