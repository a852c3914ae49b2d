//! Codec benchmarks: Produce request and Fetch response with 1 MiB of records, decode and
//! encode; header-level decode across payload sizes; batch CRC check and record iteration.
//! With `--features compare`, the published kafka-protocol crate (kafka-protocol-rs) runs on
//! the same inputs in the same groups, doing the same work:
//!
//! - `decode`: the whole frame as a server or client reads it: the header (its version from
//!   the api key and version), then the body through the enum of every request or response
//!   (ours: `frame::decode_request` / `decode_response`; theirs: `RequestKind::decode` /
//!   `ResponseKind::decode`), trailing bytes checked.
//! - `decode_typed`: header and body with the message types named by the caller (no enum).
//! - `decode_visit` (Produce): `decode`, then a read of every field a Produce handler looks
//!   at (see [`Visit`]).
//! - `ours/view` (Produce): the same read through the borrowing view
//!   (`kafka_protocol::view::ProduceRequestView`): parse and validate the frame, then walk it.
//!
//! Every decode variant takes its own handle on the frame (as a reader that owns the frame it
//! received; kafka-protocol-rs consumes a `Bytes`), returns the fully decoded message and
//! drops it and the frame handle inside the timed loop. The view borrows the frame, so it
//! takes no handle: that saving is part of what it is for.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group};
use kafka_bench::{fetch_frame, fetch_response, peak_rss_kib, produce_frame, records};
use kafka_protocol::codec::{Codec, Reader};
use kafka_protocol::messages::{FetchResponse, ProduceRequest, RequestHeader, ResponseHeader};
use kafka_protocol::view::ProduceRequestView;
use kafka_protocol::{ApiKey, Bytes, RequestBody, frame};

const MIB: usize = 1 << 20;

fn produce(c: &mut Criterion) {
    let mut g = c.benchmark_group("produce_request_1MiB");
    let frame_bytes = produce_frame(records(MIB));
    g.throughput(Throughput::Bytes(frame_bytes.len() as u64));
    g.bench_function("ours/decode", |b| {
        b.iter(|| {
            let f = black_box(&frame_bytes).clone();
            frame::decode_request(&f).map(|r| r.trailing.len())
        })
    });
    g.bench_function("ours/decode_typed", |b| {
        b.iter(|| {
            let f = black_box(&frame_bytes).clone();
            decode_produce_typed(&f).map(|(_, r)| r.acks)
        })
    });
    g.bench_function("floor/decode", |b| {
        b.iter(|| floor(black_box(&frame_bytes), 3))
    });
    // The three visits read the same values.
    let visited = frame::decode_request(&frame_bytes)
        .ok()
        .and_then(|r| visit_produce(&r));
    if visited.is_none() || visit_produce_view(&frame_bytes) != visited {
        eprintln!("produce_request_1MiB: the view and the decode visit different values");
    }
    g.bench_function("ours/decode_visit", |b| {
        b.iter(|| {
            let f = black_box(&frame_bytes).clone();
            frame::decode_request(&f)
                .ok()
                .and_then(|r| visit_produce(&r))
        })
    });
    g.bench_function("ours/view", |b| {
        b.iter(|| visit_produce_view(black_box(&frame_bytes)))
    });
    let req = frame::decode_request(&frame_bytes).ok();
    g.bench_function("ours/encode", |b| {
        b.iter(|| {
            req.as_ref()
                .map(|r| frame::encode_request(&r.header, &r.body).map(|w| w.into_chunks().len()))
        })
    });
    #[cfg(feature = "compare")]
    compare::produce(&mut g, &frame_bytes, visited);
    g.finish();
}

fn fetch(c: &mut Criterion) {
    let mut g = c.benchmark_group("fetch_response_1MiB");
    let frame_bytes = fetch_frame(records(MIB));
    g.throughput(Throughput::Bytes(frame_bytes.len() as u64));
    g.bench_function("ours/decode", |b| {
        b.iter(|| {
            let f = black_box(&frame_bytes).clone();
            frame::decode_response(&f, ApiKey::Fetch, 12).map(|r| r.trailing.len())
        })
    });
    g.bench_function("ours/decode_typed", |b| {
        b.iter(|| {
            let f = black_box(&frame_bytes).clone();
            decode_fetch_typed(&f).map(|(_, r)| r.responses.len())
        })
    });
    g.bench_function("floor/decode", |b| {
        b.iter(|| floor(black_box(&frame_bytes), 2))
    });
    let (h, body) = fetch_response(records(MIB));
    g.bench_function("ours/encode", |b| {
        b.iter(|| frame::encode_response(&h, black_box(&body), 12).map(|w| w.into_chunks().len()))
    });
    #[cfg(feature = "compare")]
    compare::fetch(&mut g, &frame_bytes);
    g.finish();
}

/// A sum of every field a Produce handler reads, each through `black_box` so that none can be
/// skipped: correlation id, client id length, transactional id length, acks, timeout, then per
/// topic the name's length and per partition the index and the record set's length.
#[derive(Default)]
struct Visit(usize);

impl Visit {
    fn add(&mut self, v: usize) {
        self.0 = self.0.wrapping_add(black_box(v));
    }

    fn head(correlation_id: i32, client_id: usize, txn_id: usize, acks: i16, timeout: i32) -> Self {
        let mut v = Self::default();
        v.add(correlation_id as usize);
        v.add(client_id);
        v.add(txn_id);
        v.add(acks as usize);
        v.add(timeout as usize);
        v
    }
}

/// [`Visit`] on our owned decode.
fn visit_produce(r: &frame::Request) -> Option<usize> {
    let RequestBody::Produce(p) = &r.body else {
        return None;
    };
    let mut v = Visit::head(
        r.header.correlation_id,
        r.header.client_id.as_ref().map_or(0, |c| c.len()),
        p.transactional_id.as_ref().map_or(0, |t| t.len()),
        p.acks,
        p.timeout_ms,
    );
    for t in &p.topic_data {
        v.add(t.name.len());
        for part in &t.partition_data {
            v.add(part.index as usize);
            v.add(part.records.as_ref().map_or(0, |r| r.len()));
        }
    }
    Some(v.0)
}

/// [`Visit`] through the borrowing view: parse (which validates the whole frame), then walk.
fn visit_produce_view(f: &[u8]) -> Option<usize> {
    let (h, p) = ProduceRequestView::parse(f).ok()?;
    let mut v = Visit::head(
        h.correlation_id(),
        h.client_id().map_or(0, str::len),
        p.transactional_id().map_or(0, str::len),
        p.acks(),
        p.timeout_ms(),
    );
    for t in p.topics() {
        v.add(t.name().len());
        for part in t.partitions() {
            v.add(part.index() as usize);
            v.add(part.records().map_or(0, <[u8]>::len));
        }
    }
    Some(v.0)
}

/// Header and Produce v9 body, the types named by the caller.
fn decode_produce_typed(f: &Bytes) -> Option<(RequestHeader, ProduceRequest)> {
    let mut r = Reader::new(f);
    let h = RequestHeader::decode(&mut r, 2).ok()?;
    let body = ProduceRequest::decode(&mut r, 9).ok()?;
    Some((h, body))
}

/// Header and Fetch v12 body, the types named by the caller; nothing may follow.
fn decode_fetch_typed(f: &Bytes) -> Option<(ResponseHeader, FetchResponse)> {
    let mut r = Reader::new(f);
    let h = ResponseHeader::decode(&mut r, 1).ok()?;
    let body = FetchResponse::decode(&mut r, 12).ok()?;
    (r.remaining() == 0).then_some((h, body))
}

/// What no decoder returning owned, zero-copy fields can skip on these frames, and what both
/// crates do: its own handle on the frame, one slice per string or record set (`slices`: client
/// id, topic name and records for the Produce request; topic name and records for the Fetch
/// response), each an atomic reference-count increment and later decrement, and the two
/// one-element arrays (topics, partitions), each an allocation and a free. No parsing at all:
/// a lower bound for either crate's `decode`.
fn floor(f: &Bytes, slices: usize) -> usize {
    let f = f.clone();
    let parts: [Option<Bytes>; 3] =
        std::array::from_fn(|i| (i < slices).then(|| f.slice(i * 16..i * 16 + 8)));
    // Stands for the arrays: one topic holding one partition.
    let partitions = black_box(vec![(0i32, parts)]);
    let topics = black_box(vec![(1i32, partitions)]);
    topics.len()
}

/// Decode time must not depend on the record-set size (records are not copied).
fn payload_independence(c: &mut Criterion) {
    let mut g = c.benchmark_group("produce_decode_by_payload");
    for size in [1 << 10, 64 << 10, MIB] {
        let f = produce_frame(records(size));
        g.bench_with_input(BenchmarkId::new("ours", size), &f, |b, f| {
            b.iter(|| {
                let f = black_box(f).clone();
                frame::decode_request(&f).map(|r| r.trailing.len())
            })
        });
        #[cfg(feature = "compare")]
        compare::produce_sized(&mut g, size, &f);
    }
    g.finish();
}

#[cfg(feature = "compare")]
mod compare {
    //! The same work done with kafka-protocol-rs.
    use std::hint::black_box;

    use bytes::{Buf, Bytes, BytesMut};
    use criterion::measurement::WallTime;
    use criterion::{BenchmarkGroup, BenchmarkId};
    use kprs::messages::{
        ApiKey, FetchResponse, ProduceRequest, RequestHeader, RequestKind, ResponseHeader,
        ResponseKind,
    };
    use kprs::protocol::{Decodable, Encodable};

    /// Header and Produce v9 body, the types named by the caller.
    fn decode_produce_typed(f: &Bytes) -> Option<(RequestHeader, ProduceRequest)> {
        let mut b = f.clone();
        let h = RequestHeader::decode(&mut b, 2).ok()?;
        let r = ProduceRequest::decode(&mut b, 9).ok()?;
        Some((h, r))
    }

    /// What `frame::decode_request` does: api key and version from the frame, the header in
    /// the version they imply, the body through the enum of every request.
    fn decode_request(f: &Bytes) -> Option<(RequestHeader, RequestKind, Bytes)> {
        let key = i16::from_be_bytes([*f.first()?, *f.get(1)?]);
        let version = i16::from_be_bytes([*f.get(2)?, *f.get(3)?]);
        let key = ApiKey::try_from(key).ok()?;
        let mut b = f.clone();
        let h = RequestHeader::decode(&mut b, key.request_header_version(version)).ok()?;
        let body = RequestKind::decode(key, &mut b, version).ok()?;
        Some((h, body, b))
    }

    /// [`super::Visit`] on their decode.
    fn visit_produce(h: &RequestHeader, body: &RequestKind) -> Option<usize> {
        let RequestKind::Produce(p) = body else {
            return None;
        };
        let mut v = super::Visit::head(
            h.correlation_id,
            h.client_id.as_ref().map_or(0, |c| c.len()),
            p.transactional_id.as_ref().map_or(0, |t| t.len()),
            p.acks,
            p.timeout_ms,
        );
        for t in &p.topic_data {
            v.add(t.name.len());
            for part in &t.partition_data {
                v.add(part.index as usize);
                v.add(part.records.as_ref().map_or(0, |r| r.len()));
            }
        }
        Some(v.0)
    }

    pub(super) fn produce(g: &mut BenchmarkGroup<'_, WallTime>, f: &Bytes, visited: Option<usize>) {
        if decode_request(f).and_then(|(h, body, _)| visit_produce(&h, &body)) != visited {
            eprintln!("produce_request_1MiB: kafka-protocol-rs visits different values");
        }
        g.bench_function("kafka-protocol-rs/decode", |b| {
            b.iter(|| decode_request(black_box(f)).map(|(_, _, rest)| rest.len()))
        });
        g.bench_function("kafka-protocol-rs/decode_visit", |b| {
            b.iter(|| {
                decode_request(black_box(f)).and_then(|(h, body, _)| visit_produce(&h, &body))
            })
        });
        g.bench_function("kafka-protocol-rs/decode_typed", |b| {
            b.iter(|| decode_produce_typed(black_box(f)).map(|(_, r)| r.acks))
        });
        let decoded = decode_produce_typed(f);
        g.bench_function("kafka-protocol-rs/encode", |b| {
            b.iter(|| {
                let mut out = BytesMut::new();
                if let Some((h, r)) = &decoded {
                    let _ = h.encode(&mut out, 2);
                    let _ = r.encode(&mut out, 9);
                }
                out.len()
            })
        });
    }

    pub(super) fn produce_sized(g: &mut BenchmarkGroup<'_, WallTime>, size: usize, f: &Bytes) {
        g.bench_with_input(BenchmarkId::new("kafka-protocol-rs", size), f, |b, f| {
            b.iter(|| decode_request(black_box(f)).map(|(_, _, rest)| rest.len()))
        });
    }

    /// Header and Fetch v12 body, the types named by the caller; nothing may follow.
    fn decode_fetch_typed(f: &Bytes) -> Option<FetchResponse> {
        let mut b = f.clone();
        ResponseHeader::decode(&mut b, 1).ok()?;
        let r = FetchResponse::decode(&mut b, 12).ok()?;
        (!b.has_remaining()).then_some(r)
    }

    /// What `frame::decode_response` does for a Fetch v12 answer: the header in the version
    /// the api implies, the body through the enum of every response.
    fn decode_fetch(f: &Bytes) -> Option<(ResponseHeader, ResponseKind, Bytes)> {
        let mut b = f.clone();
        let h = ResponseHeader::decode(&mut b, ApiKey::Fetch.response_header_version(12)).ok()?;
        let body = ResponseKind::decode(ApiKey::Fetch, &mut b, 12).ok()?;
        Some((h, body, b))
    }

    pub(super) fn fetch(g: &mut BenchmarkGroup<'_, WallTime>, f: &Bytes) {
        g.bench_function("kafka-protocol-rs/decode", |b| {
            b.iter(|| decode_fetch(black_box(f)).map(|(_, _, rest)| rest.len()))
        });
        g.bench_function("kafka-protocol-rs/decode_typed", |b| {
            b.iter(|| decode_fetch_typed(black_box(f)).map(|r| r.responses.len()))
        });
        let decoded = decode_fetch_typed(f);
        g.bench_function("kafka-protocol-rs/encode", |b| {
            b.iter(|| {
                let mut out = BytesMut::new();
                if let Some(r) = &decoded {
                    let _ = ResponseHeader::default().encode(&mut out, 1);
                    let _ = r.encode(&mut out, 12);
                }
                out.len()
            })
        });
    }
}

/// CRC-32C check and lazy record iteration of a 1 MiB batch of 1 KiB records.
fn batch(c: &mut Criterion) {
    use kafka_protocol::record::{RecordBatch, RecordBatchBuilder};
    let mut b = RecordBatchBuilder::new();
    let value = records(1000);
    for i in 0..1024i64 {
        if b.append(i, Some(&i.to_be_bytes()[..]), Some(&value[..]), &[])
            .is_err()
        {
            eprintln!("benchmark batch cannot be built");
            return;
        }
    }
    let Ok(bytes) = b.build() else {
        eprintln!("benchmark batch cannot be built");
        return;
    };
    let Ok(batch) = RecordBatch::from_bytes(bytes.clone()) else {
        eprintln!("benchmark batch does not parse");
        return;
    };
    let mut g = c.benchmark_group("record_batch_1MiB");
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.bench_function("ours/verify_crc", |b| {
        b.iter(|| black_box(&batch).verify_crc().is_ok())
    });
    g.bench_function("ours/iterate_records", |b| {
        b.iter(|| {
            batch.records(usize::MAX).map(|rs| {
                rs.filter_map(Result::ok)
                    .map(|r| r.value.map_or(0, |v| v.len()))
                    .sum::<usize>()
            })
        })
    });
    g.finish();
}

criterion_group!(benches, produce, fetch, payload_independence, batch);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    if let Some(kib) = peak_rss_kib() {
        println!("peak RSS: {kib} KiB");
    }
}
