//! SEDA's batching controller (Welsh et al., sec. 4.2): how many events an instance
//! takes from its queue in one turn. A large batch costs fewer turns (a ticket and a
//! wake each) and so serves more events a second; a small one lets other stages
//! and instances in between, so an event waits less. The controller shrinks the batch
//! while the stage's throughput holds, grows it a little when throughput degrades,
//! and resets it to the maximum when the load drops suddenly — on for a cluster
//! whose `max_batch` is above `batch`.
//!
//! [`BatchController::decide`] is the rule alone, fed one window's rates; the
//! cluster's controller thread feeds it (`controller.rs`).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use serde::Serialize;

/// A throughput within this fraction of the reference holds.
const TOLERANCE: f64 = 0.1;

/// Windows after a grow before the batch may shrink again: without them the batch
/// would swing between two sizes each window.
const HOLD_WINDOWS: u32 = 10;

/// A window whose arrivals fall under this fraction of their moving average is a
/// sudden drop in load.
const DROP: f64 = 0.5;

/// Weight of the newest window in the moving averages.
const ALPHA: f64 = 0.3;

/// A stage's batch now and the range its controller moves it in, shared by the
/// stage's threads (which read it each turn) and the controller (which sets it).
#[derive(Debug)]
pub(crate) struct Batch {
    now: AtomicUsize,
    min: usize,
    max: usize,
    shrunk: AtomicU64,
    grown: AtomicU64,
    reset: AtomicU64,
}

/// A stage's batch, and what its controller did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BatchStats {
    /// Events an instance takes in one turn now.
    pub now: usize,
    /// The least (`batch` in the cluster's configuration).
    pub min: usize,
    /// The most (`max_batch`); equal to `min` when the controller is off.
    pub max: usize,
    /// Times the controller shrank it, throughput holding.
    pub shrunk: u64,
    /// Times it grew it, throughput degrading.
    pub grown: u64,
    /// Times it reset it to the maximum, the load dropping.
    pub reset: u64,
}

impl Batch {
    /// Returns a batch between `min` and `max`, at the maximum to start (the most
    /// throughput while nothing is measured yet).
    pub(crate) fn new(min: usize, max: usize) -> Self {
        Self {
            now: AtomicUsize::new(max),
            min,
            max,
            shrunk: AtomicU64::new(0),
            grown: AtomicU64::new(0),
            reset: AtomicU64::new(0),
        }
    }

    pub(crate) fn now(&self) -> usize {
        self.now.load(Ordering::Relaxed)
    }

    /// Returns whether a controller has room to work.
    pub(crate) fn is_adaptive(&self) -> bool {
        self.max > self.min
    }

    pub(crate) fn controller(&self) -> BatchController {
        BatchController {
            min: self.min,
            max: self.max,
            now: self.now(),
            reference: None,
            arrivals: None,
            hold: 0,
        }
    }

    /// Applies a decision; returns whether the batch changed.
    pub(crate) fn apply(&self, decision: BatchDecision) -> bool {
        let (to, counter) = match decision {
            BatchDecision::Hold => return false,
            BatchDecision::Shrink(to) => (to, &self.shrunk),
            BatchDecision::Grow(to) => (to, &self.grown),
            BatchDecision::Reset(to) => (to, &self.reset),
        };
        self.now.store(to, Ordering::Relaxed);
        counter.fetch_add(1, Ordering::Relaxed);
        true
    }

    pub(crate) fn stats(&self) -> BatchStats {
        BatchStats {
            now: self.now(),
            min: self.min,
            max: self.max,
            shrunk: self.shrunk.load(Ordering::Relaxed),
            grown: self.grown.load(Ordering::Relaxed),
            reset: self.reset.load(Ordering::Relaxed),
        }
    }
}

/// What the controller does after a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BatchDecision {
    Shrink(usize),
    Grow(usize),
    Reset(usize),
    Hold,
}

/// The controller's memory of one stage: the batch it set, the throughput that batch
/// is judged against, the arrivals' moving average.
#[derive(Debug, Clone)]
pub(crate) struct BatchController {
    min: usize,
    max: usize,
    now: usize,
    /// Moving average of events handled a second since the last change.
    reference: Option<f64>,
    /// Moving average of events arrived a second.
    arrivals: Option<f64>,
    /// Windows left before a shrink is allowed again.
    hold: u32,
}

impl BatchController {
    /// Decides from one window's rates: events `handled` and `arrived` a second.
    pub(crate) fn decide(&mut self, handled: f64, arrived: f64) -> BatchDecision {
        let previous = self.arrivals.map_or(arrived, |average| average);
        self.arrivals = Some(previous + ALPHA * (arrived - previous));
        if arrived < previous * DROP {
            self.reference = None;
            self.hold = 0;
            return self.set(self.max, BatchDecision::Reset);
        }
        if handled == 0.0 {
            // Nothing to judge a batch by.
            return BatchDecision::Hold;
        }
        let Some(reference) = self.reference else {
            self.reference = Some(handled);
            return BatchDecision::Hold;
        };
        if handled < reference * (1.0 - TOLERANCE) {
            self.reference = Some(handled);
            if self.now == self.max {
                // Not for want of batch: nothing to do, nothing to wait for.
                return BatchDecision::Hold;
            }
            self.hold = HOLD_WINDOWS;
            let to = (self.now + (self.now / 8).max(1)).min(self.max);
            return self.set(to, BatchDecision::Grow);
        }
        self.reference = Some(reference + ALPHA * (handled - reference));
        if self.hold > 0 {
            self.hold -= 1;
            return BatchDecision::Hold;
        }
        let to = self.now.saturating_sub((self.now / 4).max(1)).max(self.min);
        self.set(to, BatchDecision::Shrink)
    }

    fn set(&mut self, to: usize, decision: fn(usize) -> BatchDecision) -> BatchDecision {
        if to == self.now {
            return BatchDecision::Hold;
        }
        self.now = to;
        decision(to)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn controller(min: usize, max: usize) -> BatchController {
        Batch::new(min, max).controller()
    }

    #[test]
    fn shrinks_while_throughput_holds_down_to_the_least() {
        let mut c = controller(1, 64);
        assert_eq!(c.decide(1000.0, 1000.0), BatchDecision::Hold);
        let mut sizes = Vec::new();
        while let BatchDecision::Shrink(to) = c.decide(1000.0, 1000.0) {
            sizes.push(to);
        }
        assert_eq!(sizes, [48, 36, 27, 21, 16, 12, 9, 7, 6, 5, 4, 3, 2, 1]);
        assert_eq!(c.decide(1000.0, 1000.0), BatchDecision::Hold);
    }

    #[test]
    fn grows_a_little_when_throughput_degrades_then_holds() {
        let mut c = controller(1, 64);
        c.decide(1000.0, 1000.0);
        assert_eq!(c.decide(1000.0, 1000.0), BatchDecision::Shrink(48));
        assert_eq!(c.decide(800.0, 1000.0), BatchDecision::Grow(54));
        for _ in 0..HOLD_WINDOWS {
            assert_eq!(c.decide(800.0, 1000.0), BatchDecision::Hold);
        }
        assert_eq!(c.decide(800.0, 1000.0), BatchDecision::Shrink(41));
    }

    #[test]
    fn throughput_falling_at_the_most_is_no_reason_to_wait() {
        let mut c = controller(1, 8);
        c.decide(1000.0, 1000.0);
        assert_eq!(c.decide(500.0, 1000.0), BatchDecision::Hold);
        assert_eq!(c.decide(500.0, 1000.0), BatchDecision::Shrink(6));
    }

    #[test]
    fn a_sudden_drop_in_load_resets_to_the_most() {
        let mut c = controller(2, 32);
        c.decide(1000.0, 1000.0);
        assert_eq!(c.decide(1000.0, 1000.0), BatchDecision::Shrink(24));
        assert_eq!(c.decide(100.0, 100.0), BatchDecision::Reset(32));
        // Already at the most: nothing to do while the load stays low.
        assert_eq!(c.decide(0.0, 0.0), BatchDecision::Hold);
    }

    #[test]
    fn an_idle_window_judges_nothing() {
        let mut c = controller(1, 8);
        assert_eq!(c.decide(0.0, 0.0), BatchDecision::Hold);
        assert_eq!(c.decide(0.0, 0.0), BatchDecision::Hold);
    }

    #[test]
    fn applied_decisions_are_counted() {
        let batch = Batch::new(1, 8);
        assert!(batch.apply(BatchDecision::Shrink(6)));
        assert!(batch.apply(BatchDecision::Grow(7)));
        assert!(batch.apply(BatchDecision::Reset(8)));
        assert!(!batch.apply(BatchDecision::Hold));
        let stats = batch.stats();
        assert_eq!(
            (stats.now, stats.shrunk, stats.grown, stats.reset),
            (8, 1, 1, 1)
        );
    }
}
