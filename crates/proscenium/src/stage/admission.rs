//! SEDA's admission controller (Welsh and Culler, "Adaptive overload management for
//! busy Internet servers"): when a stage's events wait longer than a target, the token
//! buckets in front of it admit fewer. Each stage has a share (0–1] of its buckets'
//! configured rates; after a window whose 90th-percentile wait is over the target the
//! share is cut by a fifth (multiplicative decrease), after one well under it the share
//! grows by a twentieth of the whole (additive increase) — on for a cluster with
//! `target_wait_ms`. Only token-bucket connectors (and inlets) are throttled: `block`
//! already slows its senders, `reject` refuses only when the queue is full.
//!
//! [`decide`] is the rule alone; the cluster's controller thread feeds it each window
//! (`controller.rs`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::Serialize;

/// The quantile of a window's waits compared with the target.
pub(crate) const QUANTILE: f64 = 0.9;

/// A window with fewer waits than this says too little to act on.
pub(crate) const LEAST_WAITS: u64 = 10;

/// What a share is multiplied by after a window over the target.
const DECREASE: f64 = 0.8;

/// What a share gains after a window under [`CALM`] of the target.
const INCREASE: f64 = 0.05;

/// Below this fraction of the target, the waits are calm enough to admit more.
const CALM: f64 = 0.9;

/// The least share: a throttled stage still admits a trickle, so its waits are seen.
const FLOOR: f64 = 0.01;

/// A stage's admitted share, set by its controller and read by every send to it.
#[derive(Debug)]
pub(crate) struct Share {
    bits: AtomicU64,
    target: Option<Duration>,
    lowered: AtomicU64,
    raised: AtomicU64,
}

/// A stage's admission: the share of its token buckets' rates it admits, and what the
/// controller did.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AdmissionStats {
    /// The share of each token bucket's configured rate admitted now (1 when the
    /// controller is off).
    pub share: f64,
    /// The 90th-percentile wait it keeps the stage under (`target_wait_ms`), in
    /// seconds; `None` when the controller is off.
    pub target_wait_secs: Option<f64>,
    /// Windows after which it cut the share.
    pub lowered: u64,
    /// Windows after which it raised it.
    pub raised: u64,
}

impl Share {
    /// Returns a whole share, controlled toward `target` if there is one.
    pub(crate) fn new(target: Option<Duration>) -> Self {
        Self {
            bits: AtomicU64::new(1.0f64.to_bits()),
            target,
            lowered: AtomicU64::new(0),
            raised: AtomicU64::new(0),
        }
    }

    pub(crate) fn get(&self) -> f64 {
        f64::from_bits(self.bits.load(Ordering::Relaxed))
    }

    pub(crate) fn target(&self) -> Option<Duration> {
        self.target
    }

    /// Sets the share to `to`, counted as a cut or a raise; returns whether it changed.
    pub(crate) fn set(&self, to: f64) -> bool {
        let from = self.get();
        if to == from {
            return false;
        }
        self.bits.store(to.to_bits(), Ordering::Relaxed);
        let counter = if to < from {
            &self.lowered
        } else {
            &self.raised
        };
        counter.fetch_add(1, Ordering::Relaxed);
        true
    }

    pub(crate) fn stats(&self) -> AdmissionStats {
        AdmissionStats {
            share: self.get(),
            target_wait_secs: self.target.map(|t| t.as_secs_f64()),
            lowered: self.lowered.load(Ordering::Relaxed),
            raised: self.raised.load(Ordering::Relaxed),
        }
    }
}

/// Returns the share to admit after a window whose waits' 90th percentile was `p90`,
/// against `target`, from `share`.
pub(crate) fn decide(p90: Duration, target: Duration, share: f64) -> f64 {
    if p90 > target {
        (share * DECREASE).max(FLOOR)
    } else if p90.as_secs_f64() < target.as_secs_f64() * CALM {
        (share + INCREASE).min(1.0)
    } else {
        share
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TARGET: Duration = Duration::from_millis(50);

    #[test]
    fn waits_over_the_target_cut_the_share_by_a_fifth_down_to_a_trickle() {
        let mut share = 1.0;
        let mut cuts = 0;
        while share > FLOOR {
            share = decide(Duration::from_millis(80), TARGET, share);
            cuts += 1;
        }
        assert_eq!(cuts, 21);
        assert_eq!(decide(Duration::from_millis(80), TARGET, share), FLOOR);
    }

    #[test]
    fn calm_waits_raise_it_a_twentieth_at_a_time_up_to_whole() {
        assert!((decide(Duration::from_millis(10), TARGET, 0.5) - 0.55).abs() < 1e-9);
        assert_eq!(decide(Duration::from_millis(10), TARGET, 0.98), 1.0);
    }

    #[test]
    fn waits_near_the_target_hold_it() {
        assert_eq!(decide(Duration::from_millis(48), TARGET, 0.5), 0.5);
    }

    #[test]
    fn every_change_is_counted() {
        let share = Share::new(Some(TARGET));
        assert!(share.set(0.8));
        assert!(share.set(0.85));
        assert!(!share.set(0.85));
        let stats = share.stats();
        assert_eq!((stats.lowered, stats.raised), (1, 1));
        assert_eq!(stats.target_wait_secs, Some(0.05));
    }
}
