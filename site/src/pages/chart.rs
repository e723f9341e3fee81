//! Small canvas charts (line and histogram) drawn with the 2D context: no chart library, no
//! fonts to ship, a few hundred bytes of wasm.

use wasm_bindgen::JsCast;

fn context(canvas: &web_sys::HtmlCanvasElement) -> Option<web_sys::CanvasRenderingContext2d> {
    canvas.get_context("2d").ok().flatten().and_then(|c| c.dyn_into().ok())
}

fn nice_max(v: f64) -> f64 {
    if v <= 0.0 {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * p).find(|x| *x >= v).unwrap_or(10.0 * p)
}

fn axes(ctx: &web_sys::CanvasRenderingContext2d, w: f64, h: f64, x_label: &str, y_max: f64, x_max: f64) {
    ctx.set_stroke_style_str("#888");
    ctx.set_fill_style_str("#444");
    ctx.set_font("11px sans-serif");
    ctx.begin_path();
    ctx.move_to(50.0, 10.0);
    ctx.line_to(50.0, h - 30.0);
    ctx.line_to(w - 10.0, h - 30.0);
    ctx.stroke();
    let _ = ctx.fill_text(&format!("{y_max}"), 4.0, 18.0);
    let _ = ctx.fill_text("0", 36.0, h - 32.0);
    let _ = ctx.fill_text(&format!("{x_max}"), w - 60.0, h - 14.0);
    let _ = ctx.fill_text(x_label, w / 2.0 - 40.0, h - 4.0);
}

/// One line of a [`lines`] chart: label, colour, points.
pub type Series<'a> = (&'a str, &'a str, Vec<(f64, f64)>);

/// Several lines on shared axes from 0.
pub fn lines(canvas: &web_sys::HtmlCanvasElement, series: &[Series<'_>], x_label: &str) {
    let Some(ctx) = context(canvas) else { return };
    let (w, h) = (canvas.width() as f64, canvas.height() as f64);
    ctx.clear_rect(0.0, 0.0, w, h);
    let all = series.iter().flat_map(|s| s.2.iter());
    let x_max = all.clone().map(|p| p.0).fold(0.0, f64::max);
    let y_max = nice_max(all.map(|p| p.1).fold(0.0, f64::max));
    axes(&ctx, w, h, x_label, y_max, (x_max * 10.0).round() / 10.0);
    let sx = |x: f64| 50.0 + x / x_max.max(1e-9) * (w - 60.0);
    let sy = |y: f64| (h - 30.0) - y / y_max * (h - 40.0);
    ctx.set_line_width(2.0);
    for (i, (label, colour, points)) in series.iter().enumerate() {
        ctx.set_stroke_style_str(colour);
        ctx.begin_path();
        for (j, (x, y)) in points.iter().enumerate() {
            if j == 0 {
                ctx.move_to(sx(*x), sy(*y));
            } else {
                ctx.line_to(sx(*x), sy(*y));
            }
        }
        ctx.stroke();
        ctx.set_fill_style_str(colour);
        let _ = ctx.fill_text(label, 60.0 + i as f64 * 110.0, 22.0);
    }
    ctx.set_line_width(1.0);
}

/// One bar per label (e.g. each GPU's SM clock), with the value printed on it.
pub fn bars(canvas: &web_sys::HtmlCanvasElement, items: &[(String, f64)], y_label: &str) {
    let Some(ctx) = context(canvas) else { return };
    let (w, h) = (canvas.width() as f64, canvas.height() as f64);
    ctx.clear_rect(0.0, 0.0, w, h);
    let top = nice_max(items.iter().map(|i| i.1).fold(0.0, f64::max));
    axes(&ctx, w, h, y_label, top, items.len() as f64);
    let bw = (w - 60.0) / items.len().max(1) as f64;
    for (i, (label, v)) in items.iter().enumerate() {
        let bh = v / top * (h - 40.0);
        let x = 50.0 + i as f64 * bw;
        ctx.set_fill_style_str("#5b8def");
        ctx.fill_rect(x + 4.0, h - 30.0 - bh, bw - 8.0, bh);
        ctx.set_fill_style_str("#333");
        let _ = ctx.fill_text(&format!("{v:.0}"), x + 6.0, h - 34.0 - bh);
        let _ = ctx.fill_text(label, x + 6.0, h - 16.0);
    }
}

/// A line through `(x, y)` points, axes from 0.
pub fn line(canvas: &web_sys::HtmlCanvasElement, points: &[(f64, f64)], x_label: &str) {
    let Some(ctx) = context(canvas) else { return };
    let (w, h) = (canvas.width() as f64, canvas.height() as f64);
    ctx.clear_rect(0.0, 0.0, w, h);
    let x_max = points.iter().map(|p| p.0).fold(0.0, f64::max);
    let y_max = nice_max(points.iter().map(|p| p.1).fold(0.0, f64::max));
    axes(&ctx, w, h, x_label, y_max, x_max);
    let sx = |x: f64| 50.0 + x / x_max.max(1e-9) * (w - 60.0);
    let sy = |y: f64| (h - 30.0) - y / y_max * (h - 40.0);
    ctx.set_stroke_style_str("#5b8def");
    ctx.set_line_width(2.0);
    ctx.begin_path();
    for (i, (x, y)) in points.iter().enumerate() {
        if i == 0 {
            ctx.move_to(sx(*x), sy(*y));
        } else {
            ctx.line_to(sx(*x), sy(*y));
        }
    }
    ctx.stroke();
    ctx.set_line_width(1.0);
}

/// A histogram of `values` in `bins` equal bins from 0 to the maximum.
pub fn histogram(canvas: &web_sys::HtmlCanvasElement, values: &[f64], bins: usize, x_label: &str) {
    let Some(ctx) = context(canvas) else { return };
    let (w, h) = (canvas.width() as f64, canvas.height() as f64);
    ctx.clear_rect(0.0, 0.0, w, h);
    let max = values.iter().copied().fold(0.0, f64::max).max(1e-9);
    let mut counts = vec![0usize; bins.max(1)];
    for v in values {
        let i = ((v / max) * bins as f64).floor() as usize;
        counts[i.min(bins - 1)] += 1;
    }
    let top = nice_max(counts.iter().copied().max().unwrap_or(0) as f64);
    axes(&ctx, w, h, x_label, top, (max * 10.0).round() / 10.0);
    let bw = (w - 60.0) / bins as f64;
    ctx.set_fill_style_str("#5b8def");
    for (i, c) in counts.iter().enumerate() {
        let bh = *c as f64 / top * (h - 40.0);
        ctx.fill_rect(50.0 + i as f64 * bw + 1.0, h - 30.0 - bh, bw - 2.0, bh);
    }
}
