//! Bonetta et al., Node.Scala (2012): Node.js's one loop blocked by heavy requests
//! (Fig. 1), and Node.Scala's parallel loops — stateless scaling (Fig. 4) and shared
//! state under exclusive requests (Fig. 5).

use super::{At, Comparison, Finding, Reference, Source, Verdict, at_label, line, peak, ran};
use crate::results::Results;
use crate::scenario::Metric;

/// Fig. 1b's heavy shares, as the mixed scenario labels its steps.
const SHARES: [&str; 4] = ["0 % heavy", "5 % heavy", "10 % heavy", "15 % heavy"];

pub(super) const MIXED: Source = Source {
    figure: "Bonetta et al. 2012 (Node.Scala), Fig. 1b",
    measured: "A Node.js Fibonacci service under 100 requests/s of light fib(20) and heavy fib(35) \
        requests, 0 to 15 % heavy: blocking (the recursion on the loop) against non-blocking \
        (above n = 30 the recursion goes through process.nextTick, Fig. 1c). Throughput in msg/s \
        at 0, 5, 10, 15 % heavy: blocking 100, 24.4, 9.8, 5.1; non-blocking 100, 94.2, 88.9, 83.6.",
    stand_ins: &[
        (
            "Node.js, blocking (Bk)",
            "node; proscenium:event-loop and proscenium:loops/pool=0 (fib on the loop)",
        ),
        ("Node.js, non-blocking (NBk)", "node-nbk"),
        (
            "Node.Scala (blocking calls, parallel loops)",
            "proscenium:loops (fib on its blocking pool); vertx",
        ),
    ],
    claim: "A heavy request on the event loop stalls every request behind it: the blocking \
        service's throughput collapses with a few percent of heavy requests, the non-blocking \
        one's holds.",
    references: &[
        Reference {
            group: "mix",
            metric: Metric::Rps,
            name: "Fig. 1b: Node.js Bk (on node)",
            at: At::Bars {
                server: "node",
                values: &[
                    (SHARES[0], 100.0),
                    (SHARES[1], 24.4),
                    (SHARES[2], 9.8),
                    (SHARES[3], 5.1),
                ],
            },
        },
        Reference {
            group: "mix",
            metric: Metric::Rps,
            name: "Fig. 1b: Node.js NBk (on node-nbk)",
            at: At::Bars {
                server: "node-nbk",
                values: &[
                    (SHARES[0], 100.0),
                    (SHARES[1], 94.2),
                    (SHARES[2], 88.9),
                    (SHARES[3], 83.6),
                ],
            },
        },
    ],
    judge: mixed,
};

pub(super) const SCALING: Source = Source {
    figure: "Bonetta et al. 2012 (Node.Scala), Fig. 4",
    measured: "Node.Scala serving SciMark 2.0 kernels (stateless, blocking calls) on a 64-thread \
        Opteron machine, httperf from another machine over gigabit Ethernet: one loop saturates \
        at 600 requests/s (latency under 10 ms before, over a second after); peak throughput \
        scales almost linearly with the loops, to 13,600 msg/s at 32 (0.71 of 32 × 600).",
    stand_ins: &[
        ("Node.Scala, N event-loop threads", "proscenium:loops:N"),
        ("Node.js, one loop", "proscenium:loops:1"),
    ],
    claim: "The peak throughput of a stateless CPU-bound service scales almost linearly with the \
        number of loops (0.71 of linear at 32).",
    references: &[
        Reference {
            group: "dynamic page",
            metric: Metric::Rps,
            name: "Fig. 4: 600 msg/s a loop",
            at: At::Bars {
                server: "proscenium:loops:1",
                values: &[("dynamic page", 600.0)],
            },
        },
        Reference {
            group: "dynamic page",
            metric: Metric::Rps,
            name: "Fig. 4: 600 msg/s a loop",
            at: At::Bars {
                server: "proscenium:loops:2",
                values: &[("dynamic page", 1200.0)],
            },
        },
    ],
    judge: scaling,
};

pub(super) const STATEFUL: Source = Source {
    figure: "Bonetta et al. 2012 (Node.Scala), Fig. 5",
    measured: "Node.Scala on 32 loops serving SciMark kernels through a shared cache, peak \
        throughput against the share of exclusive (writing) requests from 10 to 90 %: it falls \
        from the 32-loop peak to the one-loop reference line as exclusive requests grow. The \
        text gives no numbers.",
    stand_ins: &[
        (
            "Node.Scala, 32 loops, shared cache",
            "fib-cache (a loop per core, shared state)",
        ),
        ("one event-loop thread (the reference line)", "fib-cache:1"),
    ],
    claim: "With few exclusive requests a stateful service uses every core; as their share grows \
        its throughput falls to that of one loop.",
    references: &[],
    judge: stateful,
};

/// The claim holds for a (blocking, non-blocking) pair when, at the highest heavy share,
/// the blocking server answers at most half the non-blocking one's rate.
fn mixed(results: &Results) -> Finding {
    let pairs = [
        ("node", "node-nbk"),
        ("proscenium:event-loop", "proscenium:loops"),
    ];
    let mut rows = Vec::new();
    let mut held = 0;
    let mut measured = 0;
    for (blocking, free) in pairs {
        if !ran(results, &[blocking, free]) {
            continue;
        }
        if let Some((b, f)) = mixed_pair(results, (blocking, free), &mut rows) {
            measured += 1;
            held += usize::from(b <= f / 2.0);
        }
    }
    let Some(verdict) = Verdict::of_cases(held, measured) else {
        return Finding::missing(&[
            "node and node-nbk, or proscenium:event-loop and proscenium:loops",
        ]);
    };
    Finding::new(
        verdict,
        format!(
            "at the highest heavy share the blocking server answers at most half the \
             non-blocking one's rate for {held} of {measured} pairs"
        ),
        rows,
    )
}

/// Adds to `rows` the rates of a (blocking, free) pair at each heavy share, beside
/// the source's; returns their rates at the highest share both were measured at.
fn mixed_pair(
    results: &Results,
    (blocking, free): (&str, &str),
    rows: &mut Vec<Comparison>,
) -> Option<(f64, f64)> {
    let source = |server: &str| {
        MIXED.references.iter().find_map(|r| match r.at {
            At::Bars { server: s, values } if s == server => Some(values),
            _ => None,
        })
    };
    let mut last = None;
    for share in SHARES {
        let b = at_label(results, blocking, "mix", share, Metric::Rps);
        let f = at_label(results, free, "mix", share, Metric::Rps);
        for (server, here) in [(blocking, b), (free, f)] {
            let theirs = source(server)
                .and_then(|v| v.iter().find(|(s, _)| *s == share))
                .map(|(_, v)| *v);
            rows.push(Comparison::new(
                format!("{server}, {share}"),
                theirs,
                here,
                "msg/s",
            ));
        }
        if let (Some(b), Some(f)) = (b, f) {
            last = Some((b, f));
        }
    }
    last
}

/// Efficiency = (the most loops' peak ÷ one loop's) ÷ the loops: the claim holds at
/// 0.7 or more (the source's 0.71), in part from 0.5.
fn scaling(results: &Results) -> Finding {
    let group = "dynamic page";
    let one = peak(results, "proscenium:loops:1", group, Metric::Rps);
    let most = most_loops(results, group);
    let (Some(one), Some((n, many))) = (one, most) else {
        return Finding::missing(&["proscenium:loops:1", "proscenium:loops:N (N > 1)"]);
    };
    let efficiency = many / one / f64::from(n);
    let verdict = match efficiency {
        e if e >= 0.7 => Verdict::Reproduced,
        e if e >= 0.5 => Verdict::Partly,
        _ => Verdict::NotReproduced,
    };
    Finding::new(
        verdict,
        format!(
            "{n} loops answer {:.2}× one loop's peak, {efficiency:.2} of linear (the rule: 0.7 or \
             more; the source 0.71 at 32 loops)",
            many / one
        ),
        vec![
            Comparison::new("one loop, peak", Some(600.0), Some(one), "req/s"),
            Comparison::new(format!("{n} loops, peak"), None, Some(many), "req/s"),
            Comparison::new("efficiency (of linear)", Some(0.71), Some(efficiency), "×"),
        ],
    )
}

/// The most loops run (up to 64, more than one) and their peak in `group`.
fn most_loops(results: &Results, group: &str) -> Option<(u32, f64)> {
    (2..=64).rev().find_map(|n| {
        let server = format!("proscenium:loops:{n}");
        Some((n, peak(results, &server, group, Metric::Rps)?))
    })
}

/// The claim holds when at the fewest writes the shared service answers 1.3× the one
/// loop or more, and at the most writes within 1.25× of it.
fn stateful(results: &Results) -> Finding {
    let group = "fib-cache";
    let many = line(results, "fib-cache", group, Metric::Rps);
    let one = line(results, "fib-cache:1", group, Metric::Rps);
    let (Some(first), Some(last), Some(one_first), Some(one_last)) =
        (many.first(), many.last(), one.first(), one.last())
    else {
        return Finding::missing(&["fib-cache", "fib-cache:1"]);
    };
    let (low, high) = (first.1 / one_first.1, last.1 / one_last.1);
    let shared = |writing: f64, ratio: f64| {
        let what = format!("{writing:.0} % writing: shared ÷ one loop");
        Comparison::new(what, None, Some(ratio), "×")
    };
    let rows = vec![shared(first.0, low), shared(last.0, high)];
    let verdict = Verdict::of_both(low >= 1.3, high <= 1.25);
    Finding::new(
        verdict,
        format!(
            "the shared service answers {low:.2}× one loop at the fewest writes (the rule: 1.3× \
             or more) and {high:.2}× at the most (the rule: at most 1.25×)"
        ),
        rows,
    )
}
