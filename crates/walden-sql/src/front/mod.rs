//! The front end: splits a batch into statements, recognises the statements
//! sqlparser does not take (T-SQL durability and administration forms), and
//! parses the rest with sqlparser (PostgreSQL dialect first, MS SQL second).

use crate::error::{Result, SqlError};
use sqlparser::ast::Statement;
use sqlparser::dialect::{MsSqlDialect, PostgreSqlDialect};
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, Tokenizer};

pub(crate) mod alter_table;
pub(crate) mod analyze;
pub(crate) mod availability_group;
mod call_args;
mod command;
mod cursor;
mod depth;
mod explain;
mod frame_bounds;
mod identity_options;
pub(crate) mod keywords;
mod normalize;
mod pg_forms;
pub mod plpgsql;
mod position;
mod prepare;
mod recognise;
pub(crate) mod role;
mod sequence_clauses;
mod split;
mod sqlparse;
mod toks;
pub(crate) mod transaction;
mod tsql_batch;
pub(crate) mod window_exclude;

pub use call_args::*;
pub use command::*;
pub use cursor::*;
pub use depth::*;
pub use explain::{explain_parts, ExplainFormat, ExplainOptions};
pub use identity_options::{overriding, Overriding};
pub use normalize::*;
pub use pg_forms::VARIADIC_MARK;
pub(crate) use position::reference_position;
pub use prepare::{parse_execute, parse_prepare};
pub use recognise::*;
pub use split::*;
pub use sqlparse::*;
pub(crate) use toks::*;
pub use tsql_batch::*;
