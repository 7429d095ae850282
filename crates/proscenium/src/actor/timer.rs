//! Timers: a message to an actor itself later or every period (`Context::run_later`,
//! `Context::run_interval`), and plain closures scheduled on the system
//! (`System::schedule_once`, `System::schedule_periodic` — the thesis's reminder email
//! and token renewal). Each is a task on the thread that set it; each is cancellable,
//! and each ends as soon as its owner does — the actor stops, or the system shuts down —
//! rather than sleeping out its delay: a dispatcher thread waits for its tasks at
//! shutdown, and a reminder a day away once kept the process a day.

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
        self.0.is_cancelled()
    }
}

impl Cancel {
    fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }
}

/// When a timer fires: once after `delay`, or every `period` after it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Schedule {
    pub(crate) delay: Duration,
    pub(crate) period: Option<Duration>,
}

/// Spawns, on the current thread's local task set, a task that calls `fire` on
/// `schedule` until `handle` or its owner's `owner` is cancelled, or `fire` says to
/// stop.
pub(crate) fn start(
    schedule: Schedule,
    handle: &TimerHandle,
    owner: &TimerHandle,
    mut fire: impl FnMut() -> bool + 'static,
) {
    let (cancel, owner) = (handle.0.clone(), owner.0.clone());
    tokio::task::spawn_local(async move {
        let mut wait = schedule.delay;
        loop {
            let (woken, owner_gone) = (cancel.wake.notified(), owner.wake.notified());
            tokio::pin!(woken, owner_gone);
            woken.as_mut().enable();
            owner_gone.as_mut().enable();
            let ended = || cancel.is_cancelled() || owner.is_cancelled();
            if ended() {
                return;
            }
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = woken => return,
                () = owner_gone => return,
            }
            if ended() || !fire() {
                return;
            }
            match schedule.period {
                Some(period) => wait = period,
                None => return,
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use crate::actor::{Actor, Context, Handler, Message, Props, System};

    use super::*;

    const AN_HOUR: Duration = Duration::from_secs(3600);

    /// Sets a reminder to itself an hour away as it starts, as social's Mailman does,
    /// and says so.
    struct Reminding(mpsc::Sender<()>);

    struct Remind;
    impl Message for Remind {
        type Reply = ();
    }

    impl Actor for Reminding {
        fn started(&mut self, ctx: &mut Context<Self>) {
            ctx.run_later(AN_HOUR, Remind);
            let _ = self.0.send(());
        }
    }

    impl Handler<Remind> for Reminding {
        fn handle(&mut self, _: Remind, _: &mut Context<Self>) {}
    }

    /// Shuts `system` down on a thread of its own; panics unless it completes within
    /// 30 s (an hour's timer that held it would take an hour).
    fn shuts_down_promptly(system: System) {
        let (done, shut) = mpsc::channel();
        std::thread::spawn(move || {
            system.shutdown();
            let _ = done.send(());
        });
        shut.recv_timeout(Duration::from_secs(30))
            .expect("the system shuts down with a timer pending");
    }

    #[test]
    fn an_actor_timer_an_hour_away_does_not_hold_up_shutdown() {
        let system = System::new();
        let (set, was_set) = mpsc::channel();
        system.spawn(Props::named("reminding"), move || Reminding(set.clone()));
        was_set
            .recv_timeout(Duration::from_secs(30))
            .expect("the timer is set");
        shuts_down_promptly(system);
    }

    #[test]
    fn a_system_timer_an_hour_away_does_not_hold_up_shutdown() {
        let system = System::new();
        // Set on a dispatcher thread, which runs its queued jobs before it stops.
        system.schedule_once(AN_HOUR, || {});
        shuts_down_promptly(system);
    }
}
