//! Codec benchmarks: Produce request and Fetch response with 1 MiB of records, decode and
//! encode; header-level decode across payload sizes; batch CRC check and record iteration. With `--features compare`, the published
//! kafka-protocol crate (kafka-protocol-rs) runs on the same inputs in the same groups.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group};
use kafka_bench::{fetch_frame, fetch_response, peak_rss_kib, produce_frame, records};
use kafka_protocol::{ApiKey, frame};

const MIB: usize = 1 << 20;

fn produce(c: &mut Criterion) {
    let mut g = c.benchmark_group("produce_request_1MiB");
    let frame_bytes = produce_frame(records(MIB));
    g.throughput(Throughput::Bytes(frame_bytes.len() as u64));
    g.bench_function("ours/decode", |b| {
        b.iter(|| frame::decode_request(black_box(&frame_bytes)).map(|r| r.trailing.len()))
    });
    let req = frame::decode_request(&frame_bytes).ok();
    g.bench_function("ours/encode", |b| {
        b.iter(|| {
            req.as_ref()
                .map(|r| frame::encode_request(&r.header, &r.body).map(|w| w.into_chunks().len()))
        })
    });
    #[cfg(feature = "compare")]
    compare::produce(&mut g, &frame_bytes);
    g.finish();
}

fn fetch(c: &mut Criterion) {
    let mut g = c.benchmark_group("fetch_response_1MiB");
    let frame_bytes = fetch_frame(records(MIB));
    g.throughput(Throughput::Bytes(frame_bytes.len() as u64));
    g.bench_function("ours/decode", |b| {
        b.iter(|| {
            frame::decode_response(black_box(&frame_bytes), ApiKey::Fetch, 12)
                .map(|r| r.trailing.len())
        })
    });
    let (h, body) = fetch_response(records(MIB));
    g.bench_function("ours/encode", |b| {
        b.iter(|| frame::encode_response(&h, black_box(&body), 12).map(|w| w.into_chunks().len()))
    });
    #[cfg(feature = "compare")]
    compare::fetch(&mut g, &frame_bytes);
    g.finish();
}

/// Decode time must not depend on the record-set size (records are not copied).
fn payload_independence(c: &mut Criterion) {
    let mut g = c.benchmark_group("produce_decode_by_payload");
    for size in [1 << 10, 64 << 10, MIB] {
        let f = produce_frame(records(size));
        g.bench_with_input(BenchmarkId::new("ours", size), &f, |b, f| {
            b.iter(|| frame::decode_request(black_box(f)).map(|r| r.trailing.len()))
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
    use kprs::messages::{FetchResponse, ProduceRequest, RequestHeader, ResponseHeader};
    use kprs::protocol::{Decodable, Encodable};

    fn decode_produce(f: &Bytes) -> Option<(RequestHeader, ProduceRequest)> {
        let mut b = f.clone();
        let h = RequestHeader::decode(&mut b, 2).ok()?;
        let r = ProduceRequest::decode(&mut b, 9).ok()?;
        Some((h, r))
    }

    pub(super) fn produce(g: &mut BenchmarkGroup<'_, WallTime>, f: &Bytes) {
        g.bench_function("kafka-protocol-rs/decode", |b| {
            b.iter(|| decode_produce(black_box(f)).map(|(_, r)| r.acks))
        });
        let decoded = decode_produce(f);
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
            b.iter(|| decode_produce(black_box(f)).map(|(_, r)| r.acks))
        });
    }

    fn decode_fetch(f: &Bytes) -> Option<FetchResponse> {
        let mut b = f.clone();
        ResponseHeader::decode(&mut b, 1).ok()?;
        let r = FetchResponse::decode(&mut b, 12).ok()?;
        (!b.has_remaining()).then_some(r)
    }

    pub(super) fn fetch(g: &mut BenchmarkGroup<'_, WallTime>, f: &Bytes) {
        g.bench_function("kafka-protocol-rs/decode", |b| {
            b.iter(|| decode_fetch(black_box(f)).map(|r| r.responses.len()))
        });
        let decoded = decode_fetch(f);
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
