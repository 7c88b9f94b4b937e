//! `walden ha`: the HA cluster as etcd sees it.

use clap::{Args, Subcommand};
use std::process::ExitCode;
use std::time::Duration;
use walden_replication::ha;

#[derive(Debug, Subcommand)]
pub enum HaCommand {
    /// Members, their roles and log, each group's primary and the
    /// synchronous secondaries its commits count.
    Status(StatusArgs),
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// etcd: `etcd://host:2379[,host:2379...]`.
    #[arg(long, value_name = "ETCD")]
    ha: String,
    /// The cluster's name (`walden serve --ha-cluster`).
    #[arg(long, value_name = "NAME")]
    ha_cluster: String,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run(cmd: HaCommand) -> ExitCode {
    match cmd {
        HaCommand::Status(a) => status(a),
    }
}

fn status(a: StatusArgs) -> ExitCode {
    let eps = match ha::parse_endpoints(&a.ha) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("walden ha status: {e}");
            return ExitCode::from(2);
        }
    };
    let etcd = ha::Etcd::new(eps, Duration::from_secs(2));
    match ha::read_cluster(&etcd, &a.ha_cluster) {
        Ok(v) => {
            if a.json {
                let groups: Vec<_> = v
                    .groups
                    .iter()
                    .map(|g| {
                        serde_json::json!({
                            "name": g.name, "leader": g.leader, "sync": g.sync,
                        })
                    })
                    .collect();
                println!(
                    "{}",
                    serde_json::json!({
                        "cluster": v.cluster, "groups": groups, "members": v.members,
                    })
                );
            } else {
                print!("{}", ha::format_status(&v));
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("walden ha status: {e}");
            ExitCode::FAILURE
        }
    }
}
