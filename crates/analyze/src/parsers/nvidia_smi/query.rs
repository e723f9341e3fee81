//! `nvidia-smi -q`: a `GPU 00000000:00:06.0` header opens a GPU block, and its indented
//! `Key : Value` lines are read by the section they sit in (an indentation stack of open
//! headers). A block becomes one reading when the next starts or the form ends; its evidence is
//! the most telling line (a non-idle active throttle reason, else the SM clock, else
//! utilisation). The index comes from the bus id when a table or CSV named it, else the block's
//! position in the dump.

use super::{
    Cx, GpuProcess, GpuReading, MAX_DETAIL, MAX_PROCESSES, SmiParser, is_active, mib, num, push_process,
    push_reading,
};
use crate::report::EvidenceLine;
use triage_gpu::sample::{
    REASON_APPLICATIONS_CLOCKS, REASON_DISPLAY_CLOCKS, REASON_HW_POWER_BRAKE, REASON_HW_SLOWDOWN,
    REASON_HW_THERMAL, REASON_IDLE, REASON_SW_POWER_CAP, REASON_SW_THERMAL, REASON_SYNC_BOOST,
};

/// Deepest `-q` section nesting followed: each line indented further than the last was kept
/// as an open header, so memory grew with the input.
pub(super) const MAX_Q_DEPTH: usize = 32;

/// `Key   : Value` as `-q` prints it: the first colon preceded by a space.
pub(super) fn key_value(line: &str) -> Option<(&str, &str)> {
    let bytes = line.as_bytes();
    let colon = (1..bytes.len()).find(|&i| bytes[i] == b':' && bytes[i - 1] == b' ')?;
    let key = line[..colon].trim();
    (!key.is_empty()).then(|| (key, line[colon + 1..].trim()))
}

/// `GPU 00000000:00:06.0`: the start of a GPU block in `-q`.
pub(super) fn q_gpu_header(trimmed: &str) -> Option<&str> {
    let id = trimmed.strip_prefix("GPU ")?.trim();
    let ok = id.contains(':') && id.chars().all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.');
    ok.then_some(id)
}

/// Leading spaces and tabs.
pub(super) fn indent(line: &str) -> usize {
    line.chars().take_while(|c| *c == ' ' || *c == '\t').count()
}

/// `nvidia-smi -q -x`: an element `<tag>value</tag>` as the `-q` text form names it (section,
/// key), given the open element it sits in. `None` for what the readings do not use.
fn xml_pair(open: &str, tag: &str) -> Option<(&'static str, &'static str)> {
    if let Some(reason) =
        tag.strip_prefix("clocks_event_reason_").or_else(|| tag.strip_prefix("clocks_throttle_reason_"))
    {
        let label = match reason {
            "gpu_idle" => "Idle",
            "applications_clocks_setting" => "Applications Clocks Setting",
            "sw_power_cap" => "SW Power Cap",
            "hw_slowdown" => "HW Slowdown",
            "hw_thermal_slowdown" => "HW Thermal Slowdown",
            "hw_power_brake_slowdown" => "HW Power Brake Slowdown",
            "sync_boost" => "Sync Boost",
            "sw_thermal_slowdown" => "SW Thermal Slowdown",
            "display_clocks_setting" => "Display Clock Setting",
            _ => return None,
        };
        return Some(("Clocks Event Reasons", label));
    }
    Some(match (open, tag) {
        (_, "product_name") => ("", "Product Name"),
        (_, "uuid") => ("", "GPU UUID"),
        (_, "performance_state") => ("", "Performance State"),
        ("clocks", "sm_clock") => ("Clocks", "SM"),
        ("max_clocks", "sm_clock") => ("Max Clocks", "SM"),
        ("utilization", "gpu_util") => ("Utilization", "Gpu"),
        ("fb_memory_usage", "total") => ("FB Memory Usage", "Total"),
        ("fb_memory_usage", "used") => ("FB Memory Usage", "Used"),
        ("temperature", "gpu_temp") => ("Temperature", "GPU Current Temp"),
        ("gpu_power_readings" | "power_readings", "power_draw") => ("Power Readings", "Power Draw"),
        ("gpu_power_readings" | "power_readings", "average_power_draw") => {
            ("Power Readings", "Average Power Draw")
        }
        ("gpu_power_readings" | "power_readings", "instant_power_draw") => {
            ("Power Readings", "Instantaneous Power Draw")
        }
        ("gpu_power_readings" | "power_readings", "current_power_limit") => {
            ("Power Readings", "Current Power Limit")
        }
        ("gpu_power_readings" | "power_readings", "enforced_power_limit") => {
            ("Power Readings", "Enforced Power Limit")
        }
        ("gpu_power_readings" | "power_readings", "power_limit") => ("Power Readings", "Power Limit"),
        ("process_info", "pid") => ("Processes", "Process ID"),
        ("process_info", "process_name") => ("Processes", "Name"),
        ("process_info", "used_memory") => ("Processes", "Used GPU Memory"),
        _ => return None,
    })
}

/// An XML line of `nvidia-smi -q -x`: `<tag>`, `</tag>`, `<tag>value</tag>`, `<gpu id="…">`.
pub(super) fn is_xml_line(trimmed: &str) -> bool {
    trimmed.starts_with('<') && trimmed.ends_with('>')
}

impl SmiParser {
    /// A line of `nvidia-smi -q -x`: open and closed elements kept on a stack (bounded), each
    /// `<gpu id="…">` a GPU block, each value read as its `-q` twin. A paste cut before its
    /// `<gpu>` gets one block for what follows.
    pub(super) fn xml_line(&mut self, cx: &mut Cx<'_>, no: usize, line: &str) {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("<gpu id=\"") {
            let bus = rest.split('"').next().unwrap_or("").to_owned();
            self.start_query_gpu(cx, no, line, &bus);
            self.query.xml.clear();
            return;
        }
        if let Some(close) = t.strip_prefix("</") {
            let tag = close.trim_end_matches('>');
            if tag == "gpu" {
                self.flush_query(cx);
            }
            if let Some(i) = self.query.xml.iter().rposition(|open| open == tag) {
                self.query.xml.truncate(i);
            }
            return;
        }
        let Some(inner) = t.strip_prefix('<') else { return };
        let tag_end = inner.find(['>', ' ', '/']).unwrap_or(inner.len());
        let tag = &inner[..tag_end];
        let Some(gt) = inner.find('>') else { return };
        let body = &inner[gt + 1..];
        match body.find("</") {
            Some(end) => {
                let value = body[..end].trim();
                let open = self.query.xml.last().map_or("", String::as_str);
                let Some((section, key)) = xml_pair(open, tag) else { return };
                if self.query.gpu.is_none() {
                    self.start_query_gpu(cx, no, line, "");
                }
                self.query_pair(cx, no, line, section, key, value);
            }
            None if !inner[..gt].ends_with('/')
                && !tag.starts_with('?')
                && !tag.starts_with('!')
                && self.query.xml.len() < MAX_Q_DEPTH =>
            {
                self.query.xml.push(tag.to_owned());
            }
            None => {}
        }
    }
}

/// `-q` reason labels (current and older drivers) → NVML reason bits.
fn reason_of_label(label: &str) -> Option<u64> {
    Some(match label {
        "Idle" | "GPU Idle" => REASON_IDLE,
        "Applications Clocks Setting" => REASON_APPLICATIONS_CLOCKS,
        "SW Power Cap" => REASON_SW_POWER_CAP,
        "HW Slowdown" => REASON_HW_SLOWDOWN,
        "HW Thermal Slowdown" => REASON_HW_THERMAL,
        "HW Power Brake Slowdown" => REASON_HW_POWER_BRAKE,
        "Sync Boost" => REASON_SYNC_BOOST,
        "SW Thermal Slowdown" => REASON_SW_THERMAL,
        "Display Clock Setting" => REASON_DISPLAY_CLOCKS,
        _ => return None,
    })
}

/// One GPU block of `-q`.
pub(super) struct QGpu {
    reading: GpuReading,
    /// (rank, line): lower rank is more telling.
    best: Option<(u8, EvidenceLine)>,
    /// Open section headers: (indent, name).
    pub(super) stack: Vec<(usize, String)>,
    /// (priority, watts): lower priority wins.
    draw: Option<(u8, f64)>,
    limit: Option<(u8, f64)>,
    reasons_seen: bool,
    /// At most [`MAX_PROCESSES`]: a block listing more grew without end.
    pub(super) procs: Vec<GpuProcess>,
    /// The last `Process ID` was not kept, so its `Name` and memory lines are dropped too.
    proc_dropped: bool,
}

impl QGpu {
    fn consider(&mut self, rank: u8, evidence: EvidenceLine) {
        if self.best.as_ref().is_none_or(|(best_rank, _)| rank < *best_rank) {
            self.best = Some((rank, evidence));
        }
    }

    fn detail(&mut self, evidence: EvidenceLine) {
        if self.reading.detail.len() < MAX_DETAIL {
            self.reading.detail.push(evidence);
        }
    }
}

/// Where the parser is in a `-q` dump.
#[derive(Default)]
pub(super) struct Query {
    /// The GPU block being read.
    pub(super) gpu: Option<QGpu>,
    /// GPU blocks read in this dump: the index when the bus id is not known from a table.
    pub(super) ordinal: u32,
    /// `-q -x`: the open elements, outermost first (at most [`MAX_Q_DEPTH`]).
    pub(super) xml: Vec<String>,
}

impl SmiParser {
    /// `==============NVSMI LOG==============`: a new dump, a new moment.
    pub(super) fn start_query_dump(&mut self, cx: &mut Cx<'_>) {
        self.flush_query(cx);
        self.group.reset();
        self.query.ordinal = 0;
    }

    /// `GPU 00000000:00:06.0` (`bus` is the id): the block before it is written out, this one
    /// opened.
    pub(super) fn start_query_gpu(&mut self, cx: &mut Cx<'_>, no: usize, line: &str, bus: &str) {
        self.flush_query(cx);
        let bus = bus.to_owned();
        let index = self.bus_index.get(&bus).copied().unwrap_or(self.query.ordinal);
        self.query.ordinal += 1;
        let snapshot = self.group.id(&mut cx.facts.gpus, index);
        let header = cx.evidence(no, line);
        self.query.gpu = Some(QGpu {
            reading: GpuReading {
                index,
                bus_id: (!bus.is_empty()).then_some(bus),
                snapshot,
                evidence: header,
                ..GpuReading::default()
            },
            best: None,
            stack: Vec::new(),
            draw: None,
            limit: None,
            reasons_seen: false,
            procs: Vec::new(),
            proc_dropped: false,
        });
    }

    /// Write out the open GPU block, if any: its reading and its processes.
    pub(super) fn flush_query(&mut self, cx: &mut Cx<'_>) {
        let Some(block) = self.query.gpu.take() else { return };
        let mut reading = block.reading;
        reading.power_w = block.draw.map(|(_, watts)| watts);
        reading.power_limit_w = block.limit.map(|(_, watts)| watts);
        reading.reasons_known = block.reasons_seen;
        if let Some((_, evidence)) = block.best {
            reading.evidence = evidence;
        }
        for process in block.procs {
            push_process(cx, process);
        }
        push_reading(cx, reading);
    }

    /// A line inside a GPU block: a section header or a `Key : Value`.
    pub(super) fn query_line(&mut self, cx: &mut Cx<'_>, no: usize, line: &str) {
        let Some(block) = self.query.gpu.as_mut() else {
            return; // `Timestamp`, `Driver Version`, `Attached GPUs` before the first GPU
        };
        let depth = indent(line);
        while block.stack.last().is_some_and(|(open_depth, _)| *open_depth >= depth) {
            block.stack.pop();
        }
        let Some((key, value)) = key_value(line) else {
            if block.stack.len() < MAX_Q_DEPTH {
                block.stack.push((depth, line.trim().to_owned()));
            }
            return;
        };
        let section = block.stack.last().map_or(String::new(), |(_, name)| name.clone());
        self.query_pair(cx, no, line, &section, key, value);
    }

    /// One `-q` value by its section and key (the XML form names them the same way).
    fn query_pair(&mut self, cx: &mut Cx<'_>, no: usize, line: &str, section: &str, key: &str, value: &str) {
        let Some(block) = self.query.gpu.as_mut() else { return };
        let evidence = || EvidenceLine::quoted(cx.input, no, line);
        match (section, key) {
            ("", "Product Name") => block.reading.name = Some(value.to_owned()),
            ("", "GPU UUID") => block.reading.uuid = Some(value.to_owned()),
            ("", "Performance State") => block.reading.pstate = Some(value.to_owned()),
            ("Clocks Event Reasons" | "Clocks Throttle Reasons", label) => {
                block.reasons_seen = true;
                if let Some(reason) = reason_of_label(label)
                    && is_active(value)
                {
                    block.reading.reasons |= reason;
                    if reason != REASON_IDLE {
                        block.consider(0, evidence());
                        block.detail(evidence());
                    }
                }
            }
            ("Clocks", "SM") => {
                block.reading.sm_clock_mhz = num(value);
                block.consider(1, evidence());
                block.detail(evidence());
            }
            ("Max Clocks", "SM") => block.reading.max_sm_clock_mhz = num(value),
            ("Utilization", "Gpu" | "GPU") => {
                block.reading.util_pct = num(value);
                block.consider(2, evidence());
            }
            ("FB Memory Usage", "Total") => block.reading.mem_total_mib = mib(value),
            ("FB Memory Usage", "Used") => block.reading.mem_used_mib = mib(value),
            ("Temperature", "GPU Current Temp") => block.reading.temp_c = num(value),
            ("GPU Power Readings" | "Power Readings", power_key) => {
                let draw_priority = match power_key {
                    "Average Power Draw" => Some(0),
                    "Power Draw" => Some(1),
                    "Instantaneous Power Draw" => Some(2),
                    _ => None,
                };
                let limit_priority = match power_key {
                    "Current Power Limit" => Some(0),
                    "Enforced Power Limit" => Some(1),
                    "Power Limit" => Some(2),
                    _ => None,
                };
                if let (Some(priority), Some(watts)) = (draw_priority, num(value))
                    && block.draw.is_none_or(|(old, _)| priority < old)
                {
                    if block.draw.is_none() {
                        block.detail(evidence());
                    }
                    block.draw = Some((priority, watts));
                }
                if let (Some(priority), Some(watts)) = (limit_priority, num(value))
                    && block.limit.is_none_or(|(old, _)| priority < old)
                {
                    block.limit = Some((priority, watts));
                }
            }
            ("Processes", "Process ID") => {
                block.proc_dropped = block.procs.len() >= MAX_PROCESSES;
                if !block.proc_dropped {
                    block.procs.push(GpuProcess {
                        gpu: Some(block.reading.index),
                        pid: value.parse().ok(),
                        evidence: evidence(),
                        ..GpuProcess::default()
                    });
                }
            }
            ("Processes", "Name") => {
                if let Some(process) = block.procs.last_mut().filter(|_| !block.proc_dropped) {
                    process.name = value.to_owned();
                }
            }
            ("Processes", "Used GPU Memory") => {
                if let Some(process) = block.procs.last_mut().filter(|_| !block.proc_dropped) {
                    process.mem_mib = mib(value);
                }
            }
            _ => {}
        }
    }
}
