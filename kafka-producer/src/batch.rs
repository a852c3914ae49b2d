//! A producer batch: records of one partition encoded into one buffer, and the completion of
//! each record.
//!
//! Lifecycle: open (appends go in) -> closed (header written; the bytes go out, possibly more
//! than once) -> done (every record's completion ran, in append order, and the memory went
//! back to the pool).

use std::fmt;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::TopicPartition;
use kafka_protocol::record::{
    BatchWriter, Compression, HeaderRef, ProducerFields, RecordBatch, RecordBatchMut,
};
use tokio::time::Instant;

use crate::delivery::{Completion, Reports};
use crate::error::ProducerError;
use crate::pool::{Allocation, BufferPool};
use crate::record::RecordMetadata;

/// Most completions a new batch reserves room for up front.
const MAX_RECORDS_HINT: usize = 64 * 1024;

/// One record's completion and what its metadata needs.
pub(crate) struct RecordEntry {
    completion: Completion,
    timestamp: i64,
    key_size: usize,
    value_size: usize,
}

enum Data {
    Open(BatchWriter),
    Closed(Bytes),
    /// Between states (only while a method runs).
    Empty,
}

/// One batch. Owned by its partition's deque, then by the sender while in flight.
pub(crate) struct ProducerBatch {
    /// Unique per producer, increasing in creation order.
    pub(crate) id: u64,
    pub(crate) tp: TopicPartition,
    data: Data,
    allocation: Option<Allocation>,
    spare: Option<BytesMut>,
    records: Vec<RecordEntry>,
    /// Bytes an open batch may grow to (`batch.size`, or the first record's size if larger).
    write_limit: usize,
    /// Encoded size of the last record appended.
    last_record_size: usize,
    pub(crate) created: Instant,
    pub(crate) last_attempt: Instant,
    pub(crate) attempts: u32,
    /// Producer id, epoch and base sequence once assigned (idempotence), at drain time.
    pub(crate) producer: Option<ProducerFields>,
    /// A retried batch waits `retry.backoff.ms` after its last attempt.
    pub(crate) retry: bool,
    /// ... unless its partition's leader moved since (KIP-951: the answer named the new
    /// leader), when it goes again at once. Cleared when it is sent.
    pub(crate) retry_now: bool,
    /// The error of the last failed attempt, for the message of a delivery timeout.
    pub(crate) last_error: Option<String>,
}

impl fmt::Debug for ProducerBatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProducerBatch")
            .field("tp", &self.tp)
            .field("records", &self.records.len())
            .field("size", &self.size())
            .field("attempts", &self.attempts)
            .field("producer", &self.producer)
            .finish_non_exhaustive()
    }
}

/// What [`ProducerBatch::try_append`] needs of a record.
pub(crate) struct AppendRecord<'a> {
    pub(crate) timestamp: i64,
    pub(crate) key: Option<&'a [u8]>,
    pub(crate) value: Option<&'a [u8]>,
    pub(crate) headers: &'a [HeaderRef<'a>],
}

impl ProducerBatch {
    pub(crate) fn new(
        tp: TopicPartition,
        buf: BytesMut,
        allocation: Allocation,
        compression: Compression,
        level: Option<i32>,
        batch_size: usize,
        now: Instant,
    ) -> Self {
        let write_limit = batch_size.max(allocation.size());
        Self {
            id: 0,
            tp,
            data: Data::Open(BatchWriter::new(buf, compression).level(level)),
            allocation: Some(allocation),
            spare: None,
            records: Vec::new(),
            write_limit,
            last_record_size: 0,
            created: now,
            last_attempt: now,
            attempts: 0,
            producer: None,
            retry: false,
            retry_now: false,
            last_error: None,
        }
    }

    /// Takes `list` (empty, from an earlier batch) for the records' completions and makes
    /// room in it for `n` (what the partition's previous batch held), so that appends do not
    /// grow the list step by step.
    #[must_use]
    pub(crate) fn with_records(mut self, mut list: Vec<RecordEntry>, n: usize) -> Self {
        list.clear();
        let n = n.min(MAX_RECORDS_HINT);
        if list.capacity() < n {
            list.reserve_exact(n);
        }
        self.records = list;
        self
    }

    /// Appends the record if it fits (the first record always does); gives the completion
    /// back if not.
    pub(crate) fn try_append(
        &mut self,
        rec: &AppendRecord<'_>,
        completion: Completion,
    ) -> Result<(), Completion> {
        let Data::Open(w) = &mut self.data else {
            return Err(completion);
        };
        if !w.is_empty() {
            let size = w.record_size(rec.timestamp, rec.key, rec.value, rec.headers);
            if w.size() + size > self.write_limit {
                return Err(completion);
            }
        }
        let before = w.size();
        if w.append(rec.timestamp, rec.key, rec.value, rec.headers)
            .is_err()
        {
            return Err(completion);
        }
        self.last_record_size = w.size() - before;
        if self.records.capacity() == 0 {
            // Room for as many records like the first as the batch can hold.
            let per_record = self.last_record_size.max(1);
            self.records
                .reserve(self.write_limit.saturating_sub(before) / per_record + 1);
        }
        self.records.push(RecordEntry {
            completion,
            timestamp: rec.timestamp,
            key_size: rec.key.map_or(0, <[u8]>::len),
            value_size: rec.value.map_or(0, <[u8]>::len),
        });
        Ok(())
    }

    /// Whether no more records fit (or the batch is closed).
    pub(crate) fn is_full(&self) -> bool {
        match &self.data {
            // Full once another record like the last one would not fit: waiting for a smaller
            // one is not worth the latency (and the sender can take the batch right away).
            Data::Open(w) => w.size() + self.last_record_size > self.write_limit,
            _ => true,
        }
    }

    pub(crate) fn record_count(&self) -> usize {
        self.records.len()
    }

    /// Bytes of the batch: uncompressed while open, on the wire once closed.
    pub(crate) fn size(&self) -> usize {
        match &self.data {
            Data::Open(w) => w.size(),
            Data::Closed(b) => b.len(),
            Data::Empty => 0,
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        matches!(self.data, Data::Closed(_))
    }

    /// Closes the batch for appends and writes its header with `producer` (idempotence), or
    /// re-stamps a closed batch whose producer fields changed (epoch bump). Returns the bytes
    /// to send.
    pub(crate) fn close(&mut self, producer: ProducerFields) -> Result<Bytes, ProducerError> {
        let data = std::mem::replace(&mut self.data, Data::Empty);
        let bytes = match data {
            Data::Open(w) => {
                let (out, spare) = w
                    .finish(producer)
                    .map_err(|e| ProducerError::Serialization(e.to_string()))?;
                self.spare = spare;
                out.freeze()
            }
            Data::Closed(b) if self.producer == Some(producer) => b,
            Data::Closed(b) => {
                // Stamp the new producer fields in place when nothing else holds the bytes,
                // else on a copy.
                let mut m = b.try_into_mut().unwrap_or_else(|b| BytesMut::from(&b[..]));
                if let Ok(mut view) = RecordBatchMut::new(&mut m) {
                    view.set_producer_state(
                        producer.producer_id,
                        producer.producer_epoch,
                        producer.base_sequence,
                    );
                }
                m.freeze()
            }
            Data::Empty => Bytes::new(),
        };
        self.producer = Some(producer);
        self.data = Data::Closed(bytes.clone());
        Ok(bytes)
    }

    /// Splits a closed batch that the broker refused as too large into two closed batches
    /// holding the first and the second half of its records, with the same completions in
    /// the same order (Java's client splits such a batch too; halving again on a further
    /// refusal always ends, at single records). With idempotence the halves take the
    /// original's sequence range: the first its base sequence, the second the one after the
    /// first half. The halves live outside the pool, as Java's split batches do; the
    /// original's memory returns to `pool`. Gives the batch back when it cannot be split
    /// (fewer than two records, or bytes that do not decode).
    pub(crate) fn split(
        mut self,
        level: Option<i32>,
        now: Instant,
        pool: &BufferPool,
    ) -> Result<[ProducerBatch; 2], Box<ProducerBatch>> {
        let Data::Closed(bytes) = &self.data else {
            return Err(Box::new(self));
        };
        if self.records.len() < 2 {
            return Err(Box::new(self));
        }
        let Some((compression, records)) = decode_records(bytes) else {
            return Err(Box::new(self));
        };
        if records.len() != self.records.len() {
            return Err(Box::new(self));
        }
        let first_len = records.len() / 2;
        let fields = self.producer.unwrap_or_default();
        let second_fields = if fields.producer_id >= 0 {
            let n = i32::try_from(first_len).unwrap_or(i32::MAX);
            ProducerFields {
                base_sequence: fields.base_sequence.wrapping_add(n) & i32::MAX,
                ..fields
            }
        } else {
            fields
        };
        // Both halves encoded before anything of the original changes.
        let (Some(first), Some(second)) = (
            encode_half(&records[..first_len], compression, level, fields),
            encode_half(&records[first_len..], compression, level, second_fields),
        ) else {
            return Err(Box::new(self));
        };
        let reason = format!(
            "split after MESSAGE_TOO_LARGE ({} bytes, {} records)",
            self.size(),
            records.len()
        );
        let second_entries = self.records.split_off(first_len);
        let first_entries = std::mem::take(&mut self.records);
        let half = |bytes: Bytes, records: Vec<RecordEntry>, fields| ProducerBatch {
            id: 0,
            tp: self.tp.clone(),
            write_limit: bytes.len(),
            data: Data::Closed(bytes),
            allocation: None,
            spare: None,
            records,
            last_record_size: 0,
            created: self.created,
            last_attempt: now,
            attempts: self.attempts,
            producer: Some(fields),
            retry: false,
            retry_now: false,
            last_error: Some(reason.clone()),
        };
        let halves = [
            half(first, first_entries, fields),
            half(second, second_entries, second_fields),
        ];
        self.release(pool);
        Ok(halves)
    }

    /// How long the batch has existed.
    pub(crate) fn age(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.created)
    }

    /// Completes every record, in append order: offsets are `base_offset` + index (or -1 when
    /// unknown), timestamps the records' own or the broker's log-append time. Returns the
    /// memory to `pool`, and the emptied completion list for a later batch.
    pub(crate) fn complete(
        mut self,
        result: Result<(i64, Option<i64>), ProducerError>,
        reports: &Reports,
        pool: &BufferPool,
    ) -> Vec<RecordEntry> {
        let mut records = std::mem::take(&mut self.records);
        match result {
            Ok((base_offset, log_append_time)) => {
                // One metadata value for the batch, updated per record: a record reported by
                // reference costs no topic reference count.
                let mut md = RecordMetadata {
                    topic: self.tp.topic.clone(),
                    partition: self.tp.partition,
                    offset: -1,
                    timestamp: -1,
                    serialized_key_size: 0,
                    serialized_value_size: 0,
                };
                for (i, r) in records.drain(..).enumerate() {
                    md.offset = if base_offset < 0 {
                        -1
                    } else {
                        base_offset + i as i64
                    };
                    md.timestamp = log_append_time.unwrap_or(r.timestamp);
                    md.serialized_key_size = r.key_size;
                    md.serialized_value_size = r.value_size;
                    reports.report(r.completion, Ok(&md));
                }
            }
            Err(e) => {
                for r in records.drain(..) {
                    reports.report(r.completion, Err(&e));
                }
            }
        }
        self.release(pool);
        records
    }

    /// Gives the memory back (the buffer is reused when nothing else holds it).
    fn release(&mut self, pool: &BufferPool) {
        let Some(allocation) = self.allocation.take() else {
            return;
        };
        let buf = match std::mem::replace(&mut self.data, Data::Empty) {
            Data::Open(_) | Data::Empty => None,
            Data::Closed(b) => match self.spare.take() {
                Some(spare) => Some(spare),
                None => b.try_into_mut().ok(),
            },
        };
        pool.release(allocation, buf);
    }
}

/// A decoded record of a batch being split: timestamp, key, value, encoded size estimate,
/// headers.
type SplitRecord = (
    i64,
    Option<Bytes>,
    Option<Bytes>,
    usize,
    Vec<(String, Option<Bytes>)>,
);

/// One half of a split batch, closed with `fields`; `None` if it does not encode.
fn encode_half(
    records: &[SplitRecord],
    compression: Compression,
    level: Option<i32>,
    fields: ProducerFields,
) -> Option<Bytes> {
    let size: usize = records.iter().map(|r| r.3).sum();
    let mut w = BatchWriter::new(BytesMut::with_capacity(size + 128), compression).level(level);
    for (timestamp, key, value, _, headers) in records {
        let headers: Vec<HeaderRef<'_>> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_deref()))
            .collect();
        w.append(*timestamp, key.as_deref(), value.as_deref(), &headers)
            .ok()?;
    }
    let (out, _) = w.finish(fields).ok()?;
    Some(out.freeze())
}

/// The records of one of our own closed batches, and its codec; `None` if they do not decode.
fn decode_records(bytes: &Bytes) -> Option<(Compression, Vec<SplitRecord>)> {
    let batch = RecordBatch::from_bytes(bytes.clone()).ok()?;
    let compression = batch.compression().ok()?;
    // Our own batch: its records were at most a batch of them uncompressed; allow generously.
    let limit = bytes.len().saturating_mul(64).max(1 << 20);
    let mut out = Vec::with_capacity(usize::try_from(batch.records_count()).unwrap_or(0));
    for r in batch.records(limit).ok()? {
        let r = r.ok()?;
        let size = r.key.as_ref().map_or(0, Bytes::len)
            + r.value.as_ref().map_or(0, Bytes::len)
            + r.headers
                .iter()
                .map(|h| h.key.len() + h.value.as_ref().map_or(0, Bytes::len))
                .sum::<usize>()
            + 32;
        let headers = r
            .headers
            .iter()
            .map(|h| (h.key.to_string(), h.value.clone()))
            .collect();
        out.push((r.timestamp(&batch), r.key, r.value, size, headers));
    }
    Some((compression, out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delivery::{Callback, DeliveryHandler};
    use std::sync::{Arc, Mutex};
    use tokio::sync::oneshot;

    fn tp() -> TopicPartition {
        TopicPartition {
            topic: "t".into(),
            partition: 3,
        }
    }

    /// An open batch of `size` bytes from `pool` (whose batch size it must be).
    async fn open_batch(pool: &BufferPool, size: usize, compression: Compression) -> ProducerBatch {
        let b = pool.allocate(size, Duration::ZERO).await.unwrap();
        ProducerBatch::new(
            tp(),
            b.buf,
            b.allocation,
            compression,
            None,
            size,
            Instant::now(),
        )
    }

    #[tokio::test(start_paused = true)]
    async fn fills_to_the_limit_and_completes_in_order() {
        let pool = BufferPool::new(1 << 20, 256);
        let b = pool.allocate(256, Duration::ZERO).await.unwrap();
        let now = Instant::now();
        let mut batch =
            ProducerBatch::new(tp(), b.buf, b.allocation, Compression::None, None, 256, now);
        let mut rxs = Vec::new();
        loop {
            let (tx, rx) = oneshot::channel();
            let rec = AppendRecord {
                timestamp: 1000 + rxs.len() as i64,
                key: Some(b"key"),
                value: Some(&[7u8; 20]),
                headers: &[],
            };
            if batch.try_append(&rec, Completion::Future(tx)).is_err() {
                break;
            }
            rxs.push(rx);
        }
        assert!(batch.size() <= 256);
        assert!(rxs.len() > 5);
        let fields = ProducerFields {
            producer_id: 9,
            producer_epoch: 1,
            base_sequence: 0,
            transactional: false,
        };
        let bytes = batch.close(fields).unwrap();
        let view = RecordBatch::from_bytes(bytes.clone()).unwrap();
        view.verify_crc().unwrap();
        assert_eq!(view.records_count() as usize, rxs.len());
        // An epoch bump re-stamps in place.
        let bumped = ProducerFields {
            producer_epoch: 2,
            base_sequence: 0,
            ..fields
        };
        drop(bytes);
        drop(view);
        let again = batch.close(bumped).unwrap();
        let view = RecordBatch::from_bytes(again).unwrap();
        view.verify_crc().unwrap();
        assert_eq!(view.producer_epoch(), 2);
        drop(view);
        batch.complete(Ok((100, None)), &Reports::default(), &pool);
        for (i, rx) in rxs.into_iter().enumerate() {
            let md = rx.await.unwrap().unwrap();
            assert_eq!(md.offset, 100 + i as i64);
            assert_eq!(md.timestamp, 1000 + i as i64);
            assert_eq!(md.partition, 3);
        }
        // The buffer came back to the free list.
        assert_eq!(pool.available_memory(), 1 << 20);
        assert!(pool.try_allocate(256).is_some());
    }

    #[tokio::test(start_paused = true)]
    async fn errors_reach_every_record_and_callbacks_run_in_order() {
        let pool = BufferPool::new(1 << 20, 1024);
        let mut batch = open_batch(&pool, 1024, Compression::Lz4).await;
        let seen = Arc::new(Mutex::new(Vec::new()));
        for i in 0..5 {
            let seen = seen.clone();
            let rec = AppendRecord {
                timestamp: i,
                key: None,
                value: Some(b"v"),
                headers: &[],
            };
            let cb: Callback = Box::new(move |r| seen.lock().unwrap().push((i, r.is_err())));
            assert!(batch.try_append(&rec, Completion::Callback(cb)).is_ok());
        }
        batch.close(ProducerFields::default()).unwrap();
        let err = ProducerError::Closed(None);
        batch.complete(Err(err), &Reports::default(), &pool);
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen, (0..5).map(|i| (i, true)).collect::<Vec<_>>());
        assert_eq!(pool.available_memory(), 1 << 20);
    }

    /// Records the reports it gets: (opaque, offset or error).
    #[derive(Default)]
    struct Seen(Mutex<Vec<(u64, Result<i64, String>)>>);

    impl DeliveryHandler for Seen {
        fn on_delivery(&self, opaque: u64, result: Result<&RecordMetadata, &ProducerError>) {
            let r = result.map(|md| md.offset).map_err(ToString::to_string);
            self.0.lock().unwrap().push((opaque, r));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn handler_reports_mix_with_futures_and_callbacks_in_append_order() {
        let pool = BufferPool::new(1 << 20, 4096);
        let seen = Arc::new(Seen::default());
        let reports = Reports {
            handler: Some(seen.clone()),
            ..Reports::default()
        };
        let order = Arc::new(Mutex::new(Vec::new()));
        for outcome in [Ok((40, None)), Err(ProducerError::Closed(None))] {
            let mut batch = open_batch(&pool, 4096, Compression::None)
                .await
                .with_records(Vec::new(), 6);
            let mut rxs = Vec::new();
            for i in 0..6u64 {
                let rec = AppendRecord {
                    timestamp: i as i64,
                    key: None,
                    value: Some(b"value"),
                    headers: &[],
                };
                let completion = match i % 3 {
                    0 => Completion::Opaque(1000 + i),
                    1 => {
                        let order = order.clone();
                        let cb: Callback = Box::new(move |r| {
                            order
                                .lock()
                                .unwrap()
                                .push((i, r.map(|md| md.offset).is_ok()))
                        });
                        Completion::Callback(cb)
                    }
                    _ => {
                        let (tx, rx) = oneshot::channel();
                        rxs.push(rx);
                        Completion::Future(tx)
                    }
                };
                assert!(batch.try_append(&rec, completion).is_ok());
            }
            batch.close(ProducerFields::default()).unwrap();
            let ok = outcome.is_ok();
            let list = batch.complete(outcome, &reports, &pool);
            // The list comes back empty with its room, for the next batch.
            assert!(list.is_empty() && list.capacity() >= 6);
            let mut offsets = Vec::new();
            for rx in rxs {
                offsets.push(rx.await.unwrap().map(|md| md.offset).ok());
            }
            if ok {
                assert_eq!(offsets, [Some(42), Some(45)]);
            } else {
                assert_eq!(offsets, [None, None]);
            }
        }
        let seen = seen.0.lock().unwrap().clone();
        assert_eq!(
            seen,
            [
                (1000, Ok(40)),
                (1003, Ok(43)),
                (1000, Err("producer closed".to_string())),
                (1003, Err("producer closed".to_string())),
            ]
        );
        assert_eq!(
            *order.lock().unwrap(),
            [(1, true), (4, true), (1, false), (4, false)]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_split_keeps_records_completions_and_the_sequence_range() {
        let pool = BufferPool::new(1 << 20, 4096);
        let mut batch = open_batch(&pool, 4096, Compression::Lz4).await;
        let mut rxs = Vec::new();
        for i in 0..5i64 {
            let value = format!("value-{i}");
            let key = format!("key-{i}");
            let headers: [HeaderRef<'_>; 1] = [("h", Some(b"x"))];
            let rec = AppendRecord {
                timestamp: 500 + i,
                key: Some(key.as_bytes()),
                value: Some(value.as_bytes()),
                headers: &headers,
            };
            let (tx, rx) = oneshot::channel();
            assert!(batch.try_append(&rec, Completion::Future(tx)).is_ok());
            rxs.push(rx);
        }
        let fields = ProducerFields {
            producer_id: 7,
            producer_epoch: 3,
            base_sequence: 10,
            transactional: false,
        };
        batch.close(fields).unwrap();
        let halves = batch.split(None, Instant::now(), &pool).unwrap();
        assert_eq!(
            pool.available_memory(),
            1 << 20,
            "the original's memory came back"
        );
        let mut seen = Vec::new();
        for (half, (count, seq)) in halves.iter().zip([(2, 10), (3, 12)]) {
            assert_eq!(half.record_count(), count);
            assert_eq!(half.producer.map(|f| f.base_sequence), Some(seq));
            let Data::Closed(bytes) = &half.data else {
                panic!("a half is not closed")
            };
            let view = RecordBatch::from_bytes(bytes.clone()).unwrap();
            view.verify_crc().unwrap();
            assert_eq!(view.compression().unwrap(), Compression::Lz4);
            assert_eq!(
                (
                    view.producer_id(),
                    view.producer_epoch(),
                    view.base_sequence()
                ),
                (7, 3, seq)
            );
            for r in view.records(1 << 20).unwrap() {
                let r = r.unwrap();
                seen.push((
                    r.timestamp(&view),
                    r.key.unwrap(),
                    r.value.unwrap(),
                    r.headers.len(),
                ));
            }
        }
        let expected: Vec<_> = (0..5i64)
            .map(|i| {
                (
                    500 + i,
                    Bytes::from(format!("key-{i}")),
                    Bytes::from(format!("value-{i}")),
                    1,
                )
            })
            .collect();
        assert_eq!(seen, expected);
        // Completions moved with their records: offsets count from each half's base.
        let [first, second] = halves;
        first.complete(Ok((100, None)), &Reports::default(), &pool);
        second.complete(Ok((200, None)), &Reports::default(), &pool);
        let mut offsets = Vec::new();
        for rx in rxs {
            offsets.push(rx.await.unwrap().unwrap().offset);
        }
        assert_eq!(offsets, [100, 101, 200, 201, 202]);
        // A one-record batch cannot be split.
        let mut one = open_batch(&pool, 4096, Compression::None).await;
        let rec = AppendRecord {
            timestamp: 1,
            key: None,
            value: Some(b"v"),
            headers: &[],
        };
        assert!(one.try_append(&rec, Completion::Opaque(1)).is_ok());
        one.close(ProducerFields::default()).unwrap();
        assert!(one.split(None, Instant::now(), &pool).is_err());
    }
}
