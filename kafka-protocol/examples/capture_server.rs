//! A tiny in-memory fake broker that records every request frame it receives.
//!
//! Usage: `capture_server <port> <outdir>`
//!
//! It listens on 127.0.0.1:<port>, one thread per connection, and writes each request frame
//! (without its 4-byte size prefix) to `<outdir>/<NNNN>-<ApiName>-v<version>.bin`. It answers
//! just well enough for real clients to go on: one broker (node 0), every topic has one
//! partition, produced record sets are kept in memory and served back by Fetch, and consumer
//! groups have a single member. It is a tool for capturing golden test frames
//! (tests/data/capture.sh), not a broker. Bad input only closes the connection it came on.

use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasher;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::frame;
use kafka_protocol::messages::{
    self as m, api_versions_response as avr, create_topics_response as ctr,
    delete_topics_response as dtr, describe_configs_response as dcr, fetch_response as fr,
    find_coordinator_response as fcr, join_group_response as jgr, leave_group_response as lgr,
    list_offsets_response as lor, metadata_response as mr, offset_commit_response as ocr,
    offset_fetch_response as ofr, produce_response as pr,
};
use kafka_protocol::{ApiKey, KStr, Request, RequestBody, ResponseBody, ResponseHeader, Uuid};

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

const MAX_FRAME: usize = 64 << 20;
const HOST: &str = "127.0.0.1";
const OFFSET_OUT_OF_RANGE: i16 = 1;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const UNSUPPORTED_VERSION: i16 = 35;
const MEMBER_ID_REQUIRED: i16 = 79;
const UNKNOWN_TOPIC_ID: i16 = 100;

/// One stored batch (or legacy message set entry): first offset, record count, bytes.
struct Batch {
    base: i64,
    count: i64,
    bytes: Bytes,
}

struct Topic {
    id: Uuid,
    log: Vec<Batch>,
    next: i64,
}

#[derive(Default)]
struct Group {
    assignments: HashMap<String, Bytes>,
    offsets: BTreeMap<(String, i32), i64>,
}

#[derive(Default)]
struct State {
    topics: BTreeMap<String, Topic>,
    groups: HashMap<String, Group>,
    next_member: u64,
}

impl State {
    /// The topic, created on first mention (every topic exists).
    fn topic(&mut self, name: &str) -> &mut Topic {
        self.topics.entry(name.to_owned()).or_insert_with(|| Topic {
            id: random_uuid(name),
            log: Vec::new(),
            next: 0,
        })
    }

    fn name_of(&self, id: &Uuid) -> Option<String> {
        let mut it = self.topics.iter();
        it.find(|(_, t)| t.id == *id).map(|(n, _)| n.clone())
    }

    fn group(&mut self, id: &KStr) -> &mut Group {
        self.groups.entry(id.to_string()).or_default()
    }
}

struct Server {
    port: i32,
    outdir: PathBuf,
    seq: AtomicU32,
    state: Mutex<State>,
}

impl Server {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn random_uuid(seed: &str) -> Uuid {
    let h = RandomState::new();
    let mut id = [0u8; 16];
    id[..8].copy_from_slice(&h.hash_one(seed).to_be_bytes());
    id[8..].copy_from_slice(&h.hash_one((seed, 1u8)).to_be_bytes());
    id[15] |= 1; // never the all-zero "no id"
    Uuid(id)
}

fn s(v: &str) -> KStr {
    KStr::from(v.to_owned())
}

/// `v.iter().map(f).collect()`, which reads better in the response builders below.
fn each<'a, T, U>(v: &'a [T], f: impl FnMut(&'a T) -> U) -> Vec<U> {
    v.iter().map(f).collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(port), Some(outdir)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: capture_server <port> <outdir>");
        std::process::exit(2);
    };
    let Ok(port) = port.parse::<u16>() else {
        eprintln!("bad port {port}");
        std::process::exit(2);
    };
    if let Err(e) = run(port, Path::new(outdir)) {
        eprintln!("capture_server: {e}");
        std::process::exit(1);
    }
}

fn run(port: u16, outdir: &Path) -> Res<()> {
    std::fs::create_dir_all(outdir)?;
    let listener = TcpListener::bind((HOST, port))?;
    println!("listening on {HOST}:{port}, saving to {}", outdir.display());
    let server = Arc::new(Server {
        port: i32::from(port),
        outdir: outdir.to_owned(),
        seq: AtomicU32::new(0),
        state: Mutex::new(State::default()),
    });
    for conn in listener.incoming() {
        let Ok(conn) = conn else { continue };
        let server = Arc::clone(&server);
        std::thread::spawn(move || {
            let peer = conn.peer_addr().map(|a| a.to_string()).unwrap_or_default();
            match serve(&server, conn) {
                Ok(()) => println!("{peer}: closed"),
                Err(e) => println!("{peer}: closing: {e}"),
            }
        });
    }
    Ok(())
}

/// Reads one size-prefixed frame; `None` at a clean end of stream.
fn read_frame(conn: &mut TcpStream) -> Res<Option<Bytes>> {
    let mut size = [0u8; 4];
    match conn.read_exact(&mut size) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    let size = i32::from_be_bytes(size);
    let size = usize::try_from(size).map_err(|_| format!("negative frame size {size}"))?;
    if size > MAX_FRAME {
        return Err(format!("frame of {size} bytes is too large").into());
    }
    let mut buf = vec![0u8; size];
    conn.read_exact(&mut buf)?;
    Ok(Some(Bytes::from(buf)))
}

fn serve(server: &Server, mut conn: TcpStream) -> Res<()> {
    conn.set_nodelay(true)?;
    while let Some(frame) = read_frame(&mut conn)? {
        let prefix = frame::peek_request(&frame)?;
        let (api, version) = (prefix.api_key, prefix.api_version);
        let key = ApiKey::from_i16(api);
        let name = key.map_or_else(|| format!("Unknown{api}"), |k| k.name().to_owned());
        let n = server.seq.fetch_add(1, Ordering::SeqCst);
        std::fs::write(
            server.outdir.join(format!("{n:04}-{name}-v{version}.bin")),
            &frame,
        )?;
        println!("{name} v{version} size {}", frame.len());
        let (body, version) = if key == Some(ApiKey::ApiVersions)
            && !ApiKey::ApiVersions.versions().contains(version)
        {
            // Newer than we know: a v0 error reply, without parsing the body (KIP-511).
            let body = avr::ApiVersionsResponse {
                error_code: UNSUPPORTED_VERSION,
                api_keys: vec![api_version_entry(ApiKey::ApiVersions)],
                ..Default::default()
            };
            (Some(ResponseBody::ApiVersions(body)), 0)
        } else {
            let req = frame::decode_request(&frame)?;
            (handle(server, &req)?, version)
        };
        let Some(body) = body else {
            println!("  (no response)");
            continue;
        };
        let header = ResponseHeader {
            correlation_id: prefix.correlation_id,
            ..Default::default()
        };
        let out = frame::encode_response(&header, &body, version)?.into_bytes();
        conn.write_all(&i32::try_from(out.len())?.to_be_bytes())?;
        conn.write_all(&out)?;
    }
    Ok(())
}

fn api_version_entry(key: ApiKey) -> avr::ApiVersion {
    avr::ApiVersion {
        api_key: key as i16,
        min_version: 0,
        max_version: key.versions().max,
        ..Default::default()
    }
}

fn handle(server: &Server, req: &Request) -> Res<Option<ResponseBody>> {
    let v = req.version();
    let body = match &req.body {
        RequestBody::ApiVersions(_) => {
            // Every key, minimum 0; an unstable latest version is not advertised.
            let api_keys = ApiKey::ALL.iter().filter_map(|&k| {
                let mut e = api_version_entry(k);
                e.max_version -= i16::from(k.latest_version_unstable());
                (e.max_version >= 0).then_some(e)
            });
            ResponseBody::ApiVersions(avr::ApiVersionsResponse {
                api_keys: api_keys.collect(),
                ..Default::default()
            })
        }
        RequestBody::Metadata(r) => ResponseBody::Metadata(metadata(server, r, v)),
        RequestBody::Produce(r) => {
            let resp = produce(server, r);
            if r.acks == 0 {
                return Ok(None);
            }
            ResponseBody::Produce(resp)
        }
        RequestBody::ListOffsets(r) => ResponseBody::ListOffsets(list_offsets(server, r, v)),
        RequestBody::Fetch(r) => ResponseBody::Fetch(fetch(server, r, v)),
        RequestBody::FindCoordinator(r) => {
            let mut resp = fcr::FindCoordinatorResponse::default();
            if v < 4 {
                (resp.node_id, resp.host, resp.port) = (0, s(HOST), server.port);
            } else {
                resp.coordinators = each(&r.coordinator_keys, |k| fcr::Coordinator {
                    key: k.clone(),
                    node_id: 0,
                    host: s(HOST),
                    port: server.port,
                    ..Default::default()
                });
            }
            ResponseBody::FindCoordinator(resp)
        }
        RequestBody::JoinGroup(r) => ResponseBody::from(join_group(server, r, v)),
        RequestBody::SyncGroup(r) => {
            let mut st = server.state();
            let group = st.group(&r.group_id);
            for a in &r.assignments {
                let assignment = a.assignment.clone();
                group
                    .assignments
                    .insert(a.member_id.to_string(), assignment);
            }
            let assignment = group.assignments.get(r.member_id.as_str());
            ResponseBody::SyncGroup(m::SyncGroupResponse {
                protocol_type: r.protocol_type.clone(),
                protocol_name: r.protocol_name.clone(),
                assignment: assignment.cloned().unwrap_or_default(),
                ..Default::default()
            })
        }
        RequestBody::Heartbeat(_) => ResponseBody::Heartbeat(Default::default()),
        RequestBody::OffsetCommit(r) => {
            let mut st = server.state();
            let group = st.group(&r.group_id);
            let topics = each(&r.topics, |t| ocr::OffsetCommitResponseTopic {
                name: t.name.clone(),
                partitions: each(&t.partitions, |p| {
                    let tp = (t.name.to_string(), p.partition_index);
                    group.offsets.insert(tp, p.committed_offset);
                    ocr::OffsetCommitResponsePartition {
                        partition_index: p.partition_index,
                        ..Default::default()
                    }
                }),
                ..Default::default()
            });
            ResponseBody::OffsetCommit(ocr::OffsetCommitResponse {
                topics,
                ..Default::default()
            })
        }
        RequestBody::OffsetFetch(r) => ResponseBody::OffsetFetch(offset_fetch(server, r, v)),
        RequestBody::LeaveGroup(r) => {
            let mut resp = lgr::LeaveGroupResponse::default();
            if v >= 3 {
                resp.members = each(&r.members, |m| lgr::MemberResponse {
                    member_id: m.member_id.clone(),
                    group_instance_id: m.group_instance_id.clone(),
                    ..Default::default()
                });
            }
            ResponseBody::LeaveGroup(resp)
        }
        RequestBody::InitProducerId(_) => ResponseBody::InitProducerId(m::InitProducerIdResponse {
            producer_id: 1000,
            producer_epoch: 0,
            ..Default::default()
        }),
        RequestBody::DescribeConfigs(r) => {
            let results = each(&r.resources, |res| dcr::DescribeConfigsResult {
                resource_type: res.resource_type,
                resource_name: res.resource_name.clone(),
                configs: vec![dcr::DescribeConfigsResourceResult {
                    name: s("cleanup.policy"),
                    value: Some(s("delete")),
                    is_default: v == 0,
                    config_source: if v >= 1 { 5 } else { -1 }, // DEFAULT_CONFIG
                    ..Default::default()
                }],
                ..Default::default()
            });
            ResponseBody::DescribeConfigs(dcr::DescribeConfigsResponse {
                results,
                ..Default::default()
            })
        }
        RequestBody::CreateTopics(r) => {
            let mut st = server.state();
            let topics = each(&r.topics, |t| ctr::CreatableTopicResult {
                name: t.name.clone(),
                topic_id: st.topic(&t.name).id,
                num_partitions: if v >= 5 { 1 } else { -1 },
                replication_factor: if v >= 5 { 1 } else { -1 },
                configs: (v >= 5).then(Vec::new),
                ..Default::default()
            });
            ResponseBody::CreateTopics(ctr::CreateTopicsResponse {
                topics,
                ..Default::default()
            })
        }
        RequestBody::DeleteTopics(r) => {
            let mut st = server.state();
            let mut delete = |name: Option<KStr>, topic_id: Uuid| {
                let name = name.or_else(|| st.name_of(&topic_id).map(|n| s(&n)));
                if let Some(n) = &name {
                    st.topics.remove(n.as_str());
                }
                dtr::DeletableTopicResult {
                    name,
                    topic_id,
                    ..Default::default()
                }
            };
            let responses = if v >= 6 {
                each(&r.topics, |t| delete(t.name.clone(), t.topic_id))
            } else {
                each(&r.topic_names, |n| delete(Some(n.clone()), Uuid::ZERO))
            };
            ResponseBody::DeleteTopics(dtr::DeleteTopicsResponse {
                responses,
                ..Default::default()
            })
        }
        RequestBody::GetTelemetrySubscriptions(_) => {
            // No metrics requested, so the client has nothing to push.
            let resp = m::GetTelemetrySubscriptionsResponse {
                client_instance_id: random_uuid("client"),
                push_interval_ms: 300_000,
                telemetry_max_bytes: 1 << 20,
                ..Default::default()
            };
            ResponseBody::GetTelemetrySubscriptions(resp)
        }
        other => return Err(format!("no handler for {}", other.message_name()).into()),
    };
    Ok(Some(body))
}

fn metadata(server: &Server, r: &m::MetadataRequest, v: i16) -> mr::MetadataResponse {
    let mut st = server.state();
    // All topics: a null list (v1+), or an empty one in v0.
    let wanted: Vec<(Option<String>, Uuid)> = match &r.topics {
        Some(ts) if !(v == 0 && ts.is_empty()) => {
            each(ts, |t| (t.name.as_ref().map(|n| n.to_string()), t.topic_id))
        }
        _ => st
            .topics
            .keys()
            .map(|n| (Some(n.clone()), Uuid::ZERO))
            .collect(),
    };
    let topics = each(&wanted, |(name, id)| {
        let Some(name) = name.clone().or_else(|| st.name_of(id)) else {
            return mr::MetadataResponseTopic {
                error_code: UNKNOWN_TOPIC_ID,
                topic_id: *id,
                ..Default::default()
            };
        };
        mr::MetadataResponseTopic {
            topic_id: st.topic(&name).id,
            name: Some(s(&name)),
            partitions: vec![mr::MetadataResponsePartition {
                partition_index: 0,
                leader_id: 0,
                leader_epoch: -1,
                replica_nodes: vec![0],
                isr_nodes: vec![0],
                ..Default::default()
            }],
            topic_authorized_operations: if v >= 8 { 0 } else { i32::MIN },
            ..Default::default()
        }
    });
    mr::MetadataResponse {
        brokers: vec![mr::MetadataResponseBroker {
            node_id: 0,
            host: s(HOST),
            port: server.port,
            ..Default::default()
        }],
        cluster_id: Some(s("capture-cluster")),
        controller_id: 0,
        topics,
        cluster_authorized_operations: if (8..=10).contains(&v) { 0 } else { i32::MIN },
        ..Default::default()
    }
}

/// Splits a record set into v2 batches (record count at byte 57) or legacy entries (counted
/// as one record each), by their size fields; a torn tail is dropped.
fn split_batches(records: &Bytes) -> Vec<(Bytes, i64)> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    while let Some(len) = records.get(pos + 8..pos + 12) {
        let len = i32::from_be_bytes([len[0], len[1], len[2], len[3]]);
        let Some(end) = usize::try_from(len).ok().map(|l| pos + 12 + l) else {
            break;
        };
        let Some(b) = (end <= records.len()).then(|| records.slice(pos..end)) else {
            break;
        };
        let count = match b.get(57..61) {
            Some(c) if b[16] == 2 => i64::from(i32::from_be_bytes([c[0], c[1], c[2], c[3]])),
            _ => 1,
        };
        out.push((b, count.max(1)));
        pos = end;
    }
    out
}

fn produce(server: &Server, r: &m::ProduceRequest) -> pr::ProduceResponse {
    let mut st = server.state();
    let responses = each(&r.topic_data, |t| pr::TopicProduceResponse {
        name: t.name.clone(),
        partition_responses: each(&t.partition_data, |pd| {
            let topic = st.topic(&t.name);
            let base_offset = topic.next;
            for (b, count) in pd.records.as_ref().map(split_batches).unwrap_or_default() {
                // Like a broker, stamp the assigned base offset (the CRC does not cover it).
                let mut bytes = b.to_vec();
                bytes[..8].copy_from_slice(&topic.next.to_be_bytes());
                let (base, bytes) = (topic.next, Bytes::from(bytes));
                topic.log.push(Batch { base, count, bytes });
                topic.next += count;
            }
            println!("  {}-{}: next offset {}", t.name, pd.index, topic.next);
            pr::PartitionProduceResponse {
                index: pd.index,
                base_offset,
                log_append_time_ms: -1,
                ..Default::default()
            }
        }),
        ..Default::default()
    });
    pr::ProduceResponse {
        responses,
        ..Default::default()
    }
}

fn list_offsets(server: &Server, r: &m::ListOffsetsRequest, v: i16) -> lor::ListOffsetsResponse {
    let mut st = server.state();
    let topics = each(&r.topics, |t| {
        let next = st.topic(&t.name).next;
        lor::ListOffsetsTopicResponse {
            name: t.name.clone(),
            partitions: each(&t.partitions, |p| {
                // Latest (-1) is the next offset; earliest (-2) and any timestamp give 0.
                let offset = if p.timestamp == -1 { next } else { 0 };
                let mut resp = lor::ListOffsetsPartitionResponse {
                    partition_index: p.partition_index,
                    ..Default::default()
                };
                if p.partition_index != 0 {
                    resp.error_code = UNKNOWN_TOPIC_OR_PARTITION;
                } else if v == 0 {
                    resp.old_style_offsets = vec![offset];
                } else {
                    resp.offset = offset;
                }
                resp
            }),
            ..Default::default()
        }
    });
    lor::ListOffsetsResponse {
        topics,
        ..Default::default()
    }
}

fn fetch(server: &Server, r: &m::FetchRequest, v: i16) -> fr::FetchResponse {
    let mut any_data = false;
    let mut st = server.state();
    let responses = each(&r.topics, |t| {
        // v13+ names topics by id only.
        let name = if v >= 13 {
            st.name_of(&t.topic_id)
        } else {
            Some(t.topic.to_string())
        };
        let partitions = each(&t.partitions, |p| {
            let mut d = fr::PartitionData {
                partition_index: p.partition,
                aborted_transactions: (v >= 4).then(Vec::new),
                records: Some(Bytes::new()),
                ..Default::default()
            };
            let Some(topic) = name.as_deref().map(|n| st.topic(n)) else {
                d.error_code = UNKNOWN_TOPIC_ID;
                return d;
            };
            (d.high_watermark, d.last_stable_offset) = (topic.next, topic.next);
            d.log_start_offset = 0;
            if p.partition != 0 {
                d.error_code = UNKNOWN_TOPIC_OR_PARTITION;
            } else if p.fetch_offset > topic.next || p.fetch_offset < 0 {
                d.error_code = OFFSET_OUT_OF_RANGE;
            } else {
                let mut out = Vec::new();
                for b in topic
                    .log
                    .iter()
                    .filter(|b| b.base + b.count > p.fetch_offset)
                {
                    out.extend_from_slice(&b.bytes);
                }
                any_data |= !out.is_empty();
                d.records = Some(Bytes::from(out));
            }
            d
        });
        fr::FetchableTopicResponse {
            topic: if v < 13 {
                t.topic.clone()
            } else {
                KStr::default()
            },
            topic_id: if v >= 13 { t.topic_id } else { Uuid::ZERO },
            partitions,
            ..Default::default()
        }
    });
    drop(st);
    if !any_data {
        // A short long-poll, so that an idle consumer does not spin.
        let wait = u64::try_from(r.max_wait_ms.clamp(0, 500)).unwrap_or(0);
        std::thread::sleep(Duration::from_millis(wait));
    }
    fr::FetchResponse {
        responses,
        ..Default::default()
    }
}

fn join_group(server: &Server, r: &m::JoinGroupRequest, v: i16) -> m::JoinGroupResponse {
    let mut st = server.state();
    let member_id = if r.member_id.is_empty() {
        st.next_member += 1;
        s(&format!("member-{}", st.next_member))
    } else {
        r.member_id.clone()
    };
    let mut resp = m::JoinGroupResponse {
        member_id: member_id.clone(),
        ..Default::default()
    };
    if r.member_id.is_empty() && v >= 4 {
        // KIP-394: the client must join again with the id it is given here.
        resp.error_code = MEMBER_ID_REQUIRED;
        return resp;
    }
    // The only member, so the leader, with the first protocol it offers.
    let first = r.protocols.first();
    resp.generation_id = 1;
    resp.protocol_name = Some(first.map(|p| p.name.clone()).unwrap_or_default());
    if v >= 7 {
        resp.protocol_type = Some(r.protocol_type.clone());
    }
    resp.leader = member_id.clone();
    resp.members = vec![jgr::JoinGroupResponseMember {
        member_id,
        group_instance_id: r.group_instance_id.clone(),
        metadata: first.map(|p| p.metadata.clone()).unwrap_or_default(),
        ..Default::default()
    }];
    resp
}

fn offset_fetch(server: &Server, r: &m::OffsetFetchRequest, v: i16) -> ofr::OffsetFetchResponse {
    let st = server.state();
    // The committed offset (or -1) of each wanted partition; every committed one for null.
    let committed = |group: &KStr, wanted: Option<Vec<(&KStr, &Vec<i32>)>>| {
        let g = st.groups.get(group.as_str());
        let offset = |t: &str, p: i32| {
            let o = g.and_then(|g| g.offsets.get(&(t.to_owned(), p)));
            (p, o.copied().unwrap_or(-1))
        };
        let Some(wanted) = wanted else {
            let all = g.into_iter().flat_map(|g| g.offsets.iter());
            return all.map(|((t, p), o)| (s(t), vec![(*p, *o)])).collect();
        };
        each(&wanted, |(t, ps)| {
            ((*t).clone(), each(ps, |p| offset(t, *p)))
        })
    };
    let mut resp = ofr::OffsetFetchResponse::default();
    if v < 8 {
        let wanted = r
            .topics
            .as_ref()
            .map(|ts| each(ts, |t| (&t.name, &t.partition_indexes)));
        let topics: Vec<(KStr, Vec<(i32, i64)>)> = committed(&r.group_id, wanted);
        resp.topics = each(&topics, |(name, ps)| ofr::OffsetFetchResponseTopic {
            name: name.clone(),
            partitions: each(ps, |&(partition_index, committed_offset)| {
                ofr::OffsetFetchResponsePartition {
                    partition_index,
                    committed_offset,
                    metadata: Some(KStr::default()),
                    ..Default::default()
                }
            }),
            ..Default::default()
        });
        return resp;
    }
    resp.groups = each(&r.groups, |g| {
        let wanted = g
            .topics
            .as_ref()
            .map(|ts| each(ts, |t| (&t.name, &t.partition_indexes)));
        let topics: Vec<(KStr, Vec<(i32, i64)>)> = committed(&g.group_id, wanted);
        ofr::OffsetFetchResponseGroup {
            group_id: g.group_id.clone(),
            topics: each(&topics, |(name, ps)| ofr::OffsetFetchResponseTopics {
                name: name.clone(),
                partitions: each(ps, |&(partition_index, committed_offset)| {
                    ofr::OffsetFetchResponsePartitions {
                        partition_index,
                        committed_offset,
                        metadata: Some(KStr::default()),
                        ..Default::default()
                    }
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    });
    resp
}
