//! Per-loop counters and the watchdog that reports loops stalled in one handler.
//!
//! A loop marks itself busy (with the route) while it runs handler code, and idle
//! after; the watchdog thread samples every loop a few times per threshold and warns
//! once per stall that outlives the threshold, naming the route. The counters also feed
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
    /// Microseconds since [`epoch`] when handler code began running, or 0.
    busy_since: AtomicU64,
    /// The route of the handler code running.
    route: AtomicU32,
    /// `busy_since` of the last stall reported, so each is reported once.
    reported: AtomicU64,
}

impl LoopStats {
    /// Returns the JSQ queue length: live connections plus requests in flight.
    pub(crate) fn load(&self) -> usize {
        self.conns.load(Ordering::Relaxed) + self.inflight.load(Ordering::Relaxed)
    }
}

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn now_micros() -> u64 {
    // +1 so that a busy mark is never 0, which means idle.
    u64::try_from(epoch().elapsed().as_micros()).unwrap_or(u64::MAX) + 1
}

/// Marks the current loop busy in `route` until dropped.
#[derive(Debug)]
pub(crate) struct Busy(());

impl Busy {
    pub(crate) fn enter(route: u32) -> Self {
        context::with_current(|ctx| {
            ctx.stats.route.store(route, Ordering::Relaxed);
            ctx.stats.busy_since.store(now_micros(), Ordering::Relaxed);
        });
        Self(())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        context::with_current(|ctx| ctx.stats.busy_since.store(0, Ordering::Relaxed));
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

/// Samples loops and warns about stalls; stops when `running` says so.
pub(crate) fn watch(
    loops: &[Arc<LoopStats>],
    threshold: Duration,
    label: &dyn Fn(u32) -> String,
    running: &dyn Fn() -> bool,
) {
    let threshold_us = u64::try_from(threshold.as_micros()).unwrap_or(u64::MAX);
    let period = (threshold / 4).max(Duration::from_millis(5));
    while running() {
        std::thread::sleep(period);
        for (id, stats) in loops.iter().enumerate() {
            let since = stats.busy_since.load(Ordering::Relaxed);
            if since == 0 || stats.reported.load(Ordering::Relaxed) == since {
                continue;
            }
            let busy_us = now_micros().saturating_sub(since);
            if busy_us > threshold_us {
                stats.reported.store(since, Ordering::Relaxed);
                let route = label(stats.route.load(Ordering::Relaxed));
                tracing::warn!(
                    "loop {id} stalled for {} ms in {route}: mark the handler blocking or make it async",
                    busy_us / 1000
                );
            }
        }
    }
}
