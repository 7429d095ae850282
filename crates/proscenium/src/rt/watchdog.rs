//! Per-loop counters and the watchdog that reports loops stalled in one handler.
//!
//! A loop marks itself busy (with a fresh token and the route) while it runs handler
//! code, and idle after; the watchdog thread samples every loop four times per
//! threshold and warns once per stall that outlives the threshold, naming the route. The counters also feed
//! the JSQ dispatcher: a stalled loop's in-flight request makes it look longer.

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

/// Records the route whose handler the current loop is about to run.
pub(crate) fn set_route(route: u32) {
    context::with_current(|ctx| ctx.stats.route.store(route, Ordering::Relaxed));
}

/// Returns the route last recorded on the current loop.
pub(crate) fn current_route() -> u32 {
    context::with_current(|ctx| ctx.stats.route.load(Ordering::Relaxed)).unwrap_or(NO_ROUTE)
}

/// What the watchdog remembers of one loop between samples.
#[derive(Debug, Clone, Copy, Default)]
struct Seen {
    token: u64,
    since: Option<Instant>,
    reported: bool,
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
            let token = stats.busy.load(Ordering::Relaxed);
            if token == 0 || token != seen.token {
                *seen = Seen {
                    token,
                    since: Some(now),
                    reported: false,
                };
                continue;
            }
            let busy = now - seen.since.unwrap_or(now);
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
