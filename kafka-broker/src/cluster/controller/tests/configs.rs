//! IncrementalAlterConfigs and AlterConfigs.

use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::{
    AlterConfigsRequest, AlterConfigsResponse, IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse, alter_configs_request, incremental_alter_configs_request,
};
use kafka_protocol::metadata::MetadataRecord;

use super::*;
use crate::cluster::image::{NO_LEADER, RESOURCE_BROKER, RESOURCE_TOPIC};

const SET: i8 = 0;
const DELETE: i8 = 1;
const APPEND: i8 = 2;

fn incremental(
    resource_type: i8,
    name: &str,
    ops: &[(&str, i8, Option<&str>)],
) -> IncrementalAlterConfigsRequest {
    IncrementalAlterConfigsRequest {
        resources: vec![incremental_alter_configs_request::AlterConfigsResource {
            resource_type,
            resource_name: KStr::from(name.to_owned()),
            configs: ops
                .iter()
                .map(
                    |(k, op, v)| incremental_alter_configs_request::AlterableConfig {
                        name: KStr::from((*k).to_owned()),
                        config_operation: *op,
                        value: v.map(|v| KStr::from(v.to_owned())),
                        ..Default::default()
                    },
                )
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn alter(resource_type: i8, name: &str, entries: &[(&str, &str)]) -> AlterConfigsRequest {
    AlterConfigsRequest {
        resources: vec![alter_configs_request::AlterConfigsResource {
            resource_type,
            resource_name: KStr::from(name.to_owned()),
            configs: entries
                .iter()
                .map(|(k, v)| alter_configs_request::AlterableConfig {
                    name: KStr::from((*k).to_owned()),
                    value: Some(KStr::from((*v).to_owned())),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn run_incremental(
    h: &mut H,
    req: &IncrementalAlterConfigsRequest,
) -> IncrementalAlterConfigsResponse {
    h.run(|c, image, _| c.incremental_alter_configs(image, req, 1))
}

fn run_alter(h: &mut H, req: &AlterConfigsRequest) -> AlterConfigsResponse {
    h.run(|c, image, _| c.alter_configs(image, req, 2))
}

fn topic_configs(h: &H, name: &str) -> Vec<(String, String)> {
    h.image
        .configs(RESOURCE_TOPIC, name)
        .map(|c| c.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

fn setup() -> H {
    let mut h = H::new();
    h.brokers(&[1]);
    h.topic("t", 1, 1);
    h
}

#[test]
fn incremental_set_and_delete_write_config_records() {
    let mut h = setup();
    let r = run_incremental(
        &mut h,
        &incremental(
            RESOURCE_TOPIC,
            "t",
            &[
                ("retention.ms", SET, Some("5000")),
                ("segment.ms", SET, Some("7000")),
            ],
        ),
    );
    assert_eq!(
        r.responses[0].error_code, 0,
        "{:?}",
        r.responses[0].error_message
    );
    assert_eq!(r.responses[0].resource_name.as_str(), "t");
    assert_eq!(
        topic_configs(&h, "t"),
        vec![
            ("retention.ms".into(), "5000".into()),
            ("segment.ms".into(), "7000".into())
        ]
    );
    let r = run_incremental(
        &mut h,
        &incremental(RESOURCE_TOPIC, "t", &[("retention.ms", DELETE, None)]),
    );
    assert_eq!(r.responses[0].error_code, 0);
    assert!(
        matches!(h.last_batch(), [MetadataRecord::Config(c)] if c.name.as_str() == "retention.ms" && c.value.is_none())
    );
    assert_eq!(
        topic_configs(&h, "t"),
        vec![("segment.ms".into(), "7000".into())]
    );
    // Setting a key to the value it has writes nothing.
    let before = h.log.len();
    run_incremental(
        &mut h,
        &incremental(RESOURCE_TOPIC, "t", &[("segment.ms", SET, Some("7000"))]),
    );
    assert_eq!(h.log.len(), before);
}

#[test]
fn append_extends_a_list_config() {
    let mut h = setup();
    run_incremental(
        &mut h,
        &incremental(
            RESOURCE_TOPIC,
            "t",
            &[("cleanup.policy", SET, Some("delete"))],
        ),
    );
    let r = run_incremental(
        &mut h,
        &incremental(
            RESOURCE_TOPIC,
            "t",
            &[("cleanup.policy", APPEND, Some("compact"))],
        ),
    );
    assert_eq!(
        r.responses[0].error_code, 0,
        "{:?}",
        r.responses[0].error_message
    );
    assert_eq!(
        h.image.config(RESOURCE_TOPIC, "t", "cleanup.policy"),
        Some("delete,compact")
    );
    let r = run_incremental(
        &mut h,
        &incremental(RESOURCE_TOPIC, "t", &[("retention.ms", APPEND, Some("1"))]),
    );
    assert_eq!(code(r.responses[0].error_code), ErrorCode::INVALID_CONFIG);
}

#[test]
fn bad_changes_are_refused_naming_the_key_and_write_nothing() {
    let mut h = setup();
    let cases = [
        (
            incremental(
                RESOURCE_TOPIC,
                "t",
                &[("retention.ms", SET, Some("forever"))],
            ),
            ErrorCode::INVALID_CONFIG,
            "retention.ms",
        ),
        (
            incremental(RESOURCE_TOPIC, "t", &[("bogus.key", SET, Some("1"))]),
            ErrorCode::INVALID_CONFIG,
            "bogus.key",
        ),
        (
            incremental(RESOURCE_TOPIC, "t", &[("retention.ms", 9, Some("1"))]),
            ErrorCode::INVALID_REQUEST,
            "9",
        ),
        (
            incremental(
                RESOURCE_TOPIC,
                "t",
                &[
                    ("retention.ms", SET, Some("1")),
                    ("retention.ms", DELETE, None),
                ],
            ),
            ErrorCode::INVALID_REQUEST,
            "retention.ms",
        ),
        (
            incremental(RESOURCE_TOPIC, "nope", &[("retention.ms", SET, Some("1"))]),
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
            "nope",
        ),
        (
            incremental(8, "1", &[("x", SET, Some("1"))]),
            ErrorCode::INVALID_REQUEST,
            "8",
        ),
        (
            incremental(RESOURCE_BROKER, "", &[("log.retention.ms", SET, Some("x"))]),
            ErrorCode::INVALID_CONFIG,
            "log.retention.ms",
        ),
        (
            incremental(
                RESOURCE_BROKER,
                "",
                &[("num.network.threads", SET, Some("4"))],
            ),
            ErrorCode::INVALID_CONFIG,
            "num.network.threads",
        ),
        (
            incremental(
                RESOURCE_BROKER,
                "broker-one",
                &[("log.retention.ms", SET, Some("1"))],
            ),
            ErrorCode::INVALID_REQUEST,
            "broker-one",
        ),
    ];
    for (req, expected, named) in cases {
        let out = h.peek(|c, image, _| c.incremental_alter_configs(image, &req, 1));
        let r = &out.response.responses[0];
        assert_eq!(code(r.error_code), expected, "{req:?}");
        let message = r.error_message.as_ref().unwrap().to_string();
        assert!(message.contains(named), "{message} does not name {named}");
        assert!(out.records.is_empty());
    }
}

#[test]
fn broker_and_cluster_defaults_are_config_records_of_type_4() {
    let mut h = setup();
    let r = run_incremental(
        &mut h,
        &incremental(
            RESOURCE_BROKER,
            "",
            &[("log.retention.ms", SET, Some("3600000"))],
        ),
    );
    assert_eq!(
        r.responses[0].error_code, 0,
        "{:?}",
        r.responses[0].error_message
    );
    assert_eq!(
        h.image.config(RESOURCE_BROKER, "", "log.retention.ms"),
        Some("3600000")
    );
    let r = run_incremental(
        &mut h,
        &incremental(
            RESOURCE_BROKER,
            "1",
            &[("log.cleanup.policy", APPEND, Some("compact"))],
        ),
    );
    assert_eq!(
        r.responses[0].error_code, 0,
        "{:?}",
        r.responses[0].error_message
    );
    assert_eq!(
        h.image.config(RESOURCE_BROKER, "1", "log.cleanup.policy"),
        Some("delete,compact")
    );
}

#[test]
fn a_cluster_default_can_enable_unclean_election() {
    let mut h = H::new();
    h.brokers(&[1, 2]);
    h.assigned("t", &[&[1, 2]]);
    run_incremental(
        &mut h,
        &incremental(
            RESOURCE_BROKER,
            "",
            &[("unclean.leader.election.enable", SET, Some("true"))],
        ),
    );
    h.advance(SESSION + 1_000, &[1]);
    h.heartbeat(2, false, false);
    h.advance(SESSION + 1_000, &[2]);
    assert_ne!(h.partition("t", 0).leader, NO_LEADER);
    assert_eq!(h.partition("t", 0).leader, 2);
}

#[test]
fn alter_configs_replaces_the_whole_set() {
    let mut h = setup();
    run_alter(
        &mut h,
        &alter(
            RESOURCE_TOPIC,
            "t",
            &[("retention.ms", "1000"), ("segment.ms", "2000")],
        ),
    );
    assert_eq!(topic_configs(&h, "t").len(), 2);
    let r = run_alter(
        &mut h,
        &alter(RESOURCE_TOPIC, "t", &[("segment.ms", "3000")]),
    );
    assert_eq!(r.responses[0].error_code, 0);
    assert_eq!(
        topic_configs(&h, "t"),
        vec![("segment.ms".into(), "3000".into())]
    );
    let r = run_alter(
        &mut h,
        &alter(RESOURCE_TOPIC, "t", &[("segment.ms", "later")]),
    );
    assert_eq!(code(r.responses[0].error_code), ErrorCode::INVALID_CONFIG);
    assert_eq!(
        topic_configs(&h, "t"),
        vec![("segment.ms".into(), "3000".into())]
    );
}

#[test]
fn validate_only_writes_nothing_and_duplicates_are_refused() {
    let mut h = setup();
    let mut req = incremental(RESOURCE_TOPIC, "t", &[("retention.ms", SET, Some("5000"))]);
    req.validate_only = true;
    let out = h.peek(|c, image, _| c.incremental_alter_configs(image, &req, 1));
    assert_eq!(out.response.responses[0].error_code, 0);
    assert!(out.records.is_empty());
    let mut req = alter(RESOURCE_TOPIC, "t", &[("retention.ms", "1")]);
    req.resources.push(req.resources[0].clone());
    let out = h.peek(|c, image, _| c.alter_configs(image, &req, 2));
    assert!(
        out.response
            .responses
            .iter()
            .all(|r| code(r.error_code) == ErrorCode::INVALID_REQUEST)
    );
    assert!(out.records.is_empty());
}

#[test]
fn an_internal_topic_stays_compacted() {
    let mut h = H::new();
    h.brokers(&[1]);
    h.create(
        &with_config(
            create_req("__consumer_offsets", 1, 1),
            "cleanup.policy",
            "compact",
        ),
        0,
    );
    let r = run_incremental(
        &mut h,
        &incremental(
            RESOURCE_TOPIC,
            "__consumer_offsets",
            &[("cleanup.policy", SET, Some("delete"))],
        ),
    );
    assert_eq!(code(r.responses[0].error_code), ErrorCode::INVALID_CONFIG);
    assert_eq!(
        h.image
            .config(RESOURCE_TOPIC, "__consumer_offsets", "cleanup.policy"),
        Some("compact")
    );
}
