//! Model-checks the lock scheduler behind shared state with loom: `src/shared/lock.rs`,
//! compiled here unchanged against loom's primitives, under every interleaving of a
//! few requests (up to loom's preemption bound). Checked: a writer is alone, readers
//! exclude writers, lock sets taken in the global order never deadlock (loom fails a
//! model in which every thread waits), and a waiter that gives up strands nobody.

// `lock.rs` holds items the crate uses and these models do not.
#![allow(dead_code, unreachable_pub)]

#[path = "loom_lock/mod.rs"]
mod loom_lock;

/// What `lock.rs` is written against: loom's primitives here, with the lock in
/// parking_lot's shape (no poisoning).
mod sync {
    pub(crate) use loom::sync::Arc;
    pub(crate) use loom::sync::atomic::{AtomicBool, Ordering};

    pub(crate) use super::loom_lock::Mutex;
}

#[path = "../src/shared/lock.rs"]
mod lock;

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Waker};

use lock::{Access, Lock, acquire_all};
use loom::future::block_on;
use loom::sync::atomic::AtomicUsize;
use loom::thread;
use sync::{Arc, Ordering};

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(f);
}

/// Who holds a state: readers count 1, a writer [`WRITER`].
struct Inside(AtomicUsize);

const WRITER: usize = 1 << 16;

impl Inside {
    fn new() -> Arc<Self> {
        Arc::new(Self(AtomicUsize::new(0)))
    }

    fn enter(&self, access: Access) {
        match access {
            Access::Read => {
                let before = self.0.fetch_add(1, Ordering::SeqCst);
                assert!(before < WRITER, "a reader beside a writer");
            }
            Access::Write => {
                let before = self.0.fetch_add(WRITER, Ordering::SeqCst);
                assert_eq!(before, 0, "a writer beside someone");
            }
        }
    }

    fn leave(&self, access: Access) {
        let n = if access == Access::Read { 1 } else { WRITER };
        self.0.fetch_sub(n, Ordering::SeqCst);
    }
}

/// Takes `set` (with `tries` attempts first), enters each state, leaves, releases.
fn request(set: &[(Arc<Lock>, Access)], inside: &[Arc<Inside>], tries: usize) {
    let grants = block_on(acquire_all(set, tries));
    for ((_, access), state) in set.iter().zip(inside) {
        state.enter(*access);
    }
    for ((_, access), state) in set.iter().zip(inside) {
        state.leave(*access);
    }
    drop(grants);
}

#[test]
fn writers_are_alone_and_readers_share() {
    model(|| {
        let lock = Arc::new(Lock::default());
        let inside = Inside::new();
        let threads: Vec<_> = [Access::Write, Access::Read, Access::Write]
            .into_iter()
            .enumerate()
            .map(|(i, access)| {
                let (lock, inside) = (lock.clone(), inside.clone());
                thread::spawn(move || request(&[(lock, access)], &[inside], i % 2))
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(inside.0.load(Ordering::SeqCst), 0);
    });
}

#[test]
fn lock_sets_in_the_global_order_never_deadlock() {
    // Routes declaring {A, B} and {B, A}: resolution sorts both into the global order
    // A, B, the order every set is taken in.
    model(|| {
        let (a, b) = (Arc::new(Lock::default()), Arc::new(Lock::default()));
        let inside = [Inside::new(), Inside::new()];
        // Two requests keep the model small enough to explore whole in seconds: one
        // tries first, the other queues at once.
        let sets = [
            [(a.clone(), Access::Write), (b.clone(), Access::Write)],
            [(a, Access::Read), (b, Access::Write)],
        ];
        let threads: Vec<_> = sets
            .into_iter()
            .enumerate()
            .map(|(i, set)| {
                let inside = inside.clone();
                thread::spawn(move || request(&set, &inside, i % 2))
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    });
}

#[test]
fn a_waiter_that_gives_up_strands_nobody() {
    model(|| {
        let lock = Arc::new(Lock::default());
        let held = Lock::try_acquire(&lock, Access::Read).unwrap();
        let quitter = {
            let lock = lock.clone();
            thread::spawn(move || {
                // Queue behind the reader, then give up, as for a client gone away.
                let mut waiting = pin!(Lock::acquire(&lock, Access::Write));
                let _ = waiting
                    .as_mut()
                    .poll(&mut Context::from_waker(Waker::noop()));
            })
        };
        let writer = {
            let lock = lock.clone();
            thread::spawn(move || drop(block_on(Lock::acquire(&lock, Access::Write))))
        };
        drop(held);
        quitter.join().unwrap();
        writer.join().unwrap();
        assert!(Lock::try_acquire(&lock, Access::Write).is_some());
    });
}
