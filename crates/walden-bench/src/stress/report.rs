//! What a stress run measured: the figures (serialized as-is for `--json`),
//! the error groups, and the text rendering.

use hdrhistogram::Histogram;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Example messages kept per error group (messages often carry the key or
/// value, so one group may see thousands of distinct ones).
const EXAMPLES_PER_GROUP: usize = 3;

/// Everything a run measured.
#[derive(Debug, Clone, Serialize)]
pub struct StressReport {
    /// Server and database, without the password.
    pub target: String,
    /// `simple` or `extended`.
    pub protocol: String,
    pub sessions: usize,
    /// Measured iterations asked of each session (`None`: until the time limit).
    pub iterations_per_session: Option<u64>,
    pub statements_per_iteration: usize,
    pub time_limit_s: Option<f64>,
    /// Whether the time limit ended the run before every session finished.
    pub stopped_by_time_limit: bool,
    /// Unmeasured warm-up iterations run, over all sessions.
    pub warmup_iterations: u64,
    pub warmup_failed: u64,
    /// Warm-up failures, grouped as [`StressReport::errors`].
    pub warmup_errors: Vec<ErrorGroup>,
    /// From the first session's measured start to the last session's end.
    pub wall_s: f64,
    /// Measured iterations run (succeeded + failed).
    pub iterations: u64,
    pub succeeded: u64,
    pub failed: u64,
    /// Measured iterations per second of wall time.
    pub throughput_per_s: f64,
    /// Latency of the successful measured iterations.
    pub latency_ms: Latency,
    pub session_duration_s: MinAvgMax,
    pub per_session: Vec<SessionReport>,
    /// Failures grouped by statement and SQLSTATE, most frequent first.
    pub errors: Vec<ErrorGroup>,
}

/// A histogram of microseconds: 3 significant figures (microsecond
/// precision up to 2 ms, 0.1% beyond), growing as larger values come.
pub fn latency_histogram() -> Histogram<u64> {
    Histogram::new(3).expect("3 significant figures are valid")
}

/// Records one latency. Not `saturating_record`: on a growing histogram it
/// files a value beyond the current range as the lowest one.
pub fn record_latency(h: &mut Histogram<u64>, micros: u64) {
    // A growing histogram takes any u64 on a 64-bit target.
    let _ = h.record(micros.max(1));
}

/// Iteration latency percentiles in milliseconds (microsecond precision).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Latency {
    pub count: u64,
    pub min: f64,
    pub mean: f64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub p99_9: f64,
    pub max: f64,
}

impl Latency {
    /// From a histogram of microseconds.
    pub fn from_micros(h: &Histogram<u64>) -> Latency {
        if h.is_empty() {
            return Latency::default();
        }
        let ms = |us: u64| us as f64 / 1000.0;
        Latency {
            count: h.len(),
            min: ms(h.min()),
            mean: (h.mean()).round() / 1000.0,
            p50: ms(h.value_at_quantile(0.50)),
            p95: ms(h.value_at_quantile(0.95)),
            p99: ms(h.value_at_quantile(0.99)),
            p99_9: ms(h.value_at_quantile(0.999)),
            max: ms(h.max()),
        }
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct MinAvgMax {
    pub min: f64,
    pub avg: f64,
    pub max: f64,
}

impl MinAvgMax {
    pub fn of(values: impl IntoIterator<Item = f64>) -> MinAvgMax {
        let v: Vec<f64> = values.into_iter().collect();
        if v.is_empty() {
            return MinAvgMax::default();
        }
        MinAvgMax {
            min: v.iter().copied().fold(f64::INFINITY, f64::min),
            avg: v.iter().sum::<f64>() / v.len() as f64,
            max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        }
    }
}

/// One session's measured phase.
#[derive(Debug, Clone, Serialize)]
pub struct SessionReport {
    /// 1-based, as `:session`.
    pub session: usize,
    pub iterations: u64,
    pub failed: u64,
    pub duration_s: f64,
    /// Why the session stopped early (its connection was lost and could not
    /// be made again), if it did.
    pub aborted: Option<String>,
}

/// Failed iterations sharing a statement and SQLSTATE (or, for client-side
/// errors without one, a message).
#[derive(Debug, Clone, Serialize)]
pub struct ErrorGroup {
    /// 1-based statement of the script that failed.
    pub statement: usize,
    pub sqlstate: Option<String>,
    pub count: u64,
    /// Up to three distinct messages, first seen first.
    pub messages: Vec<String>,
}

/// Error groups as a session collects them.
#[derive(Debug, Default)]
pub struct ErrorGroups {
    groups: BTreeMap<(usize, String), ErrorGroup>,
}

impl ErrorGroups {
    pub fn add(&mut self, statement: usize, sqlstate: Option<&str>, message: &str) {
        let key = (statement, sqlstate.unwrap_or(message).to_string());
        let g = self.groups.entry(key).or_insert_with(|| ErrorGroup {
            statement,
            sqlstate: sqlstate.map(str::to_string),
            count: 0,
            messages: Vec::new(),
        });
        g.count += 1;
        if g.messages.len() < EXAMPLES_PER_GROUP && !g.messages.iter().any(|m| m == message) {
            g.messages.push(message.to_string());
        }
    }

    pub fn merge(&mut self, other: ErrorGroups) {
        for (key, g) in other.groups {
            match self.groups.get_mut(&key) {
                None => {
                    self.groups.insert(key, g);
                }
                Some(mine) => {
                    mine.count += g.count;
                    for m in g.messages {
                        if mine.messages.len() < EXAMPLES_PER_GROUP && !mine.messages.contains(&m) {
                            mine.messages.push(m);
                        }
                    }
                }
            }
        }
    }

    /// The groups, most frequent first.
    pub fn into_sorted(self) -> Vec<ErrorGroup> {
        let mut v: Vec<ErrorGroup> = self.groups.into_values().collect();
        v.sort_by(|a, b| b.count.cmp(&a.count).then(a.statement.cmp(&b.statement)));
        v
    }
}

impl StressReport {
    /// The report as text for a terminal.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let per = match self.iterations_per_session {
            Some(m) => format!("{m} iterations"),
            None => "unbounded iterations".to_string(),
        };
        let _ = writeln!(
            s,
            "walden stress: {} sessions x {per} against {}, {} statement(s) per iteration, {} protocol",
            self.sessions, self.target, self.statements_per_iteration, self.protocol
        );
        if self.warmup_iterations > 0 {
            let _ = writeln!(
                s,
                "  warm-up        {} iterations (not measured, {} failed)",
                self.warmup_iterations, self.warmup_failed
            );
        }
        let stop = if self.stopped_by_time_limit {
            format!(
                " (stopped by the {} s time limit)",
                self.time_limit_s.unwrap_or(0.0)
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "  iterations     {} ({} ok, {} failed) in {:.3} s{stop}",
            self.iterations, self.succeeded, self.failed, self.wall_s
        );
        let _ = writeln!(
            s,
            "  throughput     {:.1} iterations/s",
            self.throughput_per_s
        );
        let l = &self.latency_ms;
        let _ = writeln!(
            s,
            "  latency ms     p50 {:.3}  p95 {:.3}  p99 {:.3}  p99.9 {:.3}  max {:.3}  (min {:.3}, mean {:.3}, {} ok iterations)",
            l.p50, l.p95, l.p99, l.p99_9, l.max, l.min, l.mean, l.count
        );
        let d = &self.session_duration_s;
        let _ = writeln!(
            s,
            "  session s      min {:.3}  avg {:.3}  max {:.3}",
            d.min, d.avg, d.max
        );
        for p in self.per_session.iter().filter(|p| p.aborted.is_some()) {
            let _ = writeln!(
                s,
                "  session {} stopped after {} iterations: {}",
                p.session,
                p.iterations,
                p.aborted.as_deref().unwrap_or("")
            );
        }
        render_errors(&mut s, "errors", &self.errors);
        render_errors(&mut s, "warm-up errors", &self.warmup_errors);
        s
    }
}

fn render_errors(s: &mut String, title: &str, groups: &[ErrorGroup]) {
    if groups.is_empty() {
        return;
    }
    let _ = writeln!(s, "  {title}:");
    for g in groups {
        let head = format!(
            "    {:>8} x  statement {}  SQLSTATE {}  ",
            g.count,
            g.statement,
            g.sqlstate.as_deref().unwrap_or("-----"),
        );
        let _ = writeln!(
            s,
            "{head}{}",
            g.messages.first().map(String::as_str).unwrap_or("")
        );
        for m in g.messages.iter().skip(1) {
            let _ = writeln!(s, "{:w$}{m}", "", w = head.len());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_errors_by_statement_and_sqlstate() {
        let mut a = ErrorGroups::default();
        for k in 0..5 {
            a.add(1, Some("23505"), &format!("duplicate key {k}"));
        }
        a.add(2, None, "connection closed");
        let mut b = ErrorGroups::default();
        b.add(1, Some("23505"), "duplicate key 0");
        b.add(1, Some("40P01"), "deadlock");
        a.merge(b);
        let g = a.into_sorted();
        assert_eq!(g.len(), 3);
        assert_eq!((g[0].statement, g[0].count), (1, 6));
        assert_eq!(g[0].messages.len(), EXAMPLES_PER_GROUP);
        assert!(g.iter().any(|x| x.sqlstate.is_none() && x.count == 1));
    }

    #[test]
    fn latency_from_histogram_is_ordered() {
        let mut h = latency_histogram();
        for us in (1..=10_000u64).rev() {
            record_latency(&mut h, us);
        }
        let l = Latency::from_micros(&h);
        assert_eq!(l.count, 10_000);
        assert!(l.min <= l.p50 && l.p50 <= l.p95 && l.p95 <= l.p99);
        assert!(l.p99 <= l.p99_9 && l.p99_9 <= l.max);
        assert!((l.p50 - 5.0).abs() < 0.01, "{l:?}");
        assert_eq!(l.min, 0.001);
        // Growing past the first range keeps the minimum (saturating_record
        // would have filed 5 s as 1 us).
        let mut h = latency_histogram();
        for us in [300, 2_100, 5_000_000] {
            record_latency(&mut h, us);
        }
        let l = Latency::from_micros(&h);
        assert_eq!(l.min, 0.3);
        assert!((l.max - 5000.0).abs() < 5.0, "{l:?}");
    }
}
