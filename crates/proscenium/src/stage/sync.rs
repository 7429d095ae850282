//! The synchronisation primitives `pool.rs` is written against: parking_lot's lock and
//! condition variable in std's shape (a wait takes the guard and gives it back) here,
//! loom's when `tests/stage_pool_model.rs` model-checks it.

use std::time::Instant;

pub(crate) use parking_lot::{Mutex, MutexGuard};

/// parking_lot's condition variable, waited on as std's is.
#[derive(Debug, Default)]
pub(crate) struct Condvar(parking_lot::Condvar);

impl Condvar {
    pub(crate) fn wait<'a, T>(&self, mut guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
        self.0.wait(&mut guard);
        guard
    }

    /// Waits until notified or `deadline`; says whether the deadline passed.
    pub(crate) fn wait_until<'a, T>(
        &self,
        mut guard: MutexGuard<'a, T>,
        deadline: Instant,
    ) -> (MutexGuard<'a, T>, bool) {
        let timed_out = self.0.wait_until(&mut guard, deadline).timed_out();
        (guard, timed_out)
    }

    pub(crate) fn notify_all(&self) {
        self.0.notify_all();
    }
}
