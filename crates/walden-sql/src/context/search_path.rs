//! `search_path`: the schemas an unqualified name is looked up in, as
//! PostgreSQL resolves it. Walden's schemas are fixed: `public` holds every
//! user relation, sequence and type; `pg_catalog` and `information_schema`
//! hold the catalogs. A path entry naming no such schema (`"$user"` when no
//! schema has the user's name, a typo) is skipped, as in PostgreSQL.

use crate::error::{ErrorKind, Result, SqlError};
use sqlparser::ast;

pub use crate::front::DEFAULT_PATH;

/// The existing schemas a session's `search_path` names, in order, and
/// what the session's role may do in `public` (its USAGE and CREATE
/// privileges: a schema the role may not use drops out of the path, as
/// PostgreSQL's effective search path leaves it out).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchPath {
    listed: Vec<&'static str>,
    /// No USAGE on `public`: `public.x` is 42501.
    no_usage: bool,
    /// No CREATE on `public`: creating there is 42501.
    no_create: bool,
}

impl Default for SearchPath {
    fn default() -> Self {
        SearchPath::parse(DEFAULT_PATH)
    }
}

/// PostgreSQL's refusal of a schema privilege.
pub fn schema_denied() -> SqlError {
    SqlError::new(
        ErrorKind::InsufficientPrivilege,
        "permission denied for schema public",
    )
}

/// The schema a name's qualifier refers to: `dbo` is the SQL Server
/// spelling of the one user schema.
fn schema_of(qualifier: &str) -> Option<&'static str> {
    match qualifier.to_ascii_lowercase().as_str() {
        "public" | "dbo" => Some("public"),
        "pg_catalog" => Some("pg_catalog"),
        "information_schema" => Some("information_schema"),
        "pg_toast" => Some("pg_toast"),
        _ => None,
    }
}

impl SearchPath {
    /// Reads a `search_path` value (`"$user", public`, `''`, `a, b`).
    pub fn parse(text: &str) -> SearchPath {
        let mut listed = Vec::new();
        for part in text.split(',') {
            let part = part.trim();
            // A quoted entry keeps its case; an unquoted one folds.
            let name = match part.strip_prefix('"').and_then(|p| p.strip_suffix('"')) {
                Some(q) if q.chars().any(|c| c.is_ascii_uppercase()) => continue,
                Some(q) => q.to_string(),
                None => part.to_ascii_lowercase(),
            };
            if name == "dbo" {
                continue;
            }
            if let Some(s) = schema_of(&name) {
                if !listed.contains(&s) {
                    listed.push(s);
                }
            }
        }
        SearchPath {
            listed,
            no_usage: false,
            no_create: false,
        }
    }

    /// The path as a role with (or without) USAGE and CREATE on `public`
    /// sees it.
    pub fn with_access(mut self, usage: bool, create: bool) -> SearchPath {
        if !usage {
            self.listed.retain(|s| *s != "public");
        }
        self.no_usage = !usage;
        self.no_create = !create;
        self
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
    pub fn listed(&self) -> &[&'static str] {
        &self.listed
    }

    /// The schemas searched, in order: `pg_catalog` first unless the path
    /// places it (`current_schemas(true)`).
    pub fn searched(&self) -> Vec<&'static str> {
        let mut out = self.listed.clone();
        if !out.contains(&"pg_catalog") {
            out.insert(0, "pg_catalog");
        }
        out
    }

    /// `current_schema()`: the first existing schema of the path.
    pub fn current(&self) -> Option<&'static str> {
        self.listed.first().copied()
    }

    /// Whether unqualified names find user objects.
    pub fn finds_user_objects(&self) -> bool {
        self.listed.contains(&"public")
    }

    /// Whether an unqualified catalog name is shadowed by a user object of
    /// the same name: only when the path places `public` before `pg_catalog`.
    pub fn user_first(&self) -> bool {
        let at = |s| self.listed.iter().position(|x| *x == s);
        matches!((at("public"), at("pg_catalog")), (Some(u), Some(c)) if u < c)
    }

    /// The user relation `name` refers to (its bare name): qualified by
    /// `public`, or unqualified with `public` on the path.
    pub fn user_relation(&self, name: &ast::ObjectName) -> Result<String> {
        let (schema, last) = split(name)?;
        self.user_object(schema.as_deref(), &last)?
            .map(|()| last.clone())
            .ok_or_else(|| not_found("relation", schema.as_deref(), &last))
    }

    /// Same for a name given as text (`nextval('s')`, `'t'::regclass`):
    /// `schema.name`, either part possibly quoted.
    pub fn user_relation_text(&self, text: &str) -> Result<String> {
        let (schema, last) = crate::types::split_qualified(text);
        self.user_object(schema.as_deref(), &last)?
            .map(|()| last.clone())
            .ok_or_else(|| not_found("relation", schema.as_deref(), &last))
    }

    /// A user type (an enum): qualified by `public` or found on the path.
    pub fn user_type(&self, name: &ast::ObjectName) -> Result<String> {
        let (schema, last) = split(name)?;
        self.user_object(schema.as_deref(), &last)?
            .map(|()| last.clone())
            .ok_or_else(|| {
                SqlError::new(
                    ErrorKind::UndefinedObject,
                    format!(
                        "type \"{}\" does not exist",
                        shown(schema.as_deref(), &last)
                    ),
                )
            })
    }

    /// Whether a name finds a user object; 42501 for `public.x` when the
    /// role may not use `public`.
    fn user_object(&self, schema: Option<&str>, _last: &str) -> Result<Option<()>> {
        Ok(match schema {
            None => self.finds_user_objects().then_some(()),
            Some(q) if schema_of(q) == Some("public") => {
                if self.no_usage {
                    return Err(schema_denied());
                }
                Some(())
            }
            Some(_) => None,
        })
    }

    /// The bare name of a relation or type being created: qualified by
    /// `public`, or unqualified with a path whose first schema is `public`.
    pub fn creation(&self, name: &ast::ObjectName) -> Result<String> {
        let (schema, last) = split(name)?;
        let target = match &schema {
            Some(q) => schema_of(q).ok_or_else(|| {
                SqlError::new(
                    ErrorKind::InvalidSchemaName,
                    format!("schema \"{q}\" does not exist"),
                )
            })?,
            None => self.current().ok_or_else(|| {
                SqlError::new(
                    ErrorKind::InvalidSchemaName,
                    "no schema has been selected to create in",
                )
            })?,
        };
        match target {
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
            other => Err(SqlError::unsupported(format!(
                "creating objects in schema {other} (Walden's user objects live in public)"
            ))),
        }
    }
}

/// Checks the names a DDL, COPY or LOCK statement gives against the path
/// (queries and DML resolve theirs in the planner). Returns the statement
/// to run instead when `IF EXISTS` names are dropped from it.
pub fn check_statement(
    stmt: &ast::Statement,
    path: &SearchPath,
    db: &walden_engine::Database,
) -> Result<Option<ast::Statement>> {
    use ast::Statement as S;
    let rel = |n: &ast::ObjectName| path.user_relation(n).map(|_| ());
    match stmt {
        S::CreateTable(ct) => {
            path.creation(&ct.name)?;
            for c in &ct.columns {
                check_type(path, db, &c.data_type)?;
            }
        }
        S::CreateType { name, .. } => {
            path.creation(name)?;
        }
        S::AlterType(at) => {
            path.user_type(&at.name)?;
        }
        S::Drop {
            object_type,
            if_exists,
            names,
            ..
        } => {
            let mut kept = Vec::with_capacity(names.len());
            for n in names {
                let r = match object_type {
                    ast::ObjectType::Type => path.user_type(n).map(|_| ()),
                    // Named by kind, as PostgreSQL's DROP does.
                    kind => rel(n).map_err(|e| {
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
                    Ok(()) => kept.push(n.clone()),
                    Err(_) if *if_exists => {}
                    Err(e) => return Err(e),
                }
            }
            if kept.len() != names.len() {
                let mut s = stmt.clone();
                if let S::Drop { names, .. } = &mut s {
                    *names = kept;
                }
                return Ok(Some(s));
            }
        }
        S::AlterTable(at) => rel(&at.name)?,
        S::CreateIndex(ci) => {
            rel(&ci.table_name)?;
            path.require_create()?;
        }
        S::Truncate(t) => {
            for n in &t.table_names {
                rel(&n.name)?;
            }
        }
        S::Lock(l) => {
            for t in &l.tables {
                rel(&t.name)?;
            }
        }
        S::Copy {
            source: ast::CopySource::Table { table_name, .. },
            ..
        } => rel(table_name)?,
        _ => {}
    }
    Ok(None)
}

/// A column type naming a user type (an enum) must find it on the path.
fn check_type(path: &SearchPath, db: &walden_engine::Database, t: &ast::DataType) -> Result<()> {
    let name = match t {
        ast::DataType::Custom(name, _) => name,
        ast::DataType::Array(ast::ArrayElemTypeDef::SquareBracket(inner, _))
        | ast::DataType::Array(ast::ArrayElemTypeDef::Qualified(inner, _)) => {
            return check_type(path, db, inner)
        }
        _ => return Ok(()),
    };
    let (schema, last) = split(name)?;
    if db.enum_type_as(None, &last.to_ascii_lowercase()).is_none() {
        return Ok(());
    }
    match schema.as_deref().map(schema_of) {
        Some(Some("pg_catalog")) => Ok(()),
        _ => path.user_type(name).map(|_| ()),
    }
}

/// `name`'s qualifier (if any) and last part; more than two parts must
/// name this database first, as in PostgreSQL.
fn split(name: &ast::ObjectName) -> Result<(Option<String>, String)> {
    let part = |p: &ast::ObjectNamePart| match p {
        ast::ObjectNamePart::Identifier(i) => i.value.clone(),
        other => other.to_string(),
    };
    let parts: Vec<String> = name.0.iter().map(part).collect();
    match parts.as_slice() {
        [last] => Ok((None, last.clone())),
        [schema, last] => Ok((Some(schema.clone()), last.clone())),
        [_db, schema, last] => Ok((Some(schema.clone()), last.clone())),
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
