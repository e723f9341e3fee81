//! Reading files in bounded pieces: a series's lines and ticks for `replay`, one at a time
//! ([`Lines`], [`Ticks`]: a line that is not UTF-8 or too long is reported with its number and
//! skipped, the rest is read; memory is bounded whatever the file's size), line-checked text
//! for the engine series, and the streams `analyze` hands to
//! the text analyzer — in [`READ_CHUNK`] reads, natively, or cut into sections of a bounded size
//! for the text-analyzer component.

use std::io::{self, Read};

use triage_core::gpu::GpuSample;
use triage_core::gpu::series::SeriesReader;

/// Bytes per read (what `triage analyze` reads at a time too).
pub const READ_CHUNK: usize = 64 * 1024;

/// A line that could not be read as text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadLine {
    /// 1-based.
    pub line: usize,
    pub message: String,
}

/// Most bad lines reported one by one; past it they are counted in one last entry (line 0).
pub const MAX_BAD_LINES: usize = 100;

/// `bytes` as text, line numbers kept: a line that is not UTF-8 becomes an empty line (which
/// the series readers skip) and is reported. No copy when everything is UTF-8.
pub fn text_by_lines(bytes: Vec<u8>) -> (String, Vec<BadLine>) {
    let bytes = match String::from_utf8(bytes) {
        Ok(text) => return (text, Vec::new()),
        Err(e) => e.into_bytes(),
    };
    let mut text = String::with_capacity(bytes.len());
    let mut bad = Vec::new();
    let mut more = 0usize;
    for (i, line) in bytes.split_inclusive(|&b| b == b'\n').enumerate() {
        match std::str::from_utf8(line) {
            Ok(l) => text.push_str(l),
            Err(_) if bad.len() >= MAX_BAD_LINES => {
                more += 1;
                if line.ends_with(b"\n") {
                    text.push('\n');
                }
            }
            Err(e) => {
                let at = e.valid_up_to();
                bad.push(BadLine {
                    line: i + 1,
                    message: format!(
                        "not UTF-8 (byte 0x{:02x} at column {}); line skipped",
                        line.get(at).copied().unwrap_or(0),
                        at + 1
                    ),
                });
                if line.ends_with(b"\n") {
                    text.push('\n');
                }
            }
        }
    }
    if more > 0 {
        bad.push(BadLine { line: 0, message: format!("{more} more lines are not UTF-8; skipped") });
    }
    (text, bad)
}

/// Read `r` to its end in reads of at most [`READ_CHUNK`] bytes, handing each to `sink`; the
/// number of bytes read.
pub fn stream(mut r: impl Read, mut sink: impl FnMut(&[u8])) -> io::Result<u64> {
    let mut buf = vec![0u8; READ_CHUNK];
    let mut total = 0u64;
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        total += n as u64;
        sink(&buf[..n]);
    }
}

/// Longest line of a series read; a longer one is an issue with its number, and skipped.
pub const MAX_LINE: usize = 1 << 20;

/// A line still without an end after this many bytes stops the read: no series has one
/// (`/dev/zero`, a binary file).
pub const MAX_RUN: u64 = 64 << 20;

/// A file's lines, one at a time, each at most [`MAX_LINE`] bytes held: memory is bounded
/// whatever the file's size. A line too long or not UTF-8 comes back as its issue.
pub struct Lines<R> {
    r: io::BufReader<R>,
    buf: Vec<u8>,
    no: usize,
}

impl<R: Read> Lines<R> {
    pub fn new(r: R) -> Self {
        Lines { r: io::BufReader::with_capacity(READ_CHUNK, r), buf: Vec::new(), no: 0 }
    }

    /// The next line (its number, its text or why it was skipped), `None` at the end.
    #[allow(clippy::type_complexity)]
    pub fn next_line(&mut self) -> io::Result<Option<(usize, Result<&str, String>)>> {
        use io::BufRead;
        self.buf.clear();
        let (mut any, mut skipped) = (false, 0u64);
        loop {
            let avail = match self.r.fill_buf() {
                Ok(a) => a,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if avail.is_empty() {
                if !any {
                    return Ok(None);
                }
                break;
            }
            any = true;
            let (piece, used, end) = match avail.iter().position(|&b| b == b'\n') {
                Some(i) => (&avail[..i], i + 1, true),
                None => (avail, avail.len(), false),
            };
            if skipped == 0 && self.buf.len() + piece.len() <= MAX_LINE {
                self.buf.extend_from_slice(piece);
            } else {
                skipped += (self.buf.len() + piece.len()) as u64;
                self.buf.clear();
                if skipped > MAX_RUN {
                    return Err(io::Error::other(format!(
                        "line {} runs on past {} MiB without a line end: this is no series of lines",
                        self.no + 1,
                        MAX_RUN >> 20
                    )));
                }
            }
            self.r.consume(used);
            if end {
                break;
            }
        }
        self.no += 1;
        if skipped > 0 {
            return Ok(Some((self.no, Err(format!("longer than {} KiB; line skipped", MAX_LINE >> 10)))));
        }
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
        }
        Ok(Some((
            self.no,
            std::str::from_utf8(&self.buf).map_err(|e| {
                let at = e.valid_up_to();
                format!(
                    "not UTF-8 (byte 0x{:02x} at column {}); line skipped",
                    self.buf.get(at).copied().unwrap_or(0),
                    at + 1
                )
            }),
        )))
    }
}

/// An NVML series read a tick at a time ([`Lines`] into core's `SeriesReader`), one tick
/// ahead so a replay can pace itself by the next one's time.
pub struct Ticks<R> {
    lines: Lines<R>,
    pub series: SeriesReader,
    next: Option<Vec<GpuSample>>,
    ended: bool,
    /// Ticks handed out.
    pub ticks: u64,
    /// Most GPUs in one tick.
    pub most_gpus: usize,
}

impl<R: Read> Ticks<R> {
    /// Reads up to the first tick (the meta line comes before it).
    pub fn new(r: R) -> io::Result<Self> {
        let mut t = Ticks {
            lines: Lines::new(r),
            series: SeriesReader::default(),
            next: None,
            ended: false,
            ticks: 0,
            most_gpus: 0,
        };
        t.fill()?;
        Ok(t)
    }

    fn fill(&mut self) -> io::Result<()> {
        while self.next.is_none() && !self.ended {
            match self.lines.next_line()? {
                Some((no, Ok(line))) => self.next = self.series.line(no, line),
                Some((no, Err(why))) => self.series.issue(no, why),
                None => {
                    self.ended = true;
                    self.next = self.series.finish();
                }
            }
        }
        Ok(())
    }

    /// The next tick, `None` at the end.
    pub fn next_tick(&mut self) -> io::Result<Option<Vec<GpuSample>>> {
        self.fill()?;
        let t = self.next.take();
        if let Some(t) = &t {
            self.ticks += 1;
            self.most_gpus = self.most_gpus.max(t.len());
        }
        Ok(t)
    }

    /// The tick after the last one handed out.
    pub fn peek(&mut self) -> io::Result<Option<&Vec<GpuSample>>> {
        self.fill()?;
        Ok(self.next.as_ref())
    }

    /// GPUs: the meta's, else the most seen in one tick.
    pub fn gpu_count(&self) -> usize {
        self.series.meta.as_ref().map_or(self.most_gpus, |m| m.gpus.len().max(self.most_gpus))
    }
}

/// One piece of an input, at most the sectioner's bound long.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Section {
    /// 0-based, within its input.
    pub index: usize,
    /// 1-based line number, in the whole input, of the section's first line.
    pub first_line: u64,
    pub text: String,
}

/// Cuts a stream of bytes into [`Section`]s of at most `max` bytes, at line ends (a line longer
/// than `max` is cut at a character boundary). Holds at most `max` + one piece pushed.
pub struct Sectioner {
    max: usize,
    buf: Vec<u8>,
    index: usize,
    first_line: u64,
}

impl Sectioner {
    pub fn new(max: usize) -> Sectioner {
        Sectioner { max: max.max(4), buf: Vec::new(), index: 0, first_line: 1 }
    }

    /// Add bytes; every section that became complete goes to `emit`.
    pub fn push(&mut self, bytes: &[u8], emit: &mut impl FnMut(Section)) {
        self.buf.extend_from_slice(bytes);
        while self.buf.len() > self.max {
            let head = &self.buf[..self.max];
            let cut = match head.iter().rposition(|&b| b == b'\n') {
                Some(i) => i + 1,
                // No line end: cut before a UTF-8 continuation byte never.
                None => (1..=self.max).rev().find(|&i| self.buf[i] & 0xc0 != 0x80).unwrap_or(self.max),
            };
            let rest = self.buf.split_off(cut);
            let piece = std::mem::replace(&mut self.buf, rest);
            self.emit(piece, emit);
        }
    }

    /// The last section, if any bytes are left.
    pub fn finish(mut self, emit: &mut impl FnMut(Section)) {
        if !self.buf.is_empty() || self.index == 0 {
            let piece = std::mem::take(&mut self.buf);
            self.emit(piece, emit);
        }
    }

    fn emit(&mut self, piece: Vec<u8>, emit: &mut impl FnMut(Section)) {
        let lines = piece.iter().filter(|&&b| b == b'\n').count() as u64;
        let text =
            String::from_utf8(piece).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        emit(Section { index: self.index, first_line: self.first_line, text });
        self.index += 1;
        self.first_line += lines;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that yields `total` bytes of log lines (some with multi-byte characters), in
    /// reads of whatever size the caller asks, never holding more than one line.
    struct Lines {
        left: usize,
        pending: Vec<u8>,
        n: u64,
    }

    impl Read for Lines {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            if self.pending.is_empty() {
                if self.left == 0 {
                    return Ok(0);
                }
                self.n += 1;
                let mut line = format!("INFO 12:00:00 line {} temperature 45°C ✓\n", self.n).into_bytes();
                line.truncate(self.left.max(1));
                self.left -= line.len().min(self.left);
                self.pending = line;
            }
            let n = out.len().min(self.pending.len());
            out[..n].copy_from_slice(&self.pending[..n]);
            self.pending.drain(..n);
            Ok(n)
        }
    }

    #[test]
    fn streaming_hands_over_bounded_reads_only() {
        let total = 16 << 20;
        let mut biggest = 0;
        let mut seen = 0u64;
        let read = stream(Lines { left: total, pending: Vec::new(), n: 0 }, |piece| {
            biggest = biggest.max(piece.len());
            seen += piece.len() as u64;
        })
        .unwrap();
        assert_eq!((read, seen), (total as u64, total as u64));
        assert!(biggest <= READ_CHUNK, "{biggest}");
    }

    #[test]
    fn sections_are_bounded_cut_at_line_ends_and_lose_nothing() {
        let max = 256 << 10;
        let mut s = Sectioner::new(max);
        let (mut biggest, mut count, mut lines, mut next_line) = (0, 0, 0u64, 1u64);
        let mut check = |sec: Section| {
            biggest = biggest.max(sec.text.len());
            assert_eq!(sec.index, count);
            assert_eq!(sec.first_line, next_line, "section {count}");
            assert!(sec.text.starts_with("INFO"), "{}", &sec.text[..20]);
            let n = sec.text.matches('\n').count() as u64;
            next_line += n;
            lines += n;
            count += 1;
        };
        let total = 8 << 20;
        stream(Lines { left: total, pending: Vec::new(), n: 0 }, |piece| s.push(piece, &mut check)).unwrap();
        s.finish(&mut check);
        assert!(biggest <= max, "{biggest}");
        assert!(count >= 32, "{count}");
        assert_eq!(lines, next_line - 1);
    }

    #[test]
    fn a_line_longer_than_a_section_is_cut_between_characters() {
        let mut s = Sectioner::new(7);
        let mut out = Vec::new();
        s.push("ééééééé\nab".as_bytes(), &mut |sec| out.push(sec.text));
        s.finish(&mut |sec| out.push(sec.text));
        assert!(out.iter().all(|t| !t.contains('\u{fffd}') && t.len() <= 7), "{out:?}");
        assert_eq!(out.concat(), "ééééééé\nab");
    }

    #[test]
    fn bad_lines_are_reported_by_number_and_the_rest_is_kept() {
        let (text, bad) = text_by_lines(b"one\ntw\xffo\nthree\n\xc3".to_vec());
        assert_eq!(text, "one\n\nthree\n");
        assert_eq!(bad.iter().map(|b| b.line).collect::<Vec<_>>(), [2, 4]);
        assert!(bad[0].message.contains("0xff at column 3"), "{bad:?}");
        let (text, bad) = text_by_lines(b"fine\n".to_vec());
        assert_eq!((text.as_str(), bad.len()), ("fine\n", 0));
        // Reported one by one up to a bound, then counted.
        let (text, bad) = text_by_lines(b"\xff\n".repeat(1000));
        assert_eq!(text, "\n".repeat(1000));
        assert_eq!(bad.len(), MAX_BAD_LINES + 1);
        assert_eq!(
            bad[MAX_BAD_LINES],
            BadLine { line: 0, message: "900 more lines are not UTF-8; skipped".into() }
        );
    }

    #[test]
    fn lines_are_bounded_and_their_issues_numbered() {
        let mut text = b"one\r\n".to_vec();
        text.extend(std::iter::repeat_n(b'x', MAX_LINE + 1));
        text.extend_from_slice(b"\ntw\xffo\nlast");
        let mut lines = super::Lines::new(&text[..]);
        let mut got = Vec::new();
        while let Some((no, line)) = lines.next_line().unwrap() {
            got.push((no, line.map(str::to_owned)));
        }
        assert_eq!(got.len(), 4, "{got:?}");
        assert_eq!(got[0], (1, Ok("one".to_owned())));
        assert_eq!(got[1], (2, Err("longer than 1024 KiB; line skipped".to_owned())));
        assert!(matches!(&got[2], (3, Err(m)) if m.contains("0xff at column 3")), "{got:?}");
        assert_eq!(got[3], (4, Ok("last".to_owned())));
        // No line end at all: an error past the bound, never the whole input held.
        let endless = io::repeat(0).take(MAX_RUN + (1 << 20));
        let e = super::Lines::new(endless).next_line().unwrap_err();
        assert!(e.to_string().contains("line 1 runs on past 64 MiB"), "{e}");
    }
}
