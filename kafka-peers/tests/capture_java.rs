//! Captures the golden frames of kafka-protocol's `tests/data/golden/java/`: the Java client
//! (`peers.OurClientsPeer capture`: AdminClient, producers with every codec, a transactional
//! producer, a consumer in a group) talks to Apache Kafka through a recording proxy
//! (`support/proxy.rs`). The proxy caps every version in ApiVersions answers at our codec's
//! newest, so the client picks the versions it would pick against our broker.
//!
//! One request per (api, version, variant) is kept, the largest, with Apache Kafka's answer to
//! it: requests go to `golden/java/<Api>-v<N>[-variant].bin`, answers to
//! `golden/responses/java/` under the same name. Ignored (it rewrites committed files); run
//! with
//!
//! ```sh
//! KAFKA_RS_PEERS_DIR=... cargo test -p kafka-peers --test capture_java -- --ignored --nocapture
//! ```
//!
//! `GOLDEN_OUT=<dir>` writes under another folder (its `java/` and `responses/java/`).
#![allow(clippy::unwrap_used, clippy::panic)]

#[path = "support/proxy.rs"]
mod proxy;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::Duration;

use kafka_peers::{ApacheKafka, Jvm, KafkaOptions, require};
use kafka_protocol::frame::{self, peek_request};
use kafka_protocol::{ApiKey, Bytes, RequestBody, ResponseBody};

/// The file-name variant of a request (see kafka-protocol/tests/data/golden/PROVENANCE.md).
fn variant(body: &RequestBody) -> Option<String> {
    match body {
        RequestBody::Produce(p) => {
            let records = p
                .topic_data
                .first()?
                .partition_data
                .first()?
                .records
                .clone()?;
            if records.len() < 61 {
                return None;
            }
            let codec = ["none", "gzip", "snappy", "lz4", "zstd"]
                .get(usize::from(records[22] & 7))
                .copied()?;
            let producer_id = i64::from_be_bytes(records[43..51].try_into().ok()?);
            Some(if producer_id >= 0 {
                format!("idempotent-{codec}")
            } else {
                codec.to_owned()
            })
        }
        RequestBody::Metadata(m) if m.topics.is_none() => Some("all-topics".to_owned()),
        RequestBody::JoinGroup(j) if j.member_id.is_empty() => Some("new-member".to_owned()),
        _ => None,
    }
}

#[test]
#[ignore = "rewrites the committed golden frames; run by hand (see the file's doc)"]
fn capture_java_client_frames() {
    let Some(jvm) = require(Jvm::find()) else {
        return;
    };
    let jvm = jvm.with_programs().unwrap();
    let proxy = proxy::Proxy::start(true).unwrap();
    let kafka = ApacheKafka::start(
        &jvm,
        &KafkaOptions {
            nodes: 1,
            partitions: 3,
            extra: vec![(
                "advertised.listeners".to_owned(),
                format!("PLAINTEXT://127.0.0.1:{}", proxy.port),
            )],
            ..Default::default()
        },
    )
    .unwrap();
    proxy.forward_to(kafka.addr(0).unwrap());
    let bootstrap = format!("127.0.0.1:{}", proxy.port);
    let out = jvm
        .run(
            "peers.OurClientsPeer",
            &["capture", &bootstrap],
            None,
            Duration::from_secs(240),
        )
        .unwrap();
    assert!(out.stdout.contains("CAPTURED"), "{}", out.describe());

    // name -> (request, response)
    let mut chosen: BTreeMap<String, (Bytes, Option<Bytes>)> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut kafka_max: BTreeMap<i16, i16> = BTreeMap::new();
    // (api key, version) of frames above our codec's versions (the clamp lets a few through).
    let mut beyond = std::collections::BTreeSet::new();
    for conn in proxy.connections() {
        let answers: HashMap<i32, Bytes> = conn
            .responses
            .iter()
            .filter(|r| r.len() >= 4)
            .map(|r| (i32::from_be_bytes([r[0], r[1], r[2], r[3]]), r.clone()))
            .collect();
        for req in &conn.requests {
            let Ok(prefix) = peek_request(req) else {
                failures.push(format!("unreadable header: {req:?}"));
                continue;
            };
            let known = ApiKey::from_i16(prefix.api_key)
                .is_some_and(|k| k.versions().contains(prefix.api_version));
            if !known {
                beyond.insert((prefix.api_key, prefix.api_version));
                continue;
            }
            let decoded = match frame::decode_request(req) {
                Ok(d) => d,
                Err(e) => {
                    failures.push(format!(
                        "api {} v{}: {e}",
                        prefix.api_key, prefix.api_version
                    ));
                    continue;
                }
            };
            let client = decoded
                .header
                .client_id
                .as_ref()
                .map(|c| c.to_string())
                .unwrap_or_default();
            if !client.starts_with("golden-java") {
                continue;
            }
            let answer = answers.get(&prefix.correlation_id).cloned();
            if let (RequestBody::ApiVersions(_), Some(a)) = (&decoded.body, &answer)
                && let Ok(r) = frame::decode_response(a, ApiKey::ApiVersions, decoded.version())
                && let ResponseBody::ApiVersions(v) = r.body
            {
                for k in v.api_keys {
                    kafka_max.insert(k.api_key, k.max_version);
                }
            }
            let mut name = format!("{}-v{}", decoded.api_key().name(), decoded.version());
            if let Some(v) = variant(&decoded.body) {
                name = format!("{name}-{v}");
            }
            let bigger = chosen
                .get(&name)
                .is_none_or(|(r, a)| (answer.is_some(), req.len()) > (a.is_some(), r.len()));
            if bigger {
                chosen.insert(name, (req.clone(), answer));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "frames that do not decode:\n{failures:#?}"
    );

    let root = std::env::var_os("GOLDEN_OUT").map_or_else(
        || kafka_peers::crate_dir().join("../kafka-protocol/tests/data/golden"),
        PathBuf::from,
    );
    let (req_dir, resp_dir) = (root.join("java"), root.join("responses/java"));
    for d in [&req_dir, &resp_dir] {
        let _ = std::fs::remove_dir_all(d);
        std::fs::create_dir_all(d).unwrap();
    }
    for (name, (req, answer)) in &chosen {
        std::fs::write(req_dir.join(format!("{name}.bin")), req).unwrap();
        if let Some(a) = answer {
            std::fs::write(resp_dir.join(format!("{name}.bin")), a).unwrap();
        }
        eprintln!(
            "{name}: request {} bytes, response {}",
            req.len(),
            answer
                .as_ref()
                .map_or_else(|| "none".to_owned(), |a| format!("{} bytes", a.len()))
        );
    }
    // What Apache Kafka 4.4 offers above our codec's versions, for PROVENANCE.md.
    for (key, max) in &kafka_max {
        if let Some(k) = ApiKey::from_i16(*key) {
            if k.versions().max < *max {
                eprintln!(
                    "CLAMPED {}: Apache Kafka offers v{max}, our codec stops at v{}",
                    k.name(),
                    k.versions().max
                );
            }
        } else {
            eprintln!("UNKNOWN api key {key} (Apache Kafka offers up to v{max})");
        }
    }
    for (key, version) in &beyond {
        eprintln!("BEYOND our codec: api key {key} v{version} (not kept)");
    }
    eprintln!("{} frames written under {}", chosen.len(), root.display());
}
