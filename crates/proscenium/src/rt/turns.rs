//! Loops' turn times for `/metrics`: how long a loop runs between two waits for I/O
//! or a timer (a turn), kept as a histogram in each loop's `LoopStats`.
//!
//! Taken from the runtime's park and unpark hooks, so the request path is untouched:
//! a turn costs two clock reads and a few stores on the loop's own thread, however
//! many requests it serves. A loop under load parks seldom and its turns grow long;
//! one that stays in a handler shows it here in the slow buckets.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use super::context;

/// The turn histogram's upper bounds, in nanoseconds (10 µs to 1 s); a last bucket
/// holds what is longer.
pub(crate) const TURN_BOUNDS_NS: [u64; 11] = [
    10_000,
    50_000,
    100_000,
    500_000,
    1_000_000,
    5_000_000,
    10_000_000,
    50_000_000,
    100_000_000,
    500_000_000,
    1_000_000_000,
];

/// Buckets of the histogram: one per bound, and one past the last.
const BUCKETS: usize = TURN_BOUNDS_NS.len() + 1;

/// One loop's turns: a count per bucket and the sum; written by the loop alone.
#[derive(Debug, Default)]
pub(crate) struct Turns {
    buckets: [AtomicU64; BUCKETS],
    sum_ns: AtomicU64,
}

impl Turns {
    fn record(&self, ns: u64) {
        let bucket = TURN_BOUNDS_NS.partition_point(|&bound| bound < ns);
        bump(&self.buckets[bucket], 1);
        bump(&self.sum_ns, ns);
    }

    /// Returns the count in each bucket (not cumulative) and the sum in nanoseconds.
    #[cfg_attr(
        not(any(test, feature = "metrics")),
        expect(dead_code, reason = "only /metrics reads it")
    )]
    pub(crate) fn read(&self) -> ([u64; BUCKETS], u64) {
        let buckets = std::array::from_fn(|i| self.buckets[i].load(Ordering::Relaxed));
        (buckets, self.sum_ns.load(Ordering::Relaxed))
    }
}

/// Adds `n` to a counter only this loop writes: a load and a store.
fn bump(counter: &AtomicU64, n: u64) {
    let was = counter.load(Ordering::Relaxed);
    counter.store(was.wrapping_add(n), Ordering::Relaxed);
}

thread_local! {
    /// When this thread's runtime last woke up.
    static WOKE: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Notes that this thread's runtime woke up: a turn begins (the unpark hook).
pub(crate) fn woke() {
    WOKE.set(Some(Instant::now()));
}

/// Ends the turn begun at the last wake-up, if this thread is a loop (the park hook).
pub(crate) fn parking() {
    let Some(woke) = WOKE.take() else {
        return;
    };
    let ns = u64::try_from(woke.elapsed().as_nanos()).unwrap_or(u64::MAX);
    context::with_current(|ctx| ctx.stats.turns.record(ns));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_lands_in_the_bucket_of_its_length() {
        let turns = Turns::default();
        turns.record(7_000);
        turns.record(2_000_000_000);
        let (buckets, sum) = turns.read();
        assert_eq!(buckets[0], 1);
        assert_eq!(buckets[BUCKETS - 1], 1);
        assert_eq!(buckets.iter().sum::<u64>(), 2);
        assert_eq!(sum, 2_000_007_000);
    }
}
