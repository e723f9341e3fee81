//! The nvidia-smi parser's tests: each form alone, forms following each other in one paste,
//! bounded state, and totality on broken input.

use super::query::MAX_Q_DEPTH;
use super::*;
use crate::analyze;
use crate::kind::InputKind;
use crate::report::Verdict;
use crate::rules::RuleId;
use crate::testutil::{Run, fixture, run};
use triage_gpu::sample::reason_names;

const IDLE: &str = fixture!("smi/smi_idle.txt");
const LOAD_START: &str = fixture!("smi/smi_load_start.txt");
const CAPPED: &str = fixture!("smi/smi_power_capped.txt");
const Q_CAPPED: &str = fixture!("smi/smi_q_power_capped.txt");
const SERIES: &str = fixture!("smi/smi_query_series_load.csv");
const DMON: &str = fixture!("smi/smi_dmon_load.txt");
const EIGHT: &str = fixture!("smi/synthetic_8gpu_one_slow.txt");

/// Feed `text` to one parser directly, to look at its state.
fn parser_after(text: &str) -> SmiParser {
    let mut facts = crate::facts::Facts::default();
    let mut issues = Vec::new();
    let mut cx = Cx {
        input: &std::sync::Arc::from("smi"),
        facts: &mut facts,
        issues: &mut issues,
        lang: triage_base::lang::Lang::En,
        vllm_needles: 0,
    };
    let mut p = SmiParser::default();
    for (i, line) in text.lines().enumerate() {
        p.line(&mut cx, i + 1, line);
    }
    p
}

/// Fuzzing-style inputs that grew the parser's state with the input: a new bus id per row,
/// a deeper `-q` header per line, a process per `Process ID` line.
#[test]
fn state_is_bounded() {
    let rows: String = (0..MAX_BUS_IDS * 2)
        .map(|i| format!("|   {}  NVIDIA H200   On | 0000:{i:x}:00.0 Off |\n", i % 8))
        .collect();
    assert_eq!(parser_after(&format!("| NVIDIA-SMI 580.159.04 |\n{rows}")).bus_index.len(), MAX_BUS_IDS);
    let deep: String = (1..200).map(|k| format!("{}x\n", " ".repeat(k))).collect();
    let p = parser_after(&format!("GPU 00000000:00:06.0\n{deep}"));
    assert_eq!(p.query.gpu.as_ref().map(|q| q.stack.len()), Some(MAX_Q_DEPTH));
    let procs = "        Process ID : 1\n        Name : python\n".repeat(MAX_PROCESSES + 1);
    let p = parser_after(&format!(
        "GPU 00000000:00:06.0\n    Processes\n{procs}        Process ID : 2\n        Name : last\n"
    ));
    let q = p.query.gpu.as_ref().expect("a -q block is open");
    assert_eq!(q.procs.len(), MAX_PROCESSES);
    assert!(q.procs.iter().all(|p| p.name == "python" && p.pid == Some(1)));
}

/// Every line of a capture lands in exactly one nvidia_smi section with no issues.
fn one_section(report: &crate::report::Report, text: &str) {
    let kinds: Vec<_> = report.inputs.iter().map(|s| (s.kind, s.lines)).collect();
    assert_eq!(kinds, vec![(InputKind::NvidiaSmi, [1, text.lines().count()])], "{kinds:?}");
    assert!(report.inputs[0].issues.is_empty(), "{:?}", report.inputs[0].issues);
}

#[test]
fn idle_h200_all_forms() {
    let Run { facts, report } = run("smi", IDLE);
    let g = facts.gpus;
    one_section(&report, IDLE);
    // The table, -q and the CSV line: three readings of the one GPU.
    assert_eq!(g.readings.len(), 3);
    for r in &g.readings {
        assert_eq!((r.index, r.name.as_deref()), (0, Some("NVIDIA H200")));
        assert_eq!(r.util_pct, Some(0.0));
        assert_eq!((r.mem_used_mib, r.mem_total_mib), (Some(0.0), Some(143_771.0)));
    }
    let table = &g.readings[0];
    assert_eq!((table.power_w, table.power_limit_w, table.temp_c), (Some(124.0), Some(700.0), Some(39.0)));
    assert_eq!(table.bus_id.as_deref(), Some("00000000:00:06.0"));
    assert!(table.evidence.text.contains("124W /  700W"), "{}", table.evidence.text);
    assert!(!table.reasons_known);
    let q = &g.readings[1];
    assert_eq!((q.sm_clock_mhz, q.max_sm_clock_mhz), (Some(1980.0), Some(1980.0)));
    assert_eq!((q.power_w, q.power_limit_w), (Some(124.16), Some(700.0)));
    assert_eq!(q.uuid.as_deref(), Some("GPU-42da6fc4-4fdc-8c63-c0a9-e37cb1219a40"));
    assert_eq!(q.temp_c, Some(39.0));
    assert!(q.evidence.text.starts_with("SM"), "{}", q.evidence.text);
    let csv = &g.readings[2];
    assert_eq!(csv.reason_mask, Some(1));
    for r in &g.readings[1..] {
        assert!(r.reasons_known);
        assert_eq!(r.reason_names(), ["idle"]);
    }
    // Three forms, three moments.
    let snaps: BTreeSet<u64> = g.readings.iter().map(|r| r.snapshot).collect();
    assert_eq!(snaps.len(), 3);
    assert!(g.processes.is_empty());
    assert_eq!(report.verdict, Verdict::Healthy, "{:?}", report.findings);
}

#[test]
fn load_start_with_dmon_ramp() {
    let Run { facts, report } = run("smi", LOAD_START);
    let g = facts.gpus;
    one_section(&report, LOAD_START);
    let dmon: Vec<_> = g
        .readings
        .iter()
        .filter(|r| r.evidence.text.starts_with('0') && !r.evidence.text.contains(','))
        .collect();
    assert_eq!(dmon.len(), 5);
    assert_eq!(dmon[4].power_w, Some(689.0));
    assert_eq!(dmon[4].sm_clock_mhz, Some(1530.0));
    assert_eq!(dmon[4].util_pct, Some(99.0));
    // No pviol column: reasons unknown, not "none".
    assert!(!dmon[4].reasons_known);
    assert_eq!(report.verdict, Verdict::Healthy, "{:?}", report.findings);
}

#[test]
fn power_capped_table_and_csv() {
    let Run { facts, report } = run("smi", CAPPED);
    let g = facts.gpus;
    one_section(&report, CAPPED);
    assert_eq!(g.readings.len(), 2);
    let table = &g.readings[0];
    assert_eq!((table.power_w, table.util_pct, table.mem_used_mib), (Some(693.0), Some(99.0), Some(1139.0)));
    let csv = &g.readings[1];
    assert_eq!(csv.reason_names(), ["sw_power_cap"]);
    assert_eq!(csv.reason_mask, Some(4));
    assert_eq!((csv.sm_clock_mhz, csv.max_sm_clock_mhz), (Some(1470.0), Some(1980.0)));
    assert_eq!((csv.power_w, csv.power_limit_w), (Some(692.52), Some(700.0)));
    assert_eq!(
        g.processes,
        vec![GpuProcess {
            gpu: Some(0),
            pid: Some(428),
            name: "python3".to_owned(),
            mem_mib: Some(1130.0),
            evidence: g.processes[0].evidence.clone(),
        }]
    );
    // A lone GPU at its power limit is doing its job.
    assert_eq!(report.verdict, Verdict::Healthy, "{:?}", report.findings);
}

#[test]
fn q_power_capped() {
    let Run { facts, report } = run("smi", Q_CAPPED);
    let g = facts.gpus;
    one_section(&report, Q_CAPPED);
    assert_eq!(g.readings.len(), 2);
    let q = &g.readings[0];
    assert_eq!(q.reason_names(), ["sw_power_cap"]);
    assert_eq!((q.sm_clock_mhz, q.max_sm_clock_mhz), (Some(1440.0), Some(1980.0)));
    assert_eq!((q.power_w, q.power_limit_w, q.temp_c), (Some(688.98), Some(700.0), Some(58.0)));
    assert_eq!(q.pstate.as_deref(), Some("P0"));
    // The reason line is the most telling; the clock and power lines back it.
    assert!(q.evidence.text.starts_with("SW Power Cap"), "{}", q.evidence.text);
    assert_eq!(q.evidence.line, 15);
    assert!(q.detail.iter().any(|e| e.text.starts_with("SM ") && e.text.contains("1440 MHz")));
    assert_eq!(g.readings[1].util_pct, Some(100.0));
    assert_eq!(g.processes.len(), 1);
    assert_eq!(report.verdict, Verdict::Healthy, "{:?}", report.findings);
}

#[test]
fn csv_series() {
    let Run { facts, report } = run("smi", SERIES);
    let g = facts.gpus;
    one_section(&report, SERIES);
    assert_eq!(g.readings.len(), 14);
    for r in &g.readings {
        assert_eq!(r.reason_names(), ["sw_power_cap"]);
        let sm = r.sm_clock_mhz.unwrap();
        assert!((1440.0..=1515.0).contains(&sm), "{sm}");
        let w = r.power_w.unwrap();
        assert!((690.0..=700.0).contains(&w), "{w}");
        assert_eq!(r.power_limit_w, Some(700.0));
    }
    // One GPU, fourteen moments.
    assert_eq!(g.readings.last().unwrap().snapshot - g.readings[0].snapshot, 13);
    assert_eq!(report.verdict, Verdict::Healthy, "{:?}", report.findings);
}

#[test]
fn dmon_with_violations() {
    let Run { facts, report } = run("smi", DMON);
    let g = facts.gpus;
    one_section(&report, DMON);
    assert_eq!(g.readings.len(), 6);
    assert_eq!(g.readings[0].power_violation_pct, Some(0.0));
    assert!(g.readings[0].reasons == 0);
    let r = &g.readings[1];
    assert_eq!(
        (r.power_w, r.sm_clock_mhz, r.util_pct, r.temp_c),
        (Some(691.0), Some(1500.0), Some(99.0), Some(60.0))
    );
    assert_eq!(
        (r.power_violation_pct, r.thermal_violation, r.mem_used_mib),
        (Some(100.0), Some(false), Some(1139.0))
    );
    assert_eq!(r.reason_names(), ["sw_power_cap"]);
    assert_eq!(report.verdict, Verdict::Healthy, "{:?}", report.findings);
}

#[test]
fn eight_gpus_one_slow() {
    let Run { facts, report } = run("smi", EIGHT);
    let g = facts.gpus;
    one_section(&report, EIGHT);
    let table: Vec<_> = g.readings.iter().filter(|r| r.evidence.text.contains("W /")).collect();
    assert_eq!(table.len(), 8);
    assert!(table.windows(2).all(|w| w[0].snapshot == w[1].snapshot));
    assert_eq!(g.processes.len(), 8);
    let csv: Vec<_> = g.readings.iter().filter(|r| r.reason_mask.is_some()).collect();
    assert_eq!(csv.len(), 8);
    assert_eq!(csv[5].reason_names(), ["hw_slowdown"]);
    assert_eq!(csv[5].sm_clock_mhz, Some(800.0));
    assert_eq!(report.verdict, Verdict::TbtTail);
}

#[test]
fn vllm_log_then_oom_then_smi() {
    let oom = fixture!("oom/h200_200gib.txt");
    let vllm = "INFO 11-29 10:00:00 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 5.4 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 6.5%, Prefix cache hit rate: 0.0%\n";
    let text = format!("{vllm}{oom}{Q_CAPPED}");
    let report = analyze(&[("paste", &text)]);
    let kinds: Vec<_> = report.inputs.iter().map(|s| (s.kind, s.lines)).collect();
    let (o, q) = (oom.lines().count(), Q_CAPPED.lines().count());
    // Inside a vLLM log the traceback's head stays with the log; the error line opens the OOM.
    assert_eq!(
        kinds,
        [
            (InputKind::VllmLog, [1, o]),
            (InputKind::OomTrace, [1 + o, 1 + o]),
            (InputKind::NvidiaSmi, [2 + o, 1 + o + q])
        ]
    );
    assert_eq!(report.findings[0].rule, RuleId::InputTooLong);
}

#[test]
fn q_processes() {
    let text = "GPU 00000000:18:00.0\n    Processes\n        GPU instance ID                   : N/A\n        Process ID                        : 31200\n            Type                          : C\n            Name                          : python -m vllm.entrypoints.openai.api_server\n            Used GPU Memory               : 128904 MiB\n        Process ID                        : 31377\n            Name                          : python3\n            Used GPU Memory               : 9000 MiB\n";
    let Run { facts, report } = run("smi", &format!("==============NVSMI LOG==============\n{text}"));
    let g = facts.gpus;
    assert_eq!(report.inputs.len(), 1, "{:?}", report.inputs);
    let p: Vec<_> = g.processes.iter().map(|p| (p.gpu, p.pid, p.name.as_str(), p.mem_mib)).collect();
    assert_eq!(
        p,
        [
            (Some(0), Some(31200), "python -m vllm.entrypoints.openai.api_server", Some(128_904.0)),
            (Some(0), Some(31377), "python3", Some(9000.0))
        ]
    );
}

#[test]
fn smi_then_vllm_log_splits() {
    let vllm = "INFO 11-29 10:00:00 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 5.4 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 6.5%, Prefix cache hit rate: 0.0%\n";
    for smi in [CAPPED, Q_CAPPED, SERIES, DMON] {
        let text = format!("{smi}{vllm}");
        let report = analyze(&[("paste", &text)]);
        let kinds: Vec<_> = report.inputs.iter().map(|s| s.kind).collect();
        assert_eq!(kinds, [InputKind::NvidiaSmi, InputKind::VllmLog]);
        let n = smi.lines().count();
        assert_eq!(report.inputs[1].lines, [n + 1, n + 1]);
    }
    // A vLLM worker in the process table does not split the table.
    let table =
        CAPPED.replace("python3                               ", "python -m vllm.entrypoints.api_server");
    let report = analyze(&[("paste", &table)]);
    assert_eq!(report.inputs.len(), 1, "{:?}", report.inputs);
}

#[test]
fn older_q_and_throttle_names() {
    let text = "==============NVSMI LOG==============\n\nAttached GPUs : 2\nGPU 00000000:00:1E.0\n    Product Name                    : Tesla V100-SXM2-16GB\n    Clocks Throttle Reasons\n        Idle                        : Not Active\n        SW Power Cap                : Not Active\n        HW Slowdown                 : Active\n            HW Thermal Slowdown     : Active\n            HW Power Brake Slowdown : Not Active\n    Utilization\n        Gpu                         : 97 %\n    Power Readings\n        Power Draw                  : 250.10 W\n        Power Limit                 : 300.00 W\n    Clocks\n        SM                          : 705 MHz\n\nGPU 00000000:00:1F.0\n    Product Name                    : Tesla V100-SXM2-16GB\n    Clocks\n        SM                          : 1530 MHz\n";
    let Run { facts, report } = run("smi", text);
    let g = facts.gpus;
    assert_eq!(report.inputs.len(), 1);
    assert_eq!(g.readings.len(), 2);
    let r = &g.readings[0];
    assert_eq!(r.reason_names(), ["hw_slowdown", "hw_thermal"]);
    assert_eq!(
        (r.util_pct, r.power_w, r.power_limit_w, r.sm_clock_mhz),
        (Some(97.0), Some(250.1), Some(300.0), Some(705.0))
    );
    assert!(r.evidence.text.starts_with("HW Slowdown"));
    assert_eq!((g.readings[1].index, g.readings[1].snapshot), (1, r.snapshot));
}

#[test]
fn narrow_headers_do_not_swallow_prose() {
    let text = "utilization.gpu [%]\n87 %\nAPI server is up on port 8000\n";
    let Run { facts, report } = run("smi", text);
    let g = facts.gpus;
    assert_eq!(g.readings.len(), 1);
    assert_eq!(report.inputs[0].issues.len(), 1, "{:?}", report.inputs[0].issues);
    let p = SmiParser {
        mode: Mode::Dmon,
        dmon: Some(Dmon { cols: vec!["gpu".to_owned(), "sm".to_owned()] }),
        ..SmiParser::default()
    };
    assert!(p.continues("  0   45", "  0   45", 0));
    assert!(!p.continues("3 workers", "3 workers", 0));
}

#[test]
fn masks_and_odd_values() {
    assert_eq!(reason_names(0x1ff).len(), 9);
    assert_eq!(reason_names(0x88), ["hw_slowdown", "hw_power_brake"]);
    assert_eq!(reason_names(0x200), Vec::<&str>::new());
    assert_eq!(num("[N/A]"), None);
    assert_eq!(num("1455 MHz"), Some(1455.0));
    assert_eq!(num("39C"), Some(39.0));
    assert_eq!(mib("2 GiB"), Some(2048.0));
    assert_eq!(mib("1139MiB"), Some(1139.0));
    let text = "index, clocks.sm [MHz], utilization.gpu [%], clocks_throttle_reasons.active, clocks_throttle_reasons.hw_thermal_slowdown\n0, [N/A], [N/A], 0xZZ, Active\n1, 1410 MHz, 3, extra\n";
    let Run { facts, report } = run("smi", text);
    let g = facts.gpus;
    assert_eq!(g.readings.len(), 1);
    assert_eq!(g.readings[0].reason_names(), ["hw_thermal"]);
    assert_eq!(g.readings[0].sm_clock_mhz, None);
    assert_eq!(report.inputs[0].issues.len(), 2, "{:?}", report.inputs[0].issues);
}

#[test]
fn total_on_garbage() {
    let nasty = [
        "|",
        "||||",
        "| 0 |",
        "|   7  |  |",
        "| N/A 3C P0 |",
        "+-",
        "GPU ::",
        "GPU 0:0\n  x : y",
        "# gpu pwr\n0 1 2\n1",
        "index\n\u{1F600}",
        "    Clocks\n        SM : é MHz",
        "| Processes: |\n| 0 C |",
        "| Processes: |\n| 0 1 C x |",
        "nvidia-smi\n0, 1",
        "index, name\n0",
        "| é 0 |\n| ééC P0 1W/é |",
        "GPU é:0\n    Clocks\n        SM é: 5",
        "# gpu pclk\n0 é",
        "index, power.draw [W]\n0, é W",
    ];
    for text in nasty {
        let t = format!("NVIDIA-SMI\n{text}\n");
        let _ = analyze(&[("x", &t)]);
    }
}

/// `nvidia-smi -q -x`: the XML form reads as its text twin, whole or cut before its `<gpu>`.
#[test]
fn xml_form() {
    let dump = "<?xml version=\"1.0\" ?>\n<nvidia_smi_log>\n\t<driver_version>550.54.15</driver_version>\n\t<gpu id=\"00000000:17:00.0\">\n\t\t<product_name>NVIDIA H100 80GB HBM3</product_name>\n\t\t<clocks_event_reasons>\n\t\t\t<clocks_event_reason_gpu_idle>Not Active</clocks_event_reason_gpu_idle>\n\t\t\t<clocks_event_reason_hw_slowdown>Active</clocks_event_reason_hw_slowdown>\n\t\t\t<clocks_event_reason_hw_power_brake_slowdown>Active</clocks_event_reason_hw_power_brake_slowdown>\n\t\t</clocks_event_reasons>\n\t\t<fb_memory_usage>\n\t\t\t<total>81559 MiB</total>\n\t\t\t<used>70012 MiB</used>\n\t\t</fb_memory_usage>\n\t\t<utilization>\n\t\t\t<gpu_util>98 %</gpu_util>\n\t\t</utilization>\n\t\t<gpu_power_readings>\n\t\t\t<power_draw>310.50 W</power_draw>\n\t\t\t<current_power_limit>700.00 W</current_power_limit>\n\t\t</gpu_power_readings>\n\t\t<clocks>\n\t\t\t<sm_clock>705 MHz</sm_clock>\n\t\t</clocks>\n\t\t<max_clocks>\n\t\t\t<sm_clock>1980 MHz</sm_clock>\n\t\t</max_clocks>\n\t</gpu>\n</nvidia_smi_log>\n";
    let Run { facts, report } = run("smi.xml", dump);
    // The XML declaration is no nvidia-smi line of its own; everything after it is one section.
    assert_eq!(report.inputs.last().map(|i| (i.kind, i.lines)), Some((InputKind::NvidiaSmi, [2, 29])));
    let g = facts.gpus;
    assert_eq!(g.readings.len(), 1);
    let r = &g.readings[0];
    assert_eq!(r.bus_id.as_deref(), Some("00000000:17:00.0"));
    assert_eq!(r.reason_names(), ["hw_slowdown", "hw_power_brake"]);
    assert_eq!(
        (r.util_pct, r.power_w, r.power_limit_w, r.sm_clock_mhz, r.max_sm_clock_mhz, r.mem_used_mib),
        (Some(98.0), Some(310.5), Some(700.0), Some(705.0), Some(1980.0), Some(70012.0))
    );
    assert_eq!(report.verdict, Verdict::TbtTail, "{:?}", report.findings);
    // The same with every reason `Not Active`, cut before its `<gpu>`: a healthy reading.
    let quiet: String =
        dump.lines().skip(5).collect::<Vec<_>>().join("\n").replace(">Active<", ">Not Active<");
    let Run { facts, report } = run("smi.xml", &quiet);
    assert_eq!(facts.gpus.readings.len(), 1);
    assert!(facts.gpus.readings[0].reasons == 0);
    assert!(facts.gpus.readings[0].reasons_known);
    assert_eq!(report.verdict, Verdict::Healthy, "{:?}", report.findings);
}
