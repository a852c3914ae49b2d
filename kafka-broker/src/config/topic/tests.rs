#![allow(clippy::unwrap_used)]
use std::collections::BTreeMap;

use kafka_protocol::error_code::ErrorCode;

use super::*;
use crate::config::describe::{
    ConfigType, SOURCE_DEFAULT, SOURCE_DYNAMIC_TOPIC, SOURCE_STATIC_BROKER,
};

fn overrides(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn parse(pairs: &[(&str, &str)]) -> Result<TopicConfig, BrokerError> {
    TopicConfig::new(&BrokerConfig::default(), &overrides(pairs))
}

/// A valid non-default value for every key, and what it must set.
#[test]
fn every_key_parses_into_its_field() {
    let c = parse(&[
        ("cleanup.policy", "compact, delete"),
        ("compression.type", "zstd"),
        ("delete.retention.ms", "5"),
        ("flush.messages", "3"),
        ("flush.ms", "7"),
        ("index.interval.bytes", "100"),
        ("max.message.bytes", "2048"),
        ("message.timestamp.after.max.ms", "11"),
        ("message.timestamp.before.max.ms", "12"),
        ("message.timestamp.type", "LogAppendTime"),
        ("max.compaction.lag.ms", "13"),
        ("min.cleanable.dirty.ratio", "0.25"),
        ("min.compaction.lag.ms", "14"),
        ("min.insync.replicas", "2"),
        ("retention.bytes", "15"),
        ("retention.ms", "16"),
        ("segment.bytes", "4096"),
        ("segment.index.bytes", "8192"),
        ("segment.ms", "17"),
        ("unclean.leader.election.enable", "true"),
    ])
    .unwrap();
    assert!(c.compact && c.delete);
    assert_eq!(c.compression, Compression::Zstd);
    assert_eq!(c.delete_retention_ms, 5);
    assert_eq!((c.flush_messages, c.flush_ms), (Some(3), Some(7)));
    assert_eq!(c.index_interval_bytes, 100);
    assert_eq!(c.max_message_bytes, 2048);
    assert_eq!(
        (
            c.message_timestamp_before_max_ms,
            c.message_timestamp_after_max_ms
        ),
        (12, 11)
    );
    assert_eq!(c.message_timestamp_type, TimestampType::LogAppendTime);
    assert_eq!((c.min_compaction_lag_ms, c.max_compaction_lag_ms), (14, 13));
    assert_eq!(c.min_cleanable_dirty_ratio, 0.25);
    assert_eq!(c.min_insync_replicas, 2);
    assert_eq!((c.retention_bytes, c.retention_ms), (15, 16));
    assert_eq!((c.segment_bytes, c.segment_index_bytes), (4096, 8192));
    assert_eq!(c.segment_ms, 17);
    assert!(c.unclean_leader_election_enable);
    // Every key of the table was exercised except the deprecated difference key (below).
    assert_eq!(c.overrides().len(), KEYS.len() - 1);

    assert_eq!(
        c.produce_rules(),
        ProduceRules {
            max_message_bytes: 2048,
            timestamp_window: None,
            compacted: true,
            min_insync_replicas: 2,
        }
    );
}

#[test]
fn invalid_values_are_refused_naming_the_key() {
    let cases: &[(&str, &str)] = &[
        ("cleanup.policy", "keep"),
        ("cleanup.policy", ""),
        ("cleanup.policy", "compact,,delete"),
        ("compression.type", "brotli"),
        ("delete.retention.ms", "-1"),
        ("flush.messages", "0"),
        ("flush.ms", "0"),
        ("index.interval.bytes", "-1"),
        ("index.interval.bytes", "4294967296"),
        ("max.message.bytes", "2147483648"),
        ("max.message.bytes", "big"),
        ("message.timestamp.after.max.ms", "-5"),
        ("message.timestamp.before.max.ms", "1.5"),
        ("message.timestamp.difference.max.ms", "-1"),
        ("message.timestamp.type", "Now"),
        ("max.compaction.lag.ms", "0"),
        ("min.cleanable.dirty.ratio", "1.5"),
        ("min.cleanable.dirty.ratio", "NaN"),
        ("min.compaction.lag.ms", "-1"),
        ("min.insync.replicas", "0"),
        ("retention.bytes", "-2"),
        ("retention.ms", "-2"),
        ("retention.ms", ""),
        ("segment.bytes", "13"),
        ("segment.bytes", "2147483648"),
        ("segment.index.bytes", "3"),
        ("segment.ms", "0"),
        ("unclean.leader.election.enable", "yes"),
        ("no.such.key", "1"),
    ];
    for (k, v) in cases {
        let e = parse(&[("retention.ms", "5"), (k, v)]).unwrap_err();
        assert_eq!(e.error_code(), ErrorCode::INVALID_CONFIG, "{k}={v}");
        assert!(e.to_string().contains(&format!("{k}={v}")), "{k}={v}: {e}");
    }
    // Every key of the table has at least one refused value above.
    for k in KEYS {
        assert!(cases.iter().any(|(c, _)| c == &k.name), "{}", k.name);
    }
    // Kafka's "never" for flush intervals, -1 for retention.
    let c = parse(&[
        ("flush.messages", "9223372036854775807"),
        ("flush.ms", "9223372036854775807"),
        ("retention.ms", "-1"),
        ("retention.bytes", "-1"),
    ])
    .unwrap();
    assert_eq!((c.flush_messages, c.flush_ms), (None, None));
    assert_eq!((c.retention_ms, c.retention_bytes), (-1, -1));
}

#[test]
fn defaults_come_from_the_broker_and_overrides_win() {
    let mut cfg = BrokerConfig::default();
    cfg.apply("log.retention.ms", "1000").unwrap();
    cfg.apply("log.segment.bytes", "100000").unwrap();
    cfg.apply("message.max.bytes", "5000").unwrap();
    cfg.apply("log.cleanup.policy", "compact").unwrap();
    cfg.apply("log.message.timestamp.before.max.ms", "60000")
        .unwrap();
    let d = TopicConfig::defaults(&cfg);
    assert_eq!(
        (d.retention_ms, d.segment_bytes, d.max_message_bytes),
        (1000, 100000, 5000)
    );
    assert!(d.compact && !d.delete);
    assert_eq!(d.produce_rules().timestamp_window, Some((60000, i64::MAX)));
    let c = TopicConfig::new(
        &cfg,
        &overrides(&[("retention.ms", "7"), ("cleanup.policy", "delete")]),
    )
    .unwrap();
    assert_eq!((c.retention_ms, c.segment_bytes), (7, 100000));
    assert!(!c.produce_rules().compacted);
}

#[test]
fn the_deprecated_timestamp_difference_loses_to_the_new_keys() {
    let c = parse(&[
        ("message.timestamp.difference.max.ms", "100"),
        ("message.timestamp.after.max.ms", "5"),
    ])
    .unwrap();
    assert_eq!(c.produce_rules().timestamp_window, Some((100, 5)));
}

#[test]
fn describe_lists_sources_types_and_synonyms() {
    let mut cfg = BrokerConfig::default();
    cfg.apply("log.retention.ms", "1000").unwrap();
    let c = TopicConfig::new(&cfg, &overrides(&[("segment.bytes", "4096")])).unwrap();
    let d = c.describe(&cfg);
    assert_eq!(d.len(), KEYS.len());
    let get = |n: &str| d.iter().find(|e| e.name == n).unwrap();
    let seg = get("segment.bytes");
    assert_eq!(
        (seg.value.as_str(), seg.source),
        ("4096", SOURCE_DYNAMIC_TOPIC)
    );
    assert_eq!(seg.config_type, ConfigType::Int);
    let names: Vec<(&str, &str, i8)> = seg
        .synonyms
        .iter()
        .map(|s| (s.name.as_ref(), s.value.as_str(), s.source))
        .collect();
    assert_eq!(
        names,
        [
            ("segment.bytes", "4096", SOURCE_DYNAMIC_TOPIC),
            ("log.segment.bytes", "1073741824", SOURCE_DEFAULT)
        ]
    );
    // Set in the broker's configuration: STATIC_BROKER_CONFIG, then the built-in default.
    let ret = get("retention.ms");
    assert_eq!(
        (ret.value.as_str(), ret.source),
        ("1000", SOURCE_STATIC_BROKER)
    );
    let names: Vec<(&str, &str, i8)> = ret
        .synonyms
        .iter()
        .map(|s| (s.name.as_ref(), s.value.as_str(), s.source))
        .collect();
    assert_eq!(
        names,
        [
            ("log.retention.ms", "1000", SOURCE_STATIC_BROKER),
            ("log.retention.ms", "604800000", SOURCE_DEFAULT)
        ]
    );
    let seg_ms = get("segment.ms");
    assert_eq!(
        (seg_ms.value.as_str(), seg_ms.source),
        ("604800000", SOURCE_DEFAULT)
    );
    assert_eq!(seg_ms.synonyms.len(), 1);
    assert_eq!(seg_ms.synonyms[0].name, "log.roll.ms");
    assert_eq!(get("cleanup.policy").config_type, ConfigType::List);
    assert_eq!(
        get("min.cleanable.dirty.ratio").config_type,
        ConfigType::Double
    );
    // The default of every key parses with the key's own parser.
    for e in &d {
        parse(&[(e.name.as_ref(), e.value.as_str())]).unwrap();
    }
}

#[test]
fn incremental_operations() {
    let cfg = BrokerConfig::default();
    let c = TopicConfig::new(&cfg, &overrides(&[("retention.ms", "5")])).unwrap();
    let out = c
        .altered(
            &cfg,
            &[
                AlterOp::Append("cleanup.policy", "compact"),
                AlterOp::Set("segment.bytes", "1000"),
                AlterOp::Delete("retention.ms"),
            ],
        )
        .unwrap();
    assert_eq!(
        out,
        overrides(&[
            ("cleanup.policy", "delete,compact"),
            ("segment.bytes", "1000")
        ])
    );
    let c = TopicConfig::new(&cfg, &out).unwrap();
    let out = c
        .altered(
            &cfg,
            &[
                AlterOp::Subtract("cleanup.policy", "delete"),
                AlterOp::Append("cleanup.policy", "compact"),
            ],
        )
        .unwrap();
    assert_eq!(out["cleanup.policy"], "compact");
    for bad in [
        AlterOp::Append("retention.ms", "5"),
        AlterOp::Subtract("no.such.key", "x"),
    ] {
        let e = c.altered(&cfg, &[bad]).unwrap_err();
        assert_eq!(e.error_code(), ErrorCode::INVALID_CONFIG, "{bad:?}");
    }
    // Subtracting every item leaves an empty policy, which the parser refuses.
    let empty = c
        .altered(
            &cfg,
            &[AlterOp::Subtract("cleanup.policy", "delete,compact")],
        )
        .unwrap();
    assert!(TopicConfig::new(&cfg, &empty).is_err());
}

#[test]
fn stored_invalid_overrides_are_skipped_at_start() {
    let c = TopicConfig::lenient(
        &BrokerConfig::default(),
        "t",
        &overrides(&[("retention.ms", "x"), ("segment.bytes", "4096")]),
    );
    assert_eq!(c.segment_bytes, 4096);
    assert_eq!(c.retention_ms, BrokerConfig::default().log.retention_ms);
    assert_eq!(c.overrides(), &overrides(&[("segment.bytes", "4096")]));
}
