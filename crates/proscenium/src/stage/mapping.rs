//! Leda's last step, *map*: which of a graph's clusters this process runs, and the
//! Redis through which its decoupled connectors reach the clusters of the others.
//! Each connector that crosses processes is one stream, `GRAPH:FROM.PORT:TO`, read by
//! the consuming stage's processes as one consumer group named after the stage.

use std::time::Duration;

use super::StageError;
use crate::Config;
use crate::counters::User;
use crate::stream::RedisTarget;

/// This process's part of a graph mapped onto processes.
#[derive(Debug, Clone)]
pub struct Mapping {
    /// The graph's name: every process of it uses the same, and its streams carry it.
    pub graph: String,
    /// This process's name (`[processes.NAME]`), which names its consumers.
    pub process: String,
    /// The clusters this process runs; the graph's others run elsewhere.
    pub clusters: Vec<String>,
    /// The Redis of the streams.
    pub redis: RedisTarget,
    /// How long an event may stay pending on a consumer before another takes it over.
    pub claim_idle: Duration,
    /// Deliveries after which an event goes to its stream's dead letters.
    pub max_deliveries: u64,
}

impl Mapping {
    /// Returns process `process`'s part of graph `graph` as `config` maps it: its
    /// `[processes.NAME]` clusters, and `[redis]`.
    ///
    /// # Errors
    ///
    /// A graph error naming what is missing: a process the configuration does not
    /// map (the ones it maps are named), or no `[redis] url`.
    ///
    /// # Examples
    ///
    /// ```
    /// let config: proscenium::Config = toml::from_str(
    ///     "[redis]\nurl = \"redis://127.0.0.1\"\n[processes.correlate]\nclusters = [\"correlate\"]",
    /// )
    /// .unwrap();
    /// let mapping = proscenium::stage::Mapping::for_process("cep", "correlate", &config).unwrap();
    /// assert_eq!(mapping.clusters, ["correlate"]);
    /// assert!(proscenium::stage::Mapping::for_process("cep", "main", &config).is_err());
    /// ```
    pub fn for_process(graph: &str, process: &str, config: &Config) -> Result<Self, StageError> {
        let Some(spec) = config.processes.get(process) else {
            let mut known: Vec<&str> = config.processes.keys().map(String::as_str).collect();
            known.sort_unstable();
            return Err(StageError::graph(format!(
                "process `{process}` is not mapped: the configuration's [processes] are {known:?}"
            )));
        };
        let Some(redis) = config.redis.target() else {
            return Err(StageError::graph(format!(
                "process `{process}` needs Redis to reach the others: set [redis] url or PROSCENIUM_REDIS_URL"
            )));
        };
        Ok(Self {
            graph: graph.to_owned(),
            process: process.to_owned(),
            clusters: spec.clusters.clone(),
            redis,
            claim_idle: config.redis.claim_idle,
            max_deliveries: u64::try_from(config.redis.max_deliveries).unwrap_or(u64::MAX),
        })
    }

    /// The stream of the connector `from.port` → `to`.
    pub(crate) fn stream(&self, from: &str, port: &str, to: &str) -> String {
        format!("{}:{from}.{port}:{to}", self.graph)
    }

    /// The stream of entry `name` into stage `to` (three colons: no connector's).
    pub(crate) fn entry_stream(&self, name: &str, to: &str) -> String {
        format!("{}:entry:{name}:{to}", self.graph)
    }

    /// Returns the Redis its connectors use, their round trips counted as stages'.
    pub(crate) fn target(&self) -> RedisTarget {
        self.redis.clone().for_user(User::Stage)
    }

    /// This process's consumer name: its name and pid, so a restarted process is a
    /// new consumer and what its last life left pending is claimed like a dead one's.
    pub(crate) fn consumer(&self) -> String {
        format!("{}-{}", self.process, std::process::id())
    }
}
