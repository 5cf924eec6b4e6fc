//! The plots of every experiment: an experiment describes each as a
//! [`Figure`] (title, which way is better, axes with their units, the
//! data), and this module draws it as SVG, the same way for all.
//!
//! The rules every figure follows: one quantity per axis, its unit in the
//! axis label; a title of its own; "higher is better" or "lower is better"
//! in the subtitle; categories (configurations, kernels, workloads) as
//! horizontal bars, never joined by lines; lines only through ordered x
//! values (threads, body costs, stolen shares, load), each point labelled
//! where what it stands for is not on the axis; the legend above the plot,
//! where it covers no data, with the mark the data is drawn with; and the
//! Okabe-Ito colours (colour-blind safe) without their yellow, which
//! cannot be seen on white. A figure's first series is drawn in blue: the
//! experiments put bwos first.

use std::io;
use std::path::Path;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Which way a figure's quantity is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
}

impl Better {
    /// "higher is better" or "lower is better".
    pub fn describe(self) -> &'static str {
        match self {
            Better::Higher => "higher is better",
            Better::Lower => "lower is better",
        }
    }
}

/// One plot: drawn into `file` (a name, no directory).
#[derive(Debug, Clone)]
pub struct Figure {
    pub file: String,
    pub title: String,
    /// Which way the plotted quantity is better (the bars' length, the
    /// lines' height).
    pub better: Better,
    /// What else a reader needs: what a point or bar is, what the
    /// reference line means.
    pub note: String,
    pub chart: Chart,
}

impl Figure {
    /// The subtitle: which way is better, the note, and what the grey
    /// reference line stands for.
    pub fn subtitle(&self) -> String {
        let mut parts = vec![self.better.describe().to_string()];
        if !self.note.is_empty() {
            parts.push(self.note.clone());
        }
        let reference = match &self.chart {
            Chart::Lines { reference, .. } | Chart::Bars { reference, .. } => reference,
        };
        if let Some((at, meaning)) = reference {
            parts.push(format!("grey line at {}: {meaning}", format_number(*at)));
        }
        parts.join("; ")
    }
}

/// The data of a figure.
#[derive(Debug, Clone)]
pub enum Chart {
    /// Lines through points ordered by x.
    Lines {
        x_label: String,
        y_label: String,
        /// Tick labels at these x values instead of numbers (threads,
        /// body costs, drawn evenly spaced).
        x_ticks: Option<Vec<(f64, String)>>,
        series: Vec<Series>,
        /// A horizontal line and what it means (speedup 1: the serial
        /// time).
        reference: Option<(f64, String)>,
    },
    /// Horizontal bars: one group per category, one bar per series.
    Bars {
        value_label: String,
        categories: Vec<String>,
        series: Vec<BarSeries>,
        /// A vertical line and what it means.
        reference: Option<(f64, String)>,
    },
}

/// A line's points, each with an optional label drawn beside it.
#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64, Option<String>)>,
}

impl Series {
    /// A series of unlabelled points.
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points: points.into_iter().map(|(x, y)| (x, y, None)).collect(),
        }
    }
}

/// One bar per category (`None`: no bar).
#[derive(Debug, Clone)]
pub struct BarSeries {
    pub name: String,
    pub values: Vec<Option<f64>>,
}

impl BarSeries {
    pub fn new(name: impl Into<String>, values: Vec<Option<f64>>) -> BarSeries {
        BarSeries {
            name: name.into(),
            values,
        }
    }
}

/// Okabe and Ito's colour-blind-safe palette without its yellow: blue,
/// vermillion, bluish green, reddish purple, orange, sky blue, black.
pub const PALETTE: [RGBColor; 7] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
];

/// The colour of series `i`.
pub fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

const FONT: &str = "sans-serif";
const WIDTH: u32 = 960;
/// Title, subtitle and legend rows above the plot area.
const HEADER: u32 = 64;
const LEGEND_ROW: u32 = 24;

/// Rough width in pixels of `text` at `size` pixels (no font metrics in an
/// SVG without fonts: an average sans-serif glyph).
fn text_width(text: &str, size: u32) -> u32 {
    (text.chars().count() as f64 * f64::from(size) * 0.5).ceil() as u32
}

/// Legend entries laid out in rows across `width`: (row, x) per entry.
fn legend_layout(names: &[&str], width: u32) -> Vec<(u32, u32)> {
    let mut placed = Vec::new();
    let (mut row, mut x) = (0, 20);
    for name in names {
        let entry = 40 + text_width(name, 15) + 24;
        if x + entry > width && x > 20 {
            row += 1;
            x = 20;
        }
        placed.push((row, x));
        x += entry;
    }
    placed
}

/// Draws `figure` into `dir`; returns the path written.
pub fn draw(figure: &Figure, dir: &Path) -> io::Result<std::path::PathBuf> {
    let path = dir.join(&figure.file);
    let result = match &figure.chart {
        Chart::Lines {
            x_label,
            y_label,
            x_ticks,
            series,
            reference,
        } => draw_lines(
            &path,
            figure,
            x_label,
            y_label,
            x_ticks.as_deref(),
            series,
            reference.as_ref(),
        ),
        Chart::Bars {
            value_label,
            categories,
            series,
            reference,
        } => draw_bars(
            &path,
            figure,
            value_label,
            categories,
            series,
            reference.as_ref(),
        ),
    };
    result.map_err(|e| io::Error::other(format!("{}: {e}", path.display())))?;
    Ok(path)
}

type DrawResult = Result<(), Box<dyn std::error::Error>>;

/// The header: title, subtitle and the legend, whose entries `swatch`
/// draws at their place.
fn header<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    figure: &Figure,
    names: &[&str],
    swatch: impl Fn(&DrawingArea<DB, plotters::coord::Shift>, usize, (i32, i32)) -> DrawResult,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    area.draw(&Text::new(
        figure.title.clone(),
        (20, 10),
        (FONT, 21).into_font().style(FontStyle::Bold),
    ))?;
    area.draw(&Text::new(
        figure.subtitle(),
        (20, 38),
        (FONT, 15).into_font().color(&RGBColor(60, 60, 60)),
    ))?;
    for (i, (name, (row, x))) in names.iter().zip(legend_layout(names, WIDTH)).enumerate() {
        let y = (HEADER + row * LEGEND_ROW + 10) as i32;
        swatch(area, i, (x as i32, y))?;
        area.draw(&Text::new(
            name.to_string(),
            (x as i32 + 40, y),
            (FONT, 15)
                .into_font()
                .into_text_style(area)
                .pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
    }
    Ok(())
}

fn legend_rows(names: &[&str]) -> u32 {
    legend_layout(names, WIDTH)
        .last()
        .map_or(0, |(row, _)| row + 1)
}

/// Where a point's label is drawn, in pixels.
#[derive(Debug, Clone, Copy)]
struct LabelBox {
    left: i32,
    top: i32,
    width: i32,
}

impl LabelBox {
    const HEIGHT: i32 = 15;

    /// The four places beside the point at (`x`, `y`) for a label
    /// `width` wide: above right, below right, above left, below left.
    fn around(x: i32, y: i32, width: i32) -> [LabelBox; 4] {
        let (right, left) = (x + 7, x - 7 - width);
        let (above, below) = (y - 5 - Self::HEIGHT, y + 5);
        [(right, above), (right, below), (left, above), (left, below)].map(|(left, top)| LabelBox {
            left,
            top,
            width,
        })
    }

    fn overlaps(&self, other: &LabelBox) -> bool {
        self.left < other.left + other.width
            && other.left < self.left + self.width
            && self.top < other.top + Self::HEIGHT
            && other.top < self.top + Self::HEIGHT
    }

    fn inside(&self, area: &(std::ops::Range<i32>, std::ops::Range<i32>)) -> bool {
        area.0.start <= self.left
            && self.left + self.width <= area.0.end
            && area.1.start <= self.top
            && self.top + Self::HEIGHT <= area.1.end
    }
}

/// The largest of `values` and the reference line's value (at least the
/// smallest positive number: an axis needs a range).
fn largest(values: impl Iterator<Item = f64>, reference: Option<&(f64, String)>) -> f64 {
    values
        .chain(reference.map(|r| r.0))
        .fold(0.0, f64::max)
        .max(f64::MIN_POSITIVE)
}

/// The plot area's margins and label areas, `label_width` pixels of
/// labels left of it.
fn builder<'a, 'b, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, plotters::coord::Shift>,
    label_width: u32,
) -> ChartBuilder<'a, 'b, DB> {
    let mut builder = ChartBuilder::on(area);
    builder
        .margin_left(10)
        .margin_right(30)
        .margin_bottom(10)
        .x_label_area_size(55)
        .y_label_area_size(label_width);
    builder
}

fn draw_lines(
    path: &Path,
    figure: &Figure,
    x_label: &str,
    y_label: &str,
    x_ticks: Option<&[(f64, String)]>,
    series: &[Series],
    reference: Option<&(f64, String)>,
) -> DrawResult {
    let names: Vec<&str> = series.iter().map(|s| s.name.as_str()).collect();
    let top = HEADER + legend_rows(&names) * LEGEND_ROW + 10;
    let root = SVGBackend::new(path, (WIDTH, top + 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let (head, body) = root.split_vertically(top);
    // The legend shows what the data is drawn with: a line through dots,
    // or a dot alone for a series of one point.
    header(&head, figure, &names, |area, i, (x, y)| {
        if series[i].points.len() > 1 {
            let style = colour(i).stroke_width(3);
            area.draw(&PathElement::new([(x, y), (x + 30, y)], style))?;
        }
        area.draw(&Circle::new((x + 15, y), 5, colour(i).filled()))?;
        Ok(())
    })?;
    let points = series.iter().flat_map(|s| s.points.iter());
    let (mut x_min, mut x_max) = points
        .clone()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), p| {
            (lo.min(p.0), hi.max(p.0))
        });
    if let Some(ticks) = x_ticks {
        for (x, _) in ticks {
            x_min = x_min.min(*x);
            x_max = x_max.max(*x);
        }
    }
    if !x_min.is_finite() {
        (x_min, x_max) = (0.0, 1.0);
    }
    // A numeric axis of positive quantities starts at 0, so that distances
    // read as ratios.
    if x_ticks.is_none() && x_min > 0.0 {
        x_min = 0.0;
    }
    let pad = if x_ticks.is_some() {
        ((x_max - x_min) * 0.08).max(0.3)
    } else {
        (x_max - x_min) * 0.03
    };
    let y_max = largest(points.map(|p| p.1), reference);
    let mut chart =
        builder(&body, 80).build_cartesian_2d(x_min - pad..x_max + pad, 0.0..y_max * 1.12)?;
    let tick_label = |x: &f64| -> String {
        match x_ticks {
            Some(ticks) => ticks
                .iter()
                .find(|(at, _)| (at - x).abs() < 1e-6)
                .map(|(_, label)| label.clone())
                .unwrap_or_default(),
            None => format_number(*x),
        }
    };
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(x_label)
        .y_desc(y_label)
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 17))
        .y_label_formatter(&|y| format_number(*y))
        .x_label_formatter(&tick_label)
        .light_line_style(RGBColor(242, 242, 242));
    if let Some(ticks) = x_ticks {
        // Ticks at every half step, the labelled ones on the values; no
        // grid lines across, which would stand at unlabelled ticks too.
        mesh.x_labels(ticks.len() * 4 + 1).disable_x_mesh();
    }
    mesh.draw()?;
    if let Some((at, _)) = reference {
        chart.draw_series(LineSeries::new(
            [(x_min - pad, *at), (x_max + pad, *at)],
            RGBColor(110, 110, 110).stroke_width(1),
        ))?;
    }
    for (i, line) in series.iter().enumerate() {
        let colour = colour(i);
        let xy: Vec<(f64, f64)> = line.points.iter().map(|p| (p.0, p.1)).collect();
        chart.draw_series(LineSeries::new(xy.iter().copied(), colour.stroke_width(2)))?;
        chart.draw_series(xy.iter().map(|&p| Circle::new(p, 5, colour.filled())))?;
    }
    // Point labels after every line, so that no line is drawn over them.
    // A label equal to one already drawn close by is left out; the others
    // take the first free place of four around their point (above or
    // below, right or left), or above right if none is free.
    let plot_area = chart.plotting_area().get_pixel_range();
    let mut taken: Vec<LabelBox> = Vec::new();
    let mut drawn: Vec<(i32, i32, &str)> = Vec::new();
    for (i, line) in series.iter().enumerate() {
        for (x, y, label) in &line.points {
            let Some(label) = label else { continue };
            let (px, py) = chart.backend_coord(&(*x, *y));
            if drawn.iter().any(|&(qx, qy, text)| {
                text == label && (qx - px).abs() < 60 && (qy - py).abs() < 16
            }) {
                continue;
            }
            drawn.push((px, py, label));
            let width = text_width(label, 13) as i32;
            let places = LabelBox::around(px, py, width);
            let place = places
                .iter()
                .find(|b| b.inside(&plot_area) && taken.iter().all(|t| !t.overlaps(b)))
                .unwrap_or(&places[0]);
            taken.push(*place);
            chart.draw_series([EmptyElement::at((*x, *y))
                + Text::new(
                    label.clone(),
                    (place.left - px, place.top - py),
                    (FONT, 13)
                        .into_font()
                        .color(&colour(i))
                        .pos(Pos::new(HPos::Left, VPos::Top)),
                )])?;
        }
    }
    root.present()?;
    Ok(())
}

fn draw_bars(
    path: &Path,
    figure: &Figure,
    value_label: &str,
    categories: &[String],
    series: &[BarSeries],
    reference: Option<&(f64, String)>,
) -> DrawResult {
    let names: Vec<&str> = series.iter().map(|s| s.name.as_str()).collect();
    let top = HEADER + legend_rows(&names) * LEGEND_ROW + 10;
    let bar_height = 18;
    let group_height = bar_height * series.len().max(1) as u32 + 14;
    let plot_height = group_height * categories.len().max(1) as u32 + 70;
    let label_width = categories
        .iter()
        .map(|c| text_width(c, 15))
        .max()
        .unwrap_or(0)
        + 20;
    let root = SVGBackend::new(path, (WIDTH, top + plot_height)).into_drawing_area();
    root.fill(&WHITE)?;
    let (head, body) = root.split_vertically(top);
    header(&head, figure, &names, |area, i, (x, y)| {
        area.draw(&Rectangle::new(
            [(x + 5, y - 7), (x + 25, y + 7)],
            colour(i).filled(),
        ))?;
        Ok(())
    })?;
    let groups = categories.len().max(1) as f64;
    let values = series.iter().flat_map(|s| s.values.iter().flatten());
    let v_max = largest(values.copied(), reference);
    // Room right of the longest bar for its value.
    let mut chart =
        builder(&body, label_width).build_cartesian_2d(0.0..v_max * 1.18, 0.0..groups)?;
    // Category `i` is the band from groups - i - 1 to groups - i: the
    // first category on top.
    let band = |i: usize| groups - i as f64 - 1.0;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(categories.len() * 2 + 1)
        .y_label_formatter(&|y| {
            let centre = y - y.floor();
            if (centre - 0.5).abs() < 1e-6 {
                let i = (groups - 1.0 - y.floor()).round();
                (i >= 0.0)
                    .then(|| categories.get(i as usize).cloned())
                    .flatten()
                    .unwrap_or_default()
            } else {
                String::new()
            }
        })
        .x_label_formatter(&|x| format_number(*x))
        .x_desc(value_label)
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 17))
        .light_line_style(RGBColor(242, 242, 242))
        .draw()?;
    let slot = 0.8 / series.len().max(1) as f64;
    for (s, bars) in series.iter().enumerate() {
        let colour = colour(s);
        for (i, value) in bars.values.iter().enumerate() {
            let Some(value) = value.filter(|v| v.is_finite()) else {
                continue;
            };
            let high = band(i) + 0.9 - s as f64 * slot;
            let low = high - slot * 0.85;
            chart.draw_series([Rectangle::new([(0.0, low), (value, high)], colour.filled())])?;
            chart.draw_series([EmptyElement::at((value, (low + high) / 2.0))
                + Text::new(
                    format_number(value),
                    (4, 0),
                    (FONT, 12)
                        .into_font()
                        .color(&BLACK)
                        .pos(Pos::new(HPos::Left, VPos::Center)),
                )])?;
        }
    }
    if let Some((at, _)) = reference {
        chart.draw_series(LineSeries::new(
            [(*at, 0.0), (*at, groups)],
            RGBColor(90, 90, 90).stroke_width(1),
        ))?;
    }
    root.present()?;
    Ok(())
}

/// `n` with thousands separators: 2,000,000.
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// A number with three significant digits at most, no trailing zeros.
pub fn format_number(value: f64) -> String {
    if value == 0.0 || !value.is_finite() {
        return if value == 0.0 {
            "0".into()
        } else {
            String::new()
        };
    }
    let magnitude = value.abs().log10().floor() as i32;
    let decimals = (2 - magnitude).clamp(0, 6) as usize;
    let text = format!("{value:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_three_significant_digits() {
        assert_eq!(format_number(1234.6), "1235");
        assert_eq!(format_number(12.345), "12.3");
        assert_eq!(format_number(1.0), "1");
        assert_eq!(format_number(0.012345), "0.0123");
        assert_eq!(format_number(0.0), "0");
        assert_eq!(thousands(2_000_000), "2,000,000");
        assert_eq!(thousands(200), "200");
    }

    /// A label takes the first free place around its point.
    #[test]
    fn labels_take_free_places() {
        let first = LabelBox::around(100, 100, 50)[0];
        let places = LabelBox::around(110, 100, 50);
        assert!(places[0].overlaps(&first));
        assert!(!places[1].overlaps(&first));
        assert!(first.inside(&(0..200, 0..200)));
        assert!(!first.inside(&(0..120, 0..200)));
    }

    /// Entries that do not fit one row go to the next; none starts past
    /// the width.
    #[test]
    fn legends_wrap() {
        let names = ["a long series name"; 8];
        let placed = legend_layout(&names, 600);
        assert!(placed.iter().any(|&(row, _)| row > 0));
        assert!(placed.iter().all(|&(_, x)| x < 600));
    }

    /// Both kinds draw into a file with the title, the direction and
    /// every legend name in it.
    #[test]
    fn figures_carry_title_direction_and_legend() {
        let dir = std::env::temp_dir().join(format!("bwos-bench-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let lines = Figure {
            file: "lines.svg".into(),
            title: "A title".into(),
            better: Better::Higher,
            note: "each point: a share".into(),
            chart: Chart::Lines {
                x_label: "x (µs)".into(),
                y_label: "y (req/s)".into(),
                x_ticks: Some(vec![(0.0, "0.1 µs".into()), (1.0, "1 µs".into())]),
                series: vec![Series {
                    name: "bwos".into(),
                    points: vec![(0.0, 1.0, Some("10%".into())), (1.0, 2.0, None)],
                }],
                reference: Some((1.0, "serial".into())),
            },
        };
        let bars = Figure {
            file: "bars.svg".into(),
            title: "Bars".into(),
            better: Better::Lower,
            note: String::new(),
            chart: Chart::Bars {
                value_label: "time (ms)".into(),
                categories: vec!["fib".into(), "tree".into()],
                series: vec![
                    BarSeries::new("bwos", vec![Some(1.0), None]),
                    BarSeries::new("rayon", vec![Some(2.0), Some(3.0)]),
                ],
                reference: None,
            },
        };
        let lines_svg = std::fs::read_to_string(draw(&lines, &dir).unwrap()).unwrap();
        let bars_svg = std::fs::read_to_string(draw(&bars, &dir).unwrap()).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        for text in [
            "A title",
            "higher is better; each point: a share",
            "bwos",
            "10%",
        ] {
            assert!(lines_svg.contains(text), "{text} missing");
        }
        for text in ["Bars", "lower is better", "rayon", "tree"] {
            assert!(bars_svg.contains(text), "{text} missing");
        }
    }
}
