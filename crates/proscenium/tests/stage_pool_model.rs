//! Model-checks the hand-off between a stage's queue and its idle instances with loom:
//! `src/stage/pool.rs`, compiled here unchanged against loom's lock and condition
//! variable, under every interleaving of senders, turns and a cohort sender up to
//! loom's preemption bound. Checked: an event queued never waits with every instance
//! idle and no turn on its way (each model runs what is left ready at its end and finds
//! the queue empty); a cohort sender gets an instance without a turn having to run
//! first, and the queue is still served after it; the stage is quiet at the end.
//!
//! The queue is an atomic count here (the stage's is a crossbeam channel, which loom
//! does not see into), and the cluster's ready queue a count of turns.

// `pool.rs` holds items these models do not use.
#![allow(dead_code, unreachable_pub)]

#[path = "loom_lock/mod.rs"]
mod loom_lock;

/// What `pool.rs` is written against: loom's primitives here, in the shape of the
/// crate's `stage/sync.rs`.
mod sync {
    use std::time::Instant;

    pub(crate) use super::loom_lock::{Mutex, MutexGuard};

    pub(crate) struct Condvar(loom::sync::Condvar);

    impl Default for Condvar {
        fn default() -> Self {
            Self(loom::sync::Condvar::new())
        }
    }

    impl Condvar {
        pub(crate) fn wait<'a, T>(&self, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
            self.0.wait(guard).expect("no model panics holding it")
        }

        /// Loom has no clock: a timed wait is a wait (a model that would need the
        /// deadline deadlocks, and fails).
        pub(crate) fn wait_until<'a, T>(
            &self,
            guard: MutexGuard<'a, T>,
            _deadline: Instant,
        ) -> (MutexGuard<'a, T>, bool) {
            (self.wait(guard), false)
        }

        pub(crate) fn notify_all(&self) {
            self.0.notify_all();
        }
    }
}

#[path = "../src/stage/pool.rs"]
mod pool;

use std::time::Instant;

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::{Arc, Mutex};
use loom::thread;
use pool::{Pool, Queue};

/// A stage's queue, as a count of events.
#[derive(Default)]
struct Events(AtomicUsize);

impl Queue for Events {
    fn is_empty(&self) -> bool {
        self.0.load(Ordering::SeqCst) == 0
    }
}

impl Events {
    fn len(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// A stage and its cluster's ready queue.
struct Stage {
    pool: Pool<u32>,
    events: Events,
    ready: Mutex<usize>,
}

impl Stage {
    fn new(instances: u32) -> Arc<Self> {
        Arc::new(Self {
            pool: Pool::new((0..instances).collect()),
            events: Events::default(),
            ready: Mutex::new(0),
        })
    }

    /// A sender: queues an event, then wakes an instance if one must go.
    fn send(&self) {
        self.events.0.fetch_add(1, Ordering::SeqCst);
        if self.pool.wake(&self.events) {
            *self.ready.lock().unwrap() += 1;
        }
    }

    /// A cluster thread: pops a turn, if there is one, and runs it (a batch of one
    /// event) on the instance it claims; returns whether there was a turn.
    fn run_a_turn(&self) -> bool {
        {
            let mut ready = self.ready.lock().unwrap();
            let Some(left) = ready.checked_sub(1) else {
                return false;
            };
            *ready = left;
        }
        if let Some(instance) = self.pool.claim() {
            self.take_an_event();
            self.release(instance);
        }
        true
    }

    fn take_an_event(&self) {
        let _ = self
            .events
            .0
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
    }

    fn release(&self, instance: u32) {
        if self.pool.after_turn(instance, &self.events) {
            *self.ready.lock().unwrap() += 1;
        }
    }

    /// After every thread: runs what is left ready, then checks nothing waits and the
    /// stage is quiet.
    fn finish(&self, instances: usize) {
        while self.run_a_turn() {}
        assert_eq!(
            self.events.len(),
            0,
            "an event left queued with every instance idle"
        );
        assert!(
            self.pool
                .wait_quiet(&self.events, instances, false, Instant::now()),
            "an instance neither idle nor ready"
        );
    }
}

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(f);
}

#[test]
fn an_event_sent_during_a_turn_is_taken_by_the_next() {
    model(|| {
        let stage = Stage::new(1);
        let sender = {
            let stage = stage.clone();
            thread::spawn(move || {
                stage.send();
                stage.send();
            })
        };
        let worker = {
            let stage = stage.clone();
            thread::spawn(move || while stage.run_a_turn() {})
        };
        sender.join().unwrap();
        worker.join().unwrap();
        stage.finish(1);
    });
}

#[test]
fn two_senders_and_two_instances_leave_nothing_waiting() {
    model(|| {
        let stage = Stage::new(2);
        let senders: Vec<_> = (0..2)
            .map(|_| {
                let stage = stage.clone();
                thread::spawn(move || stage.send())
            })
            .collect();
        while stage.run_a_turn() {}
        for sender in senders {
            sender.join().unwrap();
        }
        stage.finish(2);
    });
}

#[test]
fn a_cohort_sender_gets_the_instance_and_the_queue_is_still_served() {
    model(|| {
        let stage = Stage::new(1);
        let done = Arc::new(AtomicBool::new(false));
        let cohort = {
            let (stage, done) = (stage.clone(), done.clone());
            thread::spawn(move || {
                let instance = stage.pool.take_for_cohort();
                stage.release(instance);
                done.store(true, Ordering::SeqCst);
            })
        };
        let sender = {
            let stage = stage.clone();
            thread::spawn(move || stage.send())
        };
        // This thread is the cluster's: it runs turns until the cohort sender is done.
        while !done.load(Ordering::SeqCst) {
            if !stage.run_a_turn() {
                thread::yield_now();
            }
        }
        cohort.join().unwrap();
        sender.join().unwrap();
        stage.finish(1);
    });
}

#[test]
fn a_cohort_sender_never_waits_for_a_turn_to_be_popped() {
    // No thread runs turns until both are done: the cluster's threads are the cohort
    // senders themselves. With the instance inside its turn, the cohort sender waited
    // for ever.
    model(|| {
        let stage = Stage::new(1);
        let sender = {
            let stage = stage.clone();
            thread::spawn(move || stage.send())
        };
        let cohort = {
            let stage = stage.clone();
            thread::spawn(move || {
                let instance = stage.pool.take_for_cohort();
                stage.release(instance);
            })
        };
        sender.join().unwrap();
        cohort.join().unwrap();
        stage.finish(1);
    });
}
