//! The HTML report (`--report DIR`). (Being built.)

use super::result::WorkbenchReport;
use std::path::{Path, PathBuf};

/// Writes `dir/report.html`; returns its path.
pub fn write(report: &WorkbenchReport, dir: &Path) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let p = dir.join("report.html");
    let body = format!(
        "<pre>{}</pre>",
        super::table::render(report).replace('<', "&lt;")
    );
    std::fs::write(&p, body)?;
    Ok(p)
}
