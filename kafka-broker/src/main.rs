//! `kafka-broker`: runs a broker. With no arguments it listens on 127.0.0.1:9092 and keeps its
//! data in `./data`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use kafka_broker::BrokerConfig;
use kafka_broker::config::Applied;

/// A Kafka-compatible broker.
#[derive(Debug, Parser)]
#[command(name = "kafka-broker", version)]
struct Args {
    /// Address to listen on: the client listener's `host:port` in `listeners`.
    #[arg(long)]
    listen: Option<String>,
    /// Address clients are told to use: the client listener's in `advertised.listeners`.
    #[arg(long)]
    advertised_listener: Option<String>,
    /// Data directory (`log.dirs`).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// A Kafka `server.properties`-style file.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Overrides with Kafka's broker key names, e.g. `--set num.partitions=3`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

fn build_config(args: &Args) -> Result<BrokerConfig, String> {
    let mut cfg = BrokerConfig::default();
    let mut unknown = Vec::new();
    if let Some(path) = &args.config {
        unknown.extend(cfg.apply_file(path).map_err(|e| e.to_string())?);
    }
    for kv in &args.set {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| format!("--set {kv}: expected KEY=VALUE"))?;
        if cfg.apply(k, v).map_err(|e| e.to_string())? == Applied::Unknown {
            unknown.push(k.to_owned());
        }
    }
    // `--listen` and `--advertised-listener` set the client listener's address; the others
    // (a controller listener) stay as configured.
    if let Some(l) = &args.listen {
        cfg.network
            .set_client_listener(l)
            .map_err(|e| format!("--listen: {e}"))?;
    }
    if let Some(a) = &args.advertised_listener {
        cfg.network
            .set_client_advertised(a)
            .map_err(|e| format!("--advertised-listener: {e}"))?;
    }
    if let Some(d) = &args.data_dir {
        cfg.server.data_dir = d.clone();
    }
    for k in unknown {
        tracing::warn!(key = %k, "unknown configuration key ignored");
    }
    // Combinations (roles, quorum, listeners) are checked once everything is in.
    cfg.validate().map_err(|e| e.to_string())?;
    Ok(cfg)
}

/// Registers the SIGTERM and SIGINT handlers now and returns the future that completes on
/// either. Called before the listener is bound: a signal that comes while the broker is still
/// starting (clients may already connect to the bound port) is then a clean shutdown once it
/// has started, not the default action that kills the process.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    let signals = {
        use tokio::signal::unix::{SignalKind, signal};
        (
            signal(SignalKind::terminate()).ok(),
            signal(SignalKind::interrupt()).ok(),
        )
    };
    async move {
        #[cfg(unix)]
        match signals {
            (Some(mut term), Some(mut int)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
            }
            _ => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
        tracing::info!("shutdown signal received");
    }
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let args = Args::parse();
    let cfg = match build_config(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("kafka-broker: {e}");
            return ExitCode::from(2);
        }
    };
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("kafka-broker: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let controller_only = cfg.quorum.roles.is_some_and(|r| r.controller && !r.broker);
    let result = rt.block_on(async {
        let shutdown = shutdown_signal();
        if controller_only {
            return kafka_broker::run_controller(cfg, shutdown).await;
        }
        let listener = tokio::net::TcpListener::bind(&cfg.network.listen)
            .await
            .map_err(|e| {
                kafka_broker::BrokerError::Config(format!(
                    "cannot listen on {}: {e}",
                    cfg.network.listen
                ))
            })?;
        kafka_broker::run(listener, cfg, shutdown).await
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kafka-broker: {e}");
            ExitCode::FAILURE
        }
    }
}
