//! Certificates for the TLS tests, made with the openssl command: a CA, a
//! server certificate and client certificates signed by it (EC P-256).

#![allow(dead_code)]

use crate::server_support::run_with_deadline;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

fn openssl(dir: &Path, args: &[&str]) {
    let out = run_with_deadline(
        Command::new("openssl").current_dir(dir).args(args),
        Duration::from_secs(30),
    );
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA, a server certificate for 127.0.0.1 and `server_ip`, and a client
/// certificate (CN = the role) for each of `roles`.
pub fn make_pki(dir: &Path, server_ip: &str, roles: &[&str]) {
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"];
    openssl(
        dir,
        &[
            &[
                "req",
                "-x509",
                "-nodes",
                "-days",
                "2",
                "-subj",
                "/CN=matrix CA",
            ][..],
            &ec[..],
            &["-keyout", "ca.key", "-out", "ca.crt"][..],
        ]
        .concat(),
    );
    let leaf = |name: &str, ext: String| {
        std::fs::write(dir.join(format!("{name}.ext")), ext).unwrap();
        let (key, csr, crt, extf) = (
            format!("{name}.key"),
            format!("{name}.csr"),
            format!("{name}.crt"),
            format!("{name}.ext"),
        );
        let subj = format!("/CN={name}");
        openssl(
            dir,
            &[
                &["req", "-new", "-nodes", "-subj", &subj][..],
                &ec[..],
                &["-keyout", &key, "-out", &csr][..],
            ]
            .concat(),
        );
        openssl(
            dir,
            &[
                "x509",
                "-req",
                "-in",
                &csr,
                "-days",
                "2",
                "-out",
                &crt,
                "-extfile",
                &extf,
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
            ],
        );
    };
    leaf(
        "server",
        format!("basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1,IP:{server_ip}\nextendedKeyUsage=serverAuth\n"),
    );
    for r in roles {
        leaf(
            r,
            "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n".into(),
        );
    }
}

/// libpq refuses a client key that others can read.
pub fn private(dir: &Path, roles: &[&str]) {
    use std::os::unix::fs::PermissionsExt;
    for r in roles {
        std::fs::set_permissions(
            dir.join(format!("{r}.key")),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
    }
}
