//! PyTorch / CUDA out-of-memory messages: one [`OomFacts`] per message, with every figure the
//! message gives (requested, total, free, allocated and reserved by PyTorch, other processes).
//!
//! Three shapes are read: PyTorch ≥ 2.1 (`Tried to allocate 2.00 GiB. GPU 0 has a total
//! capacity of 79.15 GiB of which 1.23 GiB is free. Process 1234 has … memory in use. …`),
//! the older parenthesised one (`Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity;
//! 14.50 GiB already allocated; 3.19 MiB free; 14.67 GiB reserved in total by PyTorch)`), and
//! the raw `CUDA error: out of memory`, which carries no figures. A message wrapped over several
//! lines is joined back together; a truncated one yields whatever figures it still holds.

use super::{Cx, SectionParser};
pub use crate::facts::oom::OomFacts;
use crate::report::EvidenceLine;

/// A size for a summary: `618 MiB` below one GiB, else `139.80 GiB`.
pub fn fmt_gib(gib: f64) -> String {
    if gib < 1.0 { format!("{:.0} MiB", gib * 1024.0) } else { format!("{gib:.2} GiB") }
}

/// Most OOM messages kept (a crash loop prints the same one per restart and per rank).
const MAX_OOMS: usize = 64;
/// A wrapped message is joined from at most this many lines and bytes.
const MAX_LINES: usize = 8;
const MAX_TEXT: usize = 4096;
const MAX_EVIDENCE: usize = 4;

/// Where an OOM message starts in a line, if it does. `except torch.OutOfMemoryError:` in a
/// traceback's code context names the error without being one.
fn message_start(line: &str) -> Option<usize> {
    let markers = ["CUDA out of memory", "CUDA error: out of memory", "HIP out of memory"];
    let by_marker = markers.iter().filter_map(|m| line.find(m)).min();
    let by_name = line.find("OutOfMemoryError: ").filter(|&i| {
        let rest = line[i + "OutOfMemoryError: ".len()..].trim();
        !rest.is_empty()
    });
    match (by_marker, by_name) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The message ends here: PyTorch's closing advice, or a raw CUDA error (one line).
fn complete(text: &str) -> bool {
    ["Memory Management", "max_split_size_mb", "expandable_segments", "CUDA error: out of memory"]
        .iter()
        .any(|m| text.contains(m))
}

/// Lines that start something else: a traceback, a log record, a blank line.
fn ends_message(t: &str) -> bool {
    let b = t.as_bytes();
    let dated = b.len() >= 5 && b[0].is_ascii_digit() && b[1].is_ascii_digit() && b[2] == b'-';
    t.is_empty()
        || dated
        || [
            "Traceback",
            "File \"",
            "During handling",
            "The above exception",
            "INFO",
            "WARNING",
            "ERROR",
            "DEBUG",
            "CRITICAL",
            "[rank",
        ]
        .iter()
        .any(|p| t.starts_with(p))
}

/// A size at the start of `s` (`2.00 GiB`, `618.00 MiB`, `0 bytes`), in GiB. The unit is
/// required: a bare number is not a size.
fn size_at(s: &str) -> Option<f64> {
    let s = s.trim_start();
    let end = s.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ',')).unwrap_or(s.len());
    let x: f64 = s[..end].replace(',', "").parse().ok().filter(|x: &f64| x.is_finite())?;
    let unit: String = s[end..].trim_start().chars().take_while(char::is_ascii_alphabetic).collect();
    let scale = match unit.as_str() {
        "bytes" | "byte" | "B" => 1.0 / (1u64 << 30) as f64,
        "KiB" | "KB" | "kB" => 1.0 / (1u64 << 20) as f64,
        "MiB" | "MB" => 1.0 / 1024.0,
        "GiB" | "GB" => 1.0,
        "TiB" | "TB" => 1024.0,
        "PiB" | "PB" => 1024.0 * 1024.0,
        // `Tried to allocate more than 1EB memory`: a size computed from garbage (an overflow).
        "EiB" | "EB" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    Some(x * scale)
}

fn size_after(text: &str, key: &str) -> Option<f64> {
    text.find(key).and_then(|i| size_at(&text[i + key.len()..]))
}

/// The GPU number in `GPU 0 has` / `(GPU 0;`.
fn gpu_of(text: &str) -> Option<u32> {
    let mut from = 0;
    while let Some(i) = text[from..].find("GPU ") {
        let rest = &text[from + i + 4..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if !digits.is_empty()
            && (rest[digits.len()..].starts_with(" has") || rest[digits.len()..].starts_with(';'))
        {
            return digits.parse().ok();
        }
        from += i + 4;
    }
    None
}

/// Every `Process N has X memory in use`.
fn processes_of(text: &str) -> Vec<(u32, f64)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find("Process ") {
        let rest = &text[from + i + "Process ".len()..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if let (Ok(pid), Some(has)) = (digits.parse::<u32>(), rest[digits.len()..].strip_prefix(" has "))
            && let Some(gib) = size_at(has)
        {
            out.push((pid, gib));
        }
        from += i + "Process ".len();
    }
    out
}

/// Read every figure of one joined message.
fn figures(text: &str) -> OomFacts {
    let mut f = OomFacts {
        gpu: gpu_of(text),
        tried_gib: size_after(text, "Tried to allocate ")
            .or_else(|| size_after(text, "Tried to allocate more than ")),
        total_gib: size_after(text, "total capacity of "),
        free_gib: size_after(text, "of which "),
        allocated_by_pytorch_gib: size_after(text, "Of the allocated memory "),
        reserved_unallocated_gib: size_after(text, "by PyTorch, and "),
        processes: processes_of(text),
        this_process_gib: size_after(text, "this process has "),
        cuda_error: text.contains("CUDA error: out of memory"),
        ..OomFacts::default()
    };
    // Older: `(GPU 0; 15.78 GiB total capacity; 14.50 GiB already allocated; 3.19 MiB free;
    // 14.67 GiB reserved in total by PyTorch)`.
    if let Some(open) = text.find("(GPU ") {
        let inner = &text[open + 1..];
        let inner = &inner[..inner.find(')').unwrap_or(inner.len())];
        for part in inner.split(';').map(str::trim) {
            let Some(gib) = size_at(part) else { continue };
            if part.ends_with("total capacity") {
                f.total_gib = f.total_gib.or(Some(gib));
            } else if part.ends_with("already allocated") {
                f.allocated_by_pytorch_gib = f.allocated_by_pytorch_gib.or(Some(gib));
            } else if part.ends_with(" free") {
                f.free_gib = f.free_gib.or(Some(gib));
            } else if part.contains("reserved in total") {
                f.reserved_gib = Some(gib);
            }
        }
        if f.reserved_unallocated_gib.is_none()
            && let (Some(r), Some(a)) = (f.reserved_gib, f.allocated_by_pytorch_gib)
        {
            f.reserved_unallocated_gib = Some((r - a).max(0.0));
        }
    }
    f
}

/// A message being joined.
struct Open {
    text: String,
    lines: usize,
    evidence: Vec<EvidenceLine>,
}

/// Reads CUDA / PyTorch out-of-memory messages, old and new forms.
#[derive(Default)]
pub struct OomParser {
    open: Option<Open>,
    messages: usize,
    first_line: Option<usize>,
}

impl OomParser {
    fn close(&mut self, cx: &mut Cx<'_>) {
        let Some(open) = self.open.take() else { return };
        let mut f = figures(&open.text);
        f.evidence = open.evidence;
        if cx.facts.ooms.len() < MAX_OOMS {
            cx.facts.ooms.push(f);
        }
    }
}

impl SectionParser for OomParser {
    fn line(&mut self, cx: &mut Cx<'_>, no: usize, line: &str) {
        self.first_line.get_or_insert(no);
        if let Some(start) = message_start(line) {
            self.close(cx);
            self.messages += 1;
            let mut text = line[start..].trim().to_owned();
            text.truncate(text.floor_char_boundary(MAX_TEXT));
            self.open = Some(Open { text, lines: 1, evidence: vec![cx.evidence(no, line)] });
        } else if let Some(open) = self.open.as_mut() {
            let t = line.trim();
            if complete(&open.text)
                || ends_message(t)
                || open.lines >= MAX_LINES
                || open.text.len() >= MAX_TEXT
            {
                self.close(cx);
                return;
            }
            // A wrapped message: join it back with a space (wraps fall between words or inside
            // a number and its unit; both read the same with one space).
            open.text.push(' ');
            open.text.push_str(t);
            open.text.truncate(open.text.floor_char_boundary(MAX_TEXT));
            open.lines += 1;
            if open.evidence.len() < MAX_EVIDENCE {
                open.evidence.push(cx.evidence(no, line));
            }
        }
        if self.open.as_ref().is_some_and(|o| complete(&o.text)) {
            self.close(cx);
        }
    }

    fn finish(mut self: Box<Self>, cx: &mut Cx<'_>) {
        self.close(cx);
        if self.messages == 0
            && let Some(no) = self.first_line
        {
            cx.issue_in(
                no,
                "this section names an out-of-memory error but holds no out-of-memory message",
                "本片段提到了显存溢出错误，但没有包含显存溢出的具体信息",
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::InputKind;
    use crate::testutil::{fixture, run};

    const H200: &str = fixture!("oom/h200_200gib.txt");

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-6)
    }

    #[test]
    fn real_h200_traceback() {
        let o = run("oom.txt", H200).facts.ooms;
        assert_eq!(o.len(), 1);
        let o = &o[0];
        assert_eq!(o.gpu, Some(0));
        assert!(close(o.tried_gib, 200.0));
        assert!(close(o.total_gib, 139.80));
        assert!(close(o.free_gib, 139.19));
        assert!(close(o.this_process_gib, 618.0 / 1024.0));
        assert!(close(o.allocated_by_pytorch_gib, 32.0 / 1024.0));
        assert!(close(o.reserved_unallocated_gib, 0.0));
        assert!(o.processes.is_empty());
        assert!(!o.cuda_error);
        assert_eq!(o.evidence[0].line, 5);
        // The traceback's head joins the OOM section.
        let report = crate::analyze(&[("oom.txt", H200)]);
        let kinds: Vec<_> = report.inputs.iter().map(|s| (s.kind, s.lines)).collect();
        assert_eq!(kinds, [(InputKind::OomTrace, [1, 5])]);
        assert!(report.inputs[0].issues.is_empty());
    }

    #[test]
    fn brief_example_names_its_own_process() {
        let o = &run("oom.txt", 
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.23 GiB is free. Process 1234 has 77.91 GiB memory in use. Of the allocated memory 70.00 GiB is allocated by PyTorch, and 6.50 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.\n",
        ).facts.ooms.remove(0);
        assert_eq!(o.processes, [(1234, 77.91)]);
        assert!(close(o.reserved_unallocated_gib, 6.5));
        assert!(close(o.allocated_by_pytorch_gib, 70.0));
        // No `this process` entry: this PyTorch named itself by pid (77.91 = total − free).
        assert_eq!(o.others_gib(), 0.0);
        let newer = OomFacts { this_process_gib: Some(10.0), ..o.clone() };
        assert_eq!(newer.others_gib(), 77.91);
    }

    #[test]
    fn wrapped_over_lines() {
        let text = "RuntimeError: CUDA out of memory. Tried to allocate 2.00\nGiB. GPU 3 has a total capacity of 79.15 GiB of which 512.00 MiB is free.\nProcess 11 has 40.00 GiB memory in use. Process 12 has 38.10 GiB memory in use. Of the\nallocated memory 36.00 GiB is allocated by PyTorch, and 1.00 GiB is reserved by PyTorch but unallocated. See documentation for Memory Management\nINFO 11-29 10:00:00 [api_server.py:1] shutting down\n";
        let o = run("oom.txt", text).facts.ooms;
        assert_eq!(o.len(), 1);
        let o = &o[0];
        assert_eq!(o.gpu, Some(3));
        assert!(close(o.tried_gib, 2.0));
        assert!(close(o.free_gib, 0.5));
        assert_eq!(o.processes, [(11, 40.0), (12, 38.1)]);
        assert_eq!(o.other_processes(), [(11, 40.0)]);
        assert!(close(o.allocated_by_pytorch_gib, 36.0));
        assert_eq!(o.evidence.len(), 4);
    }

    #[test]
    fn older_format() {
        let o = &run("oom.txt", 
            "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity; 14.50 GiB already allocated; 3.19 MiB free; 14.67 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF\n",
        ).facts.ooms.remove(0);
        assert_eq!(o.gpu, Some(0));
        assert!(close(o.tried_gib, 20.0 / 1024.0));
        assert!(close(o.total_gib, 15.78));
        assert!(close(o.allocated_by_pytorch_gib, 14.5));
        assert!(close(o.free_gib, 3.19 / 1024.0));
        assert!(close(o.reserved_gib, 14.67));
        assert!(close(o.reserved_unallocated_gib, 0.17));
    }

    #[test]
    fn raw_cuda_error_truncated_and_several() {
        let text = "RuntimeError: CUDA error: out of memory\nCUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\n(VllmWorker rank=1 pid=77) ERROR 11-29 10:00:00 [multiproc_executor.py:1] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 1 has a total capac";
        let o = run("oom.txt", text).facts.ooms;
        assert_eq!(o.len(), 2);
        assert!(o[0].cuda_error && o[0].tried_gib.is_none());
        assert_eq!((o[1].gpu, o[1].tried_gib, o[1].total_gib), (Some(1), Some(1.5), None));
        assert_eq!(o[1].evidence[0].line, 3);
    }

    #[test]
    fn code_context_is_not_a_message() {
        assert_eq!(message_start("    except torch.OutOfMemoryError:"), None);
        assert_eq!(message_start("torch.OutOfMemoryError: CUDA out of memory."), Some(6));
        let report = run("x", "    except torch.OutOfMemoryError:\n        pass\n").report;
        assert_eq!(report.inputs[0].issues.len(), 1);
    }

    #[test]
    fn sizes() {
        assert_eq!(size_at("0 bytes is"), Some(0.0));
        assert_eq!(size_at("1,024.00 MiB"), Some(1.0));
        assert_eq!(size_at("2.00"), None);
        assert_eq!(size_at("x GiB"), None);
        assert_eq!(size_at("3 TiB"), Some(3072.0));
        for junk in [
            "Process ",
            "Process 9 has ",
            "GPU ",
            "(GPU ",
            "(GPU 1; ; ; )",
            "Tried to allocate \u{1F600}",
            "GPU 1é has Process 2é has 3 é",
            "(GPU é; é GiB total capacity",
        ] {
            let _ = figures(junk);
        }
    }
}
