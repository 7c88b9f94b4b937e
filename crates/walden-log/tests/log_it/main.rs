//! walden-log's integration tests, one binary: recovery, the exposure bound,
//! spare segments. Run one area with
//! `cargo test --release --workspace --test log_it -- log_recovery::`.

mod exposure_bound;
mod log_recovery;
mod spare_segments;
