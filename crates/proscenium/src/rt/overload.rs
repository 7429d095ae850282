//! Overload control: the cap on live connections (accepting pauses at it and resumes
//! below it), and one log line a second for every bound that was hit, with how often.
//!
//! The other bounds — requests in flight per loop, the blocking pool's queue, the
//! thread pool's queue and the wait for a thread — answer 503 with `Retry-After` where they are checked, and
//! report here.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::sync::Notify;

use super::board::Seat;
use super::slots::Slots;

/// A bound the server enforces.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Bound {
    /// `limits.max_connections`: accepting paused.
    Connections,
    /// `limits.max_inflight`: requests answered 503.
    Inflight,
    /// `blocking_queue`: blocking work answered 503.
    BlockingQueue,
    /// `thread_queue`: connections answered 503.
    ThreadQueue,
    /// `timeouts.queue`: connections that waited too long for a thread answered 503.
    QueueWait,
    /// A staged model's stage queue (`[clusters.http] queue`): connections answered 503.
    StageQueue,
    /// `[lua] queue`: Lua requests answered 503.
    LuaQueue,
    /// `[lua] retired`: Lua requests answered 503 while too many script threads run
    /// past their deadline.
    LuaRetired,
}

impl Bound {
    /// Every bound, in the order of their counters.
    pub(crate) const ALL: [Self; 8] = [
        Self::Connections,
        Self::Inflight,
        Self::BlockingQueue,
        Self::ThreadQueue,
        Self::QueueWait,
        Self::StageQueue,
        Self::LuaQueue,
        Self::LuaRetired,
    ];

    /// Returns the bound's name in `/metrics`: its setting.
    #[cfg_attr(
        not(feature = "metrics"),
        expect(dead_code, reason = "only /metrics reads it")
    )]
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Connections => "max_connections",
            Self::Inflight => "max_inflight",
            Self::BlockingQueue => "blocking_queue",
            Self::ThreadQueue => "thread_queue",
            Self::QueueWait => "queue_timeout",
            Self::StageQueue => "stage_queue",
            Self::LuaQueue => "lua_queue",
            Self::LuaRetired => "lua_retired",
        }
    }

    /// Returns how often this process has hit the bound since it started: refusals,
    /// or for `Connections` the times accepting paused.
    #[cfg_attr(
        not(feature = "metrics"),
        expect(dead_code, reason = "only /metrics reads it")
    )]
    pub(crate) fn hits(self) -> u64 {
        TOTALS[self as usize].load(Ordering::Relaxed)
    }

    fn describe(self) -> &'static str {
        match self {
            Self::Connections => "connection cap reached: accepting paused",
            Self::Inflight => "in-flight cap of a loop reached: requests answered 503",
            Self::BlockingQueue => "blocking pool queue full: requests answered 503",
            Self::ThreadQueue => "thread pool queue full: connections answered 503",
            Self::QueueWait => "no thread free within timeouts.queue: connections answered 503",
            Self::StageQueue => "a stage queue of the staged server full: connections answered 503",
            Self::LuaQueue => "the Lua queue full: Lua requests answered 503",
            Self::LuaRetired => {
                "[lua] retired script threads still running past their deadline: Lua requests answered 503"
            }
        }
    }
}

/// Per bound: times hit since the last log line, and the second of that line.
static HITS: [(AtomicU64, AtomicU64); Bound::ALL.len()] =
    [const { (AtomicU64::new(0), AtomicU64::new(0)) }; Bound::ALL.len()];

/// Per bound: times hit since the process started, for `/metrics`.
static TOTALS: [AtomicU64; Bound::ALL.len()] = [const { AtomicU64::new(0) }; Bound::ALL.len()];

/// Records that `bound` was hit; logs at most once a second per bound.
pub(crate) fn note(bound: Bound) {
    let (hits, logged_at) = &HITS[bound as usize];
    hits.fetch_add(1, Ordering::Relaxed);
    TOTALS[bound as usize].fetch_add(1, Ordering::Relaxed);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let last = logged_at.load(Ordering::Relaxed);
    if now != last
        && logged_at
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    {
        let count = hits.swap(0, Ordering::Relaxed);
        tracing::warn!("overload: {} ({count} times)", bound.describe());
    }
}

/// The cap on live connections, shared by every acceptor of a server; in a `prefork`
/// worker also its seat on the load board, so that the workers take turns.
#[derive(Debug)]
pub(crate) struct Gate {
    live: Slots,
    /// Connections accepted since the server started (one locked add a connection,
    /// beside the compare-and-swap that took its place).
    accepted: AtomicU64,
    freed: Notify,
    seat: Option<Seat>,
}

impl Gate {
    pub(crate) fn new(max: usize, seat: Option<Seat>) -> Arc<Self> {
        Arc::new(Self {
            live: Slots::new(max),
            accepted: AtomicU64::new(0),
            freed: Notify::new(),
            seat,
        })
    }

    /// Waits until one more connection may be accepted — a place under the cap, and in
    /// a `prefork` worker its turn — and holds that place for the accept to come.
    pub(crate) async fn admit(self: &Arc<Self>) -> Reservation {
        loop {
            let freed = self.freed.notified();
            if self.live.try_take().is_some() {
                let reserved = Reservation(Some(self.clone()));
                if let Some(seat) = &self.seat {
                    seat.wait_turn().await;
                }
                return reserved;
            }
            note(Bound::Connections);
            freed.await;
        }
    }

    /// Returns how many connections hold a place.
    pub(crate) fn live(&self) -> usize {
        self.live.taken()
    }

    /// Returns how many connections were accepted in all.
    #[cfg_attr(
        not(feature = "metrics"),
        expect(dead_code, reason = "only /metrics reads it")
    )]
    pub(crate) fn accepted(&self) -> u64 {
        self.accepted.load(Ordering::Relaxed)
    }

    /// Says this server accepts no more (a `prefork` worker leaves the board).
    pub(crate) fn withdraw(&self) {
        if let Some(seat) = &self.seat {
            seat.withdraw();
        }
    }

    fn publish(&self, live: usize) {
        if let Some(seat) = &self.seat {
            seat.publish(live);
        }
    }

    fn release(&self) {
        let live = self.live.give_back();
        self.publish(live);
        self.freed.notify_one();
    }
}

/// A place under the cap, held for a connection not yet accepted; given back if it is
/// dropped before [`Reservation::accept`].
#[derive(Debug)]
pub(crate) struct Reservation(Option<Arc<Gate>>);

impl Reservation {
    /// Gives the place to the accepted connection, and counts it on the load board.
    pub(crate) fn accept(mut self) -> Pass {
        let gate = self
            .0
            .take()
            .expect("a reservation holds its gate until accepted");
        gate.publish(gate.live.taken());
        gate.accepted.fetch_add(1, Ordering::Relaxed);
        Pass(gate)
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if let Some(gate) = self.0.take() {
            gate.release();
        }
    }
}

/// A live connection's place under the cap.
#[derive(Debug)]
pub(crate) struct Pass(Arc<Gate>);

impl Drop for Pass {
    fn drop(&mut self) {
        self.0.release();
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    use super::*;

    #[test]
    fn a_place_is_held_from_admission_and_freed_by_its_connection_or_its_failure() {
        let gate = Gate::new(2, None);
        let mut cx = Context::from_waker(Waker::noop());
        let admit = |cx: &mut Context<'_>| match pin!(gate.admit()).poll(cx) {
            Poll::Ready(reserved) => Some(reserved),
            Poll::Pending => None,
        };
        let first = admit(&mut cx).expect("a place is free").accept();
        let second = admit(&mut cx).expect("a second place is free");
        assert!(
            admit(&mut cx).is_none(),
            "the cap holds while an accept is pending"
        );
        drop(second);
        let third = admit(&mut cx).expect("a failed accept gives its place back");
        drop(first);
        assert!(
            admit(&mut cx).is_some(),
            "a closed connection gives its place back"
        );
        drop(third);
        assert_eq!(gate.live.taken(), 0);
    }
}
