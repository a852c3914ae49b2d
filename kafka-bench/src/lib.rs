//! Inputs shared by the benchmarks, peak-RSS and CPU reporting, the child-process harness
//! of the client benchmarks ([`harness`]), the certificates and client settings of their
//! `--tls` runs ([`tls`]) and the three-node cluster of the cluster benchmarks ([`cluster`]).

pub mod cluster;
pub mod harness;
pub mod tls;

use bytes::Bytes;
use kafka_protocol::messages::{
    ApiKey, FetchResponse, ProduceRequest, RequestBody, RequestHeader, ResponseBody,
    ResponseHeader, fetch_response, produce_request,
};
use kafka_protocol::{KStr, frame};

/// Deterministic filler bytes standing in for a record set of `len` bytes.
pub fn records(len: usize) -> Bytes {
    let mut s: u32 = 0x9e37_79b9;
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            s as u8
        })
        .collect::<Vec<u8>>()
        .into()
}

/// A Produce request (v9, flexible) frame carrying `records` for one partition.
pub fn produce_frame(records: Bytes) -> Bytes {
    let header = RequestHeader {
        request_api_key: ApiKey::Produce as i16,
        request_api_version: 9,
        correlation_id: 7,
        client_id: Some(KStr::from_static("bench")),
        ..Default::default()
    };
    let body = RequestBody::Produce(ProduceRequest {
        acks: -1,
        timeout_ms: 30_000,
        topic_data: vec![produce_request::TopicProduceData {
            name: KStr::from_static("bench-topic"),
            partition_data: vec![produce_request::PartitionProduceData {
                index: 0,
                records: Some(records),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    });
    match frame::encode_request(&header, &body) {
        Ok(w) => w.into_bytes(),
        Err(e) => unreachable_input(&e),
    }
}

/// A Fetch response (v12, flexible) body carrying `records` for one partition.
pub fn fetch_response(records: Bytes) -> (ResponseHeader, ResponseBody) {
    let body = ResponseBody::Fetch(FetchResponse {
        responses: vec![fetch_response::FetchableTopicResponse {
            topic: KStr::from_static("bench-topic"),
            partitions: vec![fetch_response::PartitionData {
                partition_index: 0,
                high_watermark: 1_000_000,
                last_stable_offset: 1_000_000,
                records: Some(records),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    });
    (
        ResponseHeader {
            correlation_id: 7,
            ..Default::default()
        },
        body,
    )
}

/// Encoded Fetch response frame.
pub fn fetch_frame(records: Bytes) -> Bytes {
    let (h, b) = fetch_response(records);
    match frame::encode_response(&h, &b, 12) {
        Ok(w) => w.into_bytes(),
        Err(e) => unreachable_input(&e),
    }
}

fn unreachable_input(e: &dyn std::fmt::Display) -> ! {
    // The inputs above are fixed and valid; failing to encode them is a bug in the codec.
    eprintln!("benchmark input failed to encode: {e}");
    std::process::exit(1)
}

/// Peak resident set size of this process in KiB (Linux `VmHWM`), if known.
pub fn peak_rss_kib() -> Option<u64> {
    peak_rss_kib_of("self")
}

/// Peak resident set size in KiB of process `pid` (`"self"` or a number), if known.
pub fn peak_rss_kib_of(pid: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// CPU time (user + system, all threads) used so far by process `pid` (`"self"` or a
/// number), from `/proc/PID/stat`. The kernel reports it in clock ticks of 1/100 s
/// (`USER_HZ`, fixed at 100 for user space on Linux), so measure over seconds, not
/// milliseconds.
pub fn cpu_time_of(pid: &str) -> Option<std::time::Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count fields from
    // after its closing parenthesis, where field 3 (state) is index 0.
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(std::time::Duration::from_millis((utime + stime) * 10))
}
