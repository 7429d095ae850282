//! A mapped graph's connectors between processes (the `redis` feature): which of its
//! clusters run here, a writer to a stream for each edge and entry that leaves this
//! process, and a reader of each stream that comes into it (`remote.rs` has both).

use std::sync::Arc;

use super::definition::Stage;
use super::error::StageError;
use super::graph::{Edge, Entry, Graph};
pub(crate) use super::mapping::Mapping;
use super::node::Shared;
use super::plan::Plan;
use super::port::Codec;
use super::remote::{BATCH, Bounds, InboundSpec};
pub(crate) use super::remote::{Inbound, Outbound, Progress};

/// The writers this process starts to stages in other processes, and their progress.
pub(super) struct Crossings<'a> {
    graph: &'a Graph,
    plan: &'a Plan,
    mapping: Option<&'a Mapping>,
    here: &'a [bool],
    written: Vec<Arc<Progress>>,
}

impl<'a> Crossings<'a> {
    /// The crossings of `graph` run by `mapping` (none without one), once its shape
    /// agrees with the one its other processes recorded.
    pub(super) fn new(
        graph: &'a Graph,
        plan: &'a Plan,
        mapping: Option<&'a Mapping>,
        here: &'a [bool],
    ) -> Result<Self, StageError> {
        if let Some(mapping) = mapping {
            super::shape::join(graph, &mapping.graph, &mapping.redis)?;
        }
        Ok(Self {
            graph,
            plan,
            mapping,
            here,
            written: Vec::new(),
        })
    }

    /// Whether stage `at` runs in this process.
    fn local(&self, at: usize) -> bool {
        self.here[self.plan.cluster_of[at]]
    }

    /// The writer of `edge`'s events when it leaves this process.
    pub(super) fn edge(&mut self, edge: &Edge) -> Result<Option<Arc<Outbound>>, StageError> {
        let Some(mapping) = self
            .mapping
            .filter(|_| self.local(edge.from) && !self.local(edge.to))
        else {
            return Ok(None);
        };
        let (from, to) = (&self.graph.stages[edge.from], &self.graph.stages[edge.to]);
        let stream = mapping.stream(&from.name, &edge.port, &to.name);
        let codec = codec(edge, from);
        self.outbound(mapping, stream, codec, edge.from, edge.to)
            .map(Some)
    }

    /// The writer of `entry`'s events when its stage runs in another process.
    pub(super) fn entry(&mut self, entry: &Entry) -> Result<Option<Arc<Outbound>>, StageError> {
        let Some(mapping) = self.mapping.filter(|_| !self.local(entry.to)) else {
            return Ok(None);
        };
        let stream = mapping.entry_stream(entry.port.name, &self.graph.stages[entry.to].name);
        let codec = entry.port.codec.expect("the plan checked: an Event port");
        self.outbound(mapping, stream, codec, entry.to, entry.to)
            .map(Some)
    }

    /// Starts a writer to `stream` of events for stage `to`, sent from stage `from`'s
    /// cluster (an entry: `to`'s own).
    fn outbound(
        &mut self,
        mapping: &Mapping,
        stream: String,
        codec: Codec,
        from: usize,
        to: usize,
    ) -> Result<Arc<Outbound>, StageError> {
        // The sender's queue here; in the stream, four of the consumer's queues
        // (each at least a read's batch): at one, its acknowledgements could not
        // keep the writer from waiting (bench/stages-remote.sh: 95,000 events a
        // second at one, 195,000 at four).
        let queue = |stage: usize| self.plan.clusters[self.plan.cluster_of[stage]].queue;
        let bounds = Bounds {
            queue: queue(from),
            backlog: u64::try_from(queue(to).max(BATCH) * 4).unwrap_or(u64::MAX),
        };
        // The writer ends once the graph's routes are gone and it has written what
        // waited: nothing joins it.
        let name = format!("stage-out-{stream}");
        let (outbound, _writer) = Outbound::spawn(mapping.target(), stream, codec.encode, bounds)
            .map_err(|e| StageError::start(&name, &e))?;
        self.written.push(outbound.progress());
        Ok(Arc::new(outbound))
    }

    /// The progress of every writer started, which the readers' acknowledgements wait
    /// on (an event handled here is acknowledged once what it sent on is written).
    pub(super) fn written(&mut self) -> Arc<[Arc<Progress>]> {
        std::mem::take(&mut self.written).into()
    }

    /// Starts a reader of each stream that comes into this process: from an edge whose
    /// sender runs elsewhere, and to an entry whose stage runs here.
    pub(super) fn inbounds(&self, shared: &Arc<Shared>) -> Result<Vec<Inbound>, StageError> {
        let Some(mapping) = self.mapping else {
            return Ok(Vec::new());
        };
        let graph = self.graph;
        let edges = graph.edges.iter();
        let from_edges = edges
            .filter(|e| !self.local(e.from) && self.local(e.to))
            .map(|edge| {
                let (from, to) = (&graph.stages[edge.from], &graph.stages[edge.to]);
                let stream = mapping.stream(&from.name, &edge.port, &to.name);
                (stream, edge.to, codec(edge, from))
            });
        let entries = graph
            .entries
            .iter()
            .filter(|e| self.local(e.to))
            .map(|entry| {
                let to = &graph.stages[entry.to].name;
                let codec = entry.port.codec.expect("the plan checked: an Event port");
                (mapping.entry_stream(entry.port.name, to), entry.to, codec)
            });
        from_edges
            .chain(entries)
            .map(|(stream, node, codec)| {
                let spec = InboundSpec {
                    redis: mapping.target(),
                    stream,
                    group: graph.stages[node].name.clone(),
                    consumer: mapping.consumer(),
                    node,
                    codec,
                    claim_idle: mapping.claim_idle,
                    max_deliveries: mapping.max_deliveries,
                };
                Inbound::spawn(Arc::clone(shared), spec)
            })
            .collect()
    }
}

/// Which of `plan`'s clusters run in this process: all without a mapping.
pub(super) fn here(plan: &Plan, mapping: Option<&Mapping>) -> Result<Vec<bool>, StageError> {
    let Some(mapping) = mapping else {
        return Ok(vec![true; plan.clusters.len()]);
    };
    if let Some(unknown) = mapping
        .clusters
        .iter()
        .find(|name| !plan.clusters.iter().any(|c| &c.name == *name))
    {
        return Err(StageError::graph(format!(
            "process `{}` runs cluster `{unknown}`, which the graph does not have",
            mapping.process
        )));
    }
    Ok(plan
        .clusters
        .iter()
        .map(|c| mapping.clusters.contains(&c.name))
        .collect())
}

/// The codec of `edge`, which crosses processes: a decoupled connector's (the plan
/// refused any other between clusters, and a decoupled one from a port without one).
fn codec(edge: &Edge, from: &Stage) -> Codec {
    from.outputs
        .iter()
        .find(|port| port.name == edge.port)
        .and_then(|port| port.codec)
        .expect("the plan checked: a connector between clusters is decoupled, from an Event port")
}
