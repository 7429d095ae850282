//! A graph running: each cluster's threads taking ready instances, and the graceful
//! shutdown.
//!
//! Shutdown steps: (1) raise `stopping`, which sources read; (2) wait for every
//! source's run to return; (3) wait, stage by stage in graph order (upstream first),
//! for its queue to empty and its instances to go idle; (4) past the deadline, raise
//! `halted` (new sends are refused, blocked ones give up, both with their event back),
//! wait for the sends under way and dead-letter what is still queued; (5) tell
//! every thread to exit and join those that do by the deadline. A cluster's
//! controller thread runs until step 4.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use serde::Serialize;

use super::admission::Share;
use super::batching::Batch;
use super::bucket::TokenBucket;
use super::controller;
use super::crew::Crew;
use super::crossing::{Crossings, Inbound, Mapping, Outbound, here};
use super::definition::{Role, Stage};
use super::error::StageError;
use super::graph::{Edge, Entry, Graph, StageRef};
use super::histogram::Histogram;
use super::inlet::Inlet;
use super::listed::Listing;
use super::node::{Node, Route, Shared};
use super::plan::Plan;
use super::pool::Pool;
use super::port::{Admission, Connector, ConnectorKind, EventType};
use super::ready::{Ready, Ticket};
use super::stats::{Counters, GraphStats, StageStats};
use crate::actor::DeadLetters;

/// A stage graph at work. Dropping it without [`shutdown`](Self::shutdown) stops
/// its threads at once, dead-lettering what is queued.
pub struct RunningGraph {
    monitor: GraphMonitor,
    /// Each controlled cluster's controller, and the sender whose drop stops it.
    controllers: Vec<(Sender<()>, JoinHandle<()>)>,
    order: Vec<usize>,
    exited: Receiver<()>,
    stopped: bool,
    /// Readers of the connectors from other processes, stopped first at shutdown.
    inbounds: Vec<Inbound>,
    /// Whether each cluster runs in this process.
    here: Vec<bool>,
    /// The graph's entries, by name.
    entries: HashMap<&'static str, EntryRoute>,
    /// Its place among the graphs `/metrics` reads; `None` until it has started.
    listing: Option<Listing>,
}

/// An entry as this process reaches it: its stage's queue here, or a writer to its
/// stream when the stage runs elsewhere.
struct EntryRoute {
    entry: Entry,
    outbound: Option<Arc<Outbound>>,
}

/// Reads a running graph's stats from anywhere (a `/_status` section, a metrics
/// exporter); cheap to clone, and it outlives the graph harmlessly.
#[derive(Clone)]
pub struct GraphMonitor {
    shared: Arc<Shared>,
    crews: Vec<Arc<Crew>>,
    started: Instant,
}

/// What a graceful shutdown did.
#[derive(Debug, Clone, Serialize)]
pub struct ShutdownReport {
    /// The stages drained, in the order they were (graph order: upstream first).
    pub drained: Vec<String>,
    /// Events still queued at the deadline, dead-lettered.
    pub abandoned: u64,
    /// Threads that had not exited by the deadline (left running, detached).
    pub stuck_threads: usize,
    /// Dead letters over the graph's life.
    pub dead_letters: u64,
    /// Every stage's counters once drained.
    pub stats: GraphStats,
}

impl RunningGraph {
    pub(crate) fn start(
        graph: &Graph,
        plan: &Plan,
        mapping: Option<&Mapping>,
    ) -> Result<Self, StageError> {
        // Its clusters first: a mistake of this process's own, named before Redis.
        let here = here(plan, mapping)?;
        let mut crossings = Crossings::new(graph, plan, mapping, &here)?;
        let (exit_tx, exited) = crossbeam_channel::unbounded();
        let crews: Vec<Arc<Crew>> = plan
            .clusters
            .iter()
            .map(|cluster| Arc::new(Crew::new(cluster, exit_tx.clone())))
            .collect();
        let local = |stage: usize| here[plan.cluster_of[stage]];
        let mut outbound = |edge: &Edge| crossings.edge(edge);
        let nodes = (0..graph.stages.len())
            .map(|at| {
                build_node(
                    graph,
                    plan,
                    at,
                    &crews[plan.cluster_of[at]].ready,
                    &mut outbound,
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        let entries = graph
            .entries
            .iter()
            .map(|entry| {
                let outbound = crossings.entry(entry)?;
                Ok((
                    entry.port.name,
                    EntryRoute {
                        entry: entry.clone(),
                        outbound,
                    },
                ))
            })
            .collect::<Result<HashMap<_, _>, StageError>>()?;
        let mut running = Self {
            monitor: GraphMonitor {
                shared: Arc::new(Shared {
                    nodes,
                    written: crossings.written(),
                    stopping: AtomicBool::new(false),
                    halted: AtomicBool::new(false),
                    dead_letters: DeadLetters::default(),
                    thread_start: graph.thread_start.clone(),
                    sample: sample(graph),
                }),
                crews,
                started: Instant::now(),
            },
            controllers: Vec::new(),
            // Stages that run elsewhere are drained there.
            order: graph_order(graph)
                .into_iter()
                .filter(|&at| local(at))
                .collect(),
            exited,
            stopped: false,
            inbounds: Vec::new(),
            here: here.clone(),
            entries,
            listing: None,
        };
        // On an error, dropping `running` tells the threads started to leave.
        for (at, crew) in running.monitor.crews.iter().enumerate() {
            if here[at] {
                crew.start(&running.monitor.shared)?;
            }
        }
        running.start_controllers()?;
        running.inbounds = crossings.inbounds(&running.monitor.shared)?;
        for (at, stage) in graph.stages.iter().enumerate() {
            if stage.role == Role::Source && local(at) {
                for _ in 0..plan.instances[at] {
                    let ticket = Ticket::Source(at, (stage.instance)());
                    running.monitor.crews[plan.cluster_of[at]]
                        .ready
                        .push(ticket, plan.priorities[at]);
                }
            }
        }
        let stages_here = (0..graph.stages.len()).map(local).collect();
        running.listing = Some(Listing::new(running.monitor(), stages_here));
        Ok(running)
    }

    fn start_controllers(&mut self) -> Result<(), StageError> {
        for (at, crew) in self
            .monitor
            .crews
            .iter()
            .enumerate()
            .filter(|&(at, crew)| controller::needed(at, crew, &self.monitor.shared))
        {
            let (stop, stopped) = crossbeam_channel::bounded(0);
            let shared = Arc::clone(&self.monitor.shared);
            let handle = controller::spawn(at, Arc::clone(crew), shared, stopped)
                .map_err(|e| StageError::start(&crew.name, &e))?;
            self.controllers.push((stop, handle));
        }
        Ok(())
    }

    /// Returns every stage's queue and counters now.
    pub fn stats(&self) -> GraphStats {
        self.monitor.stats()
    }

    /// Returns a handle that reads the stats from elsewhere, for as long as it is
    /// kept.
    pub fn monitor(&self) -> GraphMonitor {
        self.monitor.clone()
    }

    /// Returns a way into stage `to` from outside the graph, for events of its input
    /// type `T`, with its own `admission` policy when the stage's queue is full.
    /// `name` names the sender in errors and logs (`inlet.NAME`).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::collections::HashMap;
    /// use proscenium::stage::{Admission, Graph, Stage};
    ///
    /// let (done, got) = std::sync::mpsc::channel();
    /// let mut graph = Graph::new();
    /// let sink = graph.stage(Stage::stateful("sink", || (), move |_, n: u32, _| {
    ///     done.send(n).unwrap();
    ///     Ok(())
    /// }));
    /// graph.part([("main", graph.all())]);
    /// let running = graph.start(&HashMap::new()).unwrap();
    /// let inlet = running.inlet::<u32>("http", &sink, Admission::Reject).unwrap();
    /// inlet.send(7).unwrap();
    /// assert_eq!(got.recv().unwrap(), 7);
    /// running.shutdown(std::time::Duration::from_secs(5));
    /// ```
    ///
    /// # Errors
    ///
    /// A graph error if `T` is not the stage's input type, or the stage is a source.
    pub fn inlet<T: Send + 'static>(
        &self,
        name: &'static str,
        to: &StageRef,
        admission: Admission,
    ) -> Result<Inlet<T>, StageError> {
        self.inlet_through(name, to, Connector::local().admission(admission))
    }

    /// Returns a way into stage `to` that runs it at once on the caller's thread, as
    /// a `cohort` connector does (waiting for an idle instance if all are busy): for
    /// a short handler whose caller should not wait a turn in a queue, as the staged
    /// server's file cache.
    ///
    /// # Errors
    ///
    /// A graph error if `T` is not the stage's input type, or the stage is a source or
    /// async (a cohort connector cannot run a future on the caller's thread).
    pub fn cohort_inlet<T: Send + 'static>(
        &self,
        name: &'static str,
        to: &StageRef,
    ) -> Result<Inlet<T>, StageError> {
        self.inlet_through(name, to, Connector::cohort())
    }

    fn inlet_through<T: Send + 'static>(
        &self,
        name: &'static str,
        to: &StageRef,
        connector: Connector,
    ) -> Result<Inlet<T>, StageError> {
        let stage = &self.monitor.shared.nodes[to.index];
        let given = EventType::of::<T>();
        match stage.input {
            Some(input) if input.id == given.id => {}
            Some(input) => {
                return Err(StageError::graph(format!(
                    "inlet `{name}` sends {} but stage `{}` takes {}",
                    given.name, stage.name, input.name
                )));
            }
            None => {
                return Err(StageError::graph(format!(
                    "inlet `{name}`: stage `{}` is a source and takes no events",
                    stage.name
                )));
            }
        }
        if !self.here[stage.cluster] {
            // Its queue here is served by no thread: an event sent to it would wait
            // for ever.
            return Err(StageError::graph(format!(
                "inlet `{name}`: stage `{}` runs in another process; declare an entry \
                 to it (Graph::entry) and send through RunningGraph::entry",
                stage.name
            )));
        }
        if connector.kind == ConnectorKind::Cohort && stage.asynchronous {
            return Err(StageError::graph(format!(
                "inlet `{name}`: stage `{}` is async, and a cohort inlet runs it on the \
                 caller's thread",
                stage.name
            )));
        }
        let route = Route {
            port: name,
            target: to.index,
            connector,
            bucket: bucket_for(connector.admission),
            outbound: None,
        };
        Ok(Inlet::new(Arc::clone(&self.monitor.shared), route, name))
    }

    /// Returns a way in through entry `name` ([`Graph::entry`]): into its stage's
    /// queue when the stage runs here, else to its Redis stream, read by the stage's
    /// process. Its admission policy applies either way; while Redis is away, a
    /// `reject` entry refuses once its queue here is full.
    ///
    /// # Errors
    ///
    /// A graph error for an entry the graph does not declare, or one that carries
    /// another type than `T`.
    pub fn entry<T: Send + 'static>(&self, name: &'static str) -> Result<Inlet<T>, StageError> {
        let Some(route) = self.entries.get(name) else {
            return Err(StageError::graph(format!(
                "the graph has no entry `{name}`"
            )));
        };
        let given = EventType::of::<T>();
        if given.id != route.entry.port.event.id {
            return Err(StageError::graph(format!(
                "entry `{name}` carries {}, not {}",
                route.entry.port.event.name, given.name
            )));
        }
        let connector = route.entry.connector;
        let route = Route {
            port: name,
            target: route.entry.to,
            connector,
            bucket: bucket_for(connector.admission),
            outbound: route.outbound.clone(),
        };
        Ok(Inlet::new(Arc::clone(&self.monitor.shared), route, name))
    }

    /// What the graph's threads share: for a connector's reader from another process.
    #[cfg(all(test, feature = "redis"))]
    pub(crate) fn shared(&self) -> Arc<Shared> {
        Arc::clone(&self.monitor.shared)
    }

    /// Returns the graph's dead letters: events whose handler panicked, and events
    /// left undelivered by a shutdown past its deadline.
    pub fn dead_letters(&self) -> &DeadLetters {
        &self.monitor.shared.dead_letters
    }

    /// Stops the sources, drains the queues in graph order (upstream first) and
    /// stops the threads, all within `deadline`.
    pub fn shutdown(mut self, deadline: Duration) -> ShutdownReport {
        let until = Instant::now() + deadline;
        let shared = Arc::clone(&self.monitor.shared);
        shared.stopping.store(true, Ordering::Release);
        // Nothing more from other processes: what they sent stays in their streams.
        self.inbounds.clear();
        let mut drained = Vec::new();
        for &node in &self.order {
            if shared.wait_quiet(node, until) {
                drained.push(shared.nodes[node].name.clone());
            }
        }
        let stats = self.stats();
        let (abandoned, threads) = self.halt();
        let thread_count = threads.len();
        // Every thread ever started tells `exited` once, retired ones included.
        let mut exits = 0;
        while exits < thread_count && self.exited.recv_deadline(until).is_ok() {
            exits += 1;
        }
        let mut stuck_threads = 0;
        for thread in threads {
            // All told they exited: each join is a moment's wait.
            if exits == thread_count || thread.is_finished() {
                let _ = thread.join();
            } else {
                stuck_threads += 1;
                tracing::warn!("a stage thread did not exit by the shutdown deadline");
            }
        }
        ShutdownReport {
            drained,
            abandoned,
            stuck_threads,
            dead_letters: shared.dead_letters.count(),
            stats,
        }
    }

    /// Stops the controllers, raises `halted`, dead-letters what is queued, tells
    /// every thread to exit; returns the events dead-lettered and the handles of
    /// every thread started.
    fn halt(&mut self) -> (u64, Vec<JoinHandle<()>>) {
        self.stopped = true;
        for (stop, controller) in std::mem::take(&mut self.controllers) {
            drop(stop);
            let _ = controller.join();
        }
        let abandoned = self.monitor.shared.halt_queues();
        let threads = self
            .monitor
            .crews
            .iter()
            .flat_map(|crew| crew.stop())
            .collect();
        (abandoned, threads)
    }
}

impl GraphMonitor {
    /// Returns each stage's name with its wait and service histograms, in the order
    /// of [`stats`](Self::stats)' stages.
    #[cfg_attr(
        not(feature = "metrics"),
        expect(dead_code, reason = "only /metrics reads it")
    )]
    pub(crate) fn latencies(&self) -> impl Iterator<Item = (&str, &Histogram, &Histogram)> {
        self.shared.nodes.iter().map(|node| {
            let counters = &node.counters;
            (node.name.as_str(), &counters.wait, &counters.service)
        })
    }

    /// Returns every stage's queue and counters now.
    pub fn stats(&self) -> GraphStats {
        let uptime = self.started.elapsed();
        GraphStats {
            uptime_secs: uptime.as_secs_f64(),
            sample: self.shared.sample,
            clusters: self.crews.iter().map(|crew| crew.stats()).collect(),
            stages: self
                .shared
                .nodes
                .iter()
                .map(|node| {
                    let identity = (
                        node.name.as_str(),
                        self.crews[node.cluster].name.as_str(),
                        node.instances,
                    );
                    StageStats::read(
                        identity,
                        (node.queue.1.len(), node.capacity),
                        &node.counters,
                        (node.batch.stats(), node.admission.stats()),
                        uptime,
                    )
                })
                .collect(),
        }
    }
}

impl std::fmt::Debug for GraphMonitor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphMonitor")
            .field("stages", &self.shared.nodes.len())
            .finish_non_exhaustive()
    }
}

impl Drop for RunningGraph {
    fn drop(&mut self) {
        if !self.stopped {
            // The threads leave at their next ticket, unjoined.
            self.halt();
        }
    }
}

/// Returns stage `at` ready to run: its queue, its idle instances (a source's are
/// made as they start), its routes.
fn build_node(
    graph: &Graph,
    plan: &Plan,
    at: usize,
    ready: &Arc<Ready>,
    outbound: &mut impl FnMut(&Edge) -> Result<Option<Arc<Outbound>>, StageError>,
) -> Result<Node, StageError> {
    let stage = &graph.stages[at];
    let cluster = plan.cluster_of[at];
    let (capacity, instances) = (plan.clusters[cluster].queue, plan.instances[at]);
    let idle = match stage.role {
        Role::Source => Vec::new(),
        Role::Stateful | Role::Stateless => (0..instances).map(|_| (stage.instance)()).collect(),
    };
    Ok(Node {
        repeats: stage.repeats.clone(),
        name: stage.name.clone(),
        role: stage.role,
        input: stage.input,
        cluster,
        instances,
        priority: plan.priorities[at],
        batch: Batch::new(
            plan.clusters[cluster].batch,
            plan.clusters[cluster].max_batch,
        ),
        admission: Share::new(plan.clusters[cluster].target_wait),
        // The admission controller judges a window by its waits: all of them.
        sample: match plan.clusters[cluster].target_wait {
            Some(_) => 1,
            None => sample(graph),
        },
        routes: graph
            .edges
            .iter()
            .filter(|edge| edge.from == at)
            .map(|edge| outbound(edge).map(|out| route(stage, edge, out)))
            .filter_map(Result::transpose)
            .collect::<Result<_, _>>()?,
        queue: crossbeam_channel::bounded(capacity),
        capacity,
        asynchronous: stage.asynchronous,
        ready: Arc::clone(ready),
        pool: Pool::new(idle),
        counters: Counters::default(),
        sending: AtomicUsize::new(0),
    })
}

/// Returns one in how many events the graph's stages time.
fn sample(graph: &Graph) -> u64 {
    u64::from(graph.sample.unwrap_or(super::DEFAULT_SAMPLE))
}

/// Returns `edge` as its sender's route (every edge's port exists: the plan checked).
fn route(stage: &Stage, edge: &Edge, outbound: Option<Arc<Outbound>>) -> Option<Route> {
    let port = stage.outputs.iter().find(|port| port.name == edge.port)?;
    Some(Route {
        port: port.name,
        target: edge.to,
        connector: edge.connector,
        bucket: bucket_for(edge.connector.admission),
        outbound,
    })
}

/// Returns the token bucket `admission` needs, if any.
fn bucket_for(admission: Admission) -> Option<TokenBucket> {
    match admission {
        Admission::TokenBucket { rate, burst } => Some(TokenBucket::new(rate, burst)),
        Admission::Block | Admission::Reject => None,
    }
}

/// Stages upstream first (Kahn's order over the connectors); stages on a cycle
/// follow in the order they were added.
fn graph_order(graph: &Graph) -> Vec<usize> {
    let n = graph.stages.len();
    let mut inbound = vec![0usize; n];
    for edge in &graph.edges {
        inbound[edge.to] += 1;
    }
    let mut order: Vec<usize> = (0..n).filter(|&s| inbound[s] == 0).collect();
    let mut at = 0;
    while at < order.len() {
        let from = order[at];
        for edge in graph.edges.iter().filter(|e| e.from == from) {
            inbound[edge.to] -= 1;
            if inbound[edge.to] == 0 {
                order.push(edge.to);
            }
        }
        at += 1;
    }
    order.extend((0..n).filter(|s| !order.contains(s)).collect::<Vec<_>>());
    order
}
