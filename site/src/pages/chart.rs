//! The site's charts (lines, bars, histogram) drawn with plotters on a canvas
//! (plotters-canvas). Text is laid out and drawn by the browser, so Chinese labels need no
//! fonts shipped (plotters' `ttf` feature is off).

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters_canvas::CanvasBackend;

type Area = DrawingArea<CanvasBackend, Shift>;
type Drawn = DrawResult<(), CanvasBackend>;

const ACCENT: RGBColor = RGBColor(0x5b, 0x8d, 0xef);
const INK: RGBColor = RGBColor(0x44, 0x44, 0x44);
const AXIS: RGBColor = RGBColor(0x88, 0x88, 0x88);
const GRID: RGBColor = RGBColor(0xee, 0xee, 0xee);

/// A cleared canvas to draw on (cleared, not filled: the page's background shows through).
fn area(canvas: &web_sys::HtmlCanvasElement) -> Option<Area> {
    let backend = CanvasBackend::with_canvas_object(canvas.clone())?;
    if let Ok(Some(ctx)) = canvas.get_context("2d") {
        use wasm_bindgen::JsCast;
        if let Ok(ctx) = ctx.dyn_into::<web_sys::CanvasRenderingContext2d>() {
            ctx.clear_rect(0.0, 0.0, canvas.width() as f64, canvas.height() as f64);
        }
    }
    Some(backend.into_drawing_area())
}

/// The browser's sans-serif at `size` px in the text colour (the family as an enum: parsing
/// the name `"sans-serif"` would pull in Unicode case tables).
fn font(size: u32) -> TextStyle<'static> {
    (FontFamily::SansSerif, size).into_font().color(&INK)
}

/// `#rrggbb` → colour; anything else is the accent blue.
fn colour(hex: &str) -> RGBColor {
    let hex = hex.trim_start_matches('#');
    let byte = |i: usize| hex.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok());
    match (hex.len(), byte(0), byte(2), byte(4)) {
        (6, Some(r), Some(g), Some(b)) => RGBColor(r, g, b),
        _ => ACCENT,
    }
}

/// The smallest 1, 2 or 5 × 10ⁿ at or above `v` (1 when there is nothing to show).
fn nice_max(v: f64) -> f64 {
    if v.is_nan() || v <= 0.0 {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * p).find(|x| *x >= v).unwrap_or(10.0 * p)
}

/// A positive upper bound for an axis that starts at 0.
fn upper(v: f64) -> f64 {
    if v.is_finite() && v > 0.0 { v } else { 1.0 }
}

/// Tick labels without trailing zeros: 0, 2.5, 1500, 0.25.
fn tick(v: f64) -> String {
    let a = v.abs();
    let s = if a == 0.0 || a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    };
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s }
}

/// The one coordinate system every chart uses (one copy of plotters' generic code in the wasm).
type Chart<'a> = ChartContext<'a, CanvasBackend, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Axes, grid, tick labels and the axis text; `x_ticks` formats the x tick labels.
fn frame<'a>(
    root: &'a Area,
    x: std::ops::Range<f64>,
    y_max: f64,
    x_desc: &str,
    x_ticks: &dyn Fn(&f64) -> String,
    (x_labels, y_labels): (usize, usize),
) -> DrawResult<Chart<'a>, CanvasBackend> {
    let mut chart = ChartBuilder::on(root)
        .margin_top(12)
        .margin_right(16)
        .margin_left(6)
        .margin_bottom(4)
        .x_label_area_size(36)
        .y_label_area_size(44)
        .build_cartesian_2d(x, 0f64..y_max)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(TRANSPARENT)
        .bold_line_style(GRID)
        .axis_style(AXIS)
        .x_labels(x_labels)
        .y_labels(y_labels)
        .x_label_formatter(x_ticks)
        .y_label_formatter(&|v| tick(*v))
        .label_style(font(11))
        .axis_desc_style(font(12))
        .x_desc(x_desc)
        .draw()?;
    Ok(chart)
}

/// One line of a [`lines`] chart: label, colour, points.
pub type Series<'a> = (&'a str, &'a str, Vec<(f64, f64)>);

fn draw_lines(root: &Area, series: &[Series<'_>], x_label: &str, legend: bool) -> Drawn {
    let all = series.iter().flat_map(|s| s.2.iter());
    let x_max = upper(all.clone().map(|p| p.0).fold(0.0, f64::max));
    let y_max = nice_max(all.map(|p| p.1).fold(0.0, f64::max));
    let mut chart = frame(root, 0.0..x_max, y_max, x_label, &|v| tick(*v), (6, 6))?;
    for (_, hex, points) in series {
        let line = PathElement::new(points.clone(), colour(hex).stroke_width(2));
        chart.draw_series(std::iter::once(line))?;
    }
    if legend {
        draw_legend(root, &chart, series)?;
    }
    root.present()
}

/// The legend, drawn by hand in the plot's top-right corner (plotters' own legend pulls in
/// Unicode case tables for its default font name: kilobytes for a box with two lines).
fn draw_legend(root: &Area, chart: &Chart<'_>, series: &[Series<'_>]) -> Drawn {
    let font = font(11).pos(Pos::new(HPos::Left, VPos::Center));
    let (xs, ys) = chart.plotting_area().get_pixel_range();
    let text_w = series.iter().map(|s| root.estimate_text_size(s.0, &font).map(|(w, _)| w as i32));
    let text_w = text_w.collect::<Result<Vec<_>, _>>()?.into_iter().max().unwrap_or(0);
    let (row, sample) = (16, 16);
    let (w, h) = (6 + sample + 6 + text_w + 6, 4 + row * series.len() as i32);
    let (x0, y0) = (xs.end - w - 6, ys.start + 6);
    root.draw(&Rectangle::new([(x0, y0), (x0 + w, y0 + h)], WHITE.mix(0.85).filled()))?;
    root.draw(&Rectangle::new([(x0, y0), (x0 + w, y0 + h)], AXIS))?;
    for (i, (label, hex, _)) in series.iter().enumerate() {
        let y = y0 + 2 + row * i as i32 + row / 2;
        root.draw(&PathElement::new(vec![(x0 + 6, y), (x0 + 6 + sample, y)], colour(hex).stroke_width(2)))?;
        root.draw(&Text::new(*label, (x0 + 6 + sample + 6, y), font.clone()))?;
    }
    Ok(())
}

/// Several lines on shared axes from 0, with a legend.
pub fn lines(canvas: &web_sys::HtmlCanvasElement, series: &[Series<'_>], x_label: &str) {
    if let Some(root) = area(canvas) {
        let _ = draw_lines(&root, series, x_label, true);
    }
}

/// A line through `(x, y)` points, axes from 0.
pub fn line(canvas: &web_sys::HtmlCanvasElement, points: &[(f64, f64)], x_label: &str) {
    if let Some(root) = area(canvas) {
        let _ = draw_lines(&root, &[("", "#5b8def", points.to_vec())], x_label, false);
    }
}

fn draw_bars(root: &Area, items: &[(String, f64)], y_label: &str, zeros: bool) -> Drawn {
    let n = items.len().max(1);
    let top = nice_max(items.iter().map(|i| i.1).fold(0.0, f64::max));
    // Bar i is centred on x = i, so the integer ticks fall under the bars and carry their names.
    let name = |v: &f64| {
        let i = v.round();
        let hit = (v - i).abs() < 1e-6 && i >= 0.0;
        hit.then(|| items.get(i as usize).map(|it| it.0.clone())).flatten().unwrap_or_default()
    };
    let mut chart = frame(root, -0.5..n as f64 - 0.5, top, y_label, &name, (n, 6))?;
    chart.draw_series(items.iter().enumerate().map(|(i, (_, v))| {
        let mut bar = Rectangle::new([(i as f64 - 0.5, 0.0), (i as f64 + 0.5, *v)], ACCENT.filled());
        bar.set_margin(0, 0, 6, 6);
        bar
    }))?;
    let value_font = font(11).pos(Pos::new(HPos::Center, VPos::Bottom));
    chart.draw_series(
        items
            .iter()
            .enumerate()
            .filter(|(_, (_, v))| zeros || *v != 0.0)
            .map(|(i, (_, v))| Text::new(format!("{v:.0}"), (i as f64, *v), value_font.clone())),
    )?;
    root.present()
}

/// One bar per label (e.g. each GPU's SM clock), with the value printed on it.
pub fn bars(canvas: &web_sys::HtmlCanvasElement, items: &[(String, f64)], y_label: &str) {
    if let Some(root) = area(canvas) {
        let _ = draw_bars(&root, items, y_label, true);
    }
}

/// Bars for counts per day (the flashcards' reviews and forecast): empty days print no value.
pub fn day_bars(canvas: &web_sys::HtmlCanvasElement, items: &[(String, f64)], y_label: &str) {
    if let Some(root) = area(canvas) {
        let _ = draw_bars(&root, items, y_label, false);
    }
}

fn draw_histogram(root: &Area, values: &[f64], bins: usize, x_label: &str) -> Drawn {
    let bins = bins.max(1);
    let max = upper(values.iter().copied().fold(0.0, f64::max));
    let width = max / bins as f64;
    let mut counts = vec![0u32; bins];
    for v in values {
        let i = ((v / max) * bins as f64).floor().max(0.0) as usize;
        counts[i.min(bins - 1)] += 1;
    }
    let top = nice_max(f64::from(counts.iter().copied().max().unwrap_or(0)));
    // Counts are whole: at most `top` steps, so every tick lands on an integer.
    let y_labels = (top as usize + 1).min(6);
    let mut chart = frame(root, 0.0..max, top, x_label, &|v| tick(*v), (6, y_labels))?;
    chart.draw_series(counts.iter().enumerate().filter(|(_, c)| **c > 0).map(|(i, c)| {
        let x0 = i as f64 * width;
        let mut bar = Rectangle::new([(x0, 0.0), (x0 + width, f64::from(*c))], ACCENT.filled());
        bar.set_margin(0, 0, 1, 1);
        bar
    }))?;
    root.present()
}

/// A histogram of `values` in `bins` equal bins from 0 to the maximum.
pub fn histogram(canvas: &web_sys::HtmlCanvasElement, values: &[f64], bins: usize, x_label: &str) {
    if let Some(root) = area(canvas) {
        let _ = draw_histogram(&root, values, bins, x_label);
    }
}
