//! Places under a cap, taken and given back from any thread: the count behind the
//! connection cap.
//!
//! A place is taken by one compare-and-swap that checks the cap and counts in the same
//! step, so acceptors on several threads never take more places than the cap between
//! them. The file uses only its parent's `sync` module, so `tests/slots_model.rs`
//! compiles it unchanged against loom and checks that under every interleaving.

use super::sync::{AtomicUsize, Ordering};

/// A count of places under a cap.
#[derive(Debug)]
pub(crate) struct Slots {
    taken: AtomicUsize,
    max: usize,
}

impl Slots {
    /// Returns `max` free places (at least one).
    pub(crate) fn new(max: usize) -> Self {
        Self {
            taken: AtomicUsize::new(0),
            max: max.max(1),
        }
    }

    /// Takes a place if one is free; returns how many are taken then.
    pub(crate) fn try_take(&self) -> Option<usize> {
        self.taken
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max).then_some(n + 1)
            })
            .ok()
            .map(|n| n + 1)
    }

    /// Gives a place back; returns how many are still taken.
    pub(crate) fn give_back(&self) -> usize {
        self.taken.fetch_sub(1, Ordering::AcqRel) - 1
    }

    /// Returns how many places are taken.
    pub(crate) fn taken(&self) -> usize {
        self.taken.load(Ordering::Acquire)
    }
}
