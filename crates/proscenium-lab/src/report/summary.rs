//! What the plots draw: for each server and step, a metric's median over the rounds
//! and its spread (min and max, the whiskers), from the steps that count.
//!
//! A step counts when it is not a warm-up and not invalid (its generator sent under
//! 95 % of the offered load); a latency or CPU figure counts only when it rests on at
//! least `MIN_ANSWERS` (100) answers. What does not count is not drawn: the table below
//! the plots still lists it, marked.

use crate::load::{Latency, Measured};
use crate::results::Step;
use crate::scenario::{LIGHT, Metric};

/// A metric over the rounds of one step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Spread {
    pub(crate) median: f64,
    pub(crate) min: f64,
    pub(crate) max: f64,
}

impl Spread {
    /// The median and extremes of `values`, or `None` without any.
    pub(crate) fn of(mut values: Vec<f64>) -> Option<Self> {
        values.sort_by(f64::total_cmp);
        let n = values.len();
        let median = match n {
            0 => return None,
            _ if n % 2 == 1 => values[n / 2],
            _ => (values[n / 2 - 1] + values[n / 2]) / 2.0,
        };
        Some(Self {
            median,
            min: values[0],
            max: values[n - 1],
        })
    }
}

/// The value `metric` reads off `step`, or `None` when the step does not count for it.
pub(crate) fn value(metric: Metric, step: &Step) -> Option<f64> {
    if step.warmup || step.invalid.is_some() {
        return None;
    }
    let m = &step.measured;
    let enough = step.has_enough_answers();
    match metric {
        Metric::Rps => Some(m.achieved_rps),
        Metric::FailedShare => m.failed_share().map(|s| s * 100.0),
        Metric::Utilisation => step.server_utilisation.map(|u| u * 100.0),
        Metric::CpuPerRequest => step.cpu_us_per_request.filter(|_| enough),
        Metric::MeanLatency => Some(m.latency_ms.mean).filter(|_| enough),
        Metric::P99Latency => Some(m.latency_ms.p99).filter(|_| enough),
        Metric::LightMeanLatency => light(m).map(|l| l.mean).filter(|_| enough),
        Metric::LightP99Latency => light(m).map(|l| l.p99).filter(|_| enough),
        Metric::Elapsed => step.job.map(|j| j.elapsed_s),
    }
}

/// The latency of the mix's light requests: their own figures, or every request's
/// when the step sent one path alone (no heavy requests: the mix's 0 % step).
fn light(m: &Measured) -> Option<Latency> {
    if m.latency_by_path_ms.is_empty() {
        Some(m.latency_ms)
    } else {
        m.latency_by_path_ms.get(LIGHT).copied()
    }
}

/// `metric` over the rounds of the steps `of` yields.
pub(crate) fn spread<'a>(metric: Metric, of: impl Iterator<Item = &'a Step>) -> Option<Spread> {
    Spread::of(of.filter_map(|s| value(metric, s)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(round: u32, requests: u64, p99: f64) -> Step {
        let mut measured = Measured {
            requests,
            achieved_rps: f64::from(round) * 10.0,
            ..Default::default()
        };
        measured.latency_ms.p99 = p99;
        Step {
            server: "s".into(),
            group: "g".into(),
            label: "l".into(),
            x: 1.0,
            round,
            measured,
            cpu_us_per_request: Some(10.0),
            server_utilisation: Some(0.5),
            ..Step::default()
        }
    }

    #[test]
    fn rounds_become_a_median_and_a_spread() {
        let steps = [step(1, 500, 3.0), step(2, 500, 9.0), step(3, 500, 4.0)];
        let p99 = spread(Metric::P99Latency, steps.iter()).unwrap();
        assert_eq!((p99.median, p99.min, p99.max), (4.0, 3.0, 9.0));
        let rps = spread(Metric::Rps, steps[..2].iter()).unwrap();
        assert_eq!(rps.median, 15.0, "the mean of the middle two");
        assert_eq!(
            spread(Metric::Utilisation, steps.iter()).unwrap().median,
            50.0
        );
    }

    #[test]
    fn light_requests_are_read_apart_from_the_heavy_ones() {
        let mut mixed = step(1, 500, 900.0);
        let light = Latency {
            mean: 1.0,
            p99: 4.0,
            ..Latency::default()
        };
        let heavy = Latency {
            p99: 900.0,
            ..Latency::default()
        };
        mixed.measured.latency_by_path_ms =
            [(LIGHT.to_owned(), light), ("/fib?n=39".to_owned(), heavy)].into();
        assert_eq!(value(Metric::LightP99Latency, &mixed), Some(4.0));
        assert_eq!(value(Metric::LightMeanLatency, &mixed), Some(1.0));
        let all_light = step(1, 500, 3.0);
        assert_eq!(
            value(Metric::LightP99Latency, &all_light),
            Some(3.0),
            "one path sent: every request is light"
        );
    }

    #[test]
    fn warm_ups_invalid_steps_and_few_answers_are_not_drawn() {
        let mut warm = step(1, 500, 3.0);
        warm.warmup = true;
        let mut behind = step(1, 500, 3.0);
        behind.invalid = Some("sent 48 %".into());
        let few = step(1, 8, 3.0);
        assert_eq!(value(Metric::P99Latency, &warm), None);
        assert_eq!(value(Metric::Rps, &behind), None);
        assert_eq!(value(Metric::CpuPerRequest, &few), None, "8 answers");
        assert_eq!(value(Metric::P99Latency, &few), None);
        assert_eq!(
            value(Metric::Rps, &few),
            Some(10.0),
            "a rate needs no sample"
        );
    }
}
