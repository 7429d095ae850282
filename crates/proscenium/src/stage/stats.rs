//! Counters every stage keeps, and the snapshot [`RunningGraph::stats`] reads from
//! them (serializable, so `/_status` can serve it as JSON).
//!
//! [`RunningGraph::stats`]: super::RunningGraph::stats

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::Serialize;

/// A stage's counters, updated without a lock.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) arrived: AtomicU64,
    pub(crate) handled: AtomicU64,
    pub(crate) sent: AtomicU64,
    pub(crate) rejected: AtomicU64,
    pub(crate) failed: AtomicU64,
    pub(crate) busy_nanos: AtomicU64,
    pub(crate) max_nanos: AtomicU64,
}

impl Counters {
    pub(crate) fn record_service(&self, took: Duration) {
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        self.busy_nanos.fetch_add(nanos, Ordering::Relaxed);
        self.max_nanos.fetch_max(nanos, Ordering::Relaxed);
    }
}

/// The state of every stage of a running graph at one moment.
#[derive(Debug, Clone, Serialize)]
pub struct GraphStats {
    /// Seconds since the graph started (rates are counts over it).
    pub uptime_secs: f64,
    /// One entry per stage, in the order the stages were added.
    pub stages: Vec<StageStats>,
    /// One entry per cluster.
    pub clusters: Vec<ClusterStats>,
}

/// A cluster's threads, and what its thread-pool controller did.
#[derive(Debug, Clone, Serialize)]
pub struct ClusterStats {
    /// The cluster.
    pub cluster: String,
    /// Its threads now.
    pub threads: usize,
    /// The threads it keeps (`threads` in its configuration).
    pub min_threads: usize,
    /// The threads its controller may grow it to (`max_threads`).
    pub max_threads: usize,
    /// Threads its controller added.
    pub grown: u64,
    /// Threads its controller retired.
    pub shrunk: u64,
}

impl GraphStats {
    /// Returns the entry of the cluster named.
    pub fn cluster(&self, name: &str) -> Option<&ClusterStats> {
        self.clusters.iter().find(|cluster| cluster.cluster == name)
    }

    /// Returns the entry of the stage named.
    pub fn stage(&self, name: &str) -> Option<&StageStats> {
        self.stages.iter().find(|stage| stage.stage == name)
    }
}

/// One stage's queue and counters.
#[derive(Debug, Clone, Serialize)]
pub struct StageStats {
    /// The stage.
    pub stage: String,
    /// Its cluster.
    pub cluster: String,
    /// Its instances.
    pub instances: usize,
    /// Events in its queue now.
    pub queued: usize,
    /// The queue's bound.
    pub capacity: usize,
    /// Events admitted (queued, or handed over by a cohort connector).
    pub arrived: u64,
    /// Events its handler finished, successfully or not.
    pub handled: u64,
    /// Events it sent out of its ports.
    pub sent: u64,
    /// Events refused by its admission policies.
    pub rejected: u64,
    /// Events whose handler returned an error or panicked.
    pub failed: u64,
    /// Events per second admitted, over the uptime.
    pub arrival_rate: f64,
    /// Events per second of handler time (what one busy instance sustains).
    pub service_rate: f64,
    /// Mean seconds a handler took per event.
    pub mean_latency_secs: f64,
    /// Longest seconds a handler took on one event.
    pub max_latency_secs: f64,
}

impl StageStats {
    pub(crate) fn read(
        identity: (&str, &str, usize),
        queue: (usize, usize),
        counters: &Counters,
        uptime: Duration,
    ) -> Self {
        let (stage, cluster, instances) = identity;
        let arrived = counters.arrived.load(Ordering::Relaxed);
        let handled = counters.handled.load(Ordering::Relaxed);
        let busy = counters.busy_nanos.load(Ordering::Relaxed) as f64 / 1e9;
        Self {
            stage: stage.to_owned(),
            cluster: cluster.to_owned(),
            instances,
            queued: queue.0,
            capacity: queue.1,
            arrived,
            handled,
            sent: counters.sent.load(Ordering::Relaxed),
            rejected: counters.rejected.load(Ordering::Relaxed),
            failed: counters.failed.load(Ordering::Relaxed),
            arrival_rate: per_second(arrived as f64, uptime.as_secs_f64()),
            service_rate: per_second(handled as f64, busy),
            mean_latency_secs: per_second(busy, handled as f64),
            max_latency_secs: counters.max_nanos.load(Ordering::Relaxed) as f64 / 1e9,
        }
    }
}

fn per_second(count: f64, over: f64) -> f64 {
    if over > 0.0 { count / over } else { 0.0 }
}
