#![allow(clippy::unwrap_used)]
//! Golden request frames captured from real clients (kcat/librdkafka, kafka-python,
//! confluent-kafka, Apache Kafka's Java client; see tests/data/golden/PROVENANCE.md): every
//! file must decode, name the api and version its file name says, and re-encode to exactly the
//! same bytes. Apache Kafka's own answers to the Java client's requests (`responses/java/`,
//! named as the request they answer) must do the same.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use kafka_protocol::{ApiKey, Bytes, RequestBody, frame};

/// How many golden files are committed; the test fails if fewer are found.
const EXPECTED_FILES: usize = 115;

/// How many golden responses (Apache Kafka's, under `responses/`) are committed.
const EXPECTED_RESPONSES: usize = 46;

const CLIENTS: [&str; 4] = ["kcat", "kafka-python", "confluent-kafka", "java"];

/// One golden file and what its path says about it.
struct Golden {
    path: PathBuf,
    client: String,
    api: String,
    version: i16,
    variant: Option<String>,
}

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/golden")
}

/// The `.bin` files under `dir`, the answers under `responses/` left out.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "responses") {
                continue;
            }
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "bin") {
            out.push(path);
        }
    }
}

/// `<client>/<ApiName>-v<version>[-<variant>].bin`
fn parse_name(path: &Path) -> Result<Golden, String> {
    let client = path
        .parent()
        .and_then(Path::file_name)
        .and_then(|n| n.to_str())
        .ok_or("no client folder")?
        .to_owned();
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .ok_or("bad file name")?;
    let (api, rest) = stem.split_once("-v").ok_or("no -v<version> in the name")?;
    let (version, variant) = match rest.split_once('-') {
        Some((v, var)) => (v, Some(var.to_owned())),
        None => (rest, None),
    };
    let version = version.parse().map_err(|_| "bad version in the name")?;
    Ok(Golden {
        path: path.to_owned(),
        client,
        api: api.to_owned(),
        version,
        variant,
    })
}

fn load() -> Vec<Golden> {
    load_from(&golden_dir())
}

fn load_from(dir: &Path) -> Vec<Golden> {
    let mut paths = Vec::new();
    walk(dir, &mut paths);
    paths.sort();
    paths
        .iter()
        .map(|p| parse_name(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .collect()
}

/// Decodes, checks the name, re-encodes; `Err` says why the file does not round-trip.
fn round_trip(g: &Golden) -> Result<(), String> {
    let bytes = Bytes::from(std::fs::read(&g.path).map_err(|e| e.to_string())?);
    let req = frame::decode_request(&bytes).map_err(|e| format!("decode: {e}"))?;
    if req.api_key().name() != g.api || req.version() != g.version {
        return Err(format!(
            "decoded as {} v{}",
            req.api_key().name(),
            req.version()
        ));
    }
    let mut out = frame::encode_request(&req.header, &req.body)
        .map_err(|e| format!("encode: {e}"))?
        .into_bytes()
        .to_vec();
    out.extend_from_slice(&req.trailing);
    same_bytes(&out, &bytes)?;
    Ok(())
}

#[test]
fn golden_frames_round_trip_byte_for_byte() {
    let files = load();
    assert!(
        files.len() >= EXPECTED_FILES,
        "found {} golden files under {}, expected at least {EXPECTED_FILES}",
        files.len(),
        golden_dir().display()
    );
    let failures: Vec<String> = files
        .iter()
        .filter_map(|g| {
            round_trip(g)
                .err()
                .map(|e| format!("  {}: {e}", g.path.display()))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} golden frames do not round-trip:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

#[test]
fn golden_frames_cover_the_client_apis() {
    let files = load();
    let have: BTreeSet<(String, String, i16)> = files
        .iter()
        .map(|g| (g.client.clone(), g.api.clone(), g.version))
        .collect();
    let has = |client: Option<&str>, api: ApiKey, flexible: bool| {
        have.iter().any(|(c, a, v)| {
            client.is_none_or(|want| c == want)
                && a == api.name()
                && (!flexible || api.request_flexible_min().is_some_and(|min| *v >= min))
        })
    };
    for client in CLIENTS {
        for api in [
            ApiKey::ApiVersions,
            ApiKey::Metadata,
            ApiKey::Produce,
            ApiKey::Fetch,
            ApiKey::ListOffsets,
            ApiKey::FindCoordinator,
            ApiKey::JoinGroup,
            ApiKey::SyncGroup,
            ApiKey::Heartbeat,
            ApiKey::OffsetCommit,
            ApiKey::OffsetFetch,
            ApiKey::LeaveGroup,
            ApiKey::InitProducerId,
        ] {
            assert!(
                has(Some(client), api, false),
                "no {} frame from {client}",
                api.name()
            );
        }
    }
    for client in ["kafka-python", "confluent-kafka", "java"] {
        for api in [
            ApiKey::CreateTopics,
            ApiKey::DescribeConfigs,
            ApiKey::DeleteTopics,
        ] {
            assert!(
                has(Some(client), api, false),
                "no {} frame from {client}",
                api.name()
            );
        }
    }
    // Flexible versions (compact encodings, tagged fields) from real clients.
    for api in [
        ApiKey::Metadata,
        ApiKey::Fetch,
        ApiKey::Produce,
        ApiKey::OffsetCommit,
        ApiKey::OffsetFetch,
        ApiKey::JoinGroup,
        ApiKey::CreateTopics,
    ] {
        assert!(has(None, api, true), "no flexible {} frame", api.name());
    }
    // Produce with every compression codec from every client.
    for client in CLIENTS {
        for codec in ["none", "gzip", "snappy", "lz4", "zstd"] {
            assert!(
                files.iter().any(|g| g.client == client
                    && g.api == "Produce"
                    && g.variant.as_deref() == Some(codec)),
                "no {codec} Produce frame from {client}"
            );
        }
    }
}

/// Apache Kafka 4.4's answers to the Java client: the AdminClient's calls and the
/// transactional producer's, on top of the ones every client makes.
#[test]
fn golden_java_frames_cover_the_admin_and_transaction_apis() {
    let have: BTreeSet<String> = load()
        .into_iter()
        .filter(|g| g.client == "java")
        .map(|g| g.api)
        .collect();
    for api in [
        ApiKey::CreatePartitions,
        ApiKey::IncrementalAlterConfigs,
        ApiKey::DescribeCluster,
        ApiKey::DescribeLogDirs,
        ApiKey::DescribeQuorum,
        ApiKey::DeleteRecords,
        ApiKey::ListGroups,
        ApiKey::DescribeGroups,
        ApiKey::DeleteGroups,
        ApiKey::OffsetDelete,
        ApiKey::DescribeProducers,
        ApiKey::ListTransactions,
        ApiKey::DescribeTransactions,
        ApiKey::AddPartitionsToTxn,
        ApiKey::AddOffsetsToTxn,
        ApiKey::TxnOffsetCommit,
        ApiKey::EndTxn,
    ] {
        assert!(
            have.contains(api.name()),
            "no {} frame from java",
            api.name()
        );
    }
}

/// Decodes a response file as the answer to the request its name says, re-encodes it.
fn response_round_trip(g: &Golden) -> Result<(), String> {
    let bytes = Bytes::from(std::fs::read(&g.path).map_err(|e| e.to_string())?);
    let key = ApiKey::ALL
        .iter()
        .copied()
        .find(|k| k.name() == g.api)
        .ok_or_else(|| format!("no api named {}", g.api))?;
    let resp =
        frame::decode_response(&bytes, key, g.version).map_err(|e| format!("decode: {e}"))?;
    let mut out = frame::encode_response(&resp.header, &resp.body, g.version)
        .map_err(|e| format!("encode: {e}"))?
        .into_bytes()
        .to_vec();
    out.extend_from_slice(&resp.trailing);
    same_bytes(&out, &bytes)?;
    if !resp.trailing.is_empty() {
        return Err(format!("{} bytes after the body", resp.trailing.len()));
    }
    Ok(())
}

#[test]
fn golden_responses_round_trip_byte_for_byte() {
    let dir = golden_dir().join("responses");
    let files = load_from(&dir);
    assert!(
        files.len() >= EXPECTED_RESPONSES,
        "found {} golden responses under {}, expected at least {EXPECTED_RESPONSES}",
        files.len(),
        dir.display()
    );
    let failures: Vec<String> = files
        .iter()
        .filter_map(|g| {
            response_round_trip(g)
                .err()
                .map(|e| format!("  {}: {e}", g.path.display()))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} golden responses do not round-trip:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

/// The Produce files' variant names say what their record batches hold: check the first
/// batch's magic, compression codec and (for idempotent producers) producer id.
#[test]
fn golden_produce_batches_match_their_variant() {
    for g in load().iter().filter(|g| g.api == "Produce") {
        let Some(variant) = g.variant.as_deref() else {
            continue;
        };
        let (idempotent, codec) = match variant.strip_prefix("idempotent-") {
            Some(c) => (true, c),
            None => (false, variant),
        };
        let want = ["none", "gzip", "snappy", "lz4", "zstd"]
            .iter()
            .position(|c| *c == codec)
            .unwrap_or_else(|| panic!("{}: unknown variant {variant}", g.path.display()));
        let bytes = Bytes::from(std::fs::read(&g.path).unwrap());
        let req = frame::decode_request(&bytes).unwrap();
        let RequestBody::Produce(p) = req.body else {
            panic!("{}: not a Produce request", g.path.display());
        };
        let records = p.topic_data[0].partition_data[0].records.clone().unwrap();
        let name = g.path.display();
        assert!(records.len() > 61, "{name}: record set too short");
        assert_eq!(records[16], 2, "{name}: not a v2 record batch");
        let attributes = u16::from_be_bytes([records[21], records[22]]);
        assert_eq!(
            usize::from(attributes & 7),
            want,
            "{name}: compression codec"
        );
        let producer_id = i64::from_be_bytes(records[43..51].try_into().unwrap());
        if idempotent {
            assert!(producer_id >= 0, "{name}: no producer id");
        } else {
            assert_eq!(
                producer_id, -1,
                "{name}: producer id in a non-idempotent batch"
            );
        }
    }
}

/// librdkafka 2.x writes a flexible "all topics" Metadata request with its 4-byte array-count
/// placeholder left in place (`rd_kafka_MetadataRequest0` never finalizes it in that case): a
/// Kafka broker reads the first byte as the null compact array, the next three as the body's
/// remaining fields, and ignores the real fields that follow. The codec must read it the same
/// way and keep those three bytes as `trailing`.
#[test]
fn librdkafka_all_topics_metadata_has_trailing_bytes() {
    let path = golden_dir().join("confluent-kafka/Metadata-v12-all-topics.bin");
    let bytes = Bytes::from(std::fs::read(&path).unwrap());
    let req = frame::decode_request(&bytes).unwrap();
    let RequestBody::Metadata(m) = &req.body else {
        panic!("not a Metadata request");
    };
    assert_eq!(m.topics, None, "all topics");
    assert!(!m.allow_auto_topic_creation);
    // AllowAutoTopicCreation = true, IncludeTopicAuthorizedOperations = false, no tags.
    assert_eq!(&req.trailing[..], &[1, 0, 0]);
}

/// `Ok` when the re-encoded bytes are the file's, else where they first differ.
fn same_bytes(out: &[u8], file: &[u8]) -> Result<(), String> {
    if out == file {
        return Ok(());
    }
    let at = out
        .iter()
        .zip(file)
        .position(|(a, b)| a != b)
        .unwrap_or_else(|| out.len().min(file.len()));
    Err(format!(
        "re-encoded {} bytes differ from the {} in the file, first at byte {at}",
        out.len(),
        file.len()
    ))
}
