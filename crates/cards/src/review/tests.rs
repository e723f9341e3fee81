//! `cards::review`'s tests: the learning steps, undo, the queue and its counts, filters, stats,
//! export → import, refused files, the v1 file, and a property over random sessions.

use super::*;
use crate::{Card, CardKind, Tag, card};
use proptest::prelude::*;

/// 2026-12-05 09:00 in Beijing (UTC+8).
const T0: i64 = 1_796_432_400_000;
const BEIJING: i64 = -480;

fn at(ms: i64) -> Clock {
    Clock { now_ms: ms, tz_offset_min: BEIJING }
}

fn mins(n: i64) -> i64 {
    n * MIN_MS
}

fn days(n: i64) -> i64 {
    n * DAY_MS
}

fn deck_of(kinds: &[(CardKind, Tag)]) -> Vec<Card> {
    kinds
        .iter()
        .enumerate()
        .map(|(i, (k, t))| {
            card(
                format!("c{i}"),
                *k,
                &[*t],
                (format!("q{i}"), format!("问{i}")),
                (format!("a{i}"), format!("答{i}")),
            )
        })
        .collect()
}

fn plain_deck(n: usize) -> Vec<Card> {
    deck_of(&vec![(CardKind::Concept, Tag::Kv); n])
}

#[test]
fn days_are_local_calendar_days() {
    // 09:00 in Beijing is 01:00 UTC: the same local day until 23:59 Beijing time.
    let c = at(T0);
    assert_eq!(c.day_of(T0 + mins(14 * 60 + 59)), c.today());
    assert_eq!(c.day_of(T0 + mins(15 * 60)), c.today() + 1);
    // Before the epoch too (floor, not truncation).
    assert_eq!(Clock { now_ms: -1, tz_offset_min: 0 }.today(), -1);
}

#[test]
fn a_new_card_goes_through_the_learning_steps_then_graduates() {
    let mut p = Progress::default();
    p.rate("a", Rating::Again, None, at(T0));
    assert_eq!(p.cards["a"].phase, Phase::Learning);
    assert_eq!(p.cards["a"].due_ms, T0 + mins(1));
    p.rate("b", Rating::Hard, None, at(T0));
    assert_eq!(p.cards["b"].due_ms, T0 + mins(5));
    p.rate("c", Rating::Good, None, at(T0));
    assert_eq!(p.cards["c"].due_ms, T0 + mins(10));
    // Good in learning graduates to days.
    p.rate("c", Rating::Good, None, at(T0 + mins(10)));
    let c = p.cards["c"];
    assert_eq!(c.phase, Phase::Review);
    assert!(c.scheduled_days >= 1 && c.due_ms == T0 + mins(10) + days(c.scheduled_days), "{c:?}");
    // Easy on a new card skips the steps.
    p.rate("d", Rating::Easy, None, at(T0));
    assert_eq!(p.cards["d"].phase, Phase::Review);
    assert!(p.cards["d"].scheduled_days > c.scheduled_days);
    // Forgetting a graduated card sends it to relearning and counts a lapse.
    let due = p.cards["d"].due_ms;
    p.rate("d", Rating::Again, None, at(due));
    assert_eq!((p.cards["d"].phase, p.cards["d"].lapses), (Phase::Relearning, 1));
    assert_eq!(p.log.len(), 6);
    assert_eq!(
        p.log[0],
        Entry { id: "a".into(), at_ms: T0, rating: Rating::Again, phase: Phase::New, typed_ok: None }
    );
}

#[test]
fn default_parameters_are_the_projects() {
    // A graduated card answered Good on time: FSRS's default weights give an interval a few times
    // the last (the exact number is rs-fsrs's; this pins that we use it with its defaults).
    let mut p = Progress::default();
    p.rate("x", Rating::Easy, None, at(T0));
    let first = p.cards["x"].scheduled_days;
    let due = p.cards["x"].due_ms;
    p.rate("x", Rating::Good, None, at(due));
    let second = p.cards["x"].scheduled_days;
    assert!(first >= 5 && second > 2 * first, "{first} then {second}");
    // Asking for more retention shortens intervals.
    let mut strict =
        Progress { settings: Settings { retention: 0.97, ..Settings::default() }, ..Progress::default() };
    strict.rate("x", Rating::Easy, None, at(T0));
    assert!(strict.cards["x"].scheduled_days < first);
}

#[test]
fn undo_takes_back_exactly_the_last_step() {
    let mut p = Progress::default();
    p.rate("a", Rating::Good, None, at(T0));
    let before = p.to_json();
    p.rate("b", Rating::Again, Some(false), at(T0 + 1000));
    p.rate("a", Rating::Good, None, at(T0 + mins(11)));
    assert_eq!(p.undo().as_deref(), Some("a"));
    assert_eq!(p.undo().as_deref(), Some("b"));
    assert_eq!(p.to_json(), before);
    p.bury("a", at(T0));
    p.suspend("a", true);
    assert!(p.suspended.contains("a") && p.buried.contains_key("a"));
    p.undo();
    p.undo();
    assert_eq!(p.to_json(), before);
    assert_eq!(p.undo().as_deref(), Some("a"));
    assert!(p.cards.is_empty() && p.log.is_empty());
    assert_eq!(p.undo(), None);
    assert!(!p.can_undo());
}

#[test]
fn new_cards_mix_kinds_and_keep_the_deck_order_within_each() {
    use CardKind::*;
    let d = deck_of(&[
        (Concept, Tag::Kv),
        (Concept, Tag::Oom),
        (Log, Tag::Oom),
        (Numeric, Tag::Kv),
        (Numeric, Tag::Kv),
        (Anatomy, Tag::Engines),
    ]);
    assert_eq!(new_order(&d), vec![0, 2, 3, 5, 1, 4]);
}

#[test]
fn the_queue_shows_learning_then_reviews_then_new_within_the_daily_limit() {
    let d = plain_deck(30);
    let order = new_order(&d);
    let all = Filter::default();
    let mut p = Progress::default();
    let q = p.queue(&d, &order, &all, at(T0));
    assert_eq!(q, Queue { next: Some(0), counts: Counts { new: 20, learning: 0, due: 0 } });
    // c0 learning (due in 10 min), c1 graduated (due in days).
    p.rate("c0", Rating::Good, None, at(T0));
    p.rate("c1", Rating::Easy, None, at(T0));
    let q = p.queue(&d, &order, &all, at(T0 + 1));
    assert_eq!(q, Queue { next: Some(2), counts: Counts { new: 18, learning: 1, due: 0 } });
    // Ten minutes on, the learning card comes first.
    let q = p.queue(&d, &order, &all, at(T0 + mins(10)));
    assert_eq!(q.next, Some(0));
    // The day's limit: 20 new cards introduced, then only the learning card (learn-ahead).
    for i in 2..20 {
        p.rate(&format!("c{i}"), Rating::Easy, None, at(T0 + 2));
    }
    let q = p.queue(&d, &order, &all, at(T0 + 3));
    assert_eq!(q, Queue { next: Some(0), counts: Counts { new: 0, learning: 1, due: 0 } });
    p.rate("c0", Rating::Easy, None, at(T0 + 4));
    assert_eq!(p.queue(&d, &order, &all, at(T0 + 5)).next, None);
    // Tomorrow, 20 new again; when c1 is due it comes before them.
    let due = p.cards["c1"].due_ms;
    let q = p.queue(&d, &order, &all, at(due));
    // The most overdue graduated card first (c0 graduated too, with its own due time).
    let first = if p.cards["c0"].due_ms < due { 0 } else { 1 };
    assert_eq!(q.next, Some(first), "{q:?}");
    assert_eq!(q.counts.new, 10);
    assert!(q.counts.due >= 1);
}

#[test]
fn filters_suspend_and_bury_leave_cards_out() {
    use CardKind::*;
    let d = deck_of(&[(Concept, Tag::Kv), (Numeric, Tag::Kv), (Concept, Tag::Oom)]);
    let order = new_order(&d);
    let mut p = Progress::default();
    let oom = Filter { tag: Some(Tag::Oom), kind: None };
    assert_eq!(
        p.queue(&d, &order, &oom, at(T0)),
        Queue { next: Some(2), counts: Counts { new: 1, learning: 0, due: 0 } }
    );
    let numeric = Filter { tag: None, kind: Some(Numeric) };
    assert_eq!(p.queue(&d, &order, &numeric, at(T0)).next, Some(1));
    p.suspend("c0", true);
    p.bury("c1", at(T0));
    let all = Filter::default();
    assert_eq!(
        p.queue(&d, &order, &all, at(T0)),
        Queue { next: Some(2), counts: Counts { new: 1, learning: 0, due: 0 } }
    );
    // Buried for today only; suspended until unsuspended.
    let tomorrow = at(T0 + days(1));
    assert_eq!(p.queue(&d, &order, &all, tomorrow).next, Some(1));
    p.suspend("c0", false);
    assert_eq!(p.queue(&d, &order, &all, tomorrow).next, Some(0));
}

#[test]
fn stats_count_reviews_retention_and_the_forecast() {
    let mut p = Progress::default();
    p.rate("a", Rating::Easy, None, at(T0 - days(3)));
    p.rate("b", Rating::Easy, None, at(T0 - days(3)));
    p.rate("c", Rating::Good, None, at(T0));
    // Two graduated cards answered today: one recalled, one forgotten.
    p.rate("a", Rating::Good, None, at(T0));
    p.rate("b", Rating::Again, None, at(T0));
    let s = p.stats(at(T0));
    assert_eq!(s.reviews_per_day.len(), STATS_DAYS);
    assert_eq!(s.reviews_per_day[STATS_DAYS - 1], 3);
    assert_eq!(s.reviews_per_day[STATS_DAYS - 4], 2);
    assert_eq!(s.reviews_per_day.iter().sum::<u32>(), 5);
    assert_eq!(s.retention_per_day[STATS_DAYS - 1], Some(0.5));
    assert_eq!(s.retention_per_day[STATS_DAYS - 4], None, "new cards are not recall");
    assert_eq!(s.retention, Some(0.5));
    // Only "a" is graduated now ("b" relearns, "c" learns): one card in the forecast.
    assert_eq!(s.forecast.iter().sum::<u32>(), 1);
    let d = (at(T0).day_of(p.cards["a"].due_ms) - at(T0).today()) as usize;
    assert_eq!(s.forecast[d], 1);
    assert_eq!((p.cards.len(), s.reviews), (3, 5));
}

#[test]
fn export_then_import_restores_the_same_file() {
    let mut p = Progress::default();
    p.settings.new_per_day = 7;
    p.rate("a", Rating::Good, None, at(T0));
    p.rate("n", Rating::Hard, Some(true), at(T0 + 1));
    p.bury("n", at(T0));
    p.suspend("z", true);
    let file = p.to_json();
    let back = import(&file).unwrap();
    assert_eq!(back.to_json(), file);
    assert_eq!(back.cards, p.cards);
    assert_eq!(back.log, p.log);
    assert!(!back.can_undo(), "undo is this session's, not the file's");
}

#[test]
fn imports_that_would_not_round_trip_are_refused_with_the_reason() {
    let good = {
        let mut p = Progress::default();
        p.rate("a", Rating::Easy, None, at(T0));
        p.to_json()
    };
    let e = import("{\"schema\": \"triage.cards.progress/v2\",\n \"cards\": [").unwrap_err();
    assert!(matches!(e, ImportError::Shape(ref m) if m.contains("line 2")), "{e}");
    assert_eq!(import("{\"schema\":\"other/v9\"}").unwrap_err(), ImportError::Schema("other/v9".into()));
    assert!(matches!(import("[1,2]").unwrap_err(), ImportError::Shape(_)));
    let bad = good.replacen("\"difficulty\": ", "\"difficulty\": 11.0, \"x\": ", 1);
    assert!(matches!(import(&bad).unwrap_err(), ImportError::Value { ref id, .. } if id == "a"));
    let bad = good.replace("\"retention\": 0.9", "\"retention\": 2.0");
    assert!(matches!(import(&bad).unwrap_err(), ImportError::Setting { name: "settings.retention", .. }));
    let bad = good.replace("\"rating\": \"easy\"", "\"rating\": \"great\"");
    assert!(matches!(import(&bad).unwrap_err(), ImportError::Shape(_)));
    assert!(matches!(import(&" ".repeat(MAX_FILE_BYTES + 1)).unwrap_err(), ImportError::TooLarge(_)));
}

#[test]
fn the_first_pages_v1_file_is_carried_over() {
    let day = T0 as f64 / DAY_MS as f64;
    let v1 = format!(
        "{{\"rule:kv-leak:why\":{{\"stability\":3.7,\"difficulty\":5.1,\"last_review\":{},\"due\":{},\"reviews\":2,\"lapses\":0}}}}",
        day - 2.0,
        day + 1.7
    );
    let p = import(&v1).unwrap();
    let s = p.cards["rule:kv-leak:why"];
    assert_eq!((s.phase, s.reps, s.stability, s.difficulty), (Phase::Review, 2, 3.7, 5.1));
    assert_eq!(s.due_ms, T0 + (1.7 * DAY_MS as f64).round() as i64);
    assert!(p.log.is_empty());
    // A card answered after the move goes on from that memory.
    let mut p = p;
    p.rate("rule:kv-leak:why", Rating::Good, None, at(s.due_ms));
    assert!(p.cards["rule:kv-leak:why"].stability > 3.7);
}

proptest! {
    /// Whatever is answered in whatever order — the clock going back too (a device clock set
    /// right) — the state stays one `import` accepts, and undoing everything gives back the empty
    /// progress.
    #[test]
    fn any_session_stays_valid_and_undoes_to_nothing(steps in proptest::collection::vec((0usize..4, 0usize..4, -2_000_000i64..5_000_000), 1..60)) {
        let mut p = Progress::default();
        let mut now = T0;
        for (card, rating, gap) in steps {
            now += gap * 1000;
            let before = p.preview(&format!("c{card}"), at(now));
            prop_assert!(before.iter().all(|ms| *ms >= 0), "{before:?}");
            p.rate(&format!("c{card}"), Rating::ALL[rating], None, at(now));
            prop_assert!(import(&p.to_json()).is_ok(), "{}", p.to_json());
        }
        while p.undo().is_some() {}
        prop_assert_eq!(p.to_json(), Progress::default().to_json());
    }
}

#[test]
fn buttons_preview_what_each_answer_would_schedule() {
    let mut p = Progress::default();
    assert_eq!(p.preview("a", at(T0))[..3], [mins(1), mins(5), mins(10)]);
    let before = p.to_json();
    let easy = p.preview("a", at(T0))[3];
    assert_eq!(p.to_json(), before, "a preview changes nothing");
    p.rate("a", Rating::Easy, None, at(T0));
    assert_eq!(p.cards["a"].due_ms - T0, easy);
    use triage_base::lang::Lang;
    assert_eq!(interval_text(mins(1), Lang::En), "1 min");
    assert_eq!(interval_text(mins(90), Lang::En), "1.5 h");
    assert_eq!(interval_text(days(4), Lang::Zh), "4 天");
    assert_eq!(interval_text(days(63), Lang::En), "2.1 mo");
    assert_eq!(interval_text(days(800), Lang::En), "2.2 y");
}

#[test]
fn elapsed_time_is_counted_in_calendar_days_as_due_today_is() {
    // Graduated at 22:00 local, due tomorrow: answered Good at 08:00 or at 22:00 tomorrow, the
    // card has been remembered for one day either way and gains the same.
    let evening = T0 + mins(13 * 60);
    let mut p = Progress::default();
    p.rate("x", Rating::Again, None, at(evening));
    p.rate("x", Rating::Good, None, at(evening + mins(1)));
    let learnt = p.cards["x"];
    assert_eq!((learnt.phase, at(T0).day_of(learnt.due_ms)), (Phase::Review, at(T0).today() + 1));
    let mut morning = p.clone();
    morning.rate("x", Rating::Good, None, at(evening + mins(10 * 60)));
    let mut night = p.clone();
    night.rate("x", Rating::Good, None, at(evening + mins(1) + days(1)));
    assert!(morning.cards["x"].stability > learnt.stability, "reviewed on its day, it gains");
    assert_eq!(morning.cards["x"].stability, night.cards["x"].stability);
}

#[test]
fn a_clock_set_back_leaves_a_card_that_can_still_be_saved() {
    let mut p = Progress::default();
    p.rate("x", Rating::Easy, None, at(T0 + days(200)));
    p.rate("x", Rating::Good, None, at(T0));
    let x = p.cards["x"];
    assert!(x.stability.is_finite() && x.stability > 0.0 && x.due_ms >= T0, "{x:?}");
    assert!(import(&p.to_json()).is_ok());
}

#[test]
fn undo_takes_back_a_second_bury_and_an_unsuspend() {
    let mut p = Progress::default();
    p.bury("a", at(T0 - days(1)));
    p.suspend("b", true);
    let before = p.to_json();
    p.bury("a", at(T0));
    p.suspend("b", false);
    assert!(!p.suspended.contains("b"));
    p.undo();
    p.undo();
    assert_eq!(p.to_json(), before);
}

#[test]
fn imports_that_would_misbehave_later_are_refused_now() {
    let mut p = Progress::default();
    p.rate("a", Rating::Easy, None, at(T0));
    let good = p.to_json();
    assert!(import(&good).is_ok());
    let refused = |from: &str, to: &str| {
        let bad = good.replacen(from, to, 1);
        assert_ne!(bad, good, "{from}");
        assert!(matches!(import(&bad), Err(ImportError::Value { .. })), "{to}: {:?}", import(&bad));
    };
    refused("\"phase\": \"review\"", "\"phase\": \"new\"");
    refused("\"reps\": 1", "\"reps\": 4294967295");
    refused("\"lapses\": 0", "\"lapses\": 4000000");
    refused("\"stability\": ", "\"stability\": 0.0, \"_\": ");
    refused("\"stability\": ", "\"stability\": 1e300, \"_\": ");
    refused("\"stability\": ", "\"stability\": 2e9, \"_\": ");
    // A setting is named as the setting, not as a card with no name.
    for (from, to, named) in [
        (
            "\"new_per_day\": 20",
            "\"new_per_day\": 0",
            "setting settings.new_per_day: 0 new cards a day is not 1–10000",
        ),
        ("\"retention\": 0.9", "\"retention\": 0.5", "setting settings.retention: 0.5 is not 0.7–0.99"),
    ] {
        let e = import(&good.replacen(from, to, 1)).unwrap_err();
        assert_eq!(e.to_string(), named);
        assert!(!e.to_string().contains("card \""), "{e}");
    }
    let due = p.cards["a"].due_ms;
    refused(&format!("\"last_review_ms\": {T0}"), &format!("\"last_review_ms\": {}", due + 1));
    refused(&format!("\"due_ms\": {due}"), "\"due_ms\": 9000000000000000");
    // What an error quotes from the file is redacted and cut.
    let long = format!("sk-{}", "a".repeat(5000));
    let e = import(&format!("{{\"schema\": \"{long}\"}}")).unwrap_err().to_string();
    assert!(e.len() < 400 && !e.contains(&long[..40]), "{e}");
    let mut named = p.clone();
    named.cards.insert(long.clone(), Sched { difficulty: 11.0, ..p.cards["a"] });
    let e = import(&named.to_json()).unwrap_err();
    assert!(matches!(e, ImportError::Value { .. }), "{e}");
    let e = e.to_string();
    assert!(e.len() < 400 && !e.contains(&long[..40]), "{e}");
    // An empty object is neither file: importing it must not wipe the progress.
    assert!(matches!(import("{}"), Err(ImportError::Shape(_))));
    assert!(matches!(import("{\"schema\": \"triage.cards.progress/v2\"}"), Err(ImportError::Shape(_))));
}

proptest! {
    /// Any file `import` accepts can be reviewed on, and what that gives can be saved and read
    /// back: the checks on import are enough for rs-fsrs (no NaN, no overflow, no time it cannot
    /// hold).
    #[test]
    fn whatever_import_accepts_can_be_reviewed_and_saved_again(
        phase in 1usize..4,
        last_day in -100_000i64..100_000,
        ahead in 0i64..100_000,
        stability in prop_oneof![0.001f64..100.0, 100.0f64..1e9],
        difficulty in 1.0f64..10.0,
        reps in 0u32..1_000_000,
        rating in 0usize..4,
        now_day in -1_000i64..40_000,
    ) {
        let phases = [Phase::New, Phase::Learning, Phase::Review, Phase::Relearning];
        let last = last_day * DAY_MS;
        let due = (last_day + ahead).min(100_000) * DAY_MS;
        let s = Sched {
            phase: phases[phase],
            due_ms: due,
            last_review_ms: last,
            stability,
            difficulty,
            elapsed_days: 3,
            scheduled_days: ahead.min(100_000),
            reps,
            lapses: reps / 2,
        };
        let mut p = Progress::default();
        p.cards.insert("x".into(), s);
        prop_assume!(import(&p.to_json()).is_ok());
        let mut p = import(&p.to_json()).unwrap();
        let clock = Clock { now_ms: now_day * DAY_MS + 3_600_000, tz_offset_min: 0 };
        let preview = p.preview("x", clock);
        prop_assert!(preview.iter().all(|ms| *ms >= 0), "{preview:?}");
        p.rate("x", Rating::ALL[rating], None, clock);
        prop_assert!(import(&p.to_json()).is_ok(), "{:?} → {:?}", s, p.cards["x"]);
    }
}
