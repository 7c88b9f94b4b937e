//! walden-engine's integration tests, one binary (one link instead of one per
//! file): the engine embedded, power cuts simulated on its in-memory file
//! system, SIGKILLs of a child copy of this binary. Run one area with
//! `cargo test --release --workspace --test engine_it -- crash_power_loss::`.

mod model;

mod bulk_commit_beside;
mod checkpoint_batches;
mod checkpoint_catch_up;
mod checkpoint_ddl_replay;
mod checkpoint_staging;
mod commit_speed_guard;
mod crash_power_loss;
mod engine_indexes;
mod engine_semantics;
mod instance_safety;
mod remote_term;
mod role_commit_crash;
mod seed_stream;
mod spill_kill;
mod spill_log_as_you_go;
mod store_check;
mod store_keycode;
mod store_power_loss;
mod store_read_through;
