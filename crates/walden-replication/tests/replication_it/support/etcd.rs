//! One etcd member on loopback, started for a test and killed with it
//! (Debian's etcd-server; etcdctl from etcd-client for a secured one).

use super::{free_port, missing_tool, pki::Pki};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use walden_engine::wait_until;
use walden_replication::ha;

pub struct Etcd {
    child: Child,
    pub port: u16,
    /// The CA, client certificate and key etcdctl presents (secured only).
    ctl_tls: Option<[String; 3]>,
    _dir: tempfile::TempDir,
}

impl Drop for Etcd {
    fn drop(&mut self) {
        // A test may leave it stopped (SIGSTOP).
        self.signal("-CONT");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How a secured member is set up: TLS with `server.crt` signed by `ca`,
/// client certificates required, simple tokens living `token_ttl_s`.
pub struct Secured<'a> {
    pub pki: &'a Pki,
    pub token_ttl_s: u64,
}

impl Etcd {
    /// `None` (after `missing_tool`) when etcd (or, secured, etcdctl) is
    /// not installed.
    pub fn start(secured: Option<Secured<'_>>) -> Option<Etcd> {
        let tools_ok = Command::new("etcd").arg("--version").output().is_ok()
            && (secured.is_none() || Command::new("etcdctl").arg("version").output().is_ok());
        if !tools_ok {
            missing_tool("etcd or etcdctl is not installed");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let (port, peer) = (free_port(), free_port());
        let scheme = if secured.is_some() { "https" } else { "http" };
        let client = format!("{scheme}://127.0.0.1:{port}");
        let peer = format!("http://127.0.0.1:{peer}");
        let mut cmd = Command::new("etcd");
        cmd.args(["--name", "e0", "--data-dir"])
            .arg(dir.path().join("data"))
            .args(["--listen-client-urls", &client])
            .args(["--advertise-client-urls", &client])
            .args(["--listen-peer-urls", &peer])
            .args(["--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", &format!("e0={peer}")]);
        let mut ctl_tls = None;
        if let Some(s) = &secured {
            let p = |f: &str| s.pki.arg(f);
            cmd.args([
                "--cert-file",
                &p("server.crt"),
                "--key-file",
                &p("server.key"),
            ])
            .args(["--trusted-ca-file", &p("ca.crt"), "--client-cert-auth"])
            .args(["--auth-token", "simple"])
            .args(["--auth-token-ttl", &s.token_ttl_s.to_string()]);
            ctl_tls = Some([p("ca.crt"), p("client.crt"), p("client.key")]);
        }
        let child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let e = Etcd {
            child,
            port,
            ctl_tls,
            _dir: dir,
        };
        let up = if e.ctl_tls.is_some() {
            wait_until(Duration::from_secs(20), || e.ctl(&["endpoint", "health"]))
        } else {
            let c = e.client();
            wait_until(Duration::from_secs(20), || c.get_prefix("/").is_ok())
        };
        assert!(up, "etcd did not start");
        Some(e)
    }

    /// `127.0.0.1:port`, as the HA configuration names an endpoint.
    pub fn endpoint(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// A plain (unsecured) client.
    pub fn client(&self) -> ha::Etcd {
        ha::Etcd::new(vec![self.endpoint()], Duration::from_secs(1))
    }

    /// Sends `sig` (as `kill` spells it) to the member.
    pub fn signal(&self, sig: &str) {
        let _ = Command::new("kill")
            .args([sig, &self.child.id().to_string()])
            .status();
    }

    /// Runs etcdctl against the member (with the client certificate when
    /// secured); whether it succeeded.
    pub fn ctl(&self, args: &[&str]) -> bool {
        let scheme = if self.ctl_tls.is_some() {
            "https"
        } else {
            "http"
        };
        let mut cmd = Command::new("etcdctl");
        cmd.env("ETCDCTL_API", "3")
            .args(["--endpoints", &format!("{scheme}://{}", self.endpoint())]);
        if let Some([ca, cert, key]) = &self.ctl_tls {
            cmd.args(["--cacert", ca, "--cert", cert, "--key", key]);
        }
        cmd.args(args).output().is_ok_and(|o| o.status.success())
    }
}
