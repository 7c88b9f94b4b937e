//! `walden serve`: the PostgreSQL wire-protocol server.

use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use walden_server::{Server, ServerConfig};

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Configuration file (TOML); the flags below override it.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Data directory (created on first start with a database named `walden`).
    /// Default: `data_dir` of the config file, else ./walden-data.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Address to listen on for PostgreSQL clients [default: 127.0.0.1:5433].
    #[arg(long)]
    listen: Option<String>,
    /// Address of the Prometheus /metrics endpoint (off unless set).
    #[arg(long)]
    metrics_listen: Option<String>,
    /// Most client connections at once [default: 100].
    #[arg(long)]
    max_connections: Option<usize>,
    /// This replica's name in availability groups (`REPLICA ON 'name'`);
    /// turns replication on.
    #[arg(long)]
    replica_name: Option<String>,
    /// Address of the replication endpoint primaries connect to (a secondary needs one).
    #[arg(long)]
    endpoint_listen: Option<String>,
    /// Page cache of each database's data file, in MiB (`[storage]
    /// cache_size_mb`) [default: 128]. Rows not changed since the last
    /// checkpoint are read through it, so data larger than it works.
    #[arg(long, value_name = "MIB", value_parser = clap::value_parser!(u64).range(1..))]
    cache_size_mb: Option<u64>,
    /// Automatic failover through etcd: `etcd://host:2379[,host:2379...]`
    /// (`[ha] etcd`); needs --replica-name and --ha-cluster.
    #[arg(long, value_name = "ETCD")]
    ha: Option<String>,
    /// The HA cluster's name (`[ha] cluster`): its keys are /walden/NAME/.
    #[arg(long, value_name = "NAME")]
    ha_cluster: Option<String>,
    /// The leader lease's TTL in seconds (`[ha] ttl_s`) [default: 5].
    #[arg(long, value_name = "SECONDS")]
    ha_ttl: Option<u64>,
    /// The CA that signed etcd's certificates, for `https://` endpoints
    /// (`[ha] tls_ca`).
    #[arg(long, value_name = "FILE")]
    ha_ca: Option<std::path::PathBuf>,
    /// This node's client certificate and key, for etcd with
    /// --client-cert-auth (`[ha] tls_cert`, `tls_key`).
    #[arg(long, value_name = "FILE")]
    ha_cert: Option<std::path::PathBuf>,
    #[arg(long, value_name = "FILE")]
    ha_key: Option<std::path::PathBuf>,
    /// An etcd user (`[ha] user`); its password from --ha-password-file
    /// (`[ha] password_file`) or the WALDEN_ETCD_PASSWORD environment
    /// variable, never the command line.
    #[arg(long, value_name = "NAME")]
    ha_user: Option<String>,
    #[arg(long, value_name = "FILE")]
    ha_password_file: Option<std::path::PathBuf>,
}

fn init_tracing() {
    use std::io::IsTerminal;
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    // With stderr gone (`walden serve 2>&1 | head`), a failed write must not
    // make tracing report it with eprintln!, which panics: the panic ended
    // the server, or its signal task, so SIGTERM did nothing.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .log_internal_errors(false)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}

pub fn run(args: ServeArgs) -> ExitCode {
    init_tracing();
    let file = match &args.config {
        Some(p) => match ServerConfig::from_file(p) {
            Ok(f) => Some(f),
            Err(e) => {
                eprintln!("walden serve: {e}");
                return ExitCode::from(2);
            }
        },
        None => None,
    };
    let data_dir = args.data_dir.clone().or_else(|| {
        if file.as_ref().is_some_and(|f| f.data_dir.is_some()) {
            None
        } else {
            Some(PathBuf::from("walden-data"))
        }
    });
    let mut cfg = match ServerConfig::from_parts(file, data_dir) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("walden serve: {e}");
            return ExitCode::from(2);
        }
    };
    cfg.config_file = args.config.clone();
    if let Some(l) = args.listen {
        cfg.listen = l;
    }
    if let Some(m) = args.metrics_listen {
        cfg.metrics_listen = Some(m);
    }
    if let Some(m) = args.max_connections {
        cfg.max_connections = m;
    }
    if let Some(n) = args.replica_name {
        cfg.replication.name = Some(n);
    }
    if let Some(e) = args.endpoint_listen {
        cfg.replication.endpoint_listen = Some(e);
    }
    if let Some(e) = args.ha {
        cfg.ha.etcd = Some(e);
    }
    if let Some(c) = args.ha_cluster {
        cfg.ha.cluster = Some(c);
    }
    if let Some(t) = args.ha_ttl {
        cfg.ha.ttl_s = Some(t);
    }
    for (flag, field) in [
        (args.ha_ca, &mut cfg.ha.tls_ca),
        (args.ha_cert, &mut cfg.ha.tls_cert),
        (args.ha_key, &mut cfg.ha.tls_key),
        (args.ha_password_file, &mut cfg.ha.password_file),
    ] {
        if flag.is_some() {
            *field = flag;
        }
    }
    if let Some(u) = args.ha_user {
        cfg.ha.user = Some(u);
    }
    if let Some(mb) = args.cache_size_mb {
        cfg.storage.cache_size_mb = Some(mb);
    }
    if let Err(e) = cfg.validate() {
        eprintln!("walden serve: {e}");
        return ExitCode::from(2);
    }
    let server = match Server::start(cfg) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("walden serve: {e}");
            return ExitCode::FAILURE;
        }
    };
    // The bound addresses on stdout, for scripts that listen on port 0.
    let mut out = std::io::stdout();
    let _ = writeln!(out, "listening on {}", server.local_addr());
    if let Some(m) = server.metrics_addr() {
        let _ = writeln!(out, "metrics on http://{m}/metrics");
    }
    let _ = out.flush();
    match server.run(true) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("walden serve: {e}");
            ExitCode::FAILURE
        }
    }
}
