//! The scenarios: each reproduces a figure of the sources (../shared/SOURCES.md) as a
//! plan — which servers by default, where they run, the steps of load every server
//! gets, the answers checked first, and the plots drawn after.

use crate::calibration::{self, PROBE_CONNECTIONS, SATURATION};

mod leda;
mod load;
mod node_scala;
mod per_server;
mod profile;
mod techempower;
mod thesis;
mod yarn;

pub(crate) use self::leda::{CEP_CONFIGURATIONS, CEP_ENTRIES, CEP_GROUP, CEP_ROWS, FILES};
use self::leda::{cep, dynamic, dynamic_lua, static_files};
pub(crate) use self::load::{Load, method_and_path};
pub(crate) use self::node_scala::LIGHT;
use self::node_scala::{mixed, scaling, stateful};
pub(crate) use self::per_server::{is_asked, probes, tunings_asked};
pub use self::profile::Profile;
use self::techempower::closed_max;
use self::thesis::{actors, off_system, on_system};
pub(crate) use self::yarn::YARNS_WORKERS;
use self::yarn::workers;

/// Every scenario, in the order `all` runs them.
pub const SCENARIOS: [&str; 13] = [
    "plaintext",
    "json",
    "static",
    "dynamic",
    "dynamic-lua",
    "on-system",
    "off-system",
    "mixed",
    "scaling",
    "stateful",
    "workers",
    "actors",
    "cep",
];

/// The answers a latency or CPU figure needs before it is drawn: a p99 of fewer is one
/// request's time, a CPU figure of fewer mostly start-up and idle time.
pub(crate) const MIN_ANSWERS: u64 = 100;

/// How long each server's warm-up runs, before its steps in every round.
pub(crate) const WARM_UP_SECONDS: u64 = 2;

/// How long the warm-up of a server that compiles at run time runs, as a closed loop of
/// the first step's targets (a saturation probe's load): HotSpot's optimising compiler
/// takes a method after some 10,000 calls, and the first step's load (fifty relayed
/// requests in off-system's two seconds) left Pekko's first rounds collapsing at 500/s
/// that its third ran at 1,000/s.
pub(crate) const JIT_WARM_UP_SECONDS: u64 = 10;

/// Where servers and load run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cores {
    /// The server on the first half of the cores, the load on the rest: what the
    /// server spends is measured apart from the load.
    Split,
    /// Both on every core: the multi-core models need them; the load takes its share.
    Shared,
}

/// One step of load, the same for every server.
#[derive(Debug, Clone)]
pub(crate) struct StepPlan {
    /// Steps of a group share a plot (a file size, a Fibonacci n, a route).
    pub(crate) group: String,
    pub(crate) label: String,
    /// Where the step sits on the plot's x axis (clients, rate, share of heavy).
    pub(crate) x: f64,
    pub(crate) load: Load,
    /// For an open step, the share of the server's saturation rate for the group to
    /// offer (see `per_server.rs`); the load's rate is then set per server.
    pub(crate) share_of_saturation: Option<f64>,
}

impl StepPlan {
    /// Returns the step with its closed load sent from `threads` generator threads.
    fn with_load_threads(mut self, threads: usize) -> Self {
        if let Load::Closed { threads: t, .. } = &mut self.load {
            *t = threads;
        }
        self
    }
}

/// What a plot shows on its y axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Metric {
    Rps,
    CpuPerRequest,
    MeanLatency,
    P99Latency,
    /// Failed requests (no answer, or not 2xx) in percent of those sent.
    FailedShare,
    /// Server CPU ÷ (wall time × its cores), in percent.
    Utilisation,
    /// The mean and p99 of the mix's light requests alone ([`LIGHT`]): what a heavy
    /// request does to the others on its loop.
    LightMeanLatency,
    LightP99Latency,
    /// A job's execution time, in seconds (the `cep` scenario).
    Elapsed,
}

impl Metric {
    pub(crate) fn title(self) -> &'static str {
        match self {
            Self::Rps => "throughput",
            Self::CpuPerRequest => "server CPU per request",
            Self::MeanLatency => "mean response time",
            Self::P99Latency => "p99 response time",
            Self::FailedShare => "failed requests",
            Self::Utilisation => "server utilisation",
            Self::LightMeanLatency => "light requests' mean response time",
            Self::LightP99Latency => "light requests' p99 response time",
            Self::Elapsed => "execution time",
        }
    }

    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::Rps => "2xx answers a second in the send window",
            Self::CpuPerRequest => "server CPU per request (µs)",
            Self::MeanLatency => "mean response time (ms, failures at 10 s)",
            Self::P99Latency => "p99 response time (ms, failures at 10 s)",
            Self::FailedShare => "failed, % of sent (timeouts, errors, non-2xx)",
            Self::Utilisation => "server CPU busy, % of its cores",
            Self::LightMeanLatency => "mean response time of light requests (ms, failures at 10 s)",
            Self::LightP99Latency => "p99 response time of light requests (ms, failures at 10 s)",
            Self::Elapsed => "execution time (s), first line read to last report",
        }
    }
}

/// Where a line plot's points sit on the x axis, and what a line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum XAxis {
    /// One line per server, a point at each step's `x`.
    Steps,
    /// One line per family of servers, a point per server at its worker processes
    /// (`ServerSpec::workers`): servers that differ in their workers alone make one
    /// line, as Yarn's Fig. 6.4 drew one server against its workers.
    Workers,
}

/// A plot: `metric` for one group's steps, one series per server; `x_label` names the
/// x axis for line plots, while bar plots take the step labels as categories.
#[derive(Debug, Clone)]
pub(crate) struct PlotPlan {
    pub(crate) group: String,
    pub(crate) metric: Metric,
    pub(crate) x_label: Option<&'static str>,
    pub(crate) x_axis: XAxis,
}

/// A scenario, planned for one profile and machine.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub(crate) name: &'static str,
    pub(crate) reproduces: &'static str,
    pub(crate) default_servers: Vec<String>,
    pub(crate) cores: Cores,
    /// Whether the slow upstream of `/relay` must run.
    pub(crate) upstream: bool,
    /// `(path, text the answer must contain)`, checked before any load.
    pub(crate) checks: Vec<(String, String)>,
    pub(crate) steps: Vec<StepPlan>,
    pub(crate) plots: Vec<PlotPlan>,
    pub(crate) deviations: Vec<String>,
}

/// Whether scenario `name` is a job the lab runs and times (`cep`), not servers it
/// loads.
pub(crate) fn is_job(name: &str) -> bool {
    name == "cep"
}

/// Plans scenario `name`, or returns `None` when there is none of that name.
pub(crate) fn plan(name: &str, profile: Profile, cores: usize) -> Option<Plan> {
    let quick = profile == Profile::Quick;
    let mut plan = match name {
        "plaintext" => closed_max("plaintext", "/plaintext", "Hello, World!", quick),
        "json" => closed_max("json", "/json", "Hello, World!", quick),
        "static" => static_files(quick),
        "dynamic" => dynamic(quick),
        "dynamic-lua" => dynamic_lua(quick),
        "on-system" => on_system(quick),
        "off-system" => off_system(quick),
        "mixed" => mixed(quick),
        "scaling" => scaling(quick, cores),
        "stateful" => stateful(quick),
        "workers" => workers(quick),
        "actors" => actors(quick),
        "cep" => cep(),
        _ => return None,
    };
    if is_job(name) {
        return Some(plan);
    }
    add_deviations(&mut plan, cores, quick);
    add_saturation_plot(&mut plan);
    add_accounting_plots(&mut plan);
    Some(plan)
}

/// Adds the saturation probes' bar plot, when the plan asks for probes.
fn add_saturation_plot(plan: &mut Plan) {
    if !probes(plan).is_empty() {
        plan.plots.push(PlotPlan {
            group: SATURATION.to_owned(),
            metric: Metric::Rps,
            x_label: None,
            x_axis: XAxis::Steps,
        });
    }
}

/// Adds what every plan of servers departs from its source by: one machine for both
/// servers and load, and in the quick profile shorter and fewer steps.
fn add_deviations(plan: &mut Plan, cores: usize, quick: bool) {
    // What the CPU split costs is the runner's to say: it knows the cores chosen.
    plan.deviations.push(format!(
        "one {cores}-core machine for servers and load, over loopback, not a network"
    ));
    if quick {
        plan.deviations
            .push("quick profile: shorter steps and fewer of them than the source".to_owned());
    }
}

/// Adds the plots that say whether the others can be trusted: for an open-loop group
/// the rate achieved and the failed share a step, for a closed-loop one the server's
/// utilisation (under 100 %, the server was not the bottleneck).
fn add_accounting_plots(plan: &mut Plan) {
    let mut groups: Vec<(String, Option<&'static str>, XAxis)> = Vec::new();
    for p in &plan.plots {
        if !groups.iter().any(|(g, ..)| *g == p.group) {
            groups.push((p.group.clone(), p.x_label, p.x_axis));
        }
    }
    for (group, x_label, x_axis) in groups {
        for &metric in accounting_metrics(plan, &group) {
            if !plan
                .plots
                .iter()
                .any(|p| p.group == group && p.metric == metric)
            {
                plan.plots.push(PlotPlan {
                    group: group.clone(),
                    metric,
                    x_label,
                    x_axis,
                });
            }
        }
    }
}

/// The accounting plots of `group`: achieved/s and the failed share for an open loop,
/// the server's utilisation for a closed one.
fn accounting_metrics(plan: &Plan, group: &str) -> &'static [Metric] {
    let open = plan
        .steps
        .iter()
        .any(|s| s.group == group && s.load.offered().is_some());
    if open {
        &[Metric::Rps, Metric::FailedShare]
    } else {
        &[Metric::Utilisation]
    }
}

fn servers(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| (*s).to_owned()).collect()
}

/// A closed step of `target` at each of `clients`, labelled by its clients and
/// lasting `seconds(clients)`.
fn client_ramp(
    group: &str,
    target: &str,
    clients: &[usize],
    seconds: impl Fn(usize) -> u64,
) -> Vec<StepPlan> {
    clients
        .iter()
        .map(|&c| {
            closed(
                group,
                format!("{c} clients"),
                c as f64,
                target,
                c,
                1,
                seconds(c),
            )
        })
        .collect()
}

fn closed(
    group: &str,
    label: String,
    x: f64,
    path: &str,
    conns: usize,
    depth: usize,
    seconds: u64,
) -> StepPlan {
    StepPlan {
        group: group.to_owned(),
        label,
        x,
        load: Load::Closed {
            targets: vec![path.to_owned()],
            conns,
            depth,
            threads: 1,
            seconds,
        },
        share_of_saturation: None,
    }
}

fn open(
    group: &str,
    label: String,
    x: f64,
    targets: Vec<String>,
    rate: u64,
    seconds: u64,
) -> StepPlan {
    StepPlan {
        group: group.to_owned(),
        label,
        x,
        load: Load::Open {
            targets,
            rate,
            seconds,
        },
        share_of_saturation: None,
    }
}

fn plots(groups: &[String], metrics: &[Metric], x_label: Option<&'static str>) -> Vec<PlotPlan> {
    groups
        .iter()
        .flat_map(|group| {
            metrics.iter().map(|&metric| PlotPlan {
                group: group.clone(),
                metric,
                x_label,
                x_axis: XAxis::Steps,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests;
