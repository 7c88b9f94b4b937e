//! A small blocking client for etcd's v3 JSON gateway (`POST /v3/kv/range`,
//! `/v3/kv/put`, `/v3/kv/txn`, `/v3/kv/deleterange`, `/v3/lease/grant`,
//! `/v3/lease/keepalive`, `/v3/lease/revoke`): HTTP/1.1, one request per
//! connection, every step bounded by a timeout. Keys and values are bytes
//! (base64 in the JSON); 64-bit numbers travel as strings.

use super::etcd_access::{token_refused, Conn, EtcdSecurity};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use parking_lot::Mutex;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// Why a call to etcd failed.
#[derive(Debug, thiserror::Error)]
pub enum EtcdError {
    #[error("no etcd endpoint answered ({0})")]
    Unreachable(String),
    #[error("etcd answered {status}: {body}")]
    Status { status: u16, body: String },
    #[error("etcd answered something unreadable: {0}")]
    Protocol(String),
    #[error("etcd endpoint {0} is not etcd://host:port, http://host:port or https://host:port")]
    BadEndpoint(String),
    #[error("etcd endpoints mix https:// with plain ones: {0}")]
    MixedSchemes(String),
    #[error("etcd refused the user: {0}")]
    Auth(String),
    #[error("cannot reach etcd over TLS: {0}")]
    Tls(String),
}

pub type EtcdResult<T> = Result<T, EtcdError>;

/// One key as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kv {
    pub key: String,
    pub value: Vec<u8>,
    pub create_revision: i64,
    pub mod_revision: i64,
    pub lease: i64,
}

/// A condition of a transaction.
#[derive(Clone, Debug)]
pub enum Compare {
    /// The key does not exist.
    Absent(String),
    /// The key holds exactly this value.
    ValueIs(String, Vec<u8>),
    /// The key is attached to this lease.
    LeaseIs(String, i64),
}

/// An operation of a transaction.
#[derive(Clone, Debug)]
pub enum Op<'a> {
    /// Key, value, lease (0: none).
    Put(&'a str, &'a [u8], i64),
    Delete(&'a str),
}

/// The endpoints of one cluster, tried in turn (the last one that answered
/// first).
#[derive(Debug)]
pub struct Etcd {
    endpoints: Vec<String>,
    preferred: std::sync::atomic::AtomicUsize,
    timeout: Duration,
    security: EtcdSecurity,
    /// The authentication token, once etcd gave one.
    token: Mutex<Option<String>>,
}

const SCHEMES: [&str; 3] = ["etcd://", "http://", "https://"];

fn strip_scheme(s: &str) -> &str {
    SCHEMES.iter().find_map(|p| s.strip_prefix(p)).unwrap_or(s)
}

/// Whether `spec`'s endpoints are `https://`. A bare `host:port` takes
/// the first item's scheme (`https://h1:2379,h2:2379`); a mix is refused,
/// since a plain member would see the credentials in clear.
pub fn endpoints_use_tls(spec: &str) -> EtcdResult<bool> {
    let mut tls: Option<bool> = None;
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let this = if part.starts_with("https://") {
            Some(true)
        } else if part.starts_with("etcd://") || part.starts_with("http://") {
            Some(false)
        } else {
            None
        };
        match (tls, this) {
            (None, t) => tls = Some(t.unwrap_or(false)),
            (Some(a), Some(b)) if a != b => return Err(EtcdError::MixedSchemes(spec.to_string())),
            _ => {}
        }
    }
    Ok(tls.unwrap_or(false))
}

/// `etcd://h1:2379,h2:2379` (or `http://`, `https://`, or bare
/// `host:port`, comma separated) into `host:port` items.
pub fn parse_endpoints(spec: &str) -> EtcdResult<Vec<String>> {
    let mut out = Vec::new();
    let rest = strip_scheme(spec);
    for part in rest.split(',') {
        let p = part.trim();
        let p = strip_scheme(p).trim_end_matches('/');
        if p.is_empty() {
            continue;
        }
        if p.contains('/')
            || !p
                .rsplit_once(':')
                .is_some_and(|(h, port)| !h.is_empty() && port.parse::<u16>().is_ok())
        {
            return Err(EtcdError::BadEndpoint(part.to_string()));
        }
        out.push(p.to_string());
    }
    if out.is_empty() {
        return Err(EtcdError::BadEndpoint(spec.to_string()));
    }
    Ok(out)
}

fn b64(b: &[u8]) -> String {
    B64.encode(b)
}

fn num(v: &Value) -> i64 {
    match v {
        Value::String(s) => s.parse().unwrap_or(0),
        Value::Number(n) => n.as_i64().unwrap_or(0),
        _ => 0,
    }
}

/// The key just past every key starting with `prefix`.
pub fn prefix_end(prefix: &str) -> Vec<u8> {
    let mut b = prefix.as_bytes().to_vec();
    while let Some(last) = b.pop() {
        if last < 0xff {
            b.push(last + 1);
            return b;
        }
    }
    vec![0]
}

impl Etcd {
    pub fn new(endpoints: Vec<String>, timeout: Duration) -> Etcd {
        Etcd::secured(endpoints, timeout, EtcdSecurity::default())
    }

    /// A client of a cluster reached over TLS and/or as an etcd user.
    pub fn secured(endpoints: Vec<String>, timeout: Duration, security: EtcdSecurity) -> Etcd {
        Etcd {
            endpoints,
            preferred: Default::default(),
            timeout,
            security,
            token: Mutex::new(None),
        }
    }

    pub fn endpoints(&self) -> &[String] {
        &self.endpoints
    }

    /// POSTs `body` to `path` on the first endpoint that answers, as the
    /// configured user when there is one (authenticating first, and once
    /// more when etcd no longer takes the token).
    fn call(&self, path: &str, body: &Value) -> EtcdResult<Value> {
        if self.security.user.is_none() {
            return self.call_any(path, body, None);
        }
        // Not in the match: its guard would live through `authenticate`.
        let cached = self.token.lock().clone();
        let token = match cached {
            Some(t) => t,
            None => self.authenticate()?,
        };
        match self.call_any(path, body, Some(&token)) {
            Err(EtcdError::Status { status, body: b }) if token_refused(status, &b) => {
                let fresh = self.authenticate()?;
                self.call_any(path, body, Some(&fresh))
            }
            r => r,
        }
    }

    /// A new token for the configured user.
    fn authenticate(&self) -> EtcdResult<String> {
        let Some(u) = &self.security.user else {
            return Err(EtcdError::Auth("no user configured".into()));
        };
        let v = self
            .call_any(
                "/v3/auth/authenticate",
                &json!({ "name": u.name, "password": u.password }),
                None,
            )
            .map_err(|e| match e {
                EtcdError::Status { body, .. } if body.contains("CommonName") => {
                    EtcdError::Auth(format!(
                        "{}: {} (etcd's gateway takes no client certificate with a CommonName \
                         while its authentication is on: issue the certificate without one)",
                        u.name,
                        body.trim()
                    ))
                }
                EtcdError::Status { body, .. } => {
                    EtcdError::Auth(format!("{}: {}", u.name, body.trim()))
                }
                e => e,
            })?;
        let token = v["token"]
            .as_str()
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                EtcdError::Auth(format!(
                    "{}: etcd gave no token (is authentication enabled in etcd?)",
                    u.name
                ))
            })?
            .to_string();
        *self.token.lock() = Some(token.clone());
        Ok(token)
    }

    /// POSTs `body` to `path` on the first endpoint that answers.
    fn call_any(&self, path: &str, body: &Value, token: Option<&str>) -> EtcdResult<Value> {
        use std::sync::atomic::Ordering::Relaxed;
        let n = self.endpoints.len();
        let first = self.preferred.load(Relaxed) % n;
        let mut errors = Vec::new();
        // Every endpoint refusing the TLS handshake is a certificate
        // problem for the operator, not an outage.
        let mut all_tls = true;
        for i in 0..n {
            let idx = (first + i) % n;
            let ep = &self.endpoints[idx];
            match self.call_one(ep, path, body, token) {
                Ok(v) => {
                    self.preferred.store(idx, Relaxed);
                    return Ok(v);
                }
                Err(e @ EtcdError::Status { .. }) => return Err(e),
                Err(EtcdError::Tls(e)) => errors.push(format!("{ep}: {e}")),
                Err(e) => {
                    all_tls = false;
                    errors.push(format!("{ep}: {e}"))
                }
            }
        }
        if all_tls {
            return Err(EtcdError::Tls(errors.join("; ")));
        }
        Err(EtcdError::Unreachable(errors.join("; ")))
    }

    fn call_one(
        &self,
        ep: &str,
        path: &str,
        body: &Value,
        token: Option<&str>,
    ) -> EtcdResult<Value> {
        let io = |e: std::io::Error| EtcdError::Unreachable(e.to_string());
        let addr = ep
            .to_socket_addrs()
            .map_err(io)?
            .next()
            .ok_or_else(|| EtcdError::Unreachable(format!("{ep} does not resolve")))?;
        let tcp = TcpStream::connect_timeout(&addr, self.timeout).map_err(io)?;
        tcp.set_read_timeout(Some(self.timeout)).map_err(io)?;
        tcp.set_write_timeout(Some(self.timeout)).map_err(io)?;
        let _ = tcp.set_nodelay(true);
        let mut s = Conn::open(tcp, ep, self.security.tls.as_ref()).map_err(EtcdError::Tls)?;
        let payload = body.to_string();
        let auth = token.map_or(String::new(), |t| format!("Authorization: {t}\r\n"));
        let req = format!(
            "POST {path} HTTP/1.1\r\nHost: {ep}\r\nContent-Type: application/json\r\n{auth}Content-Length: {}\r\nConnection: close\r\n\r\n{payload}",
            payload.len()
        );
        s.write_all(req.as_bytes())
            .and_then(|_| s.flush())
            .map_err(|e| tls_or_io(&self.security, e))?;
        let mut raw = Vec::new();
        let deadline = std::time::Instant::now() + self.timeout;
        let mut buf = [0u8; 8192];
        loop {
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(k) => raw.extend_from_slice(&buf[..k]),
                Err(e) => return Err(tls_or_io(&self.security, e)),
            }
            if std::time::Instant::now() > deadline {
                return Err(EtcdError::Unreachable(format!("{ep}: answer too slow")));
            }
            if raw.len() > 64 << 20 {
                return Err(EtcdError::Protocol("answer over 64 MiB".into()));
            }
        }
        let (status, body) = parse_http(&raw)?;
        let text = String::from_utf8_lossy(&body).to_string();
        if status != 200 {
            return Err(EtcdError::Status { status, body: text });
        }
        // A streaming call (keepalive) answers `{"result": ...}` lines.
        let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("{}");
        let v: Value = serde_json::from_str(first)
            .map_err(|e| EtcdError::Protocol(format!("{e}: {first}")))?;
        if let Some(err) = v.get("error") {
            return Err(EtcdError::Status {
                status,
                body: err.to_string(),
            });
        }
        Ok(v.get("result").cloned().unwrap_or(v))
    }

    /// A new lease of `ttl_s` seconds: its id and TTL.
    pub fn grant(&self, ttl_s: u64) -> EtcdResult<(i64, i64)> {
        let v = self.call("/v3/lease/grant", &json!({ "TTL": ttl_s }))?;
        let id = num(&v["ID"]);
        if id == 0 {
            return Err(EtcdError::Protocol(format!(
                "lease grant without an ID: {v}"
            )));
        }
        Ok((id, num(&v["TTL"])))
    }

    /// Renews a lease: its TTL from now (0: the lease is gone).
    pub fn keepalive(&self, id: i64) -> EtcdResult<i64> {
        let v = self.call("/v3/lease/keepalive", &json!({ "ID": id.to_string() }))?;
        Ok(num(&v["TTL"]))
    }

    pub fn revoke(&self, id: i64) -> EtcdResult<()> {
        self.call("/v3/lease/revoke", &json!({ "ID": id.to_string() }))
            .map(|_| ())
    }

    pub fn put(&self, key: &str, value: &[u8], lease: i64) -> EtcdResult<()> {
        let mut body = json!({ "key": b64(key.as_bytes()), "value": b64(value) });
        if lease != 0 {
            body["lease"] = json!(lease.to_string());
        }
        self.call("/v3/kv/put", &body).map(|_| ())
    }

    pub fn delete(&self, key: &str) -> EtcdResult<()> {
        self.call("/v3/kv/deleterange", &json!({ "key": b64(key.as_bytes()) }))
            .map(|_| ())
    }

    /// Every key under `prefix`, in key order.
    pub fn get_prefix(&self, prefix: &str) -> EtcdResult<Vec<Kv>> {
        let v = self.call(
            "/v3/kv/range",
            &json!({ "key": b64(prefix.as_bytes()), "range_end": b64(&prefix_end(prefix)) }),
        )?;
        let mut out = Vec::new();
        for kv in v["kvs"].as_array().map(|a| a.as_slice()).unwrap_or(&[]) {
            let dec = |f: &str| {
                kv[f]
                    .as_str()
                    .map(|s| B64.decode(s))
                    .transpose()
                    .map_err(|e| EtcdError::Protocol(format!("{f}: {e}")))
                    .map(Option::unwrap_or_default)
            };
            out.push(Kv {
                key: String::from_utf8_lossy(&dec("key")?).to_string(),
                value: dec("value")?,
                create_revision: num(&kv["create_revision"]),
                mod_revision: num(&kv["mod_revision"]),
                lease: num(&kv["lease"]),
            });
        }
        Ok(out)
    }

    /// If every comparison holds, puts `(key, value, lease)` (in order);
    /// whether it did.
    pub fn txn_put(&self, cmp: &[Compare], puts: &[(&str, &[u8], i64)]) -> EtcdResult<bool> {
        let ops: Vec<Op> = puts.iter().map(|(k, v, l)| Op::Put(k, v, *l)).collect();
        self.txn(cmp, &ops)
    }

    /// If every comparison holds, runs `ops` (in order); whether it did.
    pub fn txn(&self, cmp: &[Compare], ops: &[Op]) -> EtcdResult<bool> {
        let compare: Vec<Value> = cmp
            .iter()
            .map(|c| match c {
                Compare::Absent(k) => json!({
                    "target": "CREATE", "result": "EQUAL",
                    "key": b64(k.as_bytes()), "create_revision": "0"
                }),
                Compare::ValueIs(k, v) => json!({
                    "target": "VALUE", "result": "EQUAL",
                    "key": b64(k.as_bytes()), "value": b64(v)
                }),
                Compare::LeaseIs(k, l) => json!({
                    "target": "LEASE", "result": "EQUAL",
                    "key": b64(k.as_bytes()), "lease": l.to_string()
                }),
            })
            .collect();
        let success: Vec<Value> = ops
            .iter()
            .map(|op| match op {
                Op::Put(k, v, lease) => {
                    let mut p = json!({ "key": b64(k.as_bytes()), "value": b64(v) });
                    if *lease != 0 {
                        p["lease"] = json!(lease.to_string());
                    }
                    json!({ "request_put": p })
                }
                Op::Delete(k) => json!({ "request_delete_range": { "key": b64(k.as_bytes()) } }),
            })
            .collect();
        let v = self.call(
            "/v3/kv/txn",
            &json!({ "compare": compare, "success": success }),
        )?;
        Ok(v["succeeded"].as_bool().unwrap_or(false))
    }
}

/// Status and body of a whole HTTP/1.1 answer (chunked or not).
/// A failed read or write: over TLS, a handshake failure (a certificate
/// etcd or this node refused) is reported as such, not as an unreachable
/// endpoint.
fn tls_or_io(sec: &EtcdSecurity, e: std::io::Error) -> EtcdError {
    if sec.tls.is_some() && e.kind() == std::io::ErrorKind::InvalidData {
        EtcdError::Tls(e.to_string())
    } else {
        EtcdError::Unreachable(e.to_string())
    }
}

fn parse_http(raw: &[u8]) -> EtcdResult<(u16, Vec<u8>)> {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| EtcdError::Protocol("no end of headers".into()))?;
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let mut body = raw[split + 4..].to_vec();
    let status = head
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| EtcdError::Protocol(format!("bad status line: {head}")))?;
    let chunked = head.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    if chunked {
        let mut out = Vec::new();
        let mut rest = &body[..];
        while let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") {
            let size_s = String::from_utf8_lossy(&rest[..eol]).to_string();
            let size = usize::from_str_radix(size_s.split(';').next().unwrap_or("").trim(), 16)
                .map_err(|_| EtcdError::Protocol(format!("bad chunk size {size_s:?}")))?;
            rest = &rest[eol + 2..];
            if size == 0 || rest.len() < size {
                out.extend_from_slice(&rest[..size.min(rest.len())]);
                break;
            }
            out.extend_from_slice(&rest[..size]);
            rest = rest.get(size + 2..).unwrap_or(&[]);
        }
        body = out;
    }
    Ok((status, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_parse() {
        assert_eq!(
            parse_endpoints("etcd://a:2379,b:2380").unwrap(),
            vec!["a:2379", "b:2380"]
        );
        assert_eq!(
            parse_endpoints("127.0.0.1:1,etcd://x:2").unwrap(),
            vec!["127.0.0.1:1", "x:2"]
        );
        assert!(parse_endpoints("etcd://a").is_err());
        assert!(parse_endpoints("").is_err());
        assert!(parse_endpoints("etcd://a:1/path").is_err());
    }

    #[test]
    fn prefix_end_is_the_next_key() {
        assert_eq!(prefix_end("/a/"), b"/a0".to_vec());
    }

    #[test]
    fn chunked_answers_are_joined() {
        let raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"a\":\r\n2\r\n1}\r\n0\r\n\r\n";
        let (s, b) = parse_http(raw).unwrap();
        assert_eq!(s, 200);
        assert_eq!(b, b"{\"a\":1}");
        let raw = b"HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\nno";
        assert_eq!(parse_http(raw).unwrap(), (404, b"no".to_vec()));
    }
}
