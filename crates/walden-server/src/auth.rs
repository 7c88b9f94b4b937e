//! Refused logins (counted by reason for `/metrics`, logged with address
//! and role, never a password) and the role a client certificate names.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Why a login was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// No host-based rule matched the connection.
    NoRule,
    /// The rule that matched is `reject`.
    Rejected,
    /// SCRAM failed: wrong password, no password, no such role, or the
    /// password expired (VALID UNTIL) — the client is not told which.
    Password,
    /// No client certificate, or one that names another role.
    Certificate,
    /// The role does not exist, or may not log in (after trust or a
    /// certificate, or a right password).
    Role,
}

impl Failure {
    pub const ALL: [Failure; 5] = [
        Failure::NoRule,
        Failure::Rejected,
        Failure::Password,
        Failure::Certificate,
        Failure::Role,
    ];

    /// The `reason` label.
    pub fn label(self) -> &'static str {
        match self {
            Failure::NoRule => "no_rule",
            Failure::Rejected => "rejected",
            Failure::Password => "password",
            Failure::Certificate => "certificate",
            Failure::Role => "role",
        }
    }
}

/// Refused logins since start, by reason.
#[derive(Debug, Default)]
pub struct FailureCounts([AtomicU64; 5]);

impl FailureCounts {
    pub fn record(&self, f: Failure, peer: std::net::SocketAddr, user: &str, database: &str) {
        self.0[f as usize].fetch_add(1, Relaxed);
        tracing::warn!(
            %peer,
            user,
            database,
            reason = f.label(),
            "login refused"
        );
    }

    pub fn get(&self, f: Failure) -> u64 {
        self.0[f as usize].load(Relaxed)
    }
}

/// The common name (CN) of a DER certificate's subject, if it has one as
/// a UTF-8, printable or IA5 string. The certificate was verified by
/// rustls; this only reads it.
pub fn common_name(der: &[u8]) -> Option<String> {
    let (_, cert, _) = tlv(der).filter(|t| t.0 == 0x30)?;
    let (_, tbs, _) = tlv(cert).filter(|t| t.0 == 0x30)?;
    let mut rest = tbs;
    let mut fields = Vec::new();
    while !rest.is_empty() && fields.len() < 6 {
        let (tag, content, r) = tlv(rest)?;
        rest = r;
        // The optional explicit version ([0]) comes first.
        if tag != 0xa0 || !fields.is_empty() {
            fields.push((tag, content));
        }
    }
    // serialNumber, signature, issuer, validity, subject.
    let (tag, subject) = *fields.get(4)?;
    if tag != 0x30 {
        return None;
    }
    let mut cn = None;
    let mut rdns = subject;
    while !rdns.is_empty() {
        let (tag, set, r) = tlv(rdns)?;
        rdns = r;
        if tag != 0x31 {
            return None;
        }
        let mut attrs = set;
        while !attrs.is_empty() {
            let (tag, attr, r) = tlv(attrs)?;
            attrs = r;
            if tag != 0x30 {
                return None;
            }
            let (oid_tag, oid, value) = tlv(attr)?;
            if oid_tag == 0x06 && oid == [0x55, 0x04, 0x03] {
                let (vtag, v, _) = tlv(value)?;
                if matches!(vtag, 0x0c | 0x13 | 0x16) {
                    cn = Some(String::from_utf8(v.to_vec()).ok()?);
                }
            }
        }
    }
    cn
}

/// One DER tag-length-value: (tag, content, what follows).
fn tlv(b: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let tag = *b.first()?;
    let first = *b.get(1)? as usize;
    let (len, head) = if first < 0x80 {
        (first, 2)
    } else {
        let n = first & 0x7f;
        if n == 0 || n > 4 {
            return None;
        }
        let mut len = 0usize;
        for i in 0..n {
            len = (len << 8) | *b.get(2 + i)? as usize;
        }
        (len, 2 + n)
    };
    let end = head.checked_add(len)?;
    if end > b.len() {
        return None;
    }
    Some((tag, &b[head..end], &b[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A DER length.
    fn len(n: usize) -> Vec<u8> {
        if n < 0x80 {
            vec![n as u8]
        } else {
            vec![0x82, (n >> 8) as u8, n as u8]
        }
    }

    fn tlv_of(tag: u8, content: &[u8]) -> Vec<u8> {
        let mut v = vec![tag];
        v.extend(len(content.len()));
        v.extend_from_slice(content);
        v
    }

    fn name(cn: &str) -> Vec<u8> {
        let o = tlv_of(0x06, &[0x55, 0x04, 0x0a]);
        let org = tlv_of(0x31, &tlv_of(0x30, &[o, tlv_of(0x0c, b"Org")].concat()));
        let c = tlv_of(0x06, &[0x55, 0x04, 0x03]);
        let cn = tlv_of(
            0x31,
            &tlv_of(0x30, &[c, tlv_of(0x0c, cn.as_bytes())].concat()),
        );
        tlv_of(0x30, &[org, cn].concat())
    }

    #[test]
    fn reads_the_subject_common_name() {
        let tbs = [
            tlv_of(0xa0, &tlv_of(0x02, &[2])),
            tlv_of(0x02, &[1, 2, 3]),
            tlv_of(0x30, &tlv_of(0x06, &[0x2a, 0x86, 0x48])),
            name("the-ca"),
            tlv_of(0x30, &[]),
            name("alice"),
            tlv_of(0x30, &[0; 300]),
        ]
        .concat();
        let cert = tlv_of(0x30, &[tlv_of(0x30, &tbs), tlv_of(0x30, &[])].concat());
        assert_eq!(common_name(&cert).as_deref(), Some("alice"));
        // Truncated or garbage input: no name, no panic.
        for n in 0..cert.len() {
            let _ = common_name(&cert[..n]);
        }
        assert_eq!(common_name(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff]), None);
        assert_eq!(common_name(b""), None);
    }
}
