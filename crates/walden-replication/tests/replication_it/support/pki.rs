//! Test certificates made by openssl: CAs, and leaf certificates they sign
//! valid for 127.0.0.1 as server and client. Subjects carry no CommonName:
//! etcd's JSON gateway refuses a verified chain with one while its
//! authentication is on (it would not be used as the user).

use super::missing_tool;
use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Pki {
    dir: tempfile::TempDir,
}

fn openssl(dir: &Path, args: &[&str]) -> bool {
    Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

impl Pki {
    /// The CAs `cas` and the leaves `(name, signing CA)`; `None` (after
    /// `missing_tool`) when openssl cannot make them.
    pub fn new(cas: &[&str], leaves: &[(&str, &str)]) -> Option<Pki> {
        let pki = Pki {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::write(
            pki.path("leaf.ext"),
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n\
             basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n",
        )
        .unwrap();
        let ok = cas.iter().all(|c| pki.ca(c)) && leaves.iter().all(|(n, ca)| pki.leaf(n, ca));
        if !ok {
            missing_tool("openssl cannot make test certificates");
            return None;
        }
        Some(pki)
    }

    fn ca(&self, name: &str) -> bool {
        openssl(
            self.dir.path(),
            &[
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-days",
                "2",
                "-subj",
                &format!("/O={name}"),
                "-keyout",
                &format!("{name}.key"),
                "-out",
                &format!("{name}.crt"),
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign,cRLSign",
            ],
        )
    }

    /// `name.crt` and `name.key`, signed by `ca`.
    pub fn leaf(&self, name: &str, ca: &str) -> bool {
        let d = self.dir.path();
        openssl(
            d,
            &[
                "req",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-subj",
                &format!("/O={name}"),
                "-keyout",
                &format!("{name}.key"),
                "-out",
                &format!("{name}.csr"),
            ],
        ) && openssl(
            d,
            &[
                "x509",
                "-req",
                "-in",
                &format!("{name}.csr"),
                "-CA",
                &format!("{ca}.crt"),
                "-CAkey",
                &format!("{ca}.key"),
                "-CAcreateserial",
                "-days",
                "2",
                "-extfile",
                "leaf.ext",
                "-out",
                &format!("{name}.crt"),
            ],
        )
    }

    pub fn path(&self, f: &str) -> PathBuf {
        self.dir.path().join(f)
    }

    /// The path of a file as a string, for a command line.
    pub fn arg(&self, f: &str) -> String {
        self.path(f).to_string_lossy().into_owned()
    }
}
