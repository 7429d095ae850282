//! The sources beside our figures: for each scenario, what its source measured (the
//! figure, its setup, its numbers), which of our servers stands in for which of its
//! own, the numbers it gives drawn on our plots, and a verdict on its claim computed
//! from the run's results — so a page cannot claim more than its data shows, and a
//! rerun updates the verdict with the figures.
//!
//! The verdicts are rules written down beforehand, each in the source's own terms (a
//! gap that narrows, a throughput that collapses, a line that scales), with the
//! numbers they rest on in the page's table; a scenario run without the servers a rule
//! needs is `not testable`, naming them.

mod leda;
mod node_scala;
mod techempower;
mod thesis;
mod yarn;

use super::summary::{Spread, spread};
use crate::results::{Comparison, Finding, Results, Step, Verdict};
use crate::scenario::Metric;

/// What one source measured and claimed, for one scenario.
pub(crate) struct Source {
    /// The work and figure reproduced: "Hessenberger 2014, Fig. 5.1–5.4".
    pub(crate) figure: &'static str,
    /// What the source ran, on what, and the numbers its text gives.
    pub(crate) measured: &'static str,
    /// Each of the source's servers and ours in its place.
    pub(crate) stand_ins: &'static [(&'static str, &'static str)],
    /// The claim the verdict tests.
    pub(crate) claim: &'static str,
    /// The source's numbers, drawn on our plots.
    pub(crate) references: &'static [Reference],
    /// The verdict on the claim, from a run's results.
    pub(crate) judge: fn(&Results) -> Finding,
}

/// Numbers of a source drawn on one of our plots (a black dashed line on a line plot;
/// on a bar plot, a black mark across the bar of the server standing in).
pub(crate) struct Reference {
    /// The plot's group and metric.
    pub(crate) group: &'static str,
    pub(crate) metric: Metric,
    /// The legend's text: whose figure, which server.
    pub(crate) name: &'static str,
    pub(crate) at: At,
}

/// Where a reference's values go.
pub(crate) enum At {
    /// On a line plot: `(x, y)` points, joined.
    Line(&'static [(f64, f64)]),
    /// On a bar plot: over `server`'s bar, a value for each category (step label).
    Bars {
        server: &'static str,
        values: &'static [(&'static str, f64)],
    },
}

/// The source of scenario `name`, if it has one.
pub(crate) fn of(name: &str) -> Option<&'static Source> {
    match name {
        "plaintext" | "json" => Some(&techempower::SOURCE),
        "static" => Some(&leda::STATIC),
        "dynamic" => Some(&leda::DYNAMIC),
        "dynamic-lua" => Some(&leda::DYNAMIC_LUA),
        "on-system" => Some(&thesis::ON_SYSTEM),
        "off-system" => Some(&thesis::OFF_SYSTEM),
        "actors" => Some(&thesis::ACTORS),
        "mixed" => Some(&node_scala::MIXED),
        "scaling" => Some(&node_scala::SCALING),
        "stateful" => Some(&node_scala::STATEFUL),
        "workers" => Some(&yarn::WORKERS),
        "cep" => Some(&leda::CEP),
        _ => None,
    }
}

/// The verdict on `results` by its scenario's source, or `None` for a scenario with
/// none.
pub fn judge(results: &Results) -> Option<Finding> {
    let source = of(&results.scenario)?;
    let mut finding = (source.judge)(results);
    finding.figure = source.figure.to_owned();
    Some(finding)
}

/// The measured (not warm-up) steps of `server` in `group`.
fn steps<'a>(results: &'a Results, server: &'a str, group: &'a str) -> Vec<&'a Step> {
    results
        .steps
        .iter()
        .filter(|s| s.server == server && s.group == group && !s.warmup)
        .collect()
}

/// Whether every one of `servers` has measured steps in `results`.
fn ran(results: &Results, servers: &[&str]) -> bool {
    servers
        .iter()
        .all(|name| results.steps.iter().any(|s| s.server == *name && !s.warmup))
}

/// `metric`'s median over the rounds for `server`'s step labelled `label` in `group`.
fn at_label(
    results: &Results,
    server: &str,
    group: &str,
    label: &str,
    metric: Metric,
) -> Option<f64> {
    let steps = steps(results, server, group);
    spread(metric, steps.into_iter().filter(|s| s.label == label)).map(|s| s.median)
}

/// `server`'s line of `metric` in `group`: each x with its median over the rounds.
fn line(results: &Results, server: &str, group: &str, metric: Metric) -> Vec<(f64, f64)> {
    let steps = steps(results, server, group);
    let mut xs: Vec<f64> = steps.iter().map(|s| s.x).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    xs.into_iter()
        .filter_map(|x| {
            let at_x = steps.iter().copied().filter(|s| s.x == x);
            spread(metric, at_x).map(|Spread { median, .. }| (x, median))
        })
        .collect()
}

/// The value of `line` at `x`, joining its points straight; `None` outside it.
fn interpolate(line: &[(f64, f64)], x: f64) -> Option<f64> {
    line.windows(2)
        .find_map(|w| {
            let ((x0, y0), (x1, y1)) = (w[0], w[1]);
            (x0 <= x && x <= x1).then(|| {
                if x1 == x0 {
                    y0
                } else {
                    y0 + (y1 - y0) * (x - x0) / (x1 - x0)
                }
            })
        })
        .or_else(|| line.iter().find(|p| p.0 == x).map(|p| p.1))
}

/// The highest x both lines reach, and each one's value there.
fn at_common_top(a: &[(f64, f64)], b: &[(f64, f64)]) -> Option<(f64, f64, f64)> {
    let top = a.last()?.0.min(b.last()?.0);
    Some((top, interpolate(a, top)?, interpolate(b, top)?))
}

/// The most of `metric` over `server`'s steps in `group` (medians over the rounds).
fn peak(results: &Results, server: &str, group: &str, metric: Metric) -> Option<f64> {
    line(results, server, group, metric)
        .into_iter()
        .map(|p| p.1)
        .reduce(f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::recorded;

    #[test]
    fn lines_are_read_between_their_points_and_not_beyond() {
        let line = [(100.0, 10.0), (200.0, 30.0), (400.0, 30.0)];
        assert_eq!(interpolate(&line, 150.0), Some(20.0));
        assert_eq!(interpolate(&line, 400.0), Some(30.0));
        assert_eq!(interpolate(&line, 50.0), None);
        assert_eq!(interpolate(&[(5.0, 1.0)], 5.0), Some(1.0));
        let other = [(100.0, 1.0), (300.0, 5.0)];
        assert_eq!(at_common_top(&line, &other), Some((300.0, 30.0, 5.0)));
    }

    /// `results` with its steps replaced by one a round of three for each
    /// `(server, label, achieved/s)`, cloned from its first step.
    fn with_rates(mut results: Results, rates: &[(&str, &str, f64)]) -> Results {
        let model = results.steps[0].clone();
        results.steps = rates
            .iter()
            .flat_map(|&(server, label, rps)| {
                let model = &model;
                (1..=3).map(move |round| {
                    let mut step = model.clone();
                    step.server = server.to_owned();
                    step.label = label.to_owned();
                    step.round = round;
                    step.warmup = false;
                    step.invalid = None;
                    step.measured.achieved_rps = rps + f64::from(round);
                    step
                })
            })
            .collect();
        results
    }

    #[test]
    fn the_blocking_loop_must_collapse_beside_the_free_one() {
        let mixed = recorded("mixed");
        let collapsed = with_rates(
            mixed.clone(),
            &[
                ("node", "15 % heavy", 6.0),
                ("node-nbk", "15 % heavy", 80.0),
            ],
        );
        let finding = judge(&collapsed).unwrap();
        assert_eq!(finding.verdict, Verdict::Reproduced, "{finding:?}");
        assert!(finding.figure.contains("Fig. 1b"));
        let row = finding
            .rows
            .iter()
            .find(|r| r.what == "node, 15 % heavy")
            .unwrap();
        assert_eq!(
            (row.source, row.here),
            (Some(5.1), Some(8.0)),
            "the median of three"
        );
        let held = with_rates(
            mixed.clone(),
            &[
                ("node", "15 % heavy", 70.0),
                ("node-nbk", "15 % heavy", 80.0),
            ],
        );
        assert_eq!(judge(&held).unwrap().verdict, Verdict::NotReproduced);
        let alone = with_rates(mixed, &[("node", "15 % heavy", 6.0)]);
        assert_eq!(judge(&alone).unwrap().verdict, Verdict::NotTestable);
    }

    #[test]
    fn a_recorded_report_gets_a_verdict_on_its_numbers() {
        let off = judge(&recorded("off-system")).unwrap();
        let gap = off
            .rows
            .iter()
            .find(|r| r.what.starts_with("ramp to 1000/s: jetty − pekko"))
            .expect("the gap at the top of the ramp to 1,000/s");
        assert_eq!(gap.source, Some(2400.0));
        assert!(gap.here.is_some());
        assert_ne!(off.verdict, Verdict::NotTestable, "{off:?}");
    }

    #[test]
    fn every_scenario_has_a_source_with_a_claim() {
        for name in crate::scenario::SCENARIOS {
            let source = of(name).unwrap_or_else(|| panic!("{name} has no source"));
            assert!(
                !source.claim.is_empty() && !source.stand_ins.is_empty(),
                "{name}"
            );
        }
    }
}
