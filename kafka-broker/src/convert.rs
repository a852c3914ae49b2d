//! Old message formats for old clients: the broker stores only v2 batches, and converts at the
//! edge, as Kafka 3.x does (Kafka 4 dropped these clients).
//!
//! - Produce v0-2 may carry magic 0/1 message sets: they are up-converted to one v2 batch
//!   ([`kafka_protocol::record::convert::up_convert`]) that then takes the normal path
//!   (validation, append). Produce v3+ must carry magic 2: anything else is `INVALID_RECORD`,
//!   as Kafka's `ProduceRequest.validateRecords` answers. zstd is refused below Produce v7
//!   (and in magic 0/1, which cannot express it): `UNSUPPORTED_COMPRESSION_TYPE`.
//! - Fetch v0-1 get magic 0 and Fetch v2-3 magic 1, down-converted from what the log read
//!   (no `sendfile` for those versions); the output is bounded by the partition's byte budget
//!   and [`MAX_DOWN_CONVERTED`], but always holds the first batch so the consumer makes
//!   progress. Fetch v0-9 answer `UNSUPPORTED_COMPRESSION_TYPE` for a partition whose data to
//!   return starts with a zstd batch, and stop before a later one.

use bytes::Bytes;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::record::convert::{
    ConvertError, DownConvertLimits, cut_before_zstd, down_convert, starts_with_legacy, up_convert,
};
use kafka_protocol::record::layout::{self, HeaderView};
use kafka_protocol::record::{Compression, compression};

use std::os::unix::fs::FileExt;

use crate::error::BrokerError;
use crate::log::FileSlice;

/// Largest decompressed payload read while converting one batch or message set (as much as a
/// produced batch may decompress to when it is validated).
const MAX_DECOMPRESSED: usize = 256 << 20;
/// Most bytes one down-converted partition answer holds, whatever the request allows, and
/// most bytes of messages one converted batch yields before compression (the rest is served
/// by the next fetch).
pub(crate) const MAX_DOWN_CONVERTED: usize = 32 << 20;

fn refused(e: ConvertError) -> BrokerError {
    let code = match e {
        ConvertError::Zstd { .. } | ConvertError::ZstdTooOld => {
            ErrorCode::UNSUPPORTED_COMPRESSION_TYPE
        }
        _ => ErrorCode::CORRUPT_MESSAGE,
    };
    BrokerError::kafka(code, e.to_string())
}

/// A Produce partition's records as they are to be validated and appended: magic 0/1 sets
/// (Produce v0-2 only) up-converted to one v2 batch, magic-2 sets as they are.
///
/// Up-conversion decompresses within memory reserved from `budget` (waiting for it): the
/// decompressed messages and the v2 batch built from them take up to twice what is
/// decompressed, so half the reservation may be decompressed. Starting from 32 times the set's
/// size, the reservation doubles while the messages need more, up to the whole budget.
pub(crate) async fn produced(
    records: Bytes,
    version: i16,
    budget: &crate::replica::MemoryBudget,
) -> Result<Bytes, BrokerError> {
    if starts_with_legacy(&records) {
        if version >= 3 {
            return Err(BrokerError::kafka(
                ErrorCode::INVALID_RECORD,
                format!(
                    "Produce requests with version {version} are only allowed to contain record batches with magic version 2"
                ),
            ));
        }
        let cap = budget.total();
        let mut wanted = records.len().saturating_mul(32).max(64 << 10);
        loop {
            let reserved = budget.reserve(wanted).await;
            let max_decompressed = (reserved.bytes() / 2).min(MAX_DECOMPRESSED);
            match up_convert(&records, max_decompressed) {
                Ok(up) => return Ok(up.batch),
                Err(ConvertError::Decode(e))
                    if compression::is_output_limit(&e) && reserved.bytes() < cap =>
                {
                    wanted = reserved.bytes().saturating_mul(2);
                }
                Err(e) => return Err(refused(e)),
            }
        }
    }
    if version < 7 {
        let zstd = match cut_before_zstd(&records) {
            Ok(before) => before.len() != records.len(),
            Err(_) => true,
        };
        if zstd {
            return Err(BrokerError::kafka(
                ErrorCode::UNSUPPORTED_COMPRESSION_TYPE,
                format!(
                    "Produce requests with version {version} are not allowed to use ZStandard compression"
                ),
            ));
        }
    }
    Ok(records)
}

/// How a Fetch version's records are answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FetchFormat {
    /// As stored (Fetch v10+), with `sendfile`.
    Stored,
    /// As stored but nothing from the first zstd batch on (Fetch v4-9).
    NoZstd,
    /// Down-converted to this magic (Fetch v0-1: 0, v2-3: 1).
    Legacy(i8),
}

impl FetchFormat {
    pub(crate) fn for_version(version: i16) -> Self {
        match version {
            ..=1 => Self::Legacy(0),
            2..=3 => Self::Legacy(1),
            4..=9 => Self::NoZstd,
            _ => Self::Stored,
        }
    }

    /// Whether the records must be read into memory and passed to [`Self::convert`] (only
    /// down-conversion: Fetch v4-9 keep `sendfile`, cut by [`zstd_free`] instead).
    pub(crate) fn converts(self) -> bool {
        matches!(self, Self::Legacy(_))
    }

    /// The answer for records `read` from `fetch_offset` (whole batches), within `budget`
    /// bytes (the first batch is answered whatever its size).
    pub(crate) fn convert(
        self,
        read: Bytes,
        fetch_offset: i64,
        budget: usize,
    ) -> Result<Bytes, BrokerError> {
        match self {
            Self::Stored => Ok(read),
            Self::NoZstd => cut_before_zstd(&read).map_err(refused),
            Self::Legacy(magic) => {
                let limits = DownConvertLimits {
                    max_bytes: budget.min(MAX_DOWN_CONVERTED),
                    max_entry: MAX_DOWN_CONVERTED,
                    max_decompressed: MAX_DECOMPRESSED,
                };
                down_convert(&read, magic, fetch_offset, limits)
                    .map(|d| d.records)
                    .map_err(refused)
            }
        }
    }
}

/// The file regions of whole batches up to the first zstd batch (Fetch v4-9), found from the
/// batch headers alone (a small `pread` per batch; the records stay in the files for
/// `sendfile`). UNSUPPORTED_COMPRESSION_TYPE when the first batch is zstd.
pub(crate) fn zstd_free(slices: Vec<FileSlice>) -> Result<Vec<FileSlice>, BrokerError> {
    let mut out = Vec::with_capacity(slices.len());
    for s in slices {
        let mut pos = 0usize;
        while pos + layout::HEADER_LEN <= s.len {
            let mut head = [0u8; layout::HEADER_LEN];
            s.file
                .read_exact_at(&mut head, s.position + pos as u64)
                .map_err(|e| BrokerError::kafka(ErrorCode::KAFKA_STORAGE_ERROR, e.to_string()))?;
            let header = HeaderView::new(&head)
                .map_err(|e| BrokerError::kafka(ErrorCode::CORRUPT_MESSAGE, e.to_string()))?;
            let size = header.batch_size().unwrap_or(layout::LOG_OVERHEAD);
            if Compression::from_attributes(header.attributes()).ok() == Some(Compression::Zstd) {
                if out.is_empty() && pos == 0 {
                    return Err(BrokerError::kafka(
                        ErrorCode::UNSUPPORTED_COMPRESSION_TYPE,
                        "zstd-compressed records need Fetch v10 or later",
                    ));
                }
                if pos > 0 {
                    out.push(FileSlice {
                        file: s.file.clone(),
                        position: s.position,
                        len: pos,
                    });
                }
                return Ok(out);
            }
            pos += size;
        }
        out.push(s);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use kafka_protocol::record::legacy::{LegacyRecords, MAGIC_V1};
    use kafka_protocol::record::{Compression, LegacyMessageSetBuilder, RecordBatchBuilder};

    use super::*;

    fn legacy(codec: Compression) -> Bytes {
        let mut b = LegacyMessageSetBuilder::new(MAGIC_V1, codec, 0).unwrap();
        b.append(5, Some(b"k"), Some(b"v")).unwrap();
        b.build().unwrap()
    }

    fn v2(codec: Compression) -> Bytes {
        let mut b = RecordBatchBuilder::new().compression(codec);
        b.append(5, Some(b"k"), Some(b"v"), &[]).unwrap();
        b.build().unwrap()
    }

    fn code(r: Result<Bytes, BrokerError>) -> ErrorCode {
        r.err().map_or(ErrorCode::NONE, |e| e.error_code())
    }

    fn produced_now(records: Bytes, version: i16) -> Result<Bytes, BrokerError> {
        let budget = crate::replica::MemoryBudget::new(crate::replica::budget::DEFAULT_BYTES);
        futures::executor::block_on(produced(records, version, &budget))
    }

    #[test]
    fn produce_versions_and_formats() {
        for v in 0..=2 {
            let up = produced_now(legacy(Compression::Gzip), v).unwrap();
            assert!(!starts_with_legacy(&up));
        }
        for v in 3..=11 {
            assert_eq!(
                code(produced_now(legacy(Compression::None), v)),
                ErrorCode::INVALID_RECORD
            );
        }
        for v in 0..=6 {
            assert_eq!(
                code(produced_now(v2(Compression::Zstd), v)),
                ErrorCode::UNSUPPORTED_COMPRESSION_TYPE
            );
        }
        assert_eq!(
            code(produced_now(v2(Compression::Zstd), 7)),
            ErrorCode::NONE
        );
        let mut bad = legacy(Compression::None).to_vec();
        bad[20] ^= 0xff;
        assert_eq!(
            code(produced_now(Bytes::from(bad), 2)),
            ErrorCode::CORRUPT_MESSAGE
        );
        let plain = v2(Compression::Snappy);
        assert_eq!(produced_now(plain.clone(), 11).unwrap(), plain);
    }

    #[test]
    fn up_conversion_decompresses_within_the_budget_growing_its_reservation() {
        // A gzip wrapper of 40 messages of 100 KB (4 MB decompressed, a few KB sent: more
        // than the first reservation of 32 times the set).
        let mut b = LegacyMessageSetBuilder::new(MAGIC_V1, Compression::Gzip, 0).unwrap();
        for i in 0..40 {
            b.append(i, Some(b"k"), Some(&[b'x'; 100_000])).unwrap();
        }
        let set = b.build().unwrap();
        assert!(set.len() * 32 < 4_000_000, "{}", set.len());
        let run = |budget: usize| {
            let budget = crate::replica::MemoryBudget::new(budget);
            let r = futures::executor::block_on(produced(set.clone(), 2, &budget));
            assert_eq!(budget.available(), budget.total(), "reservation given back");
            r
        };
        let up = run(64 << 20).unwrap();
        let batch = kafka_protocol::record::RecordBatch::from_bytes(up).unwrap();
        assert_eq!(batch.records_count(), 40);
        // A budget too small for the messages (half of it may be decompressed) refuses them.
        assert_eq!(code(run(6 << 20)), ErrorCode::CORRUPT_MESSAGE);
    }

    #[test]
    fn fetch_versions_and_formats() {
        assert_eq!(FetchFormat::for_version(0), FetchFormat::Legacy(0));
        assert_eq!(FetchFormat::for_version(3), FetchFormat::Legacy(1));
        assert_eq!(FetchFormat::for_version(9), FetchFormat::NoZstd);
        assert!(!FetchFormat::for_version(10).converts());
        let down = FetchFormat::Legacy(1)
            .convert(v2(Compression::Lz4), 0, 1 << 20)
            .unwrap();
        let msgs: Vec<_> = LegacyRecords::new(down, 1 << 20)
            .map(Result::unwrap)
            .collect();
        assert_eq!(msgs.len(), 1);
        for f in [FetchFormat::Legacy(0), FetchFormat::NoZstd] {
            assert_eq!(
                code(f.convert(v2(Compression::Zstd), 0, 1 << 20)),
                ErrorCode::UNSUPPORTED_COMPRESSION_TYPE
            );
        }
        let zstd = v2(Compression::Zstd);
        assert_eq!(
            FetchFormat::Stored.convert(zstd.clone(), 0, 1).unwrap(),
            zstd
        );
    }

    #[test]
    fn zstd_free_cuts_file_regions_at_the_first_zstd_batch() {
        use std::io::Write;
        let plain = v2(Compression::None);
        let lz4 = v2(Compression::Lz4);
        let zstd = v2(Compression::Zstd);
        let mut f = tempfile::tempfile().unwrap();
        for b in [&plain, &lz4, &zstd, &plain] {
            f.write_all(b).unwrap();
        }
        let file = std::sync::Arc::new(f);
        let region = |position: usize, len: usize| FileSlice {
            file: file.clone(),
            position: position as u64,
            len,
        };
        let total = plain.len() * 2 + lz4.len() + zstd.len();
        let kept = zstd_free(vec![region(0, total)]).unwrap();
        assert_eq!(kept.len(), 1);
        assert_eq!(
            (kept[0].position, kept[0].len),
            (0, plain.len() + lz4.len())
        );
        // Regions before the zstd one are kept whole; a region starting with it ends the list.
        let at = plain.len() + lz4.len();
        let kept = zstd_free(vec![region(0, at), region(at, total - at)]).unwrap();
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].len, at);
        let err = zstd_free(vec![region(at, total - at)]).unwrap_err();
        assert_eq!(err.error_code(), ErrorCode::UNSUPPORTED_COMPRESSION_TYPE);
        // No zstd: everything stays.
        let kept = zstd_free(vec![region(0, at)]).unwrap();
        assert_eq!(kept[0].len, at);
    }
}
