//! Prometheus's JSON answers (`/api/v1/series`, `/api/v1/query_range`) read into bounded
//! values, and every other answer classified: an error Prometheus explains (`bad_data` and
//! friends), a server that is not Prometheus, a status without an explanation.
//!
//! The host bounds the body's bytes; here the series and points are bounded, and what was cut is
//! said. Every string the server chose is redacted with the run's secrets before it is cut.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::PromError;
use crate::safe::Secrets;

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

#[derive(Deserialize)]
struct Envelope<T> {
    status: String,
    #[serde(default = "Option::default")]
    data: Option<T>,
    #[serde(default, rename = "errorType")]
    error_type: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    warnings: Vec<String>,
}

#[derive(Deserialize)]
struct MatrixData {
    #[serde(rename = "resultType")]
    result_type: String,
    result: Vec<RawSeries>,
}

#[derive(Deserialize)]
struct RawSeries {
    metric: BTreeMap<String, String>,
    #[serde(default)]
    values: Vec<(f64, String)>,
}

/// Prometheus warnings listed at most; the rest are counted.
pub const MAX_WARNINGS: usize = 20;

/// What the server said, quoted safely: redacted, then cut to 300 characters.
fn quote(secrets: &Secrets, text: &str) -> String {
    secrets.excerpt(text, 300)
}

/// Read the envelope every `/api/v1` answer has; anything else is not Prometheus.
fn envelope<'a, T: Deserialize<'a>>(
    status: u16,
    body: &'a [u8],
    secrets: &Secrets,
) -> Result<(T, Vec<String>), PromError> {
    // `from_str`, not `from_slice`: the rest of core and the site parse `&str`, so serde_json's
    // parser is compiled once for both (the site's wasm: smaller). Not UTF-8 is not an answer.
    let parsed =
        std::str::from_utf8(body).map_err(|_| ()).and_then(|t| serde_json::from_str(t).map_err(|_| ()));
    let env: Envelope<T> = match parsed {
        Ok(e) => e,
        Err(_) => {
            // Redact, then cut: the first 4 KiB are redacted as text cut before it reached us, so
            // a secret straddling byte 4,096 leaves no fragment for the excerpt to pull in.
            let prefix = String::from_utf8_lossy(&body[..body.len().min(4096)]);
            let redacted = secrets.redact_truncated(prefix.trim_start());
            let shown = quote(secrets, redacted.trim());
            return Err(if (200..300).contains(&status) {
                PromError::NotPrometheus(format!(
                    "HTTP {status}, the body is not a Prometheus API answer: {shown:?}"
                ))
            } else {
                PromError::Server {
                    status,
                    message: format!("the body is not a Prometheus API answer: {shown:?}"),
                }
            });
        }
    };
    if env.status != "success" {
        let kind = env.error_type.unwrap_or_default();
        let message = quote(secrets, env.error.as_deref().unwrap_or("(no message)"));
        return Err(PromError::Rejected { status, error_type: quote(secrets, &kind), message });
    }
    match env.data {
        Some(d) => {
            // Listed up to a bound, the rest counted: a million warnings made a 105 MB report.
            let mut warnings: Vec<String> =
                env.warnings.iter().take(MAX_WARNINGS).map(|w| quote(secrets, w)).collect();
            if env.warnings.len() > MAX_WARNINGS {
                warnings.push(format!("{} more warning(s) not listed", env.warnings.len() - MAX_WARNINGS));
            }
            Ok((d, warnings))
        }
        None => Err(PromError::NotPrometheus(format!("HTTP {status}: status success without data"))),
    }
}

/// `/api/v1/series`: the label sets, at most `max_series` of them (the rest counted).
pub fn parse_series(
    status: u16,
    body: &[u8],
    secrets: &Secrets,
) -> Result<Vec<BTreeMap<String, String>>, PromError> {
    envelope::<Vec<BTreeMap<String, String>>>(status, body, secrets).map(|(d, _)| d)
}

/// `/api/v1/query_range`: a matrix, cut to `max_series` series (in label order, so the cut is
/// the same every time) and `max_points` points in all.
pub fn parse_matrix(
    status: u16,
    body: &[u8],
    secrets: &Secrets,
    max_series: usize,
    max_points: u64,
) -> Result<Matrix, PromError> {
    let (data, warnings): (MatrixData, _) = envelope(status, body, secrets)?;
    if data.result_type != "matrix" {
        return Err(PromError::NotPrometheus(format!(
            "a range query answered with result type {:?}, not a matrix",
            quote(secrets, &data.result_type)
        )));
    }
    let mut raw = data.result;
    crate::sort::sort_by(&mut raw, |a, b| a.metric.cmp(&b.metric));
    let mut m = Matrix {
        cut: warnings.into_iter().map(|w| format!("Prometheus warned: {w}")).collect(),
        ..Matrix::default()
    };
    let total = raw.len();
    if total > max_series {
        m.cut.push(format!(
            "{} of {total} series dropped: at most {max_series} are read (narrow --selector)",
            total - max_series
        ));
        raw.truncate(max_series);
    }
    let (mut dropped_points, mut bad_values) = (0u64, 0u64);
    for r in raw {
        let room = max_points.saturating_sub(m.points) as usize;
        let mut points = Vec::with_capacity(r.values.len().min(room));
        for (t, v) in r.values {
            if points.len() >= room {
                dropped_points += 1;
                continue;
            }
            match crate::analyze::parsers::prom::parse_value(&v) {
                // ±Inf is no sample of a counter or a gauge the rules read: one `+Inf` counter
                // sample made healthy replicas' counters "rise by inf".
                Some(x) if t.is_finite() && x.is_finite() => points.push((t, x)),
                _ => bad_values += 1,
            }
        }
        m.points += points.len() as u64;
        if !points.is_empty() {
            m.series.push(RangeSeries { labels: r.metric, points });
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
        let e = parse_series(200, br#"{"status":"success"}"#, &s).unwrap_err();
        assert!(matches!(e, PromError::NotPrometheus(_)), "{e:?}");
        let ok =
            parse_series(200, br#"{"status":"success","data":[{"__name__":"up","job":"x"}]}"#, &s).unwrap();
        assert_eq!(ok[0]["job"], "x");
    }
}
