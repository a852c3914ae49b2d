//! Connects to a Kafka (or Kafka-compatible) broker, negotiates api versions and prints them,
//! then prints the cluster metadata: brokers, topics, partitions and leaders.
//!
//! ```text
//! cargo run -p kafka-net --example api_versions -- HOST:PORT [--client-id ID]
//! ```

use std::process::ExitCode;
use std::time::{Duration, Instant};

use kafka_net::metadata::MetadataSnapshot;
use kafka_net::{ApiVersions, Connection, ConnectionConfig, NetError};
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::{ApiKey, MetadataRequest, RequestBody, ResponseBody};

fn usage() -> ExitCode {
    eprintln!("usage: api_versions HOST:PORT [--client-id ID]");
    ExitCode::from(2)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(addr) = args.first().filter(|a| !a.starts_with('-')) else {
        return usage();
    };
    let mut cfg = ConnectionConfig::default();
    match args.get(1..).unwrap_or_default() {
        [] => {}
        [flag, id] if flag == "--client-id" => cfg.conn.client_id = Some(KStr::from(id.clone())),
        _ => return usage(),
    }
    cfg.connect_timeout = Duration::from_secs(5);
    cfg.conn.request_timeout = Duration::from_secs(10);
    match run(addr, cfg).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(addr: &str, cfg: ConnectionConfig) -> Result<(), NetError> {
    let started = Instant::now();
    let conn = Connection::connect(addr, cfg).await?;
    let versions = conn
        .versions()
        .ok_or_else(|| NetError::Config("no ApiVersions handshake".into()))?;
    println!(
        "{addr}: connected and negotiated in {:.1} ms",
        started.elapsed().as_secs_f64() * 1e3
    );
    print_versions(versions);
    let meta = fetch_metadata(&conn).await?;
    print_metadata(&meta);
    Ok(())
}

fn print_versions(versions: &ApiVersions) {
    let listed: Vec<(i16, i16, i16)> = versions.iter().collect();
    println!("\n{} apis listed by the broker", listed.len());
    println!(
        "{:>4}  {:<30} {:>8} {:>8}  use",
        "key", "api", "broker", "client"
    );
    for (key, lo, hi) in &listed {
        let api = ApiKey::from_i16(*key);
        let name = api.map_or("(unknown to this client)", ApiKey::name);
        let ours = api.map_or_else(
            || "-".to_owned(),
            |a| {
                let r = a.versions();
                format!("{}-{}", r.min, r.max)
            },
        );
        let choice = match api.map(|a| versions.version_for(a)) {
            Some(Ok(v)) => format!("v{v}"),
            Some(Err(_)) => "none in common".into(),
            None => "-".into(),
        };
        println!(
            "{key:>4}  {name:<30} {:>8} {ours:>8}  {choice}",
            format!("{lo}-{hi}")
        );
    }
    let missing: Vec<&str> = ApiKey::ALL
        .iter()
        .filter(|a| versions.broker_range(**a as i16).is_none())
        .map(|a| a.name())
        .collect();
    if !missing.is_empty() {
        println!("not listed by the broker ({}):", missing.len());
        let mut line = String::new();
        for name in missing {
            if !line.is_empty() && line.len() + name.len() > 94 {
                println!("  {}", line.trim_end_matches(' '));
                line.clear();
            }
            line.push_str(name);
            line.push_str(", ");
        }
        println!("  {}", line.trim_end_matches([',', ' ']));
    }
}

/// Metadata for every topic, at the negotiated version.
async fn fetch_metadata(conn: &Connection) -> Result<MetadataSnapshot, NetError> {
    let version = conn.version_for(ApiKey::Metadata)?;
    let req = MetadataRequest {
        // v0 has no "null means all": an empty list means all there.
        topics: if version == 0 { Some(Vec::new()) } else { None },
        ..Default::default()
    };
    let body = conn.request_at(RequestBody::Metadata(req), version).await?;
    let ResponseBody::Metadata(resp) = body else {
        return Err(NetError::BadResponse(
            "Metadata answered with another api".into(),
        ));
    };
    println!("\nMetadata v{version}");
    Ok(MetadataSnapshot::from_response(
        &resp,
        &MetadataSnapshot::default(),
        true,
        std::time::Instant::now(),
    ))
}

fn print_metadata(meta: &MetadataSnapshot) {
    println!(
        "cluster id: {}   controller: {}",
        meta.cluster_id.as_deref().unwrap_or("(none)"),
        if meta.controller_id >= 0 {
            meta.controller_id.to_string()
        } else {
            "(unknown)".into()
        }
    );
    println!("brokers ({}):", meta.brokers.len());
    for b in meta.brokers.values() {
        let rack = b.rack.as_deref().map(|r| format!("  rack {r}"));
        println!(
            "  {:>4}  {}{}",
            b.node_id,
            b.addr(),
            rack.unwrap_or_default()
        );
    }
    println!("topics ({}):", meta.topics.len());
    for t in meta.topics.values() {
        let mut line = format!("  {}  {} partitions", t.name, t.partitions.len());
        if !t.topic_id.is_zero() {
            line.push_str(&format!("  id {}", t.topic_id));
        }
        if t.is_internal {
            line.push_str("  internal");
        }
        if !t.error.is_ok() {
            line.push_str(&format!("  error {}", t.error));
        }
        println!("{line}");
        for p in &t.partitions {
            let leader = if p.leader >= 0 {
                p.leader.to_string()
            } else {
                "none".into()
            };
            let mut line = format!(
                "    p{:<3} leader {leader:<4} epoch {:<4} replicas {:?} isr {:?}",
                p.partition, p.leader_epoch, p.replicas, p.isr
            );
            if !p.offline.is_empty() {
                line.push_str(&format!(" offline {:?}", p.offline));
            }
            if p.error != ErrorCode::NONE {
                line.push_str(&format!("  error {}", p.error));
            }
            println!("{line}");
        }
    }
}
