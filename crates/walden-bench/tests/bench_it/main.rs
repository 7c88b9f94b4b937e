//! walden-bench's integration tests, one binary. Run one area with
//! `cargo test --release --workspace --test bench_it -- report_html::`.

mod log_bench_smoke;
mod report_html;
