//! A graph's shape — its stages, ports and connectors, each with its types — as lines
//! of text in a fixed order, and a fingerprint of them: what processes of one graph
//! must agree on before they exchange events. The first process of a graph records
//! its shape in Redis (`GRAPH:shape`); one whose shape differs refuses to join, naming
//! the lines that differ, not two hashes.

use super::error::StageError;
use super::graph::Graph;
use crate::stream::RedisTarget;

/// Records `graph`'s shape under `GRAPH:shape` on the Redis `redis` names, or compares it
/// with the one recorded there.
///
/// # Errors
///
/// A graph error naming the lines that differ, or an unreachable error
/// ([`StageError::is_unreachable`]) when Redis cannot be reached.
pub(crate) fn join(graph: &Graph, name: &str, redis: &RedisTarget) -> Result<(), StageError> {
    let ours = shape(graph);
    let text = ours.join("\n");
    let key = format!("{name}:shape");
    let unreachable = |e: redis::RedisError| {
        StageError::unreachable(format!(
            "graph `{name}`: cannot compare its shape in Redis ({e})"
        ))
    };
    let mut redis = redis
        .client()
        .and_then(|client| client.get_connection_with_timeout(std::time::Duration::from_secs(5)))
        .map_err(unreachable)?;
    // SET NX: the first process records it; GET: what every process compares with.
    let () = redis::cmd("SET")
        .arg(&key)
        .arg(&text)
        .arg("NX")
        .query::<Option<String>>(&mut redis)
        .map(drop)
        .map_err(unreachable)?;
    let recorded: String = redis::cmd("GET")
        .arg(&key)
        .query(&mut redis)
        .map_err(unreachable)?;
    let theirs: Vec<String> = recorded.lines().map(str::to_owned).collect();
    if fingerprint(&theirs) == fingerprint(&ours) {
        return Ok(());
    }
    Err(StageError::graph(format!(
        "graph `{name}` differs from the one its other processes run (recorded in {key}; \
         - this process lacks, + it has):\n{}",
        differences(&theirs, &ours).join("\n")
    )))
}

/// The graph's shape, one line a stage, output port and connector, sorted.
pub(crate) fn shape(graph: &Graph) -> Vec<String> {
    let mut lines = Vec::new();
    for stage in &graph.stages {
        let input = stage.input.map_or("none", |t| t.name);
        lines.push(format!(
            "stage {} {:?}{} takes {input}",
            stage.name,
            stage.role,
            if stage.asynchronous { " async" } else { "" }
        ));
        for port in &stage.outputs {
            lines.push(format!(
                "port {}.{} carries {}",
                stage.name, port.name, port.event.name
            ));
        }
    }
    for edge in &graph.edges {
        lines.push(format!(
            "connect {}.{} to {} {:?} {:?}",
            graph.stages[edge.from].name,
            edge.port,
            graph.stages[edge.to].name,
            edge.connector.kind,
            edge.connector.admission
        ));
    }
    for entry in &graph.entries {
        lines.push(format!(
            "entry {} to {} carries {} {:?}",
            entry.port.name,
            graph.stages[entry.to].name,
            entry.port.event.name,
            entry.connector.admission
        ));
    }
    lines.sort();
    lines
}

/// The fingerprint of `shape`: 64-bit FNV-1a over its lines, a function of the text
/// alone (not of the Rust release, as std's hasher may be).
pub(crate) fn fingerprint(shape: &[String]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    shape
        .iter()
        .flat_map(|line| line.bytes().chain(std::iter::once(b'\n')))
        .fold(OFFSET, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(PRIME)
        })
}

/// The lines of `ours` that `theirs` lacks (`-`) and those it has that `ours` lacks
/// (`+`): what a refusal to join names.
pub(crate) fn differences(ours: &[String], theirs: &[String]) -> Vec<String> {
    let missing = ours
        .iter()
        .filter(|line| !theirs.contains(line))
        .map(|line| format!("- {line}"));
    let extra = theirs
        .iter()
        .filter(|line| !ours.contains(line))
        .map(|line| format!("+ {line}"));
    missing.chain(extra).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stage::{Connector, Out, Stage};

    fn graph(event_of_b: fn() -> Stage, connector: Connector) -> Graph {
        let out = Out::<u32>::new("numbers");
        let sender = out.clone();
        let mut graph = Graph::new();
        let a = graph.stage(
            Stage::source("a", || (), move |(), ctx| Ok(ctx.send(&sender, 1)?)).output(&out),
        );
        let b = graph.stage(event_of_b());
        graph.connect(&a, "numbers", &b, connector);
        graph
    }

    fn takes_u32() -> Stage {
        Stage::stateless("b", || (), |(), _: u32, _| Ok(()))
    }

    fn takes_u64() -> Stage {
        Stage::stateless("b", || (), |(), _: u64, _| Ok(()))
    }

    #[test]
    fn the_same_graph_has_the_same_shape_and_another_names_what_differs() {
        let ours = shape(&graph(takes_u32, Connector::decoupled()));
        assert_eq!(ours, shape(&graph(takes_u32, Connector::decoupled())));
        assert_eq!(
            fingerprint(&ours),
            fingerprint(&shape(&graph(takes_u32, Connector::decoupled())))
        );
        let typed = shape(&graph(takes_u64, Connector::decoupled()));
        assert_ne!(fingerprint(&ours), fingerprint(&typed));
        assert_eq!(
            differences(&ours, &typed),
            [
                "- stage b Stateless takes u32",
                "+ stage b Stateless takes u64"
            ]
        );
        let queued = shape(&graph(takes_u32, Connector::local()));
        let differ = differences(&ours, &queued);
        assert!(
            differ.len() == 2 && differ.iter().all(|l| l.contains("connect a.numbers to b")),
            "{differ:?}"
        );
    }

    #[test]
    fn the_fingerprint_is_fnv_1a_of_the_lines() {
        // FNV-1a of the empty input is its offset basis; of "a\n", a known value.
        assert_eq!(fingerprint(&[]), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fingerprint(&["a".to_owned()]), 0x089b_dc07_b544_e7b2);
    }
}
