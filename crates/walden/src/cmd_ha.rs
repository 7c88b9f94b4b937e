//! `walden ha`: the HA cluster as etcd sees it.

use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use walden_replication::ha;

#[derive(Debug, Subcommand)]
pub enum HaCommand {
    /// Members, their roles and log, each group's primary and the
    /// synchronous secondaries its commits count.
    Status(StatusArgs),
    /// Hands a group's leader key to a SYNCHRONIZED synchronous secondary
    /// the primary counts for commits (as `ALTER AVAILABILITY GROUP ...
    /// FAILOVER` run on it): the primary stops acknowledging and gives the
    /// key up, the secondary takes it and promotes.
    Switchover(SwitchoverArgs),
}

/// How to reach etcd (as `walden serve` does).
#[derive(Debug, Args)]
pub struct EtcdArgs {
    /// etcd: `etcd://host:2379[,host:2379...]` (`https://` for TLS).
    #[arg(long, value_name = "ETCD")]
    ha: String,
    /// The CA that signed etcd's certificates (`https://` endpoints).
    #[arg(long, value_name = "FILE")]
    ha_ca: Option<PathBuf>,
    /// A client certificate and key, for etcd with --client-cert-auth.
    #[arg(long, value_name = "FILE")]
    ha_cert: Option<PathBuf>,
    #[arg(long, value_name = "FILE")]
    ha_key: Option<PathBuf>,
    /// An etcd user; its password from --ha-password-file or the
    /// WALDEN_ETCD_PASSWORD environment variable.
    #[arg(long, value_name = "NAME")]
    ha_user: Option<String>,
    #[arg(long, value_name = "FILE")]
    ha_password_file: Option<PathBuf>,
}

impl EtcdArgs {
    fn client(&self) -> Result<ha::Etcd, String> {
        let eps = ha::parse_endpoints(&self.ha).map_err(|e| e.to_string())?;
        let section = walden_server::config::HaSection {
            tls_ca: self.ha_ca.clone(),
            tls_cert: self.ha_cert.clone(),
            tls_key: self.ha_key.clone(),
            user: self.ha_user.clone(),
            password_file: self.ha_password_file.clone(),
            ..Default::default()
        };
        let security = section.etcd_security(&self.ha)?;
        Ok(ha::Etcd::secured(eps, Duration::from_secs(2), security))
    }
}

#[derive(Debug, Args)]
pub struct SwitchoverArgs {
    #[command(flatten)]
    etcd: EtcdArgs,
    /// The cluster's name (`walden serve --ha-cluster`).
    #[arg(long, value_name = "NAME")]
    ha_cluster: String,
    /// The availability group.
    #[arg(long, value_name = "AG")]
    group: String,
    /// The secondary that is to become primary.
    #[arg(long, value_name = "REPLICA")]
    to: String,
    /// Seconds to wait for the new primary.
    #[arg(long, default_value_t = 30)]
    wait: u64,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    etcd: EtcdArgs,
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
        HaCommand::Switchover(a) => switchover(a),
    }
}

fn switchover(a: SwitchoverArgs) -> ExitCode {
    let fail = |msg: String| {
        eprintln!("walden ha switchover: {msg}");
        ExitCode::FAILURE
    };
    let etcd = match a.etcd.client() {
        Ok(e) => e,
        Err(e) => return fail(e),
    };
    let group = a.group.to_ascii_lowercase();
    let view = match ha::read_cluster(&etcd, &a.ha_cluster) {
        Ok(v) => v,
        Err(e) => return fail(e.to_string()),
    };
    let Some(g) = view.groups.iter().find(|g| g.name == group) else {
        return fail(format!(
            "no availability group \"{}\" in cluster \"{}\"",
            a.group, a.ha_cluster
        ));
    };
    let Some(leader) = g.leader.clone() else {
        return fail(format!(
            "\"{}\" has no primary now (election pending); nothing to hand over",
            a.group
        ));
    };
    if leader.name.eq_ignore_ascii_case(&a.to) {
        return fail(format!("\"{}\" is already the primary", a.to));
    }
    // The primary honours only a secondary its commits count (it holds
    // every acknowledged commit): say so here rather than time out.
    let counted = g.sync.as_ref().is_some_and(|s| {
        s.leader.eq_ignore_ascii_case(&leader.name)
            && s.epoch == leader.epoch
            && s.members.iter().any(|m| m.eq_ignore_ascii_case(&a.to))
    });
    if !counted {
        return fail(format!(
            "\"{}\" is not among the synchronous secondaries the primary \"{}\" counts for commits",
            a.to, leader.name
        ));
    }
    // The request lives as long as this command waits (a lease of its own),
    // so an abandoned one cannot hold the group's election back.
    let (lease, _) = match etcd.grant(a.wait.max(5)) {
        Ok(l) => l,
        Err(e) => return fail(e.to_string()),
    };
    let key = ha::switchover_key(&a.ha_cluster, &group);
    let req = ha::SwitchoverKey {
        to: a.to.to_ascii_lowercase(),
        from: leader.name.clone(),
        epoch: leader.epoch,
    };
    let bytes = serde_json::to_vec(&req).expect("serializes");
    match etcd.txn(
        &[ha::etcd::Compare::Absent(key.clone())],
        &[ha::etcd::Op::Put(&key, &bytes, lease)],
    ) {
        Ok(true) => {}
        Ok(false) => {
            let _ = etcd.revoke(lease);
            return fail("another switchover of the group is under way".into());
        }
        Err(e) => return fail(e.to_string()),
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(a.wait);
    let outcome = loop {
        std::thread::sleep(Duration::from_millis(200));
        let now = ha::read_cluster(&etcd, &a.ha_cluster).ok();
        let holder = now
            .as_ref()
            .and_then(|v| v.groups.iter().find(|g| g.name == group))
            .and_then(|g| g.leader.clone());
        if let Some(l) = holder.filter(|l| l.name.eq_ignore_ascii_case(&a.to)) {
            break Ok(l.epoch);
        }
        if std::time::Instant::now() >= deadline {
            break Err(format!(
                "\"{}\" did not become the primary in {} s",
                a.to, a.wait
            ));
        }
    };
    let _ = etcd.revoke(lease);
    match outcome {
        Ok(epoch) => {
            println!(
                "{}: primary {} (epoch {epoch}), was {}",
                a.group, a.to, leader.name
            );
            ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}

fn status(a: StatusArgs) -> ExitCode {
    let etcd = match a.etcd.client() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("walden ha status: {e}");
            return ExitCode::from(2);
        }
    };
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
