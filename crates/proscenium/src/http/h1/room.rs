//! The server's room for request bodies that wait for more bytes: bytes of memory for
//! those buffered (`limits.max_buffered_bodies`), bytes of disk for those spooled to a
//! temporary file (`limits.max_spooled_bodies`).
//!
//! Invariant: every byte taken from a [`Budget`] is held by one [`Room`], which gives it
//! back when dropped — when the app drops the body, or the decoder drops a body it
//! refused or never finished.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::config::Limits;

/// One bounded resource for bodies: one per server, shared by its loops and threads.
#[derive(Debug)]
pub(crate) struct Budget {
    max: usize,
    used: AtomicUsize,
}

impl Budget {
    /// Returns a budget of `max` bytes, none of them taken.
    pub(crate) fn new(max: usize) -> Arc<Self> {
        Arc::new(Self {
            max,
            used: AtomicUsize::new(0),
        })
    }

    /// Takes `n` bytes of room, if the budget has them.
    fn try_take(&self, n: usize) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(n).filter(|&total| total <= self.max)
            })
            .is_ok()
    }

    /// Gives back `n` bytes of room taken before.
    fn give_back(&self, n: usize) {
        self.used.fetch_sub(n, Ordering::AcqRel);
    }

    /// Returns the bytes taken now.
    #[cfg(test)]
    pub(super) fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }
}

/// The room one body holds in a budget, given back when dropped.
#[derive(Debug)]
pub(super) struct Room {
    budget: Arc<Budget>,
    held: usize,
}

impl Room {
    /// Returns a claim on `budget` holding nothing yet.
    pub(super) fn new(budget: &Arc<Budget>) -> Self {
        Self {
            budget: budget.clone(),
            held: 0,
        }
    }

    /// Returns the bytes held.
    pub(super) fn held(&self) -> usize {
        self.held
    }

    /// Takes `n` more bytes from the budget, if it has them.
    pub(super) fn try_grow(&mut self, n: usize) -> bool {
        let taken = self.budget.try_take(n);
        if taken {
            self.held += n;
        }
        taken
    }
}

impl Drop for Room {
    fn drop(&mut self) {
        self.budget.give_back(self.held);
    }
}

/// The two budgets bodies draw on; cloned into each loop.
#[derive(Debug, Clone)]
pub(crate) struct Bodies {
    /// Memory for bodies buffered while they wait (`limits.max_buffered_bodies`).
    pub(super) memory: Arc<Budget>,
    /// Disk for bodies spooled while they wait (`limits.max_spooled_bodies`).
    pub(super) disk: Arc<Budget>,
}

impl Bodies {
    /// Returns the budgets `limits` sets, none of them taken.
    pub(crate) fn new(limits: &Limits) -> Self {
        Self {
            memory: Budget::new(limits.max_buffered_bodies),
            disk: Budget::new(limits.max_spooled_bodies),
        }
    }
}
