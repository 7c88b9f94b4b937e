//! Drawing with plotters into SVG strings: grouped bars or dots by category,
//! and time lines in stacked panels. Each function returns one `<svg>`.
//!
//! plotters runs here without a font backend: its SVG backend writes text as
//! SVG `<text>` for the browser to render, and only estimates text widths for
//! layout. Where the estimate matters (legends, category labels) this module
//! lays text out itself from an average character width.

use super::fmt::wrap;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Width of every chart, in SVG pixels (the page scales them).
pub const WIDTH: u32 = 660;
const FONT: &str = "sans-serif";
/// Average width of a character of the legend and category labels (13 px
/// sans-serif), for layout estimates.
const CHAR_W: f64 = 6.6;
const TITLE_H: u32 = 30;
const LEGEND_ROW_H: u32 = 21;
const Y_LABEL_W: u32 = 78;
const GRAY: RGBColor = RGBColor(110, 110, 110);

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// How one series looks, and its legend text.
#[derive(Clone, Debug)]
pub struct SeriesStyle {
    pub label: String,
    pub color: RGBColor,
    /// Relaxed-durability runs are drawn dashed in line charts.
    pub dashed: bool,
}

/// One series' values within a category, or what to print instead:
/// [`NOT_REPORTED`] where the target does not report the figure (the chart
/// names those targets), or why the run has no value (`"no writes"`).
pub struct Slot {
    pub series: usize,
    pub values: Result<Vec<f64>, &'static str>,
}

/// What a slot shows for a figure its target does not report.
pub const NOT_REPORTED: &str = "n/a";

/// One category (a workload) of a grouped chart.
pub struct Group {
    pub label: String,
    pub slots: Vec<Slot>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// One bar per slot (the slot's first value).
    Bars,
    /// A dot per value (per session) and a tick at their mean.
    Dots,
}

pub struct Categorical<'a> {
    pub title: &'a str,
    pub y_desc: &'a str,
    pub groups: &'a [Group],
    pub series: &'a [SeriesStyle],
    pub mark: Mark,
    pub fmt: fn(f64) -> String,
}

/// A line of a time chart.
pub struct Line {
    pub series: usize,
    pub points: Vec<(f64, f64)>,
    /// Mark and label the highest point.
    pub peak: bool,
}

/// One panel (y axis) of a time chart.
pub struct Panel {
    pub y_desc: String,
    pub lines: Vec<Line>,
    /// What is missing from the panel: said under the legend (once for all
    /// panels when they say the same).
    pub note: Option<String>,
    pub fmt: fn(f64) -> String,
    /// Levels drawn across the panel (series, value): a product's own
    /// high-water mark, which sees moments the samples miss.
    pub marks: Vec<(usize, f64)>,
}

/// A drawn chart: one `<svg>` element, and whether its value (or time)
/// axis came out logarithmic.
pub struct Drawn {
    pub svg: String,
    pub log: bool,
}

pub struct Timeline<'a> {
    pub title: &'a str,
    pub panels: &'a [Panel],
    pub series: &'a [SeriesStyle],
}

fn text_style(size: u32, color: RGBColor, h: HPos, v: VPos) -> TextStyle<'static> {
    TextStyle {
        font: (FONT, size).into_font(),
        color: color.to_backend_color(),
        pos: Pos::new(h, v),
    }
}

/// Series indexes in the order given, without repeats.
fn used(indexes: impl Iterator<Item = usize>) -> Vec<usize> {
    let mut out = Vec::new();
    for i in indexes {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

/// Legend entries laid out in rows that fit the chart's width.
fn legend_rows(items: &[usize], series: &[SeriesStyle]) -> Vec<Vec<(usize, i32)>> {
    let avail = WIDTH as f64 - 20.0;
    let mut rows: Vec<Vec<(usize, i32)>> = Vec::new();
    let mut row = Vec::new();
    let mut x = 0.0;
    for &i in items {
        let w = 26.0 + series[i].label.chars().count() as f64 * CHAR_W + 14.0;
        if x + w > avail && !row.is_empty() {
            rows.push(std::mem::take(&mut row));
            x = 0.0;
        }
        row.push((i, x as i32));
        x += w;
    }
    if !row.is_empty() {
        rows.push(row);
    }
    rows
}

/// Draws the title and the legend ([`header_height`] tall).
fn header(
    root: &Area,
    title: &str,
    rows: &[Vec<(usize, i32)>],
    series: &[SeriesStyle],
    lines: bool,
    notes: &[String],
) -> Result<(), String> {
    root.fill(&WHITE).map_err(err)?;
    let bold = TextStyle::from((FONT, 20).into_font().style(FontStyle::Bold))
        .pos(Pos::new(HPos::Left, VPos::Top));
    root.draw(&Text::new(title.to_string(), (10, 7), bold))
        .map_err(err)?;
    for (r, row) in rows.iter().enumerate() {
        let y = (TITLE_H + LEGEND_ROW_H * r as u32) as i32 + 9;
        for &(i, x) in row {
            let s = &series[i];
            let x = x + 10;
            let style = ShapeStyle::from(&s.color).stroke_width(3);
            if lines && s.dashed {
                root.draw(&PathElement::new(vec![(x, y), (x + 7, y)], style))
                    .map_err(err)?;
                root.draw(&PathElement::new(vec![(x + 12, y), (x + 19, y)], style))
                    .map_err(err)?;
            } else if lines {
                root.draw(&PathElement::new(vec![(x, y), (x + 19, y)], style))
                    .map_err(err)?;
            } else {
                root.draw(&Rectangle::new(
                    [(x, y - 5), (x + 19, y + 5)],
                    s.color.filled(),
                ))
                .map_err(err)?;
            }
            root.draw(&Text::new(
                s.label.clone(),
                (x + 25, y),
                text_style(16, BLACK, HPos::Left, VPos::Center),
            ))
            .map_err(err)?;
        }
    }
    let y0 = (TITLE_H + LEGEND_ROW_H * rows.len() as u32) as i32 + 4;
    for (i, line) in notes.iter().enumerate() {
        root.draw(&Text::new(
            line.clone(),
            (10, y0 + NOTE_H as i32 * i as i32),
            text_style(15, GRAY, HPos::Left, VPos::Top),
        ))
        .map_err(err)?;
    }
    Ok(())
}

const NOTE_H: u32 = 18;

fn header_height(rows: usize, notes: usize) -> u32 {
    TITLE_H + LEGEND_ROW_H * rows as u32 + NOTE_H * notes as u32 + 8
}

/// Notes wrapped to the chart's width.
fn note_lines(notes: &[String]) -> Vec<String> {
    // Notes are smaller than the legend: about 6 px a character.
    let per_line = ((WIDTH as f64 - 20.0) / 6.0) as usize;
    notes.iter().flat_map(|n| wrap(n, per_line)).collect()
}

/// A grouped chart: a category per workload, a slot per series.
pub fn categorical(spec: &Categorical) -> Result<Drawn, String> {
    let series_used = used(
        spec.groups
            .iter()
            .flat_map(|g| g.slots.iter().map(|s| s.series)),
    );
    let rows = legend_rows(&series_used, spec.series);
    let missing = used(
        spec.groups
            .iter()
            .flat_map(|g| g.slots.iter())
            .filter(|s| s.values == Err(NOT_REPORTED))
            .map(|s| s.series),
    );
    let notes = if missing.is_empty() {
        Vec::new()
    } else {
        let names: Vec<&str> = missing
            .iter()
            .map(|&i| spec.series[i].label.as_str())
            .collect();
        note_lines(&[format!("n/a: not reported by {}", names.join(", "))])
    };
    let n = spec.groups.len().max(1);
    // Category labels wrap to the width of their group.
    let group_px = (WIDTH - Y_LABEL_W - 30) as f64 / n as f64;
    let per_line = ((group_px - 6.0) / CHAR_W).max(6.0) as usize;
    let labels: Vec<Vec<String>> = spec
        .groups
        .iter()
        .map(|g| wrap(&g.label, per_line))
        .collect();
    let label_lines = labels.iter().map(Vec::len).max().unwrap_or(1) as u32;
    let x_label_h = 14 + 17 * label_lines;
    let top = header_height(rows.len(), notes.len());
    let height = top + 270 + x_label_h;

    let values: Vec<f64> = spec
        .groups
        .iter()
        .flat_map(|g| g.slots.iter())
        .filter_map(|s| s.values.as_ref().ok())
        .flatten()
        .copied()
        .filter(|v| v.is_finite())
        .collect();
    let max = values.iter().copied().fold(0.0, f64::max);
    let min_pos = values
        .iter()
        .copied()
        .filter(|v| *v > 0.0)
        .fold(f64::INFINITY, f64::min);
    // A log axis when the values span more than ~1.5 decades, so a 400x
    // difference between modes leaves both visible; only when no value is 0.
    let log = !values.is_empty() && values.iter().all(|v| *v > 0.0) && max / min_pos > 30.0;

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        header(&root, spec.title, &rows, spec.series, false, &notes)?;
        let (_, area) = root.split_vertically(top);
        if log {
            let lo = 10f64.powf((min_pos.log10() - 0.05).floor());
            let hi = 10f64.powf((max * 2.0).log10().ceil());
            draw_categorical(
                &root,
                &area,
                (lo..hi).log_scale(),
                lo,
                spec,
                &labels,
                x_label_h,
            )?;
        } else {
            let hi = if max > 0.0 { max * 1.15 } else { 1.0 };
            draw_categorical(&root, &area, 0.0..hi, 0.0, spec, &labels, x_label_h)?;
        }
        root.present().map_err(err)?;
    }
    Ok(Drawn { svg, log })
}

fn draw_categorical<Y>(
    root: &Area,
    area: &Area,
    y: Y,
    baseline: f64,
    spec: &Categorical,
    labels: &[Vec<String>],
    x_label_h: u32,
) -> Result<(), String>
where
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let n = spec.groups.len().max(1) as f64;
    let mut chart = ChartBuilder::on(area)
        .margin_left(6)
        .margin_right(20)
        .margin_top(8)
        .x_label_area_size(x_label_h)
        .y_label_area_size(Y_LABEL_W)
        .build_cartesian_2d(0.0..n, y)
        .map_err(err)?;
    let fmt = spec.fmt;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_labels(7)
        .y_desc(spec.y_desc)
        .y_label_formatter(&|v| fmt(*v))
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 16))
        .light_line_style(TRANSPARENT)
        .draw()
        .map_err(err)?;
    let (y_lo, y_hi) = {
        let r = chart.y_range();
        (r.start, r.end)
    };
    for (gi, g) in spec.groups.iter().enumerate() {
        let g0 = gi as f64;
        if gi > 0 {
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(g0, y_lo), (g0, y_hi)],
                    RGBColor(200, 200, 200),
                )))
                .map_err(err)?;
        }
        let m = g.slots.len().max(1) as f64;
        let w = 0.84 / m;
        for (k, slot) in g.slots.iter().enumerate() {
            let x0 = g0 + 0.08 + k as f64 * w;
            let x1 = x0 + w * 0.86;
            let xc = (x0 + x1) / 2.0;
            let color = spec.series[slot.series].color;
            let vals = match &slot.values {
                Ok(v) => v,
                Err(why) => {
                    // Upright when it fits the slot, else rotated to read upwards.
                    let slot_px = chart.backend_coord(&(x1, baseline)).0
                        - chart.backend_coord(&(x0, baseline)).0;
                    let style = if slot_px as f64 >= why.chars().count() as f64 * 6.5 {
                        text_style(13, GRAY, HPos::Center, VPos::Bottom)
                    } else {
                        text_style(13, GRAY, HPos::Left, VPos::Center)
                            .transform(FontTransform::Rotate270)
                    };
                    let (px, py) = chart.backend_coord(&(xc, baseline));
                    root.draw(&Text::new(*why, (px, py - 3), style))
                        .map_err(err)?;
                    continue;
                }
            };
            match spec.mark {
                Mark::Bars => {
                    let Some(&v) = vals.first() else { continue };
                    chart
                        .draw_series(std::iter::once(Rectangle::new(
                            [(x0, baseline), (x1, v.max(baseline))],
                            color.filled(),
                        )))
                        .map_err(err)?;
                    // Values on the bars when there is room for them.
                    let bar_px = chart.backend_coord(&(x1, baseline)).0
                        - chart.backend_coord(&(x0, baseline)).0;
                    let label = fmt(v);
                    if bar_px as f64 >= label.chars().count() as f64 * 6.5 {
                        chart
                            .draw_series(std::iter::once(Text::new(
                                label,
                                (xc, v.max(baseline)),
                                text_style(13, BLACK, HPos::Center, VPos::Bottom),
                            )))
                            .map_err(err)?;
                    }
                }
                Mark::Dots => {
                    let nv = vals.len().max(1) as f64;
                    chart
                        .draw_series(vals.iter().enumerate().map(|(j, &v)| {
                            let x = x0 + (x1 - x0) * (j as f64 + 0.5) / nv;
                            Circle::new((x, v.max(baseline)), 3, color.mix(0.85).filled())
                        }))
                        .map_err(err)?;
                    if !vals.is_empty() {
                        let mean = vals.iter().sum::<f64>() / vals.len() as f64;
                        chart
                            .draw_series(std::iter::once(PathElement::new(
                                vec![(x0, mean.max(baseline)), (x1, mean.max(baseline))],
                                BLACK.stroke_width(2),
                            )))
                            .map_err(err)?;
                    }
                }
            }
        }
        // The category's label, wrapped, under its group.
        let (cx, by) = chart.backend_coord(&(g0 + 0.5, y_lo));
        for (l, line) in labels.get(gi).into_iter().flatten().enumerate() {
            root.draw(&Text::new(
                line.clone(),
                (cx, by + 8 + 17 * l as i32),
                text_style(16, BLACK, HPos::Center, VPos::Top),
            ))
            .map_err(err)?;
        }
    }
    Ok(())
}

/// Stacked panels over a shared time axis.
pub fn timeline(spec: &Timeline) -> Result<Drawn, String> {
    let series_used = used(
        spec.panels
            .iter()
            .flat_map(|p| p.lines.iter().map(|l| l.series)),
    );
    let rows = legend_rows(&series_used, spec.series);
    let said: Vec<(&str, &str)> = spec
        .panels
        .iter()
        .filter_map(|p| Some((p.y_desc.as_str(), p.note.as_deref()?)))
        .collect();
    let notes: Vec<String> = if said.windows(2).all(|w| w[0].1 == w[1].1) {
        said.first().map(|s| s.1.to_string()).into_iter().collect()
    } else {
        said.iter().map(|(y, n)| format!("{y}: {n}")).collect()
    };
    let notes = note_lines(&notes);
    let top = header_height(rows.len(), notes.len());
    let panel_h = 210u32;
    let height = top + panel_h * spec.panels.len().max(1) as u32 + 16;

    let ends: Vec<f64> = spec
        .panels
        .iter()
        .flat_map(|p| p.lines.iter())
        .filter_map(|l| l.points.last().map(|p| p.0))
        .collect();
    let t_max = ends.iter().copied().fold(0.0, f64::max);
    let t_min_pos = spec
        .panels
        .iter()
        .flat_map(|p| p.lines.iter())
        .flat_map(|l| l.points.iter().map(|p| p.0))
        .filter(|t| *t > 0.0)
        .fold(f64::INFINITY, f64::min);
    let shortest = ends.iter().copied().fold(f64::INFINITY, f64::min);
    // Runs of one workload can differ 100x in length (durable vs delayed);
    // on a log time axis the short one is not squeezed into the first pixel.
    let log_x = t_max > 0.0 && t_min_pos.is_finite() && shortest > 0.0 && t_max / shortest > 20.0;

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        header(&root, spec.title, &rows, spec.series, true, &notes)?;
        let (_, body) = root.split_vertically(top);
        let (body, _) = body.split_vertically(panel_h * spec.panels.len().max(1) as u32);
        let areas = body.split_evenly((spec.panels.len().max(1), 1));
        let x_desc = if log_x {
            "seconds since the run started (log scale)"
        } else {
            "seconds since the run started"
        };
        for (p, area) in spec.panels.iter().zip(areas.iter()) {
            if log_x {
                let lo = 10f64.powf(t_min_pos.log10().floor());
                let hi = t_max * 1.2;
                draw_panel(&root, area, (lo..hi).log_scale(), p, spec.series, x_desc)?;
            } else {
                let hi = if t_max > 0.0 { t_max * 1.03 } else { 1.0 };
                draw_panel(&root, area, 0.0..hi, p, spec.series, x_desc)?;
            }
        }
        root.present().map_err(err)?;
    }
    Ok(Drawn { svg, log: log_x })
}

fn draw_panel<X>(
    root: &Area,
    area: &Area,
    x: X,
    panel: &Panel,
    series: &[SeriesStyle],
    x_desc: &str,
) -> Result<(), String>
where
    X: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
{
    let y_max = panel
        .lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .chain(panel.marks.iter().map(|m| m.1))
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let y_hi = if y_max > 0.0 { y_max * 1.18 } else { 1.0 };
    let mut chart = ChartBuilder::on(area)
        .margin_left(6)
        .margin_right(20)
        .margin_top(6)
        .margin_bottom(4)
        .x_label_area_size(38)
        .y_label_area_size(Y_LABEL_W)
        .build_cartesian_2d(x, 0.0..y_hi)
        .map_err(err)?;
    let fmt = panel.fmt;
    chart
        .configure_mesh()
        .x_labels(8)
        .y_labels(5)
        .x_desc(x_desc)
        .y_desc(panel.y_desc.as_str())
        .x_label_formatter(&|v| super::fmt::num(*v))
        .y_label_formatter(&|v| fmt(*v))
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 15))
        .light_line_style(TRANSPARENT)
        .draw()
        .map_err(err)?;
    for line in &panel.lines {
        let s = &series[line.series];
        let style = ShapeStyle::from(&s.color).stroke_width(2);
        if s.dashed {
            chart
                .draw_series(DashedLineSeries::new(line.points.clone(), 7, 4, style))
                .map_err(err)?;
        } else {
            chart
                .draw_series(LineSeries::new(line.points.clone(), style))
                .map_err(err)?;
        }
        // Markers too when there are few points: a run with a single
        // interval would otherwise draw nothing.
        if line.points.len() <= 40 {
            chart
                .draw_series(
                    line.points
                        .iter()
                        .map(|&p| Circle::new(p, 3, s.color.filled())),
                )
                .map_err(err)?;
        }
        if line.peak {
            let top = line
                .points
                .iter()
                .copied()
                .max_by(|a, b| a.1.total_cmp(&b.1));
            // An all-zero line has no peak worth a mark.
            if let Some(p) = top.filter(|p| p.1 > 0.0) {
                chart
                    .draw_series(std::iter::once(Circle::new(
                        p,
                        6,
                        ShapeStyle::from(&BLACK).stroke_width(1),
                    )))
                    .map_err(err)?;
                let (px, py) = chart.backend_coord(&p);
                let right_half = px > (area.get_base_pixel().0 + WIDTH as i32 * 2 / 3);
                let (dx, h) = if right_half {
                    (-9, HPos::Right)
                } else {
                    (9, HPos::Left)
                };
                root.draw(&Text::new(
                    format!("peak {}", fmt(p.1)),
                    (px + dx, py - 3),
                    text_style(14, BLACK, h, VPos::Bottom),
                ))
                .map_err(err)?;
            }
        }
    }
    let x_range = chart.x_range();
    let mut marks = panel.marks.clone();
    marks.sort_by(|a, b| b.1.total_cmp(&a.1));
    // Labels of close levels are pushed down so they do not overlap, and
    // sit at the end away from the highest sample (whose label is there).
    let mut last_label_y = i32::MIN;
    let highest = panel
        .lines
        .iter()
        .flat_map(|l| l.points.iter())
        .max_by(|a, b| a.1.total_cmp(&b.1));
    let mid_px = (chart.backend_coord(&(x_range.start, 0.0)).0
        + chart.backend_coord(&(x_range.end, 0.0)).0)
        / 2;
    let label_left = match highest {
        Some(p) => chart.backend_coord(p).0 > mid_px,
        None => true,
    };
    for &(si, v) in &marks {
        let s = &series[si];
        chart
            .draw_series(DashedLineSeries::new(
                vec![(x_range.start, v), (x_range.end, v)],
                2,
                4,
                ShapeStyle::from(&s.color).stroke_width(1),
            ))
            .map_err(err)?;
        let (px, py) = chart.backend_coord(&(
            if label_left {
                x_range.start
            } else {
                x_range.end
            },
            v,
        ));
        let y = (py - 2).max(last_label_y.saturating_add(15));
        last_label_y = y;
        root.draw(&Text::new(
            if marks.len() > 1 {
                format!("high-water mark {} ({})", fmt(v), s.label)
            } else {
                format!("high-water mark {}", fmt(v))
            },
            (if label_left { px + 4 } else { px - 4 }, y),
            text_style(
                14,
                GRAY,
                if label_left { HPos::Left } else { HPos::Right },
                VPos::Bottom,
            ),
        ))
        .map_err(err)?;
    }
    let all_zero = panel
        .lines
        .iter()
        .all(|l| l.points.iter().all(|p| p.1 == 0.0));
    if panel.lines.is_empty() || (all_zero && panel.marks.is_empty()) {
        let r = chart.plotting_area().get_pixel_range();
        root.draw(&Text::new(
            if panel.lines.is_empty() {
                "not reported"
            } else {
                "every sample was 0"
            },
            ((r.0.start + r.0.end) / 2, (r.1.start + r.1.end) / 2),
            text_style(15, GRAY, HPos::Center, VPos::Center),
        ))
        .map_err(err)?;
    }
    Ok(())
}
