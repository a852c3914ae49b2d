//! Record batches (v2) and legacy message sets (v0/v1), compression.
//!
//! A record set (the `records` bytes of Produce and Fetch, or a segment file) is a sequence of
//! entries that each start with an offset (i64) and a length (i32), and carry their magic byte
//! at offset 16. Magic 2 entries are [`RecordBatch`]es; magic 0 and 1 are legacy messages
//! ([`legacy`]). Everything here reads slices of the input `Bytes`: headers in place, records
//! lazily, compressed payloads decompressed once with a caller-given size limit.

pub mod batch;
pub mod builder;
pub mod compression;
pub mod control;
pub mod convert;
pub mod filter;
pub mod layout;
pub mod legacy;
pub mod records;
pub mod timestamp;
pub mod writer;

#[cfg(test)]
mod batch_tests;
#[cfg(test)]
mod convert_tests;
#[cfg(test)]
mod legacy_tests;

use bytes::Bytes;

pub use batch::{RecordBatch, RecordBatchMut, RecordBatches};
pub use builder::{HeaderRef, RecordBatchBuilder};
pub use compression::{Compression, compress, compress_level, decompress};
pub use control::{
    ControlRecord, ControlRecordType, EndTxnMarker, end_txn_marker_batch, parse_end_txn_marker,
};
pub use filter::{Selection, select_records};
pub use layout::HeaderView;
pub use legacy::{LegacyEntries, LegacyMessage, LegacyMessageSetBuilder, LegacyRecords};
pub use records::{Record, RecordHeader, Records};
pub use timestamp::TimestampType;
pub use writer::{BatchWriter, ProducerFields};

use crate::error::DecodeError;

/// One entry of a record set: a v2 batch or a (possibly compressed wrapper) legacy message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordSetEntry {
    Batch(RecordBatch),
    Legacy(LegacyMessage),
}

impl RecordSetEntry {
    /// The magic byte: 2 for batches, 0 or 1 for legacy messages.
    pub fn magic(&self) -> i8 {
        match self {
            Self::Batch(b) => b.magic(),
            Self::Legacy(m) => m.magic,
        }
    }

    /// Size of the entry on the wire.
    pub fn size(&self) -> usize {
        match self {
            Self::Batch(b) => b.size(),
            Self::Legacy(m) => m.size(),
        }
    }
}

/// Iterator over a record set that may mix magic values (as old logs do), choosing per entry
/// by its magic byte. Partial trailing entries end the iteration cleanly, as in
/// [`RecordBatches`]; see [`RecordSet::remainder`].
#[derive(Debug, Clone)]
pub struct RecordSet {
    buf: Bytes,
    pos: usize,
    done: bool,
}

impl RecordSet {
    pub fn new(record_set: Bytes) -> Self {
        Self {
            buf: record_set,
            pos: 0,
            done: false,
        }
    }

    /// Bytes not yielded: the trailing partial entry, or the bad entry after an error.
    pub fn remainder(&self) -> Bytes {
        self.buf.slice(self.pos.min(self.buf.len())..)
    }
}

impl Iterator for RecordSet {
    type Item = Result<RecordSetEntry, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let rest = self.remainder();
        let min = legacy::MESSAGE_OVERHEAD_V0 as i32;
        let item = match batch::entry_size(&rest, "RecordSet.length", min) {
            None => None,
            Some(Err(e)) => Some(Err(e)),
            Some(Ok(size)) if size > rest.len() => None,
            Some(Ok(_)) => Some(match rest.get(batch::MAGIC_OFFSET).map(|&m| m as i8) {
                Some(batch::MAGIC_V2) => {
                    RecordBatch::parse(&rest).map(|(b, _)| RecordSetEntry::Batch(b))
                }
                _ => LegacyMessage::parse(&rest).map(|(m, _)| RecordSetEntry::Legacy(m)),
            }),
        };
        match &item {
            Some(Ok(entry)) => self.pos += entry.size(),
            _ => self.done = true,
        }
        item
    }
}

impl std::iter::FusedIterator for RecordSet {}
