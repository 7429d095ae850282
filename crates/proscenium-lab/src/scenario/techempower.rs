//! TechEmpower's plaintext and JSON tests, as server CPU per request.

use super::*;

/// TechEmpower's plaintext and JSON tests: closed-loop maximum, keep-alive and 16-deep
/// pipelining, and what the server spends per request.
pub(super) fn closed_max(name: &'static str, path: &str, answer: &str, quick: bool) -> Plan {
    let steps = keep_alive_and_pipelined(name, path, quick);
    Plan {
        name,
        reproduces: "TechEmpower's plaintext and JSON tests (server CPU per request, after issue 2's method)",
        default_servers: servers(&["proscenium:loops", "actix", "hyper", "nginx", "node"]),
        cores: Cores::Split,
        upstream: false,
        checks: vec![(path.to_owned(), answer.to_owned())],
        steps,
        plots: plots(
            &[name.to_owned()],
            &[Metric::Rps, Metric::CpuPerRequest],
            None,
        ),
        deviations: std::iter::once("one core per server (one loop or worker), wrk on the other")
            .chain((name == "json").then_some(
                "every server serializes the object for each request (the Rust ones a struct \
                 with serde_json, Node.js with JSON.stringify) but nginx, which answers from its \
                 configuration",
            ))
            .map(str::to_owned)
            .collect(),
    }
}

/// The steps of `name` on `path`: keep-alive and 16-deep pipelining on 64 connections,
/// and in the full profile keep-alive on 256 too.
fn keep_alive_and_pipelined(name: &str, path: &str, quick: bool) -> Vec<StepPlan> {
    let seconds = if quick { 5 } else { 15 };
    let mut steps = vec![
        closed(
            name,
            "keep-alive, 64 connections".into(),
            64.0,
            path,
            64,
            1,
            seconds,
        ),
        closed(
            name,
            "pipelined 16, 64 connections".into(),
            64.0,
            path,
            64,
            16,
            seconds,
        ),
    ];
    if !quick {
        steps.insert(
            1,
            closed(
                name,
                "keep-alive, 256 connections".into(),
                256.0,
                path,
                256,
                1,
                seconds,
            ),
        );
    }
    steps
}
