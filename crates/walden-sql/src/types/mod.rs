//! Types and their text: SQL type names to engine types, the PostgreSQL
//! type (OID, name, typmod) of each engine type, arrays in PostgreSQL's text
//! form, and identifiers and literals quoted as SQL text. The bottom stage:
//! it imports nothing of the crate but `error`.

pub(crate) mod array_text;
pub(crate) mod collation;
pub(crate) mod interval_typmod;
pub(crate) mod names;
pub(crate) mod oids;
pub(crate) mod pg_types;
pub(crate) mod quote;
pub(crate) mod temp_names;

pub use array_text::*;
pub use pg_types::*;
pub use quote::*;
