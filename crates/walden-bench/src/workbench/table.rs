//! The terminal tables and the written reading of a workbench run.

use super::result::{
    CellResult, ExperimentReport, Ratio, ReplicaCell, ReplicaReport, WorkbenchReport,
};
use super::target::Durability;
use std::fmt::Write as _;

/// Lays out rows as a text table, numbers right-aligned.
pub fn layout(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut w: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let numeric = |s: &str| {
        s.chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit() || c == '-' || c == '.')
    };
    let mut out = String::new();
    let line = |cells: Vec<String>, out: &mut String| {
        let mut l = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i > 0 {
                l.push_str("  ");
            }
            let pad = w[i].saturating_sub(c.chars().count());
            if numeric(c) && i > 0 {
                l.push_str(&" ".repeat(pad));
                l.push_str(c);
            } else {
                l.push_str(c);
                l.push_str(&" ".repeat(pad));
            }
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(header.iter().map(|h| h.to_string()).collect(), &mut out);
    line(w.iter().map(|n| "-".repeat(*n)).collect(), &mut out);
    for r in rows {
        line(r.clone(), &mut out);
    }
    out
}

/// Thousands separators.
pub fn int(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn opt_int(v: Option<u64>) -> String {
    v.map(int).unwrap_or_else(|| "-".into())
}

fn opt_f(v: Option<f64>, prec: usize) -> String {
    v.map(|x| format!("{x:.prec$}"))
        .unwrap_or_else(|| "-".into())
}

/// Seconds with three significant-ish digits.
pub fn secs(s: f64) -> String {
    if s >= 100.0 {
        format!("{s:.0}")
    } else if s >= 10.0 {
        format!("{s:.1}")
    } else if s >= 1.0 {
        format!("{s:.2}")
    } else {
        format!("{s:.3}")
    }
}

/// Bytes in KB / MB (10^3, 10^6), as the tables print them.
pub fn bytes(b: u64) -> String {
    if b >= 10 << 20 {
        format!("{:.0} MB", b as f64 / 1e6)
    } else if b >= 10_000 {
        format!("{:.0} KB", b as f64 / 1e3)
    } else {
        format!("{b} B")
    }
}

fn mode_cell(c: &CellResult) -> String {
    match c.recovery {
        Some(r) => format!("{} {r:?}", c.mode.short).to_uppercase_first(),
        None => c.mode.short.clone(),
    }
}

trait UpperFirst {
    fn to_uppercase_first(self) -> String;
}
impl UpperFirst for String {
    // Keeps "durable SIMPLE" readable: the mode as is, the model in capitals.
    fn to_uppercase_first(self) -> String {
        match self.split_once(' ') {
            Some((m, r)) => format!("{m} {}", r.to_uppercase()),
            None => self,
        }
    }
}

/// The columns of an experiment's table (the ones the published authors
/// printed); the HTML report uses the same.
pub const CELL_HEADER: [&str; 16] = [
    "workload",
    "target",
    "mode",
    "txns",
    "duration s",
    "avg session s",
    "txn/s",
    "log writes",
    "log bytes",
    "bytes/write",
    "io stall ms",
    "flushes/s",
    "WRITELOG/session",
    "ms/session",
    "avg wait ms",
    "max exposure",
];

/// One cell as a row under [`CELL_HEADER`] ("-" where not reported).
pub fn cell_row(c: &CellResult) -> Vec<String> {
    vec![
        c.variant.clone(),
        c.target.clone(),
        mode_cell(c),
        int(c.transactions),
        secs(c.duration_s),
        secs(c.avg_session_duration_s),
        format!("{:.0}", c.throughput_tps),
        opt_int(c.counters.log_writes),
        c.counters
            .log_bytes
            .map(bytes)
            .unwrap_or_else(|| "-".into()),
        opt_f(c.bytes_per_write, 0),
        opt_f(c.counters.io_stall_write_ms, 0),
        opt_f(c.log_flushes_per_s, 0),
        opt_f(c.writelog_avg_waits_per_session, 1),
        opt_f(c.writelog_avg_ms_per_session, 1),
        opt_f(c.writelog_avg_wait_ms, 3),
        match c.durability() {
            Durability::Full => "-".into(),
            Durability::Relaxed => match (c.max_exposure_bytes, c.max_exposure_ms) {
                (Some(b), Some(ms)) => format!("{} / {ms:.1} ms", bytes(b)),
                _ => "-".into(),
            },
        },
    ]
}

/// The columns of an experiment's ratio table.
pub const RATIO_HEADER: [&str; 6] = [
    "workload",
    "target",
    "relaxed/full duration",
    "speed-up",
    "log writes ratio",
    "log bytes ratio",
];

/// One ratio as a row under [`RATIO_HEADER`].
pub fn ratio_row(r: &Ratio) -> Vec<String> {
    vec![
        match r.recovery {
            Some(m) => format!("{} ({m:?})", r.variant),
            None => r.variant.clone(),
        },
        r.target.clone(),
        format!("{:.3}", r.duration),
        format!("{:.2}x", 1.0 / r.duration.max(1e-9)),
        opt_f(r.log_writes, 3),
        opt_f(r.log_bytes, 3),
    ]
}

/// The columns of the synchronous-replica table (SPEC §6.4: ms per insert,
/// HADR_SYNC_COMMIT waits, log flushes/s vs write transactions/s, and the
/// Database Replica counters).
pub const REPLICA_HEADER: [&str; 16] = [
    "workload",
    "mode",
    "delay each way",
    "rows",
    "duration s",
    "ms/insert",
    "x local",
    "commit p50 ms",
    "commit p99 ms",
    "HADR_SYNC_COMMIT",
    "HADR ms",
    "flushes/s",
    "write txn/s",
    "mirrored txns",
    "txn delay ms",
    "log write ms P / S",
];

/// Milliseconds with three significant-ish digits.
pub fn ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// One cell of the replica experiment under [`REPLICA_HEADER`]; ms/insert
/// is the median over rounds.
pub fn replica_row(c: &ReplicaCell) -> Vec<String> {
    vec![
        c.workload.clone(),
        c.mode.clone(),
        format!("{} ms", c.delay_ms),
        int(c.rows),
        secs(c.duration_s),
        ms(c.median_ms_per_insert),
        opt_f(c.vs_local, 2),
        ms(c.commit_p50_ms),
        ms(c.commit_p99_ms),
        int(c.hadr_sync_commit_waits),
        format!("{:.0}", c.hadr_sync_commit_wait_ms),
        format!("{:.0}", c.log_flushes_per_s),
        format!("{:.0}", c.write_transactions_per_s),
        int(c.mirrored_write_transactions),
        format!("{:.0}", c.transaction_delay_ms),
        format!(
            "{} / {}",
            c.log_write_avg_ms.map(ms).unwrap_or_else(|| "-".into()),
            c.secondary_log_write_avg_ms
                .map(ms)
                .unwrap_or_else(|| "-".into())
        ),
    ]
}

/// The bounded-lag asynchronous cells beside the unbounded ones: auto-commit
/// commit rate per delay, and how often the bound held commits back.
fn bounded_reading(r: &ReplicaReport) -> Option<String> {
    let rate = |c: &ReplicaCell| c.transactions as f64 / c.duration_s.max(1e-9);
    let mut parts = Vec::new();
    for &d in &r.delays_ms {
        let find = |m: &str| {
            r.cells
                .iter()
                .find(|c| c.autocommit && c.delay_ms == d && c.mode == m && c.rows > 0)
        };
        if let (Some(a), Some(b)) = (find("async"), find("async + bound")) {
            parts.push(format!(
                "{d} ms away: {:.0}/s unbounded vs {:.0}/s bounded ({:.2}x; {} HADR_LAG_BOUND waits, {:.0} ms)",
                rate(a),
                rate(b),
                rate(b) / rate(a).max(1e-9),
                b.hadr_lag_bound_waits,
                b.hadr_lag_bound_wait_ms
            ));
        }
    }
    (!parts.is_empty()).then(|| {
        format!(
            "Bounded-lag asynchronous secondary (MAX_LAG_BYTES = 65536, MAX_LAG_MS = 10), auto-commit commits per second: {}.",
            parts.join("; ")
        )
    })
}

/// What the replica experiment shows: per workload the median ms per insert
/// of each mode and delay, then the p50 target, then how the delay
/// was made.
pub fn replica_reading(r: &ReplicaReport) -> String {
    let mut lines = Vec::new();
    let mut workloads: Vec<(&str, bool)> = Vec::new();
    for c in &r.cells {
        if !workloads.iter().any(|w| w.0 == c.workload) {
            workloads.push((&c.workload, c.autocommit));
        }
    }
    for (w, _) in workloads {
        let cells: Vec<&ReplicaCell> = r
            .cells
            .iter()
            .filter(|c| c.workload == w && c.rows > 0)
            .collect();
        let mut parts = Vec::new();
        for &d in &r.delays_ms {
            let at: Vec<String> = cells
                .iter()
                .filter(|c| c.delay_ms == d)
                .map(|c| match c.vs_local {
                    Some(x) if c.mode != "local" => {
                        format!("{} {} ({x:.2}x local)", c.mode, ms(c.median_ms_per_insert))
                    }
                    _ => format!("{} {}", c.mode, ms(c.median_ms_per_insert)),
                })
                .collect();
            if at.is_empty() {
                continue;
            }
            if d == 0 {
                parts.push(at.join(", "));
            } else {
                parts.push(format!("secondary {d} ms away: {}", at.join(", ")));
            }
        }
        if !parts.is_empty() {
            lines.push(format!("{w}, median ms per insert: {}.", parts.join("; ")));
        }
    }
    let get = |m: &str| {
        r.cells
            .iter()
            .find(|c| c.autocommit && c.delay_ms == 0 && c.mode == m)
    };
    match (r.p50_ratio_sync_local, get("sync"), get("local")) {
        (Some(x), Some(s), Some(l)) => {
            let mut t =
                format!(
                "Target: durable commit p50 with a loopback synchronous secondary {} ms vs {} ms \
                 local only = {x:.2}x: {} (target <= {:.1}x); median ms per insert {:.2}x.",
                ms(s.commit_p50_ms),
                ms(l.commit_p50_ms),
                if x <= r.p50_ratio_target { "PASS" } else { "FAIL" },
                r.p50_ratio_target,
                r.ms_per_insert_ratio_sync_local.unwrap_or(0.0)
            );
            if let (Some(lw), Some(sw)) = (l.log_write_avg_ms, s.log_write_avg_ms) {
                let _ = write!(
                    t,
                    " The primary's log writes took {} ms on average local only, {} ms with the \
                     secondary (whose own took {} ms).",
                    ms(lw),
                    ms(sw),
                    s.secondary_log_write_avg_ms
                        .map(ms)
                        .unwrap_or_else(|| "-".into())
                );
                if lw > 1.5 * sw {
                    t.push_str(
                        " The local baseline's flushes were the slower ones: on this disk a lone \
                         stream of flushes is slower than two overlapping ones (the secondary's \
                         keep the device busy), so the local cell is not a like-for-like baseline \
                         (the ratio is too low); see the control.",
                    );
                }
            }
            if let (Some(y), Some(a)) = (r.p50_ratio_sync_async, get("async")) {
                let _ =
                    write!(
                    t,
                    " Control with the same overlap of flushes: sync p50 / async p50 ({} ms) = \
                     {y:.2}x ({} against {:.1}x).",
                    ms(a.commit_p50_ms),
                    if y <= r.p50_ratio_target { "within" } else { "over" },
                    r.p50_ratio_target
                );
            }
            lines.push(t);
            if let Some(l) = bounded_reading(r) {
                lines.push(l);
            }
            let [fb, fa] = r.sync_pair_floor;
            if fb.alone_p50_ms > 0.0 && fa.alone_p50_ms > 0.0 {
                let floor = fb.ratio.min(fa.ratio);
                let pair = (fb.pair_p50_ms + fa.pair_p50_ms) / 2.0;
                let mut t = format!(
                    "Floor of this disk for a secondary in {}: a 4 KB write + fdatasync in the \
                     primary's and the secondary's directories at once took {} ms p50 vs {} ms \
                     alone = {:.2}x before the cells, {} vs {} ms = {:.2}x after. A durable \
                     commit waits for both logs' syncs, and where the device serves them one \
                     after the other no replication code can bring the ratio below that.",
                    r.secondary_dir,
                    ms(fb.pair_p50_ms),
                    ms(fb.alone_p50_ms),
                    fb.ratio,
                    ms(fa.pair_p50_ms),
                    ms(fa.alone_p50_ms),
                    fa.ratio,
                );
                if pair > 0.0 {
                    let _ = write!(
                        t,
                        " Sync p50 over the paired syncs' p50: {:.2}x (what shipping, the \
                         acknowledgement and the wake-ups add to the two syncs).",
                        s.commit_p50_ms / pair
                    );
                }
                if floor > r.p50_ratio_target {
                    let _ = write!(
                        t,
                        " The {:.1}x target is below this floor: meet it with the secondary's \
                         log on another device (--secondary-dir) or another machine.",
                        r.p50_ratio_target
                    );
                }
                lines.push(t);
            }
        }
        _ => lines.push("Target: no p50 ratio (the local or sync cell did not run).".into()),
    }
    lines.push(format!(
        "Disk: {} state (4 KB write + fdatasync alone: {:.0}/s before the cells, {:.0}/s after).",
        r.disk_state.as_str(),
        r.disk_fdatasync_4k_per_s[0],
        r.disk_fdatasync_4k_per_s[1]
    ));
    lines.push(r.delay_note.clone());
    lines.join("\n")
}

/// The table of one experiment (the columns the published authors printed).
pub fn render_experiment(rep: &ExperimentReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "== {} ({}) ==", rep.title, rep.name);
    let _ = writeln!(out, "{}", rep.description);
    if !rep.cells.is_empty() {
        let rows: Vec<Vec<String>> = rep.cells.iter().map(cell_row).collect();
        out.push_str(&layout(&CELL_HEADER, &rows));
    }
    if !rep.ratios.is_empty() {
        out.push('\n');
        let rows: Vec<Vec<String>> = rep.ratios.iter().map(ratio_row).collect();
        out.push_str(&layout(&RATIO_HEADER, &rows));
    }
    if let Some(r) = &rep.replica {
        let rows: Vec<Vec<String>> = r.cells.iter().map(replica_row).collect();
        out.push_str(&layout(&REPLICA_HEADER, &rows));
    }
    for s in &rep.skipped {
        let _ = writeln!(out, "skipped: {}: {}", s.target, s.reason);
    }
    let _ = writeln!(out, "\n{}", rep.reading);
    let _ = writeln!(out, "({})", rep.published);
    out
}

/// The whole run: the summary, then every experiment.
pub fn render(report: &WorkbenchReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}\n", report.summary);
    for s in &report.skipped_targets {
        let _ = writeln!(out, "skipped target {}: {}", s.target, s.reason);
    }
    for e in &report.experiments {
        out.push_str(&render_experiment(e));
        out.push('\n');
    }
    let _ = write!(
        out,
        "(elapsed {:.1} s, scale {})",
        report.elapsed_s, report.scale
    );
    out
}

/// A sentence per target: the largest and smallest gain of the relaxed
/// mode, and the worst exposure sampled.
pub fn reading(rep: &ExperimentReport) -> String {
    let mut targets: Vec<&str> = Vec::new();
    for r in &rep.ratios {
        if !targets.contains(&r.target.as_str()) {
            targets.push(&r.target);
        }
    }
    let mut parts = Vec::new();
    for t in targets {
        let rs: Vec<_> = rep.ratios.iter().filter(|r| r.target == t).collect();
        let best = rs
            .iter()
            .min_by(|a, b| a.duration.total_cmp(&b.duration))
            .expect("non-empty");
        let worst = rs
            .iter()
            .max_by(|a, b| a.duration.total_cmp(&b.duration))
            .expect("non-empty");
        let cell = |variant: &str, d: Durability, rec| {
            rep.cells.iter().find(|c| {
                c.target == t && c.variant == variant && c.durability() == d && c.recovery == rec
            })
        };
        let mut s = String::new();
        let relaxed_name = cell(&best.variant, Durability::Relaxed, best.recovery)
            .map(|c| c.mode.short.clone())
            .unwrap_or_else(|| "relaxed".into());
        if let (Some(f), Some(r)) = (
            cell(&best.variant, Durability::Full, best.recovery),
            cell(&best.variant, Durability::Relaxed, best.recovery),
        ) {
            let _ = write!(
                s,
                "{t}: {relaxed_name} cut the duration of \"{}\"{} from {} s to {} s ({:.1}x)",
                best.variant,
                best.recovery
                    .map(|m| format!(" ({m:?})"))
                    .unwrap_or_default(),
                secs(f.duration_s),
                secs(r.duration_s),
                1.0 / best.duration.max(1e-9)
            );
            if let (Some(a), Some(b)) = (f.counters.log_writes, r.counters.log_writes) {
                let _ = write!(s, ", log writes {} -> {}", int(a), int(b));
            }
        }
        if rs.len() > 1 {
            let _ = write!(
                s,
                "; least on \"{}\" ({:.2}x)",
                worst.variant,
                1.0 / worst.duration.max(1e-9)
            );
        }
        let exp = rep
            .cells
            .iter()
            .filter(|c| c.target == t && c.durability() == Durability::Relaxed)
            .filter_map(|c| Some((c.max_exposure_bytes?, c.max_exposure_ms?)))
            .fold(None, |m: Option<(u64, f64)>, (b, ms)| {
                Some(m.map_or((b, ms), |(mb, mms)| (mb.max(b), mms.max(ms))))
            });
        if let Some((b, ms)) = exp {
            let _ = write!(
                s,
                ", at a worst-case sampled exposure of {} and {ms:.1} ms of acknowledged, unhardened commits",
                bytes(b)
            );
        }
        s.push('.');
        parts.push(s);
    }
    if parts.is_empty() {
        "No pair of modes completed on any target.".into()
    } else {
        parts.join("\n")
    }
}

/// The top of the report: per target, the range of gains over all
/// experiments and the worst exposure.
pub fn summary(report: &WorkbenchReport) -> String {
    let mut out = String::new();
    for t in &report.targets {
        let speedups: Vec<(f64, &str, &str)> = report
            .experiments
            .iter()
            .flat_map(|e| {
                e.ratios
                    .iter()
                    .filter(move |r| &r.target == t)
                    .map(move |r| {
                        (
                            1.0 / r.duration.max(1e-9),
                            e.name.as_str(),
                            r.variant.as_str(),
                        )
                    })
            })
            .collect();
        if speedups.is_empty() {
            continue;
        }
        let best = speedups
            .iter()
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .expect("non-empty");
        let worst = speedups
            .iter()
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .expect("non-empty");
        let mut v: Vec<f64> = speedups.iter().map(|s| s.0).collect();
        v.sort_by(|a, b| a.total_cmp(b));
        let med = crate::stats::median(&v);
        let exp = report
            .experiments
            .iter()
            .flat_map(|e| e.cells.iter())
            .filter(|c| &c.target == t && c.durability() == Durability::Relaxed)
            .filter_map(|c| Some((c.max_exposure_bytes?, c.max_exposure_ms?)))
            .fold(None, |m: Option<(u64, f64)>, (b, ms)| {
                Some(m.map_or((b, ms), |(mb, mms)| (mb.max(b), mms.max(ms))))
            });
        let relaxed = report
            .experiments
            .iter()
            .flat_map(|e| e.cells.iter())
            .find(|c| &c.target == t && c.durability() == Durability::Relaxed)
            .map(|c| c.mode.label.clone())
            .unwrap_or_default();
        let _ = write!(
            out,
            "{t}: {relaxed} ran {:.1}x faster (median over {} workloads; from {:.2}x on {} \"{}\" to {:.1}x on {} \"{}\")",
            med,
            v.len(),
            worst.0,
            worst.1,
            worst.2,
            best.0,
            best.1,
            best.2
        );
        match exp {
            Some((b, ms)) => {
                let _ = writeln!(
                    out,
                    ", at a worst-case exposure of {} / {ms:.1} ms (largest sampled amount of acknowledged but unhardened log).",
                    bytes(b)
                );
            }
            None => out.push_str(".\n"),
        }
    }
    for e in &report.experiments {
        let Some(r) = &e.replica else { continue };
        let Some(x) = r.p50_ratio_sync_local else {
            continue;
        };
        let _ = writeln!(
            out,
            "{}: durable commit p50 with a loopback synchronous secondary was {x:.2}x the \
             local-only p50 ({} against the {:.1}x target).",
            e.name,
            if x <= r.p50_ratio_target {
                "PASS"
            } else {
                "FAIL"
            },
            r.p50_ratio_target
        );
    }
    if out.is_empty() {
        out.push_str("No experiment completed a pair of modes.");
    }
    out.trim_end().to_string()
}
