//! The scenarios: each reproduces a figure of the sources (../shared/SOURCES.md) as a
//! plan — which servers by default, where they run, the steps of load every server
//! gets, the answers checked first, and the plots drawn after.

use crate::Profile;
use crate::calibration::{self, PROBE_CONNECTIONS, SATURATION};
use crate::load::Load;

/// Every scenario, in the order `all` runs them.
pub const SCENARIOS: [&str; 11] = [
    "plaintext",
    "json",
    "static",
    "dynamic",
    "on-system",
    "off-system",
    "mixed",
    "scaling",
    "stateful",
    "workers",
    "actors",
];

/// How long each server's warm-up runs, before its steps in every round.
pub(crate) const WARM_UP_SECONDS: u64 = 2;

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
    /// offer (see `calibration.rs`); the load's rate is then set per server.
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

/// Plans scenario `name`, or returns `None` when there is none of that name.
pub(crate) fn plan(name: &str, profile: Profile, cores: usize) -> Option<Plan> {
    let quick = profile == Profile::Quick;
    let mut plan = match name {
        "plaintext" => closed_max("plaintext", "/plaintext", "Hello, World!", quick),
        "json" => closed_max("json", "/json", "Hello, World!", quick),
        "static" => static_files(quick),
        "dynamic" => dynamic(quick),
        "on-system" => on_system(quick),
        "off-system" => off_system(quick),
        "mixed" => mixed(quick),
        "scaling" => scaling(quick, cores),
        "stateful" => stateful(quick),
        "workers" => workers(quick),
        "actors" => actors(quick),
        _ => return None,
    };
    // What the CPU split costs is the runner's to say: it knows the cores chosen.
    plan.deviations.push(format!(
        "one {cores}-core machine for servers and load, over loopback, not a network"
    ));
    if quick {
        plan.deviations
            .push("quick profile: shorter steps and fewer of them than the source".to_owned());
    }
    if !calibration::probes(&plan).is_empty() {
        plan.plots.push(PlotPlan {
            group: SATURATION.to_owned(),
            metric: Metric::Rps,
            x_label: None,
            x_axis: XAxis::Steps,
        });
    }
    add_accounting_plots(&mut plan);
    Some(plan)
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
        let open = plan
            .steps
            .iter()
            .any(|s| s.group == group && s.load.offered().is_some());
        let wanted: &[Metric] = if open {
            &[Metric::Rps, Metric::FailedShare]
        } else {
            &[Metric::Utilisation]
        };
        for &metric in wanted {
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

fn servers(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| (*s).to_owned()).collect()
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

/// TechEmpower's plaintext and JSON tests: closed-loop maximum, keep-alive and 16-deep
/// pipelining, and what the server spends per request.
fn closed_max(name: &'static str, path: &str, answer: &str, quick: bool) -> Plan {
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
        deviations: vec!["one core per server (one loop or worker), wrk on the other".to_owned()],
    }
}

/// The static files of the `static` scenario: name and size.
pub(crate) const FILES: [(&str, usize); 3] = [
    ("1kb.bin", 1024),
    ("300kb.bin", 300 * 1024),
    ("5mb.bin", 5 * 1024 * 1024),
];

/// Leda Fig. 9a/b: response time and throughput against clients, 300 KB and 5 MB
/// files (and 1 KB), Proscenium against nginx.
fn static_files(quick: bool) -> Plan {
    let (clients, seconds): (&[usize], u64) = if quick {
        (&[100, 1000, 5000], 3)
    } else {
        (&[100, 500, 1000, 2000, 3000, 4000, 5000], 10)
    };
    let mut steps = Vec::new();
    let mut groups = Vec::new();
    for (file, size) in FILES {
        let group = format!("{} KB file", size / 1024);
        for &c in clients {
            // A full step lasts long enough for nine answers a client at ~1.5 GB/s, or
            // the requests still waiting at its end make it invalid.
            let rounds = if quick {
                seconds
            } else {
                seconds.max(long_enough(c, 1_500_000_000 / size))
            };
            steps.push(closed(
                &group,
                format!("{c} clients"),
                c as f64,
                &format!("/{file}"),
                c,
                1,
                rounds,
            ));
        }
        groups.push(group);
    }
    let mut deviations = vec![
        "Leda measured Apache and nginx over a network; here nginx alone, on loopback".to_owned(),
    ];
    if quick {
        deviations.push(
            "a 3 s quick step is shorter than one round of 5,000 clients fetching 5 MB (25 GB): \
             read the 5 MB plot of the full profile, whose steps last two rounds"
                .to_owned(),
        );
    }
    Plan {
        name: "static",
        reproduces: "Leda Fig. 9a/b: static files, response time and throughput against clients, vs nginx",
        // Leda measured against Apache and nginx.
        default_servers: servers(&["proscenium:loops", "nginx", "httpd-event"]),
        cores: Cores::Split,
        upstream: false,
        checks: vec![("/1kb.bin".to_owned(), "x".repeat(64))],
        steps,
        plots: plots(
            &groups,
            &[Metric::Rps, Metric::MeanLatency],
            Some("concurrent clients"),
        ),
        deviations,
    }
}

/// wrk threads for the dynamic page: thousands of connections are more than one
/// generator thread keeps busy, and Leda's clients were many.
const DYNAMIC_LOAD_THREADS: usize = 2;

/// Leda Fig. 9c: a page of realistic cost (a loop of 1,250,000 iterations, about 1 ms
/// of CPU in lab-app) against clients.
/// The seconds a closed step of `clients` needs at `per_second` answers for nine answers
/// a client: then the requests still waiting at its end are at most a tenth
/// (`results::MAX_UNANSWERED_SHARE`), and the step counts.
fn long_enough(clients: usize, per_second: usize) -> u64 {
    (9 * clients).div_ceil(per_second.max(1)) as u64 + 1
}

/// The pages a second the `dynamic` scenario's steps are sized for: a core at ~1 ms a
/// page. A server slower than that gets invalid steps at its most clients, marked.
const DYNAMIC_PAGES_A_SECOND: usize = 1_000;

fn dynamic(quick: bool) -> Plan {
    let (clients, least): (&[usize], u64) = if quick {
        (&[100, 500, 1000], 5)
    } else {
        (&[100, 500, 1000, 2000, 5000], 10)
    };
    let steps = clients
        .iter()
        .map(|&c| {
            closed(
                "dynamic page",
                format!("{c} clients"),
                c as f64,
                "/dynamic",
                c,
                1,
                least.max(long_enough(c, DYNAMIC_PAGES_A_SECOND)),
            )
            .with_load_threads(DYNAMIC_LOAD_THREADS)
        })
        .collect();
    Plan {
        name: "dynamic",
        reproduces: "Leda Fig. 9c: a dynamic page of about 1 ms of CPU (a 1,250,000-iteration loop), against clients",
        // Leda measured against Apache; actix, hyper and Node.js are today's choices.
        default_servers: servers(&["proscenium:loops", "httpd-event", "actix", "hyper", "node"]),
        cores: Cores::Split,
        upstream: false,
        checks: vec![("/dynamic".to_owned(), "1250000 iterations".to_owned())],
        steps,
        plots: plots(
            &["dynamic page".to_owned()],
            &[Metric::Rps, Metric::MeanLatency],
            Some("concurrent clients"),
        ),
        deviations: vec![
            "Leda's peers ran the page as CGI/PHP; here the same loop is native in each peer (Apache httpd: mod_lua)"
                .to_owned(),
            "every server listens with a backlog of 4096 (the kernel caps it at net.core.somaxconn)"
                .to_owned(),
            "each step lasts for nine pages a client at 1,000 pages a second, so the quick profile \
             stops at 1,000 clients (5,000 need 46 s steps: the full profile runs them)"
                .to_owned(),
        ],
    }
}

/// Rates of a ramp to `top` in `steps` equal steps.
fn ramp(top: u64, steps: u64) -> Vec<u64> {
    (1..=steps).map(|i| (top * i / steps).max(1)).collect()
}

/// The thesis's servers: Spring on Jetty (`jetty`, and `proscenium:thread-pool` in its
/// place), Play on Akka (`pekko`, its open fork; `proscenium:loops`), Node.js (`node`;
/// `proscenium:event-loop`).
const THESIS_SERVERS: [&str; 6] = [
    "proscenium:thread-pool",
    "jetty",
    "proscenium:loops",
    "pekko",
    "proscenium:event-loop",
    "node",
];

/// The shares of each server's saturation rate an on-system ramp offers. Quick: two
/// points on the flat part, the knee's neighbours, the knee and two past it, so every
/// server's knee sits mid-plot; full: twice as many, closer around the knee.
const QUICK_SHARES: [f64; 6] = [0.25, 0.5, 0.75, 1.0, 1.25, 1.5];
const FULL_SHARES: [f64; 10] = [0.2, 0.4, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.5];

/// Thesis Fig. 5.1–5.4: CPU-bound work on the server (the n-th Fibonacci number with
/// big integers) while the request rate ramps up, each ramp relative to the server's
/// saturation rate for that n (measured before round 1, see `calibration.rs`).
fn on_system(quick: bool) -> Plan {
    let (shares, seconds): (&[f64], u64) = if quick {
        (&QUICK_SHARES, 2)
    } else {
        (&FULL_SHARES, 3)
    };
    let mut steps = Vec::new();
    let mut groups = Vec::new();
    for n in [1_000, 5_000, 10_000, 50_000] {
        let group = format!("fib({n})");
        for &share in shares {
            steps.push(StepPlan {
                share_of_saturation: Some(share),
                // The rate is the server's: `calibration.rs` sets it, and the label's.
                ..open(
                    &group,
                    format!("{share}×"),
                    0.0,
                    vec![format!("/fib-iter?n={n}")],
                    0,
                    seconds,
                )
            });
        }
        groups.push(group);
    }
    Plan {
        name: "on-system",
        reproduces: "thesis Fig. 5.1–5.4: on-system (CPU) work, response time against request rate",
        // The clustered Node.js and prefork add what each runtime does with every core.
        default_servers: THESIS_SERVERS
            .iter()
            .chain(&["node-cluster", "proscenium:prefork"])
            .map(|s| (*s).to_owned())
            .collect(),
        cores: Cores::Shared,
        upstream: false,
        checks: vec![("/fib-iter?n=10".to_owned(), "37".to_owned())],
        steps,
        plots: plots(
            &groups,
            &[Metric::MeanLatency, Metric::P99Latency],
            Some("offered requests per second"),
        ),
        deviations: vec![
            "the thesis used a 4-core server with a separate load machine".to_owned(),
            format!(
                "the thesis ramps every n to 5,000/s over 30 s; here each ramp offers shares of the \
                 server's own saturation rate for that n (a {}-connection closed-loop probe before \
                 round 1), so every server's knee sits mid-plot rather than at the first step or \
                 past the last; x is still the absolute offered rate",
                PROBE_CONNECTIONS
            ),
            format!("the ramp is run as equal constant-rate steps of {seconds} s"),
            "the probe is wrk's closed loop, which takes the shared cores less than vegeta's \
             open loop at the same rate: where requests are cheap (fib(1000)) the generator's \
             share moves the knee below 1×, and steps where vegeta fell behind are marked invalid"
                .to_owned(),
        ],
    }
}

/// Thesis Fig. 5.5–5.7: off-system work — each request fetches a 44 KB page that an
/// upstream answers after 170 ms — at rates ramping to 100, 1,000 and 5,000 a second.
///
/// The ramps stay absolute (the thesis's point: fixed rates against a fixed upstream
/// delay). By Little's law a blocking server holds rate × 0.17 s requests at once, so
/// the thesis's Jetty of 200 threads must saturate at 200 ÷ 0.17 s ≈ 1,176/s: only the
/// ramp to 5,000/s (Fig. 5.7) shows it, which is why quick runs it too.
fn off_system(quick: bool) -> Plan {
    let tops: &[u64] = &[100, 1_000, 5_000];
    // Quick's 2 s steps keep three ramps within three minutes of load a round.
    let (steps_per_ramp, seconds) = if quick { (4, 2) } else { (10, 3) };
    let mut steps = Vec::new();
    let mut groups = Vec::new();
    for &top in tops {
        let group = format!("ramp to {top}/s");
        for rate in ramp(top, steps_per_ramp) {
            steps.push(open(
                &group,
                format!("{rate}/s"),
                rate as f64,
                vec!["/relay".to_owned()],
                rate,
                seconds,
            ));
        }
        groups.push(group);
    }
    Plan {
        name: "off-system",
        reproduces: "thesis Fig. 5.5–5.7: off-system work (a 170 ms upstream), response time against request rate",
        default_servers: servers(&THESIS_SERVERS),
        cores: Cores::Shared,
        upstream: true,
        checks: vec![("/relay".to_owned(), "xxxxxxxx".to_owned())],
        steps,
        plots: plots(
            &groups,
            &[Metric::MeanLatency, Metric::P99Latency],
            Some("offered requests per second"),
        ),
        deviations: vec![
            "the upstream is lab-app on the same machine, not a remote web site".to_owned(),
            format!("each ramp is run as equal constant-rate steps of {seconds} s"),
        ],
    }
}

/// Node.Scala Fig. 1b: 100 requests/s of light (fib 20) and heavy requests with 0, 5,
/// 10 and 15 % heavy. The heavy request costs every server the same time: its n is
/// chosen per server (the source's fib(35) costs Proscenium ~27 ms and Node.js ~124 ms;
/// see [`calibration::HEAVY_COST_MS`]).
fn mixed(quick: bool) -> Plan {
    let seconds = if quick { 5 } else { 20 };
    let steps = [0usize, 5, 10, 15]
        .into_iter()
        .map(|heavy| {
            // One target a percent: the mix repeats every 20 requests.
            let mut targets = vec![LIGHT.to_owned(); 20 - heavy / 5];
            targets.extend(std::iter::repeat_n(
                calibration::HEAVY_TARGET.to_owned(),
                heavy / 5,
            ));
            open(
                "mix",
                format!("{heavy} % heavy"),
                heavy as f64,
                targets,
                100,
                seconds,
            )
        })
        .collect();
    Plan {
        name: "mixed",
        reproduces: "Node.Scala Fig. 1b: light and heavy requests at 100/s, blocking vs non-blocking",
        // Node.js blocking (Fig. 1a) and non-blocking (Fig. 1c); Node.Scala's parallel
        // loops as Proscenium's and Vert.x's.
        default_servers: servers(&[
            "node",
            "node-nbk",
            "proscenium:event-loop",
            "proscenium:loops/pool=0",
            "proscenium:loops",
            "vertx",
        ]),
        cores: Cores::Shared,
        upstream: false,
        checks: vec![(LIGHT.to_owned(), "6765".to_owned())],
        steps,
        plots: plots(
            &["mix".to_owned()],
            &[
                Metric::Rps,
                Metric::P99Latency,
                Metric::LightP99Latency,
                Metric::LightMeanLatency,
            ],
            None,
        ),
        deviations: vec![
            "proscenium:loops runs fib on its blocking pool; /pool=0 and event-loop run it on the loop, as Node.js does".to_owned(),
            format!(
                "the heavy request is not fib(35) everywhere but, per server, the fib(n) whose single request \
                 costs nearest {:.0} ms (timed before round 1), so heavy means the same work on every runtime",
                calibration::HEAVY_COST_MS
            ),
        ],
    }
}

/// The mix's light request, the same on every server.
pub(crate) const LIGHT: &str = "/fib?n=20";

/// Node.Scala Fig. 4: stateless throughput and CPU per request against the number of
/// loops, for plaintext and a CPU-bound page.
fn scaling(quick: bool, cores: usize) -> Plan {
    let seconds = if quick { 5 } else { 15 };
    let steps = vec![
        closed(
            "plaintext",
            "plaintext".into(),
            0.0,
            "/plaintext",
            64,
            1,
            seconds,
        ),
        closed(
            "dynamic page",
            "dynamic page".into(),
            0.0,
            "/dynamic",
            64,
            1,
            seconds,
        ),
    ];
    Plan {
        name: "scaling",
        reproduces: "Node.Scala Fig. 4: throughput against the number of loops",
        default_servers: (1..=cores)
            .map(|n| format!("proscenium:loops:{n}"))
            .collect(),
        cores: Cores::Shared,
        upstream: false,
        checks: vec![("/plaintext".to_owned(), "Hello, World!".to_owned())],
        steps,
        plots: plots(
            &["plaintext".to_owned(), "dynamic page".to_owned()],
            &[Metric::Rps, Metric::CpuPerRequest],
            None,
        ),
        deviations: vec![format!(
            "Node.Scala went to 32 threads; this machine has {cores} cores, shared with wrk"
        )],
    }
}

/// The Fibonacci number the `stateful` scenario caches, and its value.
const FIB_N: u32 = 22;
const FIB_ANSWER: &str = "17711";

/// Node.Scala Fig. 5: peak throughput of a stateful service (examples/fib-cache)
/// against the share of writing requests, with the same service on one loop as the
/// reference line.
fn stateful(quick: bool) -> Plan {
    let (shares, seconds): (&[usize], u64) = if quick {
        (&[0, 25, 50, 75, 100], 5)
    } else {
        (&[0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100], 15)
    };
    let steps = shares
        .iter()
        .map(|&share| {
            // Twenty targets in turn: share / 5 writes, the rest reads of the same cost.
            let writes = share / 5;
            let mut targets = vec![format!("PUT /fib/{FIB_N}"); writes];
            targets.extend(std::iter::repeat_n(format!("/verify/{FIB_N}"), 20 - writes));
            StepPlan {
                group: "fib-cache".to_owned(),
                label: format!("{share} % writing"),
                x: share as f64,
                load: Load::Closed {
                    targets,
                    conns: 64,
                    depth: 1,
                    threads: 1,
                    seconds,
                },
                share_of_saturation: None,
            }
        })
        .collect();
    Plan {
        name: "stateful",
        reproduces: "Node.Scala Fig. 5: stateful throughput against the share of writing requests, one loop as the reference",
        default_servers: servers(&["fib-cache", "fib-cache:1"]),
        cores: Cores::Shared,
        upstream: false,
        // The first check caches fib(n), which the reads verify.
        checks: vec![
            (format!("/fib?n={FIB_N}"), FIB_ANSWER.to_owned()),
            (format!("/verify/{FIB_N}"), FIB_ANSWER.to_owned()),
        ],
        steps,
        plots: plots(
            &["fib-cache".to_owned()],
            &[Metric::Rps, Metric::CpuPerRequest],
            Some("share of writing requests (%)"),
        ),
        deviations: vec![
            format!(
                "Node.Scala's requests ran SciMark kernels on 32 loops; here both kinds recompute fib({FIB_N}) \
                 (~60 µs): a reading request under the read lock, checking the cached value (GET /verify/{FIB_N}), \
                 a writing one under the write lock, storing it (PUT /fib/{FIB_N})"
            ),
            "fib-cache:1 (one loop, no blocking pool: every request on one thread) is the reference line Node.Scala drew"
                .to_owned(),
        ],
    }
}

/// Yarn Fig. 6.4: requests a second against worker processes, 1 to 512, for "1000
/// requests, 20 at a time" to a simple Rack application (best 875/s at 256 workers,
/// 775/s on average); and beyond, 256 connections.
fn workers(quick: bool) -> Plan {
    // Yarn's runs above 512 processes bogged its machine down; the quick profile stops
    // at 256, where Yarn did best.
    let (most, seconds) = if quick { (256, 3) } else { (512, 10) };
    let counts = std::iter::successors(Some(1usize), |n| Some(n * 2)).take_while(|&n| n <= most);
    let groups = [
        "20 connections (Yarn's)".to_owned(),
        "256 connections".to_owned(),
    ];
    let steps = groups
        .iter()
        .zip([20, 256])
        .map(|(group, conns)| {
            closed(
                group,
                format!("{conns} connections"),
                conns as f64,
                "/plaintext",
                conns,
                1,
                seconds,
            )
        })
        .collect();
    let mut plots = plots(
        &groups,
        &[Metric::Rps, Metric::CpuPerRequest],
        Some("worker processes"),
    );
    for plot in &mut plots {
        plot.x_axis = XAxis::Workers;
    }
    Plan {
        name: "workers",
        reproduces: "Yarn Fig. 6.4: requests a second against worker processes",
        // httpd's prefork MPM, 150 processes, is the fixed reference: a point of its own.
        default_servers: counts
            .map(|n| format!("proscenium:prefork:{n}"))
            .chain(std::iter::once("httpd-prefork".to_owned()))
            .collect(),
        cores: Cores::Shared,
        upstream: false,
        checks: vec![("/plaintext".to_owned(), "Hello, World!".to_owned())],
        steps,
        plots,
        deviations: vec![
            format!(
                "Yarn sent 1,000 requests, 20 at a time (ab); here 20 connections for {seconds} s, \
                 and 256 connections beyond it"
            ),
            "Yarn served a simple Rack application in Ruby, whose cost per request held it to 875/s; \
             here lab-app's /plaintext (Hello, World!), so the figure shows what the workers cost, not the page"
                .to_owned(),
            format!("worker processes 1 to {most} in powers of two"),
        ],
    }
}

/// The `n` of the iterative Fibonacci number an actor computes in the `actors`
/// scenario, and the answer's start (fib(1000) in hex).
const ACTOR_N: u32 = 1_000;
const ACTOR_ANSWER: &str = "21d8cb07b572c257";

/// The thesis's actor side (Play on Akka): each request asks one of a pool of actors
/// for fib(1000) and answers with its reply; closed-loop throughput, latency and CPU
/// per request against clients, Proscenium's models against Pekko.
fn actors(quick: bool) -> Plan {
    let (clients, seconds): (&[usize], u64) = if quick {
        (&[16, 64, 256, 1024], 5)
    } else {
        (&[16, 64, 256, 1024, 4096], 15)
    };
    let group = format!("fib({ACTOR_N}) by an actor");
    let steps = clients
        .iter()
        .map(|&c| {
            closed(
                &group,
                format!("{c} clients"),
                c as f64,
                &format!("/actor?n={ACTOR_N}"),
                c,
                1,
                seconds,
            )
        })
        .collect();
    Plan {
        name: "actors",
        reproduces: "the thesis's Play/Akka side: requests answered by actors, throughput and latency against clients",
        default_servers: servers(&[
            "proscenium:loops",
            "proscenium:event-loop",
            "proscenium:thread-pool",
            "pekko",
        ]),
        cores: Cores::Shared,
        upstream: false,
        checks: vec![(format!("/actor?n={ACTOR_N}"), ACTOR_ANSWER.to_owned())],
        steps,
        plots: plots(
            &[group],
            &[
                Metric::Rps,
                Metric::MeanLatency,
                Metric::P99Latency,
                Metric::CpuPerRequest,
            ],
            Some("concurrent clients"),
        ),
        deviations: vec![
            "Play's controllers are Proscenium's routes and Pekko HTTP's (Akka's open fork); \
             the actors are a pool of one per core behind a round-robin router in both"
                .to_owned(),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scenario_plans_steps_plots_and_checks() {
        for name in SCENARIOS {
            let plan = plan(name, Profile::Quick, 2).unwrap();
            assert!(
                !plan.steps.is_empty() && !plan.plots.is_empty() && !plan.checks.is_empty(),
                "{name}"
            );
            assert!(!plan.default_servers.is_empty(), "{name}");
            let probes = calibration::probes(&plan);
            for p in &plan.plots {
                assert!(
                    plan.steps.iter().chain(&probes).any(|s| s.group == p.group),
                    "{name}: plot of no steps"
                );
            }
        }
        assert!(plan("nope", Profile::Quick, 2).is_none());
    }

    /// Seconds of load one server gets in one round of `plan`, its warm-up included.
    fn round_seconds(plan: &Plan) -> u64 {
        let steps: u64 = plan.steps.iter().map(|s| s.load.seconds()).sum();
        steps + WARM_UP_SECONDS
    }

    /// Seconds of the saturation probes one server gets once a run, before round 1.
    fn probe_seconds(plan: &Plan) -> u64 {
        calibration::probes(plan)
            .iter()
            .map(|p| p.load.seconds())
            .sum()
    }

    #[test]
    fn quick_scenarios_take_at_most_three_minutes_of_load_a_round() {
        let mut all = 0;
        for name in SCENARIOS {
            let plan = plan(name, Profile::Quick, 2).unwrap();
            let servers = plan.default_servers.len() as u64;
            let round = round_seconds(&plan) * servers;
            // On-system runs four ramps (Fig. 5.1–5.4) of six points on eight servers.
            let most = if name == "on-system" { 400 } else { 180 };
            assert!(round <= most, "{name}: {round} s of load a round");
            all += 3 * round + probe_seconds(&plan) * servers;
        }
        // Three rounds of every scenario: the quick profile's load, before starts,
        // checks and cool-downs (a few seconds a step at most), and before any step an
        // on-system server with a saturation under 50/s stretches to 100 requests.
        assert_eq!(all, 3_864, "update the profile's stated time");
    }

    #[test]
    fn workers_draws_prefork_against_its_workers_to_yarn_s_most() {
        let most = |profile| {
            let plan = plan("workers", profile, 2).unwrap();
            assert!(plan.plots.iter().all(|p| p.x_axis == XAxis::Workers));
            assert!(plan.plots.iter().any(|p| p.metric == Metric::Utilisation));
            assert_eq!(plan.default_servers.last().unwrap(), "httpd-prefork");
            plan.default_servers[plan.default_servers.len() - 2].clone()
        };
        assert_eq!(most(Profile::Quick), "proscenium:prefork:256");
        assert_eq!(most(Profile::Full), "proscenium:prefork:512");
        let plan = plan("workers", Profile::Quick, 2).unwrap();
        assert_eq!(
            plan.default_servers[..3],
            [
                "proscenium:prefork:1",
                "proscenium:prefork:2",
                "proscenium:prefork:4"
            ]
        );
    }

    #[test]
    fn only_the_dynamic_page_is_sent_from_two_load_threads() {
        for name in SCENARIOS {
            for step in plan(name, Profile::Quick, 2).unwrap().steps {
                if let Load::Closed { threads, .. } = step.load {
                    let want = if name == "dynamic" {
                        DYNAMIC_LOAD_THREADS
                    } else {
                        1
                    };
                    assert_eq!(threads, want, "{name}");
                }
            }
        }
    }

    #[test]
    fn stateful_mixes_reads_and_writes_of_the_stated_share() {
        let plan = plan("stateful", Profile::Quick, 2).unwrap();
        let Load::Closed { targets, .. } = &plan.steps[1].load else {
            panic!("closed loop")
        };
        let writes = targets.iter().filter(|t| t.starts_with("PUT ")).count();
        let reads = targets.iter().filter(|t| t.starts_with("/verify/")).count();
        assert_eq!((plan.steps[1].x, writes, reads), (25.0, 5, 15));
    }

    #[test]
    fn the_mix_holds_the_stated_share_of_heavy_requests() {
        let plan = plan("mixed", Profile::Quick, 2).unwrap();
        let Load::Open { targets, .. } = &plan.steps[2].load else {
            panic!("open loop")
        };
        let heavy = targets
            .iter()
            .filter(|t| *t == calibration::HEAVY_TARGET)
            .count();
        assert_eq!((heavy * 100 / targets.len(), targets.len()), (10, 20));
    }
}
