//! The HTML report from a synthetic run: several targets, counters that some
//! targets do not report, text that must be escaped. Set
//! `WALDEN_REPORT_OUT=DIR` to keep the page (for looking at it).

use walden_bench::workbench::report;
use walden_bench::workbench::result::{
    CellResult, ExperimentReport, Ratio, ReplicaCell, ReplicaReport, Sample, SessionResult,
    Skipped, WorkbenchReport,
};
use walden_bench::workbench::target::{Counters, Durability, ModeSpec, Recovery, TargetKind};

const EVIL_TARGET: &str = "sqlite 3.45 <img src=x onerror=alert(1)> & \"q\"";
const EVIL_VARIANT: &str = "insert <b>bold</b> & 'more'";

struct Spec {
    target: &'static str,
    kind: TargetKind,
    /// Whether the product counts log I/O, per-session waits, exposure.
    log: bool,
    waits: bool,
    exposure: bool,
}

const WALDEN: Spec = Spec {
    target: "walden (embedded)",
    kind: TargetKind::Walden,
    log: true,
    waits: true,
    exposure: true,
};
const POSTGRES: Spec = Spec {
    target: "postgres 15.6",
    kind: TargetKind::Postgres,
    log: true,
    waits: false,
    exposure: false,
};
const SQLITE: Spec = Spec {
    target: EVIL_TARGET,
    kind: TargetKind::Sqlite,
    log: false,
    waits: false,
    exposure: false,
};

fn mode(kind: TargetKind, d: Durability) -> ModeSpec {
    let (label, short) = match (kind, d) {
        (TargetKind::Walden, Durability::Full) => ("DELAYED_DURABILITY = DISABLED", "durable"),
        (TargetKind::Walden, Durability::Relaxed) => ("DELAYED_DURABILITY = FORCED", "delayed"),
        (TargetKind::Postgres, Durability::Full) => ("synchronous_commit = on", "sync=on"),
        (TargetKind::Postgres, Durability::Relaxed) => ("synchronous_commit = off", "sync=off"),
        (TargetKind::Sqlite, Durability::Full) => ("synchronous = FULL", "FULL"),
        (TargetKind::Sqlite, Durability::Relaxed) => ("synchronous = NORMAL", "NORMAL"),
    };
    ModeSpec {
        durability: d,
        label: label.into(),
        short: short.into(),
    }
}

fn cell(
    exp: &str,
    variant: &str,
    s: &Spec,
    d: Durability,
    recovery: Option<Recovery>,
    seed: u64,
) -> CellResult {
    let sessions = 4usize;
    let relaxed = d == Durability::Relaxed;
    let duration = if relaxed { 0.05 } else { 2.0 } * (1.0 + seed as f64 / 10.0);
    let transactions = 400u64;
    let writes = if relaxed { 6 } else { 380 };
    let log_bytes = 400 * 300u64;
    let n = if relaxed { 4 } else { 80 };
    let samples: Vec<Sample> = (0..n)
        .map(|i| {
            let f = (i + 1) as f64 / n as f64;
            Sample {
                t_s: duration * f,
                log_flushes: s.log.then_some((writes as f64 * f) as u64),
                log_bytes_flushed: s.log.then_some((log_bytes as f64 * f) as u64),
                log_writes: s.log.then_some((writes as f64 * f) as u64),
                log_bytes: s.log.then_some((log_bytes as f64 * f) as u64),
                exposure_bytes: s
                    .exposure
                    .then_some(if relaxed { 1000 * (i % 3) } else { 0 }),
                exposure_oldest_ms: s.exposure.then_some(if relaxed {
                    2.5 * (i % 3) as f64
                } else {
                    0.0
                }),
            }
        })
        .collect();
    let per_session: Vec<SessionResult> = (0..sessions)
        .map(|i| SessionResult {
            duration_s: duration * (0.9 + 0.03 * i as f64),
            transactions: transactions / sessions as u64,
            writelog_waits: s.waits.then_some(if relaxed { 0 } else { 95 }),
            writelog_wait_ms: s
                .waits
                .then_some(if relaxed { 0.0 } else { 150.0 + i as f64 }),
        })
        .collect();
    CellResult {
        experiment: exp.into(),
        variant: variant.into(),
        target: s.target.into(),
        target_kind: s.kind,
        mode: mode(s.kind, d),
        recovery,
        sessions,
        transactions,
        rows: transactions * 3,
        duration_s: duration,
        session_durations_s: per_session.iter().map(|p| p.duration_s).collect(),
        avg_session_duration_s: duration * 0.95,
        throughput_tps: transactions as f64 / duration,
        rows_per_s: 3.0 * transactions as f64 / duration,
        counters: Counters {
            log_writes: s.log.then_some(writes),
            log_bytes: s.log.then_some(log_bytes),
            io_stall_write_ms: None,
            log_flushes: s.log.then_some(writes),
            log_bytes_flushed: s.log.then_some(log_bytes),
            write_transactions: s.log.then_some(transactions),
            writelog_waits: None,
            writelog_wait_ms: None,
        },
        bytes_per_write: s.log.then(|| log_bytes as f64 / writes as f64),
        log_flushes_per_s: s.log.then(|| writes as f64 / duration),
        writelog_avg_waits_per_session: s.waits.then_some(95.0),
        writelog_avg_ms_per_session: s.waits.then_some(151.0),
        writelog_avg_wait_ms: s.waits.then_some(1.6),
        max_exposure_bytes: (s.exposure && relaxed).then_some(2500),
        max_exposure_ms: (s.exposure && relaxed).then_some(6.0),
        flushed_at_end: false,
        per_session,
        samples,
    }
}

fn experiment(
    name: &str,
    variants: &[&str],
    targets: &[&Spec],
    recovery: bool,
) -> ExperimentReport {
    let mut cells = Vec::new();
    let mut ratios = Vec::new();
    let mut seed = 0;
    for v in variants {
        for t in targets {
            let models: &[Option<Recovery>] = if recovery && t.kind == TargetKind::Walden {
                &[Some(Recovery::Simple), Some(Recovery::Full)]
            } else {
                &[None]
            };
            for &r in models {
                seed += 1;
                let full = cell(name, v, t, Durability::Full, r, seed);
                let rel = cell(name, v, t, Durability::Relaxed, r, seed);
                ratios.push(Ratio {
                    variant: v.to_string(),
                    target: t.target.into(),
                    recovery: r,
                    duration: rel.duration_s / full.duration_s,
                    throughput: rel.throughput_tps / full.throughput_tps,
                    log_writes: None,
                    log_bytes: None,
                });
                cells.push(full);
                cells.push(rel);
            }
        }
    }
    ExperimentReport {
        name: name.into(),
        title: format!("Synthetic {name} <experiment>"),
        description: "What it does, with <tags> & ampersands.".into(),
        cells,
        skipped: vec![Skipped {
            experiment: name.into(),
            target: "postgres 15.6 (sync=on, <x>)".into(),
            reason: "failed: <error>".into(),
        }],
        ratios,
        reading: "walden (embedded): delayed cut the duration <a lot>.\nsecond line".into(),
        published: "Published: 3,778 <tps>.".into(),
        replica: None,
    }
}

/// The replica experiment's figures: two workloads, local plus three
/// modes at two delays.
fn replica() -> ReplicaReport {
    let mut cells = Vec::new();
    for autocommit in [true, false] {
        let mut modes = vec![("local", 0u64)];
        for d in [0, 5] {
            for m in ["sync", "sync + delayed", "async <x>"] {
                modes.push((m, d));
            }
        }
        for (m, d) in modes {
            let ms = if autocommit {
                0.2 + 2.0 * d as f64
            } else {
                0.01
            };
            cells.push(ReplicaCell {
                workload: if autocommit {
                    "auto-commit"
                } else {
                    "1 transaction per 10"
                }
                .into(),
                autocommit,
                mode: m.into(),
                mode_label: m.into(),
                delay_ms: d,
                rows: 100,
                transactions: if autocommit { 100 } else { 10 },
                duration_s: ms / 10.0,
                ms_per_insert: ms,
                ms_per_insert_rounds: vec![ms; 10],
                median_ms_per_insert: ms,
                commit_p50_ms: ms,
                commit_p99_ms: ms * 2.0,
                hadr_sync_commit_waits: 0,
                hadr_sync_commit_wait_ms: 0.0,
                hadr_lag_bound_waits: 0,
                hadr_lag_bound_wait_ms: 0.0,
                writelog_waits: 0,
                writelog_wait_ms: 0.0,
                log_flushes: 100,
                write_transactions: 100,
                log_flushes_per_s: 1000.0,
                write_transactions_per_s: 1000.0,
                log_writes: 100,
                log_write_avg_ms: Some(0.2),
                secondary_log_writes: 100,
                secondary_log_write_avg_ms: Some(0.2),
                mirrored_write_transactions: 0,
                transaction_delay_ms: 0.0,
                transaction_delay_ms_per_txn: None,
                vs_local: Some(1.0),
            });
        }
    }
    ReplicaReport {
        batches: 10,
        rows_per_batch: 10,
        delays_ms: vec![0, 5],
        delay_note: "A userspace <proxy>.".into(),
        cells,
        p50_ratio_sync_local: Some(1.2),
        p50_ratio_target: 1.3,
        pass: Some(true),
        p50_ratio_sync_async: Some(1.25),
        ms_per_insert_ratio_sync_local: Some(1.1),
        disk_fdatasync_4k_per_s: [5000.0, 5000.0],
        sync_pair_floor: [walden_bench::disk::SyncPairFloor {
            alone_p50_ms: 0.12,
            pair_p50_ms: 0.2,
            ratio: 1.67,
        }; 2],
        secondary_dir: "/tmp/secondary".into(),
        disk_state: walden_bench::disk::DiskState::Fast,
    }
}

fn synthetic() -> WorkbenchReport {
    WorkbenchReport {
        version: "0.1.0".into(),
        started_unix: 1_700_000_000,
        command: "walden bench all --peer postgres --peer sqlite <&>".into(),
        scale: 0.01,
        targets: vec![
            WALDEN.target.into(),
            POSTGRES.target.into(),
            EVIL_TARGET.into(),
        ],
        skipped_targets: vec![Skipped {
            experiment: "*".into(),
            target: "mysql".into(),
            reason: "not installed <here>".into(),
        }],
        disk: None,
        experiments: vec![
            // 3 variants x 3 targets: 6 charts + 3 + 3 per-workload.
            experiment(
                "multi",
                &["one", EVIL_VARIANT, "bulk load 20,000 rows"],
                &[&WALDEN, &POSTGRES, &SQLITE],
                false,
            ),
            // Walden with recovery models and PostgreSQL.
            experiment(
                "models",
                &["5,000 single-insert batches", "update 10 rows x 100"],
                &[&WALDEN, &POSTGRES],
                true,
            ),
            // Only a target that counts nothing: 2 charts, the rest notes.
            experiment("bare", &["only"], &[&SQLITE], false),
            ExperimentReport {
                name: "sync-replica".into(),
                title: "Replica <modes>".into(),
                description: "Modes and delays.".into(),
                cells: Vec::new(),
                skipped: Vec::new(),
                ratios: Vec::new(),
                reading: "sync 1.2x local.".into(),
                published: "Published: -".into(),
                replica: Some(replica()),
            },
        ],
        summary: "walden (embedded): DELAYED_DURABILITY = FORCED ran 40.0x faster <median>, at a \
                  worst-case exposure of 2500 B / 6.0 ms.\npostgres 15.6: sync=off ran 40x faster."
            .into(),
        elapsed_s: 12.0,
    }
}

#[test]
fn synthetic_report_has_every_chart_and_escapes_data() {
    let rep = synthetic();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = report::write(&rep, dir.path()).expect("report written");
    assert_eq!(path, dir.path().join("report.html"));
    let html = std::fs::read_to_string(&path).expect("read report");
    if let Some(out) = std::env::var_os("WALDEN_REPORT_OUT") {
        let _ = std::fs::create_dir_all(&out);
        let _ = std::fs::write(std::path::Path::new(&out).join("report.html"), &html);
    }

    // multi: throughput, durations, WRITELOG (walden only), bytes/write
    // (walden, postgres) = 4, plus log I/O and exposure per workload = 6.
    // models: 4 + 2 x 2 = 8. bare: throughput and durations only = 2.
    // sync-replica: ms per insert, one chart per workload = 2.
    assert_eq!(
        html.matches("<svg").count(),
        10 + 8 + 2 + 2,
        "one <svg> per chart"
    );
    assert_eq!(html.matches("<figure>").count(), 22);
    assert_eq!(html.matches("<figcaption>").count(), 22);
    assert!(
        html.contains("<th>HADR_SYNC_COMMIT</th>"),
        "the replica table"
    );
    assert!(html.contains("ms per insert: auto-commit"));
    // bare's four missing charts (WRITELOG, bytes/write, log I/O, exposure) are said.
    assert!(html.matches("class=\"missing\"").count() >= 4);
    assert!(html.contains("no target counts waits per session"));
    assert!(
        html.contains("not reported by"),
        "charts name what is missing"
    );
    assert!(html.contains("n/a"));

    // The summary, escaped, at the top.
    let first = html.find("DELAYED_DURABILITY = FORCED ran 40.0x faster &lt;median&gt;");
    let first_exp = html.find("<section class=\"experiment\"");
    assert!(
        first.is_some() && first < first_exp,
        "the reading comes first"
    );
    assert!(html.contains("mysql") && html.contains("not installed &lt;here&gt;"));
    assert!(html.contains("failed: &lt;error&gt;"));

    // No tag or entity from the data survives unescaped, in HTML or in SVG text.
    for raw in [
        "<img",
        "<b>bold",
        "<tags>",
        "<a lot>",
        "<experiment>",
        "<&>",
        "<x>",
        "<tps>",
        "<modes>",
        "<proxy>",
        "& ampersands",
        "& 'more'",
    ] {
        assert!(!html.contains(raw), "unescaped {raw:?} in the report");
    }
    assert!(html.contains("&lt;img src=x onerror=alert(1)&gt;"));
    assert!(html.contains("insert &lt;b&gt;bold&lt;/b&gt;"));
    for tag in [
        "<script",
        "<link",
        "<img",
        "<iframe",
        "src=\"http",
        "href=\"http",
    ] {
        assert!(!html.contains(tag), "no external asset or script: {tag}");
    }
    // Every '<' starts a tag the report itself writes.
    if let Some(i) = walden_bench::workbench::report::foreign_markup(&html) {
        panic!(
            "unexpected '<' at {i}: {:?}",
            html[i..].chars().take(40).collect::<String>()
        );
    }
    // Text stays text: plotters' SVG backend writes <text> elements.
    assert!(html.contains("<text"));
    assert!(html.contains("Throughput"));
}
