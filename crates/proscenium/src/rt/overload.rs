//! Overload control: the cap on live connections (accepting pauses at it and resumes
//! below it), and one log line a second for every bound that was hit, with how often.
//!
//! The other bounds — requests in flight per loop, the blocking pool's queue, the
//! thread pool's queue — answer 503 with `Retry-After` where they are checked, and
//! report here.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::sync::Notify;

use super::board::Seat;

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
}

impl Bound {
    fn describe(self) -> &'static str {
        match self {
            Self::Connections => "connection cap reached: accepting paused",
            Self::Inflight => "in-flight cap of a loop reached: requests answered 503",
            Self::BlockingQueue => "blocking pool queue full: requests answered 503",
            Self::ThreadQueue => "thread pool queue full: connections answered 503",
        }
    }
}

/// Per bound: times hit since the last log line, and the second of that line.
static HITS: [(AtomicU64, AtomicU64); 4] = [const { (AtomicU64::new(0), AtomicU64::new(0)) }; 4];

/// Records that `bound` was hit; logs at most once a second per bound.
pub(crate) fn note(bound: Bound) {
    let (hits, logged_at) = &HITS[bound as usize];
    hits.fetch_add(1, Ordering::Relaxed);
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
    live: AtomicUsize,
    max: usize,
    freed: Notify,
    seat: Option<Seat>,
}

impl Gate {
    pub(crate) fn new(max: usize, seat: Option<Seat>) -> Arc<Self> {
        Arc::new(Self {
            live: AtomicUsize::new(0),
            max: max.max(1),
            freed: Notify::new(),
            seat,
        })
    }

    /// Waits until one more connection may be accepted: below the cap, and in a
    /// `prefork` worker when no other worker holds fewer connections.
    pub(crate) async fn admit(&self) {
        loop {
            let freed = self.freed.notified();
            if self.live.load(Ordering::Acquire) < self.max {
                break;
            }
            note(Bound::Connections);
            freed.await;
        }
        if let Some(seat) = &self.seat {
            seat.wait_turn().await;
        }
    }

    /// Counts a connection until the returned pass is dropped.
    pub(crate) fn enter(self: &Arc<Self>) -> Pass {
        let live = self.live.fetch_add(1, Ordering::AcqRel) + 1;
        self.publish(live);
        Pass(self.clone())
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
}

/// A live connection's place under the cap.
#[derive(Debug)]
pub(crate) struct Pass(Arc<Gate>);

impl Drop for Pass {
    fn drop(&mut self) {
        let live = self.0.live.fetch_sub(1, Ordering::AcqRel) - 1;
        self.0.publish(live);
        self.0.freed.notify_one();
    }
}
