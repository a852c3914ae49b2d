//! The transaction coordinator's apis: InitProducerId with a transactional id,
//! AddPartitionsToTxn (v0-3 from clients, v4+ batches and `verify_only` from brokers),
//! AddOffsetsToTxn, EndTxn, DescribeTransactions, ListTransactions; and WriteTxnMarkers, which
//! a coordinator sends to the leaders of its transactions' partitions.
//!
//! Requests are turned into the coordinator's plain types ([`crate::txn`]) and its answers
//! back; PRODUCER_FENCED is sent as INVALID_PRODUCER_EPOCH to versions that predate it
//! ([`crate::txn::error_for_version`]).

use std::collections::{BTreeMap, BTreeSet};

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

/// InitProducerId with a transactional id.
pub(super) async fn init_producer_id(
    broker: &Broker,
    req: InitProducerIdRequest,
    transactional_id: String,
    version: i16,
) -> ResponseBody {
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

/// The partitions of a request that do not exist (answered UNKNOWN_TOPIC_OR_PARTITION, the
/// others OPERATION_NOT_ATTEMPTED, as Kafka answers).
fn unknown_partitions(broker: &Broker, partitions: &BTreeSet<TopicPartition>) -> Vec<bool> {
    partitions
        .iter()
        .map(|tp| {
            tp.partition < 0
                || broker
                    .topic(&tp.topic)
                    .is_none_or(|t| tp.partition >= t.partitions)
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

/// One transaction's AddPartitions (a client's, or an entry of a broker's v4+ batch).
async fn add_one(
    broker: &Broker,
    req: txn::AddPartitionsRequest,
    version: i16,
) -> BTreeMap<TopicPartition, ErrorCode> {
    if req.verify_only {
        return broker.txn.verify_partitions(&req).partitions;
    }
    let unknown = unknown_partitions(broker, &req.partitions);
    let code = if unknown.iter().any(|&u| u) {
        None
    } else {
        Some(broker.txn.add_partitions(&req).await)
    };
    req.partitions
        .iter()
        .zip(unknown)
        .map(|(tp, unknown)| {
            let c = match code {
                Some(c) => error_for_version(TxnApi::AddPartitionsToTxn, version, c),
                None if unknown => ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                None => ErrorCode::OPERATION_NOT_ATTEMPTED,
            };
            (tp.clone(), c)
        })
        .collect()
}

/// AddPartitionsToTxn.
pub(super) async fn add_partitions(
    broker: &Broker,
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
        let codes = add_one(broker, request, version).await;
        return ResponseBody::AddPartitionsToTxn(AddPartitionsToTxnResponse {
            results_by_topic_v3_and_below: topic_results(&codes),
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
        let codes = add_one(broker, request, version).await;
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

/// AddOffsetsToTxn.
pub(super) async fn add_offsets(
    broker: &Broker,
    req: AddOffsetsToTxnRequest,
    version: i16,
) -> ResponseBody {
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

/// EndTxn.
pub(super) async fn end_txn(broker: &Broker, req: EndTxnRequest, version: i16) -> ResponseBody {
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

/// DescribeTransactions.
pub(super) fn describe(broker: &Broker, req: DescribeTransactionsRequest) -> ResponseBody {
    let transaction_states = req
        .transactional_ids
        .iter()
        .map(|id| {
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

/// ListTransactions.
pub(super) fn list(broker: &Broker, req: ListTransactionsRequest, version: i16) -> ResponseBody {
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

/// WriteTxnMarkers: a coordinator's markers for partitions led here.
pub(super) async fn write_markers(broker: &Broker, req: WriteTxnMarkersRequest) -> ResponseBody {
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
        let results = write_markers_here(broker, &marker, partitions).await;
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
