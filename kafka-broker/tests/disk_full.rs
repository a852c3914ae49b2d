//! A full disk against the real broker process (`kafka-broker` binary, loopback only), each
//! test on its own small tmpfs (skipped, saying why, where mounting is not allowed; a failure
//! instead with `KAFKA_RS_REQUIRE_PEERS=1`, as CI runs it):
//!
//! - SIGTERM while the disk is full: exit status 0, a warning naming what was not written, and
//!   a restart (space freed) keeps every acknowledged record.
//! - A restart while the disk is full: the partitions are offline (Produce, ListOffsets, Fetch
//!   and Metadata say KAFKA_STORAGE_ERROR); once space is freed they serve again within the
//!   retry bound (`log.offline.retry.ms`), without a restart, every acknowledged record there.
//! - A few hundred produces failing on the full disk log a bounded number of lines, and not
//!   none.
//! - A partition that cannot be opened at start (a file stands where its directory was: the
//!   broker's start-up hosting fails, not the log layer's open; no tmpfs needed) answers
//!   KAFKA_STORAGE_ERROR, not UNKNOWN_TOPIC_OR_PARTITION, and serves once the file is gone.
#![allow(clippy::unwrap_used)]

#[path = "crash/broker.rs"]
#[allow(dead_code)]
mod broker;
#[path = "crash/client.rs"]
#[allow(dead_code)]
mod client;

use std::path::Path;
use std::time::{Duration, Instant};

use kafka_net::Connection;
use kafka_protocol::error_code::ErrorCode;

use broker::{Broker, Node, Tmpfs};
use client::{
    Ack, Model, connect, create_topic, fetch_all, fetch_error, list_latest, metadata_errors,
    produce_one,
};

/// Bytes of padding after each value's counter: about 8 KiB per 8-record batch.
const PAD: usize = 1000;
/// The retry bound the tests run the broker with.
const RETRY_MS: u64 = 300;
/// How long a partition may take to serve again once space is back (the retry interval plus
/// a recovery of a 2 MiB log, with a wide margin for a loaded machine).
const BACK_WITHIN: Duration = Duration::from_secs(15);
const STORAGE: i16 = ErrorCode::KAFKA_STORAGE_ERROR.code();

/// A tmpfs of `size` on `<tmp>/tmpfs`, or `None` (the test skips) where mounting is not allowed.
fn mount_or_skip(tmp: &Path, size: &str, test: &str) -> Option<Tmpfs> {
    let mnt = tmp.join("tmpfs");
    std::fs::create_dir(&mnt).unwrap();
    match Tmpfs::mount(&mnt, size) {
        Ok(m) => Some(m),
        Err(why) => {
            assert!(
                std::env::var("KAFKA_RS_REQUIRE_PEERS").as_deref() != Ok("1"),
                "{test}: cannot mount a tmpfs here ({why}), and KAFKA_RS_REQUIRE_PEERS=1 \
                 forbids skipping"
            );
            eprintln!(
                "SKIPPED {test}: cannot mount a tmpfs here ({why}). (KAFKA_RS_REQUIRE_PEERS=1 \
                 makes this a failure.)"
            );
            None
        }
    }
}

/// Fills the file system holding `path` by writing it until `ENOSPC`; returns its size.
fn fill(path: &Path) -> u64 {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    let chunk = vec![0xA5u8; 4096];
    let mut written = 0u64;
    loop {
        match f.write(&chunk) {
            Ok(0) => break,
            Ok(n) => written += n as u64,
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
            Err(e) => panic!("filling {}: {e}", path.display()),
        }
    }
    written
}

fn node(tmp: &Path) -> Node {
    Node::new(
        tmp.join("tmpfs").join("data"),
        tmp.join("output"),
        &[
            "log.segment.bytes=131072",
            "offsets.topic.num.partitions=1",
            &format!("log.offline.retry.ms={RETRY_MS}"),
        ],
    )
}

/// Produces an 8-record batch (acks=1): acknowledged goes in the model, refused must be
/// KAFKA_STORAGE_ERROR.
async fn produce(model: &mut Model, conn: &Connection, topic: &str, p: i32) -> Result<i64, i16> {
    let values = model.take(8);
    let r = produce_one(conn, topic, 1, p, &values, PAD).await;
    match r {
        Ok(base) => model.acks.push(Ack {
            partition: p,
            base_offset: base,
            values,
        }),
        Err(code) => {
            assert_eq!(code, STORAGE, "a produce to a full disk failed with {code}");
            model.refused.extend(values);
        }
    }
    r
}

/// Some data on `partitions` partitions, then the disk filled (by `filler`) and produced to
/// until 20 produces in a row were refused. Returns the number refused.
async fn fill_up(
    model: &mut Model,
    conn: &Connection,
    topic: &str,
    partitions: i32,
    filler: &Path,
) -> usize {
    for i in 0..6 {
        produce(model, conn, topic, i % partitions).await.unwrap();
    }
    fill(filler);
    let mut refused_in_a_row = 0;
    let mut refused = 0;
    for i in 0..400 {
        match produce(model, conn, topic, i % partitions).await {
            Ok(_) => refused_in_a_row = 0,
            Err(_) => {
                refused += 1;
                refused_in_a_row += 1;
            }
        }
        if refused_in_a_row >= 20 {
            return refused;
        }
    }
    panic!("the disk never refused 20 produces in a row");
}

async fn read_all(
    conn: &Connection,
    topic: &str,
    partitions: i32,
    ctx: &str,
) -> Vec<client::Fetched> {
    let mut logs = Vec::new();
    for p in 0..partitions {
        logs.push(fetch_all(conn, topic, p, PAD, ctx).await);
    }
    logs
}

/// Waits until a produce to `topic-p` is accepted again (at most [`BACK_WITHIN`]); returns how
/// long it took.
async fn wait_until_served(
    model: &mut Model,
    conn: &Connection,
    broker: &Broker,
    topic: &str,
    p: i32,
) -> Duration {
    let started = Instant::now();
    loop {
        if produce(model, conn, topic, p).await.is_ok() {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < BACK_WITHIN,
            "{topic}-{p} still refuses produces {BACK_WITHIN:?} after space was freed; output:\n{}",
            broker.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_on_a_full_disk_exits_0_warns_and_keeps_every_acknowledged_record() {
    const TOPIC: &str = "term";
    let tmp = tempfile::tempdir().unwrap();
    let Some(_mount) = mount_or_skip(tmp.path(), "2m", "sigterm_on_a_full_disk") else {
        return;
    };
    let mut node = node(tmp.path());
    let mut broker = node.start(&[]).await;
    let conn = connect(&broker.addr).await;
    create_topic(&conn, TOPIC, 2).await;
    let mut model = Model::default();
    let filler = tmp.path().join("tmpfs").join("filler");
    let refused = fill_up(&mut model, &conn, TOPIC, 2, &filler).await;
    drop(conn);
    // Whatever the produces left, nothing more fits now.
    fill(&filler);

    let status = broker.terminate().await;
    let output = broker.log();
    assert!(
        status.success(),
        "SIGTERM on a full disk: {status}; output:\n{output}"
    );
    let warning = output
        .lines()
        .find(|l| l.contains("WARN") && l.contains("not written:"))
        .unwrap_or_else(|| panic!("no warning naming what was not written:\n{output}"));

    // Space returns; a restart keeps every acknowledged record (and refused ones stay out).
    std::fs::remove_file(&filler).unwrap();
    let broker = node.start(&[]).await;
    let conn = connect(&broker.addr).await;
    let ctx = "restart after SIGTERM on a full disk";
    model.check(&read_all(&conn, TOPIC, 2, ctx).await, true, ctx);
    produce(&mut model, &conn, TOPIC, 0)
        .await
        .unwrap_or_else(|code| panic!("{ctx}: produce failed with {code}"));
    eprintln!(
        "SIGTERM on a full disk: exit 0, {refused} produces refused, {} records acknowledged and \
         kept; the warning: {warning}",
        model.acked_records()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_on_a_full_disk_leaves_partitions_offline_until_space_returns() {
    const TOPIC: &str = "restart";
    let tmp = tempfile::tempdir().unwrap();
    let Some(_mount) = mount_or_skip(tmp.path(), "2m", "a_restart_on_a_full_disk") else {
        return;
    };
    let mut node = node(tmp.path());
    let mut broker = node.start(&[]).await;
    let conn = connect(&broker.addr).await;
    create_topic(&conn, TOPIC, 2).await;
    let mut model = Model::default();
    let filler = tmp.path().join("tmpfs").join("filler");
    fill_up(&mut model, &conn, TOPIC, 2, &filler).await;
    drop(conn);
    // A crash, and a start on the still full disk: recovery cannot checkpoint.
    broker.kill();
    fill(&filler);
    let broker = node.start(&[]).await;
    let conn = connect(&broker.addr).await;
    for p in 0..2 {
        assert_eq!(
            produce(&mut model, &conn, TOPIC, p).await,
            Err(STORAGE),
            "produce to {TOPIC}-{p} on a full disk after a restart"
        );
        assert_eq!(
            list_latest(&conn, TOPIC, p).await,
            Err(STORAGE),
            "ListOffsets {TOPIC}-{p}"
        );
        assert_eq!(
            fetch_error(&conn, TOPIC, p, 0).await,
            STORAGE,
            "Fetch {TOPIC}-{p}"
        );
    }
    let (topic_error, parts) = metadata_errors(&conn, TOPIC).await;
    assert_eq!(topic_error, 0);
    assert_eq!(
        parts,
        vec![(0, STORAGE), (1, STORAGE)],
        "Metadata lists the offline partitions"
    );

    // Space returns: no restart, the partitions serve again within the retry bound.
    std::fs::remove_file(&filler).unwrap();
    let mut waited = Duration::ZERO;
    for p in 0..2 {
        waited = waited.max(wait_until_served(&mut model, &conn, &broker, TOPIC, p).await);
    }
    let ctx = "after space returned, no restart";
    let logs = read_all(&conn, TOPIC, 2, ctx).await;
    model.check(&logs, true, ctx);
    for (p, log) in logs.iter().enumerate() {
        assert_eq!(
            list_latest(&conn, TOPIC, p as i32).await,
            Ok(log.end()),
            "{ctx}: ListOffsets"
        );
    }
    assert_eq!(
        metadata_errors(&conn, TOPIC).await.1,
        vec![(0, 0), (1, 0)],
        "{ctx}: Metadata"
    );
    eprintln!(
        "restart on a full disk: offline, then served again {} ms after space was freed (retry \
         every {RETRY_MS} ms); {} records acknowledged, all read back",
        waited.as_millis(),
        model.acked_records()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn append_failures_on_a_full_disk_are_logged_rate_limited() {
    const TOPIC: &str = "noisy";
    const FAILING: usize = 300;
    let tmp = tempfile::tempdir().unwrap();
    let Some(_mount) = mount_or_skip(tmp.path(), "2m", "append_failures_rate_limited") else {
        return;
    };
    let mut node = node(tmp.path());
    let broker = node.start(&[]).await;
    let conn = connect(&broker.addr).await;
    create_topic(&conn, TOPIC, 2).await;
    let mut model = Model::default();
    let filler = tmp.path().join("tmpfs").join("filler");
    fill_up(&mut model, &conn, TOPIC, 2, &filler).await;
    fill(&filler);
    let started = Instant::now();
    for i in 0..FAILING {
        assert_eq!(
            produce(&mut model, &conn, TOPIC, (i % 2) as i32).await,
            Err(STORAGE)
        );
    }
    let secs = started.elapsed().as_secs();
    let output = broker.log();
    let lines: Vec<&str> = output
        .lines()
        .filter(|l| l.contains("appends failing on the disk"))
        .collect();
    // One line per partition per 10 s, plus the first of each partition.
    let bound = 2 * (secs as usize / 10 + 2);
    assert!(
        !lines.is_empty(),
        "{FAILING} produces failed on a full disk and the broker logged nothing:\n{output}"
    );
    assert!(
        lines.len() <= bound,
        "{} append-failure lines for {FAILING} failed produces in {secs} s (bound {bound}):\n{}",
        lines.len(),
        lines.join("\n")
    );
    eprintln!(
        "{FAILING} failed produces in {secs} s: {} append-failure lines (bound {bound})",
        lines.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_that_cannot_be_opened_at_start_is_a_storage_error_and_comes_back() {
    const TOPIC: &str = "lost";
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let mut node = Node::new(
        data.clone(),
        tmp.path().join("output"),
        &[
            "offsets.topic.num.partitions=1",
            &format!("log.offline.retry.ms={RETRY_MS}"),
        ],
    );
    let mut broker = node.start(&[]).await;
    let conn = connect(&broker.addr).await;
    create_topic(&conn, TOPIC, 2).await;
    let mut model = Model::default();
    for i in 0..4 {
        produce(&mut model, &conn, TOPIC, i % 2).await.unwrap();
    }
    drop(conn);
    assert!(broker.terminate().await.success());
    // Partition 1's directory is damaged: a plain file stands where it was (an operator's
    // mistake, a broken file system). The log layer skips it; the start must create the
    // directory, and cannot.
    let lost = data.join(format!("{TOPIC}-1"));
    std::fs::remove_dir_all(&lost).unwrap();
    std::fs::write(&lost, b"not a directory").unwrap();
    model.acks.retain(|a| a.partition != 1);
    let broker = node.start(&[]).await;
    let output = broker.log();
    assert!(
        output.contains("could not be opened at start"),
        "the start did not fail to open {TOPIC}-1:\n{output}"
    );
    let conn = connect(&broker.addr).await;
    assert_eq!(
        produce(&mut model, &conn, TOPIC, 1).await,
        Err(STORAGE),
        "produce to the partition that could not be opened"
    );
    assert_eq!(
        list_latest(&conn, TOPIC, 1).await,
        Err(STORAGE),
        "ListOffsets"
    );
    assert_eq!(fetch_error(&conn, TOPIC, 1, 0).await, STORAGE, "Fetch");
    let (topic_error, parts) = metadata_errors(&conn, TOPIC).await;
    assert_eq!(topic_error, 0);
    assert_eq!(parts, vec![(0, 0), (1, STORAGE)], "Metadata");
    // The partition that opened serves meanwhile.
    let ctx = "partition 0 while partition 1 is offline";
    assert_eq!(
        fetch_all(&conn, TOPIC, 0, PAD, ctx).await.end(),
        16,
        "{ctx}"
    );

    // The cause goes away: without a restart, the partition is created and served.
    std::fs::remove_file(&lost).unwrap();
    let waited = wait_until_served(&mut model, &conn, &broker, TOPIC, 1).await;
    let ctx = "after the damage was removed";
    model.check(&read_all(&conn, TOPIC, 2, ctx).await, true, ctx);
    assert_eq!(
        list_latest(&conn, TOPIC, 1).await,
        Ok(8),
        "{ctx}: a new log, one batch"
    );
    eprintln!(
        "a partition that could not be opened at start: KAFKA_STORAGE_ERROR, served {} ms after \
         its directory was freed",
        waited.as_millis()
    );
}
