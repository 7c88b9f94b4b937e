//! The paged base store that replaces the in-memory tables (docs/design.md,
//! "Storage engine: the decision"): redb over Walden's `Vfs`, keyed by an
//! order-preserving encoding of the primary key. Built beside the current
//! path; nothing on the commit path uses it yet.

pub mod backend;
pub(crate) mod base;
pub mod keycode;

pub use backend::VfsBackend;
pub use keycode::{decode_key, encode_key, key_bytes, KeyDecodeError};
