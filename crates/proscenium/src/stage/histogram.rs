//! A latency histogram that threads record into without a lock: log-linear buckets
//! over nanoseconds, eight to each power of two (HdrHistogram's idea at three bits of
//! precision), so a quantile read from it is within 12.5 % of the true one.
//!
//! Why not a crate: `hdrhistogram` needs `&mut self` to record, so every stage thread
//! would take a lock per event; this one is an array of atomic counters (4 KiB).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::Serialize;

/// Sub-buckets per power of two, as bits.
const PRECISION: u32 = 3;
const SUBS: usize = 1 << PRECISION;
/// Values below `SUBS` have a bucket each; above, `SUBS` per power of two up to 2^63.
const BUCKETS: usize = (64 - PRECISION as usize + 1) * SUBS;

/// Durations recorded from many threads.
pub(crate) struct Histogram {
    buckets: Box<[AtomicU64; BUCKETS]>,
    sum_nanos: AtomicU64,
    max_nanos: AtomicU64,
}

/// What a histogram holds, in seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Quantiles {
    /// Durations recorded.
    pub count: u64,
    /// Their mean.
    pub mean: f64,
    /// The median (within 12.5 %).
    pub p50: f64,
    /// The 99th percentile (within 12.5 %).
    pub p99: f64,
    /// The longest.
    pub max: f64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self {
            buckets: Box::new(std::array::from_fn(|_| AtomicU64::new(0))),
            sum_nanos: AtomicU64::new(0),
            max_nanos: AtomicU64::new(0),
        }
    }
}

impl std::fmt::Debug for Histogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Histogram").field(&self.quantiles()).finish()
    }
}

impl Histogram {
    pub(crate) fn record(&self, took: Duration) {
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        self.buckets[bucket_of(nanos)].fetch_add(1, Ordering::Relaxed);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
        self.max_nanos.fetch_max(nanos, Ordering::Relaxed);
    }

    /// Returns the count, mean, median, 99th percentile and maximum now. Recording
    /// goes on meanwhile, so the figures may straddle an event or two.
    pub(crate) fn quantiles(&self) -> Quantiles {
        let counts = self.counts();
        let count: u64 = counts.iter().sum();
        if count == 0 {
            return Quantiles::default();
        }
        let max = self.max_nanos.load(Ordering::Relaxed);
        let at = |q: f64| seconds(quantile(&counts, count, q).min(max));
        Quantiles {
            count,
            mean: seconds(self.sum_nanos.load(Ordering::Relaxed)) / count as f64,
            p50: at(0.5),
            p99: at(0.99),
            max: seconds(max),
        }
    }

    /// Returns how many durations fell under each of `bounds` (nanoseconds, rising)
    /// and above the one before, those above the last at the end; and their sum in
    /// nanoseconds. A bucket counts under the first bound at or above its largest
    /// value, so a duration within an eighth below a bound may count under the next.
    #[cfg_attr(
        not(any(test, feature = "metrics")),
        expect(dead_code, reason = "only /metrics reads it")
    )]
    pub(crate) fn spread(&self, bounds: &[u64]) -> (Vec<u64>, u64) {
        let mut spread = vec![0; bounds.len() + 1];
        for (bucket, n) in self.counts().into_iter().enumerate() {
            if n > 0 {
                let edge = upper_edge(bucket);
                spread[bounds.partition_point(|&bound| bound < edge)] += n;
            }
        }
        (spread, self.sum_nanos.load(Ordering::Relaxed))
    }

    /// Returns the counts of every bucket now, to compare with a later reading.
    pub(crate) fn counts(&self) -> Vec<u64> {
        self.buckets
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect()
    }

    /// Returns how many durations were recorded since `earlier` (from [`counts`](
    /// Self::counts)) and their `q`-quantile (within 12.5 %); `None` when none were.
    pub(crate) fn since(&self, earlier: &[u64], q: f64) -> Option<(u64, Duration)> {
        let window: Vec<u64> = self
            .counts()
            .iter()
            .zip(earlier)
            .map(|(now, then)| now.saturating_sub(*then))
            .collect();
        let count: u64 = window.iter().sum();
        (count > 0).then(|| (count, Duration::from_nanos(quantile(&window, count, q))))
    }
}

/// Returns the `q`-quantile of `count` durations in `counts`, as its bucket's largest
/// value in nanoseconds.
fn quantile(counts: &[u64], count: u64, q: f64) -> u64 {
    // The rank of the q-quantile, 1-based: ceil(q × count), at least 1.
    let rank = ((q * count as f64).ceil() as u64).max(1);
    let mut seen = 0;
    let bucket = counts
        .iter()
        .position(|&n| {
            seen += n;
            seen >= rank
        })
        .unwrap_or(BUCKETS - 1);
    upper_edge(bucket)
}

fn seconds(nanos: u64) -> f64 {
    nanos as f64 / 1e9
}

/// Returns the bucket `nanos` falls in.
fn bucket_of(nanos: u64) -> usize {
    if nanos < SUBS as u64 {
        return nanos as usize;
    }
    let power = 63 - nanos.leading_zeros();
    let sub = (nanos >> (power - PRECISION)) as usize & (SUBS - 1);
    (power - PRECISION + 1) as usize * SUBS + sub
}

/// Returns the largest value in `bucket`.
fn upper_edge(bucket: usize) -> u64 {
    if bucket < SUBS {
        return bucket as u64;
    }
    let power = (bucket / SUBS) as u32 + PRECISION - 1;
    let sub = (bucket % SUBS) as u64;
    let width = 1u64 << (power - PRECISION);
    ((SUBS as u64 + sub) << (power - PRECISION)) + (width - 1)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn small_values_are_exact_and_the_last_bucket_holds_the_largest() {
        for nanos in 0..8 {
            assert_eq!(bucket_of(nanos), nanos as usize);
            assert_eq!(upper_edge(nanos as usize), nanos);
        }
        assert_eq!(bucket_of(8), 8);
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
        assert_eq!(upper_edge(BUCKETS - 1), u64::MAX);
    }

    #[test]
    fn quantiles_of_a_known_spread() {
        let histogram = Histogram::default();
        for ms in 1..=100 {
            histogram.record(Duration::from_millis(ms));
        }
        let q = histogram.quantiles();
        assert_eq!(q.count, 100);
        assert!((q.mean - 0.0505).abs() < 1e-9, "{q:?}");
        assert!((0.050..=0.050 * 1.125).contains(&q.p50), "{q:?}");
        assert!((0.099..=0.100).contains(&q.p99), "{q:?}");
        assert!((q.max - 0.100).abs() < 1e-9, "{q:?}");
    }

    #[test]
    fn a_window_reads_only_what_came_after_it() {
        let histogram = Histogram::default();
        histogram.record(Duration::from_secs(1));
        let earlier = histogram.counts();
        assert_eq!(histogram.since(&earlier, 0.9), None);
        for _ in 0..10 {
            histogram.record(Duration::from_millis(1));
        }
        let (count, p90) = histogram.since(&earlier, 0.9).unwrap();
        assert_eq!(count, 10);
        assert!(
            (Duration::from_millis(1)..Duration::from_micros(1125)).contains(&p90),
            "{p90:?}"
        );
    }

    #[test]
    fn a_spread_counts_each_duration_under_its_bound() {
        let histogram = Histogram::default();
        for micros in [1, 5, 50, 50, 2_000] {
            histogram.record(Duration::from_micros(micros));
        }
        let (spread, sum) = histogram.spread(&[10_000, 100_000, 1_000_000]);
        assert_eq!(spread, [2, 2, 0, 1]);
        assert_eq!(sum, 2_106_000);
    }

    #[test]
    fn an_empty_histogram_reads_zero() {
        assert_eq!(Histogram::default().quantiles(), Quantiles::default());
    }

    proptest! {
        #[test]
        fn every_value_lies_in_its_bucket_within_an_eighth(nanos in 0u64..u64::MAX) {
            let bucket = bucket_of(nanos);
            let upper = upper_edge(bucket);
            prop_assert!(nanos <= upper);
            prop_assert!(bucket == 0 || upper_edge(bucket - 1) < nanos);
            prop_assert!((upper - nanos) as f64 <= nanos as f64 / 8.0);
        }
    }
}
