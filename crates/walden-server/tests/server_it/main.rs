//! walden-server's integration tests, one binary (one link instead of one per
//! file): each module drives a server in process over the wire. Run one area
//! with `cargo test --release --workspace --test server_it -- wire::`.

mod common;

mod copy_from_stdin;
mod grant_options;
mod hardening;
mod host_rules;
mod indexes;
mod protocol;
mod roles;
mod statement_memory;
mod tls_rules;
mod transactions;
mod wire;
