//! The default `nvidia-smi` table: the GPU sub-table (two rows per GPU: index, name and bus id,
//! then temperature, power, memory and utilisation), the MIG sub-table (skipped) and the
//! process sub-table. A new `NVIDIA-SMI` banner starts a new snapshot.

use super::{Cx, GpuProcess, GpuReading, SmiParser, learn_bus, mib, num, push_process, push_reading};

/// The default table's sub-tables.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum Stage {
    #[default]
    Gpus,
    Mig,
    Procs,
}

/// Where the parser is in the default table.
#[derive(Default)]
pub(super) struct Table {
    pub(super) stage: Stage,
    /// A GPU whose first row (index, name, bus id) was read and whose second is awaited.
    pub(super) pending: Option<GpuReading>,
}

impl SmiParser {
    /// One line of the table (`|` rows and `+---+` rules); `trimmed` is `line` trimmed.
    pub(super) fn table_line(&mut self, cx: &mut Cx<'_>, no: usize, line: &str, trimmed: &str) {
        if trimmed.contains("NVIDIA-SMI") {
            // A new table: a new moment.
            if let Some(reading) = self.table.pending.take() {
                push_reading(cx, reading);
            }
            self.table.stage = Stage::Gpus;
            self.group.reset();
            return;
        }
        if !trimmed.starts_with('|') {
            return; // +----+ separators
        }
        if trimmed.contains("MIG devices:") {
            self.table.stage = Stage::Mig;
            return;
        }
        if trimmed.contains("Processes:") {
            if let Some(reading) = self.table.pending.take() {
                push_reading(cx, reading);
            }
            self.table.stage = Stage::Procs;
            return;
        }
        let inner = trimmed.trim_start_matches('|').trim_end_matches('|');
        let cells: Vec<&str> = inner.split('|').collect();
        match self.table.stage {
            Stage::Mig => {}
            Stage::Procs => self.process_row(cx, no, line, inner),
            Stage::Gpus => self.gpu_row(cx, no, line, &cells),
        }
    }

    fn gpu_row(&mut self, cx: &mut Cx<'_>, no: usize, line: &str, cells: &[&str]) {
        let first: Vec<&str> = cells.first().map(|c| c.split_whitespace().collect()).unwrap_or_default();
        let Some(head) = first.first() else { return };
        // Row 1: `   0  NVIDIA H200     On  |   00000000:00:06.0 Off |    0 |`.
        if let Ok(index) = head.parse::<u32>() {
            if let Some(reading) = self.table.pending.take() {
                push_reading(cx, reading);
            }
            let mut name_end = first.len();
            if first.len() > 2 && matches!(first[first.len() - 1], "On" | "Off" | "WDDM" | "TCC") {
                name_end -= 1;
            }
            let name = first.get(1..name_end).map(|w| w.join(" ")).filter(|n| !n.is_empty());
            let bus_id = cells
                .get(1)
                .and_then(|c| c.split_whitespace().next())
                .filter(|b| b.contains(':'))
                .map(str::to_owned);
            if let Some(bus) = &bus_id {
                learn_bus(&mut self.bus_index, bus, index);
            }
            let snapshot = self.group.id(&mut cx.facts.gpus, index);
            self.table.pending = Some(GpuReading {
                index,
                name,
                bus_id,
                snapshot,
                evidence: cx.evidence(no, line),
                ..GpuReading::default()
            });
            return;
        }
        // Row 2: `N/A   39C   P0   124W /  700W |   0MiB / 143771MiB |   0%   Default |`.
        let temp =
            first.iter().find(|w| w.ends_with('C') && w.len() > 1 && num(w).is_some()).and_then(|w| num(w));
        let pstate =
            first.iter().find(|w| w.len() >= 2 && w.starts_with('P') && w[1..].parse::<u8>().is_ok());
        // `124W /  700W` (or `124W/700W`, `N/A / N/A`): usage left of the last slash, cap right of
        // it (the last: a fan of `N/A` has a slash too).
        let cell = cells.first().copied().unwrap_or("");
        let (power, limit) = match cell.rsplit_once('/') {
            Some((left, right)) => (
                left.split_whitespace().last().filter(|w| w.ends_with('W')).and_then(num),
                right.split_whitespace().next().filter(|w| w.ends_with('W')).and_then(num),
            ),
            None => (None, None),
        };
        if temp.is_none() && pstate.is_none() && power.is_none() {
            return; // header rows, the MIG M. row, empty rows
        }
        let Some(mut reading) = self.table.pending.take() else {
            cx.issue_in(
                no,
                "a GPU reading row without the row that names the GPU above it",
                "GPU 读数行的上方缺少标明是哪张 GPU 的行",
            );
            return;
        };
        reading.temp_c = temp;
        reading.pstate = pstate.map(|p| (*p).to_owned());
        reading.power_w = power;
        reading.power_limit_w = limit;
        if let Some(mem) = cells.get(1) {
            let mut parts = mem.split('/');
            reading.mem_used_mib = parts.next().and_then(mib);
            reading.mem_total_mib = parts.next().and_then(mib);
        }
        reading.util_pct =
            cells.get(2).and_then(|c| c.split_whitespace().next()).filter(|w| w.ends_with('%')).and_then(num);
        reading.evidence = cx.evidence(no, line);
        push_reading(cx, reading);
    }

    /// `|    0   N/A  N/A      428      C   python3      1130MiB |` (older drivers have no GI/CI).
    fn process_row(&mut self, cx: &mut Cx<'_>, no: usize, line: &str, inner: &str) {
        let words: Vec<&str> = inner.split_whitespace().collect();
        let Some(gpu) = words.first().and_then(|w| w.parse::<u32>().ok()) else {
            return; // headers, `No running processes found`
        };
        let is_type = |w: &str| !w.is_empty() && w.split('+').all(|p| matches!(p, "C" | "G" | "M"));
        let Some(type_at) = (2..words.len().saturating_sub(1)).find(|&i| is_type(words[i])) else {
            cx.issue_in(
                no,
                "a process row whose PID and type could not be told apart",
                "进程行中无法分辨 PID 和类型",
            );
            return;
        };
        let last = words[words.len() - 1];
        let process = GpuProcess {
            gpu: Some(gpu),
            pid: words[type_at - 1].parse().ok(),
            name: words[type_at + 1..words.len() - 1].join(" "),
            mem_mib: mib(last),
            evidence: cx.evidence(no, line),
        };
        push_process(cx, process);
    }
}
