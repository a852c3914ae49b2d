//! The borrowing Produce view (`kafka_protocol::view`) against the owned decoder: on golden
//! frames from real clients, on generated requests of every version, on every truncation, on
//! hand-made malformed frames and on random mutations, the view accepts exactly what
//! `frame::decode_request` accepts as a Produce request, rejects the rest with the same error,
//! and yields the same values, its strings and record sets pointing into the frame.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use arbitrary::Unstructured;
use bytes::Bytes;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{ApiKey, ProduceRequest, RequestBody, RequestHeader};
use kafka_protocol::view::{ProduceRequestView, TaggedFields};
use kafka_protocol::{
    Codec, DecodeError, KStr, Message, RawTaggedField, Reader, UnknownTags, Uuid, frame,
};

// ---------------------------------------------------------------------------------------------
// Inputs

/// Deterministic pseudo-random numbers (splitmix64), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }
}

fn golden_produce_frames() -> Vec<(String, Bytes)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            // Requests only: `responses/` holds the answers brokers gave.
            if path.is_dir() && !path.ends_with("responses") {
                walk(&path, out);
            } else if path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("Produce-") && n.ends_with(".bin"))
            {
                out.push(path);
            }
        }
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/golden");
    let mut paths = Vec::new();
    walk(&dir, &mut paths);
    paths.sort();
    // kcat 6, kafka-python 7, confluent-kafka 7, the Java client 10 (see PROVENANCE.md).
    assert_eq!(
        paths.len(),
        30,
        "golden Produce frames under {}",
        dir.display()
    );
    paths
        .into_iter()
        .map(|p| {
            let name = p.strip_prefix(&dir).unwrap().display().to_string();
            (name, Bytes::from(std::fs::read(&p).unwrap()))
        })
        .collect()
}

const CASES: u64 = 40;

/// Produce requests of every version with random values from the generated `arbitrary`
/// support (several topics and partitions, null record sets, transactional ids, unknown
/// tagged fields), with varied headers and, in some, trailing bytes.
fn generated_frames() -> Vec<(String, Bytes)> {
    let range = ApiKey::Produce.versions();
    let mut out = Vec::new();
    for version in range.min..=range.max {
        for case in 0..CASES {
            let data = if case == 0 {
                vec![0; 64]
            } else {
                Rng(u64::from(version as u16) << 32 | case).bytes(2048)
            };
            let mut u = Unstructured::new(&data);
            let body = ProduceRequest::arbitrary(&mut u, version).unwrap();
            let hv = frame::request_header_version(ApiKey::Produce, version);
            let header = RequestHeader {
                request_api_key: ApiKey::Produce as i16,
                request_api_version: version,
                correlation_id: (case as i32) * 7919 - 100_000,
                client_id: match case % 3 {
                    0 => None,
                    1 => Some(KStr::from_static("view-test")),
                    _ => Some(KStr::from_static("prödücer-🦀")),
                },
                unknown_tagged_fields: if hv >= 2 && case % 4 == 1 {
                    UnknownTags::from(vec![
                        RawTaggedField {
                            tag: 0,
                            data: Bytes::from_static(b"h0"),
                        },
                        RawTaggedField {
                            tag: 300,
                            data: Bytes::new(),
                        },
                    ])
                } else {
                    UnknownTags::new()
                },
            };
            let mut bytes = frame::encode_request(&header, &RequestBody::Produce(body))
                .unwrap()
                .into_bytes()
                .to_vec();
            if case % 5 == 2 {
                bytes.extend_from_slice(&[0, 0, 1, 2, 3]);
            }
            out.push((
                format!("generated v{version} case {case}"),
                Bytes::from(bytes),
            ));
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// The comparison

/// What `decode_request` and the view made of a frame (they agree, or the test failed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// A Produce request: both accept it, with the same values.
    Accepted,
    /// A request of another api: `decode_request` accepts it, the view says which api it is.
    OtherApi,
    /// Both reject it, with the same error.
    Rejected,
}

/// Whether `part` lies inside `frame`'s memory (a zero-copy slice of it).
fn inside(frame: &[u8], part: &[u8]) -> bool {
    let start = frame.as_ptr() as usize;
    let p = part.as_ptr() as usize;
    p >= start && p + part.len() <= start + frame.len()
}

fn tags<'a>(t: TaggedFields<'a>) -> Vec<(u32, &'a [u8])> {
    t.iter().collect()
}

fn owned_tags(t: &UnknownTags) -> Vec<(u32, &[u8])> {
    t.iter().map(|f| (f.tag, &f.data[..])).collect()
}

/// Runs both readers on `frame` and checks that they agree.
#[track_caller]
fn agree(frame: &Bytes, what: &str) -> Outcome {
    let owned = frame::decode_request(frame);
    let view = ProduceRequestView::parse(frame);
    // A request of another api: the view says which, whatever decode_request makes of it.
    if let Ok(prefix) = frame::peek_request(frame) {
        if prefix.api_key != ApiKey::Produce as i16 {
            let e = view.unwrap_err();
            if ApiKey::from_i16(prefix.api_key).is_none() {
                assert_eq!(
                    e,
                    DecodeError::UnknownApiKey {
                        api_key: prefix.api_key
                    }
                );
                assert_eq!(owned.unwrap_err(), e, "{what}");
                return Outcome::Rejected;
            }
            assert_eq!(
                e,
                DecodeError::UnexpectedApiKey {
                    expected: "Produce",
                    expected_api_key: 0,
                    api_key: prefix.api_key,
                    version: prefix.api_version,
                },
                "{what}"
            );
            return Outcome::OtherApi;
        }
    }
    match (owned, view) {
        (Ok(req), Ok((h, p))) => {
            let RequestBody::Produce(body) = &req.body else {
                panic!("{what}: the view accepted a {:?} request", req.api_key());
            };
            same_values(frame, &req.header, body, &req.trailing, h, p, what);
            Outcome::Accepted
        }
        (Ok(req), Err(e)) => {
            panic!(
                "{what}: decode_request accepts {:?}, the view rejects: {e}",
                req.api_key()
            )
        }
        (Err(e), Ok(_)) => panic!("{what}: the view accepts, decode_request rejects: {e}"),
        (Err(a), Err(b)) => {
            assert_eq!(
                b, a,
                "{what}: the view and decode_request reject differently"
            );
            Outcome::Rejected
        }
    }
}

/// Every value of the view equals the owned decode's, and every string and record set of the
/// view is the very slice of the frame the owned decode points at.
#[track_caller]
fn same_values(
    frame: &Bytes,
    header: &RequestHeader,
    body: &ProduceRequest,
    trailing: &Bytes,
    h: kafka_protocol::view::RequestHeaderView<'_>,
    p: ProduceRequestView<'_>,
    what: &str,
) {
    assert_eq!(h.api_key(), header.request_api_key, "{what}: api key");
    assert_eq!(h.api_key(), ApiKey::Produce as i16, "{what}: api key");
    assert_eq!(h.api_version(), header.request_api_version, "{what}");
    assert_eq!(h.correlation_id(), header.correlation_id, "{what}");
    assert_eq!(
        h.client_id(),
        header.client_id.as_deref(),
        "{what}: client id"
    );
    if let Some(c) = h.client_id() {
        assert!(inside(frame, c.as_bytes()), "{what}: client id copied");
    }
    assert_eq!(
        h.header_version(),
        frame::request_header_version(ApiKey::Produce, header.request_api_version),
        "{what}"
    );
    assert_eq!(
        tags(h.tagged_fields()),
        owned_tags(&header.unknown_tagged_fields),
        "{what}: header tagged fields"
    );
    assert_eq!(h.to_message(frame), *header, "{what}: header to_message");

    assert_eq!(p.version(), header.request_api_version, "{what}: version");
    assert_eq!(
        p.transactional_id(),
        body.transactional_id.as_deref(),
        "{what}: transactional id"
    );
    assert_eq!(p.acks(), body.acks, "{what}: acks");
    assert_eq!(p.timeout_ms(), body.timeout_ms, "{what}: timeout");
    assert_eq!(
        tags(p.tagged_fields()),
        owned_tags(&body.unknown_tagged_fields),
        "{what}: body tagged fields"
    );
    assert_eq!(p.topics().len(), body.topic_data.len(), "{what}: topics");
    assert_eq!(p.topics().is_empty(), body.topic_data.is_empty());
    let topics: Vec<_> = p.topics().into_iter().collect();
    assert_eq!(
        topics.len(),
        body.topic_data.len(),
        "{what}: topics iterated"
    );
    for (t, ot) in topics.iter().zip(&body.topic_data) {
        assert_eq!(t.name(), ot.name.as_str(), "{what}: topic name");
        if !t.name().is_empty() {
            assert!(inside(frame, t.name().as_bytes()), "{what}: name copied");
            assert_eq!(t.name().as_ptr(), ot.name.as_bytes().as_ptr(), "{what}");
        }
        assert_eq!(
            tags(t.tagged_fields()),
            owned_tags(&ot.unknown_tagged_fields),
            "{what}: topic tagged fields"
        );
        assert_eq!(t.partitions().len(), ot.partition_data.len(), "{what}");
        let partitions: Vec<_> = t.partitions().iter().collect();
        assert_eq!(partitions.len(), ot.partition_data.len(), "{what}");
        for (pv, op) in partitions.iter().zip(&ot.partition_data) {
            assert_eq!(pv.index(), op.index, "{what}: partition index");
            assert_eq!(
                tags(pv.tagged_fields()),
                owned_tags(&op.unknown_tagged_fields),
                "{what}: partition tagged fields"
            );
            match (pv.records(), &op.records) {
                (None, None) => assert_eq!(pv.records_bytes(frame), None),
                (Some(r), Some(or)) => {
                    assert_eq!(r, &or[..], "{what}: records");
                    if !r.is_empty() {
                        // Zero copy: the view's slice, the owned decode's and the shared
                        // `Bytes` are the same bytes of the frame.
                        assert!(inside(frame, r), "{what}: records copied");
                        assert_eq!(r.as_ptr(), or.as_ptr(), "{what}: records pointer");
                        let shared = pv.records_bytes(frame).unwrap();
                        assert_eq!(shared.as_ptr(), r.as_ptr(), "{what}: records_bytes copied");
                        assert_eq!(shared, *or);
                    }
                }
                (a, b) => panic!("{what}: records {a:?} against {b:?}"),
            }
        }
    }
    assert_eq!(p.trailing(), &trailing[..], "{what}: trailing bytes");
    assert_eq!(p.to_message(frame), *body, "{what}: to_message");

    // The body alone parses to the same view.
    let mut r = Reader::new(frame);
    RequestHeader::decode(&mut r, h.header_version()).unwrap();
    let alone = ProduceRequestView::parse_body(&frame[r.position()..], p.version()).unwrap();
    assert_eq!(alone, p, "{what}: parse_body");
}

// ---------------------------------------------------------------------------------------------
// Differential tests

#[test]
fn api_key_range_is_the_generated_codec_range() {
    assert_eq!(ApiKey::Produce.versions(), ProduceRequest::VERSIONS);
}

#[test]
fn golden_produce_frames_read_the_same_as_decode_request() {
    let mut trailing = 0;
    for (name, frame) in golden_produce_frames() {
        assert_eq!(agree(&frame, &name), Outcome::Accepted, "{name}");
        let (_, p) = ProduceRequestView::parse(&frame).unwrap();
        // Real clients send real batches: the record sets are there and non-empty.
        let records: usize = p
            .topics()
            .iter()
            .flat_map(|t| t.partitions())
            .map(|p| p.records().map_or(0, <[u8]>::len))
            .sum();
        assert!(records > 0, "{name}: no records");
        trailing += p.trailing().len();
    }
    // Not a requirement, only printed: whether any client appends bytes after the body.
    println!("golden Produce frames: {trailing} trailing bytes in all");
}

#[test]
fn generated_produce_requests_of_every_version_read_the_same_as_decode_request() {
    #[derive(Default, Debug)]
    struct Seen {
        versions: Vec<i16>,
        several_topics: bool,
        several_partitions: bool,
        no_topics: bool,
        null_records: bool,
        transactional_id: bool,
        body_tags: bool,
        nested_tags: bool,
        header_tags: bool,
        null_client_id: bool,
        trailing: bool,
    }
    let mut seen = Seen::default();
    for (name, frame) in generated_frames() {
        assert_eq!(agree(&frame, &name), Outcome::Accepted, "{name}");
        let (h, p) = ProduceRequestView::parse(&frame).unwrap();
        if !seen.versions.contains(&p.version()) {
            seen.versions.push(p.version());
        }
        seen.several_topics |= p.topics().len() > 1;
        seen.no_topics |= p.topics().is_empty();
        seen.transactional_id |= p.transactional_id().is_some();
        seen.body_tags |= !p.tagged_fields().is_empty();
        seen.header_tags |= !h.tagged_fields().is_empty();
        seen.null_client_id |= h.client_id().is_none();
        seen.trailing |= !p.trailing().is_empty();
        for t in p.topics() {
            seen.several_partitions |= t.partitions().len() > 1;
            seen.nested_tags |= !t.tagged_fields().is_empty();
            for part in t.partitions() {
                seen.null_records |= part.records().is_none();
                seen.nested_tags |= !part.tagged_fields().is_empty();
            }
        }
    }
    assert_eq!(seen.versions, (0..=13).collect::<Vec<i16>>());
    assert!(
        seen.several_topics
            && seen.several_partitions
            && seen.no_topics
            && seen.null_records
            && seen.transactional_id
            && seen.body_tags
            && seen.nested_tags
            && seen.header_tags
            && seen.null_client_id
            && seen.trailing,
        "the generated requests miss a case: {seen:?}"
    );
}

#[test]
fn every_truncation_is_rejected_as_decode_request_rejects_it() {
    let mut frames = golden_produce_frames();
    frames.extend(generated_frames());
    let mut cuts = 0;
    for (name, frame) in &frames {
        let full_trailing = ProduceRequestView::parse(frame).unwrap().1.trailing().len();
        for cut in 0..frame.len() {
            let what = format!("{name} cut at {cut}/{}", frame.len());
            let outcome = agree(&frame.slice(..cut), &what);
            // Only trailing bytes may go without the frame becoming invalid.
            if cut < frame.len() - full_trailing {
                assert_eq!(outcome, Outcome::Rejected, "{what}");
            }
            cuts += 1;
        }
    }
    assert!(cuts > 40_000, "{cuts} truncations");
}

#[test]
fn random_mutations_of_golden_frames_are_read_as_decode_request_reads_them() {
    const PER_FRAME: usize = 3000;
    let mut rng = Rng(0x5eed_0f7e_57ab);
    let mut counts = [0usize; 3];
    for (name, frame) in golden_produce_frames() {
        for n in 0..PER_FRAME {
            let mut data = frame.to_vec();
            for _ in 0..1 + rng.below(3) {
                mutate(&mut data, &mut rng);
            }
            let outcome = agree(&Bytes::from(data), &format!("{name} mutation {n}"));
            counts[outcome as usize] += 1;
        }
    }
    let [accepted, other_api, rejected] = counts;
    println!("mutations: {accepted} accepted, {other_api} other apis, {rejected} rejected");
    // Both sides of the comparison are exercised.
    let total = 20 * PER_FRAME;
    assert!(accepted > total / 20, "{counts:?}");
    assert!(rejected > total / 5, "{counts:?}");
    assert!(other_api > 0, "{counts:?}");
}

/// One byte-level mutation, as a fuzzer does it: bit flips, edge values in bytes and in
/// big-endian words (where lengths and counts are), varint-like bytes, insertions, deletions,
/// truncation.
fn mutate(data: &mut Vec<u8>, rng: &mut Rng) {
    let len = data.len();
    if len < 4 {
        data.push(rng.next() as u8);
        return;
    }
    let i = rng.below(len);
    match rng.below(9) {
        0 => data[i] ^= 1 << rng.below(8),
        1 => data[i] = [0x00, 0x01, 0x7f, 0x80, 0xff, 0xc3][rng.below(6)],
        2 => data[i] = rng.next() as u8,
        3 => {
            let at = rng.below(len - 3);
            let v = [-1i32, -2, 0, 1, 0x7fff, i32::MAX, i32::MIN][rng.below(7)];
            data[at..at + 4].copy_from_slice(&v.to_be_bytes());
        }
        4 => {
            let at = rng.below(len - 1);
            let v = [-1i16, -2, 0, 1, i16::MAX][rng.below(5)];
            data[at..at + 2].copy_from_slice(&v.to_be_bytes());
        }
        5 => data.insert(i, rng.next() as u8),
        6 => {
            data.remove(i);
        }
        7 => data.truncate(i),
        // The header's first bytes: api key and version.
        _ => data[rng.below(4)] = [0, 1, 3, 9, 11, 12, 0xff][rng.below(7)],
    }
}

// ---------------------------------------------------------------------------------------------
// Hand-made frames

/// A Produce request laid out by hand, one entry per field, so that a test can replace one.
#[derive(Clone)]
struct Layout(Vec<(&'static str, Vec<u8>)>);

impl Layout {
    /// Version 3 (classic encodings): client id "c", no transactional id, one topic "t" with
    /// one partition whose records are "abc".
    fn classic() -> Self {
        Self(vec![
            ("api key", 0i16.to_be_bytes().to_vec()),
            ("version", 3i16.to_be_bytes().to_vec()),
            ("correlation id", 7i32.to_be_bytes().to_vec()),
            ("client id", vec![0, 1, b'c']),
            ("transactional id", vec![0xff, 0xff]),
            ("acks", (-1i16).to_be_bytes().to_vec()),
            ("timeout", 1500i32.to_be_bytes().to_vec()),
            ("topic count", 1i32.to_be_bytes().to_vec()),
            ("name", vec![0, 1, b't']),
            ("partition count", 1i32.to_be_bytes().to_vec()),
            ("index", 2i32.to_be_bytes().to_vec()),
            ("records", vec![0, 0, 0, 3, b'a', b'b', b'c']),
        ])
    }

    /// The same request in version 9 (compact encodings, tagged-field sections).
    fn flexible() -> Self {
        Self(vec![
            ("api key", 0i16.to_be_bytes().to_vec()),
            ("version", 9i16.to_be_bytes().to_vec()),
            ("correlation id", 7i32.to_be_bytes().to_vec()),
            ("client id", vec![0, 1, b'c']),
            ("header tags", vec![0]),
            ("transactional id", vec![0]),
            ("acks", (-1i16).to_be_bytes().to_vec()),
            ("timeout", 1500i32.to_be_bytes().to_vec()),
            ("topic count", vec![2]),
            ("name", vec![2, b't']),
            ("partition count", vec![2]),
            ("index", 2i32.to_be_bytes().to_vec()),
            ("records", vec![4, b'a', b'b', b'c']),
            ("partition tags", vec![0]),
            ("topic tags", vec![0]),
            ("body tags", vec![0]),
        ])
    }

    fn with(mut self, field: &str, bytes: &[u8]) -> Self {
        let slot = self.0.iter_mut().find(|(n, _)| *n == field).unwrap();
        slot.1 = bytes.to_vec();
        self
    }

    fn frame(&self) -> Bytes {
        Bytes::from(
            self.0
                .iter()
                .flat_map(|(_, b)| b.clone())
                .collect::<Vec<u8>>(),
        )
    }
}

/// The request both layouts spell.
fn layout_request() -> ProduceRequest {
    ProduceRequest {
        transactional_id: None,
        acks: -1,
        timeout_ms: 1500,
        topic_data: vec![TopicProduceData {
            name: KStr::from_static("t"),
            topic_id: Uuid::ZERO,
            partition_data: vec![PartitionProduceData {
                index: 2,
                records: Some(Bytes::from_static(b"abc")),
                unknown_tagged_fields: UnknownTags::new(),
            }],
            unknown_tagged_fields: UnknownTags::new(),
        }],
        unknown_tagged_fields: UnknownTags::new(),
    }
}

#[test]
fn hand_made_layouts_are_the_encoding_of_their_request() {
    for (layout, version) in [(Layout::classic(), 3), (Layout::flexible(), 9)] {
        let header = RequestHeader {
            request_api_key: 0,
            request_api_version: version,
            correlation_id: 7,
            client_id: Some(KStr::from_static("c")),
            unknown_tagged_fields: UnknownTags::new(),
        };
        let encoded =
            frame::encode_request(&header, &RequestBody::Produce(layout_request())).unwrap();
        let frame = layout.frame();
        assert_eq!(encoded.into_bytes(), frame, "v{version}");
        assert_eq!(agree(&frame, "layout"), Outcome::Accepted);
        let (h, p) = ProduceRequestView::parse(&frame).unwrap();
        assert_eq!((h.correlation_id(), h.client_id()), (7, Some("c")));
        let t = p.topics().iter().next().unwrap();
        let part = t.partitions().iter().next().unwrap();
        assert_eq!(
            (t.name(), part.index(), part.records()),
            ("t", 2, Some(&b"abc"[..]))
        );
    }
}

/// What a test expects of an error.
type Check = Box<dyn Fn(&DecodeError) -> bool>;

/// The view and `decode_request` both reject `frame`, with the same error, whose innermost
/// part `expect` accepts.
#[track_caller]
fn rejected(frame: &Bytes, what: &str, expect: impl Fn(&DecodeError) -> bool) {
    assert_eq!(agree(frame, what), Outcome::Rejected, "{what}");
    let e = ProduceRequestView::parse(frame).unwrap_err();
    assert!(expect(e.root()), "{what}: unexpected error {e:?}");
}

fn is_invalid(field: &'static str, reason: &'static str) -> impl Fn(&DecodeError) -> bool {
    move |e| matches!(e, DecodeError::Invalid { field: f, reason: r } if *f == field && *r == reason)
}

fn is_too_large(field: &'static str) -> impl Fn(&DecodeError) -> bool {
    move |e| matches!(e, DecodeError::TooLarge { field: f, .. } if *f == field)
}

fn is_null(field: &'static str) -> impl Fn(&DecodeError) -> bool {
    move |e| matches!(e, DecodeError::NullNotAllowed { field: f, .. } if *f == field)
}

fn is_truncated(field: &'static str) -> impl Fn(&DecodeError) -> bool {
    move |e| matches!(e, DecodeError::Truncated { field: f, .. } if *f == field)
}

#[test]
fn negative_huge_and_null_counts_and_lengths_are_typed_errors() {
    let c = Layout::classic;
    let topics = "ProduceRequest.TopicData";
    let partitions = "TopicProduceData.PartitionData";
    let name = "TopicProduceData.Name";
    let records = "PartitionProduceData.Records";
    let cases: Vec<(&str, Layout, Check)> = vec![
        (
            "topic count -2",
            c().with("topic count", &(-2i32).to_be_bytes()),
            Box::new(is_invalid(topics, "negative array count")),
        ),
        (
            "topic count -1",
            c().with("topic count", &(-1i32).to_be_bytes()),
            Box::new(is_null(topics)),
        ),
        (
            "topic count i32::MAX",
            c().with("topic count", &i32::MAX.to_be_bytes()),
            Box::new(is_too_large(topics)),
        ),
        (
            "topic count i32::MIN",
            c().with("topic count", &i32::MIN.to_be_bytes()),
            Box::new(is_invalid(topics, "negative array count")),
        ),
        (
            "two topics announced, one present",
            c().with("topic count", &2i32.to_be_bytes()),
            Box::new(is_truncated(name)),
        ),
        (
            "partition count -7",
            c().with("partition count", &(-7i32).to_be_bytes()),
            Box::new(is_invalid(partitions, "negative array count")),
        ),
        (
            "partition count 12",
            c().with("partition count", &12i32.to_be_bytes()),
            Box::new(is_too_large(partitions)),
        ),
        (
            "name length -2",
            c().with("name", &[0xff, 0xfe, b't']),
            Box::new(is_invalid(name, "negative length")),
        ),
        (
            "null name",
            c().with("name", &[0xff, 0xff]),
            Box::new(is_null(name)),
        ),
        (
            "name length i16::MAX",
            c().with("name", &[0x7f, 0xff, b't']),
            Box::new(is_too_large(name)),
        ),
        (
            "records length -2",
            c().with("records", &(-2i32).to_be_bytes()),
            Box::new(is_invalid(records, "negative length")),
        ),
        (
            "records length i32::MAX",
            c().with("records", &[0x7f, 0xff, 0xff, 0xff, 1, 2, 3]),
            Box::new(is_too_large(records)),
        ),
        (
            "records one byte short",
            c().with("records", &[0, 0, 0, 4, b'a', b'b', b'c']),
            Box::new(is_too_large(records)),
        ),
        (
            "transactional id length -3",
            c().with("transactional id", &[0xff, 0xfd]),
            Box::new(is_invalid(
                "ProduceRequest.TransactionalId",
                "negative length",
            )),
        ),
        (
            "client id length -2",
            c().with("client id", &[0xff, 0xfe]),
            Box::new(is_invalid("RequestHeader.ClientId", "negative length")),
        ),
        (
            "client id past the end",
            c().with("client id", &[0x10, 0x00, b'c']),
            Box::new(is_too_large("RequestHeader.ClientId")),
        ),
    ];
    for (what, layout, expect) in cases {
        rejected(&layout.frame(), what, expect);
    }
    // Null records are allowed (and kept null).
    let frame = c().with("records", &(-1i32).to_be_bytes()).frame();
    assert_eq!(agree(&frame, "null records"), Outcome::Accepted);
    let (_, p) = ProduceRequestView::parse(&frame).unwrap();
    let part = p
        .topics()
        .iter()
        .next()
        .unwrap()
        .partitions()
        .iter()
        .next()
        .unwrap();
    assert_eq!(part.records(), None);
}

#[test]
fn bad_varints_and_compact_lengths_are_typed_errors() {
    let f = Layout::flexible;
    let topics = "ProduceRequest.TopicData";
    let records = "PartitionProduceData.Records";
    let varint_too_long = "varint is longer than its type allows";
    let cases: Vec<(&str, Layout, Check)> = vec![
        (
            "topic count: six-byte varint",
            f().with("topic count", &[0x80, 0x80, 0x80, 0x80, 0x80, 0x01]),
            Box::new(is_invalid(topics, varint_too_long)),
        ),
        (
            "topic count: five bytes over u32",
            f().with("topic count", &[0xff, 0xff, 0xff, 0xff, 0x1f]),
            Box::new(is_invalid(topics, varint_too_long)),
        ),
        (
            "topic count u32::MAX - 1",
            f().with("topic count", &[0xff, 0xff, 0xff, 0xff, 0x0f]),
            Box::new(is_too_large(topics)),
        ),
        (
            "null topic array",
            f().with("topic count", &[0]),
            Box::new(is_null(topics)),
        ),
        (
            "records: huge compact length",
            f().with("records", &[0xff, 0xff, 0xff, 0xff, 0x07, b'a']),
            Box::new(is_too_large(records)),
        ),
        (
            "records: varint cut by the end of the frame",
            Layout(f().0.into_iter().take(13).collect()).with("records", &[0x80]),
            Box::new(is_truncated(records)),
        ),
        (
            "transactional id: six-byte varint",
            f().with("transactional id", &[0x81, 0x80, 0x80, 0x80, 0x80, 0x00]),
            Box::new(is_invalid(
                "ProduceRequest.TransactionalId",
                varint_too_long,
            )),
        ),
    ];
    for (what, layout, expect) in cases {
        rejected(&layout.frame(), what, expect);
    }
    // Over-long but in-range varints (a zero padded with continuation bytes) are accepted by
    // both, as Kafka's reader accepts them.
    let frame = f().with("body tags", &[0x80, 0x00]).frame();
    assert_eq!(agree(&frame, "padded varint"), Outcome::Accepted);
}

#[test]
fn invalid_utf8_is_a_typed_error() {
    let bad = "string is not valid UTF-8";
    let cases = [
        (
            "classic topic name",
            Layout::classic().with("name", &[0, 2, 0xc3, 0x28]),
            "TopicProduceData.Name",
        ),
        (
            "compact topic name",
            Layout::flexible().with("name", &[3, 0xc3, 0x28]),
            "TopicProduceData.Name",
        ),
        (
            "client id",
            Layout::classic().with("client id", &[0, 1, 0xff]),
            "RequestHeader.ClientId",
        ),
        (
            "transactional id",
            Layout::flexible().with("transactional id", &[2, 0x80]),
            "ProduceRequest.TransactionalId",
        ),
        (
            "surrogate in a topic name",
            Layout::classic().with("name", &[0, 3, 0xed, 0xa0, 0x80]),
            "TopicProduceData.Name",
        ),
    ];
    for (what, layout, field) in cases {
        rejected(&layout.frame(), what, is_invalid(field, bad));
    }
    // Multi-byte UTF-8 is fine.
    let frame = Layout::flexible().with("name", &[3, 0xc3, 0xa9]).frame();
    assert_eq!(agree(&frame, "é"), Outcome::Accepted);
    let (_, p) = ProduceRequestView::parse(&frame).unwrap();
    assert_eq!(p.topics().iter().next().unwrap().name(), "é");
}

#[test]
fn tagged_field_sections_are_validated_and_unknown_tags_kept() {
    let f = Layout::flexible;
    let body = "ProduceRequest._tagged_fields";
    let order = "tagged fields out of order or repeated";
    let cases: Vec<(&str, Layout, Check)> = vec![
        (
            "tags out of order",
            f().with("body tags", &[2, 5, 0, 3, 0]),
            Box::new(is_invalid(body, order)),
        ),
        (
            "tag repeated",
            f().with("topic tags", &[2, 3, 0, 3, 0]),
            Box::new(is_invalid("TopicProduceData._tagged_fields", order)),
        ),
        (
            "value past the end",
            f().with("body tags", &[1, 5, 10, 1]),
            Box::new(is_too_large(body)),
        ),
        (
            "count past the end",
            f().with("body tags", &[0x7f]),
            Box::new(is_too_large(body)),
        ),
        (
            "header: tags out of order",
            f().with("header tags", &[2, 9, 0, 1, 0]),
            Box::new(is_invalid("RequestHeader._tagged_fields", order)),
        ),
        (
            "partition: section cut short",
            f().with("partition tags", &[1, 4, 9]),
            Box::new(is_too_large("PartitionProduceData._tagged_fields")),
        ),
    ];
    for (what, layout, expect) in cases {
        rejected(&layout.frame(), what, expect);
    }

    // Well-formed unknown tags at every level are skipped by the fields and kept as they are.
    let frame = f()
        .with("header tags", &[1, 0, 2, 0xaa, 0xbb])
        .with("partition tags", &[1, 0x80, 0x01, 0])
        .with("topic tags", &[1, 4, 1, 0x11])
        .with("body tags", &[2, 3, 1, 0xaa, 9, 0])
        .frame();
    assert_eq!(agree(&frame, "unknown tags"), Outcome::Accepted);
    let (h, p) = ProduceRequestView::parse(&frame).unwrap();
    assert_eq!(tags(h.tagged_fields()), vec![(0, &[0xaa, 0xbb][..])]);
    assert_eq!(
        tags(p.tagged_fields()),
        vec![(3, &[0xaa][..]), (9, &[][..])]
    );
    let t = p.topics().iter().next().unwrap();
    assert_eq!(tags(t.tagged_fields()), vec![(4, &[0x11][..])]);
    let part = t.partitions().iter().next().unwrap();
    assert_eq!(tags(part.tagged_fields()), vec![(128, &[][..])]);
    assert_eq!(part.records(), Some(&b"abc"[..]));
}

#[test]
fn other_apis_unknown_keys_and_versions_are_rejected() {
    // A Fetch request that decode_request accepts.
    let header = RequestHeader {
        request_api_key: ApiKey::Fetch as i16,
        request_api_version: 12,
        correlation_id: 1,
        client_id: Some(KStr::from_static("c")),
        unknown_tagged_fields: UnknownTags::new(),
    };
    let fetch = frame::encode_request(&header, &RequestBody::Fetch(Box::default()))
        .unwrap()
        .into_bytes();
    assert_eq!(agree(&fetch, "fetch"), Outcome::OtherApi);
    let e = ProduceRequestView::parse(&fetch).unwrap_err();
    assert_eq!(
        e.to_string(),
        "api key 1 (version 12) where Produce (api key 0) was expected"
    );

    // The produce layout under another known key: whatever decode_request makes of it, the
    // view names the key.
    let other = Layout::classic()
        .with("api key", &1i16.to_be_bytes())
        .frame();
    assert!(matches!(
        ProduceRequestView::parse(&other),
        Err(DecodeError::UnexpectedApiKey {
            api_key: 1,
            version: 3,
            ..
        })
    ));

    let unknown = Layout::classic()
        .with("api key", &999i16.to_be_bytes())
        .frame();
    rejected(&unknown, "api key 999", |e| {
        *e == DecodeError::UnknownApiKey { api_key: 999 }
    });

    for version in [-1i16, 14, i16::MAX] {
        let frame = Layout::classic()
            .with("version", &version.to_be_bytes())
            .frame();
        rejected(&frame, "unsupported version", |e| {
            *e == DecodeError::UnsupportedVersion {
                message: "Produce",
                api_key: 0,
                version,
            }
        });
        assert_eq!(
            ProduceRequestView::parse_body(&[0; 16], version),
            Err(DecodeError::UnsupportedVersion {
                message: "Produce",
                api_key: 0,
                version
            })
        );
    }

    // Shorter than the fixed prefix.
    for len in 0..8 {
        let frame = Layout::classic().frame().slice(..len);
        assert_eq!(agree(&frame, "prefix"), Outcome::Rejected);
    }
}

#[test]
fn shared_bytes_point_into_the_frame_and_a_foreign_frame_gets_a_copy() {
    let frame = Layout::flexible().frame();
    let (_, p) = ProduceRequestView::parse(&frame).unwrap();
    let part = p
        .topics()
        .iter()
        .next()
        .unwrap()
        .partitions()
        .iter()
        .next()
        .unwrap();
    let records = part.records().unwrap();

    let shared = part.records_bytes(&frame).unwrap();
    assert_eq!(shared.as_ptr(), records.as_ptr());

    // A different `Bytes` with the same contents: no panic, a copy with the right bytes.
    let other = Bytes::copy_from_slice(&frame);
    let copied = part.records_bytes(&other).unwrap();
    assert_eq!(copied, Bytes::from_static(b"abc"));
    assert_ne!(copied.as_ptr(), records.as_ptr());
    // Part of the frame only: the same.
    let head = frame.slice(..4);
    assert_eq!(
        part.records_bytes(&head).unwrap(),
        Bytes::from_static(b"abc")
    );
    assert_eq!(p.to_message(&other), layout_request());
    assert_eq!(kafka_protocol::view::share(&frame, &[]), Bytes::new());
}
