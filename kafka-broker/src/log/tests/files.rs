//! The cache of open segment files: eviction, descriptors held past eviction, reopening, and
//! logs that read and write correctly through a cache much smaller than their files.
#![allow(clippy::unwrap_used)]

use std::os::unix::fs::FileExt;
use std::sync::Arc;

use super::*;
use crate::log::files::{FileCache, FileHandle, default_open_files};
use crate::log::{FileKind, StdIo};

/// `n` files of 4 KiB in `dir`, each filled with its own index byte, and their handles.
fn files(dir: &Path, cache: &Arc<FileCache>, n: usize) -> Vec<Arc<FileHandle>> {
    (0..n)
        .map(|i| {
            let p = dir.join(format!("{i}.log"));
            std::fs::write(&p, vec![i as u8; 4096]).unwrap();
            let io: Arc<dyn LogIo> = Arc::new(StdIo);
            cache.handle(p, FileKind::Log, &io)
        })
        .collect()
}

fn first_byte(f: &std::fs::File) -> u8 {
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, 4095).unwrap();
    b[0]
}

#[test]
fn at_most_capacity_files_are_open_and_the_unused_go_first() {
    let dir = tempfile::tempdir().unwrap();
    let cache = FileCache::new(3);
    let hs = files(dir.path(), &cache, 8);
    for h in &hs {
        assert_eq!(first_byte(&h.get().unwrap()), hs_index(&hs, h));
        assert!(cache.open_files() <= 3, "{} open", cache.open_files());
    }
    assert_eq!(hs.iter().filter(|h| h.is_open()).count(), 3);
    assert_eq!(cache.opens(), 8);
    assert_eq!(cache.evictions(), 5);
    // File 7 is used again and again while the others come and go: it stays open.
    for h in hs.iter().take(6) {
        hs[7].get().unwrap();
        h.get().unwrap();
        assert!(hs[7].is_open(), "a file in use was evicted");
    }
    assert!(cache.open_files() <= 3);
}

fn hs_index(hs: &[Arc<FileHandle>], h: &Arc<FileHandle>) -> u8 {
    hs.iter().position(|x| Arc::ptr_eq(x, h)).unwrap() as u8
}

#[test]
fn a_held_descriptor_stays_valid_after_eviction_and_reopening_reads_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let cache = FileCache::new(2);
    let hs = files(dir.path(), &cache, 5);
    let held = hs[0].get().unwrap();
    for h in &hs[1..] {
        h.get().unwrap();
    }
    assert!(!hs[0].is_open(), "file 0 should have been evicted");
    // The evicted handle's descriptor is still usable by whoever holds it (a fetch answer
    // being sent, an fsync).
    assert_eq!(first_byte(&held), 0);
    held.sync_all().unwrap();
    drop(held);
    // Reopened on use: the same bytes, and bytes written after the eviction.
    let again = hs[0].get().unwrap();
    assert_eq!(first_byte(&again), 0);
    again.write_all_at(b"new", 4096).unwrap();
    drop(again);
    for h in &hs[1..] {
        h.get().unwrap();
    }
    let mut b = [0u8; 3];
    hs[0].get().unwrap().read_exact_at(&mut b, 4096).unwrap();
    assert_eq!(&b, b"new");
    assert!(cache.evictions() >= 5);
}

#[test]
fn a_deleted_file_is_closed_and_never_recreated() {
    let dir = tempfile::tempdir().unwrap();
    let cache = FileCache::new(4);
    let hs = files(dir.path(), &cache, 1);
    let path = hs[0].path().to_owned();
    let held = hs[0].get().unwrap();
    std::fs::remove_file(&path).unwrap();
    hs[0].retire();
    assert!(!hs[0].is_open());
    assert_eq!(
        hs[0].get().unwrap_err().kind(),
        std::io::ErrorKind::NotFound
    );
    assert!(!path.exists(), "a retired handle brought its file back");
    assert_eq!(
        first_byte(&held),
        0,
        "a holder keeps reading a deleted file"
    );
    // The retired handle's slot is swept out, not counted for ever.
    let others = files(dir.path(), &cache, 4);
    others.iter().for_each(|h| drop(h.get().unwrap()));
    assert!(cache.open_files() <= 4);
    assert!(others.iter().all(|h| h.is_open()));
}

#[test]
fn the_default_leaves_room_for_connections_and_the_rest() {
    // 1,024 descriptors, 10,000 connections allowed: half of what is left after the reserve.
    assert_eq!(default_open_files(1024, 10_000), 448);
    // Few connections: they get what they may use, the files the rest.
    assert_eq!(default_open_files(4096, 100), 4096 - 128 - 100);
    assert_eq!(
        default_open_files(1 << 20, 10_000),
        (1 << 20) - 128 - 10_000
    );
    // Never below the floor.
    assert_eq!(default_open_files(100, 10), 64);
}

/// Twenty segments of which a cache of 4 can keep a fifth of the files open: appends, rolls,
/// reads of every old segment, index lookups, a restart and more appends all see the same
/// data as with every file open.
#[test]
fn a_log_works_through_a_cache_smaller_than_its_files() {
    let dir = tempfile::tempdir().unwrap();
    let cache = FileCache::new(4);
    let open = |recover: bool| {
        Log::open_with(
            dir.path(),
            small(2_000, 300),
            recover,
            Arc::new(StdIo),
            Arc::clone(&cache),
        )
        .unwrap()
    };
    let mut log = open(false);
    let bases = fill(&mut log, 60, 10, 50);
    assert!(log.segment_base_offsets().len() >= 15, "too few segments");
    assert!(cache.open_files() <= 4, "{} open", cache.open_files());
    let expect = read_all(&log, 0);
    assert_eq!(expect.len(), 600);
    // Reads from the middle of old segments go through the offset index of each.
    for (i, &b) in bases.iter().enumerate().step_by(7) {
        let got = read_all(&log, b + 3);
        assert_eq!(got.first().unwrap().0, b, "batch {i}");
        assert_eq!(got, expect[i * 10..]);
    }
    assert_eq!(
        log.offset_for_timestamp(1_000 + 355).unwrap(),
        Some((355, 1_355))
    );
    assert!(cache.open_files() <= 4);
    assert!(cache.evictions() > 20, "the cache should have churned");
    log.flush().unwrap();
    log.close().unwrap();
    drop(log);
    // A recovery (every segment scanned) and a clean open through the same small cache.
    for recover in [true, false] {
        let mut log = open(recover);
        assert_eq!(read_all(&log, 0), expect, "recover={recover}");
        assert!(cache.open_files() <= 4);
        log.flush().unwrap();
        log.close().unwrap();
    }
    let mut log = open(false);
    assert_eq!(log.report.indexes_rebuilt, 0, "indexes were written whole");
    let more = fill(&mut log, 5, 10, 50);
    assert_eq!(more[0], 600);
    // Deleting records removes the oldest segments (their descriptors are closed and the
    // files stay deleted) while the rest reads the same.
    let segments_before = log.segment_base_offsets().len();
    log.delete_records_before(300).unwrap();
    log.apply_retention(10_000).unwrap();
    assert!(log.segment_base_offsets().len() < segments_before);
    let got = read_all(&log, 300);
    assert_eq!(got[..300], expect[300..]);
    assert_eq!(got.len(), 350);
    assert_eq!(
        log_files(dir.path()).len(),
        log.segment_base_offsets().len()
    );
    assert!(cache.open_files() <= 4);
}
