//! The front end: splits a batch into statements, recognises the statements
//! sqlparser does not take (T-SQL durability and administration forms), and
//! parses the rest with sqlparser (PostgreSQL dialect first, MS SQL second).

use crate::error::{Result, SqlError};
use sqlparser::ast::Statement;
use sqlparser::dialect::{MsSqlDialect, PostgreSqlDialect};
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, Tokenizer};

pub(crate) mod alter_table;
mod command;
mod depth;
mod identity_options;
mod normalize;
mod pg_forms;
mod position;
mod recognise;
mod split;
mod sqlparse;
mod toks;

pub use command::*;
pub use depth::*;
pub use identity_options::{overriding, Overriding};
pub use normalize::*;
pub(crate) use position::reference_position;
pub use recognise::*;
pub use split::*;
pub use sqlparse::*;
pub(crate) use toks::*;
