//! Checking a graph and working out how it runs: which cluster each stage is in, and
//! each cluster's threads, queue bound, batch range and instance counts.

use std::collections::HashMap;

use super::definition::Role;
use super::error::StageError;
use super::graph::Graph;
use super::port::ConnectorKind;
use super::set::StageSet;
use crate::config::{ClusterSpec, DEFAULT_QUEUE};

/// The cluster a graph runs as when neither its code nor its configuration
/// partitions it.
const SINGLE_CLUSTER: &str = "main";

/// One cluster's scheduling, resolved.
#[derive(Debug)]
pub(crate) struct PlannedCluster {
    pub(crate) name: String,
    pub(crate) threads: usize,
    pub(crate) max_threads: usize,
    pub(crate) queue: usize,
    pub(crate) batch: usize,
    pub(crate) max_batch: usize,
    pub(crate) target_wait: Option<std::time::Duration>,
    /// Its threads' nice value, when it has one of its own.
    pub(crate) nice: Option<i32>,
}

/// How a checked graph runs.
#[derive(Debug)]
pub(crate) struct Plan {
    pub(crate) clusters: Vec<PlannedCluster>,
    /// Each stage's cluster, by stage index.
    pub(crate) cluster_of: Vec<usize>,
    /// Each stage's instances, by stage index.
    pub(crate) instances: Vec<usize>,
    /// Each stage's priority in its cluster (`[clusters.NAME] priority`), by stage
    /// index.
    pub(crate) priorities: Vec<usize>,
}

impl Plan {
    pub(crate) fn check(
        graph: &Graph,
        config: &HashMap<String, ClusterSpec>,
    ) -> Result<Self, StageError> {
        check_stages(graph)?;
        check_edges(graph)?;
        check_entries(graph)?;
        let parts = partition(graph, config)?;
        let cluster_of = assign(graph, &parts)?;
        check_local_edges(graph, &parts, &cluster_of)?;
        let clusters: Vec<PlannedCluster> = parts
            .iter()
            .map(|(name, _)| schedule(name, config.get(name)))
            .collect();
        let instances = instance_counts(graph, &parts, config, &cluster_of)?;
        let priorities = priorities(graph, &parts, config, &cluster_of)?;
        let plan = Self {
            clusters,
            cluster_of,
            instances,
            priorities,
        };
        plan.check_source_threads(graph)?;
        Ok(plan)
    }

    /// A source holds a thread for its whole run: a cluster needs one thread more
    /// than its sources' instances, or nothing they send is ever handled there.
    fn check_source_threads(&self, graph: &Graph) -> Result<(), StageError> {
        for (at, cluster) in self.clusters.iter().enumerate() {
            let held: usize = (0..graph.stages.len())
                .filter(|&s| self.cluster_of[s] == at && graph.stages[s].role == Role::Source)
                // An async source awaits on a loop and holds no thread.
                .filter(|&s| !graph.stages[s].asynchronous)
                .map(|s| self.instances[s])
                .sum();
            let consumers = (0..graph.stages.len())
                .any(|s| self.cluster_of[s] == at && graph.stages[s].role != Role::Source);
            if consumers && held >= cluster.threads {
                return Err(StageError::graph(format!(
                    "cluster `{}` has {} threads, all held by its sources' {held} instances; give it more threads",
                    cluster.name, cluster.threads
                )));
            }
        }
        Ok(())
    }
}

/// Each stage is added once, and declared as it can be.
fn check_stages(graph: &Graph) -> Result<(), StageError> {
    for (at, stage) in graph.stages.iter().enumerate() {
        if let Some(misdeclared) = &stage.misdeclared {
            return Err(StageError::graph(misdeclared.clone()));
        }
        if graph.stages[..at]
            .iter()
            .any(|other| other.name == stage.name)
        {
            return Err(StageError::graph(format!(
                "stage `{}` is added twice",
                stage.name
            )));
        }
    }
    Ok(())
}

/// Each entry is named once, carries what its stage takes, and is decoupled (it may
/// cross processes) from an [`Event`](super::Event) port.
fn check_entries(graph: &Graph) -> Result<(), StageError> {
    for (at, entry) in graph.entries.iter().enumerate() {
        let (name, to) = (entry.port.name, &graph.stages[entry.to]);
        let t = &to.name;
        if graph.entries[..at].iter().any(|e| e.port.name == name) {
            return Err(StageError::graph(format!(
                "entry `{name}` is declared twice"
            )));
        }
        match to.input {
            Some(input) if input.id == entry.port.event.id => {}
            Some(input) => {
                return Err(StageError::graph(format!(
                    "entry `{name}` carries {} but `{t}` takes {}",
                    entry.port.event.name, input.name
                )));
            }
            None => {
                return Err(StageError::graph(format!(
                    "entry `{name}` goes to `{t}`, a source, which takes no events"
                )));
            }
        }
        if entry.connector.kind != ConnectorKind::Decoupled || entry.port.codec.is_none() {
            return Err(StageError::graph(format!(
                "entry `{name}` → `{t}` must be decoupled, from Out::new (its events may cross processes)"
            )));
        }
    }
    Ok(())
}

fn check_edges(graph: &Graph) -> Result<(), StageError> {
    for (at, edge) in graph.edges.iter().enumerate() {
        let (from, to) = (&graph.stages[edge.from], &graph.stages[edge.to]);
        let (f, p, t) = (&from.name, &edge.port, &to.name);
        let Some(port) = from.outputs.iter().find(|port| port.name == edge.port) else {
            return Err(StageError::graph(format!(
                "stage `{f}` has no output port `{p}` (connected to `{t}`)"
            )));
        };
        if graph.edges[..at]
            .iter()
            .any(|e| e.from == edge.from && e.port == edge.port)
        {
            return Err(StageError::graph(format!(
                "output port `{f}.{p}` is bound twice"
            )));
        }
        let Some(input) = to.input else {
            return Err(StageError::graph(format!(
                "`{f}.{p}` is bound to `{t}`, a source, which takes no events"
            )));
        };
        if input.id != port.event.id {
            return Err(StageError::graph(format!(
                "`{f}.{p}` carries {} but `{t}` takes {}",
                port.event.name, input.name
            )));
        }
        if edge.connector.kind == ConnectorKind::Cohort && to.asynchronous {
            return Err(StageError::graph(format!(
                "`{f}.{p}` → `{t}` is cohort, but `{t}` is async: its handler cannot run on its sender's thread; connect it local or decoupled"
            )));
        }
        if edge.connector.kind == ConnectorKind::Decoupled && port.codec.is_none() {
            return Err(StageError::graph(format!(
                "`{f}.{p}` → `{t}` is decoupled, but `{f}.{p}` is a local port (Out::local): decoupled events must be serializable"
            )));
        }
    }
    for stage in &graph.stages {
        for port in &stage.outputs {
            let bound = graph
                .edges
                .iter()
                .any(|e| graph.stages[e.from].name == stage.name && e.port == port.name);
            if !bound {
                return Err(StageError::graph(format!(
                    "output port `{}.{}` is bound to no stage",
                    stage.name, port.name
                )));
            }
        }
    }
    Ok(())
}

/// The clusters: the configuration's when it lists stages, else the code's `part`,
/// else one cluster of every stage.
fn partition(
    graph: &Graph,
    config: &HashMap<String, ClusterSpec>,
) -> Result<Vec<(String, StageSet)>, StageError> {
    let mut listed: Vec<(String, StageSet)> = config
        .iter()
        .filter(|(_, spec)| !spec.stages.is_empty())
        .map(|(name, spec)| {
            (
                name.clone(),
                StageSet::of(spec.stages.iter().map(String::as_str)),
            )
        })
        .collect();
    listed.sort_by(|a, b| a.0.cmp(&b.0));
    let parts = if !listed.is_empty() {
        listed
    } else if !graph.parts.is_empty() {
        graph.parts.clone()
    } else {
        vec![(SINGLE_CLUSTER.to_owned(), graph.all())]
    };
    let all = graph.all();
    for (cluster, set) in &parts {
        if let Some(unknown) = set.names().find(|name| !all.contains(name)) {
            return Err(StageError::graph(format!(
                "cluster `{cluster}` names stage `{unknown}`, which the graph does not have"
            )));
        }
    }
    Ok(parts)
}

fn assign(graph: &Graph, parts: &[(String, StageSet)]) -> Result<Vec<usize>, StageError> {
    graph
        .stages
        .iter()
        .map(|stage| {
            let mut holders = parts
                .iter()
                .enumerate()
                .filter(|(_, (_, set))| set.contains(&stage.name));
            match (holders.next(), holders.next()) {
                (Some((at, _)), None) => Ok(at),
                (None, _) => Err(StageError::graph(format!(
                    "stage `{}` is in no cluster",
                    stage.name
                ))),
                (Some((_, (first, _))), Some((_, (second, _)))) => Err(StageError::graph(format!(
                    "stage `{}` is in two clusters, `{first}` and `{second}`",
                    stage.name
                ))),
            }
        })
        .collect()
}

fn check_local_edges(
    graph: &Graph,
    parts: &[(String, StageSet)],
    cluster_of: &[usize],
) -> Result<(), StageError> {
    for edge in &graph.edges {
        let (a, b) = (cluster_of[edge.from], cluster_of[edge.to]);
        if a != b && edge.connector.kind != ConnectorKind::Decoupled {
            return Err(StageError::graph(format!(
                "`{}.{}` → `{}` is a {:?} connector across clusters `{}` and `{}`; only decoupled connectors cross clusters",
                graph.stages[edge.from].name,
                edge.port,
                graph.stages[edge.to].name,
                edge.connector.kind,
                parts[a].0,
                parts[b].0
            )));
        }
    }
    Ok(())
}

fn schedule(name: &str, spec: Option<&ClusterSpec>) -> PlannedCluster {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let threads = spec.and_then(|s| s.threads).unwrap_or(cores).max(1);
    let batch = spec.and_then(|s| s.batch).unwrap_or(1).max(1);
    PlannedCluster {
        name: name.to_owned(),
        threads,
        max_threads: spec
            .and_then(|s| s.max_threads)
            .unwrap_or(threads)
            .max(threads),
        queue: spec.and_then(|s| s.queue).unwrap_or(DEFAULT_QUEUE).max(1),
        batch,
        max_batch: spec.and_then(|s| s.max_batch).unwrap_or(batch).max(batch),
        target_wait: spec
            .and_then(|s| s.target_wait_ms)
            .map(std::time::Duration::from_millis),
        // At most 19, as the configuration reads it.
        nice: spec
            .and_then(|s| s.nice)
            .and_then(|n| i32::try_from(n).ok()),
    }
}

/// Each stage's priority in its cluster; refuses a priority given to a name that is
/// not one of the cluster's stages (a misspelt name would leave the stage meant last).
fn priorities(
    graph: &Graph,
    parts: &[(String, StageSet)],
    config: &HashMap<String, ClusterSpec>,
    cluster_of: &[usize],
) -> Result<Vec<usize>, StageError> {
    for (index, (cluster, _)) in parts.iter().enumerate() {
        let given = config.get(cluster).map(|spec| spec.priority.keys());
        for name in given.into_iter().flatten() {
            let here = |at: &usize| cluster_of[*at] == index && graph.stages[*at].name == *name;
            if !(0..graph.stages.len()).any(|at| here(&at)) {
                return Err(StageError::graph(format!(
                    "cluster `{cluster}` gives a priority to `{name}`, which is not one of its stages"
                )));
            }
        }
    }
    Ok(graph
        .stages
        .iter()
        .enumerate()
        .map(|(at, stage)| {
            let cluster = &parts[cluster_of[at]].0;
            let given = config
                .get(cluster)
                .and_then(|spec| spec.priority.get(&stage.name));
            given.copied().unwrap_or(0)
        })
        .collect())
}

fn instance_counts(
    graph: &Graph,
    parts: &[(String, StageSet)],
    config: &HashMap<String, ClusterSpec>,
    cluster_of: &[usize],
) -> Result<Vec<usize>, StageError> {
    graph
        .stages
        .iter()
        .enumerate()
        .map(|(at, stage)| {
            let cluster = &parts[cluster_of[at]].0;
            let configured = config.get(cluster).and_then(|spec| spec.instances.get(&stage.name));
            match (stage.role, configured) {
                (Role::Stateful, Some(&n)) if n != 1 => Err(StageError::graph(format!(
                    "cluster `{cluster}` gives stateful stage `{}` {n} instances; a stateful stage has one",
                    stage.name
                ))),
                (_, n) => Ok(n.copied().unwrap_or(1).max(1)),
            }
        })
        .collect()
}
