//! Alarm lines gathered into blocks, and what the watch over every line learned for the rules
//! ([`Signals`]).

use super::*;

/// One run of alarm lines (and the traceback lines between them) in one input.
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    /// The input the block is in.
    pub input: String,
    /// Its first line (1-based).
    pub first: usize,
    /// Its last line (1-based, inclusive).
    pub last: usize,
    /// The line that says the most: the last exception line, else the first alarm line.
    pub quote: EvidenceLine,
    /// What made its lines alarms (level, traceback, exception, …).
    pub kinds: Vec<Alarm>,
    /// Signals seen in the block (indexes into [`SIGNALS`]).
    pub signals: Vec<usize>,
    /// [`Family`] bits of the generic words in the block's lines.
    pub families: u32,
    /// Only a traceback's head was seen (the paste was cut before the exception line).
    pub cut: bool,
    /// Alarm lines that carry no known message (a traceback's head, an unknown exception, the
    /// frames of a logged traceback).
    pub unknown_lines: u32,
    quote_rank: u8,
}

/// Most blocks kept; beyond, blocks are counted (and whether any had no known message).
pub const MAX_BLOCKS: usize = 256;
pub(super) const MAX_HITS: usize = 8;

/// Hits of one signal.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Hits {
    /// Lines the signal matched.
    pub count: u64,
    /// The first few lines.
    pub lines: Vec<EvidenceLine>,
}

/// What [`Watch`] learned, for the rules and the claim check.
#[derive(Clone, Debug, Default)]
pub struct Signals {
    /// Signal index → hits.
    pub hits: BTreeMap<usize, Hits>,
    /// Alarm blocks in input order, at most [`MAX_BLOCKS`].
    pub blocks: Vec<Block>,
    /// Blocks beyond [`MAX_BLOCKS`], and how many of them had no known message.
    pub blocks_dropped: u64,
    /// Of the dropped blocks, those with an alarm line that carries no known message.
    pub dropped_unknown: u64,
    /// Signals seen in dropped blocks.
    pub dropped_signals: Vec<usize>,
    /// Lines that show a request served: HTTP access lines (any server or proxy, Gin's) that
    /// answered 2xx to an API call, llama.cpp's and Ollama's timings of a finished generation.
    /// Evidence of health.
    pub ok_responses: u64,
    /// A benchmark's requested rate (`--request-rate N`, `--rate N`, `Traffic request rate: N`),
    /// wherever it was pasted.
    pub requested_rate: Option<(f64, EvidenceLine)>,
    /// The generic words seen ([`crate::families`]), by family: the line's leading family only.
    pub families: BTreeMap<Family, FamilyHits>,
    /// Family hits so far, across inputs: [`FamilyHits::first`] orders families in time.
    pub family_hits: u64,
    /// HTTP access lines of any method and path that answered 2xx (a health check included).
    pub ok_access: u64,
    /// Ports servers announced and ports clients call.
    pub ports: Ports,
}

impl Signals {
    /// Every hit of the signals whose rules include `rule`, in table order.
    pub fn for_rule(&self, rule: RuleId) -> impl Iterator<Item = (&'static Signal, &Hits)> {
        self.hits
            .iter()
            .filter(move |(i, _)| SIGNALS[**i].rules.contains(&rule))
            .map(|(i, h)| (&SIGNALS[*i], h))
    }

    /// Lines of the signals that `rule` explains: up to `max`, in input order.
    pub fn lines_for(&self, rule: RuleId, max: usize) -> Vec<EvidenceLine> {
        self.lines_where(|s| s.rules.contains(&rule), max)
    }

    /// Lines of the signals whose first rule is `rule` (not those it only shares, such as the
    /// OOM message every OOM rule explains): up to `max`, in input order.
    pub fn own_lines(&self, rule: RuleId, max: usize) -> Vec<EvidenceLine> {
        self.lines_where(|s| s.rules.first() == Some(&rule), max)
    }

    fn lines_where(&self, keep: impl Fn(&Signal) -> bool, max: usize) -> Vec<EvidenceLine> {
        let mut lines: Vec<EvidenceLine> = self
            .hits
            .iter()
            .filter(|(i, _)| keep(&SIGNALS[**i]))
            .flat_map(|(_, h)| h.lines.iter().cloned())
            .collect();
        triage_base::sort::sort_by(&mut lines, |a, b| a.input.cmp(&b.input).then(a.line.cmp(&b.line)));
        lines.dedup();
        lines.truncate(max);
        lines
    }

    /// How many lines the signals of `rule` matched.
    pub fn count_for(&self, rule: RuleId) -> u64 {
        self.for_rule(rule).map(|(_, h)| h.count).sum()
    }

    /// Was signal `id` seen?
    pub fn seen(&self, id: &str) -> Option<&Hits> {
        self.hits.iter().find(|(i, _)| SIGNALS[**i].id == id).map(|(_, h)| h)
    }
}

/// What [`Watch::line`] learnt of a line that the parsers can use instead of reading it again.
#[derive(Clone, Copy, Debug)]
pub struct Seen<'l> {
    /// The line without the prefixes people paste ([`strip_prefixes`]).
    pub bare: &'l str,
    /// Bits of the vLLM parser's needles that occur in the line.
    pub vllm: u64,
    /// The line may hold a figure of llama.cpp or Ollama ([`crate::parsers::llama`]).
    pub llama: bool,
}

/// The per-input state of the alarm watch.
#[derive(Debug, Default)]
pub struct Watch {
    cache: ScanCache,
    /// The process or rank prefix of the last line that had one (see [`strip_remembered`]).
    prefix: Vec<u8>,
    open: Option<Block>,
    /// A traceback head block closed before its exception line: joins the next block.
    pending_head: Option<Block>,
}

impl Watch {
    /// Look at one line (ANSI already stripped). Returns what the parsers may reuse.
    pub fn line<'l>(&mut self, out: &mut Signals, input: &str, no: usize, line: &'l str) -> Seen<'l> {
        let t = strip_remembered(&mut self.prefix, line);
        let (scan, shape_alarm) = self.cache.scan(t, line);
        let found = &scan.signals;
        for &i in found {
            let hits = out.hits.entry(i).or_default();
            hits.count += 1;
            if hits.lines.len() < MAX_HITS {
                hits.lines.push(EvidenceLine { input: input.into(), line: no, text: quote_redacted(line) });
            }
        }
        let seen =
            Seen { bare: t, vllm: scan.vllm, llama: scan.aux & (aux::LLAMA | aux::GIN | aux::WORK) != 0 };
        if t.bytes().all(|b| b.is_ascii_whitespace()) {
            return seen;
        }
        if scan.aux & aux::RATE != 0
            && out.requested_rate.is_none()
            && let Some(rate) = ["--request-rate ", "--request-rate=", "--rate ", "Traffic request rate: "]
                .iter()
                .find_map(|k| number_after(line, k))
        {
            out.requested_rate = Some((rate, EvidenceLine::quoted(input, no, line)));
        }
        let status = status_of(line, &scan);
        let post = scan.aux & aux::POST != 0 || scan.aux & aux::GIN != 0 && line.contains("| POST ");
        if post && status.map_or_else(|| ok_response(line), |c| (200..300).contains(&c))
            || scan.aux & aux::WORK != 0 && work_done(line)
        {
            out.ok_responses += 1;
        }
        if status.is_some_and(|c| (200..300).contains(&c)) {
            out.ok_access += 1;
        }
        out.ports.line(input, no, line, scan.aux & aux::ANNOUNCE != 0, scan.aux & aux::CLIENT != 0);
        // A line with a known message is the exact rules' (a benign one is no failure); only a
        // known message that names no cause leaves its words to the generic layer.
        let known = found.iter().any(|&i| SIGNALS[i].rules != [UNCLAIMED]);
        let status_key = scan.aux & aux::STATUS != 0;
        let failure = families_of_line(out, (input, no, line), scan.families, (status, status_key), known);
        let alarm = alarm_of(shape_alarm, status, &scan);
        match (alarm, self.open.as_mut()) {
            (Some(kind), Some(block)) => {
                block.extend(no, kind, line, found);
            }
            (None, Some(block)) if continues(t) => {
                block.last = no;
                block.add_signals(found);
            }
            (Some(kind), None) => {
                let mut block = self.pending_head.take().unwrap_or_else(|| Block::new(input, no));
                block.extend(no, kind, line, found);
                self.open = Some(block);
            }
            (None, Some(_)) => self.close(out),
            (None, None) => {}
        }
        // The line joined the open block (if it did not, the block was closed): its words too.
        if let Some(block) = self.open.as_mut() {
            block.families |= failure;
        }
        seen
    }

    /// The input ended.
    pub fn end(&mut self, out: &mut Signals) {
        self.close(out);
        if let Some(head) = self.pending_head.take() {
            keep(out, head);
        }
    }

    fn close(&mut self, out: &mut Signals) {
        let Some(mut block) = self.open.take() else { return };
        block.cut = block.kinds.iter().all(|k| *k == Alarm::TracebackHead);
        if block.cut {
            if let Some(earlier) = self.pending_head.replace(block) {
                keep(out, earlier);
            }
            return;
        }
        keep(out, block);
    }
}

impl Block {
    fn new(input: &str, no: usize) -> Block {
        Block {
            input: input.to_owned(),
            first: no,
            last: no,
            quote: EvidenceLine { input: input.into(), line: no, text: String::new() },
            quote_rank: 0,
            unknown_lines: 0,
            kinds: Vec::new(),
            signals: Vec::new(),
            families: 0,
            cut: false,
        }
    }

    fn extend(&mut self, no: usize, kind: Alarm, line: &str, found: &[usize]) {
        self.last = no;
        if found.is_empty() {
            self.unknown_lines += 1;
        }
        if !self.kinds.contains(&kind) {
            self.kinds.push(kind);
        }
        // The quote: the last exception or exit line, else the first line with a known
        // message, else the first alarm line.
        let rank = match kind {
            Alarm::Exception | Alarm::Exit => 3,
            _ if !found.is_empty() => 2,
            _ => 1,
        };
        if rank > self.quote_rank || rank == 3 {
            self.quote = EvidenceLine::quoted(&self.input, no, line);
            self.quote_rank = rank;
        }
        self.add_signals(found);
    }

    fn add_signals(&mut self, found: &[usize]) {
        for &i in found {
            if !self.signals.contains(&i) {
                self.signals.push(i);
            }
        }
    }
}

pub(super) fn keep(out: &mut Signals, block: Block) {
    if out.blocks.len() < MAX_BLOCKS {
        out.blocks.push(block);
    } else {
        out.blocks_dropped += 1;
        if block.signals.is_empty() {
            out.dropped_unknown += 1;
        }
        for i in block.signals {
            if !out.dropped_signals.contains(&i) {
                out.dropped_signals.push(i);
            }
        }
    }
}
