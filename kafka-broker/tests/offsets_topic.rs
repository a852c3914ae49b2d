//! `__consumer_offsets` as the group coordinator's storage, on a broker opened in-process:
//! the topic is created compacted, commits and deletions are its records (tombstones
//! included), each group's in its own partition, and a reopened broker (no clean close: what
//! a kill -9 leaves) replays them; transactional offset commits are the producer's
//! transactional batches, pending until the producer's marker, before and after a restart.
#![allow(clippy::unwrap_used)]

use bytes::BytesMut;
use kafka_broker::coordinator::{OFFSETS_TOPIC, read_partition};
use kafka_broker::group::{CommitPartition, CommitRequest, LogEntry};
use kafka_broker::replica::{Acks, BatchSummary};
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::record::{ControlRecordType, RecordBatches, batch::NO_SEQUENCE};

fn open(dir: &std::path::Path) -> kafka_broker::Broker {
    let config = kafka_broker::BrokerConfig {
        server: kafka_broker::config::ServerConfig {
            data_dir: dir.to_path_buf(),
            ..Default::default()
        },
        group: kafka_broker::config::GroupConfig {
            offsets_topic_num_partitions: 4,
            ..Default::default()
        },
        ..Default::default()
    };
    kafka_broker::Broker::open(config).unwrap()
}

fn commit(broker: &kafka_broker::Broker, group: &str, partition: i32, offset: i64) {
    let errors = futures::executor::block_on(broker.groups.commit_offsets(&CommitRequest {
        group_id: group.into(),
        generation_id: -1,
        member_id: String::new(),
        group_instance_id: None,
        retention_ms: None,
        partitions: vec![CommitPartition {
            topic: "t".into(),
            partition,
            offset,
            leader_epoch: -1,
            metadata: Some(format!("{group}-{offset}")),
            commit_timestamp: None,
        }],
    }));
    assert_eq!(errors, vec![ErrorCode::NONE]);
}

fn committed(broker: &kafka_broker::Broker, group: &str, partition: i32) -> (i64, String) {
    let f = broker
        .groups
        .fetch_offsets(group, Some(&[("t".to_owned(), vec![partition])]), false);
    (f[0].offset, f[0].metadata.clone())
}

#[test]
fn the_offsets_topic_is_created_compacted_and_replayed_with_tombstones() {
    let dir = tempfile::tempdir().unwrap();
    {
        let broker = open(dir.path());
        let meta = broker.topic(OFFSETS_TOPIC).unwrap();
        assert_eq!(meta.partitions, 4);
        assert_eq!(meta.configs["cleanup.policy"], "compact");
        // Compacted only: never trimmed by time or size.
        let c = kafka_broker::log::LogConfig::from(&*broker.topic_config(OFFSETS_TOPIC).unwrap());
        assert_eq!((c.retention_ms, c.retention_bytes), (-1, -1));
        assert!(broker.delete_topic(OFFSETS_TOPIC).is_err());
        for g in ["a", "b", "c", "d", "e"] {
            commit(&broker, g, 0, 5);
            commit(&broker, g, 1, 6);
        }
        commit(&broker, "a", 0, 50);
        assert_eq!(
            broker.groups.delete_groups(&["b".to_owned()]),
            vec![ErrorCode::NONE]
        );
        let deleted = broker.groups.delete_offsets("c", &[("t".to_owned(), 1)]);
        assert_eq!(deleted, Ok(vec![ErrorCode::NONE]));
        // Each group's records are in its own partition.
        let p = kafka_broker::group::partition_for("a", 4);
        let records = read_partition(
            &broker.groups,
            OFFSETS_TOPIC,
            &broker.partition(OFFSETS_TOPIC, p).unwrap(),
        );
        assert!(!records.is_empty());
        assert!(records.iter().all(|r| matches!(r, LogEntry::Record(r)
                if kafka_broker::group::partition_for(r.key.group(), 4) == p)));
        // No clean close: what a kill -9 leaves.
    }
    let broker = open(dir.path());
    assert_eq!(committed(&broker, "a", 0), (50, "a-50".into()));
    assert_eq!(committed(&broker, "a", 1), (6, "a-6".into()));
    assert_eq!(committed(&broker, "b", 0).0, -1, "deleted group came back");
    assert_eq!(committed(&broker, "c", 0), (5, "c-5".into()));
    assert_eq!(committed(&broker, "c", 1).0, -1, "deleted offset came back");
    assert_eq!(committed(&broker, "e", 1), (6, "e-6".into()));
    let groups = broker.groups.list(&[], &[]);
    let mut ids: Vec<_> = groups.iter().map(|g| g.group_id.clone()).collect();
    ids.sort();
    assert_eq!(ids, ["a", "c", "d", "e"]);
}

fn txn_commit(broker: &kafka_broker::Broker, group: &str, pid: i64, partition: i32, offset: i64) {
    let request = kafka_broker::group::TxnCommitRequest {
        transactional_id: format!("tx-{pid}"),
        group_id: group.into(),
        producer_id: pid,
        producer_epoch: 1,
        generation_id: -1,
        member_id: String::new(),
        group_instance_id: None,
        partitions: vec![CommitPartition {
            topic: "t".into(),
            partition,
            offset,
            leader_epoch: -1,
            metadata: None,
            commit_timestamp: None,
        }],
    };
    let errors = futures::executor::block_on(broker.groups.txn_commit_offsets(&request));
    assert_eq!(errors, vec![ErrorCode::NONE]);
}

/// Appends a COMMIT or ABORT marker of `pid` to the group's offsets partition, as the
/// transaction coordinator does, and tells the group coordinator.
fn marker(broker: &kafka_broker::Broker, group: &str, pid: i64, commit: bool) {
    let index = kafka_broker::group::partition_for(group, 4);
    let part = broker.partition(OFFSETS_TOPIC, index).unwrap();
    let kind = if commit {
        ControlRecordType::Commit
    } else {
        ControlRecordType::Abort
    };
    let now = broker.now_ms();
    let batch = kafka_protocol::record::end_txn_marker_batch(kind, pid, 1, 0, now).unwrap();
    let summary = BatchSummary {
        producer_id: pid,
        producer_epoch: 1,
        base_sequence: NO_SEQUENCE,
        records: 1,
        max_timestamp: now,
        transactional: true,
    };
    part.append_as_leader(BytesMut::from(&batch[..]), &[summary], Acks::All, now)
        .unwrap();
    broker.groups.complete_transaction(index, pid, commit);
}

#[test]
fn transactional_offsets_are_written_as_the_producers_batches_and_replayed_by_marker() {
    let dir = tempfile::tempdir().unwrap();
    {
        let broker = open(dir.path());
        commit(&broker, "a", 0, 5);
        txn_commit(&broker, "a", 70, 0, 50);
        // The batch is the producer's, transactional, without a sequence.
        let p = kafka_broker::group::partition_for("a", 4);
        let part = broker.partition(OFFSETS_TOPIC, p).unwrap();
        let bytes = part.read(0, 1 << 20, part.offsets().log_end).unwrap();
        let batches: Vec<_> = RecordBatches::new(bytes).map(Result::unwrap).collect();
        let last = batches.last().unwrap();
        assert!(last.is_transactional() && !last.is_control());
        assert_eq!(
            (
                last.producer_id(),
                last.producer_epoch(),
                last.base_sequence()
            ),
            (70, 1, -1)
        );
        assert!(matches!(
            read_partition(&broker.groups, OFFSETS_TOPIC, &part).last(),
            Some(LogEntry::Transactional {
                producer_id: 70,
                ..
            })
        ));
        assert_eq!(committed(&broker, "a", 0).0, 5);
        marker(&broker, "a", 70, true);
        assert_eq!(committed(&broker, "a", 0).0, 50);
        // Aborted: the abort marker drops it, before and after the restart.
        txn_commit(&broker, "a", 71, 1, 61);
        marker(&broker, "a", 71, false);
        // Left open: no marker before the restart.
        txn_commit(&broker, "b", 72, 0, 70);
        assert!(matches!(
            read_partition(&broker.groups, OFFSETS_TOPIC, &part).last(),
            Some(LogEntry::Marker {
                producer_id: 71,
                commit: false,
                ..
            })
        ));
    }
    let broker = open(dir.path());
    assert_eq!(committed(&broker, "a", 0).0, 50);
    assert_eq!(committed(&broker, "a", 1).0, -1);
    let unstable = broker
        .groups
        .fetch_offsets("b", Some(&[("t".to_owned(), vec![0])]), true);
    assert_eq!(unstable[0].error, ErrorCode::UNSTABLE_OFFSET_COMMIT);
    // The open transaction ends after the restart.
    marker(&broker, "b", 72, true);
    assert_eq!(committed(&broker, "b", 0).0, 70);
    drop(broker);
    let broker = open(dir.path());
    assert_eq!(committed(&broker, "b", 0).0, 70);
}
