//! Deterministic pseudo-random numbers and the distributions workloads draw from.
//!
//! xoshiro256** seeded through SplitMix64, written here so the simulator needs no dependency.
//! The transcendental functions (`ln`, `exp`) are computed with basic IEEE arithmetic only —
//! never the platform's libm — because native glibc and the wasm32 port of libm may round the
//! last bit differently, and one bit is enough to change a token count: the same seed must give
//! the same incident in the terminal and in the browser.

/// A seeded generator. Cheap to clone; `fork` derives an independent stream.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

/// SplitMix64 (Steele, Lea and Flood): advances `state` and returns its next output.
pub(crate) fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut mixed = *state;
    mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    mixed ^ (mixed >> 31)
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut x = seed;
        Rng { s: [splitmix64(&mut x), splitmix64(&mut x), splitmix64(&mut x), splitmix64(&mut x)] }
    }

    /// An independent generator for sub-stream `stream` of this seed (one per workload stream,
    /// one for the engine), so adding draws to one stream never shifts another.
    pub fn derive(seed: u64, stream: u64) -> Rng {
        let mut x = seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03);
        let mixed = splitmix64(&mut x);
        Rng::new(mixed)
    }

    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1), 53 bits.
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform integer in [0, n) (Lemire's multiply-shift; n = 0 gives 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Exponential with this mean (Poisson inter-arrival times).
    pub fn exponential(&mut self, mean: f64) -> f64 {
        -mean * ln(1.0 - self.f64())
    }

    /// Standard normal (Marsaglia's polar method: needs only `ln` and `sqrt`, both exact-enough
    /// and deterministic here — `sqrt` is correctly rounded by IEEE 754).
    pub fn normal(&mut self) -> f64 {
        loop {
            let u = 2.0 * self.f64() - 1.0;
            let v = 2.0 * self.f64() - 1.0;
            let s = u * u + v * v;
            if s > 0.0 && s < 1.0 {
                return u * (-2.0 * ln(s) / s).sqrt();
            }
        }
    }

    /// Log-normal with this median and log-space sigma: the long right tail of prompt and
    /// output lengths in real traffic.
    pub fn lognormal(&mut self, median: f64, sigma: f64) -> f64 {
        median * exp(sigma * self.normal())
    }
}

const LN2: f64 = std::f64::consts::LN_2;

/// Natural logarithm by basic arithmetic: x = m·2^e with m in [√½, √2), then
/// ln m = 2·atanh((m−1)/(m+1)) as a series (|s| ≤ 0.172, so 12 terms reach 1e-17).
pub fn ln(x: f64) -> f64 {
    if x.is_nan() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    if x.is_infinite() {
        return x;
    }
    let (mut m, mut e) = frexp(x);
    if m < std::f64::consts::FRAC_1_SQRT_2 {
        m *= 2.0;
        e -= 1;
    }
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    let mut term = s;
    let mut sum = 0.0;
    let mut k = 1.0;
    while k < 26.0 {
        sum += term / k;
        term *= s2;
        k += 2.0;
    }
    2.0 * sum + f64::from(e) * LN2
}

/// x = m·2^e with m in [1, 2) (subnormals scaled up first).
fn frexp(x: f64) -> (f64, i32) {
    let (x, bias) = if x < f64::MIN_POSITIVE { (x * (1u64 << 54) as f64, -54) } else { (x, 0) };
    let bits = x.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32 - 1023;
    let m = f64::from_bits((bits & !(0x7ff << 52)) | (1023 << 52));
    (m, exp + bias)
}

/// e^x by basic arithmetic: x = k·ln2 + r with |r| ≤ ln2/2, a Taylor series for e^r, then
/// scaling by 2^k through the exponent bits.
pub fn exp(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x > 709.0 {
        return f64::INFINITY;
    }
    if x < -708.0 {
        return 0.0;
    }
    // Cody and Waite's split of ln 2 keeps the reduction exact for large |k| (fdlibm's constants).
    const LN2_HI: f64 = 6.931_471_803_691_238e-1;
    const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
    let k = (x / LN2 + if x >= 0.0 { 0.5 } else { -0.5 }) as i32;
    let r = (x - f64::from(k) * LN2_HI) - f64::from(k) * LN2_LO;
    let mut term = 1.0;
    let mut sum = 1.0;
    for i in 1..20 {
        term *= r / f64::from(i);
        sum += term;
    }
    sum * f64::from_bits(((1023 + k) as u64) << 52)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_numbers_and_streams_differ() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        assert_ne!(Rng::derive(7, 1).next_u64(), Rng::derive(7, 2).next_u64());
    }

    #[test]
    fn ln_and_exp_match_the_platform_closely() {
        for x in [1e-300, 1e-9, 0.001, 0.5, 0.7, 1.0, 1.5, 2.0, 10.0, 12345.678, 1e200] {
            let rel = (ln(x) - x.ln()).abs() / x.ln().abs().max(1e-300);
            assert!(rel < 1e-14 || (ln(x) - x.ln()).abs() < 1e-15, "ln {x}: {} vs {}", ln(x), x.ln());
        }
        for x in [-700.0, -20.0, -1.0, -1e-9, 0.0, 0.3, 1.0, 5.5, 100.0, 700.0] {
            let rel = (exp(x) - x.exp()).abs() / x.exp();
            assert!(rel < 1e-14, "exp {x}: {} vs {}", exp(x), x.exp());
        }
        assert!(ln(-1.0).is_nan());
        assert_eq!(ln(0.0), f64::NEG_INFINITY);
    }

    #[test]
    fn distributions_have_their_moments() {
        let mut r = Rng::new(42);
        let n = 200_000;
        let mean = (0..n).map(|_| r.exponential(2.0)).sum::<f64>() / f64::from(n);
        assert!((mean - 2.0).abs() < 0.03, "{mean}");
        let z: Vec<f64> = (0..n).map(|_| r.normal()).collect();
        let m = z.iter().sum::<f64>() / f64::from(n);
        let var = z.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / f64::from(n);
        assert!(m.abs() < 0.01 && (var - 1.0).abs() < 0.02, "{m} {var}");
        let mut l: Vec<f64> = (0..n).map(|_| r.lognormal(300.0, 0.8)).collect();
        l.sort_by(f64::total_cmp);
        let median = l[l.len() / 2];
        assert!((median / 300.0 - 1.0).abs() < 0.02, "{median}");
        let below: Vec<u64> = (0..1000).map(|_| r.below(10)).collect();
        assert!(below.iter().all(|x| *x < 10) && below.contains(&0) && below.contains(&9));
    }
}
