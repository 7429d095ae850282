//! The lines of a plot against worker processes ([`XAxis::Workers`]): servers that
//! differ in their workers alone (`proscenium:prefork:1`, `:2`, …) make one line, a
//! point per server at its worker count, since each server ran the same steps and only
//! its name says where it sits on the x axis.
//!
//! [`XAxis::Workers`]: crate::scenario::XAxis::Workers

use crate::results::Step;
use crate::scenario::Metric;
use crate::servers::ServerSpec;

use super::summary::{Spread, spread};

/// Returns one line per family of `servers`, its points ascending in workers; a server
/// whose name fixes no worker count, or without a value, has no point.
pub(super) fn lines<'a, I>(
    metric: Metric,
    servers: &[&'a str],
    steps_of: impl Fn(&'a str) -> I,
) -> Vec<(String, Vec<(f64, Spread)>)>
where
    I: Iterator<Item = &'a Step>,
{
    let mut lines: Vec<(String, Vec<(f64, Spread)>)> = Vec::new();
    for &name in servers {
        let Some((family, workers)) = name.parse::<ServerSpec>().ok().and_then(|s| s.workers())
        else {
            continue;
        };
        let Some(value) = spread(metric, steps_of(name).filter(|s| !s.warmup)) else {
            continue;
        };
        let point = (workers as f64, value);
        match lines.iter_mut().find(|(f, _)| *f == family) {
            Some((_, points)) => points.push(point),
            None => lines.push((family, vec![point])),
        }
    }
    for (_, points) in &mut lines {
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::Measured;

    fn step(server: &str, rps: f64) -> Step {
        Step {
            server: server.into(),
            group: "g".into(),
            label: "20 connections".into(),
            x: 20.0,
            round: 1,
            measured: Measured {
                requests: 1_000,
                achieved_rps: rps,
                ..Default::default()
            },
            ..Step::default()
        }
    }

    #[test]
    fn servers_of_one_family_make_one_line_in_order_of_workers() {
        let steps = [
            step("proscenium:prefork:4", 40.0),
            step("proscenium:prefork:1", 10.0),
            step("httpd-prefork", 7.0),
            step("proscenium:loops", 99.0),
        ];
        let servers: Vec<&str> = steps.iter().map(|s| s.server.as_str()).collect();
        let lines = lines(Metric::Rps, &servers, |name| {
            steps.iter().filter(move |s| s.server == name)
        });
        let drawn: Vec<(&str, Vec<(f64, f64)>)> = lines
            .iter()
            .map(|(name, points)| {
                let xy = points.iter().map(|(x, s)| (*x, s.median)).collect();
                (name.as_str(), xy)
            })
            .collect();
        assert_eq!(
            drawn,
            [
                ("proscenium:prefork", vec![(1.0, 10.0), (4.0, 40.0)]),
                ("httpd-prefork", vec![(150.0, 7.0)]),
            ]
        );
    }
}
