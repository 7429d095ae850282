//! TechEmpower's plaintext and JSON tests, turned by issue 2 into server CPU per request
//! with one core a server: the brief's claim that Proscenium's HTTP core is on a par
//! with the best Rust servers and nginx.

use super::{Comparison, Finding, Source, Verdict, at_label};
use crate::results::Results;
use crate::scenario::Metric;

pub(super) const SOURCE: Source = Source {
    figure: "TechEmpower Framework Benchmarks, plaintext and JSON (server CPU per request, issue 2)",
    measured: "TechEmpower runs each framework on a server machine of its own with wrk on \
        another over 10 GbE: plaintext pipelined 16 deep at 256 to 16,384 connections, JSON \
        keep-alive at 16 to 512. Its ranking is requests a second on many cores; here, with a \
        core per server, the comparable figure is the server CPU each request costs.",
    stand_ins: &[(
        "the frameworks",
        "proscenium:loops (examples/lab-app), actix, hyper, nginx, node",
    )],
    claim: "Proscenium spends no more server CPU per request than the best of the peers (within \
        5 %), keep-alive and pipelined.",
    references: &[],
    judge,
};

fn judge(results: &Results) -> Finding {
    let ours = "proscenium:loops";
    let peers: Vec<&str> = results
        .servers
        .iter()
        .map(|s| s.name.as_str())
        .filter(|n| *n != ours)
        .collect();
    let mut rows = Vec::new();
    let mut held = 0;
    let mut measured = 0;
    for label in labels(results) {
        if let Some((o, (peer, b))) = beside_best_peer(results, label, ours, &peers) {
            measured += 1;
            held += usize::from(o <= b * 1.05);
            rows.push(Comparison::new(
                format!("{label}: {ours} ÷ the best peer ({peer})"),
                None,
                Some(o / b),
                "×",
            ));
        }
    }
    let Some(verdict) = Verdict::of_cases(held, measured) else {
        return Finding::missing(&[ours, "a peer"]);
    };
    Finding::new(
        verdict,
        format!("within 5 % of the best peer's CPU per request in {held} of {measured} steps"),
        rows,
    )
}

/// The labels of the measured steps, in the order they first ran.
fn labels(results: &Results) -> Vec<&str> {
    let mut labels: Vec<&str> = Vec::new();
    for s in results.steps.iter().filter(|s| !s.warmup) {
        if !labels.contains(&s.label.as_str()) {
            labels.push(&s.label);
        }
    }
    labels
}

/// `ours`' CPU per request at step `label`, and the best of `peers` with theirs;
/// `None` when either was not measured.
fn beside_best_peer<'a>(
    results: &Results,
    label: &str,
    ours: &str,
    peers: &[&'a str],
) -> Option<(f64, (&'a str, f64))> {
    let group = results.scenario.as_str();
    let cpu = |server| at_label(results, server, group, label, Metric::CpuPerRequest);
    let best = peers
        .iter()
        .filter_map(|p| Some((*p, cpu(p)?)))
        .min_by(|a, b| a.1.total_cmp(&b.1))?;
    Some((cpu(ours)?, best))
}
