//! The `walden` command.
//!
//! Each subcommand lives in its own module (`cmd_*.rs`) exposing an args type
//! and a `run` function that returns the process exit code. To add one, add a
//! variant to [`Command`] and a match arm in [`main`].

use clap::{Parser, Subcommand};

/// jemalloc rather than glibc's malloc: its background threads hand the
/// memory of evicted rows back to the operating system without a trim
/// that holds every allocating commit up, and the server runs faster on
/// it (docs/design.md, "Checkpoints").
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

use std::process::ExitCode;

mod cmd_bench;
mod cmd_crash;
mod cmd_ha;
mod cmd_log;
mod cmd_serve;
mod cmd_slt;
mod cmd_stress;
mod crash_workload;
mod readonly_vfs;

/// Walden: a transactional SQL database whose commit path is a dial.
#[derive(Debug, Parser)]
#[command(name = "walden", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Inspect and verify log files (read-only).
    #[command(subcommand)]
    Log(cmd_log::LogCommand),
    /// Kill a writing process over and over and check what recovery keeps.
    CrashTest(cmd_crash::CrashTestArgs),
    /// The process `crash-test` spawns and kills (internal).
    #[command(hide = true)]
    CrashTestChild(cmd_crash::CrashChildArgs),
    /// The workbench: experiments against the embedded engine or a server,
    /// with PostgreSQL and SQLite side by side (--peer).
    #[command(subcommand)]
    Bench(cmd_bench::BenchCommand),
    /// High availability through etcd: the cluster as etcd sees it.
    #[command(subcommand)]
    Ha(cmd_ha::HaCommand),
    /// Serve SQL over the PostgreSQL wire protocol.
    Serve(cmd_serve::ServeArgs),
    /// Run sqllogictest files in process and count what passes.
    Slt(cmd_slt::SltArgs),
    /// Load a PostgreSQL-protocol server (Walden or PostgreSQL) with N
    /// sessions running a script; report throughput, latency and errors.
    Stress(cmd_stress::StressArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Log(cmd) => cmd_log::run(cmd),
        Command::CrashTest(args) => cmd_crash::run(args),
        Command::CrashTestChild(args) => cmd_crash::run_child(args),
        Command::Bench(cmd) => cmd_bench::run(cmd),
        Command::Ha(cmd) => cmd_ha::run(cmd),
        Command::Serve(args) => cmd_serve::run(args),
        Command::Slt(args) => cmd_slt::run(args),
        Command::Stress(args) => cmd_stress::run(args),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
