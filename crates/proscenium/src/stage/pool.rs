//! A stage's idle instances, and the hand-off between its queue and them.
//!
//! Invariant: an instance is idle here or running on one thread — never locked away in
//! the cluster's ready queue. A ticket there says only "give this stage a turn"; the
//! thread that pops it claims an idle instance then. So a cohort sender (which runs
//! the stage on its own thread) never waits for a ticket to be popped: with the
//! instance inside the ticket, cohort senders on every one of a cluster's threads
//! waited for an instance that only those threads could have taken out of the ready
//! queue, and the cluster stopped for good (the staged server's *cache*, at two
//! threads). Whether a turn is scheduled is decided under the pool's lock after looking
//! at the queue, and an enqueue looks at the pool under the same lock after pushing,
//! so an event never waits in a queue while every instance sleeps with no turn on its
//! way. Cohort senders waiting for an instance go before the queue. Written against
//! `super::sync`, so `tests/stage_pool_model.rs` checks it under loom.

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
    /// Turns in the ready queue not yet claimed: at most one for each idle instance.
    scheduled: usize,
    /// Cohort senders waiting for an instance: they go before the queue.
    cohort_waiting: usize,
    /// Source instances whose run has returned.
    finished: usize,
}

impl<I> State<I> {
    /// Schedules a turn if events wait, no cohort sender does, and an idle instance has
    /// no turn on its way yet; returns whether it did.
    fn schedule(&mut self, queue: &impl Queue) -> bool {
        let due = self.cohort_waiting == 0 && !queue.is_empty() && self.idle.len() > self.scheduled;
        self.scheduled += usize::from(due);
        due
    }
}

impl<I> Pool<I> {
    pub(crate) fn new(idle: Vec<I>) -> Self {
        Self {
            state: Mutex::new(State {
                idle,
                scheduled: 0,
                cohort_waiting: 0,
                finished: 0,
            }),
            released: Condvar::default(),
        }
    }

    /// An event was queued: returns whether to put a turn in the ready queue.
    pub(crate) fn wake(&self, queue: &impl Queue) -> bool {
        self.state.lock().schedule(queue)
    }

    /// A thread popped a turn: returns the instance to run it on, or `None` when a
    /// cohort sender took the instance meanwhile (it looks at the queue when it gives
    /// the instance back, so the events are not left waiting).
    pub(crate) fn claim(&self) -> Option<I> {
        let mut state = self.state.lock();
        state.scheduled -= 1;
        state.idle.pop()
    }

    /// A turn (or a cohort sender's run) is over: keeps `instance` idle and returns
    /// whether to put another turn in the ready queue, for events that wait.
    pub(crate) fn after_turn(&self, instance: I, queue: &impl Queue) -> bool {
        let mut state = self.state.lock();
        state.idle.push(instance);
        let again = state.schedule(queue);
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
