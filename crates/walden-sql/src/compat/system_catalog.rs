//! The system catalogs as the stages below see them: `Catalogs` implements
//! `functions::SystemCatalog`, and each system view is a
//! `functions::SystemRelation`.

use super::catalog_functions;
use super::pg_catalog::{self, PgView, Seen, SeqRel};
use super::sysviews::{self, SysView};
use crate::context::search_path::SearchPath;
use crate::error::Result;
use crate::functions::{Env, Func, SystemCatalog, SystemRelation};
use std::sync::Arc;
use walden_engine::{DataType, Database, RegKind, Table, Value};

/// The one implementation; sessions hand `&CATALOGS` down.
#[derive(Debug)]
pub struct Catalogs;

pub static CATALOGS: Catalogs = Catalogs;

impl SystemCatalog for Catalogs {
    fn call(&self, f: Func, args: Vec<Value>, env: &Env<'_>) -> Result<Value> {
        catalog_functions::call(f, args, env)
    }

    fn regclass_oid(&self, env: &Env<'_>, text: &str) -> Result<Value> {
        pg_catalog::regclass_oid(env, text)
    }

    fn check_reg_constant(
        &self,
        db: &Database,
        viewer: Option<u64>,
        path: &SearchPath,
        kind: RegKind,
        text: &str,
    ) -> Result<()> {
        pg_catalog::check_reg_constant(&Seen::new(db, viewer), path, kind, text)
    }

    fn identity_of_sequence(&self, env: &Env<'_>, name: &str) -> Option<Arc<Table>> {
        let seen = Seen::of(env);
        match pg_catalog::sequence_relation(&seen, name)? {
            SeqRel::Identity(id) => seen.tables().into_iter().find(|t| t.id() == id),
            SeqRel::Sequence(_) => None,
        }
    }

    fn relation(&self, schema: Option<&str>, name: &str) -> Option<Arc<dyn SystemRelation>> {
        sysviews::lookup(schema, name).map(|v| Arc::new(v) as Arc<dyn SystemRelation>)
    }

    fn sequence_relation(
        &self,
        db: &Database,
        viewer: Option<u64>,
        name: &str,
    ) -> Option<(Arc<dyn SystemRelation>, Value)> {
        let rel = pg_catalog::sequence_relation(&Seen::new(db, viewer), name)?;
        Some((
            Arc::new(SysView::Pg(PgView::SequenceRel)),
            Value::Int(pg_catalog::sequence_relation_oid(rel)),
        ))
    }

    fn table_function(&self, name: &str) -> Option<Arc<dyn SystemRelation>> {
        let view = match name {
            "pg_options_to_table" => SysView::Pg(PgView::OptionsTable),
            "dm_io_virtual_file_stats" => SysView::FileStats,
            _ => return None,
        };
        Some(Arc::new(view))
    }
}

impl SystemRelation for SysView {
    fn columns(&self) -> Vec<(&'static str, DataType)> {
        SysView::columns(*self)
    }

    fn table_oid(&self) -> Option<i64> {
        match self {
            SysView::Pg(v) => pg_catalog::catalog_relation_oid(*v),
            _ => None,
        }
    }

    fn origin(&self, column: &str) -> Option<crate::ColumnOrigin> {
        let rel = self.table_oid()?;
        Some(crate::ColumnOrigin {
            table_oid: u32::try_from(rel).ok()?,
            attnum: pg_catalog::catalog_attnum(rel, column)?,
        })
    }

    fn rows(&self, args: &[Value], env: &Env<'_>) -> Result<Vec<Vec<Value>>> {
        sysviews::rows(*self, args, env)
    }
}
