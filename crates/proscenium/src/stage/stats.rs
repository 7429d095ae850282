//! Counters every stage keeps, and the snapshot [`RunningGraph::stats`] reads from
//! them (serializable, so `/_status` can serve it as JSON).
//!
//! [`RunningGraph::stats`]: super::RunningGraph::stats

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::Serialize;

use super::admission::AdmissionStats;
use super::batching::BatchStats;
use super::histogram::{Histogram, Quantiles};

/// A stage's counters, updated without a lock.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) arrived: AtomicU64,
    pub(crate) handled: AtomicU64,
    pub(crate) sent: AtomicU64,
    pub(crate) rejected: AtomicU64,
    pub(crate) failed: AtomicU64,
    pub(crate) duplicates: AtomicU64,
    /// From an event's send to the start of its handler, of the events timed.
    pub(crate) wait: Histogram,
    /// Its handler's run, of the events timed.
    pub(crate) service: Histogram,
}

/// The state of every stage of a running graph at one moment.
#[derive(Debug, Clone, Serialize)]
pub struct GraphStats {
    /// Seconds since the graph started (rates are counts over it).
    pub uptime_secs: f64,
    /// One event in this many is timed: the latency figures (`wait_secs`,
    /// `service_secs`) are of those; the counts are of every event. A stage of a
    /// cluster with a wait target (`target_wait_ms`) times every event: its
    /// admission controller judges by them.
    pub sample: u64,
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
    /// Threads stood aside, each replaced, while a turn that would not end finished
    /// (the staged server's Lua pages past their deadline).
    pub stood_aside: u64,
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
    /// Events dropped as repeats of one taken within its idempotency window
    /// ([`Stage::idempotent_by`](super::Stage::idempotent_by)).
    pub duplicates: u64,
    /// Events per second admitted, over the uptime.
    pub arrival_rate: f64,
    /// Events per second of handler time (what one busy instance sustains).
    pub service_rate: f64,
    /// Seconds from an event's send to its handler's start, of the events timed (one
    /// in [`GraphStats::sample`]; its `count` is theirs): in the queue (a blocked
    /// sender's wait for room included), or for a cohort connector waiting for an
    /// idle instance.
    pub wait_secs: Quantiles,
    /// Seconds its handler took per event, of the events timed.
    pub service_secs: Quantiles,
    /// Events an instance takes in a turn, and what the batching controller did.
    pub batch: BatchStats,
    /// The share of its token buckets' rates it admits, and what the admission
    /// controller did.
    pub admission: AdmissionStats,
}

impl StageStats {
    pub(crate) fn read(
        identity: (&str, &str, usize),
        queue: (usize, usize),
        counters: &Counters,
        controllers: (BatchStats, AdmissionStats),
        uptime: Duration,
    ) -> Self {
        let (stage, cluster, instances) = identity;
        let (batch, admission) = controllers;
        let arrived = counters.arrived.load(Ordering::Relaxed);
        let handled = counters.handled.load(Ordering::Relaxed);
        let service = counters.service.quantiles();
        let busy = service.mean * service.count as f64;
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
            duplicates: counters.duplicates.load(Ordering::Relaxed),
            arrival_rate: per_second(arrived as f64, uptime.as_secs_f64()),
            service_rate: per_second(service.count as f64, busy),
            wait_secs: counters.wait.quantiles(),
            service_secs: service,
            batch,
            admission,
        }
    }
}

fn per_second(count: f64, over: f64) -> f64 {
    if over > 0.0 { count / over } else { 0.0 }
}
