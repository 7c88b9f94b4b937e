//! CREATE / ALTER / DROP ROLE (and USER, GROUP), GRANT and REVOKE: parsed
//! here (sqlparser's forms differ by dialect) and run against the instance's
//! role catalog. What Walden cannot honour (VALID UNTIL, WITH GRANT OPTION,
//! column privileges, ...) is refused with 0A000, never stored and ignored.

use crate::error::{ErrorKind, Result, SqlError};
use crate::front::{Command, Toks};
use crate::privileges::{denied, Who};
use crate::QueryOutput;
use sqlparser::tokenizer::Token;
use walden_engine::roles::{
    privs, Membership, ObjKind, Role, RoleCatalog, BOOTSTRAP_OID, PREDEFINED, PUBLIC,
};
use walden_engine::scram::ScramVerifier;
use walden_engine::{Database, Instance, Transaction};

/// A role attribute given to CREATE or ALTER ROLE.
#[derive(Clone, Debug, PartialEq)]
pub enum RoleOpt {
    Superuser(bool),
    CreateDb(bool),
    CreateRole(bool),
    Inherit(bool),
    Login(bool),
    Replication(bool),
    BypassRls(bool),
    ConnectionLimit(i32),
    /// `PASSWORD 'x'` (None: `PASSWORD NULL`).
    Password(Option<String>),
    /// `IN ROLE a, b`: the new role becomes a member of these.
    InRole(Vec<String>),
    /// `ROLE a, b` / `USER a, b`: these become members of the new role.
    Members(Vec<String>),
}

/// What a GRANT or REVOKE is about.
#[derive(Clone, Debug, PartialEq)]
pub enum Objects {
    Tables(Vec<String>),
    /// `ALL TABLES IN SCHEMA s, ...`.
    AllTables,
    Databases(Vec<String>),
    /// `ON SCHEMA public`: only USAGE, which every role has already.
    PublicSchema,
}

#[derive(Clone, Debug, PartialEq)]
pub enum AccessStmt {
    CreateRole {
        name: String,
        opts: Vec<RoleOpt>,
    },
    AlterRole {
        name: String,
        opts: Vec<RoleOpt>,
    },
    RenameRole {
        name: String,
        to: String,
    },
    DropRole {
        names: Vec<String>,
        if_exists: bool,
    },
    /// GRANT / REVOKE privileges (`grant` false: REVOKE).
    Privileges {
        grant: bool,
        bits: u8,
        objects: Objects,
        grantees: Vec<String>,
    },
    /// GRANT / REVOKE role membership.
    Membership {
        grant: bool,
        roles: Vec<String>,
        members: Vec<String>,
    },
}

impl AccessStmt {
    /// The statement's name, as PostgreSQL's command tag.
    pub fn name(&self) -> &'static str {
        match self {
            AccessStmt::CreateRole { .. } => "CREATE ROLE",
            AccessStmt::AlterRole { .. } | AccessStmt::RenameRole { .. } => "ALTER ROLE",
            AccessStmt::DropRole { .. } => "DROP ROLE",
            AccessStmt::Privileges { grant: true, .. } => "GRANT",
            AccessStmt::Privileges { grant: false, .. } => "REVOKE",
            AccessStmt::Membership { grant: true, .. } => "GRANT ROLE",
            AccessStmt::Membership { grant: false, .. } => "REVOKE ROLE",
        }
    }
}

// --- Parsing ------------------------------------------------------------------

fn syntax(t: &Toks, what: &str) -> SqlError {
    SqlError::syntax(format!(
        "syntax error in {what} at {}",
        t.peek_text().unwrap_or_else(|| "end of input".into())
    ))
}

/// A role or object name: unquoted names fold to lower case.
fn name(t: &mut Toks, what: &str) -> Result<String> {
    match t.next() {
        Some(Token::Word(w)) if w.quote_style.is_none() => Ok(w.value.to_ascii_lowercase()),
        Some(Token::Word(w)) => Ok(w.value),
        _ => Err(SqlError::syntax(format!(
            "syntax error: expected a {what} name"
        ))),
    }
}

/// A role name as a grantee or target: CURRENT_USER and friends resolve
/// later (kept as written, upper case, which no folded name can be).
fn role_spec(t: &mut Toks) -> Result<String> {
    for special in ["CURRENT_USER", "SESSION_USER", "CURRENT_ROLE", "PUBLIC"] {
        if t.is(0, special) && !t.quoted(0) {
            t.next();
            return Ok(special.to_string());
        }
    }
    t.eat("GROUP");
    name(t, "role")
}

fn name_list(t: &mut Toks, f: fn(&mut Toks) -> Result<String>) -> Result<Vec<String>> {
    let mut out = vec![f(t)?];
    while t.eat_tok(&Token::Comma) {
        out.push(f(t)?);
    }
    Ok(out)
}

fn object_name(t: &mut Toks) -> Result<String> {
    let mut n = name(t, "table")?;
    // public.t, dbo.t: Walden's one schema.
    while t.eat_tok(&Token::Period) {
        n = name(t, "table")?;
    }
    Ok(n)
}

fn role_options(t: &mut Toks, create: bool) -> Result<Vec<RoleOpt>> {
    t.eat("WITH");
    let mut opts = Vec::new();
    while !t.at_end() {
        let w = t.word(0).ok_or_else(|| syntax(t, "role options"))?;
        t.next();
        let flag = |base: &str, on: bool| -> Option<RoleOpt> {
            Some(match base {
                "SUPERUSER" => RoleOpt::Superuser(on),
                "CREATEDB" => RoleOpt::CreateDb(on),
                "CREATEROLE" => RoleOpt::CreateRole(on),
                "INHERIT" => RoleOpt::Inherit(on),
                "LOGIN" => RoleOpt::Login(on),
                "REPLICATION" => RoleOpt::Replication(on),
                "BYPASSRLS" => RoleOpt::BypassRls(on),
                _ => return None,
            })
        };
        let found = flag(&w, true).or_else(|| w.strip_prefix("NO").and_then(|b| flag(b, false)));
        if let Some(o) = found {
            opts.push(o);
            continue;
        }
        match w.as_str() {
            "CONNECTION" => {
                if !t.eat("LIMIT") {
                    return Err(syntax(t, "CONNECTION LIMIT"));
                }
                let v = t.value()?;
                let n: i32 = v.parse().ok().filter(|n| *n >= -1).ok_or_else(|| {
                    SqlError::new(
                        ErrorKind::InvalidParameter,
                        format!("invalid connection limit: {v}"),
                    )
                })?;
                opts.push(RoleOpt::ConnectionLimit(n));
            }
            "ENCRYPTED" | "PASSWORD" => {
                if w == "ENCRYPTED" && !t.eat("PASSWORD") {
                    return Err(syntax(t, "ENCRYPTED PASSWORD"));
                }
                if t.eat("NULL") {
                    opts.push(RoleOpt::Password(None));
                } else {
                    match t.next() {
                        Some(Token::SingleQuotedString(s)) => opts.push(RoleOpt::Password(Some(s))),
                        _ => return Err(syntax(t, "PASSWORD (a quoted string or NULL)")),
                    }
                }
            }
            "UNENCRYPTED" => {
                return Err(SqlError::unsupported(
                    "UNENCRYPTED PASSWORD (passwords are stored as SCRAM-SHA-256 verifiers)",
                ))
            }
            "IN" if create => {
                if !(t.eat("ROLE") || t.eat("GROUP")) {
                    return Err(syntax(t, "IN ROLE"));
                }
                opts.push(RoleOpt::InRole(name_list(t, |t| name(t, "role"))?));
            }
            "ROLE" | "USER" if create => {
                opts.push(RoleOpt::Members(name_list(t, |t| name(t, "role"))?));
            }
            "VALID" => return Err(SqlError::unsupported("VALID UNTIL (password expiry)")),
            "ADMIN" => {
                return Err(SqlError::unsupported(
                    "ADMIN (membership with admin option)",
                ))
            }
            "SYSID" => return Err(SqlError::unsupported("SYSID")),
            other => {
                return Err(SqlError::syntax(format!(
                    "syntax error: unrecognized role option \"{}\"",
                    other.to_ascii_lowercase()
                )))
            }
        }
    }
    Ok(opts)
}

/// Parses the statements this file runs; `first` is the statement's first
/// word (already known to be CREATE/ALTER/DROP ROLE|USER|GROUP, GRANT or
/// REVOKE) and `t` is positioned at it.
pub fn parse(first: &str, t: &mut Toks) -> Result<Command> {
    t.next();
    let stmt = match first {
        "CREATE" => {
            let kind = t.word(0).unwrap_or_default();
            t.next();
            let name = name(t, "role")?;
            let mut opts = role_options(t, true)?;
            if kind == "USER" && !opts.iter().any(|o| matches!(o, RoleOpt::Login(_))) {
                opts.insert(0, RoleOpt::Login(true));
            }
            AccessStmt::CreateRole { name, opts }
        }
        "ALTER" => {
            t.next(); // ROLE | USER | GROUP
            let name = role_spec(t)?;
            if t.eat("RENAME") {
                if !t.eat("TO") {
                    return Err(syntax(t, "ALTER ROLE ... RENAME TO"));
                }
                let to = self::name(t, "role")?;
                t.end("ALTER ROLE")?;
                AccessStmt::RenameRole { name, to }
            } else if t.is(0, "SET") || t.is(0, "RESET") || t.is(0, "IN") {
                return Err(SqlError::unsupported(
                    "ALTER ROLE ... SET / RESET (per-role settings)",
                ));
            } else if t.is(0, "ADD") || t.is(0, "DROP") {
                return Err(SqlError::unsupported(
                    "ALTER GROUP ... ADD/DROP USER (use GRANT role TO member)",
                ));
            } else {
                let opts = role_options(t, false)?;
                AccessStmt::AlterRole { name, opts }
            }
        }
        "DROP" => {
            t.next();
            let if_exists = t.is(0, "IF") && t.is(1, "EXISTS");
            if if_exists {
                t.next();
                t.next();
            }
            let names = name_list(t, |t| name(t, "role"))?;
            t.end("DROP ROLE")?;
            AccessStmt::DropRole { names, if_exists }
        }
        _ => parse_grant(first == "GRANT", t)?,
    };
    Ok(Command::Access(Box::new(stmt)))
}

fn privilege_bit(w: &str) -> Result<u8> {
    Ok(match w {
        "SELECT" => privs::SELECT,
        "INSERT" => privs::INSERT,
        "UPDATE" => privs::UPDATE,
        "DELETE" => privs::DELETE,
        "TRUNCATE" => privs::TRUNCATE,
        "CONNECT" => privs::CONNECT,
        "USAGE" => privs::USAGE,
        "REFERENCES" | "TRIGGER" | "TEMPORARY" | "TEMP" | "CREATE" | "EXECUTE" | "MAINTAIN" => {
            return Err(SqlError::unsupported(format!("the {w} privilege")))
        }
        other => {
            return Err(SqlError::syntax(format!(
                "unrecognized privilege type \"{}\"",
                other.to_ascii_lowercase()
            )))
        }
    })
}

fn parse_grant(grant: bool, t: &mut Toks) -> Result<AccessStmt> {
    let what = if grant { "GRANT" } else { "REVOKE" };
    if !grant && (t.is(0, "GRANT") || t.is(0, "ADMIN")) && t.is(1, "OPTION") {
        return Err(SqlError::unsupported(
            "REVOKE GRANT OPTION FOR / ADMIN OPTION FOR",
        ));
    }
    // Privileges or role names, up to ON (privileges) or TO/FROM (roles).
    let mut words: Vec<(String, bool)> = Vec::new();
    let mut all = false;
    loop {
        if t.eat("ALL") {
            t.eat("PRIVILEGES");
            all = true;
        } else {
            let quoted = t.quoted(0);
            let w = t.word(0).ok_or_else(|| syntax(t, what))?;
            let raw = name(t, "privilege or role")?;
            if t.peek_is(&Token::LParen) {
                return Err(SqlError::unsupported("column privileges"));
            }
            words.push((if quoted { raw } else { w }, quoted));
        }
        if !t.eat_tok(&Token::Comma) {
            break;
        }
    }
    if t.eat("ON") {
        let mut bits = 0u8;
        for (w, _) in &words {
            bits |= privilege_bit(w)?;
        }
        let objects = if t.eat("ALL") {
            if !(t.eat("TABLES") && t.eat("IN") && t.eat("SCHEMA")) {
                return Err(SqlError::unsupported(format!(
                    "{what} ON ALL ... other than ALL TABLES IN SCHEMA"
                )));
            }
            for s in name_list(t, |t| name(t, "schema"))? {
                check_schema(&s)?;
            }
            Objects::AllTables
        } else if t.eat("DATABASE") {
            Objects::Databases(name_list(t, |t| name(t, "database"))?)
        } else if t.eat("SCHEMA") {
            for s in name_list(t, |t| name(t, "schema"))? {
                check_schema(&s)?;
            }
            Objects::PublicSchema
        } else if t.is(0, "SEQUENCE")
            || t.is(0, "FUNCTION")
            || t.is(0, "PROCEDURE")
            || t.is(0, "ROUTINE")
            || t.is(0, "TYPE")
            || t.is(0, "DOMAIN")
            || t.is(0, "LANGUAGE")
            || t.is(0, "TABLESPACE")
            || t.is(0, "FOREIGN")
            || t.is(0, "LARGE")
            || t.is(0, "PARAMETER")
        {
            return Err(SqlError::unsupported(format!(
                "{what} ON {} (privileges exist on tables and databases)",
                t.word(0).unwrap_or_default()
            )));
        } else {
            t.eat("TABLE");
            Objects::Tables(name_list(t, object_name)?)
        };
        // Which privileges apply to which objects.
        bits = match &objects {
            Objects::Tables(_) | Objects::AllTables => {
                if all {
                    bits |= privs::ALL_TABLE;
                }
                if bits & !privs::ALL_TABLE != 0 {
                    return Err(SqlError::new(
                        ErrorKind::InvalidGrantOperation,
                        "invalid privilege type for table (SELECT, INSERT, UPDATE, DELETE, TRUNCATE)",
                    ));
                }
                bits
            }
            Objects::Databases(_) => {
                if all {
                    return Err(SqlError::unsupported(
                        "ALL PRIVILEGES ON DATABASE (CREATE and TEMPORARY do not exist in Walden; grant CONNECT)",
                    ));
                }
                if bits != privs::CONNECT {
                    return Err(SqlError::new(
                        ErrorKind::InvalidGrantOperation,
                        "invalid privilege type for database (CONNECT)",
                    ));
                }
                bits
            }
            Objects::PublicSchema => {
                if all || bits != privs::USAGE {
                    return Err(SqlError::unsupported(
                        "privileges on schemas other than USAGE (every role may use and create in the one schema)",
                    ));
                }
                if !grant {
                    return Err(SqlError::unsupported(
                        "REVOKE USAGE ON SCHEMA (every role uses the one schema)",
                    ));
                }
                bits
            }
        };
        if !(t.eat(if grant { "TO" } else { "FROM" })) {
            return Err(syntax(t, what));
        }
        let grantees = name_list(t, role_spec)?;
        finish_grant(t, grant)?;
        return Ok(AccessStmt::Privileges {
            grant,
            bits,
            objects,
            grantees,
        });
    }
    if all {
        return Err(syntax(t, what));
    }
    // GRANT role TO member / REVOKE role FROM member.
    if !(t.eat(if grant { "TO" } else { "FROM" })) {
        return Err(syntax(t, what));
    }
    let roles = words
        .into_iter()
        .map(|(w, quoted)| if quoted { w } else { w.to_ascii_lowercase() })
        .collect();
    let members = name_list(t, role_spec)?;
    finish_grant(t, grant)?;
    Ok(AccessStmt::Membership {
        grant,
        roles,
        members,
    })
}

fn finish_grant(t: &mut Toks, grant: bool) -> Result<()> {
    if t.is(0, "WITH") {
        return Err(SqlError::unsupported(
            "WITH GRANT OPTION / WITH ADMIN OPTION (only owners and superusers grant)",
        ));
    }
    if t.is(0, "GRANTED") {
        return Err(SqlError::unsupported("GRANTED BY"));
    }
    if !grant {
        // RESTRICT is the default; CASCADE has nothing to cascade to
        // without grant options.
        let _ = t.eat("RESTRICT") || t.eat("CASCADE");
    }
    t.end(if grant { "GRANT" } else { "REVOKE" })
}

fn check_schema(s: &str) -> Result<()> {
    if s == "public" || s == "dbo" {
        Ok(())
    } else {
        Err(SqlError::new(
            ErrorKind::UndefinedObject,
            format!("schema \"{s}\" does not exist"),
        ))
    }
}

// --- Execution ----------------------------------------------------------------

/// A role name from a statement: CURRENT_USER and SESSION_USER are the
/// session's role.
fn resolve(who: &Who, spec: &str) -> String {
    match spec {
        "CURRENT_USER" | "SESSION_USER" | "CURRENT_ROLE" => who.name(),
        other => other.to_string(),
    }
}

fn no_role(name: &str) -> SqlError {
    SqlError::new(
        ErrorKind::UndefinedObject,
        format!("role \"{name}\" does not exist"),
    )
}

fn reserved(name: &str) -> Result<()> {
    if name.starts_with("pg_") {
        return Err(SqlError::new(
            ErrorKind::ReservedName,
            format!("role name \"{name}\" is reserved (names beginning with \"pg_\" are)"),
        ));
    }
    if name.eq_ignore_ascii_case("public") || name.eq_ignore_ascii_case("none") {
        return Err(SqlError::new(
            ErrorKind::ReservedName,
            format!("role name \"{name}\" is reserved"),
        ));
    }
    Ok(())
}

/// The verifier to store for a PASSWORD option: a SCRAM verifier given as
/// the password is stored as it is (as PostgreSQL does); anything else is
/// hashed. The empty string clears the password, with a notice.
fn verifier(pw: &Option<String>, notices: &mut Vec<String>) -> Result<Option<String>> {
    match pw {
        None => Ok(None),
        Some(p) if p.is_empty() => {
            notices.push("empty string is not a valid password, clearing password".into());
            Ok(None)
        }
        Some(p) if ScramVerifier::is_verifier_text(p) => match ScramVerifier::parse(p) {
            Some(v) => Ok(Some(v.to_string())),
            // Not a well-formed verifier: a password that happens to start
            // like one, hashed like any other (PostgreSQL's rule).
            None => Ok(Some(ScramVerifier::new(p).to_string())),
        },
        Some(p) if p.len() == 35 && p.starts_with("md5") => Err(SqlError::unsupported(
            "MD5 password hashes (Walden authenticates with SCRAM-SHA-256 only)",
        )),
        Some(p) => Ok(Some(ScramVerifier::new(p).to_string())),
    }
}

/// Applies options to a role, checking who may set them.
fn apply(
    who: &Who,
    role: &mut Role,
    opts: &[RoleOpt],
    creating: bool,
    notices: &mut Vec<String>,
) -> Result<()> {
    for o in opts {
        match o {
            RoleOpt::Superuser(v) => {
                who.require_superuser(if *v {
                    "create or alter superusers"
                } else {
                    "alter superusers"
                })?;
                if !v && role.oid == BOOTSTRAP_OID {
                    return Err(denied(
                        "permission denied: bootstrap user must be superuser",
                    ));
                }
                role.superuser = *v;
            }
            RoleOpt::Replication(v) => {
                who.require_superuser("create or alter replication users")?;
                role.replication = *v;
            }
            RoleOpt::BypassRls(v) => {
                who.require_superuser("change bypassrls attribute")?;
                role.bypassrls = *v;
            }
            RoleOpt::CreateDb(v) => role.createdb = *v,
            RoleOpt::CreateRole(v) => role.createrole = *v,
            RoleOpt::Inherit(v) => role.inherit = *v,
            RoleOpt::Login(v) => role.login = *v,
            RoleOpt::ConnectionLimit(n) => role.connection_limit = *n,
            RoleOpt::Password(p) => role.password = verifier(p, notices)?,
            RoleOpt::InRole(_) | RoleOpt::Members(_) => {
                debug_assert!(creating);
            }
        }
    }
    Ok(())
}

/// Runs a role or grant statement as `who`, in `tx` (role changes are
/// transactional: see `walden_engine::Instance::update_roles_in`).
pub fn execute(
    who: &Who,
    instance: &Instance,
    db: &Database,
    tx: &mut Transaction,
    session_role: u32,
    stmt: &AccessStmt,
) -> Result<QueryOutput> {
    let mut notices = Vec::new();
    let tag = match stmt {
        AccessStmt::CreateRole { name, opts } => {
            who.require_createrole("create role")?;
            reserved(name)?;
            let mut role = Role::new(0, name);
            apply(who, &mut role, opts, true, &mut notices)?;
            instance.update_roles_in(tx, |c| -> Result<()> {
                if c.oid_of(name).is_some() {
                    return Err(dup_role(name));
                }
                let mut groups = Vec::new();
                let mut members = Vec::new();
                for o in opts {
                    match o {
                        RoleOpt::InRole(rs) => {
                            for r in rs {
                                groups.push(c.oid_of(r).ok_or_else(|| no_role(r))?);
                            }
                        }
                        RoleOpt::Members(rs) => {
                            for r in rs {
                                members.push(c.oid_of(r).ok_or_else(|| no_role(r))?);
                            }
                        }
                        _ => {}
                    }
                }
                let oid = c.create_role(role).map_err(|_| dup_role(name))?;
                for g in groups {
                    c.members.push(Membership {
                        role: g,
                        member: oid,
                    });
                }
                for m in members {
                    c.members.push(Membership {
                        role: oid,
                        member: m,
                    });
                }
                Ok(())
            })?;
            "CREATE ROLE"
        }
        AccessStmt::AlterRole { name, opts } => {
            let name = resolve(who, name);
            instance.update_roles_in(tx, |c| -> Result<()> {
                let role = c.role(&name).ok_or_else(|| no_role(&name))?.clone();
                let own_password_only =
                    role.oid == who.oid && opts.iter().all(|o| matches!(o, RoleOpt::Password(_)));
                if !own_password_only {
                    if role.superuser {
                        who.require_superuser("alter superusers")?;
                    }
                    who.require_createrole("alter role")?;
                }
                let mut updated = role.clone();
                apply(who, &mut updated, opts, false, &mut notices)?;
                let slot = c
                    .roles
                    .iter_mut()
                    .find(|r| r.oid == role.oid)
                    .expect("found");
                *slot = updated;
                Ok(())
            })?;
            "ALTER ROLE"
        }
        AccessStmt::RenameRole { name, to } => {
            let name = resolve(who, name);
            reserved(to)?;
            instance.update_roles_in(tx, |c| -> Result<()> {
                let role = c.role(&name).ok_or_else(|| no_role(&name))?.clone();
                if role.oid == session_role {
                    return Err(SqlError::new(
                        ErrorKind::FeatureNotSupported,
                        "session user cannot be renamed",
                    ));
                }
                if role.superuser {
                    who.require_superuser("rename superusers")?;
                }
                who.require_createrole("rename role")?;
                if c.oid_of(to).is_some() {
                    return Err(dup_role(to));
                }
                let slot = c
                    .roles
                    .iter_mut()
                    .find(|r| r.oid == role.oid)
                    .expect("found");
                slot.name = to.clone();
                Ok(())
            })?;
            "ALTER ROLE"
        }
        AccessStmt::DropRole { names, if_exists } => {
            who.require_createrole("drop role")?;
            instance.update_roles_in(tx, |c| -> Result<()> {
                for name in names {
                    let Some(role) = c.role(name).cloned() else {
                        if PREDEFINED.iter().any(|(_, n)| n == name) {
                            return Err(denied(format!(
                                "cannot drop role {name} because it is required by the database system"
                            )));
                        }
                        if *if_exists {
                            notices.push(format!("role \"{name}\" does not exist, skipping"));
                            continue;
                        }
                        return Err(no_role(name));
                    };
                    if role.oid == BOOTSTRAP_OID {
                        return Err(SqlError::new(
                            ErrorKind::DependentObjects,
                            format!("cannot drop role {name} because it is required by the database system"),
                        ));
                    }
                    if role.oid == who.oid {
                        return Err(SqlError::new(
                            ErrorKind::ObjectInUse,
                            "current user cannot be dropped",
                        ));
                    }
                    if role.oid == session_role {
                        return Err(SqlError::new(
                            ErrorKind::ObjectInUse,
                            "session user cannot be dropped",
                        ));
                    }
                    if role.superuser {
                        who.require_superuser("drop superusers")?;
                    }
                    let deps = dependencies(c, instance, role.oid);
                    if !deps.is_empty() {
                        return Err(SqlError::new(
                            ErrorKind::DependentObjects,
                            format!(
                                "role \"{name}\" cannot be dropped because some objects depend on it: {}",
                                deps.join(", ")
                            ),
                        ));
                    }
                    c.drop_role(role.oid);
                }
                Ok(())
            })?;
            "DROP ROLE"
        }
        AccessStmt::Privileges {
            grant,
            bits,
            objects,
            grantees,
        } => {
            let tag = if *grant { "GRANT" } else { "REVOKE" };
            let grantees: Vec<String> = grantees.iter().map(|g| resolve(who, g)).collect();
            let targets: Vec<(u32, ObjKind, u32, String)> = match objects {
                Objects::PublicSchema => Vec::new(),
                Objects::Tables(names) => names
                    .iter()
                    .map(|n| {
                        let t = db.table_as(Some(tx.id()), n)?;
                        Ok((db.id(), ObjKind::Table, t.id(), t.name().to_string()))
                    })
                    .collect::<Result<_>>()?,
                Objects::AllTables => db
                    .tables()
                    .iter()
                    .map(|t| (db.id(), ObjKind::Table, t.id(), t.name().to_string()))
                    .collect(),
                Objects::Databases(names) => names
                    .iter()
                    .map(|n| {
                        let d = instance.database(n).map_err(|_| {
                            SqlError::new(
                                ErrorKind::UndefinedDatabase,
                                format!("database \"{n}\" does not exist"),
                            )
                        })?;
                        Ok((d.id(), ObjKind::Database, d.id(), d.name().to_string()))
                    })
                    .collect::<Result<_>>()?,
            };
            for (d, kind, id, n) in &targets {
                if !who.owns(*d, *kind, *id) {
                    let what = if *kind == ObjKind::Database {
                        "database"
                    } else {
                        "table"
                    };
                    return Err(denied(format!("permission denied for {what} {n}")));
                }
            }
            instance.update_roles_in(tx, |c| -> Result<()> {
                let mut oids = Vec::new();
                for g in &grantees {
                    oids.push(if g == "PUBLIC" {
                        PUBLIC
                    } else {
                        c.oid_of(g).ok_or_else(|| no_role(g))?
                    });
                }
                for (d, kind, id, _) in &targets {
                    for &g in &oids {
                        c.change_grant(*d, *kind, *id, g, *bits, *grant);
                    }
                }
                Ok(())
            })?;
            tag
        }
        AccessStmt::Membership {
            grant,
            roles,
            members,
        } => {
            let tag = if *grant { "GRANT ROLE" } else { "REVOKE ROLE" };
            let members: Vec<String> = members.iter().map(|m| resolve(who, m)).collect();
            instance.update_roles_in(tx, |c| -> Result<()> {
                for r in roles {
                    let role = c.oid_of(r).ok_or_else(|| no_role(r))?;
                    if c.is_superuser(role) {
                        who.require_superuser("grant or revoke membership in a superuser role")?;
                    }
                    who.require_createrole("grant or revoke role membership")?;
                    for m in &members {
                        if m == "PUBLIC" {
                            return Err(SqlError::new(
                                ErrorKind::InvalidGrantOperation,
                                "role membership cannot be granted to PUBLIC",
                            ));
                        }
                        let member = c.oid_of(m).ok_or_else(|| no_role(m))?;
                        let exists = c
                            .members
                            .iter()
                            .any(|x| x.role == role && x.member == member);
                        if *grant {
                            if c.is_member_of(role, member) {
                                return Err(SqlError::new(
                                    ErrorKind::InvalidGrantOperation,
                                    format!("role \"{m}\" is a member of role \"{r}\""),
                                ));
                            }
                            if exists {
                                notices.push(format!(
                                    "role \"{m}\" is already a member of role \"{r}\""
                                ));
                            } else {
                                c.members.push(Membership { role, member });
                            }
                        } else if exists {
                            c.members
                                .retain(|x| !(x.role == role && x.member == member));
                        } else {
                            notices.push(format!("role \"{m}\" is not a member of role \"{r}\""));
                        }
                    }
                }
                Ok(())
            })?;
            tag
        }
    };
    let mut out = QueryOutput::command(tag);
    out.notices = notices;
    Ok(out)
}

fn dup_role(name: &str) -> SqlError {
    SqlError::new(
        ErrorKind::DuplicateObject,
        format!("role \"{name}\" already exists"),
    )
}

/// What keeps a role from being dropped, as PostgreSQL lists it: objects it
/// owns and privileges granted to it (on objects that still exist).
fn dependencies(c: &RoleCatalog, instance: &Instance, oid: u32) -> Vec<String> {
    let mut out = Vec::new();
    for a in &c.acls {
        let Some(d) = instance.database_by_id(a.db) else {
            continue;
        };
        let what = match a.kind {
            ObjKind::Database => Some(format!("database {}", d.name())),
            ObjKind::Table => d
                .tables()
                .iter()
                .find(|t| t.id() == a.id)
                .map(|t| format!("table {}", t.name())),
            ObjKind::Sequence => d
                .sequences()
                .iter()
                .find(|s| s.id == a.id)
                .map(|s| format!("sequence {}", s.name)),
        };
        let Some(what) = what else { continue };
        if a.owner == oid {
            out.push(format!("owner of {what}"));
        } else if a
            .grants
            .as_ref()
            .is_some_and(|g| g.iter().any(|(r, _)| *r == oid))
        {
            out.push(format!("privileges for {what}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(sql: &str) -> AccessStmt {
        match crate::front::parse(sql).unwrap() {
            Command::Access(s) => *s,
            other => panic!("{sql}: {other:?}"),
        }
    }

    #[test]
    fn parses_roles_and_grants() {
        assert_eq!(
            p("CREATE USER Alice WITH PASSWORD 'x' CREATEDB"),
            AccessStmt::CreateRole {
                name: "alice".into(),
                opts: vec![
                    RoleOpt::Login(true),
                    RoleOpt::Password(Some("x".into())),
                    RoleOpt::CreateDb(true)
                ]
            }
        );
        assert_eq!(
            p("create role r nologin nosuperuser connection limit 3"),
            AccessStmt::CreateRole {
                name: "r".into(),
                opts: vec![
                    RoleOpt::Login(false),
                    RoleOpt::Superuser(false),
                    RoleOpt::ConnectionLimit(3)
                ]
            }
        );
        assert_eq!(
            p("GRANT SELECT, insert ON TABLE public.t, u TO alice, PUBLIC"),
            AccessStmt::Privileges {
                grant: true,
                bits: privs::SELECT | privs::INSERT,
                objects: Objects::Tables(vec!["t".into(), "u".into()]),
                grantees: vec!["alice".into(), "PUBLIC".into()],
            }
        );
        assert_eq!(
            p("REVOKE ALL ON ALL TABLES IN SCHEMA public FROM bob CASCADE"),
            AccessStmt::Privileges {
                grant: false,
                bits: privs::ALL_TABLE,
                objects: Objects::AllTables,
                grantees: vec!["bob".into()],
            }
        );
        assert_eq!(
            p("GRANT pg_checkpoint TO alice"),
            AccessStmt::Membership {
                grant: true,
                roles: vec!["pg_checkpoint".into()],
                members: vec!["alice".into()],
            }
        );
        assert_eq!(
            p("DROP ROLE IF EXISTS a, b"),
            AccessStmt::DropRole {
                names: vec!["a".into(), "b".into()],
                if_exists: true
            }
        );
        for refused in [
            "GRANT SELECT ON t TO a WITH GRANT OPTION",
            "GRANT SELECT (x) ON t TO a",
            "CREATE ROLE a VALID UNTIL '2030-01-01'",
            "GRANT REFERENCES ON t TO a",
            "GRANT USAGE ON SEQUENCE s TO a",
            "ALTER ROLE a SET search_path = x",
        ] {
            let e = crate::front::parse(refused).unwrap_err();
            assert_eq!(e.kind, ErrorKind::FeatureNotSupported, "{refused}: {e}");
        }
    }
}
