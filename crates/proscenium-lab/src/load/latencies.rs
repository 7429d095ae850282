//! Latency figures computed by the lab itself from weighted samples, so that they are
//! consistent by construction: the percentiles are read off one sorted list, so
//! p50 ≤ p90 ≤ p99 ≤ max always holds and no percentile is 0 while a higher one is not
//! (the committed reports printed p99 0.00 ms beside p90 173 ms from wrk's own figures).
//!
//! A sample is a latency in milliseconds and a weight: vegeta gives one sample a
//! request; wrk gives a quantile table, each point weighing the share of answers it
//! stands for. Failures join as samples at the timeout.

use super::Latency;

/// Samples of latency, in milliseconds, each with a weight (a count of requests).
#[derive(Debug, Clone, Default)]
pub(crate) struct Latencies {
    samples: Vec<(f64, f64)>,
}

impl Latencies {
    /// Adds `weight` requests that took `ms`.
    pub(crate) fn push(&mut self, ms: f64, weight: f64) {
        if weight > 0.0 {
            self.samples.push((ms, weight));
        }
    }

    /// The mean, percentiles and maximum, or `None` without samples.
    pub(crate) fn figures(&self) -> Option<Latency> {
        let mut sorted = self.samples.clone();
        sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
        let total: f64 = sorted.iter().map(|s| s.1).sum();
        let max = sorted.last()?.0;
        let mean = sorted.iter().map(|(ms, w)| ms * w).sum::<f64>() / total;
        // The q-quantile is the first value whose cumulative weight reaches q of the
        // total (nearest rank), so each percentile is one of the samples.
        let quantile = |q: f64| {
            let mut seen = 0.0;
            for &(ms, w) in &sorted {
                seen += w;
                if seen >= q * total - 1e-9 * total {
                    return ms;
                }
            }
            max
        };
        Some(Latency {
            mean,
            p50: quantile(0.50),
            p90: quantile(0.90),
            p99: quantile(0.99),
            max,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_ordered_whatever_the_samples() {
        // A pseudo-random spread of weights and values (a small LCG; no dependency).
        let mut seed: u64 = 7;
        let mut next = || {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 33) as f64
        };
        for _ in 0..200 {
            let mut l = Latencies::default();
            for _ in 0..(next() as usize % 50 + 1) {
                l.push(next() % 10_000.0 / 7.0, next() % 5.0);
            }
            let Some(f) = l.figures() else { continue };
            assert!(f.p50 <= f.p90 && f.p90 <= f.p99 && f.p99 <= f.max, "{f:?}");
        }
    }

    #[test]
    fn nearest_rank_reads_the_sample_at_the_quantile() {
        let mut l = Latencies::default();
        for ms in 1..=100 {
            l.push(f64::from(ms), 1.0);
        }
        let f = l.figures().unwrap();
        assert_eq!((f.p50, f.p90, f.p99, f.max), (50.0, 90.0, 99.0, 100.0));
        assert!((f.mean - 50.5).abs() < 1e-9);
        assert!(Latencies::default().figures().is_none());
    }

    #[test]
    fn failures_at_the_timeout_raise_the_tail() {
        // 95 answers at 1 ms, 5 failures counted at a 10 s timeout.
        let mut l = Latencies::default();
        l.push(1.0, 95.0);
        l.push(10_000.0, 5.0);
        let f = l.figures().unwrap();
        assert_eq!((f.p50, f.p90, f.p99), (1.0, 1.0, 10_000.0));
        assert!((f.mean - (95.0 + 50_000.0) / 100.0).abs() < 1e-9);
    }
}
