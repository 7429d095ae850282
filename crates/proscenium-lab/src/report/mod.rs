//! The report of one scenario's run: `results.json`, one SVG and one PNG per plot, and
//! `report.html` — self-contained (the SVGs inline, no script, no outside style), with
//! the machine, versions, deviations, a table of every step and the exact commands.

mod html;
mod plot;
mod summary;

use std::path::Path;

use crate::Error;
use crate::results::{Results, Step};
use crate::scenario::{self, Metric};

use self::summary::{Spread, spread};

pub(crate) use self::plot::{Chart, FONT, font_ready};

/// One drawn plot: its title, y label, data and the SVG text.
pub(crate) struct Figure {
    pub(crate) file: String,
    pub(crate) title: String,
    pub(crate) svg: String,
}

/// Writes every file of the report of `results` into `dir`.
pub(crate) fn write(results: &Results, dir: &Path) -> Result<(), Error> {
    if !plot::font_ready() {
        return Err(Error::Tool(format!(
            "the plots need a font at {} (apt-get install fonts-dejavu-core)",
            plot::FONT
        )));
    }
    let mut results = results.clone();
    let mut figures = Vec::new();
    for (i, (title, y_label, chart)) in charts(&results).into_iter().enumerate() {
        let file = format!("plot-{}", i + 1);
        let svg = plot::svg(&title, y_label, &chart).map_err(Error::Tool)?;
        std::fs::write(dir.join(format!("{file}.svg")), &svg).map_err(Error::io("write a plot"))?;
        plot::png(&dir.join(format!("{file}.png")), &title, y_label, &chart)
            .map_err(Error::Tool)?;
        results.plots.push(file.clone());
        figures.push(Figure { file, title, svg });
    }
    let json = serde_json::to_string_pretty(&results).map_err(|e| Error::Tool(e.to_string()))?;
    std::fs::write(dir.join("results.json"), json).map_err(Error::io("write results.json"))?;
    std::fs::write(dir.join("report.html"), html::page(&results, &figures))
        .map_err(Error::io("write report.html"))
}

fn steps_of<'a>(
    results: &'a Results,
    server: &'a str,
    group: &'a str,
) -> impl Iterator<Item = &'a Step> {
    results
        .steps
        .iter()
        .filter(move |s| s.server == server && s.group == group)
}

/// The charts of the scenario's plan, filled from the steps.
fn charts(results: &Results) -> Vec<(String, &'static str, Chart)> {
    let cores = results.machine.cores;
    let profile = results.profile.parse().unwrap_or(crate::Profile::Quick);
    let Some(plan) = scenario::plan(&results.scenario, profile, cores) else {
        return Vec::new();
    };
    let servers: Vec<&str> = results
        .servers
        .iter()
        .filter(|s| s.skipped.is_none())
        .map(|s| s.name.as_str())
        .collect();
    plan.plots
        .iter()
        .map(|p| {
            let of = |server| steps_of(results, server, &p.group);
            let chart = match p.x_label {
                Some(x_label) => Chart::Lines {
                    x_label: x_label.to_owned(),
                    series: servers
                        .iter()
                        .map(|&name| {
                            (
                                name.to_owned(),
                                line(p.metric, &of(name).collect::<Vec<_>>()),
                            )
                        })
                        .collect(),
                },
                None => {
                    let mut categories: Vec<String> = Vec::new();
                    for step in results
                        .steps
                        .iter()
                        .filter(|s| s.group == p.group && !s.warmup)
                    {
                        if !categories.contains(&step.label) {
                            categories.push(step.label.clone());
                        }
                    }
                    let series = servers
                        .iter()
                        .map(|&name| {
                            let values = categories
                                .iter()
                                .map(|c| spread(p.metric, of(name).filter(|s| &s.label == c)))
                                .collect();
                            (name.to_owned(), values)
                        })
                        .collect();
                    Chart::Bars { categories, series }
                }
            };
            (
                format!("{}: {}", p.group, p.metric.title()),
                p.metric.label(),
                chart,
            )
        })
        .collect()
}

/// A line's points: each x (in order) with the metric over its rounds.
fn line(metric: Metric, steps: &[&Step]) -> Vec<(f64, Spread)> {
    let mut xs: Vec<f64> = steps.iter().filter(|s| !s.warmup).map(|s| s.x).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    xs.into_iter()
        .filter_map(|x| {
            Some((
                x,
                spread(metric, steps.iter().copied().filter(|s| s.x == x))?,
            ))
        })
        .collect()
}
