//! Who may connect: host-based rules (`[[auth.rule]]` in walden.toml),
//! checked in order for each connection; the first rule that matches its
//! connection type, database, role and address decides how it
//! authenticates, and a connection no rule matches is refused
//! (PostgreSQL's `pg_hba.conf` model).
//!
//! ```toml
//! [[auth.rule]]
//! type = "host"                # host (TLS or not) | hostssl | hostnossl
//! databases = "all"            # or ["walden", "sales"], "sameuser", "samerole"
//! roles = ["alice", "+admins"] # or "all"; +name: the members of that role
//! address = "10.0.0.0/8"       # a CIDR range, one address, or "all"
//! method = "scram-sha-256"     # trust | scram-sha-256 | cert | reject
//! ```

use serde::{Deserialize, Deserializer};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use walden_engine::roles::RoleCatalog;

/// How a connection that matched a rule authenticates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthMethod {
    /// No password: the role must still exist and have LOGIN.
    Trust,
    /// SCRAM-SHA-256 against the role's stored verifier.
    ScramSha256,
    /// A TLS client certificate, verified against `[tls] ca`, whose common
    /// name is the role's name.
    Cert,
    /// Refused.
    Reject,
}

impl AuthMethod {
    pub fn name(self) -> &'static str {
        match self {
            AuthMethod::Trust => "trust",
            AuthMethod::ScramSha256 => "scram-sha-256",
            AuthMethod::Cert => "cert",
            AuthMethod::Reject => "reject",
        }
    }

    fn parse(s: &str) -> Result<AuthMethod, String> {
        Ok(match s {
            "trust" => AuthMethod::Trust,
            "scram-sha-256" => AuthMethod::ScramSha256,
            "cert" => AuthMethod::Cert,
            "reject" => AuthMethod::Reject,
            "md5" | "password" => {
                return Err(format!(
                    "method \"{s}\" is not supported: Walden stores only SCRAM verifiers; use \"scram-sha-256\""
                ))
            }
            other => {
                return Err(format!(
                    "unknown method \"{other}\" (trust, scram-sha-256, cert or reject)"
                ))
            }
        })
    }
}

/// Which connections a rule applies to, by their transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnType {
    /// TCP, with or without TLS.
    Host,
    /// TCP with TLS only.
    HostSsl,
    /// TCP without TLS only.
    HostNoSsl,
}

impl ConnType {
    pub fn name(self) -> &'static str {
        match self {
            ConnType::Host => "host",
            ConnType::HostSsl => "hostssl",
            ConnType::HostNoSsl => "hostnossl",
        }
    }
}

/// A database a rule names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DbPattern {
    All,
    /// The database named as the role.
    SameUser,
    /// A database whose name is a role the connecting role is a member of.
    SameRole,
    /// Replication connections (which the SQL port does not take: such a
    /// rule matches nothing there).
    Replication,
    Name(String),
}

impl fmt::Display for DbPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DbPattern::All => f.write_str("all"),
            DbPattern::SameUser => f.write_str("sameuser"),
            DbPattern::SameRole => f.write_str("samerole"),
            DbPattern::Replication => f.write_str("replication"),
            DbPattern::Name(n) => f.write_str(n),
        }
    }
}

/// A role a rule names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RolePattern {
    All,
    Name(String),
    /// `+name`: the role itself and its members, directly or not.
    MembersOf(String),
}

impl fmt::Display for RolePattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RolePattern::All => f.write_str("all"),
            RolePattern::Name(n) => f.write_str(n),
            RolePattern::MembersOf(n) => write!(f, "+{n}"),
        }
    }
}

/// An address range (`10.0.0.0/8`, `::1/128`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpNet {
    pub addr: IpAddr,
    pub prefix: u8,
}

impl IpNet {
    pub fn parse(s: &str) -> Result<IpNet, String> {
        let (a, p) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = a.parse().map_err(|_| {
            format!(
                "address \"{s}\" is not an IP address or CIDR range (host names are not supported)"
            )
        })?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match p {
            None => max,
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|n| *n <= max)
                .ok_or_else(|| format!("address \"{s}\": bad prefix length"))?,
        };
        let net = IpNet {
            addr: mask(addr, prefix),
            prefix,
        };
        if net.addr != addr {
            return Err(format!(
                "address \"{s}\" has bits set beyond its prefix (the range is {net})"
            ));
        }
        Ok(net)
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        ip.is_ipv4() == self.addr.is_ipv4() && mask(ip, self.prefix) == self.addr
    }

    /// Whether every address of the range is a loopback address.
    pub fn is_loopback_only(&self) -> bool {
        match self.addr {
            IpAddr::V4(a) => self.prefix >= 8 && a.octets()[0] == 127,
            IpAddr::V6(a) => self.prefix == 128 && a.is_loopback(),
        }
    }

    /// The prefix as a netmask (`pg_hba_file_rules.netmask`).
    pub fn netmask(&self) -> IpAddr {
        match self.addr {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::from(
                u32::MAX.checked_shl(32 - self.prefix as u32).unwrap_or(0),
            )),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::from(
                u128::MAX.checked_shl(128 - self.prefix as u32).unwrap_or(0),
            )),
        }
    }
}

fn mask(ip: IpAddr, prefix: u8) -> IpAddr {
    match ip {
        IpAddr::V4(a) => {
            let m = u32::MAX.checked_shl(32 - prefix as u32).unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(u32::from(a) & m))
        }
        IpAddr::V6(a) => {
            let m = u128::MAX.checked_shl(128 - prefix as u32).unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(u128::from(a) & m))
        }
    }
}

impl fmt::Display for IpNet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// The client addresses a rule applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddrPattern {
    All,
    Net(IpNet),
}

impl AddrPattern {
    fn is_loopback_only(&self) -> bool {
        match self {
            AddrPattern::All => false,
            AddrPattern::Net(n) => n.is_loopback_only(),
        }
    }
}

impl fmt::Display for AddrPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AddrPattern::All => f.write_str("all"),
            AddrPattern::Net(n) => n.fmt(f),
        }
    }
}

/// One rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// Where it was written, for messages: `[[auth.rule]] 2`,
    /// `default rule 1`, `auth = "trust"`.
    pub origin: String,
    pub conn: ConnType,
    pub databases: Vec<DbPattern>,
    pub roles: Vec<RolePattern>,
    pub address: AddrPattern,
    pub method: AuthMethod,
}

impl fmt::Display for Rule {
    /// As a `pg_hba.conf` line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let join = |v: Vec<String>| v.join(",");
        write!(
            f,
            "{} {} {} {} {}",
            self.conn.name(),
            join(self.databases.iter().map(|d| d.to_string()).collect()),
            join(self.roles.iter().map(|r| r.to_string()).collect()),
            self.address,
            self.method.name()
        )
    }
}

/// What a rule is matched against.
#[derive(Clone, Copy, Debug)]
pub struct Client<'a> {
    pub addr: IpAddr,
    pub tls: bool,
    pub user: &'a str,
    pub database: &'a str,
}

impl Rule {
    fn matches(&self, c: &Client<'_>, roles: &RoleCatalog) -> bool {
        let conn = match self.conn {
            ConnType::Host => true,
            ConnType::HostSsl => c.tls,
            ConnType::HostNoSsl => !c.tls,
        };
        let addr = match self.address {
            AddrPattern::All => true,
            AddrPattern::Net(n) => n.contains(c.addr),
        };
        let member_of = |group: &str| match (roles.oid_of(c.user), roles.oid_of(group)) {
            (Some(u), Some(g)) => roles.is_member_of(u, g),
            _ => false,
        };
        let role = self.roles.iter().any(|r| match r {
            RolePattern::All => true,
            RolePattern::Name(n) => n == c.user,
            RolePattern::MembersOf(g) => member_of(g),
        });
        let db = self.databases.iter().any(|d| match d {
            DbPattern::All => true,
            DbPattern::SameUser => c.database == c.user,
            DbPattern::SameRole => member_of(c.database),
            DbPattern::Replication => false,
            DbPattern::Name(n) => n == c.database,
        });
        conn && addr && role && db
    }

    /// Whether the rule lets a client beyond loopback in without a
    /// credential.
    pub fn trusts_remote(&self) -> bool {
        self.method == AuthMethod::Trust && !self.address.is_loopback_only()
    }
}

/// The rules in force, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rules {
    pub rules: Vec<Rule>,
}

impl Rules {
    /// Without `[auth]`: trust on loopback, SCRAM from everywhere else.
    pub fn defaults() -> Rules {
        let rule = |n: usize, address: &str, method| Rule {
            origin: format!("default rule {n}"),
            conn: ConnType::Host,
            databases: vec![DbPattern::All],
            roles: vec![RolePattern::All],
            address: match address {
                "all" => AddrPattern::All,
                a => AddrPattern::Net(IpNet::parse(a).expect("valid default")),
            },
            method,
        };
        Rules {
            rules: vec![
                rule(1, "127.0.0.0/8", AuthMethod::Trust),
                rule(2, "::1/128", AuthMethod::Trust),
                rule(3, "all", AuthMethod::ScramSha256),
            ],
        }
    }

    /// One rule for every connection (`auth = "trust"` or `"scram"`).
    pub fn everyone(method: AuthMethod) -> Rules {
        Rules {
            rules: vec![Rule {
                origin: format!("auth = \"{}\"", method.name()),
                conn: ConnType::Host,
                databases: vec![DbPattern::All],
                roles: vec![RolePattern::All],
                address: AddrPattern::All,
                method,
            }],
        }
    }

    /// The rules as configured (`None`: no `auth` key, the defaults).
    pub fn from_file(auth: Option<&AuthFile>) -> Result<Rules, String> {
        match auth {
            None => Ok(Rules::defaults()),
            Some(AuthFile::Shorthand(s)) => match s.as_str() {
                "trust" => Ok(Rules::everyone(AuthMethod::Trust)),
                "scram" | "scram-sha-256" => Ok(Rules::everyone(AuthMethod::ScramSha256)),
                other => Err(format!(
                    "auth = \"{other}\" is not supported: use [[auth.rule]] tables (or \"trust\", \"scram\")"
                )),
            },
            Some(AuthFile::Rules(sec)) => {
                if sec.rule.is_empty() {
                    return Err(
                        "[auth] has no rules: add [[auth.rule]] tables, or remove [auth] for the default rules"
                            .into(),
                    );
                }
                let rules = sec
                    .rule
                    .iter()
                    .enumerate()
                    .map(|(i, r)| {
                        let origin = format!("[[auth.rule]] {}", i + 1);
                        r.resolve(origin.clone())
                            .map_err(|e| format!("{origin}: {e}"))
                    })
                    .collect::<Result<_, _>>()?;
                Ok(Rules { rules })
            }
        }
    }

    /// The first rule that matches.
    pub fn decide(&self, c: &Client<'_>, roles: &RoleCatalog) -> Option<&Rule> {
        self.rules.iter().find(|r| r.matches(c, roles))
    }

    /// Checks the rules against the server they are for: a listen address
    /// beyond loopback with a rule that trusts clients beyond loopback is
    /// refused (anyone who reached the port could be any role), and so is a
    /// rule that needs TLS (or its client CA) that is not configured.
    pub fn check(&self, listen: &str, tls: bool, client_ca: bool) -> Result<(), String> {
        let loopback = walden_replication::config::is_loopback(listen);
        for r in &self.rules {
            if !loopback && r.trusts_remote() {
                return Err(format!(
                    "{} ({r}) trusts clients beyond loopback, and listen {listen} is not a loopback address: anyone who reaches the port could connect as any role. Use scram-sha-256 (or cert) for remote addresses, or listen on 127.0.0.1",
                    r.origin
                ));
            }
            if r.conn == ConnType::HostSsl && !tls {
                return Err(format!(
                    "{} ({r}) cannot match: hostssl needs TLS, and [tls] is not configured",
                    r.origin
                ));
            }
            if r.method == AuthMethod::Cert && !client_ca {
                return Err(format!(
                    "{} ({r}): cert authentication needs [tls] with a client CA (ca = \"...\")",
                    r.origin
                ));
            }
        }
        Ok(())
    }
}

/// `auth` in walden.toml: `auth = "trust" | "scram"`, or `[[auth.rule]]`
/// tables.
#[derive(Clone, Debug)]
pub enum AuthFile {
    Shorthand(String),
    Rules(AuthSection),
}

impl<'de> Deserialize<'de> for AuthFile {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match toml::Value::deserialize(d)? {
            toml::Value::String(s) => Ok(AuthFile::Shorthand(s)),
            v @ toml::Value::Table(_) => v
                .try_into::<AuthSection>()
                .map(AuthFile::Rules)
                .map_err(|e| D::Error::custom(format!("[auth]: {}", e.message()))),
            other => Err(D::Error::custom(format!(
                "auth must be [[auth.rule]] tables (or \"trust\", \"scram\"), not a {}",
                other.type_str()
            ))),
        }
    }
}

/// `[auth]`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthSection {
    #[serde(default)]
    pub rule: Vec<RuleFile>,
}

/// One name or a list of them.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum Names {
    One(String),
    Many(Vec<String>),
}

impl Names {
    fn list(&self) -> Vec<&str> {
        match self {
            Names::One(s) => vec![s.as_str()],
            Names::Many(v) => v.iter().map(|s| s.as_str()).collect(),
        }
    }
}

/// `[[auth.rule]]` as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleFile {
    /// host (default) | hostssl | hostnossl.
    #[serde(rename = "type")]
    pub conn: Option<String>,
    /// Default "all".
    pub databases: Option<Names>,
    /// Default "all".
    pub roles: Option<Names>,
    /// Required: a CIDR range, one address, or "all".
    pub address: String,
    /// Required.
    pub method: String,
}

impl RuleFile {
    fn resolve(&self, origin: String) -> Result<Rule, String> {
        let conn = match self.conn.as_deref().unwrap_or("host") {
            "host" => ConnType::Host,
            "hostssl" => ConnType::HostSsl,
            "hostnossl" => ConnType::HostNoSsl,
            "local" => {
                return Err(
                    "type \"local\" is not supported: Walden listens on TCP only".to_string(),
                )
            }
            other => {
                return Err(format!(
                    "unknown type \"{other}\" (host, hostssl or hostnossl)"
                ))
            }
        };
        let names = |n: &Option<Names>, what: &str| -> Result<Vec<String>, String> {
            let v: Vec<String> = match n {
                None => vec!["all".into()],
                Some(n) => n.list().into_iter().map(str::to_string).collect(),
            };
            if v.is_empty() || v.iter().any(|s| s.is_empty()) {
                return Err(format!("{what} must name at least one, none empty"));
            }
            Ok(v)
        };
        let databases = names(&self.databases, "databases")?
            .into_iter()
            .map(|d| match d.as_str() {
                "all" => DbPattern::All,
                "sameuser" => DbPattern::SameUser,
                "samerole" | "samegroup" => DbPattern::SameRole,
                "replication" => DbPattern::Replication,
                _ => DbPattern::Name(d),
            })
            .collect();
        let roles = names(&self.roles, "roles")?
            .into_iter()
            .map(|r| match r.strip_prefix('+') {
                Some("") => Err("roles: \"+\" needs a role name".to_string()),
                Some(g) => Ok(RolePattern::MembersOf(g.to_string())),
                None if r == "all" => Ok(RolePattern::All),
                None => Ok(RolePattern::Name(r)),
            })
            .collect::<Result<_, _>>()?;
        let address = match self.address.as_str() {
            "all" => AddrPattern::All,
            "samehost" | "samenet" => {
                return Err(format!(
                    "address \"{}\" is not supported: write the CIDR range",
                    self.address
                ))
            }
            a => AddrPattern::Net(IpNet::parse(a)?),
        };
        Ok(Rule {
            origin,
            conn,
            databases,
            roles,
            address,
            method: AuthMethod::parse(&self.method)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(toml_text: &str) -> Result<Rules, String> {
        #[derive(Deserialize)]
        struct F {
            auth: Option<AuthFile>,
        }
        let f: F = toml::from_str(toml_text).map_err(|e| e.to_string())?;
        Rules::from_file(f.auth.as_ref())
    }

    fn client<'a>(addr: &str, tls: bool, user: &'a str, database: &'a str) -> Client<'a> {
        Client {
            addr: addr.parse().unwrap(),
            tls,
            user,
            database,
        }
    }

    #[test]
    fn cidr_ranges() {
        let n = IpNet::parse("10.1.0.0/16").unwrap();
        assert!(n.contains("10.1.200.3".parse().unwrap()));
        assert!(!n.contains("10.2.0.1".parse().unwrap()));
        assert!(!n.contains("::1".parse().unwrap()));
        assert_eq!(n.netmask().to_string(), "255.255.0.0");
        assert!(IpNet::parse("10.1.0.1/16")
            .unwrap_err()
            .contains("10.1.0.0/16"));
        assert!(IpNet::parse("10.0.0.0/33").is_err());
        assert!(IpNet::parse("example.com").is_err());
        assert_eq!(IpNet::parse("192.0.2.7").unwrap().prefix, 32);
        assert!(IpNet::parse("127.0.0.0/8").unwrap().is_loopback_only());
        assert!(!IpNet::parse("0.0.0.0/0").unwrap().is_loopback_only());
        assert!(IpNet::parse("::1/128").unwrap().is_loopback_only());
        assert!(IpNet::parse("::/0")
            .unwrap()
            .contains("fe80::1".parse().unwrap()));
        assert_eq!(
            IpNet::parse("fe80::/10").unwrap().netmask().to_string(),
            "ffc0::"
        );
    }

    #[test]
    fn first_match_wins() {
        let r = rules(
            r#"
            [[auth.rule]]
            databases = "walden"
            roles = "mallory"
            address = "all"
            method = "reject"
            [[auth.rule]]
            type = "hostssl"
            roles = ["alice", "+admins"]
            address = "10.0.0.0/8"
            method = "scram-sha-256"
            [[auth.rule]]
            address = "127.0.0.1"
            method = "trust"
            "#,
        )
        .unwrap();
        let cat = RoleCatalog::default();
        let m = |c: Client<'_>| r.decide(&c, &cat).map(|r| r.origin.clone());
        assert_eq!(
            m(client("127.0.0.1", false, "mallory", "walden")).as_deref(),
            Some("[[auth.rule]] 1")
        );
        assert_eq!(
            m(client("127.0.0.1", false, "mallory", "other")).as_deref(),
            Some("[[auth.rule]] 3")
        );
        assert_eq!(
            m(client("10.1.2.3", true, "alice", "x")).as_deref(),
            Some("[[auth.rule]] 2")
        );
        // Without TLS, the hostssl rule does not match; nothing else does.
        assert_eq!(m(client("10.1.2.3", false, "alice", "x")), None);
        // +admins: no such role, so no member of it.
        assert_eq!(m(client("10.1.2.3", true, "bob", "x")), None);
        assert_eq!(
            r.rules[1].to_string(),
            "hostssl all alice,+admins 10.0.0.0/8 scram-sha-256"
        );
    }

    #[test]
    fn defaults_trust_loopback_only() {
        let r = rules("").unwrap();
        let cat = RoleCatalog::default();
        let method = |a: &str| r.decide(&client(a, false, "u", "d"), &cat).unwrap().method;
        assert_eq!(method("127.0.0.1"), AuthMethod::Trust);
        assert_eq!(method("127.8.0.1"), AuthMethod::Trust);
        assert_eq!(method("::1"), AuthMethod::Trust);
        assert_eq!(method("192.0.2.1"), AuthMethod::ScramSha256);
        assert_eq!(method("2001:db8::1"), AuthMethod::ScramSha256);
        r.check("0.0.0.0:5433", false, false).unwrap();
        r.check("127.0.0.1:5433", false, false).unwrap();
    }

    #[test]
    fn remote_trust_refused_on_a_remote_listen() {
        let r = rules("[[auth.rule]]\naddress = \"0.0.0.0/0\"\nmethod = \"trust\"").unwrap();
        r.check("127.0.0.1:5433", false, false).unwrap();
        let e = r.check("0.0.0.0:5433", false, false).unwrap_err();
        assert!(
            e.contains("[[auth.rule]] 1 (host all all 0.0.0.0/0 trust)"),
            "{e}"
        );
        let e = rules("auth = \"trust\"")
            .unwrap()
            .check("192.0.2.1:5433", false, false)
            .unwrap_err();
        assert!(
            e.starts_with("auth = \"trust\" (host all all all trust)"),
            "{e}"
        );
    }

    #[test]
    fn bad_rules_say_what_is_wrong() {
        let err = |t: &str| rules(t).unwrap_err();
        assert!(err("[[auth.rule]]\naddress = \"all\"\nmethod = \"md5\"").contains("SCRAM"));
        assert!(
            err("[[auth.rule]]\naddress = \"all\"\nmethod = \"ident\"").contains("unknown method")
        );
        assert!(err("[[auth.rule]]\nmethod = \"trust\"").contains("address"));
        assert!(
            err("[[auth.rule]]\naddress = \"all\"\nmethod = \"trust\"\nuser = \"x\"")
                .contains("unknown field")
        );
        assert!(
            err("[[auth.rule]]\ntype = \"local\"\naddress = \"all\"\nmethod = \"trust\"")
                .contains("[[auth.rule]] 1: type \"local\"")
        );
        assert!(err("[auth]").contains("no rules"));
        assert!(err("auth = \"md5\"").contains("not supported"));
        let r = rules("[[auth.rule]]\ntype = \"hostssl\"\naddress = \"all\"\nmethod = \"cert\"")
            .unwrap();
        assert!(r
            .check("127.0.0.1:1", false, false)
            .unwrap_err()
            .contains("hostssl needs TLS"));
        assert!(r
            .check("127.0.0.1:1", true, false)
            .unwrap_err()
            .contains("client CA"));
        r.check("127.0.0.1:1", true, true).unwrap();
    }
}
