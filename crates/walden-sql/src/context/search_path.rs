//! `search_path`: the schemas an unqualified name is looked up in, as
//! PostgreSQL resolves it. `public` holds the objects of databases that
//! made no schema; CREATE SCHEMA adds others (`catalog/schemas.rs`), whose
//! objects the engine names `schema` U+001F `name`; `pg_catalog` and
//! `information_schema` hold the catalogs. A path entry naming no such
//! schema (`"$user"` when no schema has the user's name, a typo) is
//! skipped, as in PostgreSQL.

use crate::error::{ErrorKind, Result, SqlError};
use sqlparser::ast;

pub use crate::front::DEFAULT_PATH;

/// The schemas of a database besides `public` and what they hold, as a
/// transaction sees them: what resolving a name along the path needs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Namespaces {
    /// Name, id, owner; and whether the session's role may use it and
    /// create in it (its owner, a member of its owner, or a superuser).
    pub schemas: Vec<UserSchema>,
    /// Lower-case engine names of every relation and type (empty when
    /// there is no schema but `public`).
    pub objects: std::collections::HashSet<String>,
}

/// One schema made by CREATE SCHEMA, as a session sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserSchema {
    pub name: String,
    pub id: u32,
    pub owner: u32,
    pub usable: bool,
}

impl Namespaces {
    pub fn find(&self, name: &str) -> Option<&UserSchema> {
        self.schemas.iter().find(|s| s.name == name)
    }
}

/// The existing schemas a session's `search_path` names, in order, and
/// what the session's role may do in `public` (its USAGE and CREATE
/// privileges: a schema the role may not use drops out of the path, as
/// PostgreSQL's effective search path leaves it out).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchPath {
    /// The entries as written, folded (`$user` kept).
    named: Vec<String>,
    listed: Vec<String>,
    /// No USAGE on `public`: `public.x` is 42501.
    no_usage: bool,
    /// No CREATE on `public`: creating there is 42501.
    no_create: bool,
    ns: std::sync::Arc<Namespaces>,
}

impl Default for SearchPath {
    fn default() -> Self {
        SearchPath::parse(DEFAULT_PATH)
    }
}

/// PostgreSQL's refusal of a schema privilege.
pub fn schema_denied() -> SqlError {
    denied_in("public")
}

fn denied_in(schema: &str) -> SqlError {
    SqlError::new(
        ErrorKind::InsufficientPrivilege,
        format!("permission denied for schema {schema}"),
    )
}

/// The schema a name's qualifier refers to: `dbo` is the SQL Server
/// spelling of `public`.
fn schema_of(qualifier: &str) -> Option<&'static str> {
    match qualifier.to_ascii_lowercase().as_str() {
        "public" | "dbo" => Some("public"),
        "pg_catalog" => Some("pg_catalog"),
        "information_schema" => Some("information_schema"),
        "pg_toast" => Some("pg_toast"),
        _ => None,
    }
}

/// Whether `name` is an engine name already resolved to a schema's object.
fn resolved(name: &str) -> bool {
    name.contains(walden_engine::namespace::SCHEMA_SEP)
}

impl SearchPath {
    /// Reads a `search_path` value (`"$user", public`, `''`, `a, b`).
    pub fn parse(text: &str) -> SearchPath {
        let mut named = Vec::new();
        for part in text.split(',') {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            // A quoted entry keeps its case; an unquoted one folds.
            let name = match part.strip_prefix('"').and_then(|p| p.strip_suffix('"')) {
                Some(q) => q.to_string(),
                None => part.to_ascii_lowercase(),
            };
            if !named.contains(&name) {
                named.push(name);
            }
        }
        let mut p = SearchPath {
            named,
            listed: Vec::new(),
            no_usage: false,
            no_create: false,
            ns: Default::default(),
        };
        p.relist(None);
        p
    }

    fn relist(&mut self, user: Option<&str>) {
        let mut listed: Vec<String> = Vec::new();
        for name in &self.named {
            let name = match (name.as_str(), user) {
                ("$user", Some(u)) => u,
                ("$user", None) => continue,
                (n, _) => n,
            };
            let found = if name == "dbo" {
                None
            } else if let Some(s) = schema_of(name).filter(|s| *s == name) {
                Some(s.to_string())
            } else {
                self.ns
                    .find(name)
                    .filter(|s| s.usable)
                    .map(|s| s.name.clone())
            };
            if let Some(s) = found {
                let hidden = s == "public" && self.no_usage;
                if !hidden && !listed.contains(&s) {
                    listed.push(s);
                }
            }
        }
        self.listed = listed;
    }

    /// The path as a role with (or without) USAGE and CREATE on `public`
    /// sees it.
    pub fn with_access(mut self, usage: bool, create: bool) -> SearchPath {
        self.no_usage = !usage;
        self.no_create = !create;
        if !usage {
            self.listed.retain(|s| s != "public");
        }
        self
    }

    /// The path with the database's other schemas (`user`: the session
    /// role's name, for `"$user"`).
    pub fn with_namespaces(mut self, ns: Namespaces, user: &str) -> SearchPath {
        self.ns = std::sync::Arc::new(ns);
        self.relist(Some(user));
        self
    }

    /// The schemas besides `public`.
    pub fn namespaces(&self) -> &Namespaces {
        &self.ns
    }

    /// Refuses a new object in `public` without CREATE there (CREATE
    /// INDEX on a table of it too, as PostgreSQL).
    pub fn require_create(&self) -> Result<()> {
        if self.no_create || self.no_usage {
            return Err(schema_denied());
        }
        Ok(())
    }

    /// The session's path.
    pub fn of(settings: &crate::context::settings::Settings) -> SearchPath {
        settings.search_path()
    }

    /// The existing schemas named in the path, as `current_schemas(false)`.
    pub fn listed(&self) -> Vec<&str> {
        self.listed.iter().map(String::as_str).collect()
    }

    /// The schemas searched, in order: `pg_catalog` first unless the path
    /// places it (`current_schemas(true)`).
    pub fn searched(&self) -> Vec<&str> {
        let mut out = self.listed();
        if !out.contains(&"pg_catalog") {
            out.insert(0, "pg_catalog");
        }
        out
    }

    /// `current_schema()`: the first existing schema of the path.
    pub fn current(&self) -> Option<&str> {
        self.listed.first().map(String::as_str)
    }

    /// Whether unqualified names find user objects.
    pub fn finds_user_objects(&self) -> bool {
        self.listed
            .iter()
            .any(|s| s == "public" || self.ns.find(s).is_some())
    }

    /// Whether an unqualified catalog name is shadowed by a user object of
    /// the same name: only when the path places a user schema before
    /// `pg_catalog`.
    pub fn user_first(&self) -> bool {
        let at = |s: &str| self.listed.iter().position(|x| x == s);
        let user = self
            .listed
            .iter()
            .position(|x| x == "public" || self.ns.find(x).is_some());
        matches!((user, at("pg_catalog")), (Some(u), Some(c)) if u < c)
    }

    /// The engine name of the user relation `name` refers to: qualified by
    /// `public` or a schema of the database, or unqualified and found
    /// along the path.
    pub fn user_relation(&self, name: &ast::ObjectName) -> Result<String> {
        let (schema, last) = split(name)?;
        self.user_object(schema.as_deref(), &last)?
            .ok_or_else(|| not_found("relation", schema.as_deref(), &last))
    }

    /// Same for a name given as text (`nextval('s')`, `'t'::regclass`):
    /// `schema.name`, either part possibly quoted.
    pub fn user_relation_text(&self, text: &str) -> Result<String> {
        let (schema, last) = crate::types::split_qualified(text);
        self.user_object(schema.as_deref(), &last)?
            .ok_or_else(|| not_found("relation", schema.as_deref(), &last))
    }

    /// A user type (an enum): qualified or found on the path.
    pub fn user_type(&self, name: &ast::ObjectName) -> Result<String> {
        let (schema, last) = split(name)?;
        self.user_object(schema.as_deref(), &last)?.ok_or_else(|| {
            SqlError::new(
                ErrorKind::UndefinedObject,
                format!(
                    "type \"{}\" does not exist",
                    shown(schema.as_deref(), &last)
                ),
            )
        })
    }

    /// The engine name a name finds (`None`: none); 42501 for `s.x` when
    /// the role may not use `s`. An unqualified name takes the first
    /// schema of the path holding an object of the name, else `public`'s
    /// name when `public` is on the path (the caller's lookup then says
    /// what is missing).
    pub fn user_object(&self, schema: Option<&str>, last: &str) -> Result<Option<String>> {
        if resolved(last) {
            return Ok(Some(last.to_string()));
        }
        Ok(match schema {
            None => {
                if self.ns.schemas.is_empty() {
                    return Ok(self.finds_user_objects().then(|| last.to_string()));
                }
                let lower = last.to_ascii_lowercase();
                for s in &self.listed {
                    if s == "public" {
                        if self.ns.objects.contains(&lower) {
                            return Ok(Some(last.to_string()));
                        }
                    } else if self.ns.find(s).is_some() {
                        let e = walden_engine::namespace::engine_name(s, last);
                        if self.ns.objects.contains(&e.to_ascii_lowercase()) {
                            return Ok(Some(e));
                        }
                    }
                }
                self.listed
                    .iter()
                    .any(|s| s == "public")
                    .then(|| last.to_string())
            }
            Some(q) if schema_of(q) == Some("public") => {
                if self.no_usage {
                    return Err(schema_denied());
                }
                Some(last.to_string())
            }
            Some(q) => match self.ns.find(q) {
                Some(s) if !s.usable => return Err(denied_in(q)),
                Some(s) => Some(walden_engine::namespace::engine_name(&s.name, last)),
                None => None,
            },
        })
    }

    /// The engine name of a relation or type being created: qualified by
    /// a schema, or unqualified in the path's first schema.
    pub fn creation(&self, name: &ast::ObjectName) -> Result<String> {
        let (schema, last) = split(name)?;
        if resolved(&last) {
            return Ok(last);
        }
        if last.contains(walden_engine::namespace::SCHEMA_SEP) {
            return Err(SqlError::unsupported("names containing U+001F"));
        }
        let target = match &schema {
            Some(q) => match schema_of(q) {
                Some(s) => s.to_string(),
                None if self.ns.find(q).is_some() => q.clone(),
                None => {
                    return Err(SqlError::new(
                        ErrorKind::InvalidSchemaName,
                        format!("schema \"{q}\" does not exist"),
                    ))
                }
            },
            None => self.current().map(str::to_string).ok_or_else(|| {
                SqlError::new(
                    ErrorKind::InvalidSchemaName,
                    "no schema has been selected to create in",
                )
            })?,
        };
        match target.as_str() {
            "public" => {
                self.require_create()?;
                Ok(last)
            }
            "pg_catalog" | "pg_toast" => Err(SqlError::new(
                ErrorKind::InsufficientPrivilege,
                format!("permission denied to create \"{target}.{last}\""),
            )
            .with_fields(crate::error::ErrorFields {
                detail: Some("System catalog modifications are currently disallowed.".into()),
                ..Default::default()
            })),
            "information_schema" => Err(SqlError::unsupported(
                "creating objects in schema information_schema",
            )),
            other => match self.ns.find(other) {
                Some(s) if !s.usable => Err(denied_in(other)),
                Some(_) => Ok(walden_engine::namespace::engine_name(other, &last)),
                None => Err(SqlError::new(
                    ErrorKind::InvalidSchemaName,
                    format!("schema \"{other}\" does not exist"),
                )),
            },
        }
    }
}

/// Checks the names a DDL, COPY or LOCK statement gives against the path
/// (queries and DML resolve theirs in the planner). Returns the statement
/// to run instead when `IF EXISTS` names are dropped from it, or when a
/// name refers to an object of a schema other than `public` (it becomes
/// the object's engine name, which the DDL code takes as it is).
pub fn check_statement(
    stmt: &ast::Statement,
    path: &SearchPath,
    db: &walden_engine::Database,
) -> Result<Option<ast::Statement>> {
    use ast::Statement as S;
    let mut out = stmt.clone();
    let rel = |n: &mut ast::ObjectName| -> Result<()> {
        let e = path.user_relation(n)?;
        set_resolved(n, e);
        Ok(())
    };
    match &mut out {
        S::CreateTable(ct) => {
            let e = path.creation(&ct.name)?;
            set_resolved(&mut ct.name, e);
            for c in &mut ct.columns {
                check_type(path, db, &mut c.data_type)?;
                for o in &mut c.options {
                    if let ast::ColumnOption::ForeignKey(fk) = &mut o.option {
                        fk_target(path, &mut fk.foreign_table)?;
                    }
                }
            }
            for c in &mut ct.constraints {
                if let ast::TableConstraint::ForeignKey(fk) = c {
                    fk_target(path, &mut fk.foreign_table)?;
                }
            }
        }
        S::CreateType { name, .. } => {
            let e = path.creation(name)?;
            set_resolved(name, e);
        }
        S::CreateView(cv) if cv.name.0.len() > 1 || !path.namespaces().schemas.is_empty() => {
            let e = path.creation(&cv.name)?;
            set_resolved(&mut cv.name, e);
        }
        S::AlterType(at) => {
            let e = path.user_type(&at.name)?;
            set_resolved(&mut at.name, e);
        }
        S::Drop {
            object_type: ast::ObjectType::Schema,
            ..
        } => return Ok(None),
        S::Drop {
            object_type,
            if_exists,
            names,
            ..
        } => {
            let mut kept = Vec::with_capacity(names.len());
            for n in names.iter() {
                let r = match &*object_type {
                    ast::ObjectType::Type => path.user_type(n),
                    // Named by kind, as PostgreSQL's DROP does.
                    kind => path.user_relation(n).map_err(|e| {
                        let kind = kind.to_string().to_ascii_lowercase();
                        let msg = e.to_string().replacen("relation", &kind, 1);
                        let e = e.with_message(msg);
                        match kind.as_str() {
                            "index" => SqlError::new(ErrorKind::UndefinedObject, e.to_string()),
                            _ => e,
                        }
                    }),
                };
                match r {
                    Ok(e) => {
                        let mut n = n.clone();
                        set_resolved(&mut n, e);
                        kept.push(n);
                    }
                    Err(_) if *if_exists => {}
                    Err(e) => return Err(e),
                }
            }
            *names = kept;
        }
        S::AlterTable(at) => {
            let e = path.user_relation(&at.name)?;
            let (schema, _) = walden_engine::namespace::split_engine_name(&e);
            let schema = schema.to_string();
            set_resolved(&mut at.name, e);
            for op in &mut at.operations {
                match op {
                    ast::AlterTableOperation::AddConstraint {
                        constraint: ast::TableConstraint::ForeignKey(fk),
                        ..
                    } => fk_target(path, &mut fk.foreign_table)?,
                    // A renamed table stays in its schema.
                    ast::AlterTableOperation::RenameTable {
                        table_name:
                            ast::RenameTableNameKind::To(to) | ast::RenameTableNameKind::As(to),
                    } if schema != "public" => {
                        let last = last_part(to);
                        set_resolved(to, walden_engine::namespace::engine_name(&schema, &last));
                    }
                    _ => {}
                }
            }
        }
        S::CreateIndex(ci) => {
            let e = path.user_relation(&ci.table_name)?;
            let (schema, _) = walden_engine::namespace::split_engine_name(&e);
            if schema == "public" {
                path.require_create()?;
            } else if let Some(n) = ci.name.as_mut() {
                let last = last_part(n);
                let schema = schema.to_string();
                set_resolved(n, walden_engine::namespace::engine_name(&schema, &last));
            }
            set_resolved(&mut ci.table_name, e);
        }
        S::Truncate(t) => {
            for n in &mut t.table_names {
                rel(&mut n.name)?;
            }
        }
        S::Lock(l) => {
            for t in &mut l.tables {
                rel(&mut t.name)?;
            }
        }
        S::Copy {
            source: ast::CopySource::Table { table_name, .. },
            ..
        } => rel(table_name)?,
        _ => {}
    }
    Ok((out != *stmt).then_some(out))
}

/// Puts engine name `e` in place of `n` when it names an object of a
/// schema other than `public` (a `public` name stays as written).
fn set_resolved(n: &mut ast::ObjectName, e: String) {
    if resolved(&e) {
        *n = ast::ObjectName::from(vec![ast::Ident::with_quote('"', e)]);
    }
}

/// A foreign key's referenced table.
fn fk_target(path: &SearchPath, n: &mut ast::ObjectName) -> Result<()> {
    // The table being created may be the target (it is not found yet).
    if let Ok(e) = path.user_relation(n) {
        set_resolved(n, e);
    }
    Ok(())
}

/// A column type naming a user type (an enum) must find it on the path.
fn check_type(
    path: &SearchPath,
    db: &walden_engine::Database,
    t: &mut ast::DataType,
) -> Result<()> {
    let name = match t {
        ast::DataType::Custom(name, _) => name,
        ast::DataType::Array(ast::ArrayElemTypeDef::SquareBracket(inner, _))
        | ast::DataType::Array(ast::ArrayElemTypeDef::Qualified(inner, _)) => {
            return check_type(path, db, inner)
        }
        _ => return Ok(()),
    };
    let (schema, last) = split(name)?;
    if let Some(s) = schema.as_deref().filter(|s| schema_of(s).is_none()) {
        // A type of another schema: its engine name.
        let e = path.user_type(name)?;
        if db.enum_type_as(None, &e.to_ascii_lowercase()).is_none() {
            return Err(SqlError::new(
                ErrorKind::UndefinedObject,
                format!("type \"{s}.{last}\" does not exist"),
            ));
        }
        set_resolved(name, e);
        return Ok(());
    }
    let e = match path.user_object(schema.as_deref(), &last)? {
        Some(e) if resolved(&e) => e,
        _ => last.clone(),
    };
    if db.enum_type_as(None, &e.to_ascii_lowercase()).is_none() {
        return Ok(());
    }
    match schema.as_deref().map(schema_of) {
        Some(Some("pg_catalog")) => Ok(()),
        _ => {
            let e = path.user_type(name)?;
            set_resolved(name, e);
            Ok(())
        }
    }
}

/// `name`'s qualifier (if any) and last part; more than two parts must
/// name this database first, as in PostgreSQL.
fn split(name: &ast::ObjectName) -> Result<(Option<String>, String)> {
    let part = |p: &ast::ObjectNamePart| match p {
        ast::ObjectNamePart::Identifier(i) => i.value.clone(),
        other => other.to_string(),
    };
    // A schema's name folds as identifiers do.
    let schema = |p: &ast::ObjectNamePart| match p {
        ast::ObjectNamePart::Identifier(i) => fold(i),
        other => other.to_string(),
    };
    let parts: Vec<String> = name.0.iter().map(part).collect();
    match (parts.as_slice(), name.0.as_slice()) {
        ([last], _) => Ok((None, last.clone())),
        ([_, last], [s, _]) => Ok((Some(schema(s)), last.clone())),
        ([_db, _, last], [_, s, _]) => Ok((Some(schema(s)), last.clone())),
        _ => Err(SqlError::syntax(format!(
            "improper qualified name (too many dotted names): {name}"
        ))),
    }
}

fn shown(schema: Option<&str>, last: &str) -> String {
    match schema {
        Some(s) => format!("{s}.{last}"),
        None => last.to_string(),
    }
}

fn not_found(what: &str, schema: Option<&str>, last: &str) -> SqlError {
    SqlError::new(
        ErrorKind::UndefinedTable,
        format!("{what} \"{}\" does not exist", shown(schema, last)),
    )
}

/// An identifier as a name: folded to lower case unless quoted.
fn fold(i: &ast::Ident) -> String {
    if i.quote_style.is_some() {
        i.value.clone()
    } else {
        i.value.to_ascii_lowercase()
    }
}

/// The last part of a qualified name as written.
fn last_part(name: &ast::ObjectName) -> String {
    name.0
        .last()
        .map(|p| match p {
            ast::ObjectNamePart::Identifier(i) => i.value.clone(),
            other => other.to_string(),
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_keep_existing_schemas_in_order() {
        assert_eq!(SearchPath::default().listed(), ["public"]);
        assert_eq!(SearchPath::default().searched(), ["pg_catalog", "public"]);
        assert!(SearchPath::parse("").listed().is_empty());
        assert_eq!(SearchPath::parse("").current(), None);
        let p = SearchPath::parse("public, pg_catalog");
        assert_eq!(p.searched(), ["public", "pg_catalog"]);
        assert!(p.user_first());
        assert_eq!(
            SearchPath::parse("nosuch, \"PUBLIC\"").listed(),
            [] as [&str; 0]
        );
        assert_eq!(SearchPath::parse("PUBLIC").listed(), ["public"]);
    }
}
