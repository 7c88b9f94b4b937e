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
