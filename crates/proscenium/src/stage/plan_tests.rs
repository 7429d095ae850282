//! Each graph error, found at start and naming its stages and ports.

use std::collections::HashMap;
use std::net::TcpStream;

use super::tests::clusters;
use super::{Connector, Graph, Out, Stage, StageError, StageRef};

/// A graph of a source with the port `port` and a stateless sink taking `u64`.
fn two_stages<T>(port: &Out<T>) -> (Graph, StageRef, StageRef) {
    let mut graph = Graph::new();
    let source = graph.stage(Stage::source("reader", || (), |_, _| Ok(())).output(port));
    let sink = graph.stage(Stage::stateless("renderer", || (), |_, _: u64, _| Ok(())));
    (graph, source, sink)
}

fn start_error(graph: Graph, toml: &str) -> StageError {
    match graph.start(&clusters(toml)) {
        Ok(_) => panic!("the graph started"),
        Err(error) => {
            assert!(error.is_graph(), "{error}");
            error
        }
    }
}

#[test]
fn an_unbound_output_port_is_named() {
    let (graph, _, _) = two_stages(&Out::<u64>::new("segment"));
    let error = start_error(graph, "");
    assert_eq!(
        error.to_string(),
        "output port `reader.segment` is bound to no stage"
    );
}

#[test]
fn an_unknown_port_is_named() {
    let (mut graph, source, sink) = two_stages(&Out::<u64>::new("segment"));
    graph.connect(&source, "segmnet", &sink, Connector::decoupled());
    let error = start_error(graph, "");
    assert_eq!(
        error.to_string(),
        "stage `reader` has no output port `segmnet` (connected to `renderer`)"
    );
}

#[test]
fn a_port_type_not_the_consumers_input_is_named() {
    let (mut graph, source, sink) = two_stages(&Out::<String>::new("segment"));
    graph.connect(&source, "segment", &sink, Connector::decoupled());
    let error = start_error(graph, "");
    assert_eq!(
        error.to_string(),
        "`reader.segment` carries alloc::string::String but `renderer` takes u64"
    );
}

#[test]
fn a_decoupled_connector_on_a_local_port_is_refused() {
    let mut graph = Graph::new();
    let port = Out::<TcpStream>::local("socket");
    let source = graph.stage(Stage::source("accept", || (), |_, _| Ok(())).output(&port));
    let sink = graph.stage(Stage::stateless(
        "serve",
        || (),
        |_, _: TcpStream, _| Ok(()),
    ));
    graph.connect(&source, "socket", &sink, Connector::decoupled());
    let error = start_error(graph, "");
    assert!(
        error.to_string().starts_with(
            "`accept.socket` → `serve` is decoupled, but `accept.socket` is a local port"
        ),
        "{error}"
    );
}

#[test]
fn a_local_connector_across_clusters_is_refused() {
    let (mut graph, source, sink) = two_stages(&Out::<u64>::new("segment"));
    graph.connect(&source, "segment", &sink, Connector::local());
    let error = start_error(
        graph,
        "[clusters.a]\nstages = [\"reader\"]\n[clusters.b]\nstages = [\"renderer\"]",
    );
    assert_eq!(
        error.to_string(),
        "`reader.segment` → `renderer` is a Local connector across clusters `a` and `b`; only decoupled connectors cross clusters"
    );
}

#[test]
fn a_stage_in_no_cluster_is_named() {
    let (mut graph, source, sink) = two_stages(&Out::<u64>::new("segment"));
    graph.connect(&source, "segment", &sink, Connector::decoupled());
    let error = start_error(graph, "[clusters.a]\nstages = [\"reader\"]");
    assert_eq!(error.to_string(), "stage `renderer` is in no cluster");
}

#[test]
fn a_stage_in_two_clusters_is_named() {
    let (mut graph, source, sink) = two_stages(&Out::<u64>::new("segment"));
    graph.connect(&source, "segment", &sink, Connector::decoupled());
    let all = graph.all();
    graph.part([("a", all.clone()), ("b", all - &source)]);
    let error = start_error(graph, "");
    assert_eq!(
        error.to_string(),
        "stage `renderer` is in two clusters, `a` and `b`"
    );
}

#[test]
fn a_cluster_whose_sources_hold_every_thread_is_refused() {
    let (mut graph, source, sink) = two_stages(&Out::<u64>::new("segment"));
    graph.connect(&source, "segment", &sink, Connector::decoupled());
    let error = start_error(graph, "[clusters.main]\nthreads = 1");
    assert_eq!(
        error.to_string(),
        "cluster `main` has 1 threads, all held by its sources' 1 instances; give it more threads"
    );
    assert!(Graph::new().start(&HashMap::new()).is_ok());
}

#[test]
fn issue39_a_priority_for_a_stage_the_cluster_has_not_is_named() {
    let (mut graph, source, sink) = two_stages(&Out::<u64>::new("segment"));
    graph.connect(&source, "segment", &sink, Connector::decoupled());
    let error = start_error(graph, "[clusters.main.priority]\nrendrer = 5");
    assert_eq!(
        error.to_string(),
        "cluster `main` gives a priority to `rendrer`, which is not one of its stages"
    );
}
