//! `pg_relation_size` and its family: what a relation or a database takes
//! on disk. A table's size is its pages in the data file as of the last
//! checkpoint (rows changed since are in the log and in memory until the
//! next one writes them). A table is stored by its primary key, so the
//! primary key's index has no pages of its own (0); a secondary index has
//! its own. Sequences live in the catalog record (0). A database's size is
//! its data file and its log.

use super::oids::{rel_by_oid, Rel, Seen};
use super::regcast::regclass_oid;
use crate::error::{ErrorKind, Result, SqlError};
use crate::functions::Env;
use walden_engine::Value;

use crate::functions::SizeOf;

pub fn size_of(env: &Env<'_>, which: SizeOf, args: &[Value]) -> Result<Value> {
    let Some(arg) = args.first().filter(|v| !v.is_null()) else {
        return Ok(Value::Null);
    };
    if which == SizeOf::Database {
        return database_size(env, arg);
    }
    if let Some(fork) = args.get(1) {
        match fork {
            Value::Null => return Ok(Value::Null),
            Value::Text(f) if &**f == "main" => {}
            // Forks Walden does not have are empty.
            Value::Text(f) if matches!(&**f, "fsm" | "vm" | "init") => {
                return Ok(Value::Int(0));
            }
            other => {
                return Err(SqlError::new(
                    ErrorKind::InvalidParameter,
                    format!(
                        "invalid fork name \"{other}\" (valid fork names are \"main\", \"fsm\", \"vm\" and \"init\")"
                    ),
                ))
            }
        }
    }
    let oid = match arg {
        Value::Int(oid) => *oid,
        other => match regclass_oid(env, &other.to_string())? {
            Value::Int(oid) => oid,
            _ => return Ok(Value::Null),
        },
    };
    // As PostgreSQL: an OID that names no relation gives NULL.
    let db = Seen::of(env);
    let Some(rel) = rel_by_oid(&db, oid) else {
        return Ok(Value::Null);
    };
    let bytes = match rel {
        Rel::Table(t) => {
            let s = env.tx.database().stored_bytes(&t)?;
            match which {
                SizeOf::Relation => s.rows,
                SizeOf::Total => s.rows + s.indexes_total(),
                _ => s.indexes_total(),
            }
        }
        Rel::Index(ix) if which == SizeOf::Indexes || ix.primary => 0,
        Rel::Index(ix) => {
            let s = env.tx.database().stored_bytes(&ix.table)?;
            let id = ix
                .table
                .indexes
                .iter()
                .find(|i| i.def.name == ix.name)
                .map(|i| i.def.id);
            s.indexes
                .iter()
                .find(|(i, _)| Some(*i) == id)
                .map_or(0, |(_, b)| *b)
        }
        Rel::Sequence(_) | Rel::View(_) => 0,
    };
    Ok(Value::Int(bytes as i64))
}

fn database_size(env: &Env<'_>, arg: &Value) -> Result<Value> {
    let dbs = env.instance.databases();
    let found = match arg {
        // As PostgreSQL: an OID that names no database gives NULL.
        Value::Int(oid) => match dbs.iter().find(|d| d.id() as i64 == *oid) {
            Some(d) => d,
            None => return Ok(Value::Null),
        },
        other => {
            let name = other.to_string();
            match dbs.iter().find(|d| d.name() == name) {
                Some(d) => d,
                None => {
                    return Err(SqlError::new(
                        ErrorKind::UndefinedDatabase,
                        format!("database \"{name}\" does not exist"),
                    ))
                }
            }
        }
    };
    Ok(Value::Int(found.size_on_disk() as i64))
}
