//! Waits between tries of something that failed: doubling from a base up to a cap,
//! each wait drawn uniformly from zero to that ceiling ("full jitter"), so that
//! replicas restarted together do not try again together — after a Redis restart,
//! every replica's reconnects would otherwise arrive in the same millisecond.

use std::hash::BuildHasher;
use std::time::{Duration, Instant};

/// The most doublings a ceiling is given: past it the cap has been reached for any
/// base above a microsecond, and the shift cannot overflow.
const MOST_DOUBLINGS: u32 = 20;

/// The waits of one run of failures: call [`next_delay`](Self::next_delay) after each
/// failure and [`reset`](Self::reset) after a success.
#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    base: Duration,
    cap: Duration,
    attempt: u32,
}

#[cfg_attr(
    not(any(test, feature = "client", feature = "redis", feature = "tls")),
    expect(
        dead_code,
        reason = "the Redis links, the client's retries and ACME's orders use it"
    )
)]
impl Backoff {
    /// Returns a backoff whose first ceiling is `base`, doubled per failure, at most
    /// `cap`.
    pub(crate) const fn new(base: Duration, cap: Duration) -> Self {
        Self {
            base,
            cap,
            attempt: 0,
        }
    }

    /// Returns the wait after one more failure: uniform in [0, min(cap, base·2^n)]
    /// for the n-th failure since the last reset (counting from 0).
    pub(crate) fn next_delay(&mut self) -> Duration {
        let delay = uniform(ceiling(self.base, self.cap, self.attempt));
        self.attempt = self.attempt.saturating_add(1);
        delay
    }

    /// Starts again from `base`, after a success.
    #[cfg_attr(
        not(any(test, all(feature = "feeds", feature = "redis"), feature = "tls")),
        expect(dead_code, reason = "the hub's Redis link and ACME reset theirs")
    )]
    pub(crate) fn reset(&mut self) {
        self.attempt = 0;
    }
}

/// Returns `base` doubled `attempt` times, at most `cap`.
pub(crate) fn ceiling(base: Duration, cap: Duration, attempt: u32) -> Duration {
    base.saturating_mul(1 << attempt.min(MOST_DOUBLINGS))
        .min(cap)
}

/// Returns a time drawn uniformly from [0, `most`] (to the nanosecond; at most
/// `u64::MAX` ns, some 584 years).
pub(crate) fn uniform(most: Duration) -> Duration {
    let most = u64::try_from(most.as_nanos()).unwrap_or(u64::MAX);
    // std's random hasher keys are seeded per process and stepped per use: random
    // enough to spread replicas, with no generator to carry.
    let random = std::collections::hash_map::RandomState::new().hash_one(Instant::now());
    Duration::from_nanos(random.checked_rem(most.saturating_add(1)).unwrap_or(random))
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: Duration = Duration::from_millis(10);
    const CAP: Duration = Duration::from_millis(50);

    #[test]
    fn the_ceiling_doubles_from_the_base_up_to_the_cap() {
        let ceilings: Vec<u128> = (0..6)
            .map(|attempt| ceiling(BASE, CAP, attempt).as_millis())
            .collect();
        assert_eq!(ceilings, [10, 20, 40, 50, 50, 50]);
        assert_eq!(ceiling(BASE, Duration::MAX, u32::MAX), BASE * (1 << 20));
    }

    #[test]
    fn each_delay_is_within_zero_and_its_ceiling() {
        let mut backoff = Backoff::new(BASE, CAP);
        for attempt in 0..40 {
            let delay = backoff.next_delay();
            assert!(delay <= ceiling(BASE, CAP, attempt), "{attempt}: {delay:?}");
        }
    }

    #[test]
    fn delays_are_spread_over_their_range() {
        let delays: Vec<Duration> = (0..200).map(|_| uniform(CAP)).collect();
        assert!(delays.iter().all(|delay| *delay <= CAP));
        assert!(delays.iter().any(|delay| *delay < CAP / 4));
        assert!(delays.iter().any(|delay| *delay > CAP * 3 / 4));
        assert_eq!(uniform(Duration::ZERO), Duration::ZERO);
    }

    #[test]
    fn reset_starts_again_from_the_base() {
        let mut backoff = Backoff::new(BASE, CAP);
        for _ in 0..5 {
            backoff.next_delay();
        }
        backoff.reset();
        for _ in 0..50 {
            assert!(backoff.clone().next_delay() <= BASE);
        }
        assert!(backoff.next_delay() <= BASE);
    }
}
