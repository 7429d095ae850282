//! A cluster's scheduling as `proscenium.toml` gives it (`[clusters.NAME]`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Events a stage's queue holds when its cluster names no bound.
pub(crate) const DEFAULT_QUEUE: usize = 1024;

/// One cluster of a stage graph: which stages it holds and how it runs them.
///
/// # Examples
///
/// ```
/// let config: proscenium::Config = toml::from_str(
///     "[clusters.extrusion]\nstages = [\"extrusion\"]\nthreads = 4\ninstances = { extrusion = 4 }",
/// )
/// .unwrap();
/// assert_eq!(config.clusters["extrusion"].threads, Some(4));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClusterSpec {
    /// The stages of the cluster. When any configured cluster lists stages, the
    /// configuration is the partition; otherwise the graph's own
    /// [`part`](crate::stage::Graph::part) is, and this entry only tunes the cluster named.
    pub stages: Vec<String>,
    /// Threads running the cluster's stages (default: one per core).
    #[serde(deserialize_with = "crate::config::value::some_count::<_, 1, 10_000>")]
    pub threads: Option<usize>,
    /// The most threads the thread-pool controller may grow the cluster to while its
    /// queues grow (it shrinks back to `threads` when they stay empty); absent or not
    /// above `threads`, the controller is off.
    #[serde(deserialize_with = "crate::config::value::some_count::<_, 1, 10_000>")]
    pub max_threads: Option<usize>,
    /// Instances of each stateless stage or source (default 1).
    #[serde(deserialize_with = "crate::config::value::counts::<_, 1, 10_000>")]
    pub instances: BTreeMap<String, usize>,
    /// The bound of each stage's queue (default 1,024 events).
    #[serde(deserialize_with = "crate::config::value::some_count::<_, 1, 10_000_000>")]
    pub queue: Option<usize>,
    /// Events an instance handles in one turn before its thread takes other work
    /// (default 1); the least the batching controller may set.
    #[serde(deserialize_with = "crate::config::value::some_count::<_, 1, 1_000_000>")]
    pub batch: Option<usize>,
    /// The most events a turn the batching controller may set (it starts there and
    /// shrinks the batch while throughput holds); absent or not above `batch`, the
    /// controller is off.
    #[serde(deserialize_with = "crate::config::value::some_count::<_, 1, 1_000_000>")]
    pub max_batch: Option<usize>,
    /// The 90th-percentile wait, in milliseconds, the admission controller keeps each
    /// of the cluster's stages under, by admitting a smaller share of the rate of
    /// every token bucket in front of it (connectors and inlets); absent, the
    /// controller is off.
    #[serde(
        deserialize_with = "crate::config::value::millis::some_within::<_, 1, 86_400_000>",
        serialize_with = "crate::config::value::millis::serialize_some"
    )]
    pub target_wait_ms: Option<u64>,
    /// Each stage's priority in the cluster, 0 (the default) to 7: the cluster's threads
    /// take a turn of a stage of a higher priority before any of a lower one that
    /// waits — Leda's priority mechanism, for the stages that must keep moving when the
    /// cluster is overloaded (the one that sheds load, or answers, before the one that
    /// logs). A name that is not one of the cluster's stages stops the graph's start.
    #[serde(deserialize_with = "crate::config::value::counts::<_, 0, 7>")]
    pub priority: BTreeMap<String, usize>,
    /// The nice value of the cluster's threads, 0 (the process's own, the default) to
    /// 19: a cluster of a higher one gets less of a contested core than the others —
    /// priority between clusters, as the kernel gives it (a nice value cannot go below
    /// the process's without privilege, so a cluster is put behind, not ahead).
    #[serde(deserialize_with = "crate::config::value::some_count::<_, 0, 19>")]
    pub nice: Option<usize>,
}
