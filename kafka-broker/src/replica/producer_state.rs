//! Idempotent-producer state of one partition: per producer id, the epoch and the last five
//! batches appended (their sequence ranges and offsets), to reject out-of-order batches and to
//! answer a retried batch with the offsets it got the first time instead of writing it twice.
//!
//! Sequences are per (producer id, partition), start at 0 for a new epoch and wrap from
//! `i32::MAX` to 0, as in Kafka.
//!
//! A producer that has not appended for `producer.id.expiration.ms` is forgotten
//! ([`ProducerStates::expire`], on the maintenance timer and when the state is loaded); its
//! next batch is then taken as a new producer's, whatever its sequence, as Kafka's current
//! `ProducerAppendInfo` does (older brokers answered UNKNOWN_PRODUCER_ID).
//!
//! Transactions: a producer's transactional batch opens its transaction at the batch's offset
//! when none is open; the producer's COMMIT or ABORT marker ends it there. The partition's
//! last stable offset is below every open transaction and every completed one whose marker is
//! not yet below the high watermark (Kafka's `ongoingTxns` and `unreplicatedTxns`,
//! [`ProducerStates::first_unstable_offset`]). Producers with an open transaction are never
//! expired. Each producer also remembers the coordinator epoch of its last marker, which
//! fences markers from an older coordinator.
//!
//! At a clean shutdown the state is written to a snapshot file ([`write_snapshot`]: a temp
//! file, fsync, rename, fsync of the directory) that names the log end offset it describes
//! and ends with a CRC32C of its content. [`load`] trusts a snapshot only when it is complete
//! and matches the log's end offset, and otherwise rebuilds the state from the log.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use kafka_protocol::error_code::ErrorCode;

/// Batches remembered per producer for duplicate detection (Kafka keeps 5).
pub const CACHED_BATCHES: usize = 5;

/// One appended batch of a producer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchMeta {
    pub first_seq: i32,
    pub last_seq: i32,
    pub first_offset: i64,
    pub last_offset: i64,
    pub timestamp: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct ProducerEntry {
    epoch: i16,
    batches: VecDeque<BatchMeta>,
    /// When its latest batch was appended (ms since the epoch): what expiry looks at.
    last_append_ms: i64,
    /// The coordinator epoch of its last marker (-1: none yet).
    coordinator_epoch: i32,
    /// The first offset of its open transaction.
    txn_first_offset: Option<i64>,
    /// The max timestamp of its latest batch or marker (-1: none).
    last_timestamp: i64,
}

impl Default for ProducerEntry {
    fn default() -> Self {
        Self {
            epoch: 0,
            batches: VecDeque::new(),
            last_append_ms: 0,
            coordinator_epoch: -1,
            txn_first_offset: None,
            last_timestamp: -1,
        }
    }
}

/// A transaction its marker ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompletedTxn {
    pub producer_id: i64,
    pub first_offset: i64,
    /// The marker's offset.
    pub last_offset: i64,
    pub aborted: bool,
}

/// A COMMIT or ABORT marker of a producer, as appended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Marker {
    /// The producer epoch it carries.
    pub epoch: i16,
    pub coordinator_epoch: i32,
    /// Its offset.
    pub offset: i64,
    pub commit: bool,
    /// Its batch's max timestamp.
    pub timestamp: i64,
}

/// One producer as DescribeProducers shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerView {
    pub producer_id: i64,
    pub epoch: i16,
    /// The last sequence of its latest batch (-1: none).
    pub last_sequence: i32,
    pub last_timestamp: i64,
    pub coordinator_epoch: i32,
    /// The first offset of its open transaction (-1: none).
    pub current_txn_start_offset: i64,
}

/// What to do with an incoming idempotent batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// New and in order: append it.
    Append,
    /// Already appended: answer with these offsets, write nothing.
    Duplicate(BatchMeta),
}

/// The state of every producer that wrote to the partition.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProducerStates {
    producers: BTreeMap<i64, ProducerEntry>,
    /// Open transactions: first offset -> producer id.
    ongoing: BTreeMap<i64, i64>,
    /// Completed transactions whose marker is not below the high watermark yet: first offset
    /// -> the transaction.
    unreplicated: BTreeMap<i64, CompletedTxn>,
}

fn next_seq(s: i32) -> i32 {
    if s == i32::MAX { 0 } else { s + 1 }
}

/// The last sequence of a batch of `count` records starting at `first` (wrapping).
pub fn last_seq(first: i32, count: i32) -> i32 {
    let last = i64::from(first) + i64::from(count) - 1;
    if last > i64::from(i32::MAX) {
        (last - i64::from(i32::MAX) - 1) as i32
    } else {
        last as i32
    }
}

impl ProducerStates {
    /// Checks a batch of producer `pid` (epoch, first and last sequence) before appending.
    pub fn check(
        &self,
        pid: i64,
        epoch: i16,
        first_seq: i32,
        last_seq: i32,
    ) -> Result<Check, ErrorCode> {
        let Some(entry) = self.producers.get(&pid) else {
            // Unknown producer (new, or forgotten: expired, or its batches removed by
            // retention): Kafka accepts any sequence and starts tracking it there.
            return Ok(Check::Append);
        };
        if epoch < entry.epoch {
            return Err(ErrorCode::INVALID_PRODUCER_EPOCH);
        }
        if epoch > entry.epoch {
            // A bumped epoch starts its sequences again.
            return if first_seq == 0 {
                Ok(Check::Append)
            } else {
                Err(ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER)
            };
        }
        if let Some(dup) = entry
            .batches
            .iter()
            .find(|b| b.first_seq == first_seq && b.last_seq == last_seq)
        {
            return Ok(Check::Duplicate(*dup));
        }
        match entry.batches.back() {
            Some(last) if first_seq != next_seq(last.last_seq) => {
                Err(ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER)
            }
            None if first_seq != 0 => Err(ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER),
            _ => Ok(Check::Append),
        }
    }

    /// Records a batch appended at `append_ms`.
    pub fn record(&mut self, pid: i64, epoch: i16, batch: BatchMeta, append_ms: i64) {
        let entry = self.entry_at(pid, epoch, append_ms);
        entry.last_timestamp = batch.timestamp;
        entry.batches.push_back(batch);
        while entry.batches.len() > CACHED_BATCHES {
            entry.batches.pop_front();
        }
    }

    /// The producer's entry, at `epoch` from now on (a new epoch forgets the old epoch's
    /// batches), appended to at `append_ms`.
    fn entry_at(&mut self, pid: i64, epoch: i16, append_ms: i64) -> &mut ProducerEntry {
        let entry = self.producers.entry(pid).or_default();
        entry.last_append_ms = entry.last_append_ms.max(append_ms);
        if epoch != entry.epoch {
            entry.epoch = epoch;
            entry.batches.clear();
        }
        entry
    }

    /// The transaction checks of a data batch from a client or a coordinator of this broker
    /// (Kafka's `ProducerAppendInfo` for a client or coordinator origin): an epoch older than
    /// the producer's is INVALID_PRODUCER_EPOCH; a non-transactional batch while the producer
    /// has a transaction open is INVALID_TXN_STATE.
    pub fn check_txn(&self, pid: i64, epoch: i16, transactional: bool) -> Result<(), ErrorCode> {
        let Some(entry) = self.producers.get(&pid) else {
            return Ok(());
        };
        if epoch < entry.epoch {
            return Err(ErrorCode::INVALID_PRODUCER_EPOCH);
        }
        if !transactional && entry.txn_first_offset.is_some() {
            return Err(ErrorCode::INVALID_TXN_STATE);
        }
        Ok(())
    }

    /// A transactional batch of `pid` at `first_offset`: opens its transaction there unless
    /// one is open.
    pub fn begin_txn(&mut self, pid: i64, epoch: i16, first_offset: i64, append_ms: i64) {
        let entry = self.entry_at(pid, epoch, append_ms);
        if entry.txn_first_offset.is_none() {
            entry.txn_first_offset = Some(first_offset);
            self.ongoing.insert(first_offset, pid);
        }
    }

    /// The checks of a marker a coordinator writes (Kafka's `ProducerAppendInfo.appendEndTxnMarker`):
    /// a producer epoch older than the producer's is INVALID_PRODUCER_EPOCH, a coordinator epoch
    /// older than its last marker's TRANSACTION_COORDINATOR_FENCED.
    pub fn check_marker(
        &self,
        pid: i64,
        epoch: i16,
        coordinator_epoch: i32,
    ) -> Result<(), ErrorCode> {
        let Some(entry) = self.producers.get(&pid) else {
            return Ok(());
        };
        if epoch < entry.epoch {
            return Err(ErrorCode::INVALID_PRODUCER_EPOCH);
        }
        if coordinator_epoch < entry.coordinator_epoch {
            return Err(ErrorCode::TRANSACTION_COORDINATOR_FENCED);
        }
        Ok(())
    }

    /// A marker of `pid` at `offset`: the producer takes its epoch and coordinator epoch, and
    /// its open transaction (if any) ends there; that transaction is returned. It stays
    /// unstable until the high watermark passes the marker.
    pub fn complete_txn(&mut self, pid: i64, m: Marker, append_ms: i64) -> Option<CompletedTxn> {
        let Marker {
            epoch,
            coordinator_epoch,
            offset,
            commit,
            timestamp,
        } = m;
        let entry = self.entry_at(pid, epoch, append_ms);
        entry.coordinator_epoch = coordinator_epoch;
        entry.last_timestamp = timestamp;
        let first_offset = entry.txn_first_offset.take()?;
        self.ongoing.remove(&first_offset);
        let txn = CompletedTxn {
            producer_id: pid,
            first_offset,
            last_offset: offset,
            aborted: !commit,
        };
        self.unreplicated.insert(first_offset, txn);
        Some(txn)
    }

    /// The last stable offset right after `txn` completed (Kafka's
    /// `ProducerStateManager.lastStableOffset(completedTxn)`): the first offset of the
    /// earliest other open transaction, else the offset after its marker.
    pub fn last_stable_after(&self, txn: &CompletedTxn) -> i64 {
        self.ongoing
            .iter()
            .find(|&(_, &pid)| pid != txn.producer_id)
            .map_or(txn.last_offset + 1, |(&first, _)| first)
    }

    /// The high watermark moved to `hw`: completed transactions whose marker is below it are
    /// stable.
    pub fn on_high_watermark(&mut self, hw: i64) {
        self.unreplicated.retain(|_, t| t.last_offset >= hw);
    }

    /// The first offset of the earliest transaction that is open or whose marker is not yet
    /// below the high watermark (the last stable offset is at most this).
    pub fn first_unstable_offset(&self) -> Option<i64> {
        let ongoing = self.ongoing.keys().next().copied();
        let unreplicated = self.unreplicated.keys().next().copied();
        match (ongoing, unreplicated) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The producers, as DescribeProducers lists them.
    pub fn views(&self) -> Vec<ProducerView> {
        self.producers
            .iter()
            .map(|(&pid, e)| ProducerView {
                producer_id: pid,
                epoch: e.epoch,
                last_sequence: e.batches.back().map_or(-1, |b| b.last_seq),
                last_timestamp: e.last_timestamp,
                coordinator_epoch: e.coordinator_epoch,
                current_txn_start_offset: e.txn_first_offset.unwrap_or(-1),
            })
            .collect()
    }

    /// Forgets batches at or after `offset` (after a truncation), and the transactions that
    /// started there.
    pub fn truncate_to(&mut self, offset: i64) {
        for e in self.producers.values_mut() {
            e.batches.retain(|b| b.last_offset < offset);
            if e.txn_first_offset.is_some_and(|f| f >= offset) {
                e.txn_first_offset = None;
            }
        }
        self.ongoing.retain(|&first, _| first < offset);
        self.unreplicated.retain(|&first, _| first < offset);
        self.producers
            .retain(|_, e| !e.batches.is_empty() || e.txn_first_offset.is_some());
    }

    /// Producer id -> last offset of its latest batch.
    pub fn last_offsets(&self) -> std::collections::HashMap<i64, i64> {
        self.producers
            .iter()
            .filter_map(|(&pid, e)| Some((pid, e.batches.back()?.last_offset)))
            .collect()
    }

    /// Number of producers known.
    pub fn len(&self) -> usize {
        self.producers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.producers.is_empty()
    }

    /// Forgets the producers whose latest append is `expiration_ms` or more before `now_ms`
    /// (Kafka's `producer.id.expiration.ms`), except those with an open transaction. Returns
    /// how many were forgotten.
    pub fn expire(&mut self, now_ms: i64, expiration_ms: i64) -> usize {
        let before = self.producers.len();
        self.producers.retain(|_, e| {
            e.txn_first_offset.is_some() || now_ms.saturating_sub(e.last_append_ms) < expiration_ms
        });
        before - self.producers.len()
    }

    /// The snapshot text for a log whose end offset is `log_end`: a header line, then per
    /// producer a `p` line (`pid epoch last_append_ms coordinator_epoch txn_first_offset
    /// last_timestamp`, -1 for no open transaction) followed by a `b` line per remembered batch
    /// (`first_seq last_seq first_offset last_offset timestamp`), a `u` line per completed
    /// transaction not yet stable (`pid first_offset last_offset aborted`), and an `end` line
    /// with the line count and the CRC32C of everything before it.
    pub fn to_snapshot(&self, log_end: i64) -> String {
        let mut out = format!("{SNAPSHOT_MAGIC} {SNAPSHOT_VERSION} {log_end}\n");
        let mut lines = 0usize;
        for (pid, e) in &self.producers {
            lines += 1;
            let _ = writeln!(
                out,
                "p {pid} {} {} {} {} {}",
                e.epoch,
                e.last_append_ms,
                e.coordinator_epoch,
                e.txn_first_offset.unwrap_or(-1),
                e.last_timestamp
            );
            for b in &e.batches {
                lines += 1;
                let _ = writeln!(
                    out,
                    "b {} {} {} {} {}",
                    b.first_seq, b.last_seq, b.first_offset, b.last_offset, b.timestamp
                );
            }
        }
        for t in self.unreplicated.values() {
            lines += 1;
            let _ = writeln!(
                out,
                "u {} {} {} {}",
                t.producer_id,
                t.first_offset,
                t.last_offset,
                u8::from(t.aborted)
            );
        }
        let crc = crc32c::crc32c(out.as_bytes());
        let _ = writeln!(out, "end {lines} {crc:08x}");
        out
    }

    /// Reads a snapshot written by [`Self::to_snapshot`]: the state and the log end offset it
    /// describes. `None` unless it is complete (header, every line, the `end` line with a
    /// matching count and CRC) and well formed. A snapshot of an older format (version 2, from
    /// before transactions) is not read: the state is rebuilt from the log.
    pub fn from_snapshot(text: &str) -> Option<(Self, i64)> {
        // Complete means up to the `end` line's newline.
        let text = text.strip_suffix('\n')?;
        let body_len = text.rfind('\n')? + 1;
        let (body, end) = text.split_at(body_len);
        let mut end_fields = end.split(' ');
        let (Some("end"), Some(count), Some(crc), None) = (
            end_fields.next(),
            end_fields.next(),
            end_fields.next(),
            end_fields.next(),
        ) else {
            return None;
        };
        if u32::from_str_radix(crc, 16).ok()? != crc32c::crc32c(body.as_bytes()) {
            return None;
        }
        let mut lines = body.lines();
        let mut header = lines.next()?.split(' ');
        if header.next()? != SNAPSHOT_MAGIC || header.next()? != SNAPSHOT_VERSION {
            return None;
        }
        let log_end: i64 = header.next()?.parse().ok()?;
        let mut s = Self::default();
        let mut seen = 0usize;
        let mut current: Option<i64> = None;
        for line in lines {
            seen += 1;
            let (kind, rest) = line.split_once(' ')?;
            let f: Vec<i64> = rest
                .split(' ')
                .map(str::parse)
                .collect::<Result<_, _>>()
                .ok()?;
            match (kind, &f[..]) {
                (
                    "p",
                    &[
                        pid,
                        epoch,
                        last_append_ms,
                        coordinator_epoch,
                        txn_first,
                        last_timestamp,
                    ],
                ) => {
                    let entry = ProducerEntry {
                        epoch: i16::try_from(epoch).ok()?,
                        batches: VecDeque::new(),
                        last_append_ms,
                        coordinator_epoch: i32::try_from(coordinator_epoch).ok()?,
                        txn_first_offset: (txn_first >= 0).then_some(txn_first),
                        last_timestamp,
                    };
                    if txn_first >= 0 {
                        s.ongoing.insert(txn_first, pid);
                    }
                    if s.producers.insert(pid, entry).is_some() {
                        return None;
                    }
                    current = Some(pid);
                }
                ("b", &[first_seq, last_seq, first_offset, last_offset, timestamp]) => {
                    let entry = s.producers.get_mut(&current?)?;
                    entry.batches.push_back(BatchMeta {
                        first_seq: i32::try_from(first_seq).ok()?,
                        last_seq: i32::try_from(last_seq).ok()?,
                        first_offset,
                        last_offset,
                        timestamp,
                    });
                    if entry.batches.len() > CACHED_BATCHES {
                        return None;
                    }
                }
                ("u", &[pid, first_offset, last_offset, aborted]) => {
                    let txn = CompletedTxn {
                        producer_id: pid,
                        first_offset,
                        last_offset,
                        aborted: aborted != 0,
                    };
                    s.unreplicated.insert(first_offset, txn);
                }
                _ => return None,
            }
        }
        (count.parse::<usize>().ok()? == seen).then_some((s, log_end))
    }
}

/// First word of a snapshot file.
const SNAPSHOT_MAGIC: &str = "kafka-rs-producer-state";
/// Its format version (the first format had no header, append times or checksum; version 2
/// no transactions).
const SNAPSHOT_VERSION: &str = "3";
/// The snapshot's file name in a partition directory.
pub const SNAPSHOT_FILE: &str = "producer-state.snapshot";
const SNAPSHOT_TEMP: &str = "producer-state.snapshot.tmp";

/// Writes `states` (of a log ending at `log_end`) as the snapshot of the partition directory
/// `dir`, crash-safely: into a temp file, fsynced, renamed over the snapshot, and the
/// directory fsynced. A crash at any point leaves either no snapshot, the old one, or the new
/// one complete; a torn temp file is never read.
pub fn write_snapshot(dir: &Path, states: &ProducerStates, log_end: i64) -> std::io::Result<()> {
    let tmp = dir.join(SNAPSHOT_TEMP);
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(states.to_snapshot(log_end).as_bytes())?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, dir.join(SNAPSHOT_FILE))?;
    std::fs::File::open(dir)?.sync_all()
}

/// The producer state of the partition directory `dir` whose log now ends at `log_end`: its
/// snapshot if that is complete and describes this log end, else `rebuild()` (from the log).
/// The snapshot is removed (durably) before the state is used, so that a later crash cannot
/// bring back a stale one. Producers idle for `expiration_ms` at `now_ms` are dropped.
pub fn load(
    dir: &Path,
    log_end: i64,
    now_ms: i64,
    expiration_ms: i64,
    rebuild: impl FnOnce() -> ProducerStates,
) -> ProducerStates {
    let path = dir.join(SNAPSHOT_FILE);
    let snapshot = match std::fs::read_to_string(&path) {
        Ok(text) => {
            let parsed = ProducerStates::from_snapshot(&text);
            match &parsed {
                Some((_, end)) if *end == log_end => {}
                Some((_, end)) => tracing::warn!(
                    dir = %dir.display(), snapshot_end = end, log_end,
                    "producer state snapshot is for another log end; rebuilding from the log"
                ),
                None => tracing::warn!(
                    dir = %dir.display(),
                    "producer state snapshot is torn or malformed; rebuilding from the log"
                ),
            }
            let removed =
                std::fs::remove_file(&path).and_then(|()| std::fs::File::open(dir)?.sync_all());
            if let Err(e) = removed {
                // Kept, it could be read again after a crash: do not trust it now either.
                tracing::warn!(dir = %dir.display(), error = %e, "cannot remove the producer state snapshot");
                None
            } else {
                parsed.filter(|(_, end)| *end == log_end).map(|(s, _)| s)
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            // Unreadable (e.g. not UTF-8: garbage): rebuild, and do not meet it again.
            tracing::warn!(dir = %dir.display(), error = %e, "producer state snapshot unreadable; rebuilding from the log");
            let _ = std::fs::remove_file(&path);
            None
        }
    };
    let _ = std::fs::remove_file(dir.join(SNAPSHOT_TEMP));
    let mut states = snapshot.unwrap_or_else(rebuild);
    let expired = states.expire(now_ms, expiration_ms);
    if expired > 0 {
        tracing::debug!(dir = %dir.display(), expired, "expired idle producers at load");
    }
    states
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(first_seq: i32, last_seq: i32, first_offset: i64) -> BatchMeta {
        BatchMeta {
            first_seq,
            last_seq,
            first_offset,
            last_offset: first_offset + i64::from(last_seq - first_seq),
            timestamp: 0,
        }
    }

    #[test]
    fn in_order_duplicates_and_gaps() {
        let mut s = ProducerStates::default();
        assert_eq!(s.check(7, 0, 0, 4), Ok(Check::Append));
        s.record(7, 0, meta(0, 4, 100), 0);
        assert_eq!(s.check(7, 0, 5, 9), Ok(Check::Append));
        s.record(7, 0, meta(5, 9, 105), 0);
        // A retry of the first batch is a duplicate with its original offsets.
        assert_eq!(s.check(7, 0, 0, 4), Ok(Check::Duplicate(meta(0, 4, 100))));
        // A gap is out of order.
        assert_eq!(
            s.check(7, 0, 11, 12),
            Err(ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER)
        );
        // An old epoch is fenced; a new epoch restarts at 0.
        assert_eq!(
            s.check(7, -1, 10, 10),
            Err(ErrorCode::INVALID_PRODUCER_EPOCH)
        );
        assert_eq!(
            s.check(7, 1, 3, 3),
            Err(ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER)
        );
        assert_eq!(s.check(7, 1, 0, 0), Ok(Check::Append));
        // An unknown producer (new, or forgotten) is taken at any sequence, as Kafka does.
        assert_eq!(s.check(8, 0, 5, 5), Ok(Check::Append));
    }

    #[test]
    fn only_five_batches_are_remembered() {
        let mut s = ProducerStates::default();
        for i in 0..7 {
            s.record(1, 0, meta(i, i, 10 + i64::from(i)), 0);
        }
        assert_eq!(s.check(1, 0, 6, 6), Ok(Check::Duplicate(meta(6, 6, 16))));
        assert_eq!(s.check(1, 0, 2, 2), Ok(Check::Duplicate(meta(2, 2, 12))));
        // Batch 1 fell out of the cache: no longer recognised, and not in order either.
        assert_eq!(
            s.check(1, 0, 1, 1),
            Err(ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER)
        );
    }

    #[test]
    fn sequences_wrap() {
        assert_eq!(last_seq(i32::MAX, 1), i32::MAX);
        assert_eq!(last_seq(i32::MAX, 3), 1);
        let mut s = ProducerStates::default();
        s.record(1, 0, meta(i32::MAX - 1, i32::MAX, 0), 0);
        assert_eq!(s.check(1, 0, 0, 1), Ok(Check::Append));
    }

    fn sample() -> ProducerStates {
        let mut s = ProducerStates::default();
        s.record(1, 2, meta(0, 4, 100), 5_000);
        s.record(1, 2, meta(5, 5, 105), 6_000);
        s.record(9, 0, meta(0, 0, 106), 7_000);
        s
    }

    #[test]
    fn snapshot_round_trip_and_truncation() {
        let mut s = sample();
        let (back, end) = ProducerStates::from_snapshot(&s.to_snapshot(107)).unwrap();
        assert_eq!((back, end), (s.clone(), 107));
        assert!(ProducerStates::from_snapshot("1 2 x").is_none());
        s.truncate_to(105);
        assert_eq!(s.check(1, 2, 5, 5), Ok(Check::Append));
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn a_torn_or_altered_snapshot_is_refused() {
        let text = sample().to_snapshot(107);
        // Every cut short of the whole text (a crash while writing) is refused.
        for len in 0..text.len() {
            assert!(
                ProducerStates::from_snapshot(&text[..len]).is_none(),
                "accepted {len} of {} bytes",
                text.len()
            );
        }
        // So is any change to a digit of the content (the CRC covers it).
        let lines: Vec<&str> = text.lines().collect();
        let altered = text.replacen(lines[1], &lines[1].replacen('1', "3", 1), 1);
        assert_ne!(altered, text);
        assert!(ProducerStates::from_snapshot(&altered).is_none());
        // And the first format (no header, no checksum).
        assert!(ProducerStates::from_snapshot("1 2 0 4 100 104 0\n").is_none());
    }

    #[test]
    fn idle_producers_expire() {
        let mut s = sample();
        // Producer 1 last appended at 6_000, producer 9 at 7_000.
        assert_eq!(s.expire(6_999, 1_000), 0);
        assert_eq!(s.expire(7_000, 1_000), 1);
        assert_eq!(s.len(), 1);
        assert_eq!(
            s.check(1, 2, 6, 6),
            Ok(Check::Append),
            "forgotten: taken as new"
        );
        assert_eq!(s.check(9, 0, 0, 0), Ok(Check::Duplicate(meta(0, 0, 106))));
        assert_eq!(s.expire(8_000, 1_000), 1);
        assert!(s.is_empty());
    }

    fn rebuilt() -> ProducerStates {
        let mut s = ProducerStates::default();
        s.record(42, 0, meta(0, 0, 0), 9_000);
        s
    }

    #[test]
    fn load_uses_a_sound_current_snapshot_once() {
        let dir = tempfile::tempdir().unwrap();
        write_snapshot(dir.path(), &sample(), 107).unwrap();
        assert!(!dir.path().join(SNAPSHOT_TEMP).exists());
        let got = load(dir.path(), 107, 7_500, 86_400_000, rebuilt);
        assert_eq!(got, sample());
        // Removed once read: a crash later must not bring it back.
        assert!(!dir.path().join(SNAPSHOT_FILE).exists());
        assert_eq!(load(dir.path(), 107, 7_500, 86_400_000, rebuilt), rebuilt());
    }

    #[test]
    fn load_rebuilds_instead_of_trusting_a_torn_or_stale_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(SNAPSHOT_FILE);
        let text = sample().to_snapshot(107);
        // Torn: a crash while the (old-style, in place) file was being written.
        std::fs::write(&path, &text[..text.len() / 2]).unwrap();
        assert_eq!(load(dir.path(), 107, 0, 86_400_000, rebuilt), rebuilt());
        assert!(!path.exists());
        // Stale: complete, but for another log end (the log moved on after it was written).
        write_snapshot(dir.path(), &sample(), 107).unwrap();
        assert_eq!(load(dir.path(), 110, 0, 86_400_000, rebuilt), rebuilt());
        assert!(!path.exists());
        // Garbage that is not even text.
        std::fs::write(&path, [0xff, 0xfe, 0x00, 0x80]).unwrap();
        assert_eq!(load(dir.path(), 107, 0, 86_400_000, rebuilt), rebuilt());
        assert!(!path.exists());
        // A temp file left by a crash during write_snapshot is ignored and removed.
        std::fs::write(dir.path().join(SNAPSHOT_TEMP), &text).unwrap();
        assert_eq!(load(dir.path(), 107, 0, 86_400_000, rebuilt), rebuilt());
        assert!(!dir.path().join(SNAPSHOT_TEMP).exists());
    }

    #[test]
    fn load_expires_idle_producers() {
        let dir = tempfile::tempdir().unwrap();
        write_snapshot(dir.path(), &sample(), 107).unwrap();
        // At 7_500 with a 1_000 ms expiration only producer 9 (7_000) is still known.
        let got = load(dir.path(), 107, 7_500, 1_000, rebuilt);
        assert_eq!(got.len(), 1);
        assert_eq!(got.check(9, 0, 0, 0), Ok(Check::Duplicate(meta(0, 0, 106))));
        // Rebuilt state expires too.
        assert!(load(dir.path(), 107, 20_000, 1_000, rebuilt).is_empty());
    }

    fn marker(epoch: i16, coordinator_epoch: i32, offset: i64, commit: bool, ts: i64) -> Marker {
        Marker {
            epoch,
            coordinator_epoch,
            offset,
            commit,
            timestamp: ts,
        }
    }

    #[test]
    fn transactions_open_complete_and_stay_unstable_until_replicated() {
        let mut s = ProducerStates::default();
        assert_eq!(s.check_txn(1, 0, true), Ok(()));
        s.begin_txn(1, 0, 10, 0);
        s.begin_txn(1, 0, 12, 0);
        s.begin_txn(2, 0, 11, 0);
        assert_eq!(
            s.first_unstable_offset(),
            Some(10),
            "opened at its first batch"
        );
        assert_eq!(s.check_txn(1, 0, false), Err(ErrorCode::INVALID_TXN_STATE));
        assert_eq!(
            s.check_txn(1, -1, true),
            Err(ErrorCode::INVALID_PRODUCER_EPOCH)
        );
        // Producer 1 commits at 13: done, but unstable until the HW passes 13.
        let txn = s.complete_txn(1, marker(0, 3, 13, true, 0), 0).unwrap();
        assert_eq!(
            (txn.first_offset, txn.last_offset, txn.aborted),
            (10, 13, false)
        );
        assert_eq!(
            s.last_stable_after(&txn),
            11,
            "producer 2's transaction is open"
        );
        assert_eq!(s.first_unstable_offset(), Some(10));
        s.on_high_watermark(13);
        assert_eq!(s.first_unstable_offset(), Some(10));
        s.on_high_watermark(14);
        assert_eq!(s.first_unstable_offset(), Some(11));
        // Markers: an older coordinator epoch is fenced, an older producer epoch refused.
        assert_eq!(
            s.check_marker(1, 0, 2),
            Err(ErrorCode::TRANSACTION_COORDINATOR_FENCED)
        );
        assert_eq!(s.check_marker(1, 0, 3), Ok(()));
        // A marker with nothing open completes nothing but bumps the epoch.
        assert_eq!(s.complete_txn(1, marker(1, 3, 15, false, 0), 0), None);
        assert_eq!(
            s.check_marker(1, 0, 3),
            Err(ErrorCode::INVALID_PRODUCER_EPOCH)
        );
        let t2 = s.complete_txn(2, marker(0, 3, 16, false, 0), 0).unwrap();
        assert!(t2.aborted);
        assert_eq!(s.last_stable_after(&t2), 17);
        s.on_high_watermark(17);
        assert_eq!(s.first_unstable_offset(), None);
    }

    #[test]
    fn producers_with_an_open_transaction_never_expire() {
        let mut s = ProducerStates::default();
        s.record(1, 0, meta(0, 0, 0), 1_000);
        s.begin_txn(1, 0, 0, 1_000);
        s.record(2, 0, meta(0, 0, 1), 1_000);
        assert_eq!(s.expire(1_000_000, 10), 1);
        assert_eq!(s.views().len(), 1);
        assert_eq!(s.views()[0].current_txn_start_offset, 0);
        s.complete_txn(1, marker(0, 0, 2, true, 0), 1_000);
        assert_eq!(s.expire(1_000_000, 10), 1);
    }

    #[test]
    fn the_snapshot_keeps_transactions_and_an_old_one_is_rebuilt() {
        let mut s = sample();
        s.begin_txn(1, 2, 106, 6_500);
        s.begin_txn(4, 0, 107, 6_500);
        s.complete_txn(4, marker(0, 7, 108, false, 99), 6_500);
        let text = s.to_snapshot(109);
        let (back, end) = ProducerStates::from_snapshot(&text).unwrap();
        assert_eq!((back.clone(), end), (s, 109));
        assert_eq!(back.first_unstable_offset(), Some(106));
        assert_eq!(back.views()[1].coordinator_epoch, 7, "producer 4");
        // Version 2 (no transactions): not read, so the state is rebuilt from the log.
        let v2 = "kafka-rs-producer-state 2 107\n1 2 5000 0 4 100 104 0\n";
        let v2 = format!("{v2}end 1 {:08x}\n", crc32c::crc32c(v2.as_bytes()));
        assert!(ProducerStates::from_snapshot(&v2).is_none());
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(SNAPSHOT_FILE), v2).unwrap();
        assert_eq!(load(dir.path(), 107, 0, 86_400_000, rebuilt), rebuilt());
    }
}
