//! The lock scheduler behind shared state: a fair reader-writer lock whose waiting is
//! asynchronous, and the acquisition of a whole lock set — tried together, deferred on
//! contention, then awaited in one global order (Node.Scala, sec. 4.1).
//!
//! A [`Lock`] guards no value; the state module pairs each with its value. This file
//! uses only `std` and its parent's `sync` module, so `tests/lock_model.rs` compiles it
//! unchanged against loom's primitives and checks every interleaving of the algorithm.
//!
//! Fairness: a lock with anyone queued admits no newcomer, not even a reader while
//! readers hold it, so a writer in the queue is reached once the holders ahead of it
//! release. Releases hand the lock to the queue's front: one writer, or every reader up
//! to the next writer.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use super::sync::{Arc, AtomicBool, Mutex, Ordering};

/// How a lock is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Access {
    /// Shared with other readers.
    Read,
    /// Exclusive.
    Write,
}

/// A fair reader-writer lock with asynchronous waiting.
#[derive(Debug, Default)]
pub(crate) struct Lock {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    readers: usize,
    writer: bool,
    queue: VecDeque<Arc<Waiter>>,
}

/// A place in a lock's queue. `granted` is set, under the lock's state mutex, when the
/// lock is handed to it; the waiter's future then completes.
#[derive(Debug)]
struct Waiter {
    access: Access,
    granted: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl State {
    fn admits(&self, access: Access) -> bool {
        match access {
            Access::Read => !self.writer,
            Access::Write => !self.writer && self.readers == 0,
        }
    }

    fn take(&mut self, access: Access) {
        match access {
            Access::Read => self.readers += 1,
            Access::Write => self.writer = true,
        }
    }

    fn give_back(&mut self, access: Access) {
        match access {
            Access::Read => self.readers -= 1,
            Access::Write => self.writer = false,
        }
    }

    /// Hands the lock to the queue's front while it fits; returns whom to wake.
    fn grant_waiting(&mut self) -> Vec<Arc<Waiter>> {
        let mut woken = Vec::new();
        while let Some(front) = self.queue.front() {
            if !self.admits(front.access) {
                break;
            }
            self.take(front.access);
            if let Some(waiter) = self.queue.pop_front() {
                waiter.granted.store(true, Ordering::Release);
                woken.push(waiter);
            }
        }
        woken
    }
}

/// Wakes the futures of granted waiters; called with no state mutex held.
fn wake(waiters: Vec<Arc<Waiter>>) {
    for waiter in waiters {
        let waker = waiter.waker.lock().take();
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl Lock {
    /// Takes the lock now if it is free for `access` and nobody is queued.
    pub(crate) fn try_acquire(this: &Arc<Self>, access: Access) -> Option<Grant> {
        let mut state = this.state.lock();
        if !state.queue.is_empty() || !state.admits(access) {
            return None;
        }
        state.take(access);
        Some(Grant {
            lock: Arc::clone(this),
            access,
        })
    }

    /// Returns a future that takes the lock in queue order.
    pub(crate) fn acquire(this: &Arc<Self>, access: Access) -> Acquire {
        Acquire {
            lock: Arc::clone(this),
            access,
            waiter: None,
            done: false,
        }
    }

    fn release(&self, access: Access) {
        let woken = {
            let mut state = self.state.lock();
            state.give_back(access);
            state.grant_waiting()
        };
        wake(woken);
    }
}

/// A held lock; dropping it releases the lock and hands it on.
#[derive(Debug)]
pub(crate) struct Grant {
    lock: Arc<Lock>,
    access: Access,
}

impl Grant {
    /// How the lock is held.
    pub(crate) fn access(&self) -> Access {
        self.access
    }
}

impl Drop for Grant {
    fn drop(&mut self) {
        self.lock.release(self.access);
    }
}

/// The future of [`Lock::acquire`]. Dropped before it completes, it leaves the queue,
/// or gives back a lock handed to it meanwhile.
#[derive(Debug)]
pub(crate) struct Acquire {
    lock: Arc<Lock>,
    access: Access,
    waiter: Option<Arc<Waiter>>,
    done: bool,
}

impl Acquire {
    fn granted(&mut self) -> Poll<Grant> {
        self.done = true;
        Poll::Ready(Grant {
            lock: Arc::clone(&self.lock),
            access: self.access,
        })
    }
}

impl Future for Acquire {
    type Output = Grant;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Grant> {
        let Some(waiter) = self.waiter.clone() else {
            let mut state = self.lock.state.lock();
            if state.queue.is_empty() && state.admits(self.access) {
                state.take(self.access);
                drop(state);
                return self.granted();
            }
            let waiter = Arc::new(Waiter {
                access: self.access,
                granted: AtomicBool::new(false),
                waker: Mutex::new(Some(cx.waker().clone())),
            });
            state.queue.push_back(Arc::clone(&waiter));
            drop(state);
            self.waiter = Some(waiter);
            return Poll::Pending;
        };
        if waiter.granted.load(Ordering::Acquire) {
            return self.granted();
        }
        *waiter.waker.lock() = Some(cx.waker().clone());
        // A grant between the check above and storing the waker found no waker to wake.
        if waiter.granted.load(Ordering::Acquire) {
            return self.granted();
        }
        Poll::Pending
    }
}

impl Drop for Acquire {
    fn drop(&mut self) {
        let Some(waiter) = self.waiter.take() else {
            return;
        };
        if self.done {
            return;
        }
        let woken = {
            let mut state = self.lock.state.lock();
            if waiter.granted.load(Ordering::Acquire) {
                state.give_back(self.access);
            } else {
                state.queue.retain(|queued| !Arc::ptr_eq(queued, &waiter));
            }
            // Leaving the front may let the waiters behind in.
            state.grant_waiting()
        };
        wake(woken);
    }
}

/// Takes every lock of `set` now, or none: a lock that is busy releases those taken.
pub(crate) fn try_acquire_all(set: &[(Arc<Lock>, Access)]) -> Option<Vec<Grant>> {
    set.iter()
        .map(|(lock, access)| Lock::try_acquire(lock, *access))
        .collect()
}

/// Takes every lock of `set`, which is in the global order: first `tries` attempts to
/// take them all at once, yielding to the loop's other work between attempts; then each
/// in order, waiting in its queue. One global order means no cycle of waiters, so no
/// deadlock; the queues are fair, so no starvation.
pub(crate) async fn acquire_all(set: &[(Arc<Lock>, Access)], tries: usize) -> Vec<Grant> {
    for _ in 0..tries {
        if let Some(grants) = try_acquire_all(set) {
            return grants;
        }
        YieldNow(false).await;
    }
    let mut grants = Vec::with_capacity(set.len());
    for (lock, access) in set {
        grants.push(Lock::acquire(lock, *access).await);
    }
    grants
}

/// Returns `Pending` once, asking to be polled again: the loop serves its other ready
/// work first.
struct YieldNow(bool);

impl Future for YieldNow {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}
