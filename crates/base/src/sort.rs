//! One small stable sort for the whole crate (and the site).
//!
//! std's `sort*` functions are instantiated once per element type and comparator, and each copy
//! of its merge and small-sort code is ~3.5 KB of wasm: the site carried 40 of them (94 KB,
//! ~17 KB gzip). Here the sorting itself is one non-generic merge sort over indices, calling the
//! comparator through `dyn`; only the permutation step, a loop of swaps, is generic. It is
//! stable, so it also stands in for `sort_unstable*` (for the orders used here, elements that
//! compare equal are equal). O(n log n) comparisons, an index buffer of 2n words.

use std::cmp::Ordering;

/// Sort `v` stably by `cmp` (`slice::sort_by`).
pub fn sort_by<T>(v: &mut [T], mut cmp: impl FnMut(&T, &T) -> Ordering) {
    // Nothing to order, and no index buffers to allocate: the line scan sorts each line's
    // signal hits, which are almost always none or one.
    if v.len() < 2 {
        return;
    }
    let order = {
        let v: &[T] = v;
        order(v.len(), &mut |i, j| cmp(&v[i], &v[j]))
    };
    permute(v, order);
}

/// Sort `v` stably by the key `key` computes (`slice::sort_by_key`).
pub fn sort_by_key<T, K: Ord>(v: &mut [T], mut key: impl FnMut(&T) -> K) {
    sort_by(v, |a, b| key(a).cmp(&key(b)));
}

/// Sort `v` stably in ascending order (`slice::sort`, `slice::sort_unstable`).
pub fn sort<T: Ord>(v: &mut [T]) {
    sort_by(v, T::cmp);
}

/// At or below this many values [`sort_f64`] sorts by insertion.
const SMALL: usize = 48;

/// Sort floats in the order of [`f64::total_cmp`] (`-NaN < -∞ < … < -0 < +0 < … < +∞ < NaN`),
/// in linear time: an LSD radix sort, one byte at a time, over each value's bits mapped so
/// that unsigned order is `total_cmp`'s (flip every bit of a negative, the sign of a positive).
/// Bytes every key shares are skipped, so small integers or values of one magnitude take a few
/// passes. Equal keys are equal bit patterns, so the result is exactly `sort_by(total_cmp)`'s.
/// The analyzer sorts every value of a metric for exact quantiles (up to 50,000 stats lines'
/// worth), where [`sort_by`]'s comparison sort through `dyn` was a third of its `finish`.
///
/// Below [`SMALL`] values an insertion sort over the same keys (no allocation, no counting
/// passes): the GPU rules take a median of a few dozen clocks per GPU every tick, where the
/// radix sort's fixed cost was an eighth of reading a long recording.
pub fn sort_f64(v: &mut [f64]) {
    if v.len() < 2 {
        return;
    }
    let key = |x: f64| {
        let b = x.to_bits();
        if b >> 63 == 1 { !b } else { b | 1 << 63 }
    };
    if v.len() <= SMALL {
        for i in 1..v.len() {
            let (x, k) = (v[i], key(v[i]));
            let mut j = i;
            while j > 0 && key(v[j - 1]) > k {
                v[j] = v[j - 1];
                j -= 1;
            }
            v[j] = x;
        }
        return;
    }
    let mut keys: Vec<u64> = v.iter().map(|&x| key(x)).collect();
    let mut spare = vec![0u64; keys.len()];
    for shift in (0..64).step_by(8) {
        let mut count = [0usize; 256];
        for k in &keys {
            count[(k >> shift) as usize & 0xFF] += 1;
        }
        // Every key has the same byte here: this pass would not move anything.
        if count.contains(&keys.len()) {
            continue;
        }
        let mut at = 0;
        for c in &mut count {
            let n = *c;
            *c = at;
            at += n;
        }
        for &k in &keys {
            let d = (k >> shift) as usize & 0xFF;
            spare[count[d]] = k;
            count[d] += 1;
        }
        std::mem::swap(&mut keys, &mut spare);
    }
    for (x, k) in v.iter_mut().zip(keys) {
        let b = if k >> 63 == 1 { k & !(1 << 63) } else { !k };
        *x = f64::from_bits(b);
    }
}

/// The indices `0..n` in the order `cmp` gives them, stably: a bottom-up merge sort.
fn order(n: usize, cmp: &mut dyn FnMut(usize, usize) -> Ordering) -> Vec<usize> {
    let mut a: Vec<usize> = (0..n).collect();
    let mut b = vec![0; n];
    let mut width = 1;
    while width < n {
        let mut start = 0;
        while start < n {
            let mid = (start + width).min(n);
            let end = (start + 2 * width).min(n);
            let (mut i, mut j) = (start, mid);
            for slot in &mut b[start..end] {
                // Take from the right run only when it is strictly smaller: stability.
                if j < end && (i >= mid || cmp(a[j], a[i]) == Ordering::Less) {
                    *slot = a[j];
                    j += 1;
                } else {
                    *slot = a[i];
                    i += 1;
                }
            }
            start = end;
        }
        std::mem::swap(&mut a, &mut b);
        width *= 2;
    }
    a
}

/// Rearrange `v` so that position `k` holds what was at `order[k]`, following each cycle of the
/// permutation with swaps.
fn permute<T>(v: &mut [T], mut order: Vec<usize>) {
    for i in 0..order.len() {
        let mut j = i;
        loop {
            let k = order[j];
            order[j] = j;
            if k == i {
                break;
            }
            v.swap(j, k);
            j = k;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sorts_small_cases() {
        let mut v: Vec<i32> = vec![];
        sort(&mut v);
        assert!(v.is_empty());
        let mut v = vec![3, 1, 2];
        sort(&mut v);
        assert_eq!(v, [1, 2, 3]);
        let mut v = vec![5, 4, 3, 2, 1, 0, -1];
        sort(&mut v);
        assert_eq!(v, [-1, 0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn is_stable() {
        let mut v: Vec<(u8, usize)> =
            [2, 1, 2, 0, 1, 2, 0].iter().enumerate().map(|(i, &k)| (k, i)).collect();
        sort_by_key(&mut v, |e| e.0);
        assert_eq!(v, [(0, 3), (0, 6), (1, 1), (1, 4), (2, 0), (2, 2), (2, 5)]);
    }

    proptest! {
        #[test]
        fn agrees_with_std_sort_by(v in proptest::collection::vec((0u8..8, any::<u16>()), 0..200)) {
            let mut ours = v.clone();
            let mut std_ = v;
            // Only the first field is compared: equal keys must keep their input order.
            sort_by(&mut ours, |a, b| a.0.cmp(&b.0));
            std_.sort_by_key(|a| a.0);
            prop_assert_eq!(ours, std_);
        }

        #[test]
        fn the_float_radix_sort_is_total_cmp_order(
            v in proptest::collection::vec(prop_oneof![any::<f64>(), (-3i32..3).prop_map(f64::from), Just(-0.0), Just(f64::NAN), Just(-f64::NAN), Just(f64::INFINITY)], 0..300)
        ) {
            let mut ours = v.clone();
            let mut std_ = v;
            sort_f64(&mut ours);
            std_.sort_by(f64::total_cmp);
            prop_assert_eq!(ours.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), std_.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
        }

        #[test]
        fn agrees_with_std_on_floats(v in proptest::collection::vec(any::<f64>(), 0..300)) {
            let mut ours = v.clone();
            let mut std_ = v;
            sort_by(&mut ours, f64::total_cmp);
            std_.sort_by(f64::total_cmp);
            prop_assert_eq!(ours.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), std_.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
        }
    }
}
