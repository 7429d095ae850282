//! Stage graphs, Leda's model: stages (a handler for one input type, an optional
//! per-instance `init`, named typed output ports; stateful, stateless with N parallel
//! instances, or sources), bound into a graph by connectors (`cohort`, `local`,
//! `decoupled`), partitioned into clusters by set algebra, each cluster scheduled by
//! configuration (`[clusters.NAME]` in `proscenium.toml`), never by code.
//!
//! # Example
//!
//! Leda's Fig. 6: a reader, a parallel extrusion, a stateful renderer; the extrusion
//! in a cluster of its own.
//!
//! ```
//! use std::collections::HashMap;
//! use proscenium::stage::{Connector, Graph, Out, Stage};
//!
//! let segment = Out::<u32>::new("segment");
//! let prism = Out::<u64>::new("prism");
//! let (reader_out, extrusion_out) = (segment.clone(), prism.clone());
//! let (done, total) = std::sync::mpsc::channel();
//!
//! let mut graph = Graph::new();
//! let reader = graph.stage(
//!     Stage::source("reader", || (), move |_, ctx| {
//!         Ok((1..=10).try_for_each(|line| ctx.send(&reader_out, line))?)
//!     })
//!     .output(&segment),
//! );
//! let extrusion = graph.stage(
//!     Stage::stateless("extrusion", || (), move |_, s: u32, ctx| {
//!         Ok(ctx.send(&extrusion_out, u64::from(s) * 2)?)
//!     })
//!     .output(&prism),
//! );
//! let renderer = graph.stage(Stage::stateful("renderer", || 0, move |sum: &mut u64, p: u64, _| {
//!     *sum += p;
//!     if *sum == 110 {
//!         done.send(*sum).unwrap();
//!     }
//!     Ok(())
//! }));
//! graph.connect(&reader, "segment", &extrusion, Connector::decoupled());
//! graph.connect(&extrusion, "prism", &renderer, Connector::decoupled());
//! graph.part([("main", graph.all() - &extrusion), ("extrusion", (&extrusion).into())]);
//!
//! let running = graph.start(&HashMap::new()).unwrap();
//! assert_eq!(total.recv().unwrap(), 110);
//! running.shutdown(std::time::Duration::from_secs(5));
//! ```
//!
//! # Inside
//!
//! The files, lowest first; a file imports from its own line and the lines above it,
//! but for six imports that point down the list, each between types that name each
//! other: `set` takes `graph`'s `StageRef` (a graph hands out sets of its stages),
//! `port` `definition`'s `Payload`, `context` `node`'s shared queue (a context wraps
//! the node it sends from), `node` `graph`'s `ThreadStart` and `crossing`'s writer
//! types (a route holds its writer, or the stand-in's), and `graph` `run`'s
//! `RunningGraph` (what `Graph::start` returns).
//!
//! ```text
//! sync, pool                   the locks, and the hand-off between a queue and idle
//!                              instances (model-checked)
//! error, set, port, bucket,    leaves: the error, stage sets, ports/connectors/
//! histogram, batching,         admission, the token bucket, the latency histogram,
//! admission, stats, mapping    a stage's batch and SEDA's batching controller, its
//!                              admitted share and SEDA's admission controller,
//!                              counters, a graph's mapping onto processes (a
//!                              cluster's spec, `ClusterSpec`, is `config`'s)
//! definition, idempotent,      a stage as written; its window of seen keys; what a
//! context, ready               handler is handed; a cluster's ready queue
//! node, inlet, remote          a stage running: queue, idle instances, counters; a
//!                              way in from outside the graph; each crossing
//!                              connector's writer and reader
//! crew, controller             a cluster's threads; its controller thread (SEDA's
//!                              thread pool and batching controllers)
//! graph, plan, shape           the graph as written; checking it and its partition;
//!                              the shape a mapped graph's processes must share
//! crossing                     which clusters run here and each crossing's writer
//!                              and reader (`redis`; `no_crossing.rs` without it)
//! run, listed                  the running graph: threads, stats, inlets, shutdown;
//!                              the graphs running in this process, for `/metrics`
//! host                         the processes of one host, started and supervised
//! ```
//!
//! Events travel type-erased (`Box<dyn Any + Send>`) after the graph compared every
//! port's type with its consumer's input at build. A decoupled connector takes only
//! ports made with [`Out::new`], whose type is an [`Event`] (serde), so the same
//! connector can later be a Redis stream without a change to the stages.

mod admission;
#[cfg(test)]
mod async_tests;
mod batching;
mod bucket;
mod context;
mod controller;
pub(crate) mod crew;
#[cfg(feature = "redis")]
mod crossing;
#[cfg(not(feature = "redis"))]
#[path = "no_crossing.rs"]
mod crossing;
mod definition;
mod error;
mod graph;
mod histogram;
mod host;
mod idempotent;
mod inlet;
mod listed;
#[cfg(feature = "redis")]
mod mapping;
mod node;
mod plan;
#[cfg(test)]
mod plan_tests;
mod pool;
mod port;
#[cfg(test)]
mod priority_tests;
mod ready;
#[cfg(feature = "redis")]
mod remote;
mod run;
mod set;
#[cfg(feature = "redis")]
mod shape;
mod stats;
mod sync;
#[cfg(test)]
mod tests;

pub use self::admission::AdmissionStats;
pub use self::batching::BatchStats;
pub use self::context::Context;
pub use self::definition::Stage;
pub use self::error::{SendError, StageError};
pub use self::graph::{Graph, StageRef};
#[cfg(feature = "metrics")]
pub(crate) use self::histogram::Histogram;
pub use self::histogram::Quantiles;
pub use self::host::{EXIT_REFUSED, Ended, HostProcesses, StopSignal};
pub use self::inlet::Inlet;
#[cfg(feature = "metrics")]
pub(crate) use self::listed::{Listed, running};
#[cfg(feature = "redis")]
pub use self::mapping::Mapping;
#[cfg(feature = "traces")]
pub(crate) use self::node::STAGE_SPANS;
pub use self::port::{Admission, Connector, ConnectorKind, Event, Out};
pub use self::run::{GraphMonitor, RunningGraph, ShutdownReport};
pub use self::set::StageSet;
pub use self::stats::{ClusterStats, GraphStats, StageStats};
pub use crate::config::ClusterSpec;
pub use crate::config::DEFAULT_SAMPLE;
