//! The report page: one HTML document with inline CSS and inline SVG charts.
//! Every piece of text from the run goes through [`esc`].

use super::charts::{self, Item};
use super::fmt::{esc, utc};
use crate::workbench::result::{ExperimentReport, WorkbenchReport};
use crate::workbench::table;
use std::fmt::Write as _;

const CSS: &str = r#"
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1b1b1b;
       margin: 0 auto; padding: 16px 28px 48px; max-width: 1400px; }
h1 { font-size: 26px; margin: 8px 0 12px; }
h2 { font-size: 20px; margin: 28px 0 8px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
h2 .name { font-weight: normal; color: #666; font-size: 15px; }
h3 { font-size: 16px; margin: 18px 0 6px; }
.reading { background: #f3f7fb; border-left: 4px solid #2166ac; padding: 8px 14px; margin: 8px 0; }
.reading p { margin: 6px 0; }
.summary p { font-size: 16px; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 12px 0; }
dl.meta dt { font-weight: 600; color: #444; }
dl.meta dd { margin: 0; }
code { font: 13px ui-monospace, SFMono-Regular, Menlo, monospace; background: #f4f4f4; padding: 1px 4px; }
.tablewrap { overflow-x: auto; margin: 8px 0; }
table { border-collapse: collapse; font-size: 12.5px; }
th, td { padding: 3px 6px; border-bottom: 1px solid #e4e4e4; white-space: nowrap; }
th { background: #f4f4f4; text-align: left; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.published { color: #444; font-style: italic; }
.skipped li, .missing { color: #8a4b00; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); gap: 18px 22px; margin-top: 12px; }
figure { margin: 0; border: 1px solid #e2e2e2; border-radius: 4px; padding: 6px; background: #fff; }
figure svg { width: 100%; height: auto; display: block; }
figcaption { font-size: 13px; color: #444; padding: 4px 4px 2px; }
nav ul { columns: 2; margin: 4px 0; }
"#;

/// The whole page.
pub fn page(report: &WorkbenchReport) -> String {
    let mut h = String::new();
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    h.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    let _ = writeln!(
        h,
        "<title>Walden workbench report, {}</title>",
        esc(&utc(report.started_unix))
    );
    let _ = writeln!(h, "<style>{CSS}</style>\n</head>\n<body>");
    h.push_str("<h1>Walden workbench report</h1>\n");

    h.push_str("<section class=\"reading summary\" id=\"reading\">\n<h3>The reading</h3>\n");
    for line in report.summary.lines().filter(|l| !l.trim().is_empty()) {
        let _ = writeln!(h, "<p>{}</p>", esc(line));
    }
    h.push_str("</section>\n");

    h.push_str("<dl class=\"meta\">\n");
    let mut meta = |k: &str, v: String| {
        let _ = writeln!(h, "<dt>{}</dt><dd>{v}</dd>", esc(k));
    };
    meta("Command", format!("<code>{}</code>", esc(&report.command)));
    meta(
        "Scale",
        esc(&format!("{} x the published sizes", report.scale)),
    );
    meta("Date", esc(&utc(report.started_unix)));
    meta("Version", esc(&report.version));
    meta(
        "Targets",
        if report.targets.is_empty() {
            "none".into()
        } else {
            esc(&report.targets.join(", "))
        },
    );
    meta("Elapsed", esc(&format!("{:.1} s", report.elapsed_s)));
    if let Some(d) = &report.disk {
        meta(
            "Disk",
            esc(&format!(
                "{} state: {:.0} synchronous 4 KB writes/s (O_DSYNC), {:.0} with fdatasync, \
                 {:.0} x 60 KB/s ({:.1} MB/s)",
                d.state().as_str(),
                d.dsync_4k_writes_per_s,
                d.fdatasync_4k_writes_per_s,
                d.dsync_60k_writes_per_s,
                d.dsync_60k_mb_per_s
            )),
        );
    }
    h.push_str("</dl>\n");

    h.push_str("<section class=\"skipped\"><h3>Skipped</h3>\n");
    let skipped: Vec<String> = report
        .skipped_targets
        .iter()
        .map(|s| format!("target {}: {}", s.target, s.reason))
        .chain(report.experiments.iter().flat_map(|e| {
            e.skipped
                .iter()
                .map(move |s| format!("{}: {}: {}", e.name, s.target, s.reason))
        }))
        .collect();
    if skipped.is_empty() {
        h.push_str("<p>Nothing was skipped.</p>\n");
    } else {
        h.push_str("<ul>\n");
        for s in &skipped {
            let _ = writeln!(h, "<li>{}</li>", esc(s));
        }
        h.push_str("</ul>\n");
    }
    h.push_str("</section>\n");

    h.push_str("<nav><h3>Experiments</h3><ul>\n");
    for e in &report.experiments {
        let _ = writeln!(
            h,
            "<li><a href=\"#{}\">{}</a> ({})</li>",
            esc(&anchor(&e.name)),
            esc(&e.title),
            esc(&e.name)
        );
    }
    h.push_str("</ul></nav>\n");

    for e in &report.experiments {
        experiment(&mut h, e);
    }
    h.push_str("</body>\n</html>\n");
    h
}

/// An id made of the name's letters and digits only.
fn anchor(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    format!("exp-{s}")
}

fn experiment(h: &mut String, e: &ExperimentReport) {
    let _ = writeln!(
        h,
        "<section class=\"experiment\" id=\"{}\">\n<h2>{} <span class=\"name\">({})</span></h2>",
        esc(&anchor(&e.name)),
        esc(&e.title),
        esc(&e.name)
    );
    let _ = writeln!(h, "<p>{}</p>", esc(&e.description));
    let _ = writeln!(h, "<p class=\"published\">{}</p>", esc(&e.published));
    h.push_str("<div class=\"reading\">\n");
    for line in e.reading.lines().filter(|l| !l.trim().is_empty()) {
        let _ = writeln!(h, "<p>{}</p>", esc(line));
    }
    h.push_str("</div>\n");
    if !e.cells.is_empty() {
        let rows: Vec<Vec<String>> = e.cells.iter().map(table::cell_row).collect();
        html_table(h, &table::CELL_HEADER, &rows);
    }
    if !e.ratios.is_empty() {
        let rows: Vec<Vec<String>> = e.ratios.iter().map(table::ratio_row).collect();
        html_table(h, &table::RATIO_HEADER, &rows);
    }
    if let Some(r) = &e.replica {
        let rows: Vec<Vec<String>> = r.cells.iter().map(table::replica_row).collect();
        html_table(h, &table::REPLICA_HEADER, &rows);
    }
    if !e.skipped.is_empty() {
        h.push_str("<ul class=\"skipped\">\n");
        for s in &e.skipped {
            let _ = writeln!(
                h,
                "<li>skipped: {}: {}</li>",
                esc(&s.target),
                esc(&s.reason)
            );
        }
        h.push_str("</ul>\n");
    }
    let items = charts::experiment(e);
    if !items.is_empty() {
        h.push_str("<div class=\"charts\">\n");
        for item in items {
            match item {
                Item::Chart { svg, caption } => {
                    let _ = writeln!(
                        h,
                        "<figure>\n{}\n<figcaption>{}</figcaption>\n</figure>",
                        svg.trim(),
                        esc(&caption)
                    );
                }
                Item::Missing(why) => {
                    let _ = writeln!(h, "<p class=\"missing\">{}</p>", esc(&why));
                }
            }
        }
        h.push_str("</div>\n");
    }
    h.push_str("</section>\n");
}

fn html_table(h: &mut String, header: &[&str], rows: &[Vec<String>]) {
    // Right-aligned where the terminal table right-aligns: numbers, past the first column.
    let numeric = |s: &str| {
        s.chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit() || c == '-' || c == '.')
    };
    h.push_str("<div class=\"tablewrap\"><table>\n<thead><tr>");
    for c in header {
        let _ = write!(h, "<th>{}</th>", esc(c));
    }
    h.push_str("</tr></thead>\n<tbody>\n");
    for r in rows {
        h.push_str("<tr>");
        for (i, c) in r.iter().enumerate() {
            if i > 0 && numeric(c) {
                let _ = write!(h, "<td class=\"num\">{}</td>", esc(c));
            } else {
                let _ = write!(h, "<td>{}</td>", esc(c));
            }
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody>\n</table></div>\n");
}
