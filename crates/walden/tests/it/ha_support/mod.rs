//! HA tests: a real etcd (Debian's etcd-server) started by the test, nodes
//! started with `--ha`, and the health endpoints.

#![allow(dead_code)]

use crate::repl_support::{free_port, Node};
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_postgres::NoTls;
use walden_replication::ha;

/// A single-member etcd on loopback; killed on drop.
pub struct EtcdServer {
    pub child: Child,
    pub client_port: u16,
    pub log: std::path::PathBuf,
}

impl EtcdServer {
    /// `None` (after [`crate::server_support::missing_tool`]) when etcd is
    /// not installed.
    pub fn start(dir: &Path) -> Option<EtcdServer> {
        if !crate::server_support::have("etcd", &["--version"]) {
            crate::server_support::missing_tool(
                "etcd is not installed (apt-get install etcd-server)",
            );
            return None;
        }
        let client_port = free_port();
        let peer_port = free_port();
        let data = dir.join("etcd-data");
        let log = dir.join("etcd.log");
        let client = format!("http://127.0.0.1:{client_port}");
        let peer = format!("http://127.0.0.1:{peer_port}");
        let child = Command::new("etcd")
            .args(["--name", "e0", "--data-dir"])
            .arg(&data)
            .args(["--listen-client-urls", &client])
            .args(["--advertise-client-urls", &client])
            .args(["--listen-peer-urls", &peer])
            .args(["--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", &format!("e0={peer}")])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("spawn etcd");
        let e = EtcdServer {
            child,
            client_port,
            log,
        };
        let c = e.client();
        let deadline = Instant::now() + Duration::from_secs(20);
        while c.get_prefix("/").is_err() {
            assert!(
                Instant::now() < deadline,
                "etcd did not start:\n{}",
                std::fs::read_to_string(&e.log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Some(e)
    }

    pub fn url(&self) -> String {
        format!("etcd://127.0.0.1:{}", self.client_port)
    }

    pub fn client(&self) -> ha::Etcd {
        ha::Etcd::new(
            vec![format!("127.0.0.1:{}", self.client_port)],
            Duration::from_secs(2),
        )
    }
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `GET path` on `host:port`: the status code and body (0 when nothing answers).
pub fn http_get(host: &str, port: u16, path: &str) -> (u16, String) {
    let Ok(mut s) = std::net::TcpStream::connect((host, port)) else {
        return (0, String::new());
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    );
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    let code = out
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = out.split_once("\r\n\r\n").map_or("", |x| x.1).to_string();
    (code, body)
}

/// One acknowledged commit: writer, sequence, the node that acknowledged
/// it, when.
pub type Ack = (i32, i32, String, Instant);

/// A libpq connection string naming every node of `nodes`.
pub fn multi_host(nodes: &[&Node], attrs: &str) -> String {
    let hosts: Vec<&str> = nodes.iter().map(|_| "127.0.0.1").collect();
    let ports: Vec<String> = nodes
        .iter()
        .map(|n| n.serve.as_ref().unwrap().port.to_string())
        .collect();
    format!(
        "host={} port={} user=walden dbname=walden target_session_attrs={attrs} connect_timeout=2",
        hosts.join(","),
        ports.join(",")
    )
}

/// The status of `GET path` on the node's HTTP listener.
pub fn health(n: &Node, path: &str) -> u16 {
    let s = n.serve.as_ref().unwrap();
    http_get("127.0.0.1", s.metrics_port.unwrap(), path).0
}

/// Inserts (w, n) rows into `acks`, reconnecting through `conn` after any
/// error, and records every acknowledged one.
pub async fn writer(w: i32, conn: String, stop: Arc<AtomicBool>, acks: Arc<Mutex<Vec<Ack>>>) {
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        let connected = tokio::time::timeout(
            Duration::from_secs(3),
            tokio_postgres::connect(&conn, NoTls),
        )
        .await;
        let Ok(Ok((c, task))) = connected else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        tokio::spawn(task);
        let node = match c
            .query_one(
                "SELECT replica_name FROM sys.dm_hadr_database_replica_states WHERE is_local",
                &[],
            )
            .await
        {
            Ok(r) => r.get::<_, String>(0),
            Err(_) => continue,
        };
        while !stop.load(Ordering::Relaxed) {
            n += 1;
            let r = tokio::time::timeout(
                Duration::from_secs(10),
                c.execute("INSERT INTO acks VALUES ($1, $2)", &[&w, &n]),
            )
            .await;
            match r {
                Ok(Ok(_)) => acks
                    .lock()
                    .unwrap()
                    .push((w, n, node.clone(), Instant::now())),
                _ => break,
            }
        }
    }
}

/// `walden ha status` for `cluster`: its text.
pub fn ha_status(etcd: &EtcdServer, cluster: &str) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_walden"))
        .args(["ha", "status", "--ha", &etcd.url(), "--ha-cluster", cluster])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "walden ha status: {text}");
    text
}
