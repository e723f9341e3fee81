//! Failure lines, and the known messages that explain them.
//!
//! Two questions are asked of every line of every input, whatever section it is in:
//!
//! - **Is it an alarm?** A line that an engine or runtime marks as a failure: an `ERROR` /
//!   `CRITICAL` / `FATAL` log level, a `Traceback`, an `XyzError:` line, a Rust panic, an
//!   `Error:` exit, a JSON error body, an HTTP 5xx access line, a capacity figure at or below
//!   zero. Consecutive alarm lines and the traceback lines between them form one [`Block`].
//! - **Is it a known message?** [`SIGNALS`] lists the message templates the engines print (mined
//!   from their own source: `tests/data/catalogue/`), each with the rules that explain it. Rules
//!   read the hits ([`Signals::hits`]) instead of matching text themselves, so one table decides
//!   what a message means.
//!
//! After the rules ran, a block is *claimed* when a rule that fired cites one of its lines, or a
//! signal in it belongs to a rule that fired, or to [`BENIGN`]. Every other block is an error no
//! rule explains: the `unclaimed-error` finding quotes it, and the verdict cannot be HEALTHY.

use super::families::{Family, WORDS};
use super::ids::RuleId;
pub use super::prefixes::strip_prefixes;
pub(crate) use super::prefixes::strip_remembered;
use super::report::EvidenceLine;
use super::text::{Both, finder, number_after, quote_redacted};
use heard::{ANNOUNCE_KEYS, CLIENT_KEYS, STATUS_KEYS, families_of_line};
pub use heard::{FamilyHits, Ports};
use std::collections::BTreeMap;

/// The pseudo-rule of messages that look like failures but are not faults.
pub const BENIGN: RuleId = RuleId::Benign;
/// The rule of errors no other rule explains.
pub const UNCLAIMED: RuleId = RuleId::UnclaimedError;

/// A known message: every needle occurs in the line (the first one is searched for, the others
/// checked after). Needles are literal pieces of the template as the engine's source writes it.
#[derive(Clone, Copy, Debug)]
pub struct Signal {
    /// Stable name, e.g. `vllm-no-cache-blocks`.
    pub id: &'static str,
    /// Literal pieces of the message; the first is searched for, the rest must also occur.
    pub needles: &'static [&'static str],
    /// Rules that explain it (any one firing claims the line), or [`BENIGN`], or [`UNCLAIMED`]
    /// for errors that are known but name no cause by themselves.
    pub rules: &'static [RuleId],
    /// For [`UNCLAIMED`] signals: what to paste or run next, in both languages.
    pub next: Option<Both>,
}

pub use table::SIGNALS;

mod alarm;
mod block;
mod cache;
pub mod heard;
mod scan;
mod table;
#[cfg(test)]
mod tests;
pub(crate) mod vllm_needles;

use alarm::{alarm_of, continues, ok_response, shape_alarm, status_of, work_done};
use scan::{aux, capacity_not_positive};

pub use alarm::{Alarm, alarm};
pub use block::{Block, Hits, MAX_BLOCKS, Seen, Signals, Watch};
pub use cache::ScanCache;
pub use scan::{CAPACITY_SIGNAL, Scan, matches, scan};
