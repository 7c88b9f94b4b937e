//! Roles and privileges, the PostgreSQL way: the checks every statement
//! passes (table privileges for DML and queries, ownership for DDL,
//! superuser for administration), the login checks, and what the catalogs
//! and privilege functions show. The statements that change roles and
//! grants are in `catalog/roles.rs`; the catalog itself in
//! `walden_engine::roles`.

use crate::context::search_path::SearchPath;
use crate::error::{ErrorKind, Result, SqlError};
use crate::front::Command;
use crate::query::Planner;
use sqlparser::ast::{self, Statement};
use std::sync::Arc;
use walden_engine::roles::{
    privs, ObjKind, RoleCatalog, BOOTSTRAP_OID, PG_CHECKPOINT, PG_DATABASE_OWNER, PG_READ_ALL_DATA,
    PG_WRITE_ALL_DATA,
};

/// The id `public`'s ACL is kept under: its OID, as `pg_namespace` shows.
pub const PUBLIC_SCHEMA: u32 = 2200;
use walden_engine::{Database, Instance};

pub fn denied(message: impl Into<String>) -> SqlError {
    SqlError::new(ErrorKind::InsufficientPrivilege, message)
}

/// Who runs a statement: the session's role and the catalog as it was
/// when the statement started.
#[derive(Clone)]
pub struct Who {
    pub oid: u32,
    pub superuser: bool,
    pub cat: Arc<RoleCatalog>,
}

impl Who {
    pub fn of(instance: &Instance, oid: u32) -> Who {
        Who::with(instance.roles(), oid)
    }

    /// The role as the catalog `cat` (a transaction's view) has it.
    pub fn with(cat: Arc<RoleCatalog>, oid: u32) -> Who {
        Who {
            oid,
            superuser: cat.is_superuser(oid),
            cat,
        }
    }

    pub fn name(&self) -> String {
        self.cat.name_of(self.oid)
    }

    /// Whether the role has the privileges of `role` (member with INHERIT,
    /// or superuser), as `has_privs_of_role`.
    pub fn has_privs_of(&self, role: u32) -> bool {
        self.superuser || self.cat.effective_roles(self.oid).contains(&role)
    }

    fn createrole(&self) -> bool {
        self.superuser || self.cat.role_by_oid(self.oid).is_some_and(|r| r.createrole)
    }

    fn createdb(&self) -> bool {
        self.superuser || self.cat.role_by_oid(self.oid).is_some_and(|r| r.createdb)
    }

    pub fn require_superuser(&self, what: &str) -> Result<()> {
        if self.superuser {
            Ok(())
        } else {
            Err(denied(format!("must be superuser to {what}")))
        }
    }

    pub fn require_createrole(&self, what: &str) -> Result<()> {
        if self.createrole() {
            Ok(())
        } else {
            Err(denied(format!("permission denied to {what}")))
        }
    }

    /// Ownership of an object (or superuser, or membership in the owner;
    /// `pg_database_owner` stands for the database's owner).
    pub fn owns(&self, db: u32, kind: ObjKind, id: u32) -> bool {
        let owner = self.cat.owner_of(db, kind, id);
        if owner == PG_DATABASE_OWNER && kind != ObjKind::Database {
            return self.owns(db, ObjKind::Database, db);
        }
        self.has_privs_of(owner)
    }

    /// USAGE and CREATE on `public` in database `db`: all for a superuser
    /// and the schema's owner (who keeps its rights, as a table's owner
    /// does here), else what the ACL grants.
    pub fn schema_privileges(&self, db: u32) -> u8 {
        if self.superuser || self.owns(db, ObjKind::Schema, PUBLIC_SCHEMA) {
            return privs::ALL_SCHEMA;
        }
        self.cat
            .privileges(self.oid, db, ObjKind::Schema, PUBLIC_SCHEMA)
    }

    /// The session's `search_path` as this role sees it in `db`.
    pub fn search_path(
        &self,
        settings: &crate::context::settings::Settings,
        db: u32,
    ) -> SearchPath {
        let p = self.schema_privileges(db);
        SearchPath::of(settings).with_access(p & privs::USAGE != 0, p & privs::CREATE != 0)
    }

    /// The table privileges this role holds (all for a superuser).
    pub fn table_privileges(&self, db: u32, kind: ObjKind, id: u32) -> u8 {
        if self.superuser {
            return privs::ALL_TABLE | privs::ALL_SEQUENCE;
        }
        let mut p = self.cat.privileges(self.oid, db, kind, id);
        if self.owns(db, kind, id) {
            // PostgreSQL's owner may revoke from itself; Walden's owner
            // keeps its rights (as it keeps its grant options in both).
            p |= privs::ALL_TABLE;
        }
        if kind == ObjKind::Table {
            let mine = self.cat.effective_roles(self.oid);
            if mine.contains(&PG_READ_ALL_DATA) {
                p |= privs::SELECT;
            }
            if mine.contains(&PG_WRITE_ALL_DATA) {
                p |= privs::INSERT | privs::UPDATE | privs::DELETE;
            }
        }
        p
    }

    /// The grant options this role holds on an object: all of them for a
    /// superuser and the owner, else those granted to it (or to a role
    /// whose privileges it has).
    pub fn grant_options(&self, db: u32, kind: ObjKind, id: u32) -> u8 {
        if self.superuser {
            return u8::MAX;
        }
        self.cat.grant_options(self.oid, db, kind, id)
    }

    pub fn can_connect(&self, db: u32) -> bool {
        self.superuser
            || self.owns(db, ObjKind::Database, db)
            || self.cat.privileges(self.oid, db, ObjKind::Database, db) & privs::CONNECT != 0
    }
}

/// What a statement needs on one table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Need {
    pub table: u32,
    pub name: String,
    pub bits: u8,
}

/// Refuses the statement unless `who` holds every privilege in `needs`.
pub fn require(who: &Who, db: u32, needs: &[Need]) -> Result<()> {
    if who.superuser {
        return Ok(());
    }
    for n in needs {
        let have = who.table_privileges(db, ObjKind::Table, n.table);
        if have & n.bits != n.bits {
            return Err(denied(format!("permission denied for table {}", n.name)));
        }
    }
    Ok(())
}

fn add(needs: &mut Vec<Need>, table: u32, name: &str, bits: u8) {
    match needs.iter_mut().find(|n| n.table == table) {
        Some(n) => n.bits |= bits,
        None => needs.push(Need {
            table,
            name: name.to_string(),
            bits,
        }),
    }
}

/// A constant SET value (no column read).
fn is_const(e: &ast::Expr) -> bool {
    match e {
        ast::Expr::Value(_) => true,
        ast::Expr::UnaryOp { expr, .. } => is_const(expr),
        ast::Expr::Cast { expr, .. } => is_const(expr),
        ast::Expr::Nested(e) => is_const(e),
        _ => false,
    }
}

fn relation_name(t: &ast::TableWithJoins) -> Option<String> {
    match &t.relation {
        ast::TableFactor::Table { name, .. } => Some(crate::query::object_last(name)),
        _ => None,
    }
}

/// The privileges a planned INSERT, UPDATE, DELETE or query needs: the
/// statement's own privilege on its target (and SELECT when it reads the
/// target's columns: WHERE, RETURNING, SET from columns, as PostgreSQL),
/// and SELECT on every other table the planner resolved.
pub fn needs(cmd: &Command, p: &Planner<'_>) -> Vec<Need> {
    let stmt = match cmd {
        Command::Sql(s) => s.as_ref(),
        Command::DeleteTop(_, s) => s.as_ref(),
        _ => return Vec::new(),
    };
    let (target, mut bits): (Option<String>, u8) = match stmt {
        Statement::Insert(ins) => {
            let name = match &ins.table {
                ast::TableObject::TableName(n) => Some(crate::query::object_last(n)),
                _ => None,
            };
            let mut b = privs::INSERT;
            if ins.returning.is_some() || ins.output.is_some() {
                b |= privs::SELECT;
            }
            if let Some(ast::OnInsert::OnConflict(oc)) = &ins.on {
                if matches!(oc.action, ast::OnConflictAction::DoUpdate(_)) {
                    b |= privs::UPDATE | privs::SELECT;
                }
            }
            (name, b)
        }
        Statement::Update(u) => {
            let mut b = privs::UPDATE;
            if u.selection.is_some()
                || u.returning.is_some()
                || u.output.is_some()
                || u.from.is_some()
                || u.assignments.iter().any(|a| !is_const(&a.value))
            {
                b |= privs::SELECT;
            }
            (relation_name(&u.table), b)
        }
        Statement::Delete(d) => {
            let tables = match &d.from {
                ast::FromTable::WithFromKeyword(t) | ast::FromTable::WithoutKeyword(t) => t,
            };
            let mut b = privs::DELETE;
            if d.selection.is_some()
                || d.returning.is_some()
                || d.output.is_some()
                || d.using.is_some()
            {
                b |= privs::SELECT;
            }
            (tables.first().and_then(relation_name), b)
        }
        Statement::Merge(m) => merge_needs(m),
        Statement::Query(q) => match crate::dml::is_merge(q) {
            Some(m) => merge_needs(m),
            None => (None, 0),
        },
        _ => (None, 0),
    };
    // OUTPUT ... INTO t writes t: INSERT on it (SQL Server asks no more).
    let output = match stmt {
        Statement::Insert(i) => i.output.as_ref(),
        Statement::Update(u) => u.output.as_ref(),
        Statement::Delete(d) => d.output.as_ref(),
        Statement::Merge(m) => m.output.as_ref(),
        Statement::Query(q) => crate::dml::is_merge(q).and_then(|m| m.output.as_ref()),
        _ => None,
    };
    let into = match output {
        Some(ast::OutputClause::Output {
            into_table: Some(i),
            ..
        }) => i.targets.first().map(|t| match t {
            ast::Expr::Function(f) => crate::query::object_last(&f.name),
            other => other
                .to_string()
                .rsplit('.')
                .next()
                .unwrap_or_default()
                .trim_matches('"')
                .to_string(),
        }),
        _ => None,
    };
    if into.is_some()
        && into.as_deref().map(str::to_ascii_lowercase)
            == target.as_deref().map(str::to_ascii_lowercase)
    {
        bits |= privs::INSERT;
    }
    let used = p.used_tables();
    let mut out = Vec::new();
    let mut target_seen = false;
    for (id, name) in used.iter() {
        let is_target = !target_seen
            && target
                .as_deref()
                .is_some_and(|t| t.eq_ignore_ascii_case(name));
        if is_target {
            target_seen = true;
            add(&mut out, *id, name, bits);
        } else if into
            .as_deref()
            .is_some_and(|t| t.eq_ignore_ascii_case(name))
        {
            add(&mut out, *id, name, privs::INSERT);
        } else {
            add(&mut out, *id, name, privs::SELECT);
        }
    }
    out
}

/// MERGE's target and the privileges it needs there: those of its actions,
/// and SELECT, since ON reads the target's columns (PostgreSQL asks SELECT
/// of the columns a statement reads).
fn merge_needs(m: &ast::Merge) -> (Option<String>, u8) {
    let name = match &m.table {
        ast::TableFactor::Table { name, .. } => Some(crate::query::object_last(name)),
        _ => None,
    };
    let mut b = privs::SELECT;
    for c in &m.clauses {
        b |= match c.action {
            ast::MergeAction::Insert(_) => privs::INSERT,
            ast::MergeAction::Update(_) => privs::UPDATE,
            ast::MergeAction::Delete { .. } => privs::DELETE,
            ast::MergeAction::DoNothing { .. } => 0,
        };
    }
    (name, b)
}

/// SELECT on every table a planned query resolved.
pub fn reads(p: &Planner<'_>) -> Vec<Need> {
    let mut out = Vec::new();
    for (id, name) in p.used_tables().iter() {
        add(&mut out, *id, name, privs::SELECT);
    }
    out
}

/// Whether a non-superuser may set `name`.
pub fn setting_allowed(who: &Who, name: &str) -> Result<()> {
    if !who.superuser && crate::context::settings::superuser_only(name) {
        return Err(denied(format!(
            "permission denied to set parameter \"{name}\""
        )));
    }
    Ok(())
}

fn table_id(db: &Database, name: &str) -> Option<(u32, String)> {
    db.table(name).ok().map(|t| (t.id(), t.name().to_string()))
}

/// The checks of statements that are not planned: administration needs a
/// superuser, DDL on a table its owner, TRUNCATE and COPY their privileges.
pub fn check_command(who: &Who, instance: &Instance, db: &Database, cmd: &Command) -> Result<()> {
    if who.superuser {
        return Ok(());
    }
    let dbid = db.id();
    let table_owner = |name: &str| -> Result<()> {
        match table_id(db, name) {
            Some((id, n)) if !who.owns(dbid, ObjKind::Table, id) => {
                Err(denied(format!("must be owner of table {n}")))
            }
            _ => Ok(()),
        }
    };
    let sequence_owner = |name: &str| -> Result<()> {
        match db
            .sequences()
            .into_iter()
            .find(|s| s.name.eq_ignore_ascii_case(name))
        {
            Some(s) if !who.owns(dbid, ObjKind::Sequence, s.id) => {
                Err(denied(format!("must be owner of sequence {}", s.name)))
            }
            _ => Ok(()),
        }
    };
    let table_priv = |name: &str, bits: u8| -> Result<()> {
        match table_id(db, name) {
            Some((id, n)) => require(
                who,
                dbid,
                &[Need {
                    table: id,
                    name: n,
                    bits,
                }],
            ),
            None => Ok(()),
        }
    };
    let create_in_schema = || -> Result<()> {
        if who.schema_privileges(dbid) & privs::CREATE == 0 {
            return Err(crate::context::search_path::schema_denied());
        }
        Ok(())
    };
    match cmd {
        Command::Checkpoint if !who.has_privs_of(PG_CHECKPOINT) => {
            return Err(denied(
                "must be superuser or have privileges of pg_checkpoint to do CHECKPOINT",
            ));
        }
        Command::BackupDatabase { .. } => who.require_superuser("run BACKUP DATABASE")?,
        Command::BackupLog { .. } => who.require_superuser("run BACKUP LOG")?,
        Command::ClearWaitStats | Command::ClearExposurePeaks | Command::CheckDb { .. } => {
            who.require_superuser("run DBCC")?
        }
        Command::CreateAvailabilityGroup(_) => {
            who.require_superuser("run CREATE AVAILABILITY GROUP")?
        }
        Command::AvailabilityGroupReseed { .. } | Command::AvailabilityGroupFailover { .. } => {
            who.require_superuser("run ALTER AVAILABILITY GROUP")?
        }
        Command::DropAvailabilityGroup(_) => {
            who.require_superuser("run DROP AVAILABILITY GROUP")?
        }
        Command::CreateDatabase(_) if !who.createdb() => {
            return Err(denied("permission denied to create database"));
        }
        Command::DropDatabase { name, .. } => {
            if let Ok(d) = instance.database(name).map(|d| d.id()) {
                if !who.owns(d, ObjKind::Database, d) {
                    return Err(denied(format!("must be owner of database {name}")));
                }
            }
        }
        Command::AlterDatabase { .. } => who.require_superuser("run ALTER DATABASE")?,
        Command::Set(name, _) | Command::SetLocal(name, _) => setting_allowed(who, name)?,
        Command::AlterIdentity(a) => table_owner(&a.table)?,
        Command::AlterSequence {
            sequence, change, ..
        } => {
            sequence_owner(sequence)?;
            if let Some(Some((table, _))) = &change.owned_by {
                table_owner(table)?;
            }
        }
        Command::Sql(stmt) => match stmt.as_ref() {
            Statement::Drop {
                object_type, names, ..
            } => {
                for n in names {
                    let n = crate::query::object_last(n);
                    match object_type {
                        ast::ObjectType::Table => table_owner(&n)?,
                        ast::ObjectType::Sequence => sequence_owner(&n)?,
                        _ => {}
                    }
                }
            }
            Statement::Truncate(t) => {
                for tn in &t.table_names {
                    table_priv(&crate::query::object_last(&tn.name), privs::TRUNCATE)?;
                }
            }
            Statement::CreateIndex(ci) => table_owner(&crate::query::object_last(&ci.table_name))?,
            Statement::AlterTable(at) => {
                table_owner(&crate::query::object_last(&at.name))?;
                // A new name is a new entry in the schema: renaming needs
                // CREATE there, as PostgreSQL's ALTER ... RENAME TO.
                if at
                    .operations
                    .iter()
                    .any(|op| matches!(op, ast::AlterTableOperation::RenameTable { .. }))
                {
                    create_in_schema()?;
                }
            }
            Statement::AlterType(at)
                if matches!(at.operation, ast::AlterTypeOperation::Rename(_)) =>
            {
                create_in_schema()?
            }
            Statement::Copy {
                source: ast::CopySource::Table { table_name, .. },
                to,
                ..
            } => table_priv(
                &crate::query::object_last(table_name),
                if *to { privs::SELECT } else { privs::INSERT },
            )?,
            _ => {}
        },
        _ => {}
    }
    Ok(())
}

/// What runs after a statement succeeded: new objects get their owner, in
/// the session's transaction block when there is one (so a rolled-back
/// CREATE takes its owner entry with it).
pub fn after_command(
    who: &Who,
    instance: &Instance,
    db: &Database,
    mut tx: Option<&mut walden_engine::Transaction>,
    cmd: &Command,
) -> Result<()> {
    // Objects without an entry belong to the bootstrap superuser: its own
    // CREATEs need no catalog write.
    if who.oid == BOOTSTRAP_OID {
        return Ok(());
    }
    let dbid = db.id();
    let owner = who.oid;
    let mut set = |kind: ObjKind, db: u32, id: u32| -> Result<()> {
        let f = |c: &mut RoleCatalog| -> Result<()> {
            c.set_owner(db, kind, id, owner);
            Ok(())
        };
        match tx.as_deref_mut() {
            Some(tx) => instance.update_roles_in(tx, f),
            None => instance.update_roles(f),
        }
    };
    match cmd {
        Command::CreateSequence { name, .. } => {
            if let Some(s) = db
                .sequences()
                .into_iter()
                .find(|s| s.name.eq_ignore_ascii_case(name))
            {
                if who.cat.acl(dbid, ObjKind::Sequence, s.id).is_none() {
                    set(ObjKind::Sequence, dbid, s.id)?;
                }
            }
        }
        Command::CreateDatabase(name) => {
            if let Ok(d) = instance.database(name) {
                set(ObjKind::Database, d.id(), d.id())?;
            }
        }
        Command::Sql(stmt) => {
            if let Statement::CreateTable(ct) = stmt.as_ref() {
                if let Some((id, _)) = table_id(db, &crate::query::object_last(&ct.name)) {
                    // IF NOT EXISTS on an existing table changes no owner.
                    if who.cat.acl(dbid, ObjKind::Table, id).is_none() {
                        set(ObjKind::Table, dbid, id)?;
                    }
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// The login checks of a client connection (the server's, not an embedded
/// session's): the role exists and may log in, may connect to the
/// database, and is under its connection limit (counted by the caller).
/// Whatever the authentication method, a name that is no role is refused,
/// as in PostgreSQL.
pub fn login(instance: &Instance, user: &str, db: &Database) -> Result<u32> {
    let cat = instance.roles();
    let Some(role) = cat.role(user) else {
        return Err(SqlError::new(
            ErrorKind::InvalidAuthorization,
            format!("role \"{user}\" does not exist"),
        ));
    };
    if !role.login {
        return Err(SqlError::new(
            ErrorKind::InvalidAuthorization,
            format!("role \"{user}\" is not permitted to log in"),
        ));
    }
    let who = Who {
        oid: role.oid,
        superuser: role.superuser,
        cat: cat.clone(),
    };
    if !who.can_connect(db.id()) {
        return Err(denied(format!(
            "permission denied for database \"{}\" (the role has no CONNECT privilege on it)",
            db.name()
        )));
    }
    Ok(role.oid)
}

/// Counts a client session against its role's CONNECTION LIMIT while it
/// lives.
pub struct LoginGuard {
    counts: Arc<parking_lot::Mutex<std::collections::HashMap<u32, usize>>>,
    role: u32,
}

impl Drop for LoginGuard {
    fn drop(&mut self) {
        let mut c = self.counts.lock();
        if let Some(n) = c.get_mut(&self.role) {
            *n = n.saturating_sub(1);
        }
    }
}

/// Takes a connection of `role`, refusing one over its CONNECTION LIMIT
/// (superusers are not limited, as in PostgreSQL).
pub fn take_login(
    counts: &Arc<parking_lot::Mutex<std::collections::HashMap<u32, usize>>>,
    instance: &Instance,
    role: u32,
) -> Result<LoginGuard> {
    let cat = instance.roles();
    let mut c = counts.lock();
    let n = c.entry(role).or_default();
    if let Some(r) = cat.role_by_oid(role) {
        if !r.superuser && r.connection_limit >= 0 && *n >= r.connection_limit as usize {
            return Err(SqlError::new(
                ErrorKind::TooManyConnections,
                format!("too many connections for role \"{}\"", r.name),
            ));
        }
    }
    *n += 1;
    Ok(LoginGuard {
        counts: counts.clone(),
        role,
    })
}

mod functions;
pub use functions::*;
