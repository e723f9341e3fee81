//! One line of the Prometheus text exposition format read into its parts — the analyzer's
//! `/metrics` parser, the GPU watch's engine metrics, the canary's scrape and the Prometheus
//! answer reader all read sample lines the same way.

/// A sample's value as the exposition writes it: a float, `+Inf`, `-Inf` or `NaN`.
pub fn parse_value(s: &str) -> Option<f64> {
    match s {
        "+Inf" | "Inf" | "inf" | "+inf" => Some(f64::INFINITY),
        "-Inf" | "-inf" => Some(f64::NEG_INFINITY),
        "NaN" | "nan" => Some(f64::NAN),
        _ => s.parse().ok(),
    }
}

/// A parsed sample line: name, sorted labels, value, optional timestamp (ms).
pub type Sample = (String, Vec<(String, String)>, f64, Option<i64>);

/// `name{a="b",c="d"} value [ts]` → parts; `None` when the line is not a sample.
pub fn parse_sample(line: &str) -> Option<Sample> {
    let t = line.trim();
    let name_end = t.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))?;
    let name = &t[..name_end];
    if name.is_empty() {
        return None;
    }
    let mut rest = &t[name_end..];
    let mut labels = Vec::new();
    if let Some(body) = rest.strip_prefix('{') {
        let mut chars = body.char_indices().peekable();
        let mut key = String::new();
        let mut end = None;
        while let Some((i, c)) = chars.next() {
            match c {
                '}' => {
                    end = Some(i);
                    break;
                }
                '=' => {
                    if chars.next().map(|(_, c)| c) != Some('"') {
                        return None;
                    }
                    let mut val = String::new();
                    loop {
                        match chars.next()? {
                            (_, '\\') => match chars.next()?.1 {
                                'n' => val.push('\n'),
                                other => val.push(other),
                            },
                            (_, '"') => break,
                            (_, c) => val.push(c),
                        }
                    }
                    labels.push((std::mem::take(&mut key).trim().to_owned(), val));
                }
                ',' | ' ' => {}
                c => key.push(c),
            }
        }
        rest = &body[end? + 1..];
    }
    let mut parts = rest.split_whitespace();
    let value = parse_value(parts.next()?)?;
    let ts = parts.next().and_then(|t| t.parse().ok());
    crate::sort::sort(&mut labels);
    Some((name.to_owned(), labels, value, ts))
}
