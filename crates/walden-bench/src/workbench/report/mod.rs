//! The HTML report (`--report DIR`): one self-contained `report.html`, inline
//! CSS and inline SVG charts drawn with plotters, no scripts or external assets.
//!
//! - [`html`]: the page (the reading, the run, the tables).
//! - [`charts`]: which charts each experiment gets, from its cells.
//! - [`draw`]: the plotters drawing (grouped bars and dots, time lines).
//! - [`fmt`]: escaping and number formatting.

pub mod charts;
pub mod draw;
pub mod fmt;
pub mod html;

use super::result::WorkbenchReport;
use std::path::{Path, PathBuf};

/// The report as one HTML document.
pub fn render(report: &WorkbenchReport) -> String {
    html::page(report)
}

/// Writes `dir/report.html`; returns its path.
pub fn write(report: &WorkbenchReport, dir: &Path) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let p = dir.join("report.html");
    std::fs::write(&p, render(report))?;
    Ok(p)
}

/// Every tag the report writes (as the text that starts it). Tests check
/// that each '<' in a page starts one of these: text from a run (workload
/// or target names, error messages) never adds markup.
pub const TAGS: &[&str] = &[
    "<!DOCTYPE",
    "<html",
    "</html",
    "<head",
    "</head",
    "<meta",
    "<title",
    "</title",
    "<style",
    "</style",
    "<body",
    "</body",
    "<h1",
    "</h1",
    "<h2",
    "</h2",
    "<h3",
    "</h3",
    "<section",
    "</section",
    "<p>",
    "<p ",
    "</p",
    "<dl",
    "</dl",
    "<dt",
    "</dt",
    "<dd",
    "</dd",
    "<code",
    "</code",
    "<ul",
    "</ul",
    "<li",
    "</li",
    "<nav",
    "</nav",
    "<a ",
    "</a",
    "<span",
    "</span",
    "<div",
    "</div",
    "<table",
    "</table",
    "<thead",
    "</thead",
    "<tbody",
    "</tbody",
    "<tr",
    "</tr",
    "<th",
    "</th",
    "<td",
    "</td",
    "<figure",
    "</figure",
    "<figcaption",
    "</figcaption",
    "<svg",
    "</svg",
    "<rect",
    "<line",
    "<polyline",
    "<circle",
    "<text",
    "</text",
    "<path",
    "<polygon",
    "<p",
];

/// The byte offset of the first '<' in `html` that does not start one of
/// [`TAGS`] (markup the report did not write itself), if any.
pub fn foreign_markup(html: &str) -> Option<usize> {
    html.match_indices('<')
        .map(|(i, _)| i)
        .find(|&i| !TAGS.iter().any(|t| html[i..].starts_with(t)))
}
