//! Streaming JSON: objects are collected as they close, whatever the line breaks (one line,
//! pretty-printed, cut), and each closed object is read as the tool that writes it would:
//! vLLM / SGLang flat results, aiperf's metric objects, guidellm's benchmarks.

use super::aiperf::{aiperf_metric, aiperf_put};
use super::guidellm::guidellm_metric;
use super::vllm::vllm_json_key;
use super::{BenchParser, MAX_DEPTH, MAX_SCALARS, stat_name};
use crate::parsers::Cx;
use crate::report::EvidenceLine;

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Scalar {
    Num(f64),
    Str(String),
}

#[derive(Debug, Default)]
pub(super) struct Frame {
    array: bool,
    /// The key this container sits under (`""` at the root or inside an array).
    label: String,
    scalars: Vec<(String, Scalar, EvidenceLine)>,
}

impl Frame {
    fn num(&self, key: &str) -> Option<f64> {
        self.scalars.iter().find(|(k, _, _)| k == key).and_then(|(_, v, _)| match v {
            Scalar::Num(x) => Some(*x),
            Scalar::Str(s) => s.parse().ok(),
        })
    }

    fn text(&self, key: &str) -> Option<&str> {
        self.scalars.iter().find(|(k, _, _)| k == key).and_then(|(_, v, _)| match v {
            Scalar::Str(s) => Some(s.as_str()),
            Scalar::Num(_) => None,
        })
    }
}

/// A closed object and where it sat.
pub(super) struct Closed {
    frame: Frame,
    /// Labels of the enclosing containers, outermost first.
    ancestors: Vec<String>,
    /// The enclosing container is an array.
    in_array: bool,
}

#[derive(Default)]
pub(super) struct Json {
    pub(super) frames: Vec<Frame>,
    /// Containers opened beyond `MAX_DEPTH` (counted, not kept).
    pub(super) overflow: usize,
    pub(super) key: Option<String>,
}

impl Json {
    fn value(&mut self, v: Scalar, e: &EvidenceLine) {
        if self.frames.is_empty() {
            // The section began inside an object (its `{` went to another section): read on.
            self.frames.push(Frame::default());
        }
        let key = self.key.take();
        let top = self.frames.last_mut().expect("pushed above");
        if let (false, Some(k)) = (top.array, key)
            && top.scalars.len() < MAX_SCALARS
        {
            top.scalars.push((k, v, e.clone()));
        }
    }

    pub(super) fn open(&mut self, array: bool) {
        let label = self.key.take().unwrap_or_default();
        if self.frames.len() >= MAX_DEPTH {
            self.overflow += 1;
        } else {
            self.frames.push(Frame { array, label, scalars: Vec::new() });
        }
    }

    fn close(&mut self, out: &mut Vec<Closed>) {
        self.key = None;
        if self.overflow > 0 {
            self.overflow -= 1;
            return;
        }
        if let Some(frame) = self.frames.pop() {
            out.push(Closed {
                ancestors: self.frames.iter().map(|f| f.label.clone()).collect(),
                in_array: self.frames.last().is_some_and(|f| f.array),
                frame,
            });
        }
    }

    /// Read one line; objects that closed on it are appended to `out`.
    pub(super) fn feed(&mut self, line: &str, e: &EvidenceLine, out: &mut Vec<Closed>) {
        let b = line.as_bytes();
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'{' => self.open(false),
                b'[' => self.open(true),
                b'}' | b']' => self.close(out),
                b'"' => {
                    let (s, end) = json_string(line, i);
                    let mut j = end;
                    while j < b.len() && b[j].is_ascii_whitespace() {
                        j += 1;
                    }
                    if j < b.len() && b[j] == b':' {
                        self.key = Some(s);
                        i = j + 1;
                    } else {
                        self.value(Scalar::Str(s), e);
                        i = end;
                    }
                    continue;
                }
                b'-' | b'0'..=b'9' | b't' | b'f' | b'n' | b'N' | b'I' => {
                    let end = line[i..].find([',', '}', ']', ' ', '\t']).map_or(b.len(), |e| i + e);
                    let word = &line[i..end];
                    match word.parse::<f64>() {
                        Ok(x) => self.value(Scalar::Num(x), e),
                        // true / false / null: a value, nothing to keep.
                        Err(_) => self.key = None,
                    }
                    i = end.max(i + 1);
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
    }

    /// Close whatever is still open (a truncated or cut JSON).
    pub(super) fn finish(&mut self, out: &mut Vec<Closed>) {
        self.overflow = 0;
        while !self.frames.is_empty() {
            self.close(out);
        }
    }
}

/// A JSON string at `start` (the quote): decoded (simple escapes) and the index after it.
fn json_string(line: &str, start: usize) -> (String, usize) {
    let b = line.as_bytes();
    let mut out = String::new();
    let mut i = start + 1;
    let mut run = i;
    while i < b.len() {
        match b[i] {
            b'"' => {
                out.push_str(&line[run..i]);
                return (out, i + 1);
            }
            b'\\' if i + 1 < b.len() && b[i + 1].is_ascii() => {
                out.push_str(&line[run..i]);
                out.push(match b[i + 1] {
                    b'n' => '\n',
                    b't' => '\t',
                    c => char::from(c),
                });
                i += 2;
                run = i;
            }
            _ => i += 1,
        }
    }
    out.push_str(&line[run.min(b.len())..]);
    (out, b.len())
}

impl BenchParser {
    pub(super) fn closed(&mut self, cx: &mut Cx<'_>, c: Closed) {
        let f = &c.frame;
        let parent = c.ancestors.last().map_or("", String::as_str);
        let grandparent = c.ancestors.len().checked_sub(2).map_or("", |i| c.ancestors[i].as_str());
        // vLLM / SGLang result: flat `mean_ttft_ms` … keys.
        if f.scalars.iter().any(|(k, _, _)| vllm_json_key(k).is_some()) {
            let sglang = f.scalars.iter().any(|(k, _, _)| k.contains("e2e_latency"));
            self.run.tool.get_or_insert(if sglang { "sglang" } else { "vllm" });
            for (k, v, e) in &f.scalars {
                let Scalar::Num(x) = v else { continue };
                let name = match k.as_str() {
                    "completed"
                    | "failed"
                    | "request_throughput"
                    | "request_goodput"
                    | "output_throughput"
                    | "total_token_throughput"
                    | "total_input_tokens"
                    | "total_output_tokens"
                    | "max_concurrency"
                    | "num_prompts" => k.clone(),
                    "duration" => "duration_s".to_owned(),
                    "concurrency" => "concurrency.mean".to_owned(),
                    "max_output_tokens_per_s" => "peak_output_throughput".to_owned(),
                    "max_concurrent_requests" => "peak_concurrency".to_owned(),
                    _ => match vllm_json_key(k) {
                        Some(n) => n,
                        None => continue,
                    },
                };
                self.run.put(name, *x, e);
            }
            if let (Some(n), Some(done), None) = (f.num("num_prompts"), f.num("completed"), f.num("failed"))
                && n >= done
                && let Some((_, _, e)) = f.scalars.iter().find(|(k, _, _)| k == "completed")
            {
                let e = e.clone();
                self.run.put("failed".to_owned(), n - done, &e);
            }
        }
        // aiperf / genai-perf export: `"time_to_first_token": {"unit": "ms", "avg": …, "p99": …}`.
        if aiperf_metric(&f.label).is_some() && f.scalars.iter().any(|(k, _, _)| k == "avg" || k == "p99") {
            let unit = f.text("unit").map(str::to_owned);
            for (k, v, e) in &f.scalars {
                if let Scalar::Num(x) = v {
                    aiperf_put(&mut self.run, &f.label, unit.as_deref(), k, *x, e);
                }
            }
        }
        // guidellm report.
        let guidellm_stats =
            |status: &str, metric: &str| guidellm_metric(metric).filter(|(_, _, want, _)| *want == status);
        let stats = if f.label == "percentiles" {
            guidellm_stats(parent, grandparent)
        } else {
            guidellm_stats(&f.label, parent)
        };
        if let Some((base, scale, _, note)) = stats {
            for (k, v, e) in &f.scalars {
                let (Scalar::Num(x), Some(stat)) = (v, stat_name(k)) else { continue };
                // The percentiles' p50 is the median already read from the summary.
                if f.label == "percentiles" && stat == "median" {
                    continue;
                }
                let name = match base {
                    "request_throughput" | "output_throughput" | "total_token_throughput"
                        if stat == "mean" =>
                    {
                        base.to_owned()
                    }
                    "request_throughput" | "output_throughput" | "total_token_throughput" => continue,
                    _ => format!("{base}.{stat}"),
                };
                self.run.put(name, x * scale, e);
            }
            self.run.tool = Some("guidellm");
            if let Some(n) = note {
                self.run.notes.insert(n);
            }
        }
        if f.label == "request_totals" {
            for (key, name) in
                [("successful", "completed"), ("errored", "failed"), ("incomplete", "incomplete")]
            {
                if let (Some(x), Some((_, _, e))) = (f.num(key), f.scalars.iter().find(|(k, _, _)| k == key))
                {
                    let e = e.clone();
                    self.run.put(name.to_owned(), x, &e);
                }
            }
        }
        if f.label == "strategy"
            && let Some(kind) = f.text("type_")
        {
            self.run.label.get_or_insert_with(|| kind.to_owned());
        }
        // guidellm: one element of `benchmarks` closed — one run.
        if c.in_array && parent == "benchmarks" && !self.run.is_empty() {
            self.run.tool = Some("guidellm");
            self.flush(cx);
        }
    }

    pub(super) fn json_line(&mut self, cx: &mut Cx<'_>, no: usize, t: &str) {
        let e = cx.evidence(no, t);
        let mut closed = Vec::new();
        self.json.feed(t, &e, &mut closed);
        for c in closed {
            self.closed(cx, c);
        }
    }
}
