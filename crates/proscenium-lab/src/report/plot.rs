//! Plots, drawn with `plotters` to SVG (inlined in the report) and PNG (beside it):
//! lines of a metric against the steps' x value, or grouped bars by step label; each
//! point or bar the median over the rounds, its whisker from the least to the most.
//!
//! A source's own numbers go on the same plot in black: a dashed line with crosses on
//! a line plot, a mark across the bar of the server standing in on a bar plot, each
//! named in the legend.
//!
//! Choices a reader relies on: the Okabe–Ito palette (told apart under the common
//! colour-blindnesses), the legend in a column of its own right of the plot (never over
//! the data), a logarithmic x axis when x spans a decade or more (client counts), a
//! logarithmic y axis when values span [`LOG_SPREAD`] or more (a saturated server's
//! seconds beside the others' milliseconds — bars too), and ticks printed as whole
//! numbers from 10 up.
//!
//! Text needs a font to be measured and, in PNG, drawn: DejaVu Sans from the system
//! (Debian's `fonts-dejavu-core`), registered once.

use std::path::Path;
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, Ranged, ValueFormatter};
use plotters::prelude::*;

use super::summary::Spread;

/// Where the font is read from.
pub(crate) const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

const SIZE: (u32, u32) = (960, 480);
/// The legend's column, right of the plot.
const LEGEND_WIDTH: u32 = 210;

/// How many labels the x axis of a line plot asks for.
const X_LABELS: usize = 6;

/// The spread of values from which the y axis turns logarithmic.
const LOG_SPREAD: f64 = 50.0;

/// Okabe & Ito's colour-blind-safe palette, yellow last (faint on white).
const PALETTE: [RGBColor; 8] = [
    RGBColor(0x00, 0x72, 0xB2),
    RGBColor(0xD5, 0x5E, 0x00),
    RGBColor(0x00, 0x9E, 0x73),
    RGBColor(0xCC, 0x79, 0xA7),
    RGBColor(0x56, 0xB4, 0xE9),
    RGBColor(0xE6, 0x9F, 0x00),
    RGBColor(0x00, 0x00, 0x00),
    RGBColor(0xF0, 0xE4, 0x42),
];

fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// A chart's data: the median and spread of each point or bar, and the source's
/// numbers drawn beside them.
#[derive(Debug, Clone)]
pub(crate) enum Chart {
    /// One line per series, over numeric x; each reference a line of `(x, y)`.
    Lines {
        x_label: String,
        series: Vec<(String, Vec<(f64, Spread)>)>,
        references: Vec<(String, Vec<(f64, f64)>)>,
    },
    /// Bars per category, one per series; each reference marks values over bars, as
    /// `(series, category, y)` by index.
    Bars {
        categories: Vec<String>,
        series: Vec<(String, Vec<Option<Spread>>)>,
        references: Vec<(String, Vec<BarMark>)>,
    },
}

/// A source's value marked over a bar: `(series, category, y)`, by index.
pub(crate) type BarMark = (usize, usize, f64);

impl Chart {
    /// The series' names, then the references'.
    fn names(&self) -> (Vec<&str>, Vec<&str>) {
        match self {
            Self::Lines {
                series, references, ..
            } => (names(series), names(references)),
            Self::Bars {
                series, references, ..
            } => (names(series), names(references)),
        }
    }

    /// Every y a whisker or a reference reaches.
    fn ys(&self) -> Vec<f64> {
        let ends = |s: &Spread| [s.min, s.max];
        match self {
            Self::Lines {
                series, references, ..
            } => series
                .iter()
                .flat_map(|(_, p)| p.iter().flat_map(|(_, s)| ends(s)))
                .chain(references.iter().flat_map(|(_, p)| p.iter().map(|p| p.1)))
                .collect(),
            Self::Bars {
                series, references, ..
            } => series
                .iter()
                .flat_map(|(_, v)| v.iter().flatten().flat_map(ends))
                .chain(references.iter().flat_map(|(_, p)| p.iter().map(|p| p.2)))
                .collect(),
        }
    }
}

/// Registers the font once; says whether text can be drawn.
pub(crate) fn font_ready() -> bool {
    static READY: OnceLock<bool> = OnceLock::new();
    *READY.get_or_init(|| {
        let Ok(bytes) = std::fs::read(FONT) else {
            return false;
        };
        // plotters keeps registered fonts for the life of the process.
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok()
    })
}

/// Draws `chart` as SVG text.
pub(crate) fn svg(title: &str, y_label: &str, chart: &Chart) -> Result<String, String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
        draw(&root, title, y_label, chart)?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(out)
}

/// Draws `chart` to a PNG file.
pub(crate) fn png(path: &Path, title: &str, y_label: &str, chart: &Chart) -> Result<(), String> {
    let root = BitMapBackend::new(path, SIZE).into_drawing_area();
    draw(&root, title, y_label, chart)?;
    root.present().map_err(|e| e.to_string())
}

type Drawn = Result<(), Box<dyn std::error::Error>>;

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    y_label: &str,
    chart: &Chart,
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let drawn = (|| -> Drawn {
        root.fill(&WHITE)?;
        let (area, key) = root.split_horizontally(SIZE.0 - LEGEND_WIDTH);
        let (names, references) = chart.names();
        legend(&key, &names, &references)?;
        let plot = Plot::new(title, y_label, &chart.ys());
        match chart {
            Chart::Bars {
                categories,
                series,
                references,
            } if plot.y_log => {
                let y = (plot.y_floor..plot.y_top).log_scale();
                plot.bars(&area, categories, series, references, y)
            }
            Chart::Bars {
                categories,
                series,
                references,
            } => plot.bars(&area, categories, series, references, 0.0..plot.y_top),
            Chart::Lines {
                x_label,
                series,
                references,
            } => plot.line_plot(
                &area,
                &Lines {
                    x_label,
                    series,
                    references,
                },
            ),
        }
    })();
    drawn.map_err(|e| format!("drawing {title}: {e}"))
}

/// Whether the positive `values` span `ratio` or more from least to most.
fn spans(values: &[f64], ratio: f64) -> bool {
    let positive = values.iter().copied().filter(|v| *v > 0.0);
    let min = positive.clone().fold(f64::INFINITY, f64::min);
    let max = positive.fold(0.0_f64, f64::max);
    min.is_finite() && max / min >= ratio
}

/// A tick's text: whole numbers from 10 up (counts, rates, milliseconds), two
/// significant decimals below.
fn tick(v: f64) -> String {
    if v.abs() >= 10.0 || v == v.round() {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// The series' names and colours, one a line, in the column right of the plot; the
/// references' below them, each beside a black dash.
fn legend<DB: DrawingBackend>(
    key: &DrawingArea<DB, Shift>,
    names: &[&str],
    references: &[&str],
) -> Drawn
where
    DB::ErrorType: 'static,
{
    let row = |i: usize| 50 + 22 * i as i32;
    for (i, name) in names.iter().enumerate() {
        let y = row(i);
        key.draw(&Rectangle::new(
            [(4, y - 5), (22, y + 5)],
            colour(i).filled(),
        ))?;
        key.draw(&Text::new(
            name.to_string(),
            (28, y - 7),
            ("sans-serif", 14),
        ))?;
    }
    for (i, name) in references.iter().enumerate() {
        let y = row(names.len() + i);
        key.draw(&PathElement::new([(4, y), (22, y)], BLACK.stroke_width(3)))?;
        key.draw(&Text::new(
            name.to_string(),
            (28, y - 7),
            ("sans-serif", 12),
        ))?;
    }
    Ok(())
}

/// The names of `named` things, in order.
fn names<T>(named: &[(String, T)]) -> Vec<&str> {
    named.iter().map(|(name, _)| name.as_str()).collect()
}

/// A line chart's data, as [`Chart::Lines`] holds it.
struct Lines<'a> {
    x_label: &'a str,
    series: &'a [(String, Vec<(f64, Spread)>)],
    references: &'a [(String, Vec<(f64, f64)>)],
}

/// A linear or logarithmic axis over `f64`, labelled by [`tick`].
trait Axis:
    AsRangedCoord<Value = f64, CoordDescType: ValueFormatter<f64> + Ranged<ValueType = f64>>
{
}

impl<T> Axis for T where
    T: AsRangedCoord<Value = f64, CoordDescType: ValueFormatter<f64> + Ranged<ValueType = f64>>
{
}

/// What every plot of a chart shares: the title and the y axis.
struct Plot<'a> {
    title: &'a str,
    y_label: String,
    y_top: f64,
    /// Whether y is logarithmic: values spanning [`LOG_SPREAD`] or more, none zero
    /// (a logarithmic axis cannot show one: no failures, say).
    y_log: bool,
    /// Where bars start: 0, or the bottom of a logarithmic axis.
    y_floor: f64,
}

impl<'a> Plot<'a> {
    /// The plot of values reaching `ys`.
    fn new(title: &'a str, y_label: &str, ys: &[f64]) -> Self {
        let y_max = ys.iter().copied().fold(0.0_f64, f64::max);
        let y_top = if y_max > 0.0 { y_max * 1.1 } else { 1.0 };
        let y_log = spans(ys, LOG_SPREAD) && ys.iter().all(|v| *v > 0.0);
        let least = ys
            .iter()
            .copied()
            .filter(|v| *v > 0.0)
            .fold(y_top, f64::min);
        Self {
            title,
            y_label: if y_log {
                format!("{y_label}, log scale")
            } else {
                y_label.to_owned()
            },
            y_top,
            y_log,
            y_floor: if y_log { least / 1.5 } else { 0.0 },
        }
    }

    /// Draws `lines` over an x axis fitted to them: logarithmic when the x values span
    /// a decade (client counts, 100 to 5,000: a linear axis crowds the low ones into the
    /// corner), else linear from 0.
    fn line_plot<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        lines: &Lines<'_>,
    ) -> Drawn
    where
        DB::ErrorType: 'static,
    {
        let xs: Vec<f64> = lines
            .series
            .iter()
            .flat_map(|(_, p)| p.iter().map(|p| p.0))
            .chain(
                lines
                    .references
                    .iter()
                    .flat_map(|(_, p)| p.iter().map(|p| p.0)),
            )
            .collect();
        let x_top = xs.iter().copied().fold(0.0_f64, f64::max).max(1.0) * 1.1;
        let x_min = xs.iter().copied().fold(f64::INFINITY, f64::min);
        if x_min > 0.0 && spans(&xs, 10.0) {
            self.lines_over(area, lines, (x_min / 1.3..x_top).log_scale())
        } else {
            self.lines_over(area, lines, 0.0..x_top)
        }
    }

    /// Lines over the x axis `x`, on a linear or logarithmic y.
    fn lines_over<DB: DrawingBackend, X: Axis>(
        &self,
        area: &DrawingArea<DB, Shift>,
        lines: &Lines<'_>,
        x: X,
    ) -> Drawn
    where
        DB::ErrorType: 'static,
    {
        if self.y_log {
            let y = (self.y_floor..self.y_top).log_scale();
            self.lines(area, lines, x, y)
        } else {
            self.lines(area, lines, x, 0.0..self.y_top)
        }
    }

    /// A chart with the title and room for the axes' labels.
    fn builder<'b, DB: DrawingBackend>(
        &self,
        area: &'b DrawingArea<DB, Shift>,
    ) -> ChartBuilder<'b, '_, DB> {
        let mut builder = ChartBuilder::on(area);
        builder
            .caption(self.title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70);
        builder
    }

    fn lines<DB: DrawingBackend, X: Axis, Y: Axis>(
        &self,
        area: &DrawingArea<DB, Shift>,
        lines: &Lines<'_>,
        x_range: X,
        y_range: Y,
    ) -> Drawn
    where
        DB::ErrorType: 'static,
    {
        let mut chart = self.builder(area).build_cartesian_2d(x_range, y_range)?;
        chart
            .configure_mesh()
            // Fewer labels than plotters' default: on a logarithmic axis its default
            // prints 7000, 8000, 9000 and 10000 over one another.
            .x_labels(X_LABELS)
            .x_desc(lines.x_label)
            .y_desc(&self.y_label)
            .x_label_formatter(&|v| tick(*v))
            .y_label_formatter(&|v| tick(*v))
            .draw()?;
        for (i, (_, points)) in lines.series.iter().enumerate() {
            let c = colour(i);
            let medians = points.iter().map(|(x, s)| (*x, s.median));
            chart.draw_series(LineSeries::new(medians.clone(), c.stroke_width(2)))?;
            chart.draw_series(medians.map(|p| Circle::new(p, 3, c.filled())))?;
            chart.draw_series(points.iter().map(|(x, s)| {
                ErrorBar::new_vertical(*x, s.min, s.median, s.max, c.stroke_width(1), 8)
            }))?;
        }
        for (_, points) in lines.references {
            chart.draw_series(DashedLineSeries::new(
                points.iter().copied(),
                8,
                5,
                BLACK.stroke_width(2),
            ))?;
            chart.draw_series(
                points
                    .iter()
                    .map(|p| Cross::new(*p, 6, BLACK.stroke_width(2))),
            )?;
        }
        Ok(())
    }

    fn bars<DB: DrawingBackend, Y: Axis>(
        &self,
        area: &DrawingArea<DB, Shift>,
        categories: &[String],
        series: &[(String, Vec<Option<Spread>>)],
        references: &[(String, Vec<BarMark>)],
        y_range: Y,
    ) -> Drawn
    where
        DB::ErrorType: 'static,
    {
        let n = categories.len().max(1) as f64;
        let mut chart = self.builder(area).build_cartesian_2d(0.0..n, y_range)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(categories.len() * 2 + 1)
            .x_label_formatter(&|x| {
                // Category i is centred at i + 0.5; other ticks stay blank.
                let centre = x - 0.5;
                let i = centre.round();
                if (centre - i).abs() < 0.01 && i >= 0.0 {
                    categories.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_label_formatter(&|v| tick(*v))
            .y_desc(&self.y_label)
            .draw()?;
        let width = 0.8 / series.len().max(1) as f64;
        let left_of = |s: usize, i: usize| i as f64 + 0.1 + s as f64 * width;
        for (s, (_, values)) in series.iter().enumerate() {
            let c = colour(s);
            let placed = values.iter().enumerate().filter_map(|(i, v)| {
                let left = left_of(s, i);
                v.map(|v| (left, left + width * 0.9, v))
            });
            chart.draw_series(placed.clone().map(|(left, right, v)| {
                Rectangle::new([(left, self.y_floor), (right, v.median)], c.filled())
            }))?;
            chart.draw_series(placed.map(|(left, right, v)| {
                let mid = (left + right) / 2.0;
                ErrorBar::new_vertical(mid, v.min, v.median, v.max, BLACK.stroke_width(1), 6)
            }))?;
        }
        for (_, marks) in references {
            chart.draw_series(marks.iter().map(|&(s, i, y)| {
                let left = left_of(s, i);
                PathElement::new([(left, y), (left + width * 0.9, y)], BLACK.stroke_width(3))
            }))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_whole_from_ten_up() {
        assert_eq!(tick(5000.0), "5000");
        assert_eq!(tick(12.7), "13");
        assert_eq!(tick(3.0), "3");
        assert_eq!(tick(0.25), "0.25");
    }

    #[test]
    fn lines_over_client_counts_draw_with_whiskers_and_the_legend_beside() {
        assert!(font_ready(), "fonts-dejavu-core is needed at {FONT}");
        let spread = |median: f64| Spread {
            median,
            min: median * 0.9,
            max: median * 1.2,
        };
        let chart = Chart::Lines {
            x_label: "concurrent clients".into(),
            series: vec![
                (
                    "proscenium:loops".into(),
                    vec![(100.0, spread(2.0)), (5000.0, spread(900.0))],
                ),
                (
                    "nginx".into(),
                    vec![(100.0, spread(1.5)), (1000.0, spread(0.0))],
                ),
            ],
            references: vec![("Leda Fig. 9a".into(), vec![(100.0, 3.0), (5000.0, 800.0)])],
        };
        let lines = svg("static: mean response time", "ms", &chart).unwrap();
        assert!(lines.contains("proscenium:loops") && lines.contains("nginx"));
        assert!(lines.contains("Leda Fig. 9a"), "the source's line is named");
        assert!(!lines.contains("log scale"), "a zero keeps y linear");
        let bars = Chart::Bars {
            categories: vec!["0 % heavy".into(), "15 % heavy".into()],
            series: vec![("node".into(), vec![Some(spread(3.0)), Some(spread(4000.0))])],
            references: vec![("Fig. 1b: Bk".into(), vec![(0, 1, 5.1)])],
        };
        assert!(
            svg("mix: p99 response time", "ms", &bars)
                .unwrap()
                .contains("log scale"),
            "bars spanning decades"
        );
    }

    #[test]
    fn axes_turn_logarithmic_past_their_spread() {
        assert!(spans(&[100.0, 1000.0, 5000.0], 10.0), "client counts");
        assert!(spans(&[100.0, 1000.0], 10.0), "a decade exactly");
        assert!(!spans(&[2000.0, 4000.0, 6000.0], 10.0), "a rate ramp");
        assert!(!spans(&[0.0, 5.0, 10.0], 10.0), "zero is left out");
    }
}
