//! The broker key table against the code it replaced: every key parses the value it writes,
//! names itself when it refuses one, and is listed as before.
#![allow(clippy::unwrap_used)]
use std::collections::BTreeSet;

use super::*;
use crate::config::Applied;
use crate::config::describe;
use crate::config::topic::KEYS as TOPIC_KEYS;

#[test]
fn names_are_unique_and_synonyms_name_a_key() {
    let mut seen = BTreeSet::new();
    for k in BROKER_KEYS {
        assert!(seen.insert(k.name), "{} twice", k.name);
        if let Some(of) = k.synonym_of {
            let main = broker_key(of).unwrap_or_else(|| panic!("{}: no {of}", k.name));
            assert_eq!(
                main.synonym_of, None,
                "{}: {of} is a synonym itself",
                k.name
            );
        }
    }
}

#[test]
fn every_key_parses_its_default() {
    let d = BrokerConfig::default();
    for k in BROKER_KEYS {
        let Some(v) = (k.get)(&d) else {
            continue;
        };
        let mut c = BrokerConfig::default();
        (k.set)(&mut c, k.name, &v).unwrap_or_else(|e| panic!("{}={v}: {e}", k.name));
        assert_eq!(c, d, "{}={v} changed the configuration", k.name);
    }
}

#[test]
fn every_value_written_parses_back() {
    let mut c = BrokerConfig::default();
    let unknown = c
        .apply_properties(
            "node.id=3\n\
             listeners=PLAINTEXT://127.0.0.1:19092,CONTROLLER://[::1]:19093\n\
             advertised.listeners=PLAINTEXT://kafka.example:29092\n\
             listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n\
             inter.broker.listener.name=PLAINTEXT\ncontroller.listener.names=CONTROLLER\n\
             process.roles=broker,controller\ncontroller.quorum.voters=3@[::1]:19093,4@h:1\n\
             broker.rack=r1\n\
             replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector\n\
             cluster.id=MkU3OEVBNTcwNTJENDM2Qk\nlog.dirs=/tmp/a\nlog.retention.ms=-1\n\
             log.flush.interval.messages=5\nlog.open.files.max=100\n\
             max.connections.per.ip.overrides=127.0.0.2:12,[::1]:0\n\
             log.cleanup.policy=compact,delete\nlog.cleaner.min.cleanable.ratio=0.25\n\
             log.message.timestamp.type=LogAppendTime\nqueued.max.request.bytes=1000\n",
        )
        .unwrap();
    assert!(unknown.is_empty(), "{unknown:?}");
    c.validate().unwrap();
    let mut checked = 0;
    for k in BROKER_KEYS {
        let Some(v) = (k.get)(&c) else {
            continue;
        };
        let mut again = c.clone();
        (k.set)(&mut again, k.name, &v).unwrap_or_else(|e| panic!("{}={v}: {e}", k.name));
        assert_eq!(again, c, "{}={v} changed the configuration", k.name);
        checked += 1;
    }
    // Only the ignored keys and the retention in hours/minutes (-1 is not whole hours)
    // have no value.
    assert_eq!(checked, BROKER_KEYS.len() - 6 - 2);
}

#[test]
fn every_key_is_known_and_a_refusal_names_it() {
    let mut refused = 0;
    for k in BROKER_KEYS {
        let mut c = BrokerConfig::default();
        match c.apply(&format!(" {} ", k.name), "x y") {
            Ok(applied) => assert_eq!(applied, Applied::Known, "{}", k.name),
            Err(e) => {
                // A listener key names the key Kafka documents (`listeners` for `listen`).
                let named = k.synonym_of.unwrap_or(k.name);
                let e = e.to_string();
                assert!(e.contains(k.name) || e.contains(named), "{}: {e}", k.name);
                refused += 1;
            }
        }
    }
    assert!(refused > BROKER_KEYS.len() / 2, "{refused}");
}

#[test]
fn every_broker_default_of_a_topic_key_is_a_broker_key() {
    for t in TOPIC_KEYS {
        let name = t.broker_key.unwrap();
        match t.fixed_default {
            None => {
                let k = broker_key(name).unwrap_or_else(|| panic!("{}: no {name}", t.name));
                assert!((k.get)(&BrokerConfig::default()).is_some(), "{name}");
            }
            // A broker setting this broker does not have.
            Some(_) => assert!(broker_key(name).is_none(), "{name}"),
        }
    }
}

#[test]
fn describe_lists_every_listed_key_as_before() {
    let mut c = BrokerConfig::default();
    // Unset keys without a default are left out.
    let d = describe::broker(&c);
    let names: Vec<&str> = d.iter().map(|e| e.name.as_ref()).collect();
    assert!(!names.contains(&"broker.rack"));
    c.apply("broker.rack", "r1").unwrap();
    c.apply("replica.selector.class", ReplicaSelectorClass::RACK_AWARE)
        .unwrap();
    let d = describe::broker(&c);
    let names: Vec<&str> = d.iter().map(|e| e.name.as_ref()).collect();
    let listed: Vec<&str> = BROKER_KEYS
        .iter()
        .filter(|k| k.listed)
        .map(|k| k.name)
        .collect();
    assert_eq!(names, listed);
    // The keys (and types) listed before the table.
    let before: BTreeSet<(&str, i8)> = [
        ("node.id", ConfigType::Int as i8),
        ("broker.id", ConfigType::Int as i8),
        ("log.dirs", ConfigType::List as i8),
        ("num.partitions", ConfigType::Int as i8),
        ("default.replication.factor", ConfigType::Int as i8),
        ("auto.create.topics.enable", ConfigType::Boolean as i8),
        ("delete.topic.enable", ConfigType::Boolean as i8),
        ("log.segment.bytes", ConfigType::Int as i8),
        ("log.roll.ms", ConfigType::Long as i8),
        ("log.retention.ms", ConfigType::Long as i8),
        ("log.retention.bytes", ConfigType::Long as i8),
        ("log.retention.check.interval.ms", ConfigType::Long as i8),
        ("log.flush.interval.messages", ConfigType::Long as i8),
        ("log.flush.interval.ms", ConfigType::Long as i8),
        ("log.index.interval.bytes", ConfigType::Int as i8),
        ("message.max.bytes", ConfigType::Int as i8),
        (
            "log.message.timestamp.before.max.ms",
            ConfigType::Long as i8,
        ),
        ("log.message.timestamp.after.max.ms", ConfigType::Long as i8),
        ("socket.request.max.bytes", ConfigType::Int as i8),
        ("max.connections", ConfigType::Int as i8),
        ("offsets.topic.num.partitions", ConfigType::Int as i8),
        ("broker.rack", ConfigType::String as i8),
        ("replica.selector.class", ConfigType::Class as i8),
    ]
    .into_iter()
    .collect();
    let now: BTreeSet<(&str, i8)> = d
        .iter()
        .map(|e| (e.name.as_ref(), e.config_type as i8))
        .collect();
    assert_eq!(now, before);
    let get = |n: &str| d.iter().find(|e| e.name == n).unwrap();
    assert_eq!(get("log.dirs").value, "./data");
    assert_eq!(get("log.flush.interval.ms").value, i64::MAX.to_string());
    assert_eq!(get("broker.rack").value, "r1");
    assert_eq!(
        get("replica.selector.class").value,
        ReplicaSelectorClass::RACK_AWARE
    );
    for e in &d {
        assert_eq!(e.source, describe::SOURCE_STATIC_BROKER, "{}", e.name);
        assert_eq!(e.synonyms.len(), 1, "{}", e.name);
        assert_eq!(e.synonyms[0].value, e.value, "{}", e.name);
        assert!(!e.sensitive);
    }
}

#[test]
fn synonyms_set_the_same_setting() {
    let mut a = BrokerConfig::default();
    let mut b = BrokerConfig::default();
    a.apply("log.retention.hours", "2").unwrap();
    b.apply("log.retention.ms", "7200000").unwrap();
    assert_eq!(a, b);
    a.apply("log.retention.minutes", "3").unwrap();
    assert_eq!(a.log.retention_ms, 180_000);
    a.apply("log.roll.hours", "1").unwrap();
    assert_eq!(a.log.roll_ms, 3_600_000);
    assert!(a.apply("log.roll.hours", "0").is_err());
    a.apply("broker.id", "7").unwrap();
    assert_eq!(a.server.node_id, 7);
    a.apply("log.dir", "/x,/y").unwrap();
    assert_eq!(a.server.data_dir, std::path::PathBuf::from("/x"));
    let e = a.apply("log.dir", " , ").unwrap_err().to_string();
    assert!(e.contains("log.dir is empty"), "{e}");
}

#[test]
fn cluster_ids_are_checked() {
    let mut c = BrokerConfig::default();
    c.apply("cluster.id", "MkU3OEVBNTcwNTJENDM2Qk").unwrap();
    assert_eq!(
        c.server.cluster_id.as_deref(),
        Some("MkU3OEVBNTcwNTJENDM2Qk")
    );
    for bad in ["with space", "", "a\\b"] {
        let e = c.apply("cluster.id", bad).unwrap_err().to_string();
        assert!(e.contains("cluster.id"), "{bad:?}: {e}");
    }
}
