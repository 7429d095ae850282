//! Yarn's figure (Fig. 6.4): throughput against worker processes.

use super::*;

/// Workers as Yarn's, each serving one request at a time: `=N` names N of them.
pub(crate) const YARNS_WORKERS: &str = "proscenium:thread-pool:1/workers";

/// Yarn Fig. 6.4: requests a second against worker processes, 1 to 512, for "1000
/// requests, 20 at a time" to a simple Rack application (best 875/s at 256 workers,
/// 775/s on average); and beyond, 256 connections.
pub(super) fn workers(quick: bool) -> Plan {
    // Yarn's runs above 512 processes bogged its machine down; the quick profile stops
    // at 256, where Yarn did best.
    let (most, seconds) = if quick { (256, 3) } else { (512, 10) };
    let counts = std::iter::successors(Some(1usize), |n| Some(n * 2)).take_while(|&n| n <= most);
    let groups = [
        "20 connections (Yarn's)".to_owned(),
        "256 connections".to_owned(),
    ];
    let steps = connection_steps(&groups, seconds);
    let plots = worker_plots(&groups);
    Plan {
        name: "workers",
        reproduces: "Yarn Fig. 6.4: requests a second against worker processes",
        // Yarn's workers (a request at a time each: one thread), workers each running an
        // event loop, and httpd's prefork MPM, 150 processes, the fixed reference: a
        // point of its own.
        default_servers: counts
            .clone()
            .map(|n| format!("{YARNS_WORKERS}={n}"))
            .chain(counts.map(|n| format!("proscenium:prefork:{n}")))
            .chain(std::iter::once("httpd-prefork".to_owned()))
            .collect(),
        cores: Cores::Shared,
        upstream: false,
        checks: vec![("/plaintext".to_owned(), "Hello, World!".to_owned())],
        steps,
        plots,
        deviations: workers_deviations(seconds, most),
    }
}

/// The plaintext step of each of `groups`: 20 connections (Yarn's), then 256, for
/// `seconds`.
fn connection_steps(groups: &[String; 2], seconds: u64) -> Vec<StepPlan> {
    groups
        .iter()
        .zip([20, 256])
        .map(|(group, conns)| {
            let label = format!("{conns} connections");
            closed(group, label, conns as f64, "/plaintext", conns, 1, seconds)
        })
        .collect()
}

/// Where the workers scenario departs from Yarn's, its steps lasting `seconds` and its
/// workers up to `most`.
fn workers_deviations(seconds: u64, most: usize) -> Vec<String> {
    vec![
        format!(
            "Yarn sent 1,000 requests, 20 at a time (ab); here 20 connections for {seconds} s, \
             and 256 connections beyond it"
        ),
        "Yarn served a simple Rack application in Ruby, whose cost per request held it to 875/s; \
         here lab-app's /plaintext (Hello, World!), so the figure shows what the workers cost, not the page"
            .to_owned(),
        format!("worker processes 1 to {most} in powers of two"),
    ]
}

/// Throughput and CPU per request of each of `groups`, over the servers' worker
/// processes.
fn worker_plots(groups: &[String]) -> Vec<PlotPlan> {
    let mut plots = plots(
        groups,
        &[Metric::Rps, Metric::CpuPerRequest],
        Some("worker processes"),
    );
    for plot in &mut plots {
        plot.x_axis = XAxis::Workers;
    }
    plots
}
