//! How the etcd client reaches a secured cluster, as Patroni's does: TLS
//! to `https://` endpoints (the server verified against the cluster's CA,
//! and a client certificate when etcd runs with `--client-cert-auth`), and
//! etcd's user/password authentication: a token from
//! `/v3/auth/authenticate`, sent as the `Authorization` header and fetched
//! again when etcd says it is no longer valid (simple tokens expire after
//! `--auth-token-ttl`, 5 minutes by default, and when etcd restarts).

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// PEM files for TLS towards etcd (`[ha] tls_ca`, `tls_cert`, `tls_key`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EtcdTlsFiles {
    /// The CA that signed etcd's server certificates.
    pub ca: Option<PathBuf>,
    /// This node's client certificate and key (both or neither).
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
}

impl EtcdTlsFiles {
    pub fn is_empty(&self) -> bool {
        self.ca.is_none() && self.cert.is_none() && self.key.is_none()
    }
}

/// An etcd user and its password (`[ha] user`, `password_file`).
#[derive(Clone, PartialEq, Eq)]
pub struct EtcdUser {
    pub name: String,
    pub password: String,
}

impl std::fmt::Debug for EtcdUser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdUser")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// What the client needs to reach a secured cluster; the default reaches
/// a plain one.
#[derive(Clone, Debug, Default)]
pub struct EtcdSecurity {
    /// Set for `https://` endpoints.
    pub tls: Option<Arc<rustls::ClientConfig>>,
    pub user: Option<EtcdUser>,
}

fn certs(p: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let pem = std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()))?;
    let v: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{}: {e}", p.display()))?;
    if v.is_empty() {
        return Err(format!("no certificate in {}", p.display()));
    }
    Ok(v)
}

impl EtcdSecurity {
    /// Loads the TLS files (required with `https://` endpoints, refused
    /// without them: a CA given for plain endpoints would protect nothing).
    pub fn load(
        tls_endpoints: bool,
        files: &EtcdTlsFiles,
        user: Option<EtcdUser>,
    ) -> Result<EtcdSecurity, String> {
        if let Some(u) = &user {
            if u.name.is_empty() {
                return Err("the etcd user name is empty".into());
            }
        }
        if !tls_endpoints {
            if !files.is_empty() {
                return Err(
                    "etcd TLS files are set but the etcd endpoints are not https://".into(),
                );
            }
            return Ok(EtcdSecurity { tls: None, user });
        }
        let ca = files.ca.as_ref().ok_or(
            "https:// etcd endpoints need the CA that signed etcd's certificates (tls_ca)",
        )?;
        let mut roots = rustls::RootCertStore::empty();
        for c in certs(ca)? {
            roots.add(c).map_err(|e| format!("{}: {e}", ca.display()))?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots);
        let config = match (&files.cert, &files.key) {
            (Some(c), Some(k)) => {
                let key =
                    PrivateKeyDer::from_pem_file(k).map_err(|e| format!("{}: {e}", k.display()))?;
                builder
                    .with_client_auth_cert(certs(c)?, key)
                    .map_err(|e| format!("{}: {e}", c.display()))?
            }
            (None, None) => builder.with_no_client_auth(),
            _ => {
                return Err("an etcd client certificate needs tls_cert and tls_key together".into())
            }
        };
        Ok(EtcdSecurity {
            tls: Some(Arc::new(config)),
            user,
        })
    }
}

/// A connection to one endpoint, plain or TLS.
pub(super) enum Conn {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Conn {
    /// Wraps `tcp` in TLS when `tls` is set, verifying the certificate
    /// against the host of `ep` (`host:port`).
    pub fn open(
        tcp: TcpStream,
        ep: &str,
        tls: Option<&Arc<rustls::ClientConfig>>,
    ) -> Result<Conn, String> {
        let Some(cfg) = tls else {
            return Ok(Conn::Plain(tcp));
        };
        let host = ep
            .rsplit_once(':')
            .map_or(ep, |(h, _)| h)
            .trim_start_matches('[')
            .trim_end_matches(']');
        let name = ServerName::try_from(host.to_string())
            .map_err(|e| format!("{host} is not a valid TLS name: {e}"))?;
        let conn = rustls::ClientConnection::new(cfg.clone(), name).map_err(|e| e.to_string())?;
        Ok(Conn::Tls(Box::new(rustls::StreamOwned::new(conn, tcp))))
    }
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Conn::Plain(s) => s.read(buf),
            Conn::Tls(s) => match s.read(buf) {
                // A peer that closes without close_notify: what it sent
                // is the answer (a cut one fails to parse as JSON).
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(0),
                r => r,
            },
        }
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Conn::Plain(s) => s.write(buf),
            Conn::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Conn::Plain(s) => s.flush(),
            Conn::Tls(s) => s.flush(),
        }
    }
}

/// Whether etcd refused a call for its token (expired, or issued before
/// etcd restarted), so a new one may help.
pub(super) fn token_refused(status: u16, body: &str) -> bool {
    status == 401 || body.contains("invalid auth token")
}
