//! Hessenberger's thesis (2014), ch. 5: Spring MVC on Jetty (a thread a request)
//! against Play! on Akka (actors), under on-system (CPU) and off-system (a slow
//! upstream) work, the request rate ramped over 30 s.

use super::{At, Comparison, Finding, Reference, Source, Verdict, at_common_top, line, peak, ran};
use crate::results::Results;
use crate::scenario::Metric;

/// The thesis's servers and ours in their place: the JVM servers it measured (or
/// their open successor), and the Proscenium model of the same shape.
const STAND_INS: &[(&str, &str)] = &[
    (
        "Spring MVC on Jetty (a thread a request)",
        "jetty (200 threads); proscenium:thread-pool",
    ),
    (
        "Play! on Akka (actors over a few threads)",
        "pekko (Pekko HTTP, Akka's open fork); proscenium:loops",
    ),
    (
        "Node.js (ch. 3, not measured in ch. 5)",
        "node; proscenium:event-loop",
    ),
];

/// Each (thread-based, actor-based) pair a gap is measured between.
const PAIRS: [(&str, &str); 2] = [
    ("jetty", "pekko"),
    ("proscenium:thread-pool", "proscenium:loops"),
];

pub(super) const ON_SYSTEM: Source = Source {
    figure: "Hessenberger 2014 (thesis), Fig. 5.1–5.4",
    measured: "Spring MVC on Jetty and Play! on Akka, each alone in a 4-core Heroku container \
        (Xeon X5550, 512 MB), loader.io over the internet ramping from 0 to 5,000 requests/s in \
        30 s; each request computes the n-th Fibonacci number iteratively with big integers. One \
        request alone took 170 ms at fib(1000), 300 ms at fib(5000) and fib(10000), 400 ms at \
        fib(50000), the network included. At 5,000/s Play! answered about 1,000 ms faster on \
        average at fib(1000), about 500 ms at fib(5000), and nearly the same at fib(10000) and \
        fib(50000).",
    stand_ins: STAND_INS,
    claim: "The actor-based server answers faster than the thread-based one under load, and the \
        gap narrows to nothing as the work per request grows: both saturate their cores at the \
        same point.",
    references: &[],
    judge: on_system,
};

pub(super) const OFF_SYSTEM: Source = Source {
    figure: "Hessenberger 2014 (thesis), Fig. 5.5–5.7",
    measured: "The same two servers; each request fetches google.com's front page (44 KB, about \
        170 ms away) and relays it, the rate ramped to 100, 1,000 and 5,000/s in 30 s. To 100/s: \
        Play! faster from about 30/s on. To 1,000/s: Play! slower at first, then from about \
        180/s holding about 800 ms while Spring grows ever slower, about 2,400 ms behind at \
        1,000/s. To 5,000/s: both rise steeply, Play! about 3,800 ms faster at the end.",
    stand_ins: STAND_INS,
    claim: "The actor-based server holds its response time near the upstream's while the \
        thread-based one, whose threads wait on the upstream, falls behind: the gap grows with \
        the rate (2,400 ms at 1,000/s, 3,800 ms at 5,000/s).",
    references: &[
        Reference {
            group: "ramp to 1000/s",
            metric: Metric::MeanLatency,
            name: "thesis: Play! ≈ 800 ms",
            at: At::Line(&[(180.0, 800.0), (1000.0, 800.0)]),
        },
        Reference {
            group: "ramp to 1000/s",
            metric: Metric::MeanLatency,
            name: "thesis: Spring ≈ 3,200 ms",
            at: At::Line(&[(1000.0, 3200.0)]),
        },
    ],
    judge: off_system,
};

pub(super) const ACTORS: Source = Source {
    figure: "Hessenberger 2014 (thesis), sec. 4.1 and 5.4: Play!'s actors",
    measured: "The thesis's actor side: Play! hands each request to Akka actors, which reply; its \
        ch. 5 found it keeping pace with Spring's threads on CPU work (Fig. 5.3–5.4) and ahead \
        on waiting work. It gives no figure for actors alone: this scenario measures the same \
        route through actors (an ask, a reply) in Proscenium and in Pekko HTTP.",
    stand_ins: &[
        (
            "Play! on Akka (requests through actors)",
            "pekko (/actor through a pool of actors)",
        ),
        (
            "—",
            "proscenium:loops, proscenium:event-loop, proscenium:thread-pool (/actor: an ask to a pool of actors)",
        ),
    ],
    claim: "Routing a request through actors (an ask and a reply) costs little: Proscenium's \
        actors keep pace with Pekko's, the actor runtime the thesis stood on.",
    references: &[],
    judge: actors,
};

/// The gap (thread-based − actor-based mean response time) a pair shows in each group,
/// at the highest rate both were offered, beside the thesis's gap there.
fn gaps(results: &Results, groups: &[(&str, Option<f64>)]) -> (Vec<Comparison>, Vec<Vec<f64>>) {
    let mut rows = Vec::new();
    let mut by_pair = Vec::new();
    for (thread, actor) in PAIRS {
        let mut gaps = Vec::new();
        for &(group, source) in groups {
            let a = line(results, thread, group, Metric::MeanLatency);
            let b = line(results, actor, group, Metric::MeanLatency);
            if let Some((top, t, s)) = at_common_top(&a, &b) {
                let gap = t - s;
                gaps.push(gap / t.max(s));
                rows.push(Comparison::new(
                    format!("{group}: {thread} − {actor}, mean at {top:.0}/s"),
                    source,
                    Some(gap),
                    "ms",
                ));
            }
        }
        if gaps.len() >= 2 {
            by_pair.push(gaps);
        }
    }
    (rows, by_pair)
}

/// The verdict from how many pairs hold the claim of `holds` among those measured.
fn of_pairs(held: usize, measured: usize, rows: Vec<Comparison>, what: &str) -> Finding {
    let Some(verdict) = Verdict::of_cases(held, measured) else {
        return Finding::missing(&["a thread-based and an actor-based server in two groups"]);
    };
    Finding::new(
        verdict,
        format!("{what} for {held} of {measured} pairs (thread-based, actor-based) measured"),
        rows,
    )
}

/// Gaps relative to the slower server's time: the claim holds for a pair when the actor
/// server saves a tenth or more at the lightest work, and at most half that at the
/// heaviest.
fn on_system(results: &Results) -> Finding {
    let groups = [
        ("fib(1000)", Some(1000.0)),
        ("fib(5000)", Some(500.0)),
        ("fib(10000)", Some(0.0)),
        ("fib(50000)", Some(0.0)),
    ];
    let (rows, pairs) = gaps(results, &groups);
    let held = pairs
        .iter()
        .filter(|g| g[0] >= 0.1 && g[g.len() - 1] <= g[0] / 2.0)
        .count();
    of_pairs(
        held,
        pairs.len(),
        rows,
        "the actor-based server is faster at the lightest work by a tenth or more and the gap halves by the heaviest",
    )
}

/// The claim holds for a pair when the thread-based server is behind at the top of the
/// highest ramp and further behind than at the top of the lowest.
fn off_system(results: &Results) -> Finding {
    let groups = [
        ("ramp to 100/s", None),
        ("ramp to 1000/s", Some(2400.0)),
        ("ramp to 5000/s", Some(3800.0)),
    ];
    let (rows, pairs) = gaps(results, &groups);
    let held = pairs
        .iter()
        .filter(|g| g[g.len() - 1] > 0.0 && g[g.len() - 1] > g[0])
        .count();
    of_pairs(
        held,
        pairs.len(),
        rows,
        "the thread-based server falls further behind as the rate grows",
    )
}

/// The best peak of `servers` in `group`, each one's added to `rows`.
fn best_peak(
    results: &Results,
    group: &str,
    servers: &[&str],
    rows: &mut Vec<Comparison>,
) -> Option<f64> {
    servers
        .iter()
        .filter_map(|name| {
            let p = peak(results, name, group, Metric::Rps)?;
            rows.push(Comparison::new(
                format!("{group}: {name}, peak"),
                None,
                Some(p),
                "req/s",
            ));
            Some(p)
        })
        .reduce(f64::max)
}

/// Proscenium's best model against Pekko, peak throughput through actors.
fn actors(results: &Results) -> Finding {
    let ours = [
        "proscenium:loops",
        "proscenium:event-loop",
        "proscenium:thread-pool",
    ];
    let Some(group) = results.steps.first().map(|s| s.group.as_str()) else {
        return Finding::missing(&["pekko", "a proscenium model"]);
    };
    if !ran(results, &["pekko"]) {
        return Finding::missing(&["pekko"]);
    }
    let pekko = peak(results, "pekko", group, Metric::Rps);
    let mut rows = vec![Comparison::new(
        format!("{group}: pekko, peak"),
        None,
        pekko,
        "req/s",
    )];
    let best = best_peak(results, group, &ours, &mut rows);
    let (Some(best), Some(pekko)) = (best, pekko) else {
        return Finding::missing(&["pekko", "a proscenium model"]);
    };
    let ratio = best / pekko;
    Finding::new(
        Verdict::of_one(ratio >= 0.9),
        format!(
            "Proscenium's best model answers {ratio:.2}× Pekko's peak through actors (the rule: at least 0.9×)"
        ),
        rows,
    )
}
