//! The thesis's figures (ch. 5): on- and off-system ramps, and its actor side.

use super::*;

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
pub(super) fn on_system(quick: bool) -> Plan {
    let (shares, seconds): (&[f64], u64) = if quick {
        (&QUICK_SHARES, 2)
    } else {
        (&FULL_SHARES, 3)
    };
    let (steps, groups) = share_ramps(shares, seconds);
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
        deviations: on_system_deviations(seconds),
    }
}

/// On-system's ramps: for each n, steps at each of `shares` of the server's
/// saturation rate, `seconds` each; and their groups.
fn share_ramps(shares: &[f64], seconds: u64) -> (Vec<StepPlan>, Vec<String>) {
    let mut steps = Vec::new();
    let mut groups = Vec::new();
    for n in [1_000, 5_000, 10_000, 50_000] {
        let group = format!("fib({n})");
        for &share in shares {
            steps.push(StepPlan {
                share_of_saturation: Some(share),
                // The rate is the server's: `per_server.rs` sets it, and the label's.
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
    (steps, groups)
}

/// Where on-system departs from the thesis, its steps lasting `seconds`.
fn on_system_deviations(seconds: u64) -> Vec<String> {
    vec![
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
    ]
}

/// Thesis Fig. 5.5–5.7: off-system work — each request fetches a 44 KB page that an
/// upstream answers after 170 ms — at rates ramping to 100, 1,000 and 5,000 a second.
///
/// The ramps stay absolute (the thesis's point: fixed rates against a fixed upstream
/// delay). By Little's law a blocking server holds rate × 0.17 s requests at once, so
/// the thesis's Jetty of 200 threads must saturate at 200 ÷ 0.17 s ≈ 1,176/s: only the
/// ramp to 5,000/s (Fig. 5.7) shows it, which is why quick runs it too.
pub(super) fn off_system(quick: bool) -> Plan {
    let tops: &[u64] = &[100, 1_000, 5_000];
    // Quick's 2 s steps keep three ramps within three minutes of load a round.
    let (steps_per_ramp, seconds) = if quick { (4, 2) } else { (10, 3) };
    let (steps, groups) = rate_ramps(tops, steps_per_ramp, seconds);
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
        deviations: off_system_deviations(seconds),
    }
}

/// Where off-system departs from the thesis, its steps lasting `seconds`.
fn off_system_deviations(seconds: u64) -> Vec<String> {
    vec![
        "the upstream is lab-app on the same machine, not a remote web site".to_owned(),
        format!("each ramp is run as equal constant-rate steps of {seconds} s"),
    ]
}

/// Off-system's ramps: to each of `tops` in `steps_per_ramp` equal steps of `seconds`,
/// every request relayed to the upstream; and their groups.
fn rate_ramps(tops: &[u64], steps_per_ramp: u64, seconds: u64) -> (Vec<StepPlan>, Vec<String>) {
    let mut steps = Vec::new();
    let mut groups = Vec::new();
    for &top in tops {
        let group = format!("ramp to {top}/s");
        for rate in ramp(top, steps_per_ramp) {
            let relay = vec!["/relay".to_owned()];
            steps.push(open(
                &group,
                format!("{rate}/s"),
                rate as f64,
                relay,
                rate,
                seconds,
            ));
        }
        groups.push(group);
    }
    (steps, groups)
}

/// The `n` of the iterative Fibonacci number an actor computes in the `actors`
/// scenario, and the answer's start (fib(1000) in hex).
const ACTOR_N: u32 = 1_000;
const ACTOR_ANSWER: &str = "21d8cb07b572c257";

/// Proscenium's models beside Pekko HTTP (Akka's open fork).
const ACTORS_SERVERS: [&str; 4] = [
    "proscenium:loops",
    "proscenium:event-loop",
    "proscenium:thread-pool",
    "pekko",
];

/// The thesis's actor side (Play on Akka): each request asks one of a pool of actors
/// for fib(1000) and answers with its reply; closed-loop throughput, latency and CPU
/// per request against clients, Proscenium's models against Pekko.
pub(super) fn actors(quick: bool) -> Plan {
    let (clients, seconds): (&[usize], u64) = if quick {
        (&[16, 64, 256, 1024], 5)
    } else {
        (&[16, 64, 256, 1024, 4096], 15)
    };
    let group = format!("fib({ACTOR_N}) by an actor");
    let steps = client_ramp(&group, &format!("/actor?n={ACTOR_N}"), clients, |_| seconds);
    Plan {
        name: "actors",
        reproduces: "the thesis's Play/Akka side: requests answered by actors, throughput and latency against clients",
        default_servers: servers(&ACTORS_SERVERS),
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
        deviations: actors_deviations(),
    }
}

/// Where the actors scenario departs from the thesis's Play on Akka.
fn actors_deviations() -> Vec<String> {
    vec![
        "Play's controllers are Proscenium's routes and Pekko HTTP's (Akka's open fork); \
         the actors are a pool of one per core behind a round-robin router in both"
            .to_owned(),
    ]
}
