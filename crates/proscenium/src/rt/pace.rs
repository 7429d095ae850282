//! The minimum data rate (`limits.min_rate` after `timeouts.grace`), as Apache's
//! `mod_reqtimeout`: moving N bytes may take the grace plus N / rate seconds. A request
//! is paced across its head and body from when it first has to wait for more bytes
//! (in a thread model's waiting room, from its first byte), a response's write from
//! when it first has to wait for the client; a client behind the pace is refused (408)
//! or dropped. Runtime and protocol share it.
//!
//! Without it a body could arrive one byte every `timeouts.body` (30 s between reads)
//! and a response be read as slowly, each holding what the connection holds — under
//! the thread models, a thread — for as long as the attacker likes (issue 15).

use std::time::Duration;

use tokio::time::Instant;

use crate::config::{Limits, Timeouts};

/// The pace a transfer must keep.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pace {
    /// Bytes per second; 0 for none.
    rate: u64,
    grace: Duration,
}

impl Pace {
    /// The pace `limits.min_rate` and `timeouts.grace` ask for.
    pub(crate) fn new(limits: &Limits, timeouts: &Timeouts) -> Self {
        Self {
            rate: limits.min_rate,
            grace: timeouts.grace,
        }
    }

    /// When a transfer that began at `since` and has moved `bytes` falls behind; `None`
    /// when no pace is required.
    pub(crate) fn due(&self, since: Instant, bytes: u64) -> Option<Instant> {
        (self.rate > 0).then(|| {
            let allowed = Duration::from_secs(bytes / self.rate)
                + Duration::from_nanos((bytes % self.rate) * 1_000_000_000 / self.rate);
            since + self.grace + allowed
        })
    }

    /// The earlier of `deadline` and when the transfer falls behind.
    pub(crate) fn bound(&self, deadline: Instant, since: Instant, bytes: u64) -> Instant {
        self.due(since, bytes)
            .map_or(deadline, |due| due.min(deadline))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pace(rate: u64, grace_ms: u64) -> Pace {
        Pace {
            rate,
            grace: Duration::from_millis(grace_ms),
        }
    }

    #[test]
    fn each_rate_worth_of_bytes_earns_a_second_after_the_grace() {
        let since = Instant::now();
        let p = pace(500, 5000);
        assert_eq!(p.due(since, 0), Some(since + Duration::from_secs(5)));
        assert_eq!(p.due(since, 1000), Some(since + Duration::from_secs(7)));
        assert_eq!(p.due(since, 250), Some(since + Duration::from_millis(5500)));
    }

    #[test]
    fn a_rate_of_zero_paces_nothing() {
        let since = Instant::now();
        let later = since + Duration::from_secs(60);
        assert_eq!(pace(0, 5000).due(since, 10), None);
        assert_eq!(pace(0, 5000).bound(later, since, 10), later);
        assert!(pace(1, 0).bound(later, since, 10) < later);
    }
}
