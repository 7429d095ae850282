//! The idle keep-alive connections of one loop, woken together when shutdown begins.
//!
//! An idle connection waits on its socket and its own timer; for shutdown it leaves its
//! waker here instead of holding a shutdown future of its own (tokio's `watch`
//! `changed()` is 120 bytes, in every idle connection's task).

use std::cell::RefCell;
use std::task::Waker;

use slab::Slab;

#[derive(Debug, Default)]
pub(crate) struct Sleepers {
    wakers: RefCell<Slab<Waker>>,
}

impl Sleepers {
    /// Wakes every sleeper (shutdown has begun); they leave as they wake.
    pub(crate) fn wake_all(&self) {
        for (_, waker) in self.wakers.borrow().iter() {
            waker.wake_by_ref();
        }
    }
}

/// One connection's place among the sleepers while it waits; it leaves when dropped.
pub(crate) struct Sleeping<'a> {
    sleepers: &'a Sleepers,
    key: Option<usize>,
}

impl<'a> Sleeping<'a> {
    pub(crate) fn new(sleepers: &'a Sleepers) -> Self {
        Self {
            sleepers,
            key: None,
        }
    }

    /// Leaves `waker` to be woken at shutdown (replacing the one left before).
    pub(crate) fn park(&mut self, waker: &Waker) {
        let mut wakers = self.sleepers.wakers.borrow_mut();
        match self.key {
            Some(key) => wakers[key].clone_from(waker),
            None => self.key = Some(wakers.insert(waker.clone())),
        }
    }
}

impl Drop for Sleeping<'_> {
    fn drop(&mut self) {
        if let Some(key) = self.key {
            self.sleepers.wakers.borrow_mut().remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_parked_sleeper_is_woken_once_per_wake_all_until_it_leaves() {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(count.clone());
        let sleepers = Sleepers::default();
        let mut sleeping = Sleeping::new(&sleepers);
        sleeping.park(&waker);
        sleeping.park(&waker);
        sleepers.wake_all();
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        drop(sleeping);
        sleepers.wake_all();
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert!(sleepers.wakers.borrow().is_empty());
    }
}
