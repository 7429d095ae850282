//! Plots, drawn with `plotters` to SVG (inlined in the report) and PNG (beside it):
//! lines of a metric against the steps' x value, or grouped bars by step label.
//!
//! Text needs a font to be measured and, in PNG, drawn: DejaVu Sans from the system
//! (Debian's `fonts-dejavu-core`), registered once.

use std::path::Path;
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;

/// Where the font is read from.
pub(crate) const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

const SIZE: (u32, u32) = (800, 480);

/// A chart's data.
#[derive(Debug, Clone)]
pub(crate) enum Chart {
    /// One line per series, over numeric x.
    Lines {
        x_label: String,
        series: Vec<(String, Vec<(f64, f64)>)>,
    },
    /// Bars per category, one per series.
    Bars {
        categories: Vec<String>,
        series: Vec<(String, Vec<Option<f64>>)>,
    },
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

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    y_label: &str,
    chart: &Chart,
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    match chart {
        Chart::Lines { x_label, series } => lines(root, title, x_label, y_label, series),
        Chart::Bars { categories, series } => bars(root, title, y_label, categories, series),
    }
    .map_err(|e| format!("drawing {title}: {e}"))
}

fn top(values: impl Iterator<Item = f64>) -> f64 {
    let max = values.fold(0.0_f64, f64::max);
    if max > 0.0 { max * 1.1 } else { 1.0 }
}

/// Whether values spread so wide that a linear axis would flatten all but the largest
/// (a saturated server's seconds against the others' milliseconds): then y is logarithmic.
fn wants_log(values: impl Iterator<Item = f64> + Clone) -> bool {
    let min = values
        .clone()
        .filter(|v| *v > 0.0)
        .fold(f64::INFINITY, f64::min);
    let max = values.fold(0.0_f64, f64::max);
    min.is_finite() && max / min > LOG_SPREAD
}

/// The spread of values above which a line chart's y axis turns logarithmic.
const LOG_SPREAD: f64 = 50.0;

fn lines<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> Result<(), Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    let ys = series.iter().flat_map(|(_, p)| p.iter().map(|p| p.1));
    let y_max = top(ys.clone());
    if wants_log(ys.clone()) {
        let y_min = ys.filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min) / 1.5;
        let y_label = format!("{y_label}, log scale");
        lines_on(
            root,
            title,
            x_label,
            &y_label,
            series,
            (y_min..y_max).log_scale(),
        )
    } else {
        lines_on(root, title, x_label, y_label, series, 0.0..y_max)
    }
}

fn lines_on<DB: DrawingBackend, Y>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[(String, Vec<(f64, f64)>)],
    y_range: Y,
) -> Result<(), Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let x_max = top(series.iter().flat_map(|(_, p)| p.iter().map(|p| p.0)));
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..x_max, y_range)?;
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .draw()?;
    for (i, (name, points)) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(
                points.iter().copied(),
                color.stroke_width(2),
            ))?
            .label(name)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
            });
        chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    Ok(())
}

fn bars<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    y_label: &str,
    categories: &[String],
    series: &[(String, Vec<Option<f64>>)],
) -> Result<(), Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    let y_max = top(series.iter().flat_map(|(_, v)| v.iter().flatten().copied()));
    let n = categories.len().max(1) as f64;
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..n, 0.0..y_max)?;
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
        .y_desc(y_label)
        .draw()?;
    let width = 0.8 / series.len().max(1) as f64;
    for (s, (name, values)) in series.iter().enumerate() {
        let color = Palette99::pick(s).to_rgba();
        let bars = values.iter().enumerate().filter_map(|(c, v)| {
            let left = c as f64 + 0.1 + s as f64 * width;
            v.map(|v| Rectangle::new([(left, 0.0), (left + width * 0.9, v)], color.filled()))
        });
        chart
            .draw_series(bars)?
            .label(name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()?;
    Ok(())
}
