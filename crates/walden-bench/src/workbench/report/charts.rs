//! Which charts an experiment gets, built from its cells.
//!
//! Per experiment: throughput, per-session duration, WRITELOG wait per
//! session and bytes per log write, each one chart with a category per
//! workload and a slot per target and mode. Per workload: log flushes and
//! bytes flushed over time, and, for its relaxed-durability runs, the live
//! exposure over time. A chart none of whose runs reported its figure
//! becomes a one-line note instead.

use super::draw::{
    self, Categorical, Group, Line, Mark, Panel, SeriesStyle, Slot, Timeline, NOT_REPORTED,
};
use super::fmt;
use crate::workbench::result::{CellResult, ExperimentReport, ReplicaReport, Sample};
use crate::workbench::target::{Durability, Recovery};
use plotters::style::RGBColor;

/// What the report shows in a chart's place.
pub enum Item {
    /// One `<svg>` and its caption (plain text).
    Chart { svg: String, caption: String },
    /// Why there is no chart (plain text).
    Missing(String),
}

/// Dark (full durability) and light (relaxed) shades, one pair per target
/// and recovery model, so the two modes of one product read as a pair.
const PAIRS: [(RGBColor, RGBColor); 6] = [
    (RGBColor(33, 102, 172), RGBColor(103, 169, 207)),
    (RGBColor(217, 95, 2), RGBColor(253, 174, 97)),
    (RGBColor(27, 120, 55), RGBColor(127, 191, 123)),
    (RGBColor(118, 42, 131), RGBColor(175, 141, 195)),
    (RGBColor(178, 24, 43), RGBColor(244, 165, 130)),
    (RGBColor(84, 48, 5), RGBColor(191, 129, 45)),
];

/// At most this many points per line, so a long run's series stays small.
const MAX_POINTS: usize = 400;

#[derive(Clone, PartialEq)]
struct Key {
    target: String,
    recovery: Option<Recovery>,
    durability: Durability,
    mode: String,
}

impl Key {
    fn of(c: &CellResult) -> Key {
        Key {
            target: c.target.clone(),
            recovery: c.recovery,
            durability: c.durability(),
            mode: c.mode.short.clone(),
        }
    }
}

/// The experiment's series (target, recovery model, mode) in a fixed
/// order, with their colours and legend text.
struct Series {
    keys: Vec<Key>,
    styles: Vec<SeriesStyle>,
}

impl Series {
    fn of(exp: &ExperimentReport) -> Series {
        let mut targets: Vec<&str> = Vec::new();
        for c in &exp.cells {
            if !targets.contains(&c.target.as_str()) {
                targets.push(&c.target);
            }
        }
        let rec_rank = |r: Option<Recovery>| match r {
            None => 0,
            Some(Recovery::Simple) => 1,
            Some(Recovery::Full) => 2,
        };
        let mut keys: Vec<Key> = Vec::new();
        for c in &exp.cells {
            let k = Key::of(c);
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        keys.sort_by_key(|k| {
            (
                targets.iter().position(|t| *t == k.target),
                rec_rank(k.recovery),
                k.durability == Durability::Relaxed,
            )
        });
        let mut pairs: Vec<(&str, Option<Recovery>)> = Vec::new();
        let styles = keys
            .iter()
            .map(|k| {
                let pair = match pairs
                    .iter()
                    .position(|p| p.0 == k.target && p.1 == k.recovery)
                {
                    Some(i) => i,
                    None => {
                        pairs.push((&k.target, k.recovery));
                        pairs.len() - 1
                    }
                };
                let (dark, light) = PAIRS[pair % PAIRS.len()];
                let relaxed = k.durability == Durability::Relaxed;
                // One target: the legend names modes only (the page says which target).
                let mut parts: Vec<String> = Vec::new();
                if targets.len() > 1 {
                    parts.push(k.target.clone());
                }
                parts.push(k.mode.clone());
                if let Some(r) = k.recovery {
                    parts.push(format!("{r:?}").to_uppercase());
                }
                SeriesStyle {
                    label: parts.join(" · "),
                    color: if relaxed { light } else { dark },
                    dashed: relaxed,
                }
            })
            .collect();
        Series { keys, styles }
    }

    fn index(&self, c: &CellResult) -> usize {
        let k = Key::of(c);
        self.keys.iter().position(|x| *x == k).unwrap_or(0)
    }

    /// The cells of one workload in series order.
    fn cells<'a>(&self, exp: &'a ExperimentReport, variant: &str) -> Vec<&'a CellResult> {
        let mut v: Vec<&CellResult> = exp.cells.iter().filter(|c| c.variant == variant).collect();
        v.sort_by_key(|c| self.index(c));
        v
    }
}

/// The workloads of an experiment, in the order they ran.
fn variants(exp: &ExperimentReport) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for c in &exp.cells {
        if !out.contains(&c.variant.as_str()) {
            out.push(&c.variant);
        }
    }
    out
}

/// The charts of one experiment, in page order.
pub fn experiment(exp: &ExperimentReport) -> Vec<Item> {
    if let Some(r) = &exp.replica {
        return replica(&exp.name, r);
    }
    if exp.cells.is_empty() {
        return Vec::new();
    }
    let series = Series::of(exp);
    let mut out = Vec::new();
    let recovery_note = if exp.cells.iter().any(|c| c.recovery.is_some()) {
        " (and recovery model)"
    } else {
        ""
    };

    let groups = |value: &dyn Fn(&CellResult) -> Result<Vec<f64>, &'static str>| -> Vec<Group> {
        variants(exp)
            .into_iter()
            .map(|v| Group {
                label: v.to_string(),
                slots: series
                    .cells(exp, v)
                    .into_iter()
                    .map(|c| Slot {
                        series: series.index(c),
                        values: value(c),
                    })
                    .collect(),
            })
            .collect()
    };

    let g = groups(&|c| Ok(vec![c.throughput_tps]));
    out.push(categorical(
        "Throughput",
        "transactions/s",
        &g,
        &series,
        Mark::Bars,
        fmt::num,
        format!(
            "Throughput of {}: committed transactions per second of wall time, one bar per \
             workload, target and mode{recovery_note}.",
            exp.name
        ),
    ));

    let g = groups(&|c| {
        Ok(if c.per_session.is_empty() {
            c.session_durations_s.clone()
        } else {
            c.per_session.iter().map(|s| s.duration_s).collect()
        })
    });
    out.push(categorical(
        "Duration of each session",
        "seconds",
        &g,
        &series,
        Mark::Dots,
        fmt::num,
        format!(
            "Duration of each session of {}: a dot per session, a black tick at their mean, \
             per workload, target and mode{recovery_note}.",
            exp.name
        ),
    ));

    let g = groups(&|c| {
        c.per_session
            .iter()
            .map(|s| s.writelog_wait_ms)
            .collect::<Option<Vec<f64>>>()
            .filter(|v| !v.is_empty())
            .ok_or(NOT_REPORTED)
    });
    if g.iter().flat_map(|g| &g.slots).any(|s| s.values.is_ok()) {
        out.push(categorical(
            "WRITELOG wait per session",
            "ms waited",
            &g,
            &series,
            Mark::Dots,
            fmt::num,
            format!(
                "Time each session of {} spent waiting for its commits to reach the log \
                 (WRITELOG waits): a dot per session, a black tick at their mean; n/a where the \
                 product does not count waits per session.",
                exp.name
            ),
        ));
    } else {
        out.push(Item::Missing(format!(
            "WRITELOG wait per session ({}): no target counts waits per session.",
            exp.name
        )));
    }

    let g = groups(&|c| match (c.bytes_per_write, c.counters.log_writes) {
        (Some(b), _) => Ok(vec![b]),
        // Counted, but nothing reached the log file during the run: its
        // commits stayed in the log buffer until after it.
        (None, Some(0)) => Err("no writes"),
        (None, _) => Err(NOT_REPORTED),
    });
    if g.iter().flat_map(|g| &g.slots).any(|s| s.values.is_ok()) {
        out.push(categorical(
            "Bytes per log write",
            "bytes",
            &g,
            &series,
            Mark::Bars,
            fmt::bytes,
            format!(
                "Average size of one write to the log in {}: log bytes / log writes over the \
                 run; n/a where the product does not count log writes.",
                exp.name
            ),
        ));
    } else {
        out.push(Item::Missing(format!(
            "Bytes per log write ({}): no target counts log writes and bytes.",
            exp.name
        )));
    }

    for v in variants(exp) {
        let cells = series.cells(exp, v);
        out.push(log_io(v, &cells, &series));
        if cells.iter().any(|c| c.durability() == Durability::Relaxed) {
            out.push(exposure(v, &cells, &series));
        }
    }
    out
}

fn categorical(
    title: &str,
    y_desc: &str,
    groups: &[Group],
    series: &Series,
    mark: Mark,
    fmt: fn(f64) -> String,
    caption: String,
) -> Item {
    let spec = Categorical {
        title,
        y_desc,
        groups,
        series: &series.styles,
        mark,
        fmt,
    };
    match draw::categorical(&spec) {
        Ok(d) => Item::Chart {
            svg: d.svg,
            caption: if d.log {
                format!("{caption} Logarithmic y axis (the values span more than 30x).")
            } else {
                caption
            },
        },
        Err(e) => Item::Missing(format!("{title}: could not be drawn: {e}")),
    }
}

/// The samples that bound the rate windows: the first, then each one at
/// least a window after the last kept, and the last. A window is 1/60 of the
/// run, at least 100 ms (or a quarter of a short run): counters sampled every
/// 25 ms move in steps, and a rate per sample would mostly show the steps.
fn windows(samples: &[Sample]) -> Vec<&Sample> {
    let (Some(first), Some(last)) = (samples.first(), samples.last()) else {
        return Vec::new();
    };
    let total = last.t_s - first.t_s;
    let window = (total / 60.0).max(0.1_f64.min(total / 4.0));
    let mut out = vec![first];
    for s in &samples[1..] {
        if s.t_s - out[out.len() - 1].t_s >= window {
            out.push(s);
        }
    }
    if samples.len() > 1 && !std::ptr::eq(out[out.len() - 1], last) {
        out.push(last);
    }
    out
}

/// Per-second rates of a cumulative counter over consecutive windows, at
/// the end of each window; `None` if the counter is not reported.
fn rates(samples: &[Sample], get: fn(&Sample) -> Option<u64>) -> Option<Vec<(f64, f64)>> {
    if samples.is_empty() {
        return Some(Vec::new());
    }
    if samples.iter().all(|s| get(s).is_none()) {
        return None;
    }
    let mut out = Vec::new();
    for w in windows(samples).windows(2) {
        let (a, b) = (w[0], w[1]);
        let dt = b.t_s - a.t_s;
        if let (Some(x), Some(y)) = (get(a), get(b)) {
            if dt > 0.0 {
                out.push((b.t_s, y.saturating_sub(x) as f64 / dt));
            }
        }
    }
    Some(out)
}

/// The largest value of each run of `len / MAX_POINTS` samples, so peaks
/// survive thinning.
fn peaks(samples: &[Sample], get: fn(&Sample) -> Option<f64>) -> Option<Vec<(f64, f64)>> {
    if samples.is_empty() {
        return Some(Vec::new());
    }
    let pts: Vec<(f64, f64)> = samples
        .iter()
        .filter_map(|s| Some((s.t_s, get(s)?)))
        .collect();
    if pts.is_empty() {
        return None;
    }
    let step = pts.len().div_ceil(MAX_POINTS).max(1);
    Some(
        pts.chunks(step)
            .filter_map(|c| c.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1)))
            .collect(),
    )
}

/// A line's points; empty where the run has too few samples.
type Points = Vec<(f64, f64)>;

/// A panel with a line per cell that has the figure, and a note naming the
/// cells that do not.
fn panel(
    y_desc: &str,
    cells: &[&CellResult],
    series: &Series,
    fmt: fn(f64) -> String,
    peak: bool,
    points: &dyn Fn(&CellResult) -> Option<Points>,
) -> Panel {
    let mut lines = Vec::new();
    let mut not_reported = Vec::new();
    let mut too_short = Vec::new();
    for c in cells {
        let label = series.styles[series.index(c)].label.clone();
        match points(c) {
            None => not_reported.push(label),
            Some(p) if p.is_empty() => too_short.push(label),
            Some(p) => lines.push(Line {
                series: series.index(c),
                points: p,
                peak,
            }),
        }
    }
    let mut notes = Vec::new();
    if !not_reported.is_empty() {
        notes.push(format!("not reported by {}", not_reported.join(", ")));
    }
    if !too_short.is_empty() {
        notes.push(format!("too few samples: {}", too_short.join(", ")));
    }
    Panel {
        y_desc: y_desc.to_string(),
        lines,
        note: (!notes.is_empty()).then(|| notes.join("; ")),
        fmt,
        marks: Vec::new(),
    }
}

fn timeline(title: &str, panels: &[Panel], series: &Series, caption: String) -> Item {
    if panels.iter().all(|p| p.lines.is_empty()) {
        let why: Vec<&str> = panels.iter().filter_map(|p| p.note.as_deref()).collect();
        return Item::Missing(format!("{title}: nothing to draw ({}).", why.join("; ")));
    }
    let spec = Timeline {
        title,
        panels,
        series: &series.styles,
    };
    match draw::timeline(&spec) {
        Ok(d) => Item::Chart {
            svg: d.svg,
            caption: if d.log {
                format!("{caption} Logarithmic time axis: the runs differ more than 20x in length.")
            } else {
                caption
            },
        },
        Err(e) => Item::Missing(format!("{title}: could not be drawn: {e}")),
    }
}

fn log_io(variant: &str, cells: &[&CellResult], series: &Series) -> Item {
    let panels = [
        panel("log flushes/s", cells, series, fmt::num, false, &|c| {
            rates(&c.samples, |s| s.log_flushes)
        }),
        panel(
            "bytes flushed/s",
            cells,
            series,
            fmt::bytes_per_s,
            false,
            &|c| rates(&c.samples, |s| s.log_bytes_flushed),
        ),
    ];
    timeline(
        &format!("Log flushes over time: {variant}"),
        &panels,
        series,
        format!(
            "Log flushes per second and bytes flushed per second during each run of \
             \"{variant}\", from the cumulative counters sampled about every 25 ms, averaged over windows of \
             1/60 of the run, at least 100 ms (a quarter of runs shorter than 0.4 s); dashed \
             lines are relaxed-durability runs."
        ),
    )
}

fn exposure(variant: &str, cells: &[&CellResult], series: &Series) -> Item {
    let relaxed: Vec<&CellResult> = cells
        .iter()
        .copied()
        .filter(|c| c.durability() == Durability::Relaxed)
        .collect();
    let mut panels = [
        panel(
            "unhardened bytes",
            &relaxed,
            series,
            fmt::bytes,
            true,
            &|c| peaks(&c.samples, |s| s.exposure_bytes.map(|b| b as f64)),
        ),
        panel("oldest unhardened", &relaxed, series, fmt::ms, true, &|c| {
            peaks(&c.samples, |s| s.exposure_oldest_ms)
        }),
    ];
    // The run's high-water marks, as levels, where they exceed every sample
    // (a burst between two samples).
    let highs: [fn(&CellResult) -> Option<f64>; 2] = [
        |c| c.max_exposure_bytes.map(|b| b as f64),
        |c| c.max_exposure_ms,
    ];
    for (p, high) in panels.iter_mut().zip(highs) {
        let mut marks = Vec::new();
        for line in &p.lines {
            let sampled = line.points.iter().map(|q| q.1).fold(0.0, f64::max);
            let Some(c) = relaxed.iter().find(|c| series.index(c) == line.series) else {
                continue;
            };
            if let Some(h) = high(c).filter(|h| *h > sampled) {
                marks.push((line.series, h));
            }
        }
        p.marks = marks;
    }
    let highs: Vec<String> = relaxed
        .iter()
        .filter_map(|c| {
            Some(format!(
                "{}: {} / {}",
                series.styles[series.index(c)].label,
                fmt::bytes(c.max_exposure_bytes? as f64),
                fmt::ms(c.max_exposure_ms?)
            ))
        })
        .collect();
    let highs = if highs.is_empty() {
        String::new()
    } else {
        format!(
            " Peak over the whole run (the product's high-water mark, which sees every commit, \
             where it keeps one): {}.",
            highs.join("; ")
        )
    };
    timeline(
        &format!("Live exposure: {variant}"),
        &panels,
        series,
        format!(
            "Acknowledged but not yet hardened log during the relaxed-durability runs of \
             \"{variant}\": its size and the age of the oldest such commit, as sampled (about \
             every 25 ms); the circled point is the largest sample, a dotted level the run's \
             high-water mark where it exceeds every sample.{highs}"
        ),
    )
}

/// The replica experiment: ms per insert by mode and delay, a chart per
/// workload (a category per delay, a bar per mode, median over rounds).
fn replica(name: &str, r: &ReplicaReport) -> Vec<Item> {
    let mut modes: Vec<&str> = Vec::new();
    let mut workloads: Vec<&str> = Vec::new();
    for c in &r.cells {
        if !modes.contains(&c.mode.as_str()) {
            modes.push(&c.mode);
        }
        if !workloads.contains(&c.workload.as_str()) {
            workloads.push(&c.workload);
        }
    }
    let styles: Vec<SeriesStyle> = modes
        .iter()
        .enumerate()
        .map(|(i, m)| SeriesStyle {
            label: m.to_string(),
            color: PAIRS[i % PAIRS.len()].0,
            dashed: false,
        })
        .collect();
    let series = Series {
        keys: Vec::new(),
        styles,
    };
    let mut out = Vec::new();
    for w in workloads {
        let groups: Vec<Group> = r
            .delays_ms
            .iter()
            .map(|&d| Group {
                label: if d == 0 {
                    "loopback".to_string()
                } else {
                    format!("+{d} ms each way")
                },
                slots: r
                    .cells
                    .iter()
                    .filter(|c| c.workload == w && c.delay_ms == d && c.rows > 0)
                    .map(|c| Slot {
                        series: modes.iter().position(|m| *m == c.mode).unwrap_or(0),
                        values: Ok(vec![c.median_ms_per_insert]),
                    })
                    .collect(),
            })
            .collect();
        out.push(categorical(
            &format!("ms per insert: {w}"),
            "ms per insert",
            &groups,
            &series,
            Mark::Bars,
            fmt::num,
            format!(
                "Milliseconds per inserted row in {name}, {w}: median over {} rounds of {} \
                 rows, by replica mode and added network delay (local has no secondary, so \
                 only the loopback group has it). {}",
                r.batches, r.rows_per_batch, r.delay_note
            ),
        ));
    }
    out
}
