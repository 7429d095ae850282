//! Per-loop counters and the watchdog that reports loops stalled in one handler.
//!
//! A loop marks itself busy (with a fresh token and the route) while it runs handler
//! code, and idle after; the watchdog thread samples every loop four times per
//! threshold and warns once per stall that outlives the threshold, naming the route. The counters also feed
//! the JSQ dispatcher: a stalled loop's in-flight request makes it look longer.
//! [`Turning`] reads the same marks for a `prefork` worker's heartbeat, which stops
//! while a loop of the worker is frozen.

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use super::context;

/// Route id meaning "no route matched yet".
pub(crate) const NO_ROUTE: u32 = u32::MAX;

/// Counters one loop writes and other threads read.
#[derive(Debug, Default)]
pub(crate) struct LoopStats {
    /// Connections given to this loop and not yet closed.
    pub(crate) conns: AtomicUsize,
    /// Requests being handled.
    pub(crate) inflight: AtomicUsize,
    /// Requests handled in all.
    pub(crate) requests: AtomicU64,
    /// A token for the stretch of handler code running now, or 0 when idle.
    busy: AtomicU64,
    /// The last token handed out; only the loop itself writes it.
    tokens: AtomicU64,
    /// The route of the handler code running.
    route: AtomicU32,
    /// How long its turns took (`turns.rs`).
    pub(crate) turns: super::turns::Turns,
    /// Connections the dispatcher handed over that the loop has not taken yet.
    pub(crate) handed: AtomicUsize,
}

/// `inflight` and `requests` are written by their loop alone (the acceptor writes
/// `conns`, so that one takes locked adds): a load and a store instead of a locked
/// read-modify-write, which costs some twenty cycles and was three per request.
impl LoopStats {
    /// Returns the JSQ queue length: live connections plus requests in flight.
    pub(crate) fn load(&self) -> usize {
        self.conns.load(Ordering::Relaxed) + self.inflight.load(Ordering::Relaxed)
    }

    /// Counts a request begun on this loop.
    pub(crate) fn count_request(&self) {
        let n = self.requests.load(Ordering::Relaxed);
        self.requests.store(n + 1, Ordering::Relaxed);
    }

    /// Counts a request in flight (`up`) or no longer (`!up`) on this loop.
    pub(crate) fn count_inflight(&self, up: bool) {
        let n = self.inflight.load(Ordering::Relaxed);
        let n = if up { n + 1 } else { n.saturating_sub(1) };
        self.inflight.store(n, Ordering::Relaxed);
    }
}

/// The loops' counters, filled in once the loops have started (an
/// [`App`](crate::App) carries a handle to them, so its `/_status` route can read them).
#[derive(Debug, Clone, Default)]
pub(crate) struct LiveStats(Arc<OnceLock<Vec<Arc<LoopStats>>>>);

impl LiveStats {
    pub(crate) fn set(&self, stats: Vec<Arc<LoopStats>>) {
        let _ = self.0.set(stats);
    }

    pub(crate) fn get(&self) -> &[Arc<LoopStats>] {
        self.0.get().map_or(&[], Vec::as_slice)
    }
}

/// Marks the current loop busy in `route` until dropped.
///
/// Costs two relaxed stores and no clock read: the watchdog, not the loop, measures
/// how long a token stays busy.
#[derive(Debug)]
pub(crate) struct Busy(());

impl Busy {
    pub(crate) fn enter(route: u32) -> Self {
        ROUTE.set(route);
        context::with_current(|ctx| {
            let stats = &ctx.stats;
            let token = stats.tokens.load(Ordering::Relaxed) + 1;
            stats.tokens.store(token, Ordering::Relaxed);
            stats.route.store(route, Ordering::Relaxed);
            stats.busy.store(token, Ordering::Relaxed);
        });
        Self(())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        context::with_current(|ctx| ctx.stats.busy.store(0, Ordering::Relaxed));
    }
}

thread_local! {
    /// The route last recorded on this thread, loop or not: read back by the thread
    /// itself (its loop's `route` is for the watchdog, on another thread).
    static ROUTE: Cell<u32> = const { Cell::new(NO_ROUTE) };
}

/// Records the route whose handler the current thread is about to run (or, on a
/// connection's thread, the route whose answer it is about to send).
pub(crate) fn set_route(route: u32) {
    ROUTE.set(route);
    context::with_current(|ctx| ctx.stats.route.store(route, Ordering::Relaxed));
}

/// Returns the route last recorded on the current thread.
pub(crate) fn current_route() -> u32 {
    ROUTE.get()
}

/// What the watchdog remembers of one loop between samples.
#[derive(Debug, Clone, Copy, Default)]
struct Seen {
    token: u64,
    since: Option<Instant>,
    reported: bool,
}

impl Seen {
    /// Takes the busy `token` seen at `now`; returns how long the loop has been busy in
    /// its current stretch of handler code (zero when idle, or the stretch is new).
    fn busy_for(&mut self, token: u64, now: Instant) -> Duration {
        if token == 0 || token != self.token {
            *self = Self {
                token,
                since: Some(now),
                reported: false,
            };
            return Duration::ZERO;
        }
        now - self.since.unwrap_or(now)
    }
}

/// Tells whether every loop of this process turns: none has been busy in one stretch
/// of handler code for longer than a bound. A `prefork` worker beats only while they
/// do, so that the supervisor replaces a worker whose loops are frozen (a heartbeat
/// from a thread of its own once kept such a worker beating for good).
#[derive(Debug)]
pub(crate) struct Turning {
    live: LiveStats,
    seen: Vec<Seen>,
}

impl Turning {
    /// Watches the loops `live` will hold (none yet: they all turn).
    pub(crate) fn new(live: LiveStats) -> Self {
        Self {
            live,
            seen: Vec::new(),
        }
    }

    /// Samples the loops now; returns whether none has been busy in one stretch for
    /// longer than `bound` (as of this and earlier samples).
    pub(crate) fn every_loop_within(&mut self, bound: Duration) -> bool {
        let loops = self.live.get();
        self.seen.resize(loops.len(), Seen::default());
        let now = Instant::now();
        // Every loop sampled (no early return): each keeps its stretch's start.
        let frozen = loops
            .iter()
            .zip(&mut self.seen)
            .map(|(stats, seen)| seen.busy_for(stats.busy.load(Ordering::Relaxed), now))
            .filter(|busy| *busy > bound)
            .count();
        frozen == 0
    }
}

/// Samples loops and warns about stalls; stops when `running` says so.
///
/// A loop is stalled when the same busy token is seen for longer than `threshold`;
/// with sampling every quarter threshold, a stall is reported within 1.25× of it.
pub(crate) fn watch(
    loops: &[Arc<LoopStats>],
    threshold: Duration,
    label: &dyn Fn(u32) -> String,
    running: &dyn Fn() -> bool,
) {
    let period = (threshold / 4).max(Duration::from_millis(5));
    let mut seen = vec![Seen::default(); loops.len()];
    while running() {
        std::thread::sleep(period);
        let now = Instant::now();
        for (id, (stats, seen)) in loops.iter().zip(&mut seen).enumerate() {
            let busy = seen.busy_for(stats.busy.load(Ordering::Relaxed), now);
            if busy > threshold && !seen.reported {
                seen.reported = true;
                let route = label(stats.route.load(Ordering::Relaxed));
                tracing::warn!(
                    "loop {id} stalled for {} ms in {route}: mark the handler blocking or make it async",
                    busy.as_millis()
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loop_busy_in_one_stretch_past_the_bound_is_not_turning() {
        let stats = vec![
            Arc::new(LoopStats::default()),
            Arc::new(LoopStats::default()),
        ];
        let live = LiveStats::default();
        let mut turning = Turning::new(live.clone());
        assert!(turning.every_loop_within(Duration::ZERO), "no loops yet");
        live.set(stats.clone());
        stats[1].busy.store(7, Ordering::Relaxed);
        assert!(
            turning.every_loop_within(Duration::ZERO),
            "a stretch just begun"
        );
        let deadline = Instant::now() + Duration::from_secs(30);
        while turning.every_loop_within(Duration::from_millis(1)) {
            assert!(Instant::now() < deadline, "loop 1 is frozen");
            std::thread::sleep(Duration::from_millis(2));
        }
        stats[1].busy.store(8, Ordering::Relaxed);
        assert!(
            turning.every_loop_within(Duration::ZERO),
            "a new stretch: it turned"
        );
        stats[1].busy.store(0, Ordering::Relaxed);
        assert!(turning.every_loop_within(Duration::ZERO), "idle");
    }
}
