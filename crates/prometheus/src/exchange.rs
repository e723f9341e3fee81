//! The conversation with Prometheus, without the transport: what to POST, what to do with each
//! answer. The CLI (reqwest) and the site (the browser's `fetch`) both drive this, so they ask
//! the same questions, cut the same way and read the answers with the same bounds.
//!
//! 1. [`Exchange::start`] checks the selector and the window and gives the `/api/v1/series`
//!    request (the count of matching series bounds the range query before it is asked).
//! 2. Its answer gives the `/api/v1/query` request for the series' own samples over the
//!    window's recent slice (a raw range vector, see `samples.rs`) for the families: whole
//!    instances kept, in name order, while they fit `max_series`.
//! 3. Its answer gives the scrape interval and the `/api/v1/query_range` request for the
//!    window: the step never finer than the interval, widened when the points would not fit.
//! 4. Its answer gives, when engines were found, the range request for their `up` and
//!    `process_start_time_seconds` (asked apart: `or` drops a right-hand series whose labels,
//!    name aside, equal a left-hand one's, and `up` carries exactly an engine gauge's labels),
//!    read within what is left of the bounds.
//!
//! [`Exchange::answered`] takes each answer and gives the next request, or `None` when the
//! window is read; the analyzer's replay then analyses [`Exchange::matrix`] with
//! [`Exchange::asked`] (as often as asked: the site reads it again in another language).

use super::answer::{self, Matrix, Source};
use super::query::{self, Window};
use super::samples;
use super::{Limits, PromError, QueryRecord};
use triage_base::safe::Secrets;

/// What the host asked and where: the report's `prometheus` input, less what the answers give.
#[derive(Clone, Debug)]
pub struct Asked {
    /// Base URL without credentials.
    pub url: String,
    /// The user's selector as given.
    pub selector: String,
    /// The window used (after fitting).
    pub window: Window,
    /// Every question asked.
    pub queries: Vec<QueryRecord>,
    /// Notes from the host and the planning (the step widened, series cut before asking).
    pub cut: Vec<String>,
    /// Unix seconds from which the matrix holds the series' own samples (the raw slice); before
    /// it, points at steps. `end` when nothing was read raw.
    pub samples_from_s: f64,
    /// The scrape interval learned from those samples ([`samples::interval`]); `None` when no
    /// series had two.
    pub interval_s: Option<f64>,
}

/// One POST to make: `{base}{path}` with `form` as an `application/x-www-form-urlencoded` body,
/// its answer read to at most `max_body` bytes (the host may hold it to less).
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// The API path (`/api/v1/series`, `/api/v1/query_range`).
    pub path: &'static str,
    /// The form body, URL-encoded.
    pub form: String,
    /// Most bytes of the answer to read.
    pub max_body: usize,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Stage {
    Series,
    Samples,
    Range,
    Live,
    Read,
}

/// Where the conversation stands (see the module's steps).
#[derive(Clone, Debug)]
pub struct Exchange {
    base: String,
    selector: String,
    limits: Limits,
    user: Vec<query::Matcher>,
    matcher: String,
    window: Window,
    expr: String,
    queries: Vec<QueryRecord>,
    cut: Vec<String>,
    stage: Stage,
    /// The engines' liveness matcher, asked after the range (step 4).
    live: Option<String>,
    /// Engines the liveness matcher names: its answer may hold two series for each.
    live_engines: usize,
    /// The first instance alone was more than `max_series`, so which engines are read is known
    /// only from the range answer: the liveness matcher is made from it.
    live_from_range: bool,
    /// Series the range query is expected to answer (step 2's count).
    expected: usize,
    /// The raw slice's length (step 2) and its answer, merged into the range's (step 3).
    slice_s: f64,
    /// The scrape interval the slice showed (step 3), handed to the analysis.
    interval_s: Option<f64>,
    samples: Matrix,
    matrix: Matrix,
}

impl Exchange {
    /// Check `selector` and `window` before anything is sent; `base` is the server's base URL
    /// without credentials (the host checks it), as cited in the report and its links.
    pub fn start(
        base: &str,
        selector: &str,
        window: Window,
        limits: Limits,
    ) -> Result<(Exchange, Request), PromError> {
        let user = query::parse_selector(selector)?;
        window.fitted(1, limits.max_points)?;
        let matcher = query::series_matcher(&user);
        let form = series_form(&matcher, &window);
        let ex = Exchange {
            base: base.trim_end_matches('/').to_owned(),
            selector: selector.to_owned(),
            limits,
            user,
            expr: matcher.clone(),
            matcher,
            window,
            queries: Vec::new(),
            cut: Vec::new(),
            stage: Stage::Series,
            live: None,
            live_engines: 0,
            live_from_range: false,
            expected: 0,
            slice_s: 0.0,
            interval_s: None,
            samples: Matrix::default(),
            matrix: Matrix::default(),
        };
        // The answer streams through a reader that keeps only what the exchange reads of each
        // label set: no bound of its own beyond the host's (--max-body-mib).
        Ok((ex, Request { path: "/api/v1/series", form, max_body: usize::MAX }))
    }

    /// The answer to the last request, held whole: the next request, or `None` when the
    /// window is read.
    pub fn answered(
        &mut self,
        status: u16,
        body: &[u8],
        secrets: &Secrets,
    ) -> Result<Option<Request>, PromError> {
        self.step(status, body, secrets)
    }

    /// The answer to the last request, read as it arrives from `body` and never held whole:
    /// memory follows the bounds (`max_series`, `max_points`), not the answer's size. The
    /// reader's own errors (a deadline, a byte bound) end it as [`PromError::Read`].
    pub fn answered_from<R: std::io::Read>(
        &mut self,
        status: u16,
        body: R,
        secrets: &Secrets,
    ) -> Result<Option<Request>, PromError> {
        self.step(status, answer::Stream(body), secrets)
    }

    fn step<S: Source>(
        &mut self,
        status: u16,
        body: S,
        secrets: &Secrets,
    ) -> Result<Option<Request>, PromError> {
        let w = self.window;
        let stage = std::mem::replace(&mut self.stage, Stage::Read);
        match stage {
            Stage::Series => {
                let next = self.series_answered(status, body, secrets)?;
                self.stage = Stage::Samples;
                Ok(Some(next))
            }
            Stage::Samples => {
                let next = self.samples_answered(status, body, secrets)?;
                self.stage = Stage::Range;
                Ok(Some(next))
            }
            Stage::Range => {
                let lim = self.limits;
                let points_left = lim.max_points.saturating_sub(self.samples.points);
                self.matrix = answer::matrix_from(status, body, secrets, lim.max_series, points_left)?;
                let expr = self.expr.clone();
                self.record(&expr, self.matrix.series.len());
                let from_s = w.end_s - self.slice_s;
                samples::merge(&mut self.matrix, std::mem::take(&mut self.samples), from_s);
                if self.live_from_range {
                    self.live_from_read();
                }
                let Some(live) = &self.live else { return Ok(None) };
                let form = range_form(live, &w);
                self.stage = Stage::Live;
                Ok(Some(Request { path: "/api/v1/query_range", form, max_body: usize::MAX }))
            }
            Stage::Live => {
                let m = &mut self.matrix;
                // Two series per engine whatever the families took (`Limits::max_series`).
                let series_left =
                    self.limits.max_series.saturating_sub(m.series.len()).max(2 * self.live_engines);
                let points_left = self.limits.max_points.saturating_sub(m.points);
                let more = answer::matrix_from(status, body, secrets, series_left, points_left)?;
                let n = more.series.len();
                m.series.extend(more.series);
                m.points += more.points;
                m.cut.extend(more.cut);
                let live = self.live.clone().unwrap_or_default();
                self.record(&live, n);
                Ok(None)
            }
            Stage::Read => Ok(None),
        }
    }

    fn record(&mut self, expr: &str, series: usize) {
        self.queries.push(QueryRecord {
            api: "/api/v1/query_range".into(),
            expr: expr.to_owned(),
            graph_url: query::graph_url(&self.base, expr, &self.window),
            series,
        });
    }

    fn series_answered(
        &mut self,
        status: u16,
        body: impl Source,
        secrets: &Secrets,
    ) -> Result<Request, PromError> {
        let max_series = self.limits.max_series;
        let sets = answer::series_from(status, body, secrets, max_series)?;
        let w = self.window;
        if sets.total == 0 {
            return Err(PromError::Empty(format!(
                "nothing matched {} between {} and {} (check --selector, the window, and that Prometheus scrapes the engines and the DCGM exporter)",
                self.matcher,
                query::iso(w.start_s),
                query::iso(w.end_s)
            )));
        }
        let mut expected = sets.total;
        let cut = sets.total > max_series;
        if sets.long_instances > 0 {
            self.cut.push(format!(
                "{} series have an instance name longer than {} KiB: they are not read",
                sets.long_instances,
                answer::MAX_LABEL_BYTES >> 10
            ));
        }
        if cut {
            // Whole instances are kept, in name order, until the bound is reached (the answer
            // reader kept only those).
            let n: usize = sets.kept.iter().map(|(_, n, _)| n).sum();
            if sets.kept.is_empty() {
                self.live_from_range = true;
                self.cut.push(format!(
                    "{} series match; the first instance alone has more than --max-series {max_series}: the range answer is cut",
                    sets.total
                ));
            } else {
                let alternatives: Vec<String> =
                    sets.kept.iter().map(|(i, _, _)| query::regex_literal(i)).collect();
                self.expr = format!(
                    "{},instance=~\"{}\"}}",
                    self.matcher.trim_end_matches('}'),
                    query::escape_value(&alternatives.join("|"))
                );
                let more = if sets.instances_more { "more than " } else { "" };
                self.cut.push(format!(
                    "{} series in {more}{} instances match; {n} series of the first {} instances are read (--max-series {max_series})",
                    sets.total,
                    sets.instances,
                    sets.kept.len(),
                ));
                expected = n;
            }
        }
        // When each engine started and whether Prometheus reached it, for the engines read.
        // (The reader kept every instance when nothing was cut, the ones read when it was;
        // in name order.) When the first instance alone is too many, none is known to be read
        // yet: the range answer says which.
        let engines: Vec<&str> = sets
            .kept
            .iter()
            .filter(|(i, _, engine)| *engine && !i.is_empty())
            .map(|(i, _, _)| i.as_str())
            .collect();
        let live = query::liveness_matcher(&self.user, &engines);
        if live.is_some() {
            expected += 2 * engines.len();
        }
        self.live_engines = if live.is_some() { engines.len() } else { 0 };
        self.queries.push(QueryRecord {
            api: "/api/v1/series".into(),
            expr: self.matcher.clone(),
            graph_url: query::graph_url(&self.base, &self.matcher, &w),
            series: sets.total,
        });
        self.live = live;
        self.expected = expected.min(max_series);
        // Half the points for the slice, as if every series were scraped once a second.
        self.slice_s = samples::slice_seconds(&w, self.expected, self.limits.max_points / 2);
        Ok(Request {
            path: "/api/v1/query",
            form: samples::slice_form(&self.expr, &w, self.slice_s),
            max_body: usize::MAX,
        })
    }

    /// The raw slice read: the scrape interval learned, and the range request with a step no
    /// finer than it.
    fn samples_answered(
        &mut self,
        status: u16,
        body: impl Source,
        secrets: &Secrets,
    ) -> Result<Request, PromError> {
        let lim = self.limits;
        self.samples = answer::matrix_from(status, body, secrets, lim.max_series, lim.max_points / 2)?;
        let mut w = self.window;
        let expr = format!("{}[{}s]", self.expr, query::secs(self.slice_s));
        self.queries.push(QueryRecord {
            api: "/api/v1/query".into(),
            graph_url: query::graph_url(&self.base, &expr, &w),
            expr,
            series: self.samples.series.len(),
        });
        let interval = samples::interval(&self.samples);
        self.interval_s = interval;
        if interval.is_none() && !self.samples.series.is_empty() {
            self.cut.push(format!(
                "no series has two samples in the last {} s: the scrape interval is longer than that, so no counter is judged stopped (widen the window)",
                query::secs(self.slice_s)
            ));
        }
        if let Some(i) = interval
            && i > w.step_s
        {
            let step_s = i.ceil();
            self.cut.push(format!(
                "step {} s → {} s: the series are scraped every {} s, and a finer step only repeats each sample",
                query::secs(w.step_s),
                query::secs(step_s),
                query::secs(i)
            ));
            w.step_s = step_s;
        }
        let points_left = lim.max_points.saturating_sub(self.samples.points).max(1);
        let (w, note) = w.fitted(self.expected, points_left)?;
        self.cut.extend(note);
        self.window = w;
        Ok(Request { path: "/api/v1/query_range", form: range_form(&self.expr, &w), max_body: usize::MAX })
    }

    /// The liveness matcher for the engines the range answer holds (the instances of its engine
    /// series), when the series count could not say which would be read.
    fn live_from_read(&mut self) {
        let mut engines: Vec<&str> = self
            .matrix
            .series
            .iter()
            .filter(|s| query::is_engine_metric(s.name()))
            .filter_map(|s| s.labels.get("instance").map(String::as_str))
            .filter(|i| !i.is_empty())
            .collect();
        triage_base::sort::sort(&mut engines);
        engines.dedup();
        self.live = query::liveness_matcher(&self.user, &engines);
        self.live_engines = if self.live.is_some() { engines.len() } else { 0 };
    }

    /// The series read: the window's points, the recent slice's own samples in place of its
    /// steps.
    pub fn matrix(&self) -> &Matrix {
        &self.matrix
    }

    /// What was asked, for the analysis of [`Exchange::matrix`].
    pub fn asked(&self, secrets: &Secrets) -> Asked {
        // The queries were built from the server's raw label values (the instance filter under
        // --max-series, the liveness matcher): what the report shows of them is redacted, and
        // the graph link is made from what is shown.
        let queries = self
            .queries
            .iter()
            .map(|q| {
                let expr = secrets.redact(&q.expr).into_owned();
                let graph_url = if expr == q.expr {
                    q.graph_url.clone()
                } else {
                    query::graph_url(&self.base, &expr, &self.window)
                };
                QueryRecord { expr, graph_url, ..q.clone() }
            })
            .collect();
        Asked {
            url: self.base.clone(),
            selector: self.selector.clone(),
            window: self.window,
            queries,
            cut: self.cut.clone(),
            samples_from_s: self.window.end_s - self.slice_s,
            interval_s: self.interval_s,
        }
    }
}

fn series_form(matcher: &str, w: &Window) -> String {
    format!(
        "match%5B%5D={}&start={}&end={}",
        query::encode(matcher),
        query::secs(w.start_s),
        query::secs(w.end_s)
    )
}

fn range_form(expr: &str, w: &Window) -> String {
    format!(
        "query={}&start={}&end={}&step={}",
        query::encode(expr),
        query::secs(w.start_s),
        query::secs(w.end_s),
        query::secs(w.step_s)
    )
}

/// A time as `--from`/`--to` or a link's `from=`/`to=` give it: unix seconds (or ms — Grafana's
/// `${__from}` —, µs, ns, told apart by magnitude) or RFC 3339.
pub fn parse_time(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let parsed = match t.parse::<f64>() {
        Ok(x) => triage_base::time::from_number(x),
        Err(_) => triage_base::time::parse_iso(t),
    };
    parsed.ok_or_else(|| {
        format!(
            "expected unix seconds or milliseconds, or an RFC 3339 time (2026-12-04T10:00:00Z), got {:?}",
            t.chars().take(80).collect::<String>()
        )
    })
}

/// A step as written on the command line or the page: `15s`, `1m`, `30` (seconds).
pub fn parse_step(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (num, unit) = match t.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => t.split_at(i),
        None => (t, "s"),
    };
    let mult = match unit {
        "ms" => 0.001,
        "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        _ => {
            return Err(format!(
                "expected a step like 15s, 1m or 30, got {:?}",
                t.chars().take(40).collect::<String>()
            ));
        }
    };
    match num.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x * mult),
        _ => Err(format!(
            "expected a positive step like 15s, 1m or 30, got {:?}",
            t.chars().take(40).collect::<String>()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_steps_and_regexes() {
        assert_eq!(parse_time("1764460800").unwrap(), 1_764_460_800.0);
        assert_eq!(parse_time("1764460800000").unwrap(), 1_764_460_800.0);
        assert_eq!(parse_time("2025-11-30T00:00:00Z").unwrap(), 1_764_460_800.0);
        assert!(parse_time("yesterday").is_err());
        assert!(parse_time("now-1h").is_err());
        assert_eq!(parse_step("15s").unwrap(), 15.0);
        assert_eq!(parse_step("2m").unwrap(), 120.0);
        assert_eq!(parse_step("30").unwrap(), 30.0);
        assert!(parse_step("0s").is_err() && parse_step("5y").is_err() && parse_step("").is_err());
    }

    /// The first instance alone is more than `--max-series`: which engines are read is known only
    /// from the range answer, and their liveness is asked for all the same (two series each,
    /// beyond the families' bound), so a restart or an unreachable target is still told apart.
    #[test]
    fn liveness_of_an_instance_larger_than_the_bound() {
        let w = Window { start_s: 1000.0, end_s: 4600.0, step_s: 15.0 };
        let limits = Limits { max_series: 2, max_points: 2_000_000 };
        let (mut ex, _) = Exchange::start("http://p", "", w, limits).unwrap();
        let s = Secrets::new();
        let sets = br#"{"status":"success","data":[
            {"__name__":"vllm:num_requests_waiting","instance":"a:8000"},
            {"__name__":"vllm:num_requests_running","instance":"a:8000"},
            {"__name__":"vllm:gpu_cache_usage_perc","instance":"a:8000"}]}"#;
        let raw = ex.answered(200, sets, &s).unwrap().unwrap();
        assert_eq!(raw.path, "/api/v1/query");
        assert!(ex.cut[0].contains("the first instance alone"), "{:?}", ex.cut);
        let samples = br#"{"status":"success","data":{"resultType":"matrix","result":[]}}"#;
        let range_req = ex.answered(200, samples, &s).unwrap().unwrap();
        assert_eq!(range_req.path, "/api/v1/query_range");
        let range = br#"{"status":"success","data":{"resultType":"matrix","result":[
            {"metric":{"__name__":"vllm:num_requests_running","instance":"a:8000"},"values":[[1000,"1"],[4600,"1"]]},
            {"metric":{"__name__":"vllm:num_requests_waiting","instance":"a:8000"},"values":[[1000,"0"],[4600,"9"]]},
            {"metric":{"__name__":"vllm:gpu_cache_usage_perc","instance":"a:8000"},"values":[[1000,"0.5"],[4600,"0.9"]]}]}}"#;
        let live = ex.answered(200, range, &s).unwrap().expect("the liveness of the engine read");
        assert!(live.form.contains("up%7Cprocess_start_time_seconds"), "{}", live.form);
        assert!(live.form.contains("instance%3D~%22a%3A8000%22"), "{}", live.form);
        assert_eq!(ex.matrix.series.len(), 2);
        let up = br#"{"status":"success","data":{"resultType":"matrix","result":[
            {"metric":{"__name__":"process_start_time_seconds","instance":"a:8000"},"values":[[1000,"900"],[4600,"900"]]},
            {"metric":{"__name__":"up","instance":"a:8000"},"values":[[1000,"1"],[4600,"1"]]}]}}"#;
        assert_eq!(ex.answered(200, up, &s).unwrap(), None);
        let names: Vec<&str> = ex.matrix.series.iter().map(answer::RangeSeries::name).collect();
        assert_eq!(names.len(), 4, "{names:?}");
        assert!(names.contains(&"up") && names.contains(&"process_start_time_seconds"), "{names:?}");
    }

    #[test]
    fn the_two_requests_and_the_cut() {
        let w = Window { start_s: 1000.0, end_s: 4600.0, step_s: 15.0 };
        let limits = Limits { max_series: 3, max_points: 2_000_000 };
        assert!(matches!(Exchange::start("http://p", "{job=", w, limits), Err(PromError::BadSelector(_))));
        let bad = Window { start_s: 2.0, end_s: 1.0, step_s: 15.0 };
        assert!(matches!(Exchange::start("http://p", "", bad, limits), Err(PromError::BadWindow(_))));
        let (mut ex, first) = Exchange::start("http://p/", r#"{job="vllm"}"#, w, limits).unwrap();
        assert_eq!(first.path, "/api/v1/series");
        assert!(
            first.form.starts_with("match%5B%5D=%7B__name__%3D~")
                && first.form.ends_with("&start=1000&end=4600")
        );
        let s = Secrets::new();
        let empty = br#"{"status":"success","data":[]}"#;
        assert!(matches!(ex.clone().answered(200, empty, &s), Err(PromError::Empty(_))));
        assert!(matches!(
            ex.clone().answered(200, b"<html>login</html>", &s),
            Err(PromError::NotPrometheus(_))
        ));
        // Four series in two instances, three allowed: the first instance's two are read.
        let sets = br#"{"status":"success","data":[
            {"__name__":"vllm:num_requests_waiting","instance":"a:8000"},
            {"__name__":"vllm:num_requests_running","instance":"a:8000"},
            {"__name__":"vllm:num_requests_waiting","instance":"b.x:8000"},
            {"__name__":"vllm:num_requests_running","instance":"b.x:8000"}]}"#;
        let raw = ex.answered(200, sets, &s).unwrap().unwrap();
        // The series' own samples over the recent slice first: a raw range vector at the end.
        assert_eq!(raw.path, "/api/v1/query");
        assert!(raw.form.contains("instance%3D~%22a%3A8000%22"), "{}", raw.form);
        assert!(raw.form.ends_with("%5B900s%5D&time=4600"), "{}", raw.form);
        // Scraped every 60 s (one scrape late, one missed): the step is never finer than that.
        let samples = br#"{"status":"success","data":{"resultType":"matrix","result":[
            {"metric":{"__name__":"vllm:num_requests_waiting","instance":"a:8000"},"values":[[4300,"3"],[4360,"4"],[4421,"9"],[4540,"9"]]}]}}"#;
        let next = ex.answered(200, samples, &s).unwrap().unwrap();
        assert_eq!(next.path, "/api/v1/query_range");
        assert!(next.form.contains("instance%3D~%22a%3A8000%22"), "{}", next.form);
        assert!(next.form.ends_with("&start=1000&end=4600&step=61"), "{}", next.form);
        assert_eq!(ex.cut.len(), 2, "{:?}", ex.cut);
        assert!(ex.cut[1].contains("scraped every 61 s"), "{:?}", ex.cut);
        assert!(ex.queries[0].graph_url.starts_with("http://p/graph?"));
        // The range answer leads to the engines' liveness, for the instance read only.
        let range = br#"{"status":"success","data":{"resultType":"matrix","result":[
            {"metric":{"__name__":"vllm:num_requests_waiting","instance":"a:8000"},"values":[[1000,"0"],[4600,"9"]]}]}}"#;
        let live = ex.answered(200, range, &s).unwrap().unwrap();
        assert_eq!(live.path, "/api/v1/query_range");
        assert!(live.form.contains("up%7Cprocess_start_time_seconds"), "{}", live.form);
        assert!(
            live.form.contains("instance%3D~%22a%3A8000%22") && !live.form.contains("b.x"),
            "{}",
            live.form
        );
        let up = br#"{"status":"success","data":{"resultType":"matrix","result":[
            {"metric":{"__name__":"up","instance":"a:8000"},"values":[[1000,"1"],[4600,"1"]]}]}}"#;
        assert_eq!(ex.answered(200, up, &s).unwrap(), None);
        assert_eq!(ex.queries.len(), 4);
        assert_eq!(ex.matrix.series.len(), 2);
        // The range's points over the slice are replaced by the samples.
        let waiting = &ex.matrix.series[0].points;
        assert_eq!(waiting, &[(1000.0, 0.0), (4300.0, 3.0), (4360.0, 4.0), (4421.0, 9.0), (4540.0, 9.0)]);
        let asked = ex.asked(&s);
        assert_eq!(asked.queries.len(), 4);
        assert_eq!(asked.interval_s, Some(61.0));
    }
}
