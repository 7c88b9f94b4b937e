//! TLS on replication connections: each instance has a certificate and key,
//! and both ends verify the other's certificate against the configured CA
//! (the primary also checks that the endpoint's certificate names the host
//! of its ENDPOINT_URL).

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::path::PathBuf;
use std::sync::Arc;

/// `[replication] tls_cert`, `tls_key`, `tls_ca`: PEM files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    /// This instance's certificate chain (used as server and as client).
    pub cert: PathBuf,
    pub key: PathBuf,
    /// The CA that signs every replica's certificate.
    pub ca: PathBuf,
}

/// Both sides' rustls configurations.
#[derive(Clone)]
pub(crate) struct TlsContext {
    pub acceptor: tokio_rustls::TlsAcceptor,
    pub connector: tokio_rustls::TlsConnector,
}

fn certs(p: &PathBuf) -> Result<Vec<CertificateDer<'static>>, String> {
    let pem = std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()))?;
    let v: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{}: {e}", p.display()))?;
    if v.is_empty() {
        return Err(format!("no certificate in {}", p.display()));
    }
    Ok(v)
}

impl TlsContext {
    pub fn load(f: &TlsFiles) -> Result<TlsContext, String> {
        let chain = certs(&f.cert)?;
        let key = || {
            PrivateKeyDer::from_pem_file(&f.key).map_err(|e| format!("{}: {e}", f.key.display()))
        };
        let mut roots = rustls::RootCertStore::empty();
        for c in certs(&f.ca)? {
            roots
                .add(c)
                .map_err(|e| format!("{}: {e}", f.ca.display()))?;
        }
        let roots = Arc::new(roots);
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            roots.clone(),
            provider.clone(),
        )
        .build()
        .map_err(|e| format!("{}: {e}", f.ca.display()))?;
        let sc = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_client_cert_verifier(verifier)
            .with_single_cert(chain.clone(), key()?)
            .map_err(|e| format!("{}: {e}", f.cert.display()))?;
        let cc = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots)
            .with_client_auth_cert(chain, key()?)
            .map_err(|e| format!("{}: {e}", f.cert.display()))?;
        Ok(TlsContext {
            acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(sc)),
            connector: tokio_rustls::TlsConnector::from(Arc::new(cc)),
        })
    }
}

/// The name the endpoint's certificate must carry: the host of `host:port`.
pub(crate) fn server_name(addr: &str) -> Result<ServerName<'static>, String> {
    let host = addr
        .rsplit_once(':')
        .map(|(h, _)| h)
        .unwrap_or(addr)
        .trim_start_matches('[')
        .trim_end_matches(']');
    ServerName::try_from(host.to_string())
        .map_err(|e| format!("ENDPOINT_URL host \"{host}\" is not a valid TLS name: {e}"))
}
