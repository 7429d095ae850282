//! A cluster's controller thread, running SEDA's controllers (Welsh et al.), each on
//! or off in the cluster's configuration:
//!
//! - the thread-pool controller, for a cluster whose `max_threads` is above `threads`:
//!   every tick it compares the events waiting in the cluster's queues with its
//!   threads, adds a thread while more events wait than threads run (up to
//!   `max_threads`), and retires one after the queues have stayed empty a while (down
//!   to `threads`);
//! - the batching controller of each stage whose `max_batch` is above `batch`
//!   (`batching.rs`), fed the stage's rates over each window of ticks;
//! - the admission controller of each stage of a cluster with `target_wait_ms`
//!   (`admission.rs`), fed the 90th percentile of the stage's waits over each window.
//!
//! Every decision is logged and counted in the stats.
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};

use super::admission;
use super::batching::BatchController;
use super::crew::Crew;
use super::node::Shared;

/// How often the controller looks.
const TICK: Duration = Duration::from_millis(10);

/// Ticks in a batching window: each stage's throughput is measured over it.
const WINDOW_TICKS: u32 = 10;

/// Ticks of empty queues before a thread is retired: a pause between bursts is not
/// idleness.
const IDLE_TICKS: u32 = 20;

/// What the controller does at one tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decision {
    Grow,
    Shrink,
    Hold,
}

fn decide(queued: usize, threads: usize, idle_ticks: u32) -> Decision {
    if queued > threads {
        Decision::Grow
    } else if idle_ticks >= IDLE_TICKS {
        Decision::Shrink
    } else {
        Decision::Hold
    }
}

/// Returns the stages of cluster `cluster` whose batch or admission a controller
/// adjusts.
fn controlled_stages(cluster: usize, shared: &Shared) -> Vec<usize> {
    (0..shared.nodes.len())
        .filter(|&at| {
            let node = &shared.nodes[at];
            node.cluster == cluster
                && (node.batch.is_adaptive() || node.admission.target().is_some())
        })
        .collect()
}

/// Returns whether cluster `cluster` has a controller to run.
pub(crate) fn needed(cluster: usize, crew: &Crew, shared: &Shared) -> bool {
    crew.is_elastic() || !controlled_stages(cluster, shared).is_empty()
}

/// Starts the controller of cluster `cluster`; it returns when `stop` is dropped.
pub(crate) fn spawn(
    cluster: usize,
    crew: Arc<Crew>,
    shared: Arc<Shared>,
    stop: Receiver<()>,
) -> std::io::Result<JoinHandle<()>> {
    let mut windows: Vec<Window> = controlled_stages(cluster, &shared)
        .into_iter()
        .map(|node| Window::open(node, &shared))
        .collect();
    std::thread::Builder::new()
        .name(format!("stage-{}-controller", crew.name))
        .spawn(move || {
            let mut idle_ticks = 0;
            let mut ticks = 0u32;
            while let Err(RecvTimeoutError::Timeout) = stop.recv_timeout(TICK) {
                if crew.is_elastic() {
                    idle_ticks = pool_tick(cluster, &crew, &shared, idle_ticks);
                }
                ticks = ticks.wrapping_add(1);
                if ticks % WINDOW_TICKS == 0 {
                    for window in &mut windows {
                        window.close(&shared, &crew.name);
                    }
                }
            }
        })
}

/// One tick of the thread-pool controller; returns the ticks the queues have been
/// empty.
fn pool_tick(cluster: usize, crew: &Arc<Crew>, shared: &Arc<Shared>, idle_ticks: u32) -> u32 {
    let queued = shared.queued_in(cluster);
    let idle_ticks = if queued == 0 { idle_ticks + 1 } else { 0 };
    let threads = crew.live();
    let changed = match decide(queued, threads, idle_ticks) {
        Decision::Grow => crew.grow(shared),
        Decision::Shrink => crew.shrink(),
        Decision::Hold => false,
    };
    if changed {
        tracing::info!(cluster = %crew.name, queued, from = threads, to = crew.live(), "thread-pool controller");
        return 0;
    }
    idle_ticks
}

/// One stage's controllers and the counts at the start of their window.
struct Window {
    node: usize,
    batching: BatchController,
    handled: u64,
    arrived: u64,
    waits: Vec<u64>,
    since: Instant,
}

impl Window {
    fn open(node: usize, shared: &Shared) -> Self {
        let stage = &shared.nodes[node];
        Self {
            node,
            batching: stage.batch.controller(),
            handled: stage.counters.handled.load(Ordering::Relaxed),
            arrived: stage.counters.arrived.load(Ordering::Relaxed),
            waits: stage.counters.wait.counts(),
            since: Instant::now(),
        }
    }

    /// Feeds the window to the stage's controllers, applies their decisions, and
    /// opens the next window.
    fn close(&mut self, shared: &Shared, cluster: &str) {
        let stage = &shared.nodes[self.node];
        let next = Self::open(self.node, shared);
        if stage.batch.is_adaptive() {
            let secs = next.since.duration_since(self.since).as_secs_f64();
            let rate = |now: u64, then: u64| now.saturating_sub(then) as f64 / secs;
            let decision = self.batching.decide(
                rate(next.handled, self.handled),
                rate(next.arrived, self.arrived),
            );
            let from = stage.batch.now();
            if stage.batch.apply(decision) {
                tracing::info!(cluster, stage = %stage.name, from, to = stage.batch.now(), ?decision, "batching controller");
            }
        }
        if let Some(target) = stage.admission.target() {
            let waits = stage.counters.wait.since(&self.waits, admission::QUANTILE);
            let p90 = match waits {
                Some((count, p90)) if count >= admission::LEAST_WAITS => Some(p90),
                // Too few to measure, and none waiting: a throttled stage is calm.
                _ if stage.queue.1.is_empty() => Some(Duration::ZERO),
                _ => None,
            };
            if let Some(p90) = p90 {
                let from = stage.admission.get();
                let to = admission::decide(p90, target, from);
                if stage.admission.set(to) {
                    tracing::info!(cluster, stage = %stage.name, ?p90, ?target, from, to, "admission controller");
                }
            }
        }
        (self.handled, self.arrived, self.waits, self.since) =
            (next.handled, next.arrived, next.waits, next.since);
    }
}

#[cfg(test)]
mod tests {
    use super::{Decision, IDLE_TICKS, decide};

    #[test]
    fn grows_while_more_events_wait_than_threads_run_and_shrinks_after_idling() {
        assert_eq!(decide(5, 4, 0), Decision::Grow);
        assert_eq!(decide(4, 4, 0), Decision::Hold);
        assert_eq!(decide(0, 4, IDLE_TICKS - 1), Decision::Hold);
        assert_eq!(decide(0, 4, IDLE_TICKS), Decision::Shrink);
    }
}
