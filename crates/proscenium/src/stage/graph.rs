//! The graph as written: stages, connectors between them, and the partition into
//! clusters (Leda's `leda.graph`, `connect` and `part`).

use std::collections::HashMap;
use std::sync::Arc;

use super::definition::Stage;
use super::error::StageError;
use super::port::{Connector, Out, PortSpec};
use super::run::RunningGraph;
use super::set::StageSet;
use crate::config::ClusterSpec;

/// A handle on a stage added to a [`Graph`], for connecting and partitioning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StageRef {
    pub(crate) index: usize,
    name: Arc<str>,
}

impl StageRef {
    /// Returns the stage's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// An output port bound to a consumer.
#[derive(Debug, Clone)]
pub(crate) struct Edge {
    pub(crate) from: usize,
    pub(crate) port: String,
    pub(crate) to: usize,
    pub(crate) connector: Connector,
}

/// A stage graph: stages bound by connectors, partitioned into clusters.
///
/// Errors in it (an unbound port, mismatched types, a bad partition) are found by
/// [`start`](Self::start), each naming the stages and ports concerned.
#[derive(Debug, Default)]
pub struct Graph {
    pub(crate) stages: Vec<Stage>,
    pub(crate) edges: Vec<Edge>,
    pub(crate) parts: Vec<(String, StageSet)>,
    pub(crate) entries: Vec<Entry>,
    /// Run on each cluster thread as it starts, before its first turn.
    pub(crate) thread_start: Option<ThreadStart>,
    /// One event in this many has its wait and service timed (`None`: the default).
    pub(crate) sample: Option<u32>,
}

/// What each cluster thread runs as it starts, on its loop, given its cluster's name
/// (`Graph::on_thread_start`).
#[derive(Clone)]
pub(crate) struct ThreadStart(Arc<dyn Fn(&str) + Send + Sync>);

impl ThreadStart {
    pub(crate) fn run(&self, cluster: &str) {
        (self.0)(cluster);
    }
}

impl std::fmt::Debug for ThreadStart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ThreadStart")
    }
}

/// A way into the graph from outside it, declared with the graph so that every
/// process of it knows the way: its events go to stage `to`, wherever that runs.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) port: PortSpec,
    pub(crate) to: usize,
    pub(crate) connector: Connector,
}

impl Graph {
    /// Returns an empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `start` on each thread of every cluster as it starts, on its loop, before
    /// its first turn, with the cluster's name (the staged server makes each `http`
    /// thread's side of its protocol).
    pub(crate) fn on_thread_start(&mut self, start: impl Fn(&str) + Send + Sync + 'static) {
        self.thread_start = Some(ThreadStart(Arc::new(start)));
    }

    /// Adds `stage` and returns its handle.
    pub fn stage(&mut self, stage: Stage) -> StageRef {
        let handle = StageRef {
            index: self.stages.len(),
            name: stage.name.as_str().into(),
        };
        self.stages.push(stage);
        handle
    }

    /// Binds `from`'s output port `port` to `to` through `connector` (Leda's
    /// `from:connect("port", to)`).
    pub fn connect(
        &mut self,
        from: &StageRef,
        port: &str,
        to: &StageRef,
        connector: Connector,
    ) -> &mut Self {
        self.edges.push(Edge {
            from: from.index,
            port: port.to_owned(),
            to: to.index,
            connector,
        });
        self
    }

    /// Declares a way in from outside the graph — an HTTP handler, an actor — named
    /// as `port` and carrying its events to `to` through `connector`, which must be
    /// `decoupled`: where `to` runs in another process, what is sent through
    /// [`RunningGraph::entry`] crosses by its own Redis stream, and with `reject` a
    /// full stream (Redis away, a consumer behind) refuses at once — for HTTP a 503.
    ///
    /// # Examples
    ///
    /// ```
    /// use proscenium::stage::{Admission, Connector, Graph, Out, Stage};
    ///
    /// let mut graph = Graph::new();
    /// let orders = graph.stage(Stage::stateful("orders", || 0u64, |n, _: String, _| {
    ///     *n += 1;
    ///     Ok(())
    /// }));
    /// graph.entry(&Out::<String>::new("new-order"), &orders, Connector::decoupled().admission(Admission::Reject));
    /// graph.part([("main", graph.all())]);
    /// let running = graph.start(&Default::default()).unwrap();
    /// running.entry::<String>("new-order").unwrap().send("one book".into()).unwrap();
    /// running.shutdown(std::time::Duration::from_secs(1));
    /// ```
    pub fn entry<T>(&mut self, port: &Out<T>, to: &StageRef, connector: Connector) -> &mut Self {
        self.entries.push(Entry {
            port: port.spec,
            to: to.index,
            connector,
        });
        self
    }

    /// Returns the set of every stage (Leda's `graph:all()`).
    pub fn all(&self) -> StageSet {
        StageSet::of(self.stages.iter().map(|stage| stage.name.as_str()))
    }

    /// Partitions the graph into named clusters (Leda's `graph:part`), unless the
    /// configuration lists the stages of its clusters itself.
    pub fn part<N: Into<String>>(
        &mut self,
        clusters: impl IntoIterator<Item = (N, StageSet)>,
    ) -> &mut Self {
        self.parts = clusters
            .into_iter()
            .map(|(name, set)| (name.into(), set))
            .collect();
        self
    }

    /// Times the wait and service of one event in `one_in` at each stage (1: every
    /// event; 0 is taken as 1); the default is [`DEFAULT_SAMPLE`](super::DEFAULT_SAMPLE),
    /// and [`Config::stages`](crate::Config::stages) sets it for the graphs a server
    /// runs. Counts (arrived, handled, ...) stay exact: only the latency histograms
    /// are samples. A clock read costs about as much as a cohort hop, so timing
    /// every event halves a cohort hop's rate (docs/performance.md).
    pub fn sample(&mut self, one_in: u32) -> &mut Self {
        self.sample = Some(one_in.max(1));
        self
    }

    /// Checks the graph, partitions it by `clusters` (from
    /// [`Config::clusters`](crate::Config::clusters)), and runs it.
    ///
    /// # Errors
    ///
    /// A graph error ([`StageError::is_graph`]): a port unknown or bound to no stage
    /// or twice, a port's type not its consumer's input, a decoupled connector on a
    /// local-only port, a `local` connector across clusters, a stage in no cluster or
    /// in two, a cluster whose sources would hold all its threads. Or a thread that
    /// could not start.
    pub fn start(
        self,
        clusters: &HashMap<String, ClusterSpec>,
    ) -> Result<RunningGraph, StageError> {
        let plan = super::plan::Plan::check(&self, clusters)?;
        RunningGraph::start(&self, &plan, None)
    }

    #[cfg(feature = "redis")]
    /// Starts this process's part of the graph as `mapping` says: the threads of its
    /// clusters alone, each decoupled connector to a cluster elsewhere written to its
    /// Redis stream, each from elsewhere read from one.
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start) (a connector between clusters is `decoupled`, so
    /// every one between processes is), and a graph error for a cluster of the
    /// mapping the graph does not have, for a graph whose shape (stages, ports,
    /// connectors and their types) differs from the one its other processes recorded
    /// in Redis — naming the lines that differ; an unreachable error
    /// ([`StageError::is_unreachable`]) for a Redis that cannot be reached.
    pub fn start_mapped(
        self,
        clusters: &HashMap<String, ClusterSpec>,
        mapping: &super::Mapping,
    ) -> Result<RunningGraph, StageError> {
        let plan = super::plan::Plan::check(&self, clusters)?;
        RunningGraph::start(&self, &plan, Some(mapping))
    }
}
