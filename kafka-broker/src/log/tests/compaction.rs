//! Log compaction: what a pass keeps, when a log is due, tombstones, producers' last
//! batches, concurrent changes, the key map bound, and crashes during the swap.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, HashMap};

use kafka_protocol::record::{Compression, RecordBatch};

use super::super::checkpoint::CLEANER_CHECKPOINT_FILE;
use super::super::swap::STAGING_DIR;
use super::super::{CleanStats, CleanerLimits};
use super::*;

/// One record as appended: offset, key, value (`None` = tombstone).
type Rec = (i64, String, Option<String>);

fn compacted(segment_bytes: u64) -> LogConfig {
    LogConfig {
        compact: true,
        delete: false,
        min_cleanable_dirty_ratio: 0.0,
        ..small(segment_bytes, 256)
    }
}

/// Appends one batch of `(key, value)` records at timestamp `ts`; returns them with their
/// offsets.
fn put(
    log: &mut Log,
    recs: &[(&str, Option<&str>)],
    ts: i64,
    codec: Compression,
    producer: Option<(i64, i32)>,
) -> Vec<Rec> {
    let mut b = RecordBatchBuilder::new().compression(codec);
    if let Some((pid, seq)) = producer {
        b = b.producer(pid, 0, seq);
    }
    for (k, v) in recs {
        b.append(ts, Some(k.as_bytes()), v.map(str::as_bytes), &[])
            .unwrap();
    }
    let base = log
        .append(b.build_mut().unwrap(), 0, ts)
        .unwrap()
        .base_offset;
    // As the broker does once the append is acknowledged.
    log.set_high_watermark(log.log_end_offset());
    recs.iter()
        .enumerate()
        .map(|(i, (k, v))| (base + i as i64, k.to_string(), v.map(str::to_owned)))
        .collect()
}

/// Every record of the log: (offset, key, value).
fn contents(log: &Log) -> Vec<Rec> {
    let info = log
        .read(log.log_start_offset(), usize::MAX, i64::MAX)
        .unwrap();
    let mut out = Vec::new();
    for b in RecordBatches::new(info.read_bytes().unwrap()) {
        let b = b.unwrap();
        b.validate(1 << 24).unwrap();
        for r in b.records(1 << 24).unwrap() {
            let r = r.unwrap();
            let text = |b: Option<Bytes>| b.map(|b| String::from_utf8(b.to_vec()).unwrap());
            out.push((r.offset(&b), text(r.key).unwrap(), text(r.value)));
        }
    }
    out
}

/// What compacting everything below `end` must leave: below `end`, only the last record of
/// each key (among those below `end`); from `end` on, everything.
fn model(all: &[Rec], end: i64) -> Vec<Rec> {
    let mut last: HashMap<&str, i64> = HashMap::new();
    for (o, k, _) in all.iter().filter(|r| r.0 < end) {
        last.insert(k, *o);
    }
    all.iter()
        .filter(|(o, k, _)| *o >= end || last.get(k.as_str()) == Some(o))
        .cloned()
        .collect()
}

fn clean(log: &mut Log, now: i64) -> Option<CleanStats> {
    clean_with(log, now, &CleanerLimits::default(), HashMap::new())
}

fn clean_with(
    log: &mut Log,
    now: i64,
    limits: &CleanerLimits,
    producers: HashMap<i64, i64>,
) -> Option<CleanStats> {
    let plan = log.clean_plan(now)?;
    let cleaned = plan
        .with_producer_last_offsets(producers)
        .run(limits, now)
        .unwrap();
    Some(log.finish_clean(cleaned).unwrap())
}

/// 300 records over 17 keys in batches of 6, in several segments.
fn fill_keyed(log: &mut Log, codec: Compression) -> Vec<Rec> {
    let mut all = Vec::new();
    for b in 0..50 {
        let recs: Vec<(String, String)> = (0..6)
            .map(|i| {
                let n = b * 6 + i;
                (format!("key-{}", (n * 7) % 17), format!("value-{n}"))
            })
            .collect();
        let refs: Vec<(&str, Option<&str>)> = recs
            .iter()
            .map(|(k, v)| (k.as_str(), Some(v.as_str())))
            .collect();
        all.extend(put(log, &refs, 1_000 + b as i64, codec, None));
    }
    all
}

#[test]
fn a_pass_keeps_the_latest_record_of_each_key_at_its_offset() {
    for codec in [Compression::None, Compression::Zstd, Compression::Snappy] {
        let dir = tempfile::tempdir().unwrap();
        let mut log = open(dir.path(), compacted(1_500));
        let all = fill_keyed(&mut log, codec);
        let segments_before = log.segment_base_offsets().len();
        assert!(segments_before > 4, "{segments_before} segments");
        let active = *log.segment_base_offsets().last().unwrap();
        let size_before = log.size_in_bytes();
        // Segments are grouped by their size before cleaning: with room for all of them, the
        // pass writes one new segment.
        log.set_config(compacted(1 << 20)).unwrap();

        let stats = clean(&mut log, 10_000).expect("a compacted log with dirty data is due");
        assert_eq!(
            stats.first_dirty_offset, active,
            "everything sealed was cleaned"
        );
        assert_eq!(stats.groups_skipped, 0);
        assert!(stats.records_removed > 150, "{stats:?}");
        let expected = model(&all, active);
        assert_eq!(contents(&log), expected, "{codec:?}");
        assert!(log.size_in_bytes() < size_before);
        assert!(log.segment_base_offsets().len() < segments_before);
        assert_eq!(
            log.log_end_offset(),
            all.len() as i64,
            "offsets never change"
        );

        // Reads from any offset, removed or not, start at the right record.
        for from in [0, 1, 57, 123, active - 1, active] {
            let info = log.read(from, usize::MAX, i64::MAX).unwrap();
            let got = records_of_keyed(info.read_bytes().unwrap());
            let want: Vec<i64> = expected
                .iter()
                .map(|r| r.0)
                .filter(|&o| o >= from)
                .collect();
            assert!(
                got.iter().filter(|&&o| o >= from).eq(want.iter()),
                "read from {from}"
            );
        }

        // The files are what a reopen (clean or with recovery) reads back.
        drop(log);
        let log = Log::open(dir.path(), compacted(1_500), true).unwrap();
        assert_eq!(log.segment_base_offsets(), vec![0, active]);
        assert_eq!(contents(&log), expected);
        assert_eq!(
            log.first_dirty_offset(),
            active,
            "the checkpoint was persisted"
        );
        assert!(!dir.path().join(STAGING_DIR).exists());
    }
}

fn records_of_keyed(bytes: Bytes) -> Vec<i64> {
    let mut out = Vec::new();
    for b in RecordBatches::new(bytes) {
        let b = b.unwrap();
        for r in b.records(1 << 24).unwrap() {
            out.push(r.unwrap().offset(&b));
        }
    }
    out
}

#[test]
fn later_passes_clean_what_was_added_and_keep_the_view_consistent() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), compacted(1_500));
    let mut all = fill_keyed(&mut log, Compression::None);
    clean(&mut log, 10_000).unwrap();
    assert!(
        clean(&mut log, 10_000).is_none(),
        "nothing dirty, nothing to do"
    );
    all.extend(fill_keyed(&mut log, Compression::Lz4));
    let active = *log.segment_base_offsets().last().unwrap();
    let stats = clean(&mut log, 10_000).unwrap();
    assert_eq!(stats.first_dirty_offset, active);
    assert_eq!(contents(&log), model(&all, active));
    // The latest value of every key is what it was before any cleaning.
    let latest = |recs: &[Rec]| -> BTreeMap<String, Option<String>> {
        recs.iter()
            .map(|(_, k, v)| (k.clone(), v.clone()))
            .collect()
    };
    assert_eq!(latest(&contents(&log)), latest(&all));
}

#[test]
fn tombstones_survive_their_first_cleaning_and_go_after_delete_retention() {
    for (retention, survives) in [(0, false), (10_000, true)] {
        let dir = tempfile::tempdir().unwrap();
        let mut config = compacted(200);
        config.delete_retention_ms = retention;
        let mut log = open(dir.path(), config);
        put(
            &mut log,
            &[("a", Some("1")), ("b", Some("1"))],
            1_000,
            Compression::None,
            None,
        );
        put(&mut log, &[("a", None)], 1_001, Compression::None, None);
        put(
            &mut log,
            &[("c", Some("1"))],
            1_002,
            Compression::None,
            None,
        );
        let first = clean(&mut log, 5_000).unwrap();
        assert_eq!(first.tombstones_removed, 0);
        let keys = |log: &Log| -> Vec<(String, Option<String>)> {
            contents(log).into_iter().map(|(_, k, v)| (k, v)).collect()
        };
        assert_eq!(
            keys(&log)[..2],
            [("b".into(), Some("1".into())), ("a".into(), None)],
            "a's value went, its tombstone stays"
        );
        // Newer data, then a second pass: the tombstone's segment is now older than the newest
        // cleaned segment by at least `delete.retention.ms` (0) or not (10 s).
        for i in 0..4 {
            let v = format!("{i}");
            put(
                &mut log,
                &[("d", Some(v.as_str()))],
                2_000 + i,
                Compression::None,
                None,
            );
        }
        clean(&mut log, 5_000).unwrap();
        let has_tombstone = keys(&log).contains(&("a".into(), None));
        assert_eq!(has_tombstone, survives, "delete.retention.ms={retention}");
        assert!(keys(&log).contains(&("b".into(), Some("1".into()))));
    }
}

#[test]
fn a_log_is_due_by_dirty_ratio_or_max_lag_and_not_before_min_lag() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = compacted(1_500);
    config.compact = false;
    let mut log = open(dir.path(), config.clone());
    fill_keyed(&mut log, Compression::None);
    assert!(
        log.clean_plan(10_000).is_none(),
        "delete policy: never cleaned"
    );

    config.compact = true;
    config.min_compaction_lag_ms = 60_000;
    log.set_config(config.clone()).unwrap();
    assert!(
        log.clean_plan(10_000).is_none(),
        "every record is younger than the lag"
    );
    assert!(log.clean_plan(1_000_000).is_some(), "old enough");

    config.min_compaction_lag_ms = 0;
    log.set_config(config.clone()).unwrap();
    clean(&mut log, 10_000).unwrap();
    // A little new dirty data: below a high ratio it waits, unless it is older than the max
    // lag.
    for i in 0..8 {
        let v = format!("{i}");
        put(
            &mut log,
            &[("key-1", Some(v.as_str())); 6],
            1_100,
            Compression::None,
            None,
        );
    }
    config.min_cleanable_dirty_ratio = 0.99;
    log.set_config(config.clone()).unwrap();
    assert!(log.clean_plan(10_000).is_none(), "below the dirty ratio");
    config.max_compaction_lag_ms = 5_000;
    log.set_config(config).unwrap();
    assert!(
        log.clean_plan(10_000).is_some(),
        "past the max compaction lag"
    );
    assert!(log.clean_plan(3_000).is_none(), "not yet past it");
}

#[test]
fn a_producers_last_batch_stays_as_an_empty_batch() {
    for keep in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let mut log = open(dir.path(), compacted(200));
        let old = put(
            &mut log,
            &[("k", Some("1")); 3],
            1_000,
            Compression::Gzip,
            Some((7, 0)),
        );
        put(
            &mut log,
            &[("k", Some("2"))],
            1_001,
            Compression::None,
            None,
        );
        put(
            &mut log,
            &[("z", Some("1"))],
            1_002,
            Compression::None,
            None,
        );
        let last = old.last().unwrap().0;
        let producers = if keep {
            HashMap::from([(7, last)])
        } else {
            HashMap::new()
        };
        clean_with(&mut log, 5_000, &CleanerLimits::default(), producers).unwrap();
        let info = log.read(0, usize::MAX, i64::MAX).unwrap();
        let batches: Vec<RecordBatch> = RecordBatches::new(info.read_bytes().unwrap())
            .map(Result::unwrap)
            .collect();
        let empty = batches.iter().find(|b| b.producer_id() == 7);
        assert_eq!(empty.is_some(), keep);
        if let Some(b) = empty {
            b.validate(1 << 20).unwrap();
            assert_eq!(b.records_count(), 0);
            assert_eq!((b.base_offset(), b.last_offset()), (0, last));
            assert_eq!(b.base_sequence(), 0);
        }
        assert_eq!(contents(&log)[0], (3, "k".into(), Some("2".into())));
    }
}

#[test]
fn segments_that_changed_during_a_pass_are_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), compacted(1_500));
    let all = fill_keyed(&mut log, Compression::None);
    let plan = log.clean_plan(10_000).unwrap();
    let cleaned = plan.run(&CleanerLimits::default(), 10_000).unwrap();
    // While the pass ran, DeleteRecords removed the first segment.
    let second = log.segment_base_offsets()[1];
    log.set_high_watermark(log.log_end_offset());
    log.delete_records_before(second).unwrap();
    let stats = log.finish_clean(cleaned).unwrap();
    assert!(stats.groups_skipped > 0, "{stats:?}");
    assert_eq!(
        stats.first_dirty_offset, second,
        "the checkpoint did not move"
    );
    // Nothing below the new start is back, the rest reads as before or compacted.
    let now = contents(&log);
    assert!(now.iter().all(|r| r.0 >= second));
    let originals: HashMap<i64, &Rec> = all.iter().map(|r| (r.0, r)).collect();
    assert!(now.iter().all(|r| originals[&r.0] == r));
    assert!(!dir.path().join(STAGING_DIR).exists());
    // The next pass finishes the job.
    clean(&mut log, 10_000).unwrap();
    let active = *log.segment_base_offsets().last().unwrap();
    let rest: Vec<Rec> = all.iter().filter(|r| r.0 >= second).cloned().collect();
    assert_eq!(contents(&log), model(&rest, active));
}

#[test]
fn a_small_key_map_cleans_in_several_passes() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), compacted(1_500));
    let all = fill_keyed(&mut log, Compression::None);
    let active = *log.segment_base_offsets().last().unwrap();
    let tiny = CleanerLimits {
        dedupe_buffer_size: 1,
    };
    let mut checkpoints = Vec::new();
    while let Some(stats) = clean_with(&mut log, 10_000, &tiny, HashMap::new()) {
        checkpoints.push(stats.first_dirty_offset);
        assert!(checkpoints.len() < 50, "the passes make progress");
    }
    assert!(
        checkpoints.len() > 2,
        "one segment per pass: {checkpoints:?}"
    );
    assert!(checkpoints.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(checkpoints.last(), Some(&active));
    // Each pass only knows the keys of its own part, so older duplicates may remain; the
    // latest value of every key is unchanged and nothing is out of order.
    let now = contents(&log);
    assert!(now.windows(2).all(|w| w[0].0 < w[1].0));
    let latest = |recs: &[Rec]| -> BTreeMap<String, Option<String>> {
        recs.iter()
            .map(|(_, k, v)| (k.clone(), v.clone()))
            .collect()
    };
    assert_eq!(latest(&now), latest(&all));
    // A full pass from scratch gives the exact model.
    std::fs::remove_file(dir.path().join(CLEANER_CHECKPOINT_FILE)).unwrap();
    drop(log);
    let mut log = open(dir.path(), compacted(1_500));
    clean(&mut log, 10_000).unwrap();
    assert_eq!(contents(&log), model(&all, active));
}

#[test]
fn a_crash_during_the_swap_is_finished_or_undone_at_open() {
    // Crash after the commit point (swap file in place, replaced segments still there): the
    // open finishes the swap. Crash before it (only the staging directory): the open drops it.
    for committed in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let mut log = open(dir.path(), compacted(1_500));
        let all = fill_keyed(&mut log, Compression::None);
        let active = *log.segment_base_offsets().last().unwrap();
        let before = contents(&log);
        log.set_config(compacted(1 << 20)).unwrap();
        let cleaned = log
            .clean_plan(10_000)
            .unwrap()
            .run(&CleanerLimits::default(), 10_000)
            .unwrap();
        let groups = cleaned.group_ranges();
        assert_eq!(groups.len(), 1, "the sealed segments fit one new segment");
        let (base, end) = groups[0];
        if committed {
            cleaned.simulate_commit_point(dir.path(), base, end);
        }
        drop(log);
        let log = Log::open(dir.path(), compacted(1_500), true).unwrap();
        assert!(!dir.path().join(STAGING_DIR).exists());
        let swaps = &log.recovery().swaps;
        assert!(swaps.staging_removed);
        let finished = if committed { vec![(base, end)] } else { vec![] };
        assert_eq!(swaps.swaps_finished, finished);
        let leftovers: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".swap"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
        if committed {
            assert_eq!(contents(&log), model(&all, active));
            assert_eq!(log.segment_base_offsets(), vec![0, active]);
        } else {
            assert_eq!(contents(&log), before);
        }
    }
}
