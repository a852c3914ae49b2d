//! Idempotent-producer state of one partition: per producer id, the epoch and the last five
//! batches appended (their sequence ranges and offsets), to reject out-of-order batches and to
//! answer a retried batch with the offsets it got the first time instead of writing it twice.
//!
//! Sequences are per (producer id, partition), start at 0 for a new epoch and wrap from
//! `i32::MAX` to 0, as in Kafka.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;

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

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct ProducerEntry {
    epoch: i16,
    batches: VecDeque<BatchMeta>,
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
            // Unknown producer: only a fresh sequence is acceptable.
            return if first_seq == 0 {
                Ok(Check::Append)
            } else {
                Err(ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER)
            };
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

    /// Records an appended batch.
    pub fn record(&mut self, pid: i64, epoch: i16, batch: BatchMeta) {
        let entry = self.producers.entry(pid).or_default();
        if epoch != entry.epoch {
            entry.epoch = epoch;
            entry.batches.clear();
        }
        entry.batches.push_back(batch);
        while entry.batches.len() > CACHED_BATCHES {
            entry.batches.pop_front();
        }
    }

    /// Forgets batches at or after `offset` (after a truncation).
    pub fn truncate_to(&mut self, offset: i64) {
        for e in self.producers.values_mut() {
            e.batches.retain(|b| b.last_offset < offset);
        }
        self.producers.retain(|_, e| !e.batches.is_empty());
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

    /// A text snapshot: `pid epoch first_seq last_seq first_offset last_offset timestamp` lines.
    pub fn to_snapshot(&self) -> String {
        let mut out = String::new();
        for (pid, e) in &self.producers {
            for b in &e.batches {
                let _ = writeln!(
                    out,
                    "{pid} {} {} {} {} {} {}",
                    e.epoch, b.first_seq, b.last_seq, b.first_offset, b.last_offset, b.timestamp
                );
            }
        }
        out
    }

    /// Reads a snapshot written by [`ProducerStates::to_snapshot`]; `None` if malformed.
    pub fn from_snapshot(text: &str) -> Option<Self> {
        let mut s = Self::default();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let f: Vec<i64> = line
                .split_whitespace()
                .map(str::parse)
                .collect::<Result<_, _>>()
                .ok()?;
            let [
                pid,
                epoch,
                first_seq,
                last_seq,
                first_offset,
                last_offset,
                timestamp,
            ] = f[..]
            else {
                return None;
            };
            s.record(
                pid,
                i16::try_from(epoch).ok()?,
                BatchMeta {
                    first_seq: i32::try_from(first_seq).ok()?,
                    last_seq: i32::try_from(last_seq).ok()?,
                    first_offset,
                    last_offset,
                    timestamp,
                },
            );
        }
        Some(s)
    }
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
        s.record(7, 0, meta(0, 4, 100));
        assert_eq!(s.check(7, 0, 5, 9), Ok(Check::Append));
        s.record(7, 0, meta(5, 9, 105));
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
        // Unknown producers must start at 0.
        assert_eq!(
            s.check(8, 0, 5, 5),
            Err(ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER)
        );
    }

    #[test]
    fn only_five_batches_are_remembered() {
        let mut s = ProducerStates::default();
        for i in 0..7 {
            s.record(1, 0, meta(i, i, 10 + i64::from(i)));
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
        s.record(1, 0, meta(i32::MAX - 1, i32::MAX, 0));
        assert_eq!(s.check(1, 0, 0, 1), Ok(Check::Append));
    }

    #[test]
    fn snapshot_round_trip_and_truncation() {
        let mut s = ProducerStates::default();
        s.record(1, 2, meta(0, 4, 100));
        s.record(1, 2, meta(5, 5, 105));
        s.record(9, 0, meta(0, 0, 106));
        let back = ProducerStates::from_snapshot(&s.to_snapshot()).unwrap();
        assert_eq!(back, s);
        assert!(ProducerStates::from_snapshot("1 2 x").is_none());
        s.truncate_to(105);
        assert_eq!(s.check(1, 2, 5, 5), Ok(Check::Append));
        assert_eq!(s.len(), 1);
    }
}
