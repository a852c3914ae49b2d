//! Seed inputs from valid encodings, and the deterministic random source they use.

use super::*;

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
pub(super) fn produce_seeds() -> Vec<Vec<u8>> {
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

pub(super) fn message_seeds(requests: bool) -> Vec<Vec<u8>> {
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

pub(super) fn request_seed(
    key: ApiKey,
    version: i16,
    case: u64,
    u: &mut Unstructured<'_>,
) -> Option<Vec<u8>> {
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

pub(super) fn response_seed(
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
pub(super) fn name_key_version(name: &str) -> Option<(ApiKey, i16)> {
    let mut parts = name.split(['-', '.', '_']);
    let key_name = parts.next()?;
    let key = ApiKey::ALL
        .iter()
        .copied()
        .find(|k| k.name().eq_ignore_ascii_case(key_name))?;
    let version = parts.find_map(|p| p.strip_prefix('v')?.parse::<i16>().ok())?;
    key.versions().contains(version).then_some((key, version))
}

pub(super) const CODECS: [Compression; 5] = [
    Compression::None,
    Compression::Gzip,
    Compression::Snappy,
    Compression::Lz4,
    Compression::Zstd,
];

pub(super) fn record_seeds() -> Vec<Vec<u8>> {
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

pub(super) fn varint_seeds() -> Vec<Vec<u8>> {
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
