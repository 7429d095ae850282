//! Node.Scala's figures: the blocking mix (Fig. 1b), scaling (Fig. 4), shared state (Fig. 5).

use super::*;

/// The mix's servers: Node.js blocking (Fig. 1a) and non-blocking (Fig. 1c); Node.Scala's
/// parallel loops as Proscenium's and Vert.x's.
const MIXED_SERVERS: [&str; 6] = [
    "node",
    "node-nbk",
    "proscenium:event-loop",
    "proscenium:loops/pool=0",
    "proscenium:loops",
    "vertx",
];

/// Node.Scala Fig. 1b: 100 requests/s of light (fib 20) and heavy requests with 0, 5,
/// 10 and 15 % heavy. The heavy request costs every server the same time: its n is
/// chosen per server (the source's fib(35) costs Proscenium ~27 ms and Node.js ~124 ms;
/// see [`calibration::HEAVY`]).
pub(super) fn mixed(quick: bool) -> Plan {
    let seconds = if quick { 5 } else { 20 };
    let steps = [0, 5, 10, 15]
        .into_iter()
        .map(|heavy| {
            open(
                "mix",
                format!("{heavy} % heavy"),
                heavy as f64,
                mix(heavy),
                100,
                seconds,
            )
        })
        .collect();
    Plan {
        name: "mixed",
        reproduces: "Node.Scala Fig. 1b: light and heavy requests at 100/s, blocking vs non-blocking",
        default_servers: servers(&MIXED_SERVERS),
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
        deviations: mixed_deviations(),
    }
}

/// Where the mix departs from Node.Scala's.
fn mixed_deviations() -> Vec<String> {
    vec![
        "proscenium:loops runs fib on its blocking pool; /pool=0 and event-loop run it on the loop, as Node.js does".to_owned(),
        format!(
            "the heavy request is not fib(35) everywhere but, per server, the fib(n) whose single request \
             costs nearest {:.0} ms (timed before round 1), so heavy means the same work on every runtime",
            calibration::HEAVY.cost_ms
        ),
    ]
}

/// The targets of a mix `heavy` percent heavy, one target a percent: the mix repeats
/// every 20 requests.
fn mix(heavy: usize) -> Vec<String> {
    let mut targets = vec![LIGHT.to_owned(); 20 - heavy / 5];
    targets.extend(std::iter::repeat_n(
        calibration::HEAVY.target.to_owned(),
        heavy / 5,
    ));
    targets
}

/// The mix's light request, the same on every server.
pub(crate) const LIGHT: &str = "/fib?n=20";

/// Node.Scala Fig. 4: stateless throughput and CPU per request against the number of
/// loops, for plaintext and a CPU-bound page.
pub(super) fn scaling(quick: bool, cores: usize) -> Plan {
    let seconds = if quick { 5 } else { 15 };
    let steps = [("plaintext", "/plaintext"), ("dynamic page", "/dynamic")]
        .map(|(group, path)| closed(group, group.into(), 0.0, path, 64, 1, seconds))
        .to_vec();
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
pub(super) fn stateful(quick: bool) -> Plan {
    let (shares, seconds): (&[usize], u64) = if quick {
        (&[0, 25, 50, 75, 100], 5)
    } else {
        (&[0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100], 15)
    };
    let steps = shares
        .iter()
        .map(|&share| writing_step(share, seconds))
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
        deviations: stateful_deviations(),
    }
}

/// Where the stateful service departs from Node.Scala's.
fn stateful_deviations() -> Vec<String> {
    vec![
        format!(
            "Node.Scala's requests ran SciMark kernels on 32 loops; here both kinds recompute fib({FIB_N}) \
             (~60 µs): a reading request under the read lock, checking the cached value (GET /verify/{FIB_N}), \
             a writing one under the write lock, storing it (PUT /fib/{FIB_N})"
        ),
        "fib-cache:1 (one loop, no blocking pool: every request on one thread) is the reference line Node.Scala drew"
            .to_owned(),
    ]
}

/// The stateful step `share` percent writing: twenty targets in turn, `share` / 5
/// writes and the rest reads of the same cost, from 64 connections for `seconds`.
fn writing_step(share: usize, seconds: u64) -> StepPlan {
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
}
