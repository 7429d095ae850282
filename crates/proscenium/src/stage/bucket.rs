//! The token bucket of [`Admission::TokenBucket`](super::Admission::TokenBucket).

use std::time::Instant;

use parking_lot::Mutex;

/// Tokens refilled at `rate` per second up to `burst`; each admitted event takes one.
/// The admission controller may lower the rate to a share of it ([`try_take`](
/// Self::try_take)'s `share`).
#[derive(Debug)]
pub(crate) struct TokenBucket {
    rate: f64,
    burst: f64,
    level: Mutex<(f64, Instant)>,
}

impl TokenBucket {
    pub(crate) fn new(rate: f64, burst: u32) -> Self {
        let burst = f64::from(burst.max(1));
        Self {
            rate: rate.max(0.0),
            burst,
            level: Mutex::new((burst, Instant::now())),
        }
    }

    /// Takes a token if there is one, tokens having refilled at `share` (0–1) of the
    /// rate since the last take.
    pub(crate) fn try_take(&self, share: f64) -> bool {
        let mut level = self.level.lock();
        let now = Instant::now();
        let (tokens, since) = *level;
        let refill = now.duration_since(since).as_secs_f64() * self.rate * share;
        let tokens = (tokens + refill).min(self.burst);
        let admitted = tokens >= 1.0;
        *level = (if admitted { tokens - 1.0 } else { tokens }, now);
        admitted
    }
}
