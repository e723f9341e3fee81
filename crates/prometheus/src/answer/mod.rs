//! Prometheus's JSON answers (`/api/v1/series`, `/api/v1/query_range`) read into bounded
//! values, and every other answer classified: an error Prometheus explains (`bad_data` and
//! friends), a server that is not Prometheus, a status without an explanation.
//!
//! The host bounds the body's bytes; here the series and points are bounded, and what was cut is
//! said. The answers are read as they stream (`de.rs`): what the bounds do not keep is skipped,
//! never held, so memory follows `max_series` and `max_points` whatever the body's size. Every
//! string the server chose is redacted with the run's secrets before it is cut.

mod de;

use std::collections::BTreeMap;
use std::io::{BufReader, Read};

use serde::de::DeserializeSeed;

use de::Envelope;
pub use de::{MAX_DISTINCT_INSTANCES, MAX_LABEL_BYTES, MAX_STRING_BYTES, SeriesSets};

use super::PromError;
use triage_base::safe::Secrets;

/// One series of a range answer: its labels (`__name__` included) and `(unix s, value)` points.
#[derive(Clone, Debug, PartialEq)]
pub struct RangeSeries {
    /// Every label, `__name__` included.
    pub labels: BTreeMap<String, String>,
    /// `(unix s, value)`, in time order.
    pub points: Vec<(f64, f64)>,
}

impl RangeSeries {
    /// The metric name (`__name__`), or empty.
    pub fn name(&self) -> &str {
        self.labels.get("__name__").map_or("", String::as_str)
    }

    /// The value of label `k`.
    pub fn label(&self, k: &str) -> Option<&str> {
        self.labels.get(k).map(String::as_str)
    }
}

/// A range answer after the bounds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Matrix {
    /// The series kept.
    pub series: Vec<RangeSeries>,
    /// Series and points dropped by the bounds, and Prometheus's own warnings, in words.
    pub cut: Vec<String>,
    /// Points kept over all series.
    pub points: u64,
}

/// Prometheus warnings listed at most; the rest are counted.
pub const MAX_WARNINGS: usize = 20;

/// Bytes of an answer kept to quote it when it is not Prometheus's.
const HEAD_BYTES: usize = 4096;

/// What the server said, quoted safely: redacted, then cut to 300 characters.
fn quote(secrets: &Secrets, text: &str) -> String {
    secrets.excerpt(text, 300)
}

/// Where an answer's bytes come from: a body held whole (the site), or a stream read as it
/// arrives ([`Stream`], the CLI) — the same seeds read both.
pub(crate) trait Source {
    /// The envelope read, `data` by `seed`: the data and Prometheus's warnings, quoted.
    fn envelope<V, D>(self, status: u16, seed: D, secrets: &Secrets) -> Result<(V, Vec<String>), PromError>
    where
        D: for<'de> DeserializeSeed<'de, Value = V>;
}

impl Source for &[u8] {
    fn envelope<V, D>(self, status: u16, seed: D, secrets: &Secrets) -> Result<(V, Vec<String>), PromError>
    where
        D: for<'de> DeserializeSeed<'de, Value = V>,
    {
        // `from_str`, not `from_slice`: the rest of core and the site parse `&str`, so
        // serde_json's parser is compiled once for both (the site's wasm: smaller). Not UTF-8
        // is not an answer.
        let res = match std::str::from_utf8(self) {
            Ok(text) => {
                let mut de = serde_json::Deserializer::from_str(text);
                Envelope { data: seed, secrets }.deserialize(&mut de).and_then(|a| de.end().map(|()| a))
            }
            Err(_) => Err(serde::de::Error::custom("not UTF-8")),
        };
        settle(status, res, &self[..self.len().min(HEAD_BYTES)], secrets)
    }
}

/// A body read as it arrives, never held whole: the host's reader (its errors — a deadline, a
/// byte bound, a cut connection — come back as [`PromError::Read`]).
pub(crate) struct Stream<R>(pub R);

impl<R: Read> Source for Stream<R> {
    fn envelope<V, D>(self, status: u16, seed: D, secrets: &Secrets) -> Result<(V, Vec<String>), PromError>
    where
        D: for<'de> DeserializeSeed<'de, Value = V>,
    {
        // The first bytes are read before the parse, so an answer that is not JSON can be
        // quoted whatever byte the parse stopped at.
        let mut head = Vec::new();
        let mut body = self.0;
        if let Err(e) = body.by_ref().take(HEAD_BYTES as u64).read_to_end(&mut head) {
            return Err(PromError::Read(e.to_string()));
        }
        let res = {
            let guard = de::Guard::new(std::io::Cursor::new(&head[..]).chain(body));
            let mut de = serde_json::Deserializer::from_reader(BufReader::with_capacity(64 << 10, guard));
            Envelope { data: seed, secrets }.deserialize(&mut de).and_then(|a| de.end().map(|()| a))
        };
        match res {
            Err(e) if e.is_io() => Err(PromError::Read(e.to_string())),
            res => settle(status, res, &head, secrets),
        }
    }
}

/// The envelope judged: Prometheus's error, not Prometheus at all, or the data.
fn settle<V>(
    status: u16,
    res: Result<de::Answer<V>, serde_json::Error>,
    head: &[u8],
    secrets: &Secrets,
) -> Result<(V, Vec<String>), PromError> {
    let a = match res {
        Ok(a) if a.status.is_some() => a,
        _ => return Err(not_an_answer(status, head, secrets)),
    };
    if a.status.as_deref() != Some("success") {
        let kind = a.error_type.unwrap_or_default();
        let message = quote(secrets, a.error.as_deref().unwrap_or("(no message)"));
        return Err(PromError::Rejected { status, error_type: quote(secrets, &kind), message });
    }
    match a.data {
        Some(d) => {
            // Listed up to a bound, the rest counted: a million warnings made a 105 MB report.
            let mut warnings = a.warnings;
            if a.more_warnings > 0 {
                warnings.push(format!("{} more warning(s) not listed", a.more_warnings));
            }
            Ok((d, warnings))
        }
        None => Err(PromError::NotPrometheus(format!("HTTP {status}: status success without data"))),
    }
}

/// A body that is no `/api/v1` answer, quoted from its first bytes.
fn not_an_answer(status: u16, head: &[u8], secrets: &Secrets) -> PromError {
    // gzip's magic: compressed bytes are no text to quote.
    if head.starts_with(&[0x1f, 0x8b]) {
        return PromError::Compressed { status };
    }
    // Redact, then cut: the first 4 KiB are redacted as text cut before it reached us, so a
    // secret straddling byte 4,096 leaves no fragment for the excerpt to pull in.
    let prefix = String::from_utf8_lossy(head);
    let redacted = secrets.redact_truncated(prefix.trim_start());
    let shown = quote(secrets, redacted.trim());
    if (200..300).contains(&status) {
        PromError::NotPrometheus(format!("HTTP {status}, the body is not a Prometheus API answer: {shown:?}"))
    } else {
        PromError::Server { status, message: format!("the body is not a Prometheus API answer: {shown:?}") }
    }
}

/// `/api/v1/series`: what the exchange reads of the label sets (see [`SeriesSets`]), whatever
/// their number.
pub fn parse_series(
    status: u16,
    body: &[u8],
    secrets: &Secrets,
    max_series: usize,
) -> Result<SeriesSets, PromError> {
    series_from(status, body, secrets, max_series)
}

pub(crate) fn series_from(
    status: u16,
    body: impl Source,
    secrets: &Secrets,
    max_series: usize,
) -> Result<SeriesSets, PromError> {
    let mut sets = SeriesSets::new(max_series);
    body.envelope(status, de::SetsSeed(&mut sets), secrets)?;
    sets.finish();
    Ok(sets)
}

/// `/api/v1/query_range` (or `/api/v1/query` with a range vector): a matrix, cut to
/// `max_series` series (the first in label order, so the cut is the same every time) and
/// `max_points` points in all, in that order; memory follows the bounds, not the answer.
pub fn parse_matrix(
    status: u16,
    body: &[u8],
    secrets: &Secrets,
    max_series: usize,
    max_points: u64,
) -> Result<Matrix, PromError> {
    matrix_from(status, body, secrets, max_series, max_points)
}

pub(crate) fn matrix_from(
    status: u16,
    body: impl Source,
    secrets: &Secrets,
    max_series: usize,
    max_points: u64,
) -> Result<Matrix, PromError> {
    let mut keeper = de::Keeper::new(max_series, max_points);
    let (result_type, warnings) = body.envelope(status, de::MatrixSeed(&mut keeper), secrets)?;
    if result_type != "matrix" {
        return Err(PromError::NotPrometheus(format!(
            "a range query answered with result type {:?}, not a matrix",
            quote(secrets, &result_type)
        )));
    }
    keeper.compact();
    let mut m = Matrix {
        cut: warnings.into_iter().map(|w| format!("Prometheus warned: {w}")).collect(),
        ..Matrix::default()
    };
    let total = keeper.total;
    let dropped = total - keeper.long_labels - keeper.kept.len() as u64;
    if dropped > 0 {
        m.cut.push(format!(
            "{dropped} of {total} series dropped: at most {max_series} are read (narrow --selector)"
        ));
    }
    if keeper.long_labels > 0 {
        m.cut.push(format!(
            "{} series skipped: their labels hold more than {} KiB",
            keeper.long_labels,
            MAX_LABEL_BYTES >> 10
        ));
    }
    let (mut dropped_points, mut bad_values) = (0u64, 0u64);
    for (labels, _, k) in keeper.kept {
        dropped_points += k.values - k.bad - k.points.len() as u64;
        bad_values += k.bad;
        m.points += k.points.len() as u64;
        if !k.points.is_empty() {
            m.series.push(RangeSeries { labels, points: k.points });
        }
    }
    if dropped_points > 0 {
        m.cut.push(format!("{dropped_points} points dropped: at most {max_points} are read (shorten the window or widen --step)"));
    }
    if bad_values > 0 {
        m.cut.push(format!("{bad_values} points skipped: not finite numbers"));
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_secrets() -> Secrets {
        Secrets::new()
    }

    #[test]
    fn infinities_are_skipped_and_warnings_bounded() {
        let warnings: Vec<String> = (0..1000).map(|i| format!("\"warning {i}\"")).collect();
        let body = format!(
            r#"{{"status":"success","data":{{"resultType":"matrix","result":[
            {{"metric":{{"__name__":"vllm:generation_tokens_total","instance":"x"}},"values":[[100,"5"],[115,"+Inf"],[130,"-Inf"],[145,"9"]]}}
        ]}},"warnings":[{}]}}"#,
            warnings.join(",")
        );
        let m = parse_matrix(200, body.as_bytes(), &no_secrets(), 10, 1000).unwrap();
        assert_eq!(m.series[0].points, [(100.0, 5.0), (145.0, 9.0)]);
        assert!(m.cut.iter().any(|c| c == "2 points skipped: not finite numbers"), "{:?}", m.cut);
        assert_eq!(
            m.cut.iter().filter(|c| c.starts_with("Prometheus warned: warning")).count(),
            MAX_WARNINGS
        );
        assert!(m.cut.iter().any(|c| c.contains("980 more warning(s) not listed")), "{:?}", m.cut);
    }

    #[test]
    fn a_matrix_is_read_sorted_and_bounded() {
        let body = br#"{"status":"success","data":{"resultType":"matrix","result":[
            {"metric":{"__name__":"b","instance":"x"},"values":[[100,"1"],[115,"2"],[130,"NaN"]]},
            {"metric":{"__name__":"a","instance":"y"},"values":[[100,"5"],[115,"oops"]]}
        ]},"warnings":["partial response"]}"#;
        let m = parse_matrix(200, body, &no_secrets(), 10, 100).unwrap();
        assert_eq!(m.series.len(), 2);
        assert_eq!(m.series[0].name(), "a");
        assert_eq!(m.series[0].points, vec![(100.0, 5.0)]);
        // `NaN` (and `oops`) are no samples the rules can read.
        assert_eq!(m.series[1].points.len(), 2);
        assert_eq!(m.points, 3);
        assert!(m.cut.iter().any(|c| c.contains("partial response")), "{:?}", m.cut);
        assert!(m.cut.iter().any(|c| c.contains("2 points skipped")), "{:?}", m.cut);
        let m = parse_matrix(200, body, &no_secrets(), 1, 100).unwrap();
        assert_eq!(m.series.len(), 1);
        assert!(m.cut.iter().any(|c| c.starts_with("1 of 2 series dropped")), "{:?}", m.cut);
        let m = parse_matrix(200, body, &no_secrets(), 10, 2).unwrap();
        assert_eq!(m.points, 2);
        assert!(m.cut.iter().any(|c| c.contains("points dropped")), "{:?}", m.cut);
    }

    #[test]
    fn errors_are_classified_and_redacted() {
        let s = Secrets::new().with("hunter2-token-value");
        let e = parse_matrix(
            400,
            br#"{"status":"error","errorType":"bad_data","error":"parse error: unexpected hunter2-token-value"}"#,
            &s,
            10,
            10,
        )
        .unwrap_err();
        match &e {
            PromError::Rejected { status: 400, error_type, message } => {
                assert_eq!(error_type, "bad_data");
                assert!(!message.contains("hunter2"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        let e = parse_matrix(200, b"<html>Grafana login</html>", &s, 10, 10).unwrap_err();
        assert!(matches!(e, PromError::NotPrometheus(ref m) if m.contains("Grafana")), "{e:?}");
        let e = parse_matrix(502, b"bad gateway", &s, 10, 10).unwrap_err();
        assert!(matches!(e, PromError::Server { status: 502, .. }), "{e:?}");
        let e = parse_matrix(
            200,
            br#"{"status":"success","data":{"resultType":"vector","result":[]}}"#,
            &s,
            10,
            10,
        )
        .unwrap_err();
        assert!(matches!(e, PromError::NotPrometheus(_)), "{e:?}");
        let e = parse_series(200, br#"{"status":"success"}"#, &s, 10).unwrap_err();
        assert!(matches!(e, PromError::NotPrometheus(_)), "{e:?}");
        let ok = parse_series(200, br#"{"status":"success","data":[{"__name__":"up","job":"x"}]}"#, &s, 10)
            .unwrap();
        assert_eq!((ok.total, ok.instances), (1, 1));
        assert_eq!(ok.kept, [(String::new(), 1, false)]);
        // gzip where JSON was expected: said so, and no bytes dumped.
        let gz = [0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xab, 0xae, 0x05, 0x00];
        for status in [200, 502] {
            let e = parse_matrix(status, &gz, &s, 10, 10).unwrap_err();
            assert_eq!(e, PromError::Compressed { status });
            assert!(e.to_string().contains("gzip-compressed") && !e.to_string().contains('\u{fffd}'), "{e}");
        }
    }

    /// Gives its bytes a few at a time, as a network does.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.1 = self.1 % 7 + 1;
            let n = self.0.len().min(buf.len()).min(self.1);
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    fn streamed(body: &[u8], max_series: usize, max_points: u64) -> Result<Matrix, PromError> {
        matrix_from(200, Stream(Trickle(body, 0)), &no_secrets(), max_series, max_points)
    }

    /// The streaming reader keeps exactly what sorting the whole answer and cutting it keeps,
    /// whatever the series' order and the keys' order, streamed or whole.
    #[test]
    fn streaming_keeps_what_sort_then_cut_keeps() {
        // 40 series in a scrambled order, 1–9 points each, some keys in reverse order.
        let mut series = Vec::new();
        for i in 0..40u64 {
            let j = (i * 17 + 5) % 40;
            let values: Vec<String> =
                (0..(j % 9 + 1)).map(|k| format!("[{},\"{}\"]", 100 + k * 15, j * 10 + k)).collect();
            let metric = format!(r#""metric":{{"__name__":"m","instance":"i{j:02}"}}"#);
            let values = format!(r#""values":[{}]"#, values.join(","));
            series.push(if i % 3 == 0 {
                format!("{{{values},{metric}}}")
            } else {
                format!("{{{metric},{values}}}")
            });
        }
        let body = format!(
            r#"{{"data":{{"result":[{}],"resultType":"matrix"}},"status":"success"}}"#,
            series.join(",")
        );
        for (max_series, max_points) in [(100, 1000), (7, 1000), (40, 30), (5, 12), (1, 1), (0, 10)] {
            let whole = parse_matrix(200, body.as_bytes(), &no_secrets(), max_series, max_points).unwrap();
            assert_eq!(streamed(body.as_bytes(), max_series, max_points).unwrap(), whole);
            // Expected: sorted by instance, the first max_series, points filled in that order.
            let (mut room, mut n) = (max_points, 0);
            for (s, j) in whole.series.iter().zip(0u64..) {
                assert_eq!(s.label("instance"), Some(format!("i{j:02}").as_str()));
                let want = (j % 9 + 1).min(room);
                assert_eq!(s.points.len() as u64, want, "{max_series} {max_points} {j}");
                assert_eq!(s.points[0], (100.0, (j * 10) as f64));
                room -= want;
                n += 1;
            }
            assert_eq!(n, max_series.min(40).min(whole.series.len()));
            assert_eq!(whole.points, max_points - room);
        }
    }

    #[test]
    fn series_sets_keep_the_first_whole_instances_that_fit() {
        // Instance k has k % 4 + 1 sets; engines on even instances; arrival order scrambled.
        let mut sets = Vec::new();
        for i in 0..30u32 {
            let k = (i * 7 + 3) % 30;
            for n in 0..(k % 4 + 1) {
                let name = if k % 2 == 0 { "vllm:num_requests_running" } else { "DCGM_FI_DEV_SM_CLOCK" };
                sets.push(format!(r#"{{"__name__":"{name}","instance":"n{k:02}","x":"{n}"}}"#));
            }
        }
        let body = format!(r#"{{"status":"success","data":[{}]}}"#, sets.join(","));
        for max_series in [1, 2, 9, 10, 40, 1000] {
            let got = parse_series(200, body.as_bytes(), &no_secrets(), max_series).unwrap();
            let streamed =
                series_from(200, Stream(Trickle(body.as_bytes(), 0)), &no_secrets(), max_series).unwrap();
            assert_eq!(got, streamed);
            assert_eq!((got.total, got.instances), (sets.len(), 30));
            let (mut sum, mut want) = (0, Vec::new());
            for k in 0..30u32 {
                let n = (k % 4 + 1) as usize;
                if sum + n > max_series {
                    break;
                }
                sum += n;
                want.push((format!("n{k:02}"), n, k % 2 == 0));
            }
            assert_eq!(got.kept, want, "{max_series}");
        }
    }

    #[test]
    fn a_streamed_answer_is_bounded_and_its_failures_named() {
        let long = format!(
            r#"{{"status":"success","data":{{"resultType":"matrix","result":[{{"metric":{{"a":"{}"}},"values":[]}}]}}}}"#,
            "x".repeat(MAX_STRING_BYTES + 10)
        );
        let e = streamed(long.as_bytes(), 10, 10).unwrap_err();
        assert!(matches!(&e, PromError::Read(m) if m.contains("longer than 1 MiB")), "{e:?}");
        // Held whole, the same answer is read, its long labels skipped and said.
        let m = parse_matrix(200, long.as_bytes(), &no_secrets(), 10, 10).unwrap();
        assert!(
            m.cut.iter().any(|c| c.contains("1 series skipped: their labels hold more than 16 KiB")),
            "{:?}",
            m.cut
        );
        // Not JSON, streamed: quoted from its first bytes.
        let e =
            matrix_from(200, Stream(Trickle(b"<html>Grafana</html>", 0)), &no_secrets(), 1, 1).unwrap_err();
        assert!(matches!(&e, PromError::NotPrometheus(m) if m.contains("Grafana")), "{e:?}");
        // The host's own reading error comes back as it said it.
        struct Fails;
        impl Read for Fails {
            fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("the deadline passed"))
            }
        }
        let e = matrix_from(200, Stream(Fails), &no_secrets(), 1, 1).unwrap_err();
        assert_eq!(e, PromError::Read("the deadline passed".into()));
    }
}
