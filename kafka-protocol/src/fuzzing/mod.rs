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

mod mutator;
mod records;
mod seeds;

pub use mutator::Mutator;
pub use records::record_batch;
pub use seeds::{SplitMix, seeds, seeds_from_frame};

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
