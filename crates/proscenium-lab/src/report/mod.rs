//! The report of one scenario's run: `results.json`, one SVG and one PNG per plot, and
//! `report.html` — self-contained (the SVGs inline, no script, no outside style), with
//! the provenance, machine, versions, deviations, how to read the figures, a table of
//! every step and the exact commands. The plots draw medians over the rounds
//! (`summary.rs`).

mod html;
mod plot;
mod sources;
mod summary;
mod workers;

use std::path::Path;

use crate::Error;
use crate::results::{Results, Step};
use crate::scenario::{self, Metric, PlotPlan, XAxis};

use self::sources::At;
pub use self::sources::judge;
use self::summary::{Spread, spread};

pub(crate) use self::plot::{Chart, FONT, font_ready};

/// One drawn plot: its title, y label, data and the SVG text.
pub(crate) struct Figure {
    pub(crate) file: String,
    pub(crate) title: String,
    pub(crate) svg: String,
}

/// Writes every file of the report of `results` into `dir`: `results.json` first, so
/// that a plot that cannot be drawn loses no data.
pub(crate) fn write(results: &Results, dir: &Path) -> Result<(), Error> {
    let charts = charts(results);
    let mut results = results.clone();
    results.plots = (1..=charts.len()).map(|i| format!("plot-{i}")).collect();
    results.finding = sources::judge(&results);
    let json = serde_json::to_string_pretty(&results).map_err(|e| Error::Tool(e.to_string()))?;
    std::fs::write(dir.join("results.json"), json).map_err(Error::io("write results.json"))?;
    if !plot::font_ready() {
        return Err(Error::Tool(format!(
            "results.json is written, but the plots need a font at {} \
             (apt-get install fonts-dejavu-core)",
            plot::FONT
        )));
    }
    remove_plots(dir)?;
    let figures = charts
        .into_iter()
        .zip(&results.plots)
        .map(|(chart, file)| draw(dir, file, chart))
        .collect::<Result<Vec<_>, Error>>()?;
    std::fs::write(dir.join("report.html"), html::page(&results, &figures))
        .map_err(Error::io("write report.html"))
}

/// Draws `chart` into `dir` as `file`.svg and `file`.png; returns its figure.
fn draw(
    dir: &Path,
    file: &str,
    (title, y_label, chart): (String, &'static str, Chart),
) -> Result<Figure, Error> {
    let svg = plot::svg(&title, y_label, &chart).map_err(Error::Tool)?;
    std::fs::write(dir.join(format!("{file}.svg")), &svg).map_err(Error::io("write a plot"))?;
    plot::png(&dir.join(format!("{file}.png")), &title, y_label, &chart).map_err(Error::Tool)?;
    Ok(Figure {
        file: file.to_owned(),
        title,
        svg,
    })
}

/// Removes the plot files in `dir`: a report drawn again may have fewer.
fn remove_plots(dir: &Path) -> Result<(), Error> {
    let entries = std::fs::read_dir(dir).map_err(Error::io("read a report's directory"))?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("plot-") && (name.ends_with(".svg") || name.ends_with(".png")) {
            std::fs::remove_file(entry.path()).map_err(Error::io("remove an old plot"))?;
        }
    }
    Ok(())
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
    let profile = results
        .profile
        .parse()
        .unwrap_or(crate::scenario::Profile::Quick);
    let Some(plan) = scenario::plan(&results.scenario, profile, cores) else {
        return Vec::new();
    };
    let servers = measured_servers(results);
    plan.plots
        .iter()
        .map(|p| {
            let chart = match p.x_label {
                Some(x_label) => line_chart(results, &servers, p, x_label),
                None => bar_chart(results, &servers, p),
            };
            let title = format!("{}: {}", p.group, p.metric.title());
            (title, p.metric.label(), chart)
        })
        .collect()
}

/// The servers with a measured step, in the run's order: a server skipped in a later
/// round keeps the rounds it ran.
fn measured_servers(results: &Results) -> Vec<&str> {
    results
        .servers
        .iter()
        .map(|s| s.name.as_str())
        .filter(|name| results.steps.iter().any(|s| s.server == *name && !s.warmup))
        .collect()
}

/// Plot `p` as lines over `x_label`: one a server (or a family of servers, over their
/// workers), the source's lines beside them.
fn line_chart<'a>(
    results: &'a Results,
    servers: &[&'a str],
    p: &'a PlotPlan,
    x_label: &str,
) -> Chart {
    let of = |server| steps_of(results, server, &p.group);
    let series = match p.x_axis {
        XAxis::Steps => servers
            .iter()
            .map(|&name| {
                let steps: Vec<&Step> = of(name).collect();
                (name.to_owned(), line(p.metric, &steps))
            })
            .collect(),
        XAxis::Workers => workers::lines(p.metric, servers, of),
    };
    Chart::Lines {
        x_label: x_label.to_owned(),
        references: references(results, &p.group, p.metric)
            .filter_map(|(name, at)| match at {
                At::Line(points) => Some((name.to_owned(), points.to_vec())),
                At::Bars { .. } => None,
            })
            .collect(),
        series,
    }
}

/// Plot `p` as bars: a category a step label, a bar a server in each, the source's
/// values marked across the bars of the servers standing in.
fn bar_chart(results: &Results, servers: &[&str], p: &PlotPlan) -> Chart {
    let categories = categories(results, &p.group);
    let series = servers
        .iter()
        .map(|&name| {
            let values = categories
                .iter()
                .map(|c| {
                    let of = steps_of(results, name, &p.group).filter(|s| &s.label == c);
                    spread(p.metric, of)
                })
                .collect();
            (name.to_owned(), values)
        })
        .collect();
    let references = references(results, &p.group, p.metric)
        .filter_map(|(name, at)| Some((name.to_owned(), marks(at, servers, &categories)?)))
        .collect();
    Chart::Bars {
        categories,
        series,
        references,
    }
}

/// The labels of `group`'s measured steps, in the order they first ran.
fn categories(results: &Results, group: &str) -> Vec<String> {
    let mut categories: Vec<String> = Vec::new();
    for step in results
        .steps
        .iter()
        .filter(|s| s.group == group && !s.warmup)
    {
        if !categories.contains(&step.label) {
            categories.push(step.label.clone());
        }
    }
    categories
}

/// A bar reference's marks as (server, category, value); `None` for a line's, or
/// when its server did not run.
fn marks(at: &At, servers: &[&str], categories: &[String]) -> Option<Vec<plot::BarMark>> {
    let At::Bars { server, values } = at else {
        return None;
    };
    let s = servers.iter().position(|n| n == server)?;
    let marks = values
        .iter()
        .filter_map(|(label, y)| Some((s, categories.iter().position(|c| c == label)?, *y)))
        .collect();
    Some(marks)
}

/// The source's numbers for the plot of `metric` over `group`: each a legend name and
/// where it goes.
fn references<'a>(
    results: &Results,
    group: &'a str,
    metric: Metric,
) -> impl Iterator<Item = (&'static str, &'static At)> + 'a {
    sources::of(&results.scenario)
        .into_iter()
        .flat_map(|source| source.references)
        .filter(move |r| r.group == group && r.metric == metric)
        .map(|r| (r.name, &r.at))
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A report as recorded, kept as a fixture (`testdata/`): `mixed` and `static` from
    /// before issue 16's accounting, `off-system` with it (and without calibration).
    pub(crate) fn recorded(name: &str) -> Results {
        let path = format!(
            "{}/src/report/testdata/{name}.json",
            env!("CARGO_MANIFEST_DIR")
        );
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    #[test]
    fn the_first_reports_still_read_and_say_what_they_did_not_record() {
        assert!(
            recorded("off-system").provenance.is_some(),
            "a report since issue 16 records its provenance"
        );
        let old = recorded("mixed");
        assert!(old.provenance.is_none());
        assert!(old.steps.iter().all(|s| s.round == 1 && !s.warmup));
        let charts = charts(&old);
        let titles: Vec<&str> = charts.iter().map(|(title, ..)| title.as_str()).collect();
        assert_eq!(
            titles,
            [
                "mix: throughput",
                "mix: p99 response time",
                "mix: light requests' p99 response time",
                "mix: light requests' mean response time",
                "mix: failed requests"
            ],
            "its plots now, and the failed share every open-loop group gets"
        );
        let (_, _, Chart::Bars { series, .. }) = &charts[2] else {
            panic!("bars by share of heavy")
        };
        let node = &series.iter().find(|(name, _)| name == "node").unwrap().1;
        assert!(
            node.iter().all(Option::is_some),
            "the light requests' latency recorded per path is drawn: {node:?}"
        );
        let page = html::page(&old, &[]);
        assert!(page.contains("not recorded"));
        let off = html::page(&recorded("off-system"), &[]);
        assert!(
            off.contains("answers, under 100"),
            "steps on few answers are marked"
        );
    }

    #[test]
    fn the_sources_numbers_mark_the_bars_of_their_stand_ins() {
        let mixed = recorded("mixed");
        let charts = charts(&mixed);
        let (
            _,
            _,
            Chart::Bars {
                series,
                references,
                categories,
            },
        ) = charts
            .iter()
            .find(|(title, ..)| title == "mix: throughput")
            .unwrap()
        else {
            panic!("a bar chart")
        };
        let node = series.iter().position(|(name, _)| name == "node").unwrap();
        let heavy = categories.iter().position(|c| c == "5 % heavy").unwrap();
        assert_eq!(references.len(), 1, "node-nbk did not run: no bar to mark");
        assert!(
            references[0].1.contains(&(node, heavy, 24.4)),
            "{references:?}"
        );
    }

    #[test]
    fn a_point_on_few_answers_is_left_off_its_line() {
        // The 5 MB file at 5,000 clients: a handful of answers in a quick step.
        let old = recorded("static");
        let few = old
            .steps
            .iter()
            .find(|s| s.group == "5120 KB file" && s.x == 5000.0 && s.measured.requests < 100)
            .expect("a step on few answers");
        let charts = charts(&old);
        let (_, _, Chart::Lines { series, .. }) = charts
            .iter()
            .find(|(title, ..)| title == "5120 KB file: mean response time")
            .unwrap()
        else {
            panic!("a line chart")
        };
        let line = &series
            .iter()
            .find(|(name, _)| *name == few.server)
            .unwrap()
            .1;
        assert!(line.iter().all(|(x, _)| *x != 5000.0), "{line:?}");
    }
}
