//! The transaction coordinator's apis: InitProducerId with a transactional id,
//! AddPartitionsToTxn (v0-3 from clients, v4+ batches and `verify_only` from brokers),
//! AddOffsetsToTxn, EndTxn, DescribeTransactions, ListTransactions; and WriteTxnMarkers, which
//! a coordinator sends to the leaders of its transactions' partitions.
//!
//! Requests are turned into the coordinator's plain types ([`crate::txn`]) and its answers
//! back; PRODUCER_FENCED is sent as INVALID_PRODUCER_EPOCH to versions that predate it
//! ([`crate::txn::error_for_version`]).
//!
//! Authorization as Kafka's `KafkaApis`: WRITE on the transactional id for InitProducerId,
//! AddPartitionsToTxn (v0-3), AddOffsetsToTxn, EndTxn (TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
//! WRITE on each topic added (TOPIC_AUTHORIZATION_FAILED, internal topics always refused, the
//! other partitions OPERATION_NOT_ATTEMPTED); READ on the group of AddOffsetsToTxn;
//! CLUSTER_ACTION for the brokers' AddPartitionsToTxn v4+ and (or ALTER) WriteTxnMarkers
//! (CLUSTER_AUTHORIZATION_FAILED); DESCRIBE on each transactional id for
//! DescribeTransactions (its topics narrowed to those the request may DESCRIBE) and
//! ListTransactions (the others left out).

use std::collections::{BTreeMap, BTreeSet};

use kafka_auth::acl::AclOperation;
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::write_txn_markers_response::{
    WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
};
use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse, DescribeTransactionsRequest, DescribeTransactionsResponse,
    EndTxnRequest, EndTxnResponse, InitProducerIdRequest, InitProducerIdResponse,
    ListTransactionsRequest, ListTransactionsResponse, ResponseBody, WriteTxnMarkersRequest,
    WriteTxnMarkersResponse, describe_transactions_response, list_transactions_response,
};

use super::authz::Authz;
use crate::log::TopicPartition;
use crate::node::Broker;
use crate::node::markers::{Marker, write_markers_here};
use crate::txn::{self, ProducerIdSource, TxnApi, error_for_version};

/// Producer ids for the coordinator: the broker's (blocks on disk on a single node, from the
/// controller in a cluster).
struct BrokerIds<'a>(&'a Broker);

impl ProducerIdSource for BrokerIds<'_> {
    fn next_producer_id(&mut self) -> Result<i64, ErrorCode> {
        self.0.next_producer_id().map_err(|e| e.error_code())
    }
}

/// InitProducerId with a transactional id (WRITE on it, else
/// TRANSACTIONAL_ID_AUTHORIZATION_FAILED with no producer id).
pub(super) async fn init_producer_id(
    broker: &Broker,
    authz: &Authz<'_>,
    req: InitProducerIdRequest,
    transactional_id: String,
    version: i16,
) -> ResponseBody {
    if !authz.transactional_id(AclOperation::Write, &transactional_id) {
        return ResponseBody::InitProducerId(InitProducerIdResponse {
            error_code: ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code(),
            producer_id: -1,
            producer_epoch: -1,
            ..Default::default()
        });
    }
    let result = match broker.ensure_transaction_topic() {
        Err(code) => txn::InitProducerIdResult::error(code),
        Ok(()) => {
            let request = txn::InitProducerIdRequest {
                transactional_id,
                transaction_timeout_ms: req.transaction_timeout_ms,
                producer_id: req.producer_id,
                producer_epoch: req.producer_epoch,
            };
            broker
                .txn
                .init_producer_id(&request, &mut BrokerIds(broker))
                .await
        }
    };
    ResponseBody::InitProducerId(InitProducerIdResponse {
        error_code: error_for_version(TxnApi::InitProducerId, version, result.error).code(),
        producer_id: result.producer_id,
        producer_epoch: result.producer_epoch,
        ..Default::default()
    })
}

fn partitions_of(topics: &[AddPartitionsToTxnTopic]) -> BTreeSet<TopicPartition> {
    topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|&p| TopicPartition::new(t.name.as_str(), p))
        })
        .collect()
}

/// Why each partition of a request cannot be added, in Kafka's order: a client's request
/// (`client`) may not add an internal topic nor a topic it may not WRITE
/// (TOPIC_AUTHORIZATION_FAILED), then partitions that do not exist
/// (UNKNOWN_TOPIC_OR_PARTITION). If any cannot, the others are answered
/// OPERATION_NOT_ATTEMPTED and nothing is added.
fn partition_errors(
    broker: &Broker,
    client: Option<&Authz<'_>>,
    partitions: &BTreeSet<TopicPartition>,
) -> Vec<Option<ErrorCode>> {
    let mut writable: BTreeMap<&str, bool> = BTreeMap::new();
    partitions
        .iter()
        .map(|tp| {
            let refused = client.is_some_and(|authz| {
                !*writable.entry(&tp.topic).or_insert_with(|| {
                    !crate::topics::is_internal(&tp.topic)
                        && authz.topic(AclOperation::Write, &tp.topic)
                })
            });
            let unknown = tp.partition < 0
                || broker
                    .topic(&tp.topic)
                    .is_none_or(|t| tp.partition >= t.partitions);
            if refused {
                Some(ErrorCode::TOPIC_AUTHORIZATION_FAILED)
            } else if unknown {
                Some(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)
            } else {
                None
            }
        })
        .collect()
}

fn topic_results(
    codes: &BTreeMap<TopicPartition, ErrorCode>,
) -> Vec<AddPartitionsToTxnTopicResult> {
    let mut by_topic: BTreeMap<&str, Vec<AddPartitionsToTxnPartitionResult>> = BTreeMap::new();
    for (tp, code) in codes {
        by_topic
            .entry(&tp.topic)
            .or_default()
            .push(AddPartitionsToTxnPartitionResult {
                partition_index: tp.partition,
                partition_error_code: code.code(),
                ..Default::default()
            });
    }
    by_topic
        .into_iter()
        .map(
            |(name, results_by_partition)| AddPartitionsToTxnTopicResult {
                name: KStr::from(name.to_owned()),
                results_by_partition,
                ..Default::default()
            },
        )
        .collect()
}

/// One transaction's AddPartitions (a client's, checked by `client`, or an entry of a
/// broker's v4+ batch).
async fn add_one(
    broker: &Broker,
    client: Option<&Authz<'_>>,
    req: txn::AddPartitionsRequest,
    version: i16,
) -> BTreeMap<TopicPartition, ErrorCode> {
    if req.verify_only {
        return broker.txn.verify_partitions(&req).partitions;
    }
    let errors = partition_errors(broker, client, &req.partitions);
    let code = if errors.iter().any(Option::is_some) {
        None
    } else {
        Some(broker.txn.add_partitions(&req).await)
    };
    req.partitions
        .iter()
        .zip(errors)
        .map(|(tp, error)| {
            let c = match (code, error) {
                (Some(c), _) => error_for_version(TxnApi::AddPartitionsToTxn, version, c),
                (None, Some(e)) => e,
                (None, None) => ErrorCode::OPERATION_NOT_ATTEMPTED,
            };
            (tp.clone(), c)
        })
        .collect()
}

/// AddPartitionsToTxn: v0-3 from a client (WRITE on its transactional id, else every
/// partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED; WRITE on each topic), v4+ from a broker
/// (CLUSTER_ACTION, else the answer's CLUSTER_AUTHORIZATION_FAILED).
pub(super) async fn add_partitions(
    broker: &Broker,
    authz: &Authz<'_>,
    req: AddPartitionsToTxnRequest,
    version: i16,
) -> ResponseBody {
    if version <= 3 {
        let request = txn::AddPartitionsRequest {
            transactional_id: req.v3_and_below_transactional_id.to_string(),
            producer_id: req.v3_and_below_producer_id,
            producer_epoch: req.v3_and_below_producer_epoch,
            partitions: partitions_of(&req.v3_and_below_topics),
            verify_only: false,
        };
        let codes = if authz.transactional_id(AclOperation::Write, &request.transactional_id) {
            add_one(broker, Some(authz), request, version).await
        } else {
            let refused = ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
            request
                .partitions
                .into_iter()
                .map(|tp| (tp, refused))
                .collect()
        };
        return ResponseBody::AddPartitionsToTxn(AddPartitionsToTxnResponse {
            results_by_topic_v3_and_below: topic_results(&codes),
            ..Default::default()
        });
    }
    if !authz.cluster(AclOperation::ClusterAction) {
        return ResponseBody::AddPartitionsToTxn(AddPartitionsToTxnResponse {
            error_code: ErrorCode::CLUSTER_AUTHORIZATION_FAILED.code(),
            ..Default::default()
        });
    }
    let mut results = Vec::with_capacity(req.transactions.len());
    for t in req.transactions {
        let request = txn::AddPartitionsRequest {
            transactional_id: t.transactional_id.to_string(),
            producer_id: t.producer_id,
            producer_epoch: t.producer_epoch,
            partitions: partitions_of(&t.topics),
            verify_only: t.verify_only,
        };
        let codes = add_one(broker, None, request, version).await;
        results.push(AddPartitionsToTxnResult {
            transactional_id: t.transactional_id,
            topic_results: topic_results(&codes),
            ..Default::default()
        });
    }
    ResponseBody::AddPartitionsToTxn(AddPartitionsToTxnResponse {
        results_by_transaction: results,
        ..Default::default()
    })
}

/// AddOffsetsToTxn: WRITE on the transactional id, then READ on the group.
pub(super) async fn add_offsets(
    broker: &Broker,
    authz: &Authz<'_>,
    req: AddOffsetsToTxnRequest,
    version: i16,
) -> ResponseBody {
    let refused = if !authz.transactional_id(AclOperation::Write, &req.transactional_id) {
        Some(ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    } else if !authz.group(AclOperation::Read, &req.group_id) {
        Some(ErrorCode::GROUP_AUTHORIZATION_FAILED)
    } else {
        None
    };
    if let Some(e) = refused {
        return ResponseBody::AddOffsetsToTxn(AddOffsetsToTxnResponse {
            error_code: e.code(),
            ..Default::default()
        });
    }
    let request = txn::AddOffsetsRequest {
        transactional_id: req.transactional_id.to_string(),
        producer_id: req.producer_id,
        producer_epoch: req.producer_epoch,
        group_id: req.group_id.to_string(),
    };
    let partitions = broker.groups.config().offsets_topic_num_partitions;
    let code = broker.txn.add_offsets(&request, partitions).await;
    ResponseBody::AddOffsetsToTxn(AddOffsetsToTxnResponse {
        error_code: error_for_version(TxnApi::AddOffsetsToTxn, version, code).code(),
        ..Default::default()
    })
}

/// EndTxn: WRITE on the transactional id.
pub(super) async fn end_txn(
    broker: &Broker,
    authz: &Authz<'_>,
    req: EndTxnRequest,
    version: i16,
) -> ResponseBody {
    if !authz.transactional_id(AclOperation::Write, &req.transactional_id) {
        return ResponseBody::EndTxn(EndTxnResponse {
            error_code: ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code(),
            ..Default::default()
        });
    }
    let request = txn::EndTxnRequest {
        transactional_id: req.transactional_id.to_string(),
        producer_id: req.producer_id,
        producer_epoch: req.producer_epoch,
        commit: req.committed,
    };
    let code = broker.txn.end_txn(&request).await;
    ResponseBody::EndTxn(EndTxnResponse {
        error_code: error_for_version(TxnApi::EndTxn, version, code).code(),
        ..Default::default()
    })
}

/// DescribeTransactions: DESCRIBE on each transactional id (else
/// TRANSACTIONAL_ID_AUTHORIZATION_FAILED for it), showing only the topics the request may
/// DESCRIBE.
pub(super) fn describe(
    broker: &Broker,
    authz: &Authz<'_>,
    req: DescribeTransactionsRequest,
) -> ResponseBody {
    let transaction_states = req
        .transactional_ids
        .iter()
        .map(|id| {
            if !authz.transactional_id(AclOperation::Describe, id) {
                return describe_transactions_response::TransactionState {
                    error_code: ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code(),
                    transactional_id: id.clone(),
                    ..Default::default()
                };
            }
            let d = broker.txn.describe(id.as_str());
            describe_transactions_response::TransactionState {
                error_code: d.error.code(),
                transactional_id: id.clone(),
                transaction_state: KStr::from(d.state),
                transaction_timeout_ms: d.timeout_ms,
                transaction_start_time_ms: d.start_ms,
                producer_id: d.producer_id,
                producer_epoch: d.producer_epoch,
                topics: d
                    .topics
                    .into_iter()
                    .filter(|(topic, _)| authz.topic(AclOperation::Describe, topic))
                    .map(
                        |(topic, partitions)| describe_transactions_response::TopicData {
                            topic: KStr::from(topic),
                            partitions,
                            ..Default::default()
                        },
                    )
                    .collect(),
                ..Default::default()
            }
        })
        .collect();
    ResponseBody::DescribeTransactions(DescribeTransactionsResponse {
        transaction_states,
        ..Default::default()
    })
}

/// ListTransactions: only the transactional ids the request may DESCRIBE.
pub(super) fn list(
    broker: &Broker,
    authz: &Authz<'_>,
    req: ListTransactionsRequest,
    version: i16,
) -> ResponseBody {
    let filter = txn::ListFilter {
        states: req.state_filters.iter().map(ToString::to_string).collect(),
        producer_ids: req.producer_id_filters.clone(),
        duration_ms: if version >= 1 {
            req.duration_filter
        } else {
            -1
        },
    };
    let list = broker.txn.list(&filter);
    ResponseBody::ListTransactions(ListTransactionsResponse {
        error_code: list.error.code(),
        unknown_state_filters: list
            .unknown_state_filters
            .into_iter()
            .map(KStr::from)
            .collect(),
        transaction_states: list
            .transactions
            .into_iter()
            .filter(|t| authz.transactional_id(AclOperation::Describe, &t.transactional_id))
            .map(|t| list_transactions_response::TransactionState {
                transactional_id: KStr::from(t.transactional_id),
                producer_id: t.producer_id,
                transaction_state: KStr::from_static(t.state.name()),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    })
}

/// WriteTxnMarkers: a coordinator's markers for partitions led here. Only brokers send it:
/// ALTER or CLUSTER_ACTION on the cluster, else every partition
/// CLUSTER_AUTHORIZATION_FAILED and nothing written.
pub(super) async fn write_markers(
    broker: &Broker,
    authz: &Authz<'_>,
    req: WriteTxnMarkersRequest,
) -> ResponseBody {
    let allowed = authz.cluster(AclOperation::Alter) || authz.cluster(AclOperation::ClusterAction);
    let mut markers = Vec::with_capacity(req.markers.len());
    for m in req.markers {
        let marker = Marker {
            producer_id: m.producer_id,
            producer_epoch: m.producer_epoch,
            coordinator_epoch: m.coordinator_epoch,
            commit: m.transaction_result,
        };
        let partitions: Vec<TopicPartition> = m
            .topics
            .iter()
            .flat_map(|t| {
                t.partition_indexes
                    .iter()
                    .map(|&p| TopicPartition::new(t.name.as_str(), p))
            })
            .collect();
        let results = if allowed {
            write_markers_here(broker, &marker, partitions).await
        } else {
            let refused = ErrorCode::CLUSTER_AUTHORIZATION_FAILED;
            partitions.into_iter().map(|tp| (tp, refused)).collect()
        };
        let mut by_topic: BTreeMap<String, Vec<WritableTxnMarkerPartitionResult>> = BTreeMap::new();
        for (tp, code) in results {
            by_topic.entry(tp.topic.to_string()).or_default().push(
                WritableTxnMarkerPartitionResult {
                    partition_index: tp.partition,
                    error_code: code.code(),
                    ..Default::default()
                },
            );
        }
        markers.push(WritableTxnMarkerResult {
            producer_id: m.producer_id,
            topics: by_topic
                .into_iter()
                .map(|(name, partitions)| WritableTxnMarkerTopicResult {
                    name: KStr::from(name),
                    partitions,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        });
    }
    ResponseBody::WriteTxnMarkers(WriteTxnMarkersResponse {
        markers,
        ..Default::default()
    })
}
