//! Table, column and sequence definitions, and per-database settings.

use crate::error::{EngineError, Result};
use crate::types::{DataType, Value};
use std::time::Duration;

/// How a column gets a value when an insert gives none.
#[derive(Clone, Debug, PartialEq)]
pub enum DefaultExpr {
    /// A constant.
    Value(Value),
    /// `now()`, `CURRENT_TIMESTAMP`, `getdate()`, `sysdatetime()`.
    Now,
    /// `CURRENT_DATE`.
    Today,
    /// `newid()`, `gen_random_uuid()`.
    NewUuid,
    /// `nextval('seq')`, `NEXT VALUE FOR seq`.
    NextVal(String),
}

/// `IDENTITY(seed, increment)`, `SERIAL`, `GENERATED ... AS IDENTITY`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Identity {
    pub seed: i64,
    pub increment: i64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ColumnDef {
    pub name: String,
    pub data_type: DataType,
    pub nullable: bool,
    pub default: Option<DefaultExpr>,
    pub identity: Option<Identity>,
}

impl ColumnDef {
    pub fn new(name: impl Into<String>, data_type: DataType) -> Self {
        ColumnDef {
            name: name.into(),
            data_type,
            nullable: true,
            default: None,
            identity: None,
        }
    }
    pub fn not_null(mut self) -> Self {
        self.nullable = false;
        self
    }
    pub fn default(mut self, d: DefaultExpr) -> Self {
        self.default = Some(d);
        self
    }
    pub fn identity(mut self, seed: i64, increment: i64) -> Self {
        self.identity = Some(Identity { seed, increment });
        self.nullable = false;
        self
    }
}

/// A CHECK constraint: its name and its expression as SQL text. The engine
/// only stores it (in the table's definition, so the log, checkpoint images
/// and secondaries carry it); the SQL layer compiles and enforces it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckDef {
    pub name: String,
    pub expr: String,
}

/// What a foreign key does to referencing rows when the referenced key is
/// deleted or changed (`pg_constraint.confdeltype` / `confupdtype`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FkAction {
    NoAction,
    Restrict,
    Cascade,
    SetNull,
    SetDefault,
}

impl FkAction {
    /// PostgreSQL's one-letter code.
    pub fn code(self) -> char {
        match self {
            FkAction::NoAction => 'a',
            FkAction::Restrict => 'r',
            FkAction::Cascade => 'c',
            FkAction::SetNull => 'n',
            FkAction::SetDefault => 'd',
        }
    }

    pub fn from_code(c: u8) -> Option<FkAction> {
        Some(match c {
            b'a' => FkAction::NoAction,
            b'r' => FkAction::Restrict,
            b'c' => FkAction::Cascade,
            b'n' => FkAction::SetNull,
            b'd' => FkAction::SetDefault,
            _ => return None,
        })
    }

    /// The words of the clause (`ON DELETE <sql>`).
    pub fn sql(self) -> &'static str {
        match self {
            FkAction::NoAction => "NO ACTION",
            FkAction::Restrict => "RESTRICT",
            FkAction::Cascade => "CASCADE",
            FkAction::SetNull => "SET NULL",
            FkAction::SetDefault => "SET DEFAULT",
        }
    }
}

/// A FOREIGN KEY constraint, kept in the referencing table's definition.
/// The engine stores it (log, images, secondaries) and drops it with the
/// table it references; the SQL layer enforces it. The referenced table is
/// named by id, so a rename does not break it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForeignKeyDef {
    pub name: String,
    /// Referencing column positions in this table.
    pub columns: Vec<usize>,
    /// The referenced table's id and the positions of the referenced
    /// columns there (a primary key or unique constraint), pairwise with
    /// `columns`.
    pub ref_table: u32,
    pub ref_columns: Vec<usize>,
    pub on_update: FkAction,
    pub on_delete: FkAction,
    /// MATCH FULL (else MATCH SIMPLE): all referencing columns null or none.
    pub match_full: bool,
}

/// A table's definition. `primary_key` lists column positions; an empty key
/// means rows are keyed by a hidden row id.
#[derive(Clone, Debug, PartialEq)]
pub struct TableDef {
    pub id: u32,
    pub name: String,
    pub columns: Vec<ColumnDef>,
    pub primary_key: Vec<usize>,
    /// CHECK constraints, in the order they were declared.
    pub checks: Vec<CheckDef>,
    /// FOREIGN KEY constraints this table's rows must satisfy.
    pub foreign_keys: Vec<ForeignKeyDef>,
    /// Secondary indexes, in creation order (`Table::indexes` holds their
    /// entries in the same order).
    pub indexes: Vec<IndexDef>,
    /// The primary key constraint's name when it is not `<table>_pkey`
    /// (named in `ADD CONSTRAINT`, renamed, or kept across a table rename).
    pub pk_name: Option<String>,
}

/// A secondary index: its entries are the indexed columns' values followed
/// by the row's primary key (or hidden row id), so every entry is distinct
/// and a range of entries names the rows holding a range of values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexDef {
    /// From the same id space as tables (it names the index's OID).
    pub id: u32,
    pub name: String,
    /// Column positions, most significant first.
    pub columns: Vec<usize>,
    /// No two rows may share values in all the columns (NULLs are distinct,
    /// as PostgreSQL's default).
    pub unique: bool,
    /// Made by a `UNIQUE` constraint (shown in pg_constraint, dropped with
    /// `ALTER TABLE ... DROP CONSTRAINT` rather than `DROP INDEX`).
    pub constraint: bool,
}

impl TableDef {
    /// A definition to pass to `create_table` (the id is assigned there).
    pub fn new(
        name: impl Into<String>,
        columns: Vec<ColumnDef>,
        primary_key: &[&str],
    ) -> Result<Self> {
        let name = name.into();
        let mut pk = Vec::new();
        for k in primary_key {
            let i = columns
                .iter()
                .position(|c| c.name.eq_ignore_ascii_case(k))
                .ok_or_else(|| EngineError::UnknownColumn {
                    table: name.clone(),
                    column: k.to_string(),
                })?;
            pk.push(i);
        }
        let mut def = TableDef {
            id: 0,
            name,
            columns,
            primary_key: pk,
            indexes: Vec::new(),
            checks: Vec::new(),
            pk_name: None,
            foreign_keys: Vec::new(),
        };
        for &i in &def.primary_key {
            def.columns[i].nullable = false;
        }
        def.validate()?;
        Ok(def)
    }

    pub fn validate(&self) -> Result<()> {
        if self.columns.is_empty() {
            return Err(EngineError::InvalidDefinition(format!(
                "table \"{}\" has no columns",
                self.name
            )));
        }
        let mut seen = std::collections::HashSet::new();
        for c in &self.columns {
            if !seen.insert(c.name.to_ascii_lowercase()) {
                return Err(EngineError::InvalidDefinition(format!(
                    "column \"{}\" specified more than once",
                    c.name
                )));
            }
            if c.identity.is_some() && !c.data_type.is_integer() {
                return Err(EngineError::InvalidDefinition(format!(
                    "identity column \"{}\" must be an integer type",
                    c.name
                )));
            }
            if c.identity.is_some_and(|i| i.increment == 0) {
                return Err(EngineError::InvalidDefinition(
                    "identity increment must not be zero".into(),
                ));
            }
        }
        if self.columns.iter().filter(|c| c.identity.is_some()).count() > 1 {
            return Err(EngineError::InvalidDefinition(format!(
                "multiple identity columns specified for table \"{}\"",
                self.name
            )));
        }
        Ok(())
    }

    /// The same definition with these CHECK constraints.
    pub fn with_checks(mut self, checks: Vec<CheckDef>) -> Result<Self> {
        let mut seen = std::collections::HashSet::new();
        for c in &checks {
            if !seen.insert(c.name.as_str()) {
                return Err(EngineError::InvalidDefinition(format!(
                    "constraint \"{}\" for relation \"{}\" already exists",
                    c.name, self.name
                )));
            }
        }
        self.checks = checks;
        Ok(self)
    }

    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(name))
    }

    /// The index of this name (names are unique in a database, as relations).
    pub fn index(&self, name: &str) -> Option<(usize, &IndexDef)> {
        self.indexes
            .iter()
            .enumerate()
            .find(|(_, i)| i.name.eq_ignore_ascii_case(name))
    }

    /// PostgreSQL's name for the primary key's index and constraint.
    pub fn pkey_name(&self) -> String {
        self.pk_name
            .clone()
            .unwrap_or_else(|| format!("{}_pkey", self.name))
    }

    /// `(a, b)`: the names of columns, as PostgreSQL's error details list them.
    pub fn column_list(&self, cols: &[usize]) -> String {
        let names: Vec<&str> = cols
            .iter()
            .map(|&i| self.columns[i].name.as_str())
            .collect();
        format!("({})", names.join(", "))
    }

    pub fn identity_column(&self) -> Option<(usize, Identity)> {
        self.columns
            .iter()
            .enumerate()
            .find_map(|(i, c)| c.identity.map(|id| (i, id)))
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SequenceDef {
    pub id: u32,
    pub name: String,
    pub start: i64,
    pub increment: i64,
    /// `AS smallint | integer | bigint`: sets the default bounds.
    pub data_type: SeqType,
    /// The smallest and largest value `nextval` hands out (inclusive).
    pub min: i64,
    pub max: i64,
    /// Past a bound, start again at the other one (else 2200H).
    pub cycle: bool,
}

/// A sequence's data type (PostgreSQL's `seqtypid`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SeqType {
    SmallInt,
    Int,
    #[default]
    BigInt,
}

impl SeqType {
    /// The type's range.
    pub fn range(self) -> (i64, i64) {
        match self {
            SeqType::SmallInt => (i16::MIN as i64, i16::MAX as i64),
            SeqType::Int => (i32::MIN as i64, i32::MAX as i64),
            SeqType::BigInt => (i64::MIN, i64::MAX),
        }
    }

    /// The name PostgreSQL's messages use.
    pub fn name(self) -> &'static str {
        match self {
            SeqType::SmallInt => "smallint",
            SeqType::Int => "integer",
            SeqType::BigInt => "bigint",
        }
    }
}

/// What `CREATE SEQUENCE` says; [`SequenceOptions::define`] fills in the
/// defaults and checks it as PostgreSQL does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SequenceOptions {
    pub data_type: SeqType,
    pub start: Option<i64>,
    /// `None` is 1.
    pub increment: Option<i64>,
    pub min: Option<i64>,
    pub max: Option<i64>,
    pub cycle: bool,
}

/// `DELAYED_DURABILITY` of a database.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DelayedDurability {
    /// Every commit is fully durable; requests for delayed commits are ignored.
    #[default]
    Disabled,
    /// A transaction is delayed when it asks to be.
    Allowed,
    /// Every transaction that may be delayed is.
    Forced,
}

impl DelayedDurability {
    pub fn as_str(self) -> &'static str {
        match self {
            DelayedDurability::Disabled => "DISABLED",
            DelayedDurability::Allowed => "ALLOWED",
            DelayedDurability::Forced => "FORCED",
        }
    }
}

impl std::str::FromStr for DelayedDurability {
    type Err = EngineError;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_uppercase().as_str() {
            "DISABLED" => Ok(Self::Disabled),
            "ALLOWED" => Ok(Self::Allowed),
            "FORCED" => Ok(Self::Forced),
            _ => Err(EngineError::Data(format!(
                "DELAYED_DURABILITY must be DISABLED, ALLOWED or FORCED, not '{s}'"
            ))),
        }
    }
}

/// Recovery model of a database.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RecoveryModel {
    /// Log before the last checkpoint is reused.
    #[default]
    Simple,
    /// Log is kept until `BACKUP LOG` (once a full backup exists).
    Full,
}

impl RecoveryModel {
    pub fn as_str(self) -> &'static str {
        match self {
            RecoveryModel::Simple => "SIMPLE",
            RecoveryModel::Full => "FULL",
        }
    }
}

impl std::str::FromStr for RecoveryModel {
    type Err = EngineError;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_uppercase().as_str() {
            "SIMPLE" => Ok(Self::Simple),
            "FULL" => Ok(Self::Full),
            _ => Err(EngineError::Data(format!(
                "RECOVERY must be SIMPLE or FULL, not '{s}'"
            ))),
        }
    }
}

/// Persisted settings of a database.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DbSettings {
    pub delayed_durability: DelayedDurability,
    pub recovery_model: RecoveryModel,
    /// Most bytes of acknowledged, unhardened delayed commits.
    pub max_exposure_bytes: Option<u64>,
    /// Oldest an acknowledged, unhardened delayed commit may get, in ms.
    pub max_exposure_ms: Option<u64>,
}

impl DbSettings {
    pub fn max_exposure(&self) -> Option<Duration> {
        self.max_exposure_ms.map(Duration::from_millis)
    }
}
