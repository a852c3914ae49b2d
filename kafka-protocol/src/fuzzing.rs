//! Fuzzing entry points, shared by the cargo-fuzz targets in `xtask/fuzz` and by the stable
//! smoke runner (`cargo xtask fuzz all --smoke`).
//!
//! Each entry point takes arbitrary bytes and panics when an invariant breaks; a panic is the
//! only failure signal. The invariants:
//!
//! - decoding never panics, whatever the input;
//! - a value that decoded re-encodes, the re-encoded bytes decode to an equal value, and encoding
//!   that value again gives the same bytes (the codec reaches a fixed point after one pass);
//! - decompression never returns more than the limit it was given;
//! - a record batch whose records decode rebuilds (plain and with its own codec) to a valid
//!   batch with the same records, and in-place header edits keep its CRC right;
//! - the record set iterators account for every input byte;
//! - the borrowing Produce view ([`crate::view`]) accepts exactly the frames `decode_request`
//!   accepts as Produce requests, rejects the others with the same error (or, for another
//!   api, says which), and yields the same values, slices of the input.
//!
//! Besides the entry points, this module generates seed inputs from valid encodings
//! ([`seeds`]) and has the deterministic mutator the smoke runner uses ([`Mutator`]).
//!
//! The asserts below use `expect`/`panic!` on purpose: panicking is how a fuzz target reports.

use std::fmt::Debug;

use arbitrary::Unstructured;
use bytes::{BufMut, Bytes, BytesMut};

use crate::codec::{KStr, Message};
use crate::error::DecodeError;
use crate::frame::{self, Request};
use crate::messages::{
    ApiKey, ConsumerProtocolAssignment, ConsumerProtocolSubscription, RequestBody, RequestHeader,
    ResponseBody, ResponseHeader,
};
use crate::primitives;
use crate::record::convert::{DownConvertLimits, down_convert, up_convert};
use crate::record::{
    Compression, ControlRecordType, LegacyEntries, LegacyMessageSetBuilder, LegacyRecords,
    RecordBatch, RecordBatchBuilder, RecordBatchMut, RecordBatches, RecordSet, RecordSetEntry,
    TimestampType, decompress, end_txn_marker_batch, parse_end_txn_marker,
};
use crate::view::ProduceRequestView;

/// The most a fuzz input may decompress to.
pub const MAX_DECOMPRESSED: usize = 1 << 20;

/// Decompression limits tried directly on the raw input, small ones included so that the
/// "stop at the limit" paths run on small inputs.
const DIRECT_LIMITS: [usize; 2] = [64, MAX_DECOMPRESSED];

/// The fuzz targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    RequestDecode,
    ResponseDecode,
    RecordBatch,
    Varint,
    ProduceView,
}

impl Target {
    /// Every target, in the order `all` runs them.
    pub const ALL: [Self; 5] = [
        Self::RequestDecode,
        Self::ResponseDecode,
        Self::RecordBatch,
        Self::Varint,
        Self::ProduceView,
    ];

    /// The target's name (also its cargo-fuzz binary name).
    pub fn name(self) -> &'static str {
        match self {
            Self::RequestDecode => "request_decode",
            Self::ResponseDecode => "response_decode",
            Self::RecordBatch => "record_batch",
            Self::Varint => "varint",
            Self::ProduceView => "produce_view",
        }
    }

    /// The target called `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Runs the target's entry point on `data`.
    pub fn run(self, data: &[u8]) {
        match self {
            Self::RequestDecode => request_decode(data),
            Self::ResponseDecode => response_decode(data),
            Self::RecordBatch => record_batch(data),
            Self::Varint => varint(data),
            Self::ProduceView => produce_view(data),
        }
    }
}

/// Equality that also holds for NaN floats (quota values are f64): a value that carries a NaN
/// is never `==` to itself, but prints the same.
fn same<T: PartialEq + Debug>(a: &T, b: &T) -> bool {
    a == b || format!("{a:?}") == format!("{b:?}")
}

#[track_caller]
fn assert_same<T: PartialEq + Debug>(a: &T, b: &T, what: &str) {
    assert!(
        same(a, b),
        "{what}: values differ\n first: {a:?}\nsecond: {b:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Requests

/// Decodes a request frame (no size prefix). When it decodes: re-encodes it, decodes that to
/// an equal request, and re-encodes again to the same bytes. Also decodes the consumer
/// protocol bytes that JoinGroup and SyncGroup carry.
pub fn request_decode(data: &[u8]) {
    let input = Bytes::copy_from_slice(data);
    let prefix = frame::peek_request(&input);
    let decoded = frame::decode_request(&input);
    view_agrees(&input, &decoded);
    let Ok(req) = decoded else {
        return;
    };
    let prefix = prefix.expect("a request that decodes has a readable prefix");
    assert_eq!(prefix.api_key, req.api_key() as i16, "api key");
    assert_eq!(prefix.api_version, req.version(), "api version");
    assert_eq!(req.header.request_api_key, req.api_key() as i16);

    let first = encode_request(&req);
    let back = frame::decode_request(&first)
        .unwrap_or_else(|e| panic!("re-encoded {:?} does not decode: {e}", req.api_key()));
    assert!(
        back.trailing.is_empty(),
        "re-encoded request has trailing bytes"
    );
    assert_same(
        &back.header,
        &req.header,
        "request header after a round trip",
    );
    assert_same(&back.body, &req.body, "request body after a round trip");
    let second = encode_request(&back);
    assert_eq!(
        first, second,
        "re-encoding a decoded request changed its bytes"
    );

    consumer_protocol(&req.body);
}

fn encode_request(req: &Request) -> Bytes {
    let w = frame::encode_request(&req.header, &req.body).unwrap_or_else(|e| {
        panic!(
            "decoded {:?} v{} does not re-encode: {e}",
            req.api_key(),
            req.version()
        )
    });
    let len = w.len();
    let bytes = w.into_bytes();
    assert_eq!(bytes.len(), len, "Writer::len disagrees with its output");
    bytes
}

/// The subscription and assignment bytes inside JoinGroup and SyncGroup requests.
fn consumer_protocol(body: &RequestBody) {
    match body {
        RequestBody::JoinGroup(join) => {
            for p in &join.protocols {
                versioned::<ConsumerProtocolSubscription>(&p.metadata);
            }
        }
        RequestBody::SyncGroup(sync) => {
            for a in &sync.assignments {
                versioned::<ConsumerProtocolAssignment>(&a.assignment);
            }
        }
        _ => {}
    }
}

/// Versioned data schema bytes: when they decode at a version the schema knows, they
/// round-trip like a message.
fn versioned<M: Message + Debug + PartialEq>(bytes: &Bytes) {
    let Ok((version, m)) = frame::decode_versioned::<M>(bytes) else {
        return;
    };
    if !M::VERSIONS.contains(version) {
        return;
    }
    let first = frame::encode_versioned(&m, version)
        .unwrap_or_else(|e| panic!("decoded {} v{version} does not re-encode: {e}", M::NAME));
    let (v2, back) = frame::decode_versioned::<M>(&first)
        .unwrap_or_else(|e| panic!("re-encoded {} v{version} does not decode: {e}", M::NAME));
    assert_eq!(v2, version);
    assert_same(&back, &m, M::NAME);
    let second = frame::encode_versioned(&back, version).expect("second encoding");
    assert_eq!(first, second, "re-encoding {} changed its bytes", M::NAME);
}

// ---------------------------------------------------------------------------------------------
// The borrowing Produce view

/// Reads a request frame (no size prefix) with the borrowing Produce view and with
/// `decode_request`, and checks that they agree (see [`view_agrees`]).
pub fn produce_view(data: &[u8]) {
    let input = Bytes::copy_from_slice(data);
    let decoded = frame::decode_request(&input);
    view_agrees(&input, &decoded);
}

/// The view of `input` against `decoded`, what `decode_request` made of it: a request of
/// another api is rejected with the key it has; otherwise both accept, with the same values
/// (strings and record sets being the same slices of `input`), or both reject with the same
/// error.
fn view_agrees(input: &Bytes, decoded: &Result<Request, DecodeError>) {
    let view = ProduceRequestView::parse(input);
    if let Ok(prefix) = frame::peek_request(input) {
        if prefix.api_key != ApiKey::Produce as i16 {
            let e = view.expect_err("the Produce view accepted another api");
            let want = match ApiKey::from_i16(prefix.api_key) {
                None => DecodeError::UnknownApiKey {
                    api_key: prefix.api_key,
                },
                Some(_) => DecodeError::UnexpectedApiKey {
                    expected: ApiKey::Produce.name(),
                    expected_api_key: ApiKey::Produce as i16,
                    api_key: prefix.api_key,
                    version: prefix.api_version,
                },
            };
            assert_eq!(e, want, "the Produce view's error for another api key");
            return;
        }
    }
    let (req, (header, body)) = match (decoded, view) {
        (Ok(req), Ok(view)) => (req, view),
        (Err(a), Err(b)) => {
            assert_eq!(
                &b, a,
                "the Produce view and decode_request reject differently"
            );
            return;
        }
        (Ok(_), Err(e)) => {
            panic!("decode_request accepts a Produce request, the view rejects: {e}")
        }
        (Err(e), Ok(_)) => panic!("the Produce view accepts a frame decode_request rejects: {e}"),
    };
    let RequestBody::Produce(owned) = &req.body else {
        panic!("the Produce view accepted a {:?} request", req.api_key());
    };
    assert_eq!(header.to_message(input), req.header, "Produce view: header");
    assert_eq!(body.to_message(input), *owned, "Produce view: body");
    assert_eq!(body.version(), req.version(), "Produce view: version");
    assert_eq!(
        body.trailing(),
        &req.trailing[..],
        "Produce view: trailing bytes"
    );
    // Every string and record set is the slice of the input the owned decode points at.
    let within = |part: &[u8]| {
        let (start, p) = (input.as_ptr() as usize, part.as_ptr() as usize);
        part.is_empty() || (p >= start && p + part.len() <= start + input.len())
    };
    assert!(header.client_id().is_none_or(|c| within(c.as_bytes())));
    assert!(body.transactional_id().is_none_or(|t| within(t.as_bytes())));
    let mut topics = 0;
    for (t, ot) in body.topics().iter().zip(&owned.topic_data) {
        topics += 1;
        assert!(
            within(t.name().as_bytes()),
            "Produce view: a topic name was copied"
        );
        let mut partitions = 0;
        for (p, op) in t.partitions().iter().zip(&ot.partition_data) {
            partitions += 1;
            if let (Some(r), Some(or)) = (p.records(), &op.records) {
                assert!(within(r), "Produce view: a record set was copied");
                assert!(
                    r.is_empty() || r.as_ptr() == or.as_ptr(),
                    "record set pointers"
                );
            }
        }
        assert_eq!(
            partitions,
            t.partitions().len(),
            "Produce view: partition count"
        );
    }
    assert_eq!(topics, body.topics().len(), "Produce view: topic count");
}

// ---------------------------------------------------------------------------------------------
// Responses

/// The api key and version a response input names: byte 0 picks the key (an index into
/// [`ApiKey::ALL`]), byte 1 the version within the key's range. Always a valid pair.
pub fn response_key_version(b0: u8, b1: u8) -> (ApiKey, i16) {
    let key = ApiKey::ALL[usize::from(b0) % ApiKey::ALL.len()];
    let range = key.versions();
    let span = i32::from(range.max) - i32::from(range.min) + 1;
    let version = i32::from(range.min) + i32::from(b1) % span;
    (key, version as i16)
}

/// The two prefix bytes that make [`response_key_version`] return `key` and `version`.
pub fn response_prefix(key: ApiKey, version: i16) -> [u8; 2] {
    let idx = ApiKey::ALL.iter().position(|k| *k == key).unwrap_or(0);
    let off = version.saturating_sub(key.versions().min).max(0);
    [idx as u8, off as u8]
}

/// A response fuzz input: the prefix naming key and version, then the frame.
pub fn response_input(key: ApiKey, version: i16, frame: &[u8]) -> Vec<u8> {
    let mut out = response_prefix(key, version).to_vec();
    out.extend_from_slice(frame);
    out
}

/// Decodes a response frame to the api key and version named by the first two input bytes
/// (see [`response_key_version`]); the rest is the frame. Same round-trip checks as requests.
pub fn response_decode(data: &[u8]) {
    let [b0, b1, rest @ ..] = data else {
        return;
    };
    let (key, version) = response_key_version(*b0, *b1);
    let input = Bytes::copy_from_slice(rest);
    let Ok(resp) = frame::decode_response(&input, key, version) else {
        return;
    };
    assert_eq!(resp.body.api_key(), key, "decoded body has another api key");
    let encode = |h: &ResponseHeader, b: &ResponseBody| {
        frame::encode_response(h, b, version)
            .unwrap_or_else(|e| {
                panic!("decoded {key:?} v{version} response does not re-encode: {e}")
            })
            .into_bytes()
    };
    let first = encode(&resp.header, &resp.body);
    let back = frame::decode_response(&first, key, version)
        .unwrap_or_else(|e| panic!("re-encoded {key:?} v{version} response does not decode: {e}"));
    assert!(
        back.trailing.is_empty(),
        "re-encoded response has trailing bytes"
    );
    assert_same(
        &back.header,
        &resp.header,
        "response header after a round trip",
    );
    assert_same(&back.body, &resp.body, "response body after a round trip");
    let second = encode(&back.header, &back.body);
    assert_eq!(
        first, second,
        "re-encoding a decoded response changed its bytes"
    );
}

// ---------------------------------------------------------------------------------------------
// Record sets

/// Reads `data` as a record set (what Produce and Fetch carry): every entry, every record,
/// bounded decompression, in-place batch edits; rebuilds decoded batches and legacy messages
/// and checks they read back the same.
pub fn record_batch(data: &[u8]) {
    let input = Bytes::copy_from_slice(data);

    // The iterators account for every byte: entries yielded plus the remainder.
    let mut used = 0;
    let mut set = RecordSet::new(input.clone());
    for entry in set.by_ref() {
        let Ok(entry) = entry else { break };
        assert!(entry.magic() >= 0 && entry.magic() <= 2, "entry magic");
        used += entry.size();
        match entry {
            RecordSetEntry::Batch(batch) => check_batch(&batch),
            RecordSetEntry::Legacy(_) => {}
        }
    }
    assert_eq!(
        used + set.remainder().len(),
        input.len(),
        "RecordSet lost bytes"
    );

    let mut used = 0;
    let mut batches = RecordBatches::new(input.clone());
    for b in batches.by_ref() {
        let Ok(b) = b else { break };
        used += b.size();
    }
    assert_eq!(batches.position(), used, "RecordBatches position");
    assert_eq!(
        used + batches.remainder().len(),
        input.len(),
        "RecordBatches lost bytes"
    );

    let mut used = 0;
    let mut entries = LegacyEntries::new(input.clone());
    for m in entries.by_ref() {
        let Ok(m) = m else { break };
        used += m.size();
        check_legacy(&m);
    }
    assert_eq!(
        used + entries.remainder().len(),
        input.len(),
        "LegacyEntries lost bytes"
    );
    for m in LegacyRecords::new(input.clone(), MAX_DECOMPRESSED) {
        if m.is_err() {
            break;
        }
    }

    check_conversions(&input);

    // The decompressors on the raw input, where no header has to be right first.
    if data.len() <= 64 * 1024 {
        for codec in [
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            // The zstd decoder allocates a large context before it looks at the input: only
            // worth it for input that starts like a zstd frame (plain or skippable).
            let zstd_like = data.starts_with(&[0x28, 0xb5, 0x2f, 0xfd])
                || (data.len() >= 4 && data[0] & 0xf0 == 0x50 && data[1..4] == [0x2a, 0x4d, 0x18]);
            if codec == Compression::Zstd && !zstd_like {
                continue;
            }
            for max in DIRECT_LIMITS {
                bounded_decompress(codec, data, max);
            }
        }
    }
}

/// Up- and down-conversion (old clients' formats) on any input: never a panic; what they
/// write reads back, within the limits, and converts back with the same message count.
fn check_conversions(input: &Bytes) {
    if let Ok(up) = up_convert(input, MAX_DECOMPRESSED) {
        let batch =
            RecordBatch::from_bytes(up.batch.clone()).expect("an up-converted batch parses");
        batch
            .validate(4 * MAX_DECOMPRESSED)
            .expect("an up-converted batch validates");
        assert_eq!(
            batch.records_count() as usize,
            up.records,
            "up-converted count"
        );
    }
    for magic in [0, 1] {
        for max_bytes in [1, 4096] {
            let limits = DownConvertLimits {
                max_bytes,
                max_entry: 64 * 1024,
                max_decompressed: MAX_DECOMPRESSED,
            };
            let Ok(down) = down_convert(input, magic, 0, limits) else {
                continue;
            };
            let mut count = 0;
            for m in LegacyRecords::new(down.records.clone(), 4 * MAX_DECOMPRESSED) {
                let m = m.expect("down-converted messages read back");
                assert!(m.magic <= magic, "down-converted magic");
                count += 1;
            }
            if down.records.len() > max_bytes.max(limits.max_entry) {
                // Past both limits only with a single oversized message or wrapper.
                assert!(
                    LegacyEntries::new(down.records.clone()).count() == 1,
                    "down-conversion past its limit after the first entry"
                );
            }
            // Messages copied verbatim (already old) count once per wrapper.
            assert!(count >= down.messages, "down-converted count");
        }
    }
}

/// Decompresses and checks the output respects `max`.
fn bounded_decompress(codec: Compression, data: &[u8], max: usize) -> Option<Bytes> {
    let out = decompress(codec, data, max).ok()?;
    assert!(
        out.len() <= max,
        "{codec} decompressed {} bytes, over the limit of {max}",
        out.len()
    );
    Some(out)
}

/// A decoded record, owned, for comparing a batch with its rebuild.
#[derive(Debug, PartialEq, Eq)]
struct Rec {
    timestamp: i64,
    key: Option<Bytes>,
    value: Option<Bytes>,
    headers: Vec<(KStr, Option<Bytes>)>,
}

/// Every record of `batch`, if all decode.
fn batch_records(batch: &RecordBatch) -> Option<Vec<Rec>> {
    let mut out = Vec::new();
    let records = batch.records(MAX_DECOMPRESSED).ok()?;
    for r in records {
        let r = r.ok()?;
        out.push(Rec {
            timestamp: r.timestamp(batch),
            key: r.key,
            value: r.value,
            headers: r.headers.into_iter().map(|h| (h.key, h.value)).collect(),
        });
    }
    Some(out)
}

/// Encodes `records` as a new batch with `batch`'s header fields and `codec`.
fn rebuild(batch: &RecordBatch, records: &[Rec], codec: Compression) -> Bytes {
    let mut b = RecordBatchBuilder::new()
        .base_offset(batch.base_offset())
        .partition_leader_epoch(batch.partition_leader_epoch())
        .producer(
            batch.producer_id(),
            batch.producer_epoch(),
            batch.base_sequence(),
        )
        .transactional(batch.is_transactional())
        .control(batch.is_control())
        .compression(codec);
    if batch.timestamp_type() == TimestampType::LogAppendTime {
        b = b.log_append_time(batch.max_timestamp());
    }
    for r in records {
        let headers: Vec<(&str, Option<&[u8]>)> = r
            .headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_deref()))
            .collect();
        b.append(r.timestamp, r.key.as_deref(), r.value.as_deref(), &headers)
            .expect("appending a decoded record");
    }
    b.build()
        .unwrap_or_else(|e| panic!("rebuilding a decoded batch with {codec}: {e}"))
}

fn check_batch(batch: &RecordBatch) {
    assert_eq!(batch.size(), batch.as_bytes().len());
    assert_eq!(
        batch.size() as i64,
        i64::from(batch.batch_length()) + 12,
        "batch size and batchLength"
    );
    let again =
        RecordBatch::from_bytes(batch.as_bytes().clone()).expect("a parsed batch parses alone");
    assert_eq!(&again, batch);
    let _ = (
        batch.last_offset(),
        batch.next_offset(),
        batch.last_sequence(),
        batch.delete_horizon_ms(),
        batch.crc(),
    );
    let crc_ok = batch.verify_crc().is_ok();
    let _ = batch.validate(MAX_DECOMPRESSED);
    let _ = parse_end_txn_marker(batch);

    // Decompression of the payload is bounded, at any limit.
    if let Ok(codec) = batch.compression() {
        let payload = &batch.as_bytes()[61.min(batch.size())..];
        if codec != Compression::None {
            for max in DIRECT_LIMITS {
                bounded_decompress(codec, payload, max);
            }
        }
    }

    // In-place edits keep the batch readable and its CRC right.
    let mut buf = batch.as_bytes().to_vec();
    {
        let mut m = RecordBatchMut::new(&mut buf).expect("a parsed batch is editable");
        assert_eq!(m.size(), batch.size());
        m.set_base_offset(batch.base_offset().wrapping_add(1000));
        m.set_partition_leader_epoch(7);
        if crc_ok {
            m.set_producer_state(11, 3, 5);
            m.set_log_append_time(1_700_000_000_000);
        }
    }
    let edited = RecordBatch::from_bytes(Bytes::from(buf)).expect("an edited batch parses");
    assert_eq!(edited.base_offset(), batch.base_offset().wrapping_add(1000));
    assert_eq!(edited.partition_leader_epoch(), 7);
    if crc_ok {
        edited.verify_crc().expect("CRC after in-place edits");
        assert_eq!(edited.producer_id(), 11);
        assert_eq!(edited.timestamp_type(), TimestampType::LogAppendTime);
        assert_eq!(edited.max_timestamp(), 1_700_000_000_000);
        assert_eq!(edited.records_count(), batch.records_count());
    }

    // Rebuilding the records gives a valid batch with the same records, and rebuilding that
    // again gives the same bytes.
    let Some(records) = batch_records(batch) else {
        return;
    };
    let first = rebuild(batch, &records, Compression::None);
    let rebuilt = RecordBatch::from_bytes(first.clone()).expect("a rebuilt batch parses");
    rebuilt
        .validate(MAX_DECOMPRESSED)
        .unwrap_or_else(|e| panic!("a rebuilt batch does not validate: {e}"));
    let back = batch_records(&rebuilt).expect("a rebuilt batch's records decode");
    assert_same(&back, &records, "records after rebuilding the batch");
    assert_eq!(
        rebuild(&rebuilt, &back, Compression::None),
        first,
        "rebuilding a rebuilt batch changed its bytes"
    );
    // And through the batch's own codec.
    let codec = batch.compression().unwrap_or_default();
    if codec != Compression::None {
        let packed = rebuild(batch, &records, codec);
        let packed = RecordBatch::from_bytes(packed).expect("a compressed rebuild parses");
        packed
            .validate(MAX_DECOMPRESSED.max(first.len()))
            .unwrap_or_else(|e| panic!("a {codec} rebuild does not validate: {e}"));
        let back = batch_records(&packed).expect("a compressed rebuild's records decode");
        assert_same(&back, &records, "records after a compressed rebuild");
    }
}

fn check_legacy(m: &crate::record::LegacyMessage) {
    let _ = (m.compression(), m.timestamp_type(), m.computed_crc());
    let crc_ok = m.verify_crc().is_ok();
    if m.is_compressed() {
        if let Ok(inner) = m.inner_messages(MAX_DECOMPRESSED) {
            for i in &inner {
                assert!(!i.is_compressed(), "an inner message is compressed");
                assert_eq!(i.magic, m.magic, "inner magic");
            }
        }
        return;
    }
    if !crc_ok {
        return;
    }
    // An uncompressed message rebuilds to one that reads back the same.
    let mut b = LegacyMessageSetBuilder::new(m.magic, Compression::None, m.offset)
        .expect("a legacy builder for a decoded magic");
    b.append(
        m.timestamp.unwrap_or(-1),
        m.key.as_deref(),
        m.value.as_deref(),
    )
    .expect("appending a decoded message");
    let bytes = b.build().expect("building a legacy message set");
    let mut it = LegacyEntries::new(bytes);
    let back = it
        .next()
        .expect("one message")
        .expect("a rebuilt message parses");
    assert!(it.next().is_none(), "one message only");
    back.verify_crc().expect("a rebuilt message's CRC");
    assert_eq!(back.offset, m.offset);
    assert_eq!(back.magic, m.magic);
    assert_eq!(back.key, m.key);
    assert_eq!(back.value, m.value);
    assert_eq!(back.timestamp, m.timestamp);
}

// ---------------------------------------------------------------------------------------------
// Varints

/// Every varint parser on `data`, plus the encoders on values taken from `data`: a parsed value
/// re-encodes in at most as many bytes (the shortest form) and parses back to itself.
pub fn varint(data: &[u8]) {
    fn consumed(data: &[u8], rest: &[u8]) -> usize {
        data.len() - rest.len()
    }
    if let Ok((rest, v)) = primitives::uvarint(data) {
        let n = consumed(data, rest);
        assert!((1..=5).contains(&n), "uvarint took {n} bytes");
        let mut b = Vec::new();
        primitives::put_uvarint(&mut b, v);
        assert!(b.len() <= n, "uvarint re-encoding is longer than its input");
        assert_eq!(primitives::uvarint(&b), Ok((&[][..], v)));
        assert_eq!(b.len(), primitives::uvarlong_len(u64::from(v)));
    }
    if let Ok((rest, v)) = primitives::uvarlong(data) {
        let n = consumed(data, rest);
        assert!((1..=10).contains(&n), "uvarlong took {n} bytes");
        let mut b = Vec::new();
        primitives::put_uvarlong(&mut b, v);
        assert!(
            b.len() <= n,
            "uvarlong re-encoding is longer than its input"
        );
        assert_eq!(primitives::uvarlong(&b), Ok((&[][..], v)));
        assert_eq!(b.len(), primitives::uvarlong_len(v));
    }
    if let Ok((rest, v)) = primitives::varint(data) {
        let n = consumed(data, rest);
        let mut b = Vec::new();
        primitives::put_varint(&mut b, v);
        assert!(b.len() <= n, "varint re-encoding is longer than its input");
        assert_eq!(primitives::varint(&b), Ok((&[][..], v)));
        assert_eq!(b.len(), primitives::varint_len(v));
    }
    if let Ok((rest, v)) = primitives::varlong(data) {
        let n = consumed(data, rest);
        let mut b = Vec::new();
        primitives::put_varlong(&mut b, v);
        assert!(b.len() <= n, "varlong re-encoding is longer than its input");
        assert_eq!(primitives::varlong(&b), Ok((&[][..], v)));
        assert_eq!(b.len(), primitives::varlong_len(v));
    }
    // The parsers agree with each other where their ranges overlap.
    if let (Ok((r1, a)), Ok((r2, b))) = (primitives::uvarint(data), primitives::uvarlong(data)) {
        assert_eq!(u64::from(a), b, "uvarint and uvarlong disagree");
        assert_eq!(r1.len(), r2.len());
    }
    // The encoders on values from the input.
    let mut words = data.chunks_exact(8);
    for w in words.by_ref().take(4) {
        let mut a = [0; 8];
        a.copy_from_slice(w);
        let v = i64::from_le_bytes(a);
        let mut b = Vec::new();
        primitives::put_varlong(&mut b, v);
        assert_eq!(primitives::varlong(&b), Ok((&[][..], v)));
        let v32 = v as i32;
        let mut b = Vec::new();
        primitives::put_varint(&mut b, v32);
        assert_eq!(primitives::varint(&b), Ok((&[][..], v32)));
        assert_eq!(b.len(), primitives::varint_len(v32));
    }
    // A sequence of varints, as the record and tagged-field readers see them.
    let bytes = Bytes::copy_from_slice(data);
    let mut r = crate::codec::Reader::new(&bytes);
    let mut last = r.remaining();
    while r.varlong("fuzz").is_ok() {
        assert!(r.remaining() < last, "a varint read took no bytes");
        last = r.remaining();
    }
}

// ---------------------------------------------------------------------------------------------
// Seeds

/// Deterministic pseudo-random bytes (splitmix64): seeds and mutations reproduce exactly.
#[derive(Debug, Clone)]
pub struct SplitMix(u64);

impl SplitMix {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(len + 8);
        while out.len() < len {
            out.extend_from_slice(&self.next_u64().to_le_bytes());
        }
        out.truncate(len);
        out
    }
}

/// Seed inputs for `target`, built from valid encodings: a request and a response of every
/// api key and version (random values from the `arbitrary` feature, plus the smallest ones),
/// record sets of every codec and magic, varints at the edges of their ranges.
pub fn seeds(target: Target) -> Vec<Vec<u8>> {
    match target {
        Target::RequestDecode => message_seeds(true),
        Target::ResponseDecode => message_seeds(false),
        Target::RecordBatch => record_seeds(),
        Target::Varint => varint_seeds(),
        Target::ProduceView => produce_seeds(),
    }
}

/// Produce requests of every version, random values (the smallest and several random ones),
/// some with bytes after the body.
fn produce_seeds() -> Vec<Vec<u8>> {
    let key = ApiKey::Produce;
    let range = key.versions();
    let mut out = Vec::new();
    for version in range.min..=range.max {
        for case in 0..6u64 {
            let data = if case == 0 {
                vec![0; 64]
            } else {
                SplitMix::new(0xf0ee << 20 | (version as u64) << 4 | case).bytes(1024)
            };
            let mut u = Unstructured::new(&data);
            if let Some(mut s) = request_seed(key, version, case, &mut u) {
                if case == 5 {
                    s.extend_from_slice(&[0, 1, 2]);
                }
                out.push(s);
            }
        }
    }
    out
}

fn message_seeds(requests: bool) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for &key in ApiKey::ALL {
        let range = key.versions();
        for version in range.min..=range.max {
            // Case 0 is the smallest value (all-zero input to `arbitrary`), case 1 random.
            for case in 0..2u64 {
                let data = if case == 0 {
                    vec![0; 64]
                } else {
                    SplitMix::new((key as u64) << 20 | (version as u64) << 4 | case).bytes(1024)
                };
                let mut u = Unstructured::new(&data);
                let seed = if requests {
                    request_seed(key, version, case, &mut u)
                } else {
                    response_seed(key, version, case, &mut u)
                };
                if let Some(s) = seed {
                    out.push(s);
                }
            }
        }
    }
    out
}

fn request_seed(key: ApiKey, version: i16, case: u64, u: &mut Unstructured<'_>) -> Option<Vec<u8>> {
    let body = RequestBody::arbitrary(key, u, version).ok()?;
    let hv = frame::request_header_version(key, version);
    let header = RequestHeader {
        request_api_key: key as i16,
        request_api_version: version,
        correlation_id: case as i32 + 1,
        client_id: if hv == 0 {
            Some(KStr::default())
        } else {
            Some(KStr::from_static("fuzz-seed"))
        },
        ..Default::default()
    };
    let bytes = frame::encode_request(&header, &body).ok()?.into_bytes();
    Some(bytes.to_vec())
}

fn response_seed(
    key: ApiKey,
    version: i16,
    case: u64,
    u: &mut Unstructured<'_>,
) -> Option<Vec<u8>> {
    let body = ResponseBody::arbitrary(key, u, version).ok()?;
    let header = ResponseHeader {
        correlation_id: case as i32 + 1,
        ..Default::default()
    };
    let bytes = frame::encode_response(&header, &body, version)
        .ok()?
        .into_bytes();
    Some(response_input(key, version, &bytes))
}

/// Seeds from a captured frame (a golden file): `name` is its file name, such as
/// `Produce-v7-gzip.bin` or `Metadata-v12-response.bin`; `bytes` may carry the 4-byte size
/// prefix. A request frame seeds the request target, a response frame (a name with
/// "response" in it, key and version from the `Name-vN` part) the response target, and the
/// record sets inside Produce requests and Fetch responses seed the record target.
pub fn seeds_from_frame(name: &str, bytes: &[u8]) -> Vec<(Target, Vec<u8>)> {
    let bytes = match bytes {
        [a, b, c, d, rest @ ..] if u32::from_be_bytes([*a, *b, *c, *d]) as usize == rest.len() => {
            rest
        }
        _ => bytes,
    };
    let frame = Bytes::copy_from_slice(bytes);
    let mut out = Vec::new();
    if name.to_ascii_lowercase().contains("response") {
        let Some((key, version)) = name_key_version(name) else {
            return out;
        };
        out.push((Target::ResponseDecode, response_input(key, version, bytes)));
        if let Ok(frame::Response {
            body: ResponseBody::Fetch(f),
            ..
        }) = frame::decode_response(&frame, key, version)
        {
            for p in f.responses.iter().flat_map(|t| &t.partitions) {
                if let Some(r) = p.records.as_ref().filter(|r| !r.is_empty()) {
                    out.push((Target::RecordBatch, r.to_vec()));
                }
            }
        }
        return out;
    }
    out.push((Target::RequestDecode, bytes.to_vec()));
    if frame::peek_request(&frame).is_ok_and(|p| p.api_key == ApiKey::Produce as i16) {
        out.push((Target::ProduceView, bytes.to_vec()));
    }
    if let Ok(Request {
        body: RequestBody::Produce(p),
        ..
    }) = frame::decode_request(&frame)
    {
        for p in p.topic_data.iter().flat_map(|t| &t.partition_data) {
            if let Some(r) = p.records.as_ref().filter(|r| !r.is_empty()) {
                out.push((Target::RecordBatch, r.to_vec()));
            }
        }
    }
    out
}

/// The api key and version of a file name such as `Fetch-v11-response.bin`.
fn name_key_version(name: &str) -> Option<(ApiKey, i16)> {
    let mut parts = name.split(['-', '.', '_']);
    let key_name = parts.next()?;
    let key = ApiKey::ALL
        .iter()
        .copied()
        .find(|k| k.name().eq_ignore_ascii_case(key_name))?;
    let version = parts.find_map(|p| p.strip_prefix('v')?.parse::<i16>().ok())?;
    key.versions().contains(version).then_some((key, version))
}

const CODECS: [Compression; 5] = [
    Compression::None,
    Compression::Gzip,
    Compression::Snappy,
    Compression::Lz4,
    Compression::Zstd,
];

fn record_seeds() -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = Vec::new();
    let mut rng = SplitMix::new(0x5eed);
    for (i, codec) in CODECS.into_iter().enumerate() {
        for shape in 0..3 {
            let mut b = RecordBatchBuilder::new()
                .base_offset(i as i64 * 100)
                .compression(codec);
            if shape == 1 {
                b = b.producer(1234, 5, 42).transactional(true);
            }
            if shape == 2 {
                b = b
                    .log_append_time(1_700_000_000_500)
                    .partition_leader_epoch(9);
            }
            let n = [1, 3, 8][shape];
            for r in 0..n {
                let n = rng.below(40);
                let value = rng.bytes(n);
                let key = (r % 2 == 0).then(|| format!("key-{r}"));
                let headers: &[(&str, Option<&[u8]>)] = if r == 1 {
                    &[("trace", Some(b"abc")), ("null", None)]
                } else {
                    &[]
                };
                if b.append(
                    1_700_000_000_000 + r as i64,
                    key.as_deref().map(str::as_bytes),
                    Some(&value),
                    headers,
                )
                .is_err()
                {
                    continue;
                }
            }
            if let Ok(bytes) = b.build() {
                out.push(bytes.to_vec());
            }
        }
    }
    // Two batches back to back, and one with a cut-off second batch.
    if out.len() >= 2 {
        let two = [out[0].clone(), out[1].clone()].concat();
        out.push(two[..two.len() - 5].to_vec());
        out.push(two);
    }
    // An empty batch and transaction markers.
    if let Ok(b) = RecordBatchBuilder::new().build() {
        out.push(b.to_vec());
    }
    for kind in [ControlRecordType::Commit, ControlRecordType::Abort] {
        if let Ok(b) = end_txn_marker_batch(kind, 77, 1, 3, 1_700_000_000_000) {
            out.push(b.to_vec());
        }
    }
    // Legacy message sets, magic 0 and 1, every codec they allow.
    for magic in [0i8, 1] {
        for codec in &CODECS[..4] {
            let Ok(mut b) = LegacyMessageSetBuilder::new(magic, *codec, 500) else {
                continue;
            };
            for r in 0..3i64 {
                let n = rng.below(30);
                let value = rng.bytes(n);
                let key = (r != 1).then_some(&b"k"[..]);
                if b.append(1_600_000_000_000 + r, key, Some(&value)).is_err() {
                    continue;
                }
            }
            if let Ok(bytes) = b.build() {
                out.push(bytes.to_vec());
            }
        }
    }
    // A set that mixes a legacy message and a v2 batch, as an old log can.
    if let (Some(legacy), Some(batch)) = (out.last().cloned(), out.first().cloned()) {
        out.push([legacy, batch].concat());
    }
    out
}

fn varint_seeds() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for v in [0i64, 1, -1, 63, -64, 64, 127, 128, 300, 16_383, 16_384] {
        let mut b = BytesMut::new();
        primitives::put_varlong(&mut b, v);
        out.push(b.to_vec());
    }
    for v in [i32::MAX, i32::MIN] {
        let mut b = BytesMut::new();
        primitives::put_varint(&mut b, v);
        out.push(b.to_vec());
    }
    for v in [i64::MAX, i64::MIN] {
        let mut b = BytesMut::new();
        primitives::put_varlong(&mut b, v);
        out.push(b.to_vec());
    }
    let mut b = BytesMut::new();
    primitives::put_uvarint(&mut b, u32::MAX);
    out.push(b.to_vec());
    // Over-long forms and a run of varints.
    out.push(vec![0x80, 0x80, 0x80, 0x80, 0x00]);
    out.push(vec![0xff; 11]);
    let mut b = BytesMut::new();
    for v in [5i64, -3, 1 << 40, 0, -1] {
        primitives::put_varlong(&mut b, v);
    }
    b.put_u8(0x80);
    out.push(b.to_vec());
    out
}

// ---------------------------------------------------------------------------------------------
// Deterministic mutations, for the stable smoke runner

/// Byte values that tend to hit edge cases: zero, signs, and lengths of -1.
const INTERESTING_8: [u8; 9] = [0x00, 0x01, 0x02, 0x7e, 0x7f, 0x80, 0x81, 0xfe, 0xff];
const INTERESTING_32: [i32; 10] = [0, 1, -1, -2, 0x7f, 0x80, 0x7fff, 0x8000, i32::MAX, i32::MIN];

/// A deterministic mutator: the `n`-th mutation of a seed is always the same bytes.
///
/// Mutations are what a byte-level fuzzer does, applied one to four at a time: bit flips,
/// byte and word overwrites with edge values, truncation, insertion and deletion of bytes,
/// duplicated ranges, splices with another seed, and length-field tweaks (big-endian i16/i32
/// words that look like the length of what follows them, or single varint bytes, moved by a
/// small amount or set to -1 / huge).
#[derive(Debug, Clone, Copy, Default)]
pub struct Mutator;

impl Mutator {
    /// The `n`-th mutation of `seed`, splicing with `other` where a splice is drawn.
    pub fn mutate(seed: &[u8], other: &[u8], n: u64) -> Vec<u8> {
        let mut rng = SplitMix::new(n ^ 0xa076_1d64_78bd_642f ^ (seed.len() as u64) << 40);
        let mut data = seed.to_vec();
        let rounds = 1 + rng.below(4);
        for _ in 0..rounds {
            Self::one(&mut data, other, &mut rng);
        }
        data
    }

    fn one(data: &mut Vec<u8>, other: &[u8], rng: &mut SplitMix) {
        let len = data.len();
        match rng.below(11) {
            // Bit flip.
            0 if len > 0 => {
                let i = rng.below(len);
                data[i] ^= 1 << rng.below(8);
            }
            // Interesting byte.
            1 if len > 0 => {
                let i = rng.below(len);
                data[i] = INTERESTING_8[rng.below(INTERESTING_8.len())];
            }
            // Random byte.
            2 if len > 0 => {
                let i = rng.below(len);
                data[i] = rng.next_u64() as u8;
            }
            // Truncate.
            3 if len > 0 => data.truncate(rng.below(len)),
            // Insert 1-8 bytes.
            4 => {
                let at = rng.below(len + 1);
                let n = 1 + rng.below(8);
                let fill = rng.bytes(n);
                data.splice(at..at, fill);
            }
            // Delete a range.
            5 if len > 0 => {
                let at = rng.below(len);
                let n = 1 + rng.below((len - at).min(16));
                data.drain(at..at + n);
            }
            // Duplicate a range.
            6 if len > 0 => {
                let at = rng.below(len);
                let n = 1 + rng.below((len - at).min(32));
                let chunk = data[at..at + n].to_vec();
                let to = rng.below(len + 1);
                data.splice(to..to, chunk);
            }
            // Splice: our head, the other seed's tail.
            7 if !other.is_empty() => {
                let cut = rng.below(len + 1);
                let from = rng.below(other.len());
                data.truncate(cut);
                data.extend_from_slice(&other[from..]);
            }
            // Big-endian word overwrite with an edge value.
            8 if len >= 2 => {
                let v = INTERESTING_32[rng.below(INTERESTING_32.len())];
                if len >= 4 && rng.below(2) == 0 {
                    let i = rng.below(len - 3);
                    data[i..i + 4].copy_from_slice(&v.to_be_bytes());
                } else {
                    let i = rng.below(len - 1);
                    data[i..i + 2].copy_from_slice(&(v as i16).to_be_bytes());
                }
            }
            // Length-field tweak.
            9 if len >= 2 => Self::tweak_length(data, rng),
            // Varint-ish tweak: move one byte by a small amount.
            _ if len > 0 => {
                let i = rng.below(len);
                let delta = [1u8, 2, 0xff, 0xfe][rng.below(4)];
                data[i] = data[i].wrapping_add(delta);
            }
            _ => data.push(rng.next_u64() as u8),
        }
    }

    /// Finds big-endian i16/i32 words whose value is at most the bytes after them (likely a
    /// length or count) and moves one of them.
    fn tweak_length(data: &mut [u8], rng: &mut SplitMix) {
        let len = data.len();
        let mut candidates: Vec<(usize, usize)> = Vec::new();
        for i in 0..len.saturating_sub(3) {
            let v = i32::from_be_bytes([data[i], data[i + 1], data[i + 2], data[i + 3]]);
            if v > 0 && (v as usize) <= len - i - 4 {
                candidates.push((i, 4));
            }
        }
        for i in 0..len.saturating_sub(1) {
            let v = i16::from_be_bytes([data[i], data[i + 1]]);
            if v > 0 && (v as usize) <= len - i - 2 {
                candidates.push((i, 2));
            }
        }
        if candidates.is_empty() {
            return;
        }
        let (at, width) = candidates[rng.below(candidates.len())];
        let choice = rng.below(6);
        if width == 4 {
            let v = i32::from_be_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]]);
            let new = match choice {
                0 => v.wrapping_add(1),
                1 => v.wrapping_sub(1),
                2 => v.wrapping_add(1 + rng.below(16) as i32),
                3 => -1,
                4 => i32::MAX,
                _ => v.wrapping_mul(2),
            };
            data[at..at + 4].copy_from_slice(&new.to_be_bytes());
        } else {
            let v = i16::from_be_bytes([data[at], data[at + 1]]);
            let new = match choice {
                0 => v.wrapping_add(1),
                1 => v.wrapping_sub(1),
                2 => v.wrapping_add(1 + rng.below(16) as i16),
                3 => -1,
                4 => i16::MAX,
                _ => v.wrapping_mul(2),
            };
            data[at..at + 2].copy_from_slice(&new.to_be_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_pass_their_targets() {
        for t in Target::ALL {
            let seeds = seeds(t);
            assert!(!seeds.is_empty(), "{t:?} has no seeds");
            for s in &seeds {
                t.run(s);
            }
        }
    }

    #[test]
    fn mutations_are_deterministic_and_do_not_panic_the_targets() {
        for t in Target::ALL {
            let seeds = seeds(t);
            for (i, s) in seeds.iter().enumerate().step_by(7) {
                let other = &seeds[(i + 1) % seeds.len()];
                for n in 0..20 {
                    let m = Mutator::mutate(s, other, n);
                    assert_eq!(m, Mutator::mutate(s, other, n));
                    t.run(&m);
                }
            }
        }
    }

    #[test]
    fn response_prefix_round_trips() {
        for &key in ApiKey::ALL {
            let r = key.versions();
            for v in r.min..=r.max {
                let [a, b] = response_prefix(key, v);
                assert_eq!(response_key_version(a, b), (key, v));
            }
        }
    }
}
