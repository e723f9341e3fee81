//! What the line scan hears besides the known messages (`signals/`): the generic families'
//! words (`families.rs`) and the statuses that stand for them, and the ports servers announce and
//! clients call.

use super::Signals;
use crate::families::{Family, is_hint, lead};
use crate::report::EvidenceLine;

/// A status an SDK or a client quotes (`Error code: 401 - {…}`, `status code 404`): its family
/// is read from the number after it ([`status_families`]).
pub(crate) const STATUS_KEYS: &[&str] =
    &["Error code: ", "status code ", "status code: ", "status_code=", "Status code: ", "HTTP error "];

/// A server announcing a port (Triton: `Started HTTPService at 0.0.0.0:8000`, `Started Metrics
/// Service at 0.0.0.0:8002`).
pub(crate) const ANNOUNCE_KEYS: &[&str] =
    &["Service at ", "etrics server listening on ", "etrics server started on "];

/// A client naming the address it calls.
pub(crate) const CLIENT_KEYS: &[&str] =
    &[" -u ", " --url ", " --url=", "base_url", "api_base", " --endpoint ", "BASE_URL="];

/// The generic words of one line (`at`: input, line number, text): `words`, the families its
/// scan found, and those its statuses stand for (`status`: an access line's, and whether an
/// SDK's status key is in it), recorded — none on a line with a known message or one that only
/// suggests; `Started` apart. Returns the bit of the failure family the line leads to.
pub(crate) fn families_of_line(
    out: &mut Signals,
    at: (&str, usize, &str),
    words: u32,
    status: (Option<u16>, bool),
    known: bool,
) -> u32 {
    let (input, no, line) = at;
    let mut families = words | status_families(line, status.0, status.1);
    let started = Family::Started.bit();
    if families & !started != 0 && (known || is_hint(line)) {
        families &= started;
    }
    if families & started != 0 {
        out.family_hit(Family::Started, input, no, line);
    }
    let failure = lead(families);
    if let Some(family) = failure {
        out.family_hit(family, input, no, line);
    }
    failure.map_or(0, Family::bit)
}

/// Ports a server announced at start-up and ports a client named (the first [`MAX_PORTS`] of
/// each).
#[derive(Clone, Debug, Default)]
pub struct Ports {
    /// (port, opened for metrics, the line).
    pub announced: Vec<(u16, bool, EvidenceLine)>,
    /// (port, the line): a client command's or setting's address.
    pub client: Vec<(u16, EvidenceLine)>,
}

/// Ports kept of each kind.
const MAX_PORTS: usize = 16;

/// The ports of `host:port` addresses in `s` (`0.0.0.0:8002`, `localhost:8001`,
/// `http://gpu-3:8000/v1`): a host with a letter or a dot before the colon, so a time
/// (`07:23:26`) is none.
fn ports_in(s: &str) -> impl Iterator<Item = u16> + '_ {
    let b = s.as_bytes();
    memchr::memchr_iter(b':', b).filter_map(move |i| {
        let host =
            b[..i].iter().rev().take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-' | b']'));
        let (mut len, mut named) = (0, false);
        for c in host {
            len += 1;
            named |= c.is_ascii_alphabetic() || matches!(c, b'.' | b']');
        }
        let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        let port = s.get(i + 1..i + 1 + digits)?.parse::<u16>().ok()?;
        (len > 0 && named && (2..=5).contains(&digits) && port >= 80).then_some(port)
    })
}

/// Hits of one generic family.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FamilyHits {
    /// Lines whose words lead to the family.
    pub count: u64,
    /// The first few of them.
    pub lines: Vec<EvidenceLine>,
    /// How many family hits came before this family's first, across every input: the family
    /// with the smallest came first in the paste.
    pub first: u64,
}

/// Lines kept per family.
const MAX_FAMILY_LINES: usize = 4;

impl Signals {
    /// One more line whose words lead to `family`.
    pub(crate) fn family_hit(&mut self, family: Family, input: &str, no: usize, line: &str) {
        let order = self.family_hits;
        self.family_hits += 1;
        let hits = self
            .families
            .entry(family)
            .or_insert_with(|| FamilyHits { first: order, ..FamilyHits::default() });
        hits.count += 1;
        if hits.lines.len() < MAX_FAMILY_LINES {
            hits.lines.push(EvidenceLine::quoted(input, no, line));
        }
    }
}

/// The family an HTTP status stands for: a rejected credential, a path or model not served, an
/// upstream that cannot be reached.
fn family_of_status(code: u16) -> Option<Family> {
    match code {
        401 | 403 => Some(Family::Auth),
        404 => Some(Family::NotFound),
        // 503 is also what a full queue answers (SGLang, Ollama's `server busy`): not this.
        502 | 504 => Some(Family::Unreachable),
        _ => None,
    }
}

/// The families of the statuses in a line: an access line's, or one an SDK or client quotes
/// (`Error code: 401 - {…}`). A 404 for what browsers ask of any server (`/favicon.ico`) is not
/// a path the client was told to use.
pub(crate) fn status_families(line: &str, status: Option<u16>, status_key: bool) -> u32 {
    let mut bits = 0;
    if let Some(f) = status.and_then(family_of_status)
        && !(f == Family::NotFound && (line.contains("/favicon") || line.contains("/robots.txt")))
    {
        bits |= f.bit();
    }
    if status_key {
        for key in STATUS_KEYS {
            if let Some(f) = line
                .find(key)
                .and_then(|i| line[i + key.len()..].get(..3))
                .and_then(|d| d.parse::<u16>().ok())
                .and_then(family_of_status)
            {
                bits |= f.bit();
            }
        }
    }
    bits
}

impl Ports {
    /// Read one line: `announce` when it holds a server's announcement (`Service at `, `metrics
    /// server listening on `), `client` when a client's address setting (`-u `, `--url`,
    /// `base_url`).
    pub(crate) fn line(&mut self, input: &str, no: usize, line: &str, announce: bool, client: bool) {
        if announce && self.announced.len() < MAX_PORTS {
            let metrics = line.contains("etrics");
            for key in ["Service at ", "listening on ", "started on "] {
                if let Some(i) = line.find(key)
                    && let Some(port) = ports_in(&line[i + key.len()..]).next()
                {
                    self.announced.push((port, metrics, EvidenceLine::quoted(input, no, line)));
                    break;
                }
            }
        }
        if client {
            for port in ports_in(line).take(4) {
                if self.client.len() < MAX_PORTS {
                    self.client.push((port, EvidenceLine::quoted(input, no, line)));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_of_addresses_not_times() {
        let ports: Vec<u16> =
            ports_in("I1118 07:23:26.732376 Started Metrics Service at 0.0.0.0:8002").collect();
        assert_eq!(ports, [8002]);
        let ports: Vec<u16> =
            ports_in("-u localhost:8001 --url http://gpu-3:8000/v1 [::1]:9000 at 10:30").collect();
        assert_eq!(ports, [8001, 8000, 9000]);
    }

    #[test]
    fn statuses_stand_for_families() {
        assert_eq!(status_families("x", Some(401), false), Family::Auth.bit());
        assert_eq!(status_families("\"GET /favicon.ico HTTP/1.1\" 404", Some(404), false), 0);
        assert_eq!(
            status_families("openai.NotFoundError: Error code: 404", None, true),
            Family::NotFound.bit()
        );
        // A full queue's 503 is no outage.
        assert_eq!(status_families("x", Some(503), false), 0);
    }
}
