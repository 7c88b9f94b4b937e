//! Starting `walden serve` (the built binary) for tests, and running client
//! programs against it with a deadline.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

pub struct Serve {
    pub child: Child,
    /// The address clients connect to (127.0.0.1 unless started with [`Serve::start_in`]).
    pub host: String,
    pub port: u16,
    pub metrics_port: Option<u16>,
    pub data_dir: PathBuf,
    stderr_path: PathBuf,
}

impl Serve {
    /// Starts `walden serve` on an ephemeral port; `extra` are more flags.
    pub fn start(data_dir: &Path, extra: &[&str]) -> Serve {
        Self::spawn(&[], "127.0.0.1", data_dir, extra, false)
    }

    /// Starts `walden serve` through `prefix` (e.g. `ip netns exec NS`, which
    /// execs the server in place, so signals reach it), listening on `host`
    /// (port 0). The server log is appended to, so restarts keep the history.
    pub fn start_in(prefix: &[&str], host: &str, data_dir: &Path, extra: &[&str]) -> Serve {
        Self::spawn(prefix, host, data_dir, extra, true)
    }

    fn spawn(prefix: &[&str], host: &str, data_dir: &Path, extra: &[&str], append: bool) -> Serve {
        let stderr_path = data_dir.with_extension("server.log");
        let stderr = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .append(append)
            .truncate(!append)
            .open(&stderr_path)
            .unwrap();
        let bin = env!("CARGO_BIN_EXE_walden");
        let mut cmd = match prefix.split_first() {
            Some((p, rest)) => {
                let mut c = Command::new(p);
                c.args(rest).arg(bin);
                c
            }
            None => Command::new(bin),
        };
        let listen = format!("{host}:0");
        let mut child = cmd
            .arg("serve")
            .arg("--data-dir")
            .arg(data_dir)
            .args(["--listen", &listen, "--metrics-listen", &listen])
            .args(extra)
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("spawn walden serve");
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut port = None;
        let mut metrics_port = None;
        for _ in 0..2 {
            let mut line = String::new();
            if out.read_line(&mut line).unwrap_or(0) == 0 {
                break;
            }
            let p = || {
                line.trim()
                    .rsplit(':')
                    .next()
                    .unwrap()
                    .trim_end_matches("/metrics")
                    .parse::<u16>()
                    .ok()
            };
            if line.starts_with("listening on ") {
                port = p();
            } else if line.starts_with("metrics on ") {
                metrics_port = p();
            }
        }
        let Some(port) = port else {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "walden serve did not start:\n{}",
                std::fs::read_to_string(&stderr_path).unwrap_or_default()
            );
        };
        // Keep draining stdout so the server never blocks on it.
        std::thread::spawn(move || for _ in out.lines() {});
        Serve {
            child,
            host: host.to_string(),
            port,
            metrics_port,
            data_dir: data_dir.to_path_buf(),
            stderr_path,
        }
    }

    pub fn conn_str(&self) -> String {
        format!(
            "host={} port={} user=walden dbname=walden",
            self.host, self.port
        )
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }

    /// Sends a signal and waits (bounded) for the exit.
    pub fn signal_and_wait(&mut self, sig: i32, limit: Duration) -> ExitStatus {
        unsafe {
            libc::kill(self.child.id() as i32, sig);
        }
        let deadline = Instant::now() + limit;
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "walden serve did not exit after signal {sig}:\n{}",
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        // A log beside a data directory that is itself a temporary directory
        // would outlive it: remove it unless the test failed (then it is
        // evidence).
        if !std::thread::panicking()
            && self.stderr_path.parent() == Some(std::env::temp_dir().as_path())
        {
            let _ = std::fs::remove_file(&self.stderr_path);
        }
    }
}

/// Whether a program runs at all (`prog args` exits 0).
pub fn have(prog: &str, args: &[&str]) -> bool {
    Command::new(prog)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Runs a command to completion, killing it after `limit`.
pub fn run_with_deadline(cmd: &mut Command, limit: Duration) -> Output {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let id = child.id();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let d2 = done.clone();
    let killer = std::thread::spawn(move || {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if d2.load(std::sync::atomic::Ordering::Relaxed) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        unsafe {
            libc::kill(id as i32, libc::SIGKILL);
        }
    });
    let out = child.wait_with_output().expect("wait");
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = killer.join();
    out
}

/// A test's tool (psql, pgbench, a driver, root) is missing: with
/// `WALDEN_REQUIRE_TOOLS` set (CI sets it) the test fails; otherwise it says
/// why it is skipped and passes.
pub fn missing_tool(why: &str) {
    let required = std::env::var("WALDEN_REQUIRE_TOOLS").is_ok_and(|v| !v.is_empty() && v != "0");
    assert!(
        !required,
        "{why} (WALDEN_REQUIRE_TOOLS is set: a missing tool fails the test)"
    );
    eprintln!("skipped: {why}");
}

/// Runs `script` on one connection to a fresh server, within `limit`, and
/// fails listing every statement whose outcome differs from the one given:
/// [`crate::pg_diff::outcome`]'s rendering (rows as `a|b`, tags as `ok
/// TAG`), or `ERROR <sqlstate>`, which any error of that SQLSTATE matches
/// (the wording may differ from PostgreSQL's).
pub fn run_script(script: &[(&str, &str)], limit: Duration) {
    use crate::pg_diff::{connect, outcome, runtime};
    let tmp = tempfile::tempdir().unwrap();
    let walden = Serve::start(&tmp.path().join("walden"), &[]);
    runtime().block_on(async {
        tokio::time::timeout(limit, async {
            let c = connect(&walden.conn_str()).await;
            let mut wrong = Vec::new();
            for (sql, want) in script {
                let got = outcome(&c, sql, &[]).await;
                let same = if want.starts_with("ERROR") {
                    got.starts_with(want)
                } else {
                    got == *want
                };
                if !same {
                    wrong.push(format!("{sql}\n  want {want}\n  got  {got}"));
                }
            }
            assert!(wrong.is_empty(), "{}", wrong.join("\n"));
        })
        .await
        .expect("timed out")
    });
}
