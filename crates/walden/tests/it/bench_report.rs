//! `walden bench` at a tiny scale, as the built binary: the HTML report
//! (`--report DIR`) and the figures of the JSON (`--json FILE`).

use serde_json::Value;
use std::path::Path;
use std::process::Command;
use walden_bench::workbench::experiments;

const SCALE: &str = "0.0005";

/// Runs `walden bench <what> --scale SCALE --json F [--report DIR]` in a
/// temporary directory; returns the parsed JSON and the page, if asked for.
fn bench(what: &str, report: bool) -> (Value, Option<String>) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let json = tmp.path().join("run.json");
    let dir = tmp.path().join("report");
    let scratch = tmp.path().join("scratch");
    std::fs::create_dir_all(&scratch).expect("scratch dir");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_walden"));
    cmd.args(["bench", what, "--scale", SCALE, "--quiet", "--json"])
        .arg(&json)
        .arg("--dir")
        .arg(&scratch);
    if report {
        cmd.arg("--report").arg(&dir);
    }
    let out = cmd.output().expect("run walden bench");
    assert!(
        out.status.success(),
        "walden bench {what} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).expect("json written"))
        .expect("valid JSON");
    let html = report.then(|| {
        let p = dir.join("report.html");
        assert!(p.is_file(), "{} written", p.display());
        std::fs::read_to_string(p).expect("read report")
    });
    (v, html)
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

fn arr(v: &Value) -> &Vec<Value> {
    v.as_array().expect("an array")
}

fn u(v: &Value) -> Option<u64> {
    v.as_u64()
}

fn f(v: &Value) -> f64 {
    v.as_f64().expect("a number")
}

/// The charts the report promises for an experiment: throughput and
/// per-session duration always; WRITELOG wait per session and bytes per log
/// write where some run reports them; per workload, log flushes over time
/// where some run sampled a flush counter twice, and the live exposure where
/// a relaxed run sampled it.
fn promised_charts(exp: &Value) -> usize {
    let cells = arr(&exp["cells"]);
    if cells.is_empty() {
        return 0;
    }
    let mut n = 2;
    if cells.iter().any(|c| {
        let s = arr(&c["per_session"]);
        !s.is_empty() && s.iter().all(|s| s["writelog_wait_ms"].is_number())
    }) {
        n += 1;
    }
    if cells.iter().any(|c| c["bytes_per_write"].is_number()) {
        n += 1;
    }
    let mut variants: Vec<&str> = Vec::new();
    for c in cells {
        let v = c["variant"].as_str().expect("variant");
        if !variants.contains(&v) {
            variants.push(v);
        }
    }
    for v in variants {
        let of: Vec<&Value> = cells.iter().filter(|c| c["variant"] == v).collect();
        if of.iter().any(|c| {
            let with = arr(&c["samples"])
                .iter()
                .filter(|s| s["log_flushes"].is_u64() || s["log_bytes_flushed"].is_u64())
                .count();
            with >= 2
        }) {
            n += 1;
        }
        let relaxed: Vec<&&Value> = of
            .iter()
            .filter(|c| c["mode"]["durability"] == "relaxed")
            .collect();
        if !relaxed.is_empty()
            && relaxed.iter().any(|c| {
                arr(&c["samples"])
                    .iter()
                    .any(|s| s["exposure_bytes"].is_u64())
            })
        {
            n += 1;
        }
    }
    n
}

/// Every '<' in the page starts one of the tags the report writes: text
/// from the run never adds markup.
fn assert_only_own_tags(html: &str) {
    if let Some(i) = walden_bench::workbench::report::foreign_markup(html) {
        panic!(
            "unexpected '<' at {i}: {:?}",
            html[i..].chars().take(50).collect::<String>()
        );
    }
    for tag in ["<script", "<link", "<img", "<iframe", "src=\"http", "url("] {
        assert!(!html.contains(tag), "self-contained: no {tag}");
    }
}

#[test]
fn report_of_three_insert() {
    let (v, html) = bench("three-insert", true);
    let html = html.expect("report");
    let exps = arr(&v["experiments"]);
    assert_eq!(exps.len(), 1);
    let promised: usize = exps.iter().map(promised_charts).sum();
    // One workload, one target: four charts of the experiment, log flushes
    // and exposure over time.
    assert_eq!(promised, 6, "walden reports every figure");
    assert_eq!(
        html.matches("<svg").count(),
        promised,
        "one <svg> per chart"
    );
    assert_eq!(
        html.matches("<figcaption>").count(),
        promised,
        "a caption each"
    );
    assert_eq!(html.matches("</svg>").count(), promised);
    // Title, legend and axis labels of each chart are SVG <text>.
    assert!(
        html.matches("<text").count() >= 8 * promised,
        "text is SVG text"
    );

    // The reading at the top, then the run.
    let summary = v["summary"].as_str().expect("summary");
    assert!(summary.contains("faster"), "{summary}");
    for line in summary.lines() {
        assert!(
            html.contains(&esc(line)),
            "summary line in the page: {line}"
        );
    }
    let reading_at = html
        .find(&esc(summary.lines().next().unwrap_or("")))
        .unwrap_or(usize::MAX);
    let first_exp = html
        .find("<section class=\"experiment\"")
        .expect("an experiment");
    assert!(reading_at < first_exp, "the reading comes first");
    assert!(html.contains(&esc(v["command"].as_str().expect("command"))));
    assert!(html.contains(&esc(&format!("{SCALE} x the published sizes"))));
    for t in arr(&v["targets"]) {
        assert!(html.contains(&esc(t.as_str().expect("target"))));
    }

    // The experiment's text and table.
    let e = &exps[0];
    for k in ["title", "description", "published"] {
        assert!(
            html.contains(&esc(e[k].as_str().expect(k))),
            "{k} in the page"
        );
    }
    assert!(html.contains("<th>WRITELOG/session</th>"));
    assert_eq!(
        html.matches("<tr>").count(),
        1 + arr(&e["cells"]).len() + 1 + arr(&e["ratios"]).len(),
        "a row per cell and per ratio under their headers"
    );
    assert_only_own_tags(&html);
}

/// The synchronous-replica experiment's figures: every mode and delay ran
/// the whole plan, the counters agree with the mode (only synchronous
/// durable commits are mirrored and wait), and the delays show.
fn check_sync_replica(e: &Value, def: &experiments::ExperimentDef) {
    let plan = def.replica.as_ref().expect("a replica plan");
    assert!(arr(&e["skipped"]).is_empty(), "skipped {:?}", e["skipped"]);
    assert!(arr(&e["cells"]).is_empty(), "figures are under \"replica\"");
    let r = &e["replica"];
    let cells = arr(&r["cells"]);
    // local, then sync / sync + delayed / async / async + bound at each
    // delay; two workloads.
    assert_eq!(cells.len(), 2 * (1 + 4 * plan.delays_ms.len()));
    let rows = plan.batches * plan.rows_per_batch;
    for c in cells {
        let mode = c["mode"].as_str().expect("mode");
        let delay = u(&c["delay_ms"]).expect("delay");
        let auto = c["autocommit"].as_bool().expect("autocommit");
        let what = format!("sync-replica / {} / {mode} / {delay} ms", c["workload"]);
        assert_eq!(u(&c["rows"]), Some(rows), "{what}");
        let txns = if auto { rows } else { plan.batches };
        assert_eq!(u(&c["transactions"]), Some(txns), "{what}");
        assert_eq!(
            u(&c["write_transactions"]),
            Some(txns),
            "{what}: the product's count"
        );
        assert_eq!(
            arr(&c["ms_per_insert_rounds"]).len() as u64,
            plan.batches,
            "{what}"
        );
        let ms = f(&c["median_ms_per_insert"]);
        assert!(ms > 0.0, "{what}");
        let (p50, p99) = (f(&c["commit_p50_ms"]), f(&c["commit_p99_ms"]));
        assert!(p50 > 0.0 && p50 <= p99, "{what}: p50 {p50} p99 {p99}");
        let mirrored = u(&c["mirrored_write_transactions"]).expect("mirrored");
        let hadr = u(&c["hadr_sync_commit_waits"]).expect("hadr waits");
        let delay_ms = f(&c["transaction_delay_ms"]);
        match mode {
            // Every durable commit waited for the synchronous secondary.
            "sync" => {
                assert_eq!(mirrored, txns, "{what}: mirrored");
                assert!(hadr <= txns, "{what}: {hadr} waits");
                if delay > 0 {
                    // The commit waited for a round trip through the proxy
                    // (local and remote hardening overlap, so the wait
                    // after the local harden may be shorter).
                    assert!(hadr > 0, "{what}: HADR_SYNC_COMMIT waits");
                    assert!(delay_ms > 0.0, "{what}: transaction delay");
                    assert!(p50 >= 2.0 * delay as f64, "{what}: p50 {p50} ms");
                }
                assert!(u(&c["log_flushes"]).unwrap_or(0) >= txns, "{what}: flushes");
            }
            // Delayed commits and asynchronous secondaries wait for nobody.
            "local" | "sync + delayed" | "async" => {
                assert_eq!(mirrored, 0, "{what}: mirrored");
                assert_eq!(hadr, 0, "{what}: HADR_SYNC_COMMIT waits");
                assert_eq!(delay_ms, 0.0, "{what}: transaction delay");
                assert_eq!(
                    u(&c["hadr_lag_bound_waits"]),
                    Some(0),
                    "{what}: HADR_LAG_BOUND waits"
                );
            }
            // A bounded asynchronous secondary is not mirrored; commits wait
            // (HADR_LAG_BOUND) only when the bound would be exceeded (a batch
            // this small may finish within MAX_LAG_MS, so no count is asked).
            "async + bound" => {
                assert_eq!(mirrored, 0, "{what}: mirrored");
                assert_eq!(hadr, 0, "{what}: HADR_SYNC_COMMIT waits");
                assert!(u(&c["hadr_lag_bound_waits"]).is_some(), "{what}: lag waits");
            }
            other => panic!("unknown mode {other}"),
        }
        if mode == "local" {
            assert_eq!(delay, 0, "{what}: local has no network");
            assert!((f(&c["vs_local"]) - 1.0).abs() < 1e-9, "{what}");
        }
        // A round trip of 2 x 5 ms per durable auto-commit insert.
        if mode == "sync" && auto && delay == 5 {
            assert!(ms >= 5.0, "{what}: {ms} ms per insert");
        }
    }
    let ratio = f(&r["p50_ratio_sync_local"]);
    assert!(ratio > 0.0);
    assert_eq!(
        r["pass"].as_bool(),
        Some(ratio <= f(&r["p50_ratio_target"]))
    );
    let reading = e["reading"].as_str().expect("reading");
    assert!(
        reading.contains("PASS") || reading.contains("FAIL"),
        "{reading}"
    );
    assert!(reading.contains("userspace TCP proxy"), "{reading}");
}

#[test]
fn json_figures_are_plausible() {
    let scale: f64 = SCALE.parse().expect("scale");
    let (v, _) = bench("all", false);
    let exps = arr(&v["experiments"]);
    let names: Vec<&str> = exps.iter().filter_map(|e| e["name"].as_str()).collect();
    assert_eq!(
        names,
        experiments::NAMES.to_vec(),
        "every experiment, in order"
    );
    assert!((f(&v["scale"]) - scale).abs() < 1e-12);
    let mut pairs_checked = 0;
    for e in exps {
        let name = e["name"].as_str().expect("name");
        let def = experiments::define(name, scale).expect("a known experiment");
        let cells = arr(&e["cells"]);
        if def.replica.is_some() {
            check_sync_replica(e, &def);
            continue;
        }
        assert!(e["replica"].is_null(), "{name}: no replica figures");
        if def.unavailable.is_some() {
            assert!(cells.is_empty(), "{name}: not run");
            assert!(!arr(&e["skipped"]).is_empty(), "{name}: says why");
            continue;
        }
        assert!(
            arr(&e["skipped"]).is_empty(),
            "{name}: skipped {:?}",
            e["skipped"]
        );
        for c in cells {
            let variant = c["variant"].as_str().expect("variant");
            let what = format!("{name} / {variant} / {}", c["mode"]["short"]);
            let plan = def
                .plans
                .iter()
                .find(|p| p.variant == variant)
                .unwrap_or_else(|| panic!("{what}: a workload of the plan"));
            // What was issued is what was committed.
            assert_eq!(u(&c["transactions"]), Some(plan.transactions), "{what}");
            assert_eq!(u(&c["rows"]), Some(plan.rows), "{what}");
            assert_eq!(u(&c["sessions"]), Some(plan.sessions as u64), "{what}");
            let per = arr(&c["per_session"]);
            assert_eq!(per.len(), plan.sessions, "{what}");
            let by_sessions: u64 = per.iter().filter_map(|s| u(&s["transactions"])).sum();
            assert_eq!(by_sessions, plan.transactions, "{what}: per session");
            let k = &c["counters"];
            if let Some(w) = u(&k["write_transactions"]) {
                assert_eq!(w, plan.transactions, "{what}: the product's count");
            }
            // Times and rates agree with each other.
            let d = f(&c["duration_s"]);
            assert!(d > 0.0, "{what}");
            let tps = f(&c["throughput_tps"]);
            let want = plan.transactions as f64 / d;
            assert!(
                (tps - want).abs() <= want * 1e-6 + 1e-9,
                "{what}: {tps} vs {want}"
            );
            assert!(
                f(&c["avg_session_duration_s"]) <= d * 1.001 + 1e-3,
                "{what}"
            );
            if let (Some(b), Some(w)) = (u(&k["log_bytes"]), u(&k["log_writes"])) {
                if w > 0 {
                    let bpw = f(&c["bytes_per_write"]);
                    assert!((bpw - b as f64 / w as f64).abs() < 1e-6, "{what}");
                }
                assert!(b >= w, "{what}: a write carries bytes");
            }
            if c["mode"]["durability"] == "full" {
                // A fully durable commit is on disk before it returns.
                assert!(u(&k["log_writes"]).unwrap_or(1) > 0, "{what}");
                assert!(u(&k["log_bytes_flushed"]).unwrap_or(1) > 0, "{what}");
            }
            assert!(!arr(&c["samples"]).is_empty(), "{what}: sampled");
        }
        // Relaxed vs full of the same work.
        for full in cells.iter().filter(|c| c["mode"]["durability"] == "full") {
            let Some(rel) = cells.iter().find(|c| {
                c["mode"]["durability"] == "relaxed"
                    && c["variant"] == full["variant"]
                    && c["target"] == full["target"]
                    && c["recovery"] == full["recovery"]
            }) else {
                panic!("{name}: no relaxed run for {}", full["variant"]);
            };
            let variant = full["variant"].as_str().expect("variant");
            let plan = def
                .plans
                .iter()
                .find(|p| p.variant == variant)
                .expect("plan");
            let per_session = plan.transactions / plan.sessions as u64;
            let rows_per_txn = plan.rows / plan.transactions.max(1);
            // Small transactions, several per session: each durable commit
            // waits for its own flush (sessions may share one), delayed ones
            // share a few writes.
            if per_session >= 5 && rows_per_txn <= 10 {
                let what = format!("{name} / {variant} / {}", full["recovery"]);
                let (fw, rw) = (
                    &full["counters"]["log_writes"],
                    &rel["counters"]["log_writes"],
                );
                if let (Some(fw), Some(rw)) = (u(fw), u(rw)) {
                    assert!(rw < fw, "{what}: delayed {rw} log writes vs durable {fw}");
                    pairs_checked += 1;
                }
                if let Some(ff) = u(&full["counters"]["log_flushes"]) {
                    assert!(
                        ff >= per_session,
                        "{what}: {ff} flushes for {per_session} commits"
                    );
                }
            }
        }
        assert_eq!(
            arr(&e["ratios"]).len(),
            cells.len() / 2,
            "{name}: a ratio per pair"
        );
    }
    assert!(
        pairs_checked >= 5,
        "log writes compared on {pairs_checked} pairs"
    );
    assert!(Path::new(env!("CARGO_BIN_EXE_walden")).is_file());
}
