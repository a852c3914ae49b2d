//! One partition's share of a Fetch answer, turned into records lazily as the application
//! polls: batches that end before the position are skipped, records below it too; CRCs are
//! checked (`check.crcs`); control batches never reach the application; under
//! read_committed, batches of aborted transactions are dropped (from the answer's aborted
//! transaction list and the abort markers) and nothing at or past the last stable offset is
//! handed out. Legacy message sets (magic 0 and 1) are read too.
//!
//! Pure: no I/O, no clock. Keys, values and headers stay slices of the fetched bytes (of
//! the decompressed buffer for compressed batches).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet, VecDeque};

use bytes::Bytes;
use kafka_protocol::DecodeError;
use kafka_protocol::record::{
    ControlRecordType, LegacyMessage, RecordBatch, RecordSet, RecordSetEntry, Records,
    parse_end_txn_marker,
};

use crate::error::ConsumerError;
use crate::types::{ConsumerRecord, IsolationLevel, TopicPartition};

/// How records are read out of fetched data.
#[derive(Debug, Clone, Copy)]
pub struct ReadOptions {
    pub isolation: IsolationLevel,
    pub check_crcs: bool,
    /// Largest decompressed size of one batch.
    pub max_decompressed: usize,
}

/// What a fetch returned for one partition.
#[derive(Debug, Clone)]
pub struct FetchedPartition {
    pub tp: TopicPartition,
    /// The partition's position token when the fetch was planned.
    pub token: u64,
    pub fetch_offset: i64,
    pub records: Bytes,
    /// (producer id, first offset) of the transactions aborted in the fetched range.
    pub aborted: Vec<(i64, i64)>,
    /// The last stable offset (read_committed stops there), if the broker sent one.
    pub last_stable_offset: Option<i64>,
}

enum Current {
    None,
    Batch {
        batch: RecordBatch,
        records: Records,
    },
    Legacy(VecDeque<LegacyMessage>),
}

/// Records of one partition waiting to be handed out.
pub struct CompletedFetch {
    pub(crate) tp: TopicPartition,
    pub(crate) token: u64,
    /// Bytes held (the record set), counted against the buffer cap.
    pub(crate) size: usize,
    /// Where the next fetch of this partition may start: after the last complete batch
    /// (clipped to the last stable offset under read_committed); `None` when the data
    /// cannot be read past (a malformed or oversized batch).
    pub(crate) end_offset: Option<i64>,
    /// The offset of the next record to hand out.
    pub(crate) next_offset: i64,
    /// The leader epoch of the batch of the last record handed out.
    pub(crate) last_epoch: Option<i32>,
    entries: RecordSet,
    current: Current,
    opts: ReadOptions,
    aborted: BinaryHeap<Reverse<(i64, i64)>>,
    aborted_producers: HashSet<i64>,
    last_stable_offset: Option<i64>,
    /// Set once an error was returned, or the last stable offset was reached.
    done: bool,
    /// Not even one whole entry came back: the next one is larger than the fetch allowed.
    too_large: bool,
    max_fetch_bytes: usize,
}

impl std::fmt::Debug for CompletedFetch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompletedFetch")
            .field("tp", &self.tp)
            .field("token", &self.token)
            .field("size", &self.size)
            .field("next_offset", &self.next_offset)
            .field("end_offset", &self.end_offset)
            .finish_non_exhaustive()
    }
}

fn epoch_of(batch: &RecordBatch) -> Option<i32> {
    Some(batch.partition_leader_epoch()).filter(|e| *e >= 0)
}

impl CompletedFetch {
    /// Reads the headers of the fetched entries (not the records) to know where the data
    /// ends. `max_fetch_bytes` is what the partition was allowed to return (for the
    /// too-large error).
    pub fn new(data: FetchedPartition, opts: ReadOptions, max_fetch_bytes: usize) -> Self {
        let read_committed = opts.isolation == IsolationLevel::ReadCommitted;
        let mut scan = RecordSet::new(data.records.clone());
        let mut end = None;
        let mut clean = true;
        for entry in scan.by_ref() {
            match entry {
                Ok(RecordSetEntry::Batch(b)) => end = Some(b.next_offset()),
                Ok(RecordSetEntry::Legacy(m)) => end = Some(m.offset.saturating_add(1)),
                Err(_) => {
                    clean = false;
                    break;
                }
            }
        }
        let too_large = clean && end.is_none() && !data.records.is_empty();
        let last_stable_offset = data.last_stable_offset.filter(|o| *o >= 0);
        let mut end_offset = end.filter(|e| clean && *e > data.fetch_offset);
        if read_committed {
            if let (Some(e), Some(lso)) = (end_offset, last_stable_offset) {
                end_offset = Some(e.min(lso)).filter(|e| *e > data.fetch_offset);
            }
        }
        let aborted = if read_committed {
            data.aborted
                .iter()
                .map(|(pid, first)| Reverse((*first, *pid)))
                .collect()
        } else {
            BinaryHeap::new()
        };
        Self {
            tp: data.tp,
            token: data.token,
            size: data.records.len(),
            end_offset,
            next_offset: data.fetch_offset,
            last_epoch: None,
            entries: RecordSet::new(data.records),
            current: Current::None,
            opts,
            aborted,
            aborted_producers: HashSet::new(),
            last_stable_offset: last_stable_offset.filter(|_| read_committed),
            done: false,
            too_large,
            max_fetch_bytes,
        }
    }

    /// Whether everything was handed out (or an error ended it).
    pub fn is_done(&self) -> bool {
        self.done
    }

    fn fail(&mut self, e: ConsumerError) -> Option<Result<ConsumerRecord, ConsumerError>> {
        self.done = true;
        self.current = Current::None;
        Some(Err(e))
    }

    fn corrupt(&mut self, source: DecodeError) -> Option<Result<ConsumerRecord, ConsumerError>> {
        let e = ConsumerError::CorruptRecord {
            tp: self.tp.clone(),
            offset: self.next_offset,
            source,
        };
        self.fail(e)
    }

    /// Moves the transactions aborted at or before `offset` into the set of aborted
    /// producers.
    fn take_aborted_up_to(&mut self, offset: i64) {
        while let Some(Reverse((first, pid))) = self.aborted.peek().copied() {
            if first > offset {
                break;
            }
            self.aborted.pop();
            self.aborted_producers.insert(pid);
        }
    }

    /// Whether the record at `offset` is at or past the last stable offset.
    fn past_stable(&mut self, offset: i64) -> bool {
        if self.last_stable_offset.is_some_and(|lso| offset >= lso) {
            if let Some(lso) = self.last_stable_offset {
                self.next_offset = self.next_offset.max(lso);
            }
            self.done = true;
            self.current = Current::None;
            return true;
        }
        false
    }

    /// The next record to hand out; `None` when there are no more (see [`Self::is_done`]).
    /// After an error the position stays at the bad data.
    pub fn next_record(&mut self) -> Option<Result<ConsumerRecord, ConsumerError>> {
        loop {
            if self.done {
                return None;
            }
            match &mut self.current {
                Current::Batch { batch, records } => match records.next() {
                    Some(Ok(rec)) => {
                        let offset = rec.offset(batch);
                        if offset < self.next_offset {
                            continue;
                        }
                        let epoch = epoch_of(batch);
                        let out = ConsumerRecord {
                            topic: self.tp.topic.clone(),
                            partition: self.tp.partition,
                            offset,
                            timestamp: rec.timestamp(batch),
                            timestamp_type: batch.timestamp_type(),
                            key: rec.key,
                            value: rec.value,
                            headers: rec.headers,
                            leader_epoch: epoch,
                        };
                        if self.past_stable(offset) {
                            return None;
                        }
                        self.next_offset = offset.saturating_add(1);
                        self.last_epoch = epoch;
                        return Some(Ok(out));
                    }
                    Some(Err(e)) => return self.corrupt(e),
                    None => {
                        let (next, epoch) = (batch.next_offset(), epoch_of(batch));
                        self.current = Current::None;
                        if next > self.next_offset {
                            self.next_offset = next;
                            self.last_epoch = epoch.or(self.last_epoch);
                        }
                    }
                },
                Current::Legacy(queue) => match queue.pop_front() {
                    Some(m) => {
                        if m.offset < self.next_offset {
                            continue;
                        }
                        // Magic 0 has no timestamp (None): -1 and NoTimestampType.
                        let timestamp = m.timestamp.unwrap_or(-1);
                        let timestamp_type = m.timestamp_type();
                        let out = ConsumerRecord {
                            topic: self.tp.topic.clone(),
                            partition: self.tp.partition,
                            offset: m.offset,
                            timestamp,
                            timestamp_type,
                            key: m.key,
                            value: m.value,
                            headers: Vec::new(),
                            leader_epoch: None,
                        };
                        if self.past_stable(m.offset) {
                            return None;
                        }
                        self.next_offset = m.offset.saturating_add(1);
                        return Some(Ok(out));
                    }
                    None => self.current = Current::None,
                },
                Current::None => {
                    let entry = match self.entries.next() {
                        None => return self.finish(),
                        Some(Err(e)) => return self.corrupt(e),
                        Some(Ok(entry)) => entry,
                    };
                    match entry {
                        RecordSetEntry::Batch(b) => {
                            if let Err(e) = self.start_batch(b) {
                                return self.corrupt(e);
                            }
                        }
                        RecordSetEntry::Legacy(m) => {
                            if let Err(e) = self.start_legacy(m) {
                                return self.corrupt(e);
                            }
                        }
                    }
                }
            }
        }
    }

    /// The end of the entries: fine, unless not even one whole entry came back.
    fn finish(&mut self) -> Option<Result<ConsumerRecord, ConsumerError>> {
        self.done = true;
        if self.too_large {
            let e = ConsumerError::RecordTooLarge {
                tp: self.tp.clone(),
                offset: self.next_offset,
                max: self.max_fetch_bytes,
            };
            return Some(Err(e));
        }
        None
    }

    /// Decides what to do with a batch: skip it (before the position, control, aborted) or
    /// read its records.
    fn start_batch(&mut self, b: RecordBatch) -> Result<(), DecodeError> {
        if b.next_offset() <= self.next_offset {
            return Ok(()); // Entirely before the position.
        }
        if self.opts.check_crcs {
            b.verify_crc()?;
        }
        if self.past_stable(b.base_offset().max(self.next_offset)) {
            return Ok(());
        }
        let skip = |this: &mut Self, b: &RecordBatch| {
            this.next_offset = b.next_offset();
            this.last_epoch = epoch_of(b).or(this.last_epoch);
        };
        if self.opts.isolation == IsolationLevel::ReadCommitted && b.producer_id() >= 0 {
            self.take_aborted_up_to(b.last_offset());
            if b.is_control() {
                if let Some((ControlRecordType::Abort, _)) = parse_end_txn_marker(&b)? {
                    self.aborted_producers.remove(&b.producer_id());
                }
            } else if b.is_transactional() && self.aborted_producers.contains(&b.producer_id()) {
                skip(self, &b);
                return Ok(());
            }
        }
        if b.is_control() {
            skip(self, &b);
            return Ok(());
        }
        let records = b.records(self.opts.max_decompressed)?;
        self.current = Current::Batch { batch: b, records };
        Ok(())
    }

    fn start_legacy(&mut self, m: LegacyMessage) -> Result<(), DecodeError> {
        if m.offset < self.next_offset && !m.is_compressed() {
            return Ok(());
        }
        if self.opts.check_crcs {
            m.verify_crc()?;
        }
        let inner = if m.is_compressed() {
            m.inner_messages(self.opts.max_decompressed)?
        } else {
            vec![m]
        };
        self.current = Current::Legacy(inner.into());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::TimestampType;
    use kafka_protocol::record::{
        Compression, LegacyMessageSetBuilder, RecordBatchBuilder, RecordBatchMut,
        end_txn_marker_batch,
    };

    fn opts(isolation: IsolationLevel) -> ReadOptions {
        ReadOptions {
            isolation,
            check_crcs: true,
            max_decompressed: 1 << 20,
        }
    }

    /// A batch of `n` records at `base` (values "v<offset>"), optionally transactional.
    fn batch(base: i64, n: i64, pid: i64, txn: bool, codec: Compression) -> Vec<u8> {
        let mut b = RecordBatchBuilder::new()
            .base_offset(base)
            .partition_leader_epoch(3)
            .compression(codec)
            .transactional(txn);
        if pid >= 0 {
            b = b.producer(pid, 0, 0);
        }
        for i in 0..n {
            let v = format!("v{}", base + i);
            b.append(
                1_000 + i,
                Some(b"k"),
                Some(v.as_bytes()),
                &[("h", Some(b"x"))],
            )
            .unwrap();
        }
        b.build().unwrap().to_vec()
    }

    fn marker(offset: i64, pid: i64, kind: ControlRecordType) -> Vec<u8> {
        let m = end_txn_marker_batch(kind, pid, 0, 1, 2_000).unwrap();
        let mut v = m.to_vec();
        RecordBatchMut::new(&mut v).unwrap().set_base_offset(offset);
        v
    }

    fn fetched(parts: &[Vec<u8>], fetch_offset: i64, aborted: &[(i64, i64)]) -> FetchedPartition {
        FetchedPartition {
            tp: TopicPartition::new("t", 0),
            token: 1,
            fetch_offset,
            records: Bytes::from(parts.concat()),
            aborted: aborted.to_vec(),
            last_stable_offset: None,
        }
    }

    fn drain(cf: &mut CompletedFetch) -> (Vec<i64>, Option<ConsumerError>) {
        let mut offsets = Vec::new();
        while let Some(r) = cf.next_record() {
            match r {
                Ok(r) => offsets.push(r.offset),
                Err(e) => return (offsets, Some(e)),
            }
        }
        (offsets, None)
    }

    #[test]
    fn records_from_several_batches_with_every_codec() {
        for codec in [
            Compression::None,
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let data = fetched(
                &[batch(0, 3, -1, false, codec), batch(3, 2, -1, false, codec)],
                0,
                &[],
            );
            let mut cf = CompletedFetch::new(data, opts(IsolationLevel::ReadUncommitted), 1000);
            assert_eq!(cf.end_offset, Some(5));
            let r = cf.next_record().unwrap().unwrap();
            assert_eq!(r.offset, 0);
            assert_eq!(r.timestamp, 1_000);
            assert_eq!(r.timestamp_type, TimestampType::CreateTime);
            assert_eq!(r.key.as_deref(), Some(&b"k"[..]));
            assert_eq!(r.value.as_deref(), Some(&b"v0"[..]));
            assert_eq!(r.headers.len(), 1);
            assert_eq!(r.leader_epoch, Some(3));
            let (rest, err) = drain(&mut cf);
            assert_eq!(rest, vec![1, 2, 3, 4], "{codec:?}");
            assert!(err.is_none());
            assert_eq!(cf.next_offset, 5);
            assert_eq!(cf.last_epoch, Some(3));
        }
    }

    #[test]
    fn uncompressed_values_are_slices_of_the_fetched_bytes() {
        let data = fetched(&[batch(0, 2, -1, false, Compression::None)], 0, &[]);
        let whole = data.records.clone();
        let range = whole.as_ptr() as usize..whole.as_ptr() as usize + whole.len();
        let mut cf = CompletedFetch::new(data, opts(IsolationLevel::ReadUncommitted), 1000);
        let r = cf.next_record().unwrap().unwrap();
        let v = r.value.unwrap();
        assert!(range.contains(&(v.as_ptr() as usize)));
    }

    #[test]
    fn batch_starting_before_the_position_skips_lower_records() {
        // The broker answers a fetch at 4 with the batch 0..5 and then 6..7.
        let data = fetched(
            &[
                batch(0, 6, -1, false, Compression::Lz4),
                batch(6, 2, -1, false, Compression::None),
            ],
            4,
            &[],
        );
        let mut cf = CompletedFetch::new(data, opts(IsolationLevel::ReadUncommitted), 1000);
        assert_eq!(drain(&mut cf).0, vec![4, 5, 6, 7]);
        // A batch entirely before the position is skipped without being read.
        let data = fetched(
            &[
                batch(0, 2, -1, false, Compression::None),
                batch(2, 2, -1, false, Compression::None),
            ],
            2,
            &[],
        );
        let mut cf = CompletedFetch::new(data, opts(IsolationLevel::ReadUncommitted), 1000);
        assert_eq!(drain(&mut cf).0, vec![2, 3]);
    }

    #[test]
    fn crc_errors_stop_at_the_bad_batch() {
        let good = batch(0, 2, -1, false, Compression::None);
        let mut bad = batch(2, 2, -1, false, Compression::None);
        let last = bad.len() - 1;
        bad[last] ^= 0xff;
        let data = fetched(&[good.clone(), bad.clone()], 0, &[]);
        let mut cf = CompletedFetch::new(data, opts(IsolationLevel::ReadUncommitted), 1000);
        let (got, err) = drain(&mut cf);
        assert_eq!(got, vec![0, 1]);
        match err {
            Some(ConsumerError::CorruptRecord { offset, source, .. }) => {
                assert_eq!(offset, 2);
                assert!(matches!(source, DecodeError::Crc { .. }));
            }
            other => panic!("expected a CRC error, got {other:?}"),
        }
        assert_eq!(cf.next_offset, 2);
        assert!(cf.is_done() && cf.next_record().is_none());
        // check.crcs=false reads it (the flipped byte is in the last value).
        let data = fetched(&[good, bad], 0, &[]);
        let mut o = opts(IsolationLevel::ReadUncommitted);
        o.check_crcs = false;
        let mut cf = CompletedFetch::new(data, o, 1000);
        assert_eq!(drain(&mut cf).0, vec![0, 1, 2, 3]);
    }

    #[test]
    fn control_batches_never_reach_the_application() {
        let data = fetched(
            &[
                batch(0, 2, 7, true, Compression::None),
                marker(2, 7, ControlRecordType::Commit),
                batch(3, 1, -1, false, Compression::None),
            ],
            0,
            &[],
        );
        for iso in [
            IsolationLevel::ReadUncommitted,
            IsolationLevel::ReadCommitted,
        ] {
            let mut cf = CompletedFetch::new(data.clone(), opts(iso), 1000);
            assert_eq!(drain(&mut cf).0, vec![0, 1, 3], "{iso:?}");
            assert_eq!(cf.next_offset, 4);
        }
        // A trailing marker still moves the position past it.
        let data = fetched(
            &[
                batch(0, 2, 7, true, Compression::None),
                marker(2, 7, ControlRecordType::Commit),
            ],
            0,
            &[],
        );
        let mut cf = CompletedFetch::new(data, opts(IsolationLevel::ReadCommitted), 1000);
        assert_eq!(drain(&mut cf).0, vec![0, 1]);
        assert_eq!(cf.next_offset, 3);
        assert_eq!(cf.end_offset, Some(3));
    }

    #[test]
    fn read_committed_drops_aborted_transactions() {
        // Producer 7 aborts (0..2, marker at 4), producer 8 commits (2..4, marker at 5),
        // producer 7 then starts a new transaction at 6 that commits (marker at 8).
        let parts = [
            batch(0, 2, 7, true, Compression::None),
            batch(2, 2, 8, true, Compression::Gzip),
            marker(4, 7, ControlRecordType::Abort),
            marker(5, 8, ControlRecordType::Commit),
            batch(6, 2, 7, true, Compression::None),
            marker(8, 7, ControlRecordType::Commit),
            batch(9, 1, -1, false, Compression::None),
        ];
        let data = fetched(&parts, 0, &[(7, 0)]);
        let mut cf = CompletedFetch::new(data.clone(), opts(IsolationLevel::ReadCommitted), 1000);
        assert_eq!(drain(&mut cf).0, vec![2, 3, 6, 7, 9]);
        assert_eq!(cf.next_offset, 10);
        // read_uncommitted sees every data record.
        let mut cf = CompletedFetch::new(data, opts(IsolationLevel::ReadUncommitted), 1000);
        assert_eq!(drain(&mut cf).0, vec![0, 1, 2, 3, 6, 7, 9]);
        // An aborted transaction whose first offset is before the fetch offset.
        let data = fetched(&parts[1..], 2, &[(7, 0)]);
        let mut cf = CompletedFetch::new(data, opts(IsolationLevel::ReadCommitted), 1000);
        assert_eq!(drain(&mut cf).0, vec![2, 3, 6, 7, 9]);
        // Aborted list naming a transaction that starts later than this batch: kept.
        let data = fetched(&[batch(0, 2, 7, true, Compression::None)], 0, &[(7, 5)]);
        let mut cf = CompletedFetch::new(data, opts(IsolationLevel::ReadCommitted), 1000);
        assert_eq!(drain(&mut cf).0, vec![0, 1]);
    }

    #[test]
    fn read_committed_stops_at_the_last_stable_offset() {
        let mut data = fetched(
            &[
                batch(0, 3, -1, false, Compression::None),
                batch(3, 3, 9, true, Compression::None),
            ],
            0,
            &[],
        );
        data.last_stable_offset = Some(4);
        let mut cf = CompletedFetch::new(data.clone(), opts(IsolationLevel::ReadCommitted), 1000);
        assert_eq!(cf.end_offset, Some(4));
        assert_eq!(drain(&mut cf).0, vec![0, 1, 2, 3]);
        assert_eq!(cf.next_offset, 4);
        let mut cf = CompletedFetch::new(data, opts(IsolationLevel::ReadUncommitted), 1000);
        assert_eq!(cf.end_offset, Some(6));
        assert_eq!(drain(&mut cf).0, vec![0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn partial_trailing_batch_is_left_for_the_next_fetch() {
        let b2 = batch(2, 2, -1, false, Compression::None);
        let data = fetched(
            &[batch(0, 2, -1, false, Compression::None), b2[..20].to_vec()],
            0,
            &[],
        );
        let mut cf = CompletedFetch::new(data, opts(IsolationLevel::ReadUncommitted), 1000);
        assert_eq!(cf.end_offset, Some(2));
        let (got, err) = drain(&mut cf);
        assert_eq!(got, vec![0, 1]);
        assert!(err.is_none());
        // Nothing but a partial batch: too large for the fetch.
        let data = fetched(&[b2[..20].to_vec()], 2, &[]);
        let mut cf = CompletedFetch::new(data, opts(IsolationLevel::ReadUncommitted), 20);
        assert_eq!(cf.end_offset, None);
        assert!(matches!(
            drain(&mut cf),
            (v, Some(ConsumerError::RecordTooLarge { offset: 2, max: 20, .. })) if v.is_empty()
        ));
    }

    #[test]
    fn legacy_message_sets() {
        for (magic, codec) in [
            (0, Compression::None),
            (1, Compression::Gzip),
            (1, Compression::None),
        ] {
            let mut b = LegacyMessageSetBuilder::new(magic, codec, 10).unwrap();
            for i in 0..3 {
                b.append(5_000 + i, Some(b"k"), Some(b"v")).unwrap();
            }
            let data = fetched(&[b.build().unwrap().to_vec()], 11, &[]);
            let mut cf = CompletedFetch::new(data, opts(IsolationLevel::ReadUncommitted), 1000);
            assert_eq!(cf.end_offset, Some(13));
            let r = cf.next_record().unwrap().unwrap();
            assert_eq!(r.offset, 11);
            if magic == 0 {
                assert_eq!(
                    (r.timestamp, r.timestamp_type),
                    (-1, TimestampType::NoTimestampType)
                );
            } else {
                assert_eq!(
                    (r.timestamp, r.timestamp_type),
                    (5_001, TimestampType::CreateTime)
                );
            }
            assert_eq!(drain(&mut cf).0, vec![12]);
        }
    }
}
