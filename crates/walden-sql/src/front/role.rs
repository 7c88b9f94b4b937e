//! The role and privilege statements' grammar: CREATE / ALTER / DROP ROLE
//! (USER, GROUP), GRANT and REVOKE, parsed from the token stream into
//! [`AccessStmt`].

use super::{Command, Toks};
use crate::error::{ErrorKind, Result, SqlError};
use sqlparser::tokenizer::Token;
use walden_engine::roles::privs;

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
    /// `VALID UNTIL 'timestamp'` (the text as written).
    ValidUntil(String),
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
    /// `ON SCHEMA public, ...` (Walden's one user schema).
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
        /// `ALL [PRIVILEGES]` (no warning when only some could be granted).
        all: bool,
        /// GRANT ... WITH GRANT OPTION; REVOKE GRANT OPTION FOR ...
        grant_option: bool,
        objects: Objects,
        grantees: Vec<String>,
        /// REVOKE ... CASCADE (RESTRICT, the default, refuses to revoke
        /// what others granted under a revoked grant option).
        cascade: bool,
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
            "VALID" => {
                if !t.eat("UNTIL") {
                    return Err(syntax(t, "VALID UNTIL"));
                }
                match t.next() {
                    Some(Token::SingleQuotedString(s)) => opts.push(RoleOpt::ValidUntil(s)),
                    _ => return Err(syntax(t, "VALID UNTIL (a quoted timestamp)")),
                }
            }
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
pub fn parse_role_statement(first: &str, t: &mut Toks) -> Result<Command> {
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
    if !grant && t.is(0, "ADMIN") && t.is(1, "OPTION") {
        return Err(SqlError::unsupported("REVOKE ADMIN OPTION FOR"));
    }
    let option_for = !grant && t.is(0, "GRANT") && t.is(1, "OPTION");
    if option_for {
        t.next();
        t.next();
        if !t.eat("FOR") {
            return Err(syntax(t, "REVOKE GRANT OPTION FOR"));
        }
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
        // CREATE is a schema privilege here (see ON SCHEMA below).
        let on_schema = t.is(0, "SCHEMA");
        for (w, _) in &words {
            bits |= match w.as_str() {
                "CREATE" if on_schema => privs::CREATE,
                "USAGE" => privs::USAGE,
                "SELECT" | "INSERT" | "UPDATE" | "DELETE" | "TRUNCATE" | "REFERENCES"
                | "TRIGGER" | "TEMPORARY" | "TEMP" | "EXECUTE" | "CONNECT"
                    if on_schema =>
                {
                    let w = if w == "TEMPORARY" { "TEMP" } else { w };
                    return Err(SqlError::new(
                        ErrorKind::InvalidGrantOperation,
                        format!("invalid privilege type {w} for schema"),
                    ));
                }
                _ => privilege_bit(w)?,
            };
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
                if all {
                    bits |= privs::ALL_SCHEMA;
                }
                bits
            }
        };
        if !(t.eat(if grant { "TO" } else { "FROM" })) {
            return Err(syntax(t, what));
        }
        let grantees = name_list(t, role_spec)?;
        let with_option = grant && t.is(0, "WITH") && t.is(1, "GRANT") && t.is(2, "OPTION");
        if with_option {
            t.next();
            t.next();
            t.next();
        }
        let cascade = finish_grant(t, grant)?;
        return Ok(AccessStmt::Privileges {
            grant,
            bits,
            all,
            grant_option: with_option || option_for,
            objects,
            grantees,
            cascade,
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
    if option_for {
        return Err(SqlError::unsupported(
            "REVOKE GRANT OPTION FOR role membership (there is no admin option)",
        ));
    }
    let members = name_list(t, role_spec)?;
    finish_grant(t, grant)?;
    Ok(AccessStmt::Membership {
        grant,
        roles,
        members,
    })
}

/// The end of a GRANT or REVOKE; whether a REVOKE said CASCADE.
fn finish_grant(t: &mut Toks, grant: bool) -> Result<bool> {
    if t.is(0, "WITH") {
        return Err(SqlError::unsupported(
            "WITH ADMIN OPTION (role memberships have no admin option)",
        ));
    }
    if t.is(0, "GRANTED") {
        return Err(SqlError::unsupported("GRANTED BY"));
    }
    let mut cascade = false;
    if !grant {
        // RESTRICT is the default.
        cascade = t.eat("CASCADE");
        if !cascade {
            t.eat("RESTRICT");
        }
    }
    t.end(if grant { "GRANT" } else { "REVOKE" })?;
    Ok(cascade)
}

fn check_schema(s: &str) -> Result<()> {
    if s == "public" || s == "dbo" {
        Ok(())
    } else {
        Err(SqlError::new(
            ErrorKind::InvalidSchemaName,
            format!("schema \"{s}\" does not exist"),
        ))
    }
}

// --- Execution ----------------------------------------------------------------

#[cfg(test)]
mod tests;
