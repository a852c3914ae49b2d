//! Tests of the storage engine, on real files in temporary directories.
#![allow(clippy::unwrap_used)]

mod append_read;
mod compaction;
mod durability;
mod files;
mod index_files;
mod manager;
mod recovery;
mod recovery_outcome;
mod upkeep;

use std::path::Path;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use kafka_protocol::record::{RecordBatchBuilder, RecordBatches};

use super::{FaultInjector, Log, LogConfig, LogIo, ReadInfo};

/// A batch of `n` records with timestamps `ts, ts+1, ...` and values `"<tag>-<i>"` padded to
/// `pad` bytes.
pub(super) fn batch(n: usize, ts: i64, tag: &str, pad: usize) -> BytesMut {
    let mut b = RecordBatchBuilder::new();
    for i in 0..n {
        let mut v = format!("{tag}-{i}").into_bytes();
        v.resize(pad.max(v.len()), b'.');
        b.append(ts + i as i64, Some(b"key"), Some(&v), &[])
            .unwrap();
    }
    b.build_mut().unwrap()
}

/// A config with small segments and indexes every `interval` bytes.
pub(super) fn small(segment_bytes: u64, interval: u64) -> LogConfig {
    LogConfig {
        segment_bytes,
        index_interval_bytes: interval,
        ..LogConfig::default()
    }
}

pub(super) fn open(dir: &Path, config: LogConfig) -> Log {
    Log::open(dir, config, false).unwrap()
}

pub(super) fn open_faulty(
    dir: &Path,
    config: LogConfig,
    recover: bool,
) -> (Log, Arc<FaultInjector>) {
    let faults = Arc::new(FaultInjector::new());
    let io: Arc<dyn LogIo> = faults.clone();
    (Log::open_with_io(dir, config, recover, io).unwrap(), faults)
}

/// Every record of a read: (offset, value), checking each batch's CRC.
pub(super) fn records_of(bytes: Bytes) -> Vec<(i64, String)> {
    let mut out = Vec::new();
    let mut batches = RecordBatches::new(bytes);
    for b in &mut batches {
        let b = b.unwrap();
        b.verify_crc().unwrap();
        for r in b.records(1 << 20).unwrap() {
            let r = r.unwrap();
            let v = String::from_utf8(r.value.clone().unwrap().to_vec()).unwrap();
            out.push((r.offset(&b), v.trim_end_matches('.').to_owned()));
        }
    }
    assert!(batches.remainder().is_empty(), "reads return whole batches");
    out
}

pub(super) fn read_all(log: &Log, from: i64) -> Vec<(i64, String)> {
    let info: ReadInfo = log.read(from, usize::MAX, i64::MAX).unwrap();
    records_of(info.read_bytes().unwrap())
}

/// Appends `batches` batches of `per` records each; returns the base offsets.
pub(super) fn fill(log: &mut Log, batches: usize, per: usize, pad: usize) -> Vec<i64> {
    (0..batches)
        .map(|i| {
            let ts = 1_000 + (i * per) as i64;
            log.append(batch(per, ts, &format!("b{i}"), pad), 0, ts)
                .unwrap()
                .base_offset
        })
        .collect()
}

/// The `.log` files of a partition directory, sorted.
pub(super) fn log_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    v.sort();
    v
}
