//! DescribeLogDirs (v0-4), what `kafka-log-dirs` and the AdminClient's `describeLogDirs` /
//! `describeReplicaLogDirs` ask: the node's log directory (`log.dirs`; one here, holding every
//! hosted partition) with the size in bytes of each hosted partition asked for (all of them
//! for a null topic list), as Kafka's `ReplicaManager.describeLogDirs` answers. No future
//! replicas here (no AlterReplicaLogDirs), so the offset lag is 0 and `is_future_key` false.
//! Total and usable bytes of the volume are -1: unknown (Kafka's UNKNOWN_VOLUME_BYTES).
//!
//! Authorization, as Kafka's `handleDescribeLogDirsRequest`: DESCRIBE on the cluster, else no
//! directory is listed and the answer's error is CLUSTER_AUTHORIZATION_FAILED (v3+ carry it;
//! older versions see an empty list).

use std::collections::{BTreeMap, BTreeSet};

use kafka_auth::acl::AclOperation;
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use kafka_protocol::messages::{DescribeLogDirsRequest, DescribeLogDirsResponse, ResponseBody};

use super::authz::Authz;
use crate::node::Broker;

/// Kafka's "volume size unknown".
const UNKNOWN_VOLUME_BYTES: i64 = -1;

pub(super) fn handle(
    broker: &Broker,
    authz: &Authz<'_>,
    req: DescribeLogDirsRequest,
) -> ResponseBody {
    if !authz.cluster(AclOperation::Describe) {
        return ResponseBody::DescribeLogDirs(DescribeLogDirsResponse {
            error_code: ErrorCode::CLUSTER_AUTHORIZATION_FAILED.code(),
            results: Vec::new(),
            ..Default::default()
        });
    }
    // None: every partition; Some: the (topic, partition) pairs asked for.
    let wanted: Option<BTreeSet<(String, i32)>> = req.topics.map(|topics| {
        topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| (t.topic.to_string(), *p)))
            .collect()
    });
    let mut topics: BTreeMap<String, Vec<DescribeLogDirsPartition>> = BTreeMap::new();
    for part in broker.partitions() {
        if wanted
            .as_ref()
            .is_some_and(|w| !w.contains(&(part.topic.clone(), part.index)))
        {
            continue;
        }
        topics
            .entry(part.topic.clone())
            .or_default()
            .push(DescribeLogDirsPartition {
                partition_index: part.index,
                partition_size: i64::try_from(part.size_in_bytes()).unwrap_or(i64::MAX),
                offset_lag: 0,
                is_future_key: false,
                ..Default::default()
            });
    }
    let dir = &broker.config.server.data_dir;
    let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.clone());
    ResponseBody::DescribeLogDirs(DescribeLogDirsResponse {
        results: vec![DescribeLogDirsResult {
            error_code: 0,
            log_dir: KStr::from(dir.display().to_string()),
            topics: topics
                .into_iter()
                .map(|(name, mut partitions)| {
                    partitions.sort_by_key(|p| p.partition_index);
                    DescribeLogDirsTopic {
                        name: KStr::from(name),
                        partitions,
                        ..Default::default()
                    }
                })
                .collect(),
            total_bytes: UNKNOWN_VOLUME_BYTES,
            usable_bytes: UNKNOWN_VOLUME_BYTES,
            ..Default::default()
        }],
        ..Default::default()
    })
}
