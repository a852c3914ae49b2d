//! The `transaction.*` settings and their place in the broker's configuration.

use super::*;
use crate::config::{Applied, BrokerConfig};

#[test]
fn defaults_are_kafkas() {
    let c = TxnConfig::default();
    assert_eq!(c.max_timeout_ms, 900_000);
    assert_eq!(c.transactional_id_expiration_ms, 604_800_000);
    assert_eq!(c.num_partitions, 50);
    assert_eq!(c.abort_timed_out_interval_ms, 10_000);
    assert_eq!(c.remove_expired_interval_ms, 3_600_000);
    assert_eq!((c.replication_factor, c.min_isr), (3, 2));
}

#[test]
fn the_broker_key_table_parses_them() {
    let mut b = BrokerConfig::default();
    for (k, v) in [
        ("transaction.max.timeout.ms", " 60000"),
        ("transactional.id.expiration.ms", "1000"),
        ("transaction.state.log.num.partitions", "3"),
        ("transaction.state.log.replication.factor", "1"),
        ("transaction.state.log.min.isr", "1"),
        (
            "transaction.abort.timed.out.transaction.cleanup.interval.ms",
            "5",
        ),
        (
            "transaction.remove.expired.transaction.cleanup.interval.ms",
            "6",
        ),
    ] {
        assert_eq!(b.apply(k, v).unwrap(), Applied::Known, "{k}");
    }
    // Another part's key leaves these alone.
    let before = b.txn.clone();
    assert_eq!(b.apply("group.max.size", "6").unwrap(), Applied::Known);
    assert_eq!(b.txn, before);
    assert!(b.apply("transaction.max.timeout.ms", "0").is_err());
    assert!(
        b.apply("transaction.state.log.num.partitions", "x")
            .is_err()
    );
    assert!(
        b.apply("transaction.state.log.segment.bytes", "10")
            .is_err()
    );
    let c = &b.txn;
    assert_eq!(
        (
            c.max_timeout_ms,
            c.transactional_id_expiration_ms,
            c.num_partitions
        ),
        (60_000, 1_000, 3)
    );
    assert_eq!(
        (c.abort_timed_out_interval_ms, c.remove_expired_interval_ms),
        (5, 6)
    );
    assert!(!c.valid_timeout(60_001) && c.valid_timeout(60_000) && !c.valid_timeout(0));
    assert_eq!(c.partition_for("tx"), crate::group::partition_for("tx", 3));
}

#[test]
fn the_broker_config_forwards_them() {
    let mut b = BrokerConfig::default();
    assert_eq!(
        b.apply("transaction.max.timeout.ms", "30000").unwrap(),
        Applied::Known
    );
    assert_eq!(
        b.apply("transaction.state.log.replication.factor", "1")
            .unwrap(),
        Applied::Known
    );
    assert_eq!(
        b.apply("transaction.state.log.min.isr", "1").unwrap(),
        Applied::Known
    );
    assert_eq!(
        b.apply("transactional.id.expiration.ms", "5000").unwrap(),
        Applied::Known
    );
    assert_eq!(
        b.apply("transaction.no.such.key", "1").unwrap(),
        Applied::Unknown
    );
    assert!(b.apply("transaction.state.log.min.isr", "0").is_err());
    assert_eq!(
        (
            b.txn.max_timeout_ms,
            b.txn.replication_factor,
            b.txn.min_isr
        ),
        (30_000, 1, 1)
    );
    assert_eq!(b.txn.transactional_id_expiration_ms, 5_000);
}
