//! Leda's last step, *map*: which of a graph's clusters this process runs, and the
//! Redis through which its decoupled connectors reach the clusters of the others.
//! Each connector that crosses processes is one stream, `GRAPH:FROM.PORT:TO`, read by
//! the consuming stage's processes as one consumer group named after the stage.

use std::time::Duration;

/// This process's part of a graph mapped onto processes.
#[derive(Debug, Clone)]
pub struct Mapping {
    /// The graph's name: every process of it uses the same, and its streams carry it.
    pub graph: String,
    /// This process's name (`[processes.NAME]`), which names its consumers.
    pub process: String,
    /// The clusters this process runs; the graph's others run elsewhere.
    pub clusters: Vec<String>,
    /// The Redis URL of the streams.
    pub redis: String,
    /// How long an event may stay pending on a consumer before another takes it over.
    pub claim_idle: Duration,
    /// Deliveries after which an event goes to its stream's dead letters.
    pub max_deliveries: u64,
}

impl Mapping {
    /// The stream of the connector `from.port` → `to`.
    pub(crate) fn stream(&self, from: &str, port: &str, to: &str) -> String {
        format!("{}:{from}.{port}:{to}", self.graph)
    }

    /// This process's consumer name: its name and pid, so a restarted process is a
    /// new consumer and what its last life left pending is claimed like a dead one's.
    pub(crate) fn consumer(&self) -> String {
        format!("{}-{}", self.process, std::process::id())
    }
}
