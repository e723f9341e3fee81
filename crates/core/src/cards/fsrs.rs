//! FSRS-4.5 scheduling with its published default weights; time is an argument (days as `f64`,
//! any origin), like everywhere in core.

use serde::{Deserialize, Serialize};

/// The published default weights of FSRS-4.5.
pub const W: [f64; 17] = [
    0.4872, 1.4003, 3.7145, 13.8206, 5.1618, 1.2298, 0.8975, 0.031, 1.6474, 0.1367, 1.0461, 2.1072, 0.0793,
    0.3246, 1.587, 0.2272, 2.8755,
];
const DECAY: f64 = -0.5;
/// (0.9^(1/DECAY) − 1): makes R = 0.9 when t = S.
const FACTOR: f64 = 19.0 / 81.0;

/// The four answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Rating {
    /// Forgotten: the card comes back within the session.
    Again = 1,
    /// Recalled with effort.
    Hard = 2,
    /// Recalled.
    Good = 3,
    /// Recalled without effort.
    Easy = 4,
}

/// What the scheduler remembers about one card. Times are days (any origin).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    /// Days until recall probability falls to 90 %.
    pub stability: f64,
    /// 1 (easiest) to 10 (hardest).
    pub difficulty: f64,
    /// When the card was last answered, days.
    pub last_review: f64,
    /// When it is next due, days.
    pub due: f64,
    /// Times answered.
    pub reviews: u32,
    /// Times answered `Again` (forgotten).
    pub lapses: u32,
}

/// Probability of recall after `elapsed` days at stability `s`.
pub fn retrievability(elapsed: f64, s: f64) -> f64 {
    (1.0 + FACTOR * elapsed.max(0.0) / s.max(0.01)).powf(DECAY)
}

/// Days until recall probability falls to `retention`.
pub fn interval(s: f64, retention: f64) -> f64 {
    (s / FACTOR * (retention.powf(1.0 / DECAY) - 1.0)).max(0.0)
}

fn init_difficulty(g: f64) -> f64 {
    (W[4] - (g - 3.0) * W[5]).clamp(1.0, 10.0)
}

/// Schedule the next review after answering `rating` at `now` (days), aiming at
/// `retention` (0.9 is FSRS's default). Again and the first review of a new card come back
/// within the session (10 minutes).
pub fn review(prev: Option<Memory>, rating: Rating, now: f64, retention: f64) -> Memory {
    let g = rating as u8 as f64;
    let (stability, difficulty, reviews, lapses) = match prev {
        None => (W[rating as usize - 1], init_difficulty(g), 1, u32::from(rating == Rating::Again)),
        Some(m) => {
            let r = retrievability(now - m.last_review, m.stability);
            let d = m.difficulty - W[6] * (g - 3.0);
            let d = (W[7] * init_difficulty(4.0) + (1.0 - W[7]) * d).clamp(1.0, 10.0);
            let s = if rating == Rating::Again {
                W[11]
                    * m.difficulty.powf(-W[12])
                    * ((m.stability + 1.0).powf(W[13]) - 1.0)
                    * (W[14] * (1.0 - r)).exp()
            } else {
                let hard = if rating == Rating::Hard { W[15] } else { 1.0 };
                let easy = if rating == Rating::Easy { W[16] } else { 1.0 };
                m.stability
                    * (1.0
                        + W[8].exp()
                            * (11.0 - m.difficulty)
                            * m.stability.powf(-W[9])
                            * ((W[10] * (1.0 - r)).exp() - 1.0)
                            * hard
                            * easy)
            };
            (s.max(0.01), d, m.reviews + 1, m.lapses + u32::from(rating == Rating::Again))
        }
    };
    let due = if rating == Rating::Again {
        now + 10.0 / 1440.0
    } else {
        now + interval(stability, retention).max(1.0)
    };
    Memory { stability, difficulty, last_review: now, due, reviews, lapses }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fsrs_behaves() {
        // At t = S recall probability is the target 90 %.
        assert!((retrievability(10.0, 10.0) - 0.9).abs() < 1e-9);
        assert!((interval(10.0, 0.9) - 10.0).abs() < 1e-9);
        let good = review(None, Rating::Good, 0.0, 0.9);
        assert!((good.stability - 3.7145).abs() < 1e-9);
        assert!((good.due - 3.7145).abs() < 1e-6);
        let again = review(None, Rating::Again, 0.0, 0.9);
        assert!(again.due < 0.01);
        // Answering Good on time grows the interval; Easy grows it more; Again shrinks stability.
        let g2 = review(Some(good), Rating::Good, good.due, 0.9);
        let e2 = review(Some(good), Rating::Easy, good.due, 0.9);
        let a2 = review(Some(good), Rating::Again, good.due, 0.9);
        assert!(
            g2.stability > good.stability && e2.stability > g2.stability && a2.stability < good.stability
        );
        assert_eq!((a2.reviews, a2.lapses), (2, 1));
        assert!(g2.difficulty >= 1.0 && g2.difficulty <= 10.0);
    }
}
