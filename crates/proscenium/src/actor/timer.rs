//! Timers: a message to an actor itself later or every period (`Context::run_later`,
//! `Context::run_interval`), and plain closures scheduled on the system
//! (`System::schedule_once`, `System::schedule_periodic` — the thesis's reminder email
//! and token renewal). Each is a task on the thread that set it; each is cancellable.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

/// Cancels a timer; dropping it leaves the timer running.
#[derive(Debug, Clone, Default)]
pub struct TimerHandle(Arc<Cancel>);

#[derive(Debug, Default)]
struct Cancel {
    cancelled: AtomicBool,
    wake: Notify,
}

impl TimerHandle {
    /// Stops the timer: it fires no more (a firing under way completes).
    pub fn cancel(&self) {
        self.0.cancelled.store(true, Ordering::SeqCst);
        self.0.wake.notify_waiters();
    }

    /// Whether [`cancel`](Self::cancel) was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::SeqCst)
    }
}

/// When a timer fires: once after `delay`, or every `period` after it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Schedule {
    pub(crate) delay: Duration,
    pub(crate) period: Option<Duration>,
}

/// Spawns, on the current thread's local task set, a task that calls `fire` on
/// `schedule` until `handle` is cancelled or `fire` says to stop.
pub(crate) fn start(
    schedule: Schedule,
    handle: &TimerHandle,
    mut fire: impl FnMut() -> bool + 'static,
) {
    let cancel = handle.0.clone();
    tokio::task::spawn_local(async move {
        let mut wait = schedule.delay;
        loop {
            let woken = cancel.wake.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            if cancel.cancelled.load(Ordering::SeqCst) {
                return;
            }
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = woken => return,
            }
            if cancel.cancelled.load(Ordering::SeqCst) || !fire() {
                return;
            }
            match schedule.period {
                Some(period) => wait = period,
                None => return,
            }
        }
    });
}
