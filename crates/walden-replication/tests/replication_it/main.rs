//! walden-replication's integration tests, one binary: replicas in process,
//! the lag bound, peer authentication, fencing and etcd. Run one area with
//! `cargo test --release --workspace --test replication_it -- lag_bound::`.

mod support;

mod ha_etcd_security;
mod ha_fencing;
mod in_process;
mod lag_bound;
mod peer_auth;
