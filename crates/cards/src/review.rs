//! Reviewing the deck: what a reviewer keeps between sessions, and what comes next.
//!
//! The memory model is FSRS as the open-spaced-repetition project ships it for Rust
//! ([`rs_fsrs`], its default parameters, short-term learning steps on: a new card answered
//! Again, Hard or Good comes back after 1, 5 or 10 minutes). This module keeps everything
//! around it that a reviewer needs and the scheduler does not do:
//!
//! - [`Progress`] — one card's scheduling state per id, the review log (every rating, oldest
//!   first), suspended and buried cards and the settings; the `triage.cards.progress/v2` file
//!   the site keeps in `localStorage` and exports;
//! - [`Progress::rate`] and [`Progress::undo`] — a rating, and taking the last one back;
//! - [`Progress::queue`] — the next card and the header's counts (new, learning, due) for a
//!   deck, a filter and a time: learning cards that are due, then review cards due today (most
//!   overdue first), then new cards within the day's limit, in [`new_order`];
//! - [`Progress::stats`] — retention and reviews per day over the last 30 days and the due
//!   forecast for the next 30;
//! - [`import`] — a progress file checked field by field (a file that would not round-trip is
//!   refused with the reason), also the first page's v1 file.
//!
//! Time is an argument ([`Clock`]: milliseconds since the Unix epoch and the local time zone's
//! offset), as everywhere in core; days are local calendar days.

use super::{Card, CardKind, Tag};
use rs_fsrs::{FSRS, Parameters, State};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// The progress file's schema name.
pub const SCHEMA: &str = "triage.cards.progress/v2";
/// How many days [`Stats`] looks back and ahead.
pub const STATS_DAYS: usize = 30;
/// A learning card due within this many minutes is shown when nothing else is left today (as
/// Anki's "learn ahead limit").
pub const LEARN_AHEAD_MIN: i64 = 20;
const DAY_MS: i64 = 86_400_000;
const MIN_MS: i64 = 60_000;
/// Reviews or lapses of one card an imported file may claim (rs-fsrs counts them in `i32`).
const MAX_REPS: u32 = 1_000_000;
/// Days an interval may span in an imported file (rs-fsrs caps intervals at 36,500).
const MAX_DAYS: i64 = 100_000;
/// The largest stability (days) kept or imported. FSRS's stability keeps growing past the
/// longest interval (a card answered Easy for decades); a bound far above any real one keeps its
/// arithmetic finite, and [`Progress::rate`] clamps to it so what it saves always imports.
const MAX_STABILITY: f64 = 1e9;
/// Progress files larger than this are refused (a whole year of reviews is ~5 MB).
pub const MAX_FILE_BYTES: usize = 32 << 20;

/// The time a review happens at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clock {
    /// Milliseconds since the Unix epoch.
    pub now_ms: i64,
    /// Minutes the local time zone is behind UTC (JavaScript's `getTimezoneOffset()`: −480 in
    /// Beijing, 300 in New York in winter).
    pub tz_offset_min: i64,
}

impl Clock {
    /// The local calendar day of `ms` (days since 1970-01-01, local).
    pub fn day_of(self, ms: i64) -> i64 {
        (ms - self.tz_offset_min * MIN_MS).div_euclid(DAY_MS)
    }

    /// Today, as [`Clock::day_of`] counts.
    pub fn today(self) -> i64 {
        self.day_of(self.now_ms)
    }
}

/// The four answers, as FSRS and Anki number them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Rating {
    /// Forgotten: the card comes back in minutes.
    Again,
    /// Recalled with effort.
    Hard,
    /// Recalled.
    Good,
    /// Recalled without effort.
    Easy,
}

impl Rating {
    /// The four, in key order (1–4).
    pub const ALL: [Rating; 4] = [Rating::Again, Rating::Hard, Rating::Good, Rating::Easy];

    /// The rating for keys `1`–`4`.
    pub fn from_key(key: &str) -> Option<Rating> {
        match key {
            "1" => Some(Rating::Again),
            "2" => Some(Rating::Hard),
            "3" => Some(Rating::Good),
            "4" => Some(Rating::Easy),
            _ => None,
        }
    }

    fn fsrs(self) -> rs_fsrs::Rating {
        match self {
            Rating::Again => rs_fsrs::Rating::Again,
            Rating::Hard => rs_fsrs::Rating::Hard,
            Rating::Good => rs_fsrs::Rating::Good,
            Rating::Easy => rs_fsrs::Rating::Easy,
        }
    }
}

/// Where a card is in FSRS's cycle.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Never answered.
    #[default]
    New,
    /// Answered, still in its learning steps (minutes apart).
    Learning,
    /// Graduated: scheduled in days.
    Review,
    /// Forgotten after graduating, back in steps.
    Relearning,
}

impl Phase {
    fn to_fsrs(self) -> State {
        match self {
            Phase::New => State::New,
            Phase::Learning => State::Learning,
            Phase::Review => State::Review,
            Phase::Relearning => State::Relearning,
        }
    }

    fn from_fsrs(s: State) -> Phase {
        match s {
            State::New => Phase::New,
            State::Learning => Phase::Learning,
            State::Review => Phase::Review,
            State::Relearning => Phase::Relearning,
        }
    }

    /// Learning or relearning: due in minutes, not days.
    pub fn is_learning(self) -> bool {
        matches!(self, Phase::Learning | Phase::Relearning)
    }
}

/// One card's scheduling state (FSRS's card, times in milliseconds since the epoch).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sched {
    /// Where it is in the cycle.
    pub phase: Phase,
    /// When it is due.
    pub due_ms: i64,
    /// When it was last answered.
    pub last_review_ms: i64,
    /// Days until recall probability falls to 90 %.
    pub stability: f64,
    /// 1 (easiest) to 10 (hardest).
    pub difficulty: f64,
    /// Days between the last two reviews.
    pub elapsed_days: i64,
    /// Days the last review scheduled.
    pub scheduled_days: i64,
    /// Times answered.
    pub reps: u32,
    /// Times forgotten after graduating.
    pub lapses: u32,
}

impl Sched {
    fn to_fsrs(self) -> rs_fsrs::Card {
        rs_fsrs::Card {
            due: datetime(self.due_ms),
            stability: self.stability,
            difficulty: self.difficulty,
            elapsed_days: self.elapsed_days,
            scheduled_days: self.scheduled_days,
            reps: i32::try_from(self.reps).unwrap_or(i32::MAX),
            lapses: i32::try_from(self.lapses).unwrap_or(i32::MAX),
            state: self.phase.to_fsrs(),
            last_review: datetime(self.last_review_ms),
        }
    }

    fn from_fsrs(c: &rs_fsrs::Card) -> Sched {
        Sched {
            phase: Phase::from_fsrs(c.state),
            due_ms: c.due.timestamp_millis(),
            last_review_ms: c.last_review.timestamp_millis(),
            stability: c.stability,
            difficulty: c.difficulty,
            elapsed_days: c.elapsed_days,
            scheduled_days: c.scheduled_days,
            reps: u32::try_from(c.reps).unwrap_or(0),
            lapses: u32::try_from(c.lapses).unwrap_or(0),
        }
    }

    /// A card never answered, as of `now_ms`.
    fn new_at(now_ms: i64) -> Sched {
        Sched {
            phase: Phase::New,
            due_ms: now_ms,
            last_review_ms: now_ms,
            stability: 0.0,
            difficulty: 0.0,
            elapsed_days: 0,
            scheduled_days: 0,
            reps: 0,
            lapses: 0,
        }
    }
}

fn datetime(ms: i64) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default()
}

/// One rating, as the review log keeps it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The card's id.
    pub id: String,
    /// When it was answered, ms since the epoch.
    pub at_ms: i64,
    /// The answer.
    pub rating: Rating,
    /// The phase the card was in before the answer.
    pub phase: Phase,
    /// For numeric cards: whether the typed number was right.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub typed_ok: Option<bool>,
}

/// The reviewer's settings.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// New cards introduced per day.
    pub new_per_day: u32,
    /// The recall probability FSRS schedules for (0.7–0.99).
    pub retention: f64,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings { new_per_day: 20, retention: 0.9 }
    }
}

/// One step [`Progress::undo`] can take back.
#[derive(Clone, Debug, PartialEq)]
enum Step {
    Rated { id: String, before: Option<Sched> },
    Buried { id: String, before: Option<i64> },
    Suspended { id: String, was: bool },
}

/// Everything a reviewer keeps: the `triage.cards.progress/v2` file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    /// [`SCHEMA`].
    pub schema: String,
    /// New cards per day, target retention.
    pub settings: Settings,
    /// Scheduling state by card id (cards never answered are absent).
    pub cards: BTreeMap<String, Sched>,
    /// Every rating, oldest first.
    pub log: Vec<Entry>,
    /// Cards left out of reviews until unsuspended.
    pub suspended: BTreeSet<String>,
    /// Cards left out for the rest of a day: id → the local day they were buried on.
    pub buried: BTreeMap<String, i64>,
    /// What [`Progress::undo`] takes back, last first (this session only: not saved).
    #[serde(skip)]
    undo: Vec<Step>,
}

impl Default for Progress {
    fn default() -> Progress {
        Progress {
            schema: SCHEMA.to_owned(),
            settings: Settings::default(),
            cards: BTreeMap::new(),
            log: Vec::new(),
            suspended: BTreeSet::new(),
            buried: BTreeMap::new(),
            undo: Vec::new(),
        }
    }
}

/// Which cards a session draws from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    /// Only cards with this topic.
    pub tag: Option<Tag>,
    /// Only cards of this kind.
    pub kind: Option<CardKind>,
}

impl Filter {
    /// Whether `card` is in.
    pub fn admits(&self, card: &Card) -> bool {
        self.tag.is_none_or(|t| card.has_tag(t)) && self.kind.is_none_or(|k| card.kind == k)
    }
}

/// The header's counts, as Anki shows them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// New cards still to be introduced today.
    pub new: usize,
    /// Learning cards due now (or within the learn-ahead limit).
    pub learning: usize,
    /// Review cards due today.
    pub due: usize,
}

/// What comes next.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Queue {
    /// The index in the deck of the card to show, if any.
    pub next: Option<usize>,
    /// The counts for the header.
    pub counts: Counts,
}

/// Per-day figures for the progress charts; index 0 is the oldest day (or today, for the
/// forecast).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stats {
    /// Ratings given on each of the last [`STATS_DAYS`] days, today last.
    pub reviews_per_day: Vec<u32>,
    /// Of each day's ratings of graduated cards (phase Review), the share not Again; `None`
    /// when there were none.
    pub retention_per_day: Vec<Option<f64>>,
    /// The same share over the whole window, `None` when there were none.
    pub retention: Option<f64>,
    /// Graduated cards due on each of the next [`STATS_DAYS`] days, today first (overdue cards
    /// count as due today).
    pub forecast: Vec<u32>,
    /// Ratings in the whole log.
    pub reviews: usize,
}

/// The order new cards are introduced in: the deck's order within each kind, kinds taking turns
/// (concept, log, numeric, anatomy, concept, …), so a session mixes kinds from the start.
pub fn new_order(deck: &[Card]) -> Vec<usize> {
    let mut keyed: Vec<(usize, usize, usize)> = Vec::with_capacity(deck.len());
    let mut seen = [0usize; 4];
    for (i, c) in deck.iter().enumerate() {
        let k = CardKind::ALL.iter().position(|k| *k == c.kind).unwrap_or(0);
        keyed.push((seen[k], k, i));
        seen[k] += 1;
    }
    triage_base::sort::sort(&mut keyed);
    keyed.into_iter().map(|(_, _, i)| i).collect()
}

impl Progress {
    /// Answer card `id` with `rating` at `clock`; `typed_ok` is whether a numeric card's typed
    /// number was right.
    pub fn rate(&mut self, id: &str, rating: Rating, typed_ok: Option<bool>, clock: Clock) {
        let before = self.cards.get(id).copied();
        let current = before.unwrap_or_else(|| Sched::new_at(clock.now_ms));
        let next = self.next(current, rating, clock);
        self.cards.insert(id.to_owned(), next);
        self.log.push(Entry {
            id: id.to_owned(),
            at_ms: clock.now_ms,
            rating,
            phase: current.phase,
            typed_ok,
        });
        self.undo.push(Step::Rated { id: id.to_owned(), before });
    }

    /// FSRS with its default parameters and the retention asked for (no fuzz: the same answers
    /// at the same times give the same schedule).
    fn fsrs(&self) -> FSRS {
        FSRS::new(Parameters {
            request_retention: self.settings.retention.clamp(0.7, 0.99),
            enable_fuzz: false,
            ..Parameters::default()
        })
    }

    /// `current` after `rating` at `clock`, by rs-fsrs, with two things settled first:
    ///
    /// - elapsed time is counted in local calendar days, as the queue counts "due today" (and
    ///   as Anki does): rs-fsrs counts whole 24-hour blocks, so a card learnt at 22:00 and
    ///   reviewed the next morning would count 0 days, recall probability 1, and gain nothing;
    /// - a last review later than now (a clock set back, an imported file from a fast clock)
    ///   counts as now: rs-fsrs would take the power of a negative number, and the card's
    ///   stability would be NaN.
    ///
    /// Should rs-fsrs still give a number that is not finite, the card starts again as new.
    fn next(&self, current: Sched, rating: Rating, clock: Clock) -> Sched {
        let mut card = current.to_fsrs();
        if current.phase != Phase::New {
            let days = (clock.today() - clock.day_of(current.last_review_ms)).max(0);
            card.last_review = datetime(clock.now_ms - days * DAY_MS);
        }
        let now = datetime(clock.now_ms);
        let mut next = Sched::from_fsrs(&self.fsrs().next(card, now, rating.fsrs()).card);
        if next.stability.is_finite() && next.difficulty.is_finite() {
            next.stability = next.stability.min(MAX_STABILITY);
            return next;
        }
        let fresh = Sched::new_at(clock.now_ms).to_fsrs();
        Sched::from_fsrs(&self.fsrs().next(fresh, now, rating.fsrs()).card)
    }

    /// How long after `clock` card `id` would be due again after each answer (Again, Hard,
    /// Good, Easy), in milliseconds: the rating buttons' labels.
    pub fn preview(&self, id: &str, clock: Clock) -> [i64; 4] {
        let current = self.cards.get(id).copied().unwrap_or_else(|| Sched::new_at(clock.now_ms));
        Rating::ALL.map(|r| self.next(current, r, clock).due_ms - clock.now_ms)
    }

    /// Leave `id` out for the rest of today.
    pub fn bury(&mut self, id: &str, clock: Clock) {
        let before = self.buried.insert(id.to_owned(), clock.today());
        self.undo.push(Step::Buried { id: id.to_owned(), before });
    }

    /// Suspend `id` (or unsuspend it, with `on` false).
    pub fn suspend(&mut self, id: &str, on: bool) {
        let was = self.set_suspended(id, on);
        self.undo.push(Step::Suspended { id: id.to_owned(), was });
    }

    /// Put `id` in or out of the suspended set; whether it was in.
    fn set_suspended(&mut self, id: &str, on: bool) -> bool {
        if on { !self.suspended.insert(id.to_owned()) } else { self.suspended.remove(id) }
    }

    /// Whether there is something [`Progress::undo`] can take back.
    pub fn can_undo(&self) -> bool {
        !self.undo.is_empty()
    }

    /// Take back the last rating, bury or suspend of this session; returns the card's id.
    pub fn undo(&mut self) -> Option<String> {
        match self.undo.pop()? {
            Step::Rated { id, before } => {
                if let Some(at) = self.log.iter().rposition(|e| e.id == id) {
                    self.log.remove(at);
                }
                match before {
                    Some(s) => self.cards.insert(id.clone(), s),
                    None => self.cards.remove(&id),
                };
                Some(id)
            }
            Step::Buried { id, before } => {
                match before {
                    Some(d) => self.buried.insert(id.clone(), d),
                    None => self.buried.remove(&id),
                };
                Some(id)
            }
            Step::Suspended { id, was } => {
                self.set_suspended(&id, was);
                Some(id)
            }
        }
    }

    /// New cards introduced on `day` (their first rating was that day).
    fn introduced_on(&self, day: i64, clock: Clock) -> usize {
        self.log.iter().filter(|e| e.phase == Phase::New && clock.day_of(e.at_ms) == day).count()
    }

    /// Whether `card` may be shown at `clock` under `filter`: admitted, not suspended, not
    /// buried today.
    pub fn takes_part(&self, card: &Card, filter: &Filter, clock: Clock) -> bool {
        self.in_play(card, filter, clock.today())
    }

    fn in_play(&self, card: &Card, filter: &Filter, today: i64) -> bool {
        filter.admits(card) && !self.suspended.contains(&card.id) && self.buried.get(&card.id) != Some(&today)
    }

    /// The next card of `deck` to show under `filter` at `clock`, and the header's counts.
    /// `order` is [`new_order`] of `deck`.
    pub fn queue(&self, deck: &[Card], order: &[usize], filter: &Filter, clock: Clock) -> Queue {
        let today = clock.today();
        let ahead = clock.now_ms + LEARN_AHEAD_MIN * MIN_MS;
        // (due, index) of learning cards due now, learning cards due soon, reviews due today.
        let (mut learning_now, mut learning_soon, mut review) =
            (None::<(i64, usize)>, None::<(i64, usize)>, None);
        let mut counts = Counts::default();
        for (i, card) in deck.iter().enumerate() {
            let Some(s) = self.cards.get(&card.id) else { continue };
            if !self.in_play(card, filter, today) {
                continue;
            }
            let earliest = |slot: &mut Option<(i64, usize)>| {
                if slot.is_none_or(|(d, _)| s.due_ms < d) {
                    *slot = Some((s.due_ms, i));
                }
            };
            if s.phase.is_learning() {
                if s.due_ms <= clock.now_ms {
                    earliest(&mut learning_now);
                    counts.learning += 1;
                } else if s.due_ms <= ahead {
                    earliest(&mut learning_soon);
                    counts.learning += 1;
                }
            } else if s.phase == Phase::Review && clock.day_of(s.due_ms) <= today {
                earliest(&mut review);
                counts.due += 1;
            }
        }
        let room = (self.settings.new_per_day as usize).saturating_sub(self.introduced_on(today, clock));
        let mut fresh = order.iter().copied().filter(|&i| {
            deck.get(i).is_some_and(|c| !self.cards.contains_key(&c.id) && self.in_play(c, filter, today))
        });
        let first_new = if room > 0 { fresh.next() } else { None };
        counts.new = first_new.map_or(0, |_| 1 + fresh.take(room - 1).count());
        let next = learning_now.or(review).map(|(_, i)| i).or(first_new).or(learning_soon.map(|(_, i)| i));
        Queue { next, counts }
    }

    /// The progress charts' figures at `clock`.
    pub fn stats(&self, clock: Clock) -> Stats {
        let today = clock.today();
        let first = today - (STATS_DAYS as i64 - 1);
        let mut reviews_per_day = vec![0u32; STATS_DAYS];
        let mut recalled = vec![(0u32, 0u32); STATS_DAYS];
        for e in &self.log {
            let d = clock.day_of(e.at_ms);
            if d < first || d > today {
                continue;
            }
            let at = (d - first) as usize;
            reviews_per_day[at] += 1;
            if e.phase == Phase::Review {
                recalled[at].1 += 1;
                recalled[at].0 += u32::from(e.rating != Rating::Again);
            }
        }
        let share = |(ok, n): (u32, u32)| (n > 0).then(|| f64::from(ok) / f64::from(n));
        let total = recalled.iter().fold((0, 0), |a, r| (a.0 + r.0, a.1 + r.1));
        let mut forecast = vec![0u32; STATS_DAYS];
        for s in self.cards.values().filter(|s| s.phase == Phase::Review) {
            let d = (clock.day_of(s.due_ms) - today).max(0);
            if let Some(slot) = forecast.get_mut(d as usize) {
                *slot += 1;
            }
        }
        Stats {
            reviews_per_day,
            retention_per_day: recalled.into_iter().map(share).collect(),
            retention: share(total),
            forecast,
            reviews: self.log.len(),
        }
    }

    /// The file to export: pretty JSON, keys in a stable order.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

/// An interval as a rating button shows it: `1 min`, `10 min`, `3 h`, `4 d`, `2.1 mo`, `1.3 y`
/// (`1 分钟`, `3 天`… in Chinese).
pub fn interval_text(ms: i64, lang: super::Lang) -> String {
    let min = (ms.max(0) as f64) / MIN_MS as f64;
    let (n, en, zh) = if min < 60.0 {
        (min.round().max(1.0), "min", "分钟")
    } else if min < 24.0 * 60.0 {
        (min / 60.0, "h", "小时")
    } else if min < 30.0 * 24.0 * 60.0 {
        (min / (24.0 * 60.0), "d", "天")
    } else if min < 365.0 * 24.0 * 60.0 {
        (min / (30.0 * 24.0 * 60.0), "mo", "个月")
    } else {
        (min / (365.0 * 24.0 * 60.0), "y", "年")
    };
    let n = if n < 10.0 && n.fract() > 0.05 { format!("{n:.1}") } else { format!("{:.0}", n.round()) };
    format!("{n} {}", lang.pick(en, zh))
}

/// Why a progress file was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ImportError {
    /// Not JSON, or not this shape; serde's message names the line and column.
    #[error("not a progress file: {0}")]
    Shape(String),
    /// Another schema.
    #[error("schema {0:?} is not {SCHEMA}")]
    Schema(String),
    /// A value out of its range.
    #[error("card {id:?}: {what}")]
    Value {
        /// The card the value belongs to.
        id: String,
        /// What is wrong with it.
        what: String,
    },
    /// A setting out of its range.
    #[error("setting {name}: {what}")]
    Setting {
        /// The setting as the file names it (`settings.retention`).
        name: &'static str,
        /// What is wrong with it.
        what: String,
    },
    /// Larger than [`MAX_FILE_BYTES`].
    #[error("the file is {0} bytes; at most {MAX_FILE_BYTES} are read")]
    TooLarge(usize),
}

/// Text from the file as an error quotes it: redacted, then cut (a card id or a schema name can
/// be anything, of any length).
fn quoted(text: &str) -> String {
    triage_base::safe::cut(&triage_base::safe::redact(text), 120)
}

/// serde's complaint (it names the line and column, and may quote a value from the file).
fn shape(e: serde_json::Error) -> ImportError {
    ImportError::Shape(quoted(&e.to_string()))
}

/// The first page's progress file (v1): FSRS memory per card id, times in days since the epoch.
#[derive(Deserialize)]
struct V1Memory {
    stability: f64,
    difficulty: f64,
    last_review: f64,
    due: f64,
    reviews: u32,
    lapses: u32,
}

/// A progress file: v2 checked field by field, or the first page's v1 file carried over (its
/// cards become graduated cards with the same stability, difficulty and due time; v1 kept no
/// log).
pub fn import(text: &str) -> Result<Progress, ImportError> {
    if text.len() > MAX_FILE_BYTES {
        return Err(ImportError::TooLarge(text.len()));
    }
    let value: serde_json::Value = serde_json::from_str(text).map_err(shape)?;
    match value.get("schema").and_then(|s| s.as_str()) {
        Some(SCHEMA) => {}
        Some(other) => return Err(ImportError::Schema(quoted(other))),
        None if value.as_object().is_some_and(|o| !o.is_empty() && !o.contains_key("cards")) => {
            return v1(value);
        }
        None => return Err(ImportError::Shape("no \"schema\" field".to_owned())),
    }
    let p: Progress = serde_json::from_value(value).map_err(shape)?;
    check(&p)?;
    Ok(p)
}

fn v1(value: serde_json::Value) -> Result<Progress, ImportError> {
    let old: BTreeMap<String, V1Memory> = serde_json::from_value(value).map_err(shape)?;
    let ms = |days: f64| (days * DAY_MS as f64).round() as i64;
    let mut p = Progress::default();
    for (id, m) in old {
        let s = Sched {
            phase: Phase::Review,
            due_ms: ms(m.due),
            last_review_ms: ms(m.last_review),
            stability: m.stability,
            difficulty: m.difficulty,
            elapsed_days: 0,
            scheduled_days: (m.due - m.last_review).round().max(0.0) as i64,
            reps: m.reviews,
            lapses: m.lapses,
        };
        p.cards.insert(id, s);
    }
    check(&p)?;
    Ok(p)
}

fn check(p: &Progress) -> Result<(), ImportError> {
    let bad = |id: &str, what: String| Err(ImportError::Value { id: quoted(id), what });
    let s = &p.settings;
    let setting = |name, what| Err(ImportError::Setting { name, what });
    if !(1..=10_000).contains(&s.new_per_day) {
        return setting("settings.new_per_day", format!("{} new cards a day is not 1–10000", s.new_per_day));
    }
    if !(0.7..=0.99).contains(&s.retention) {
        return setting("settings.retention", format!("{} is not 0.7–0.99", s.retention));
    }
    // Times within ±100,000 days (±274 years) of the epoch: what a review can have, and far
    // inside chrono's range, so the arithmetic on them cannot overflow.
    let time = |ms: i64| (-100_000 * DAY_MS..=100_000 * DAY_MS).contains(&ms);
    for (id, c) in &p.cards {
        if c.phase == Phase::New {
            // A card never answered is absent; one listed as new would never be shown again.
            return bad(id, "phase \"new\": a card with a state has been answered".to_owned());
        }
        if !time(c.due_ms) || !time(c.last_review_ms) {
            return bad(id, "a time is out of range".to_owned());
        }
        if c.last_review_ms > c.due_ms {
            return bad(id, "it was last reviewed after it falls due".to_owned());
        }
        if !(c.stability.is_finite() && c.stability > 0.0 && c.stability <= MAX_STABILITY) {
            return bad(id, format!("stability {} is not 0–{MAX_STABILITY} days", c.stability));
        }
        if !(1.0..=10.0).contains(&c.difficulty) {
            return bad(id, format!("difficulty {} is not 1–10", c.difficulty));
        }
        // Two times within ±MAX_DAYS of the epoch are at most 2 × MAX_DAYS apart.
        let spans = c.elapsed_days.abs().max(c.scheduled_days.abs());
        if c.reps.max(c.lapses) > MAX_REPS || spans > 2 * MAX_DAYS {
            return bad(id, "a count is out of range".to_owned());
        }
    }
    for e in &p.log {
        if !time(e.at_ms) {
            return bad(&e.id, "a review time is out of range".to_owned());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
