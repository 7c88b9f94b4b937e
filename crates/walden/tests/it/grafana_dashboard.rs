//! The Grafana dashboard in `docs/grafana/walden-durability.json` against a
//! live `walden serve`: every metric its queries name is exported by
//! `/metrics` (with the label values they select), `rate()` is taken of
//! counters only and counters only through `rate()`, every panel has a unit
//! and the Prometheus datasource variable, and the queries parse as PromQL
//! (`promtool check rules`).

use crate::pg_diff;
use crate::server_support;

use pg_diff::{block_on_within, connect};
use serde_json::Value;
use server_support::{have, missing_tool, run_with_deadline, Serve};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::process::Command;
use std::time::Duration;

const DASHBOARD: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../docs/grafana/walden-durability.json"
);

/// Labels Prometheus adds when it scrapes a target; `/metrics` has none.
const TARGET_LABELS: &[&str] = &["instance", "job"];

/// PromQL words that are not metric names.
const KEYWORDS: &[&str] = &[
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "and",
    "or",
    "unless",
    "offset",
    "bool",
];

/// Aggregation operators, whose `by (...)` may stand before their argument.
const AGGREGATIONS: &[&str] = &[
    "sum",
    "avg",
    "min",
    "max",
    "count",
    "group",
    "stddev",
    "stdvar",
    "topk",
    "bottomk",
    "quantile",
    "count_values",
];

/// One selector in a query: a metric name, its label matchers
/// (`(label, operator, value)`) and the function applied right to it.
#[derive(Debug)]
struct Selector {
    metric: String,
    matchers: Vec<(String, String, String)>,
    function: Option<String>,
}

/// The selectors of a PromQL expression. A name followed by `(` is a
/// function; names inside `{}` are labels, inside `[]` durations.
fn selectors(expr: &str) -> Vec<Selector> {
    let b = expr.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b':';
    let mut out = Vec::new();
    // The function each open parenthesis belongs to.
    let mut calls: Vec<Option<String>> = Vec::new();
    let mut last_word: Option<String> = None;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c == b'[' {
            i += expr[i..].find(']').expect("an unclosed [") + 1;
        } else if c == b'(' {
            calls.push(last_word.take());
            i += 1;
        } else if c == b')' {
            calls.pop();
            i += 1;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && ident(b[i]) {
                i += 1;
            }
            let word = &expr[start..i];
            let mut j = i;
            while j < b.len() && b[j] == b' ' {
                j += 1;
            }
            if KEYWORDS.contains(&word) {
                // `by (db)`: the group's labels are not selectors.
                if j < b.len() && b[j] == b'(' {
                    i += expr[i..].find(')').unwrap() + 1;
                }
                continue;
            }
            // `sum by (db) (...)`: the aggregation's parenthesis comes later.
            if AGGREGATIONS.contains(&word) || (j < b.len() && b[j] == b'(') {
                last_word = Some(word.to_string());
                continue;
            }
            let mut matchers = Vec::new();
            if j < b.len() && b[j] == b'{' {
                let end = j + expr[j..].find('}').expect("an unclosed {");
                matchers = parse_matchers(&expr[j + 1..end]);
                i = end + 1;
            }
            out.push(Selector {
                metric: word.to_string(),
                matchers,
                function: calls.last().cloned().flatten(),
            });
        } else {
            i += 1;
        }
    }
    out
}

/// `a="x", b=~"$v"` as (label, operator, value) triples.
fn parse_matchers(s: &str) -> Vec<(String, String, String)> {
    s.split(',')
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .map(|m| {
            let at = m.find(['=', '!']).unwrap_or_else(|| panic!("matcher {m}"));
            let label = m[..at].trim().to_string();
            let rest = &m[at..];
            let op_len =
                if rest.starts_with("=~") || rest.starts_with("!=") || rest.starts_with("!~") {
                    2
                } else {
                    1
                };
            let value = rest[op_len..].trim().trim_matches('"').to_string();
            (label, rest[..op_len].to_string(), value)
        })
        .collect()
}

/// The exposition: each metric's samples (their labels) and its TYPE.
#[derive(Default)]
struct Exposition {
    samples: BTreeMap<String, Vec<BTreeMap<String, String>>>,
    types: BTreeMap<String, String>,
}

fn parse_exposition(body: &str) -> Exposition {
    let mut e = Exposition::default();
    for line in body.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut parts = rest.split(' ');
            let name = parts.next().unwrap().to_string();
            e.types.insert(name, parts.next().unwrap().to_string());
            continue;
        }
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let name_end = line.find(['{', ' ']).unwrap();
        let mut labels = BTreeMap::new();
        if line[name_end..].starts_with('{') {
            let close = line.rfind('}').unwrap();
            // Label values here have no commas or escaped quotes.
            for pair in line[name_end + 1..close].split(',') {
                let (k, v) = pair.split_once('=').unwrap();
                labels.insert(k.to_string(), v.trim_matches('"').to_string());
            }
        }
        e.samples
            .entry(line[..name_end].to_string())
            .or_default()
            .push(labels);
    }
    e
}

/// The panels, rows' nested panels included.
fn all_panels(v: &Value, out: &mut Vec<Value>) {
    for p in v.as_array().into_iter().flatten() {
        out.push(p.clone());
        all_panels(&p["panels"], out);
    }
}

fn http_get_metrics(port: u16) -> String {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    out.split("\r\n\r\n").nth(1).unwrap().to_string()
}

/// The dashboard's queries: panel title and expression, and the template
/// variables' `label_values(...)` queries.
fn queries(dash: &Value) -> Vec<(String, String)> {
    let mut panels = Vec::new();
    all_panels(&dash["panels"], &mut panels);
    let mut out = Vec::new();
    for p in &panels {
        for t in p["targets"].as_array().into_iter().flatten() {
            let expr = t["expr"].as_str().expect("a target with an expr");
            out.push((p["title"].as_str().unwrap().to_string(), expr.to_string()));
        }
    }
    for v in dash["templating"]["list"].as_array().unwrap() {
        if v["type"] == "query" {
            let q = v["query"]["query"].as_str().unwrap();
            let inner = q
                .strip_prefix("label_values(")
                .and_then(|r| r.rsplit_once(','))
                .map(|(m, _)| m)
                .unwrap_or_else(|| panic!("variable query {q}"));
            out.push((format!("variable {}", v["name"]), inner.to_string()));
        }
    }
    out
}

#[test]
fn dashboard_queries_name_exported_metrics() {
    let dash: Value = serde_json::from_str(&std::fs::read_to_string(DASHBOARD).unwrap()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let s = Serve::start(&tmp.path().join("data"), &[]);
    let port = s.metrics_port.expect("metrics port printed");
    // Durable and delayed commits, so every durability counter has moved.
    block_on_within(Duration::from_secs(60), async {
        let c = connect(&s.conn_str()).await;
        c.batch_execute("CREATE TABLE g (id int PRIMARY KEY)")
            .await
            .unwrap();
        c.batch_execute("ALTER DATABASE walden SET DELAYED_DURABILITY = ALLOWED")
            .await
            .unwrap();
        for i in 0..10 {
            c.execute("INSERT INTO g VALUES ($1)", &[&i]).await.unwrap();
        }
        c.batch_execute("SET synchronous_commit = off")
            .await
            .unwrap();
        for i in 10..20 {
            c.execute("INSERT INTO g VALUES ($1)", &[&i]).await.unwrap();
        }
    });
    let body = http_get_metrics(port);
    let exp = parse_exposition(&body);
    let delayed = &exp.samples["walden_delayed_commits_total"];
    assert!(!delayed.is_empty(), "{body}");

    let qs = queries(&dash);
    assert!(qs.len() >= 20, "{} queries", qs.len());
    let mut used = BTreeSet::new();
    for (title, expr) in &qs {
        let sels = selectors(expr);
        assert!(!sels.is_empty(), "{title}: no metric in {expr}");
        for sel in sels {
            let m = &sel.metric;
            used.insert(m.clone());
            let samples = exp
                .samples
                .get(m)
                .unwrap_or_else(|| panic!("{title}: {m} is not in /metrics"));
            for (label, op, value) in &sel.matchers {
                if TARGET_LABELS.contains(&label.as_str()) {
                    continue;
                }
                let has = |s: &BTreeMap<String, String>| match (op.as_str(), value.contains('$')) {
                    ("=", false) => s.get(label) == Some(value),
                    _ => s.contains_key(label),
                };
                assert!(
                    samples.iter().any(has),
                    "{title}: no sample of {m} with {label}{op}\"{value}\""
                );
            }
            let counter = exp.types.get(m).map(String::as_str) == Some("counter");
            let rated = matches!(sel.function.as_deref(), Some("rate" | "irate" | "increase"));
            assert_eq!(
                counter,
                rated,
                "{title}: {m} ({:?}) under {:?}",
                exp.types.get(m),
                sel.function
            );
        }
    }
    for m in [
        "walden_exposure_unhardened_bytes",
        "walden_exposure_unhardened_commits",
        "walden_log_flushes_total",
        "walden_wait_tasks_total",
        "walden_file_io_stall_write_seconds_total",
    ] {
        assert!(used.contains(m), "the dashboard does not show {m}");
    }
    for w in ["WRITELOG", "HADR_SYNC_COMMIT"] {
        assert!(
            qs.iter()
                .any(|(_, e)| e.contains(&format!("wait_type=\"{w}\""))),
            "no panel of {w} waits"
        );
    }

    // Every panel has a unit and reads the datasource variable.
    let vars = dash["templating"]["list"].as_array().unwrap();
    assert!(
        vars.iter()
            .any(|v| v["type"] == "datasource" && v["name"] == "DS_PROMETHEUS"),
        "no DS_PROMETHEUS datasource variable"
    );
    let mut panels = Vec::new();
    all_panels(&dash["panels"], &mut panels);
    for p in panels.iter().filter(|p| p["type"] != "row") {
        let title = &p["title"];
        let unit = p["fieldConfig"]["defaults"]["unit"].as_str().unwrap_or("");
        assert!(!unit.is_empty(), "{title}: no unit");
        assert_eq!(p["datasource"]["uid"], "${DS_PROMETHEUS}", "{title}");
    }
}

/// The queries parse as PromQL: each becomes a recording rule, with
/// Grafana's variables replaced, and `promtool check rules` (offline) reads
/// the file.
#[test]
fn dashboard_queries_parse_as_promql() {
    if !have("promtool", &["--version"]) {
        missing_tool(
            "promtool is needed to parse the dashboard's PromQL (apt-get install prometheus)",
        );
        return;
    }
    let dash: Value = serde_json::from_str(&std::fs::read_to_string(DASHBOARD).unwrap()).unwrap();
    let mut rules = String::from("groups:\n  - name: walden_dashboard\n    rules:\n");
    let qs = queries(&dash);
    for (i, (_, expr)) in qs.iter().enumerate() {
        let e = expr
            .replace("$__rate_interval", "1m")
            .replace("$instance", ".*")
            .replace("$db", ".*");
        // A JSON string is a valid YAML double-quoted scalar.
        rules.push_str(&format!(
            "      - record: walden_dashboard:q{i}\n        expr: {}\n",
            serde_json::to_string(&e).unwrap()
        ));
    }
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("rules.yml");
    std::fs::write(&path, &rules).unwrap();
    let out = run_with_deadline(
        Command::new("promtool")
            .arg("check")
            .arg("rules")
            .arg(&path),
        Duration::from_secs(60),
    );
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "promtool check rules:\n{text}\n{rules}"
    );
    assert!(
        text.contains(&format!("{} rules found", qs.len())),
        "{text}"
    );
}

/// The selector parser itself, on the shapes the dashboard uses.
#[test]
fn selectors_of_an_expression() {
    let s = selectors(
        "sum by (db) (rate(a_total{db=~\"$db\", file=\"log\"}[$__rate_interval])) / b_gauge",
    );
    assert_eq!(s.len(), 2, "{s:?}");
    assert_eq!(s[0].metric, "a_total");
    assert_eq!(s[0].function.as_deref(), Some("rate"));
    assert_eq!(s[0].matchers[1], ("file".into(), "=".into(), "log".into()));
    assert_eq!(s[1].metric, "b_gauge");
    assert_eq!(s[1].function, None);
}
