//! The log benchmark at a tiny size: every field filled, and plausibly.

use walden_bench::log_bench::{run, LogBenchConfig};

#[test]
fn tiny_log_bench_fills_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = LogBenchConfig::new(dir.path());
    cfg.rounds = 1;
    cfg.cell_seconds = 0.1;
    cfg.sessions = vec![1, 4];
    cfg.ceiling_seconds = 0.05;
    cfg.ceiling_file_bytes = 4 << 20;
    cfg.recovery_bytes = 2_000_000;
    cfg.segment_size = Some(4 << 20);
    let rep = run(&cfg).unwrap();

    let cell = |label: &str| {
        rep.cells
            .iter()
            .find(|c| c.label == label)
            .unwrap_or_else(|| panic!("no cell {label}"))
            .median
            .clone()
    };
    let (d1, d4) = (cell("durable x1"), cell("durable x4"));
    let (y1, y4) = (cell("delayed x1"), cell("delayed x4"));
    for c in [&d1, &d4] {
        assert!(c.commits > 0, "{c:?}");
        assert!(c.log_writes > 0 && c.log_flushes > 0, "{c:?}");
        assert!(c.bytes_per_write >= 4096.0, "{c:?}");
        assert!(c.writelog_waits > 0, "{c:?}");
        assert!(c.latency_p50_us > 0.0 && c.latency_p99_us >= c.latency_p50_us);
    }
    assert!(d4.log_writes <= d4.commits, "{d4:?}");
    for c in [&y1, &y4] {
        assert!(c.commits > 0, "{c:?}");
        assert!(c.bytes_per_write >= 4096.0, "{c:?}");
        assert!(c.log_writes <= c.commits, "{c:?}");
    }
    assert!(y1.commits_per_s > d1.commits_per_s, "{y1:?} vs {d1:?}");
    assert!(y4.commits_per_s > d4.commits_per_s, "{y4:?} vs {d4:?}");
    assert_eq!(
        y1.writelog_waits, 0,
        "delayed commits never wait for the log"
    );

    assert!(rep.ceiling.dsync_4k_writes_per_s > 0.0);
    assert!(rep.ceiling.fdatasync_4k_writes_per_s > 0.0);
    assert!(rep.ceiling.dsync_60k_mb_per_s > 0.0);
    assert_eq!(rep.disk_states.len(), 1);
    assert!(rep.sync_mode.is_some());
    assert!(cell("durable x1 dsync").commits > 0);

    let rec = rep.recovery.as_ref().unwrap();
    assert!(rec.setup.log_bytes >= cfg.recovery_bytes);
    assert!(rec.lsn_span_bytes >= cfg.recovery_bytes);
    assert!(rec.bytes_read >= rec.lsn_span_bytes);
    assert!(rec.cold_mb_per_s > 0.0 && rec.warm_mb_per_s > 0.0);
    assert_eq!(rep.targets.len(), 4);
    // Group commit needs a 16-session cell, which this run leaves out.
    assert_eq!(rep.targets.iter().filter(|t| t.pass.is_some()).count(), 3);

    let text = rep.render();
    assert!(text.contains("durable x4") && text.contains("Targets"));
    let json = serde_json::to_value(&rep).unwrap();
    assert!(json["rounds"][0]["cells"].as_array().unwrap().len() == 6);
}
