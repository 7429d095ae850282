//! A stage's idle instances, and the hand-off between its queue and them.
//!
//! Invariant: an instance is in exactly one place — idle here, in its cluster's ready
//! queue, or running on one thread. Whether an instance goes idle or back to the ready
//! queue is decided under the pool's lock after looking at the queue, and an enqueue
//! looks at the pool under the same lock after pushing, so an event never waits in a
//! queue while every instance sleeps. Cohort senders waiting for an instance go before
//! the queue. Written against `super::sync`, so `tests/stage_pool_model.rs` checks
//! it under loom.

use std::time::Instant;

use super::sync::{Condvar, Mutex};

/// What the pool looks at of its stage's queue.
pub(crate) trait Queue {
    /// Whether no event waits.
    fn is_empty(&self) -> bool;
}

/// A stage's instances not running, of type `I`.
pub(crate) struct Pool<I> {
    state: Mutex<State<I>>,
    /// Notified whenever an instance comes back or a source's run ends.
    released: Condvar,
}

struct State<I> {
    idle: Vec<I>,
    /// Cohort senders waiting for an instance: they go before the queue.
    cohort_waiting: usize,
    /// Source instances whose run has returned.
    finished: usize,
}

impl<I> Pool<I> {
    pub(crate) fn new(idle: Vec<I>) -> Self {
        Self {
            state: Mutex::new(State {
                idle,
                cohort_waiting: 0,
                finished: 0,
            }),
            released: Condvar::default(),
        }
    }

    /// An event was queued: returns an idle instance to give a turn, if events wait
    /// and no cohort sender is waiting for it.
    pub(crate) fn wake(&self, queue: &impl Queue) -> Option<I> {
        let mut state = self.state.lock();
        if state.cohort_waiting == 0 && !queue.is_empty() {
            state.idle.pop()
        } else {
            None
        }
    }

    /// A turn is over: returns `instance` for another turn if events wait (and no
    /// cohort sender does), or keeps it idle.
    pub(crate) fn after_turn(&self, instance: I, queue: &impl Queue) -> Option<I> {
        let mut state = self.state.lock();
        let again = if state.cohort_waiting == 0 && !queue.is_empty() {
            Some(instance)
        } else {
            state.idle.push(instance);
            None
        };
        drop(state);
        self.released.notify_all();
        again
    }

    /// Takes an idle instance for a cohort sender, waiting for one; the sender gives
    /// it back with [`after_turn`](Self::after_turn).
    pub(crate) fn take_for_cohort(&self) -> I {
        let mut state = self.state.lock();
        state.cohort_waiting += 1;
        let instance = loop {
            if let Some(instance) = state.idle.pop() {
                break instance;
            }
            state = self.released.wait(state);
        };
        state.cohort_waiting -= 1;
        instance
    }

    /// A source instance's run has returned.
    pub(crate) fn source_finished(&self) {
        self.state.lock().finished += 1;
        self.released.notify_all();
    }

    /// Returns whether the stage is quiet — for a source, all `instances` runs
    /// returned; otherwise nothing queued and all `instances` idle — waiting for it
    /// until `deadline`.
    pub(crate) fn wait_quiet(
        &self,
        queue: &impl Queue,
        instances: usize,
        source: bool,
        deadline: Instant,
    ) -> bool {
        let mut state = self.state.lock();
        loop {
            let quiet = if source {
                state.finished == instances
            } else {
                queue.is_empty() && state.idle.len() == instances
            };
            if quiet {
                return true;
            }
            let (back, timed_out) = self.released.wait_until(state, deadline);
            if timed_out {
                return false;
            }
            state = back;
        }
    }
}
