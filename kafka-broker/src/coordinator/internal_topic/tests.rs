//! The adapter on a real partition: appends as one batch (transactional for a producer),
//! acks=all with `min.insync.replicas` before and after the append and the topic's timeout,
//! refusals for partitions not led here, and lead/resign reading the partition back.
#![allow(clippy::unwrap_used)]

use std::sync::Mutex;

use bytes::Bytes;

use super::*;
use crate::config::topic::ProduceRules;
use crate::coordinator::for_each_keyed_record;
use crate::log::{Log, LogConfig};
use crate::replica::producer_state::ProducerStates;

/// Reads back keyed records; counts loads and unloads.
#[derive(Debug, Default)]
struct Owner {
    loads: Mutex<Vec<(i32, i32, usize)>>,
    unloads: Mutex<Vec<i32>>,
}

impl PartitionOwner for Owner {
    type Entry = (Bytes, Option<Bytes>, bool);

    fn decode(&self, partition: i32, batch: &RecordBatch, out: &mut Vec<Self::Entry>) {
        if batch.is_control() {
            return;
        }
        let txn = batch.is_transactional();
        for_each_keyed_record("t", partition, batch, |k, v, _| {
            out.push((k.clone(), v.cloned(), txn));
        });
    }

    fn load(&self, partition: i32, epoch: i32, entries: Vec<Self::Entry>) {
        crate::sync::lock(&self.loads).push((partition, epoch, entries.len()));
    }

    fn unload(&self, partition: i32) -> usize {
        crate::sync::lock(&self.unloads).push(partition);
        3
    }
}

fn partition(dir: &std::path::Path) -> Arc<Partition> {
    let log = Log::open(dir, LogConfig::default(), false).unwrap();
    let p = Arc::new(Partition::new(
        "t",
        0,
        Arc::new(Mutex::new(log)),
        ProducerStates::default(),
        None,
        min_insync(1),
    ));
    p.become_leader(4, &[], &[], 0).unwrap();
    p
}

/// The default topic rules with `min.insync.replicas` at `n`.
fn min_insync(n: usize) -> ProduceRules {
    let defaults =
        crate::config::topic::TopicConfig::defaults(&crate::config::BrokerConfig::default());
    ProduceRules {
        min_insync_replicas: n,
        ..defaults.produce_rules()
    }
}

/// The topic's `min.insync.replicas` changed to `n` (as an alter pushes it to the partition).
fn set_min_insync(part: &Partition, n: usize) {
    part.set_config(LogConfig::default(), min_insync(n))
        .unwrap();
}

fn topic() -> InternalTopic {
    InternalTopic::new("t", Clock::manual(5_000), Duration::from_millis(200))
}

fn kv(k: &'static str, v: Option<&'static str>) -> KeyValue {
    (
        Bytes::from_static(k.as_bytes()),
        v.map(|v| Bytes::from_static(v.as_bytes())),
    )
}

#[tokio::test(start_paused = true)]
async fn appends_are_acks_all_batches_of_led_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let part = partition(dir.path());
    let t = topic();
    let owner = Owner::default();
    // Not led here yet.
    let refused = t.append(0, vec![kv("a", Some("1"))], None);
    assert_eq!(refused.unwrap_err(), ErrorCode::NOT_LEADER_OR_FOLLOWER);
    assert!(t.lead(&owner, 0, Arc::clone(&part)));
    assert!(!t.lead(&owner, 0, Arc::clone(&part)), "once per leadership");
    assert_eq!(*crate::sync::lock(&owner.loads), [(0, 4, 0)]);

    // One batch, acknowledged at once (the leader is the whole ISR).
    let ack = t
        .append(0, vec![kv("a", Some("1")), kv("b", None)], None)
        .unwrap();
    assert!(ack.is_done());
    let producer = Producer { id: 9, epoch: 2 };
    assert!(
        t.append(0, vec![kv("c", Some("3"))], Some(producer))
            .unwrap()
            .is_done()
    );
    let bytes = part.read(0, 1 << 20, part.log_end_offset()).unwrap();
    let batches: Vec<RecordBatch> = RecordBatches::new(bytes).map(Result::unwrap).collect();
    assert_eq!(batches.len(), 2);
    assert_eq!(
        batches[0].max_timestamp(),
        5_000,
        "stamped with the topic's clock"
    );
    assert!(!batches[0].is_transactional());
    assert!(batches[1].is_transactional());
    assert_eq!(
        (
            batches[1].producer_id(),
            batches[1].producer_epoch(),
            batches[1].base_sequence()
        ),
        (9, 2, -1)
    );
    let read = read_partition(&owner, "t", &part);
    assert_eq!(
        read,
        [
            (
                Bytes::from_static(b"a"),
                Some(Bytes::from_static(b"1")),
                false
            ),
            (Bytes::from_static(b"b"), None, false),
            (
                Bytes::from_static(b"c"),
                Some(Bytes::from_static(b"3")),
                true
            ),
        ]
    );

    // min.insync.replicas above the ISR: refused, nothing written.
    set_min_insync(&part, 2);
    part.become_leader(4, &[2], &[], 0).unwrap();
    let end = part.log_end_offset();
    let refused = t.append(0, vec![kv("d", Some("4"))], None);
    assert_eq!(refused.unwrap_err(), ErrorCode::NOT_ENOUGH_REPLICAS);
    assert_eq!(part.log_end_offset(), end);

    // Met when written, not once replicated (the ISR shrank meanwhile).
    part.become_leader(4, &[2], &[2], 0).unwrap();
    let ack = t.append(0, vec![kv("d", Some("4"))], None).unwrap();
    assert!(!ack.is_done());
    assert_eq!(part.log_end_offset(), end + 1);
    part.become_leader(4, &[2], &[], 0).unwrap();
    assert_eq!(
        ack.wait().await,
        Err(ErrorCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND)
    );

    // Never replicated: the topic's timeout.
    set_min_insync(&part, 1);
    part.become_leader(4, &[2], &[2], 0).unwrap();
    let ack = t.append(0, vec![kv("e", Some("5"))], None).unwrap();
    let started = tokio::time::Instant::now();
    assert_eq!(ack.wait().await, Err(ErrorCode::REQUEST_TIMED_OUT));
    assert_eq!(started.elapsed(), Duration::from_millis(200));

    // Given up: the owner forgets it, and nothing more is written there.
    assert_eq!(t.resign(&owner, 0), Some(3));
    assert_eq!(t.resign(&owner, 0), None);
    assert_eq!(*crate::sync::lock(&owner.unloads), [0]);
    let refused = t.append(0, vec![kv("f", Some("6"))], None);
    assert_eq!(refused.unwrap_err(), ErrorCode::NOT_LEADER_OR_FOLLOWER);
}

#[test]
fn lead_all_loads_the_hosted_partitions_once() {
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let parts: Vec<Arc<Partition>> = dirs.iter().map(|d| partition(d.path())).collect();
    let t = topic();
    let owner = Owner::default();
    let all = || {
        vec![
            (0, Some(Arc::clone(&parts[0]))),
            (1, None),
            (2, Some(Arc::clone(&parts[1]))),
        ]
    };
    assert_eq!(t.lead_all(&owner, all()), (2, 0));
    assert_eq!(t.lead_all(&owner, all()), (0, 0), "loaded already");
    assert!(t.leads(0) && !t.leads(1) && t.leads(2));
}
