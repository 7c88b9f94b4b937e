//! A Walden server in the test process, for the wire tests.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::Path;
use tokio_postgres::{Client, NoTls};
use walden_server::{Server, ServerConfig, ServerError, ShutdownHandle};

pub struct TestServer {
    pub addr: SocketAddr,
    pub metrics: Option<SocketAddr>,
    handle: ShutdownHandle,
    thread: Option<std::thread::JoinHandle<Result<(), ServerError>>>,
}

impl TestServer {
    pub fn start_in(dir: &Path, f: impl FnOnce(&mut ServerConfig)) -> TestServer {
        let mut cfg = ServerConfig::new(dir);
        cfg.listen = "127.0.0.1:0".into();
        cfg.metrics_listen = Some("127.0.0.1:0".into());
        // Small log segments keep the test's files small.
        cfg.log.segment_size = Some(4 << 20);
        cfg.log.preallocate_spare = Some(false);
        f(&mut cfg);
        let server = Server::start(cfg).expect("server starts");
        let addr = server.local_addr();
        let metrics = server.metrics_addr();
        let handle = server.shutdown_handle();
        let thread = std::thread::spawn(move || server.run(false));
        TestServer {
            addr,
            metrics,
            handle,
            thread: Some(thread),
        }
    }

    pub fn conn_str(&self, extra: &str) -> String {
        format!(
            "host=127.0.0.1 port={} user=walden dbname=walden {extra}",
            self.addr.port()
        )
    }

    pub async fn connect_with(&self, extra: &str) -> Result<Client, tokio_postgres::Error> {
        let (client, conn) = tokio_postgres::connect(&self.conn_str(extra), NoTls).await?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(client)
    }

    pub async fn client(&self) -> Client {
        self.connect_with("").await.expect("connect")
    }

    pub fn stop(&mut self) {
        self.handle.shutdown();
        if let Some(t) = self.thread.take() {
            t.join().expect("server thread").expect("clean shutdown");
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.handle.shutdown();
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
        }
    }
}

/// An error's SQLSTATE (or why it has none).
pub fn code(e: &tokio_postgres::Error) -> String {
    e.code()
        .map(|c| c.code().to_string())
        .unwrap_or_else(|| format!("no SQLSTATE: {e}"))
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

/// Whether `tool --version` runs.
pub fn have(tool: &str) -> bool {
    std::process::Command::new(tool)
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether python3 can import `module`.
pub fn have_python_module(module: &str) -> bool {
    std::process::Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
