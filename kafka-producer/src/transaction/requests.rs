//! The requests a transactional producer sends to its coordinators, built for the version
//! the broker negotiated, and their answers reduced to what the state machine decides on.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kafka_net::{ConsumerGroupMetadata, CoordinatorType, OffsetAndMetadata};
use kafka_protocol::KStr;
use kafka_protocol::TopicPartition;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, ApiKey, EndTxnRequest,
    InitProducerIdRequest, RequestBody, ResponseBody, TxnOffsetCommitRequest,
    add_partitions_to_txn_request, txn_offset_commit_request,
};

/// Offsets to commit in a transaction, per partition.
pub(crate) type Offsets = BTreeMap<TopicPartition, OffsetAndMetadata>;

/// AddPartitionsToTxn v4+ is the broker-to-broker (verification) form: clients send v0-3.
const ADD_PARTITIONS_CLIENT_MAX: i16 = 3;

/// One coordinator request, as queued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TxnRequest {
    /// `bump`: KIP-360, the id and epoch we hold, for the coordinator to bump.
    InitProducerId {
        bump: Option<(i64, i16)>,
    },
    AddPartitions {
        partitions: BTreeSet<TopicPartition>,
    },
    /// To the transaction coordinator; on success a TxnOffsetCommit with the same offsets
    /// follows to the group coordinator.
    AddOffsets {
        group: ConsumerGroupMetadata,
        offsets: Offsets,
    },
    /// The offsets still to commit (a partial success leaves the rest for the retry).
    TxnOffsetCommit {
        group: ConsumerGroupMetadata,
        offsets: Offsets,
    },
    EndTxn {
        commit: bool,
    },
}

impl TxnRequest {
    /// Java's order among queued requests: lower goes first.
    pub(crate) fn priority(&self) -> u8 {
        match self {
            Self::InitProducerId { bump: None } => 1,
            Self::AddPartitions { .. } | Self::AddOffsets { .. } | Self::TxnOffsetCommit { .. } => {
                2
            }
            Self::EndTxn { .. } => 3,
            Self::InitProducerId { bump: Some(_) } => 4,
        }
    }

    pub(crate) fn api(&self) -> ApiKey {
        match self {
            Self::InitProducerId { .. } => ApiKey::InitProducerId,
            Self::AddPartitions { .. } => ApiKey::AddPartitionsToTxn,
            Self::AddOffsets { .. } => ApiKey::AddOffsetsToTxn,
            Self::TxnOffsetCommit { .. } => ApiKey::TxnOffsetCommit,
            Self::EndTxn { .. } => ApiKey::EndTxn,
        }
    }

    /// Short name for logs and errors.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Self::InitProducerId { .. } => "InitProducerId",
            Self::AddPartitions { .. } => "AddPartitionsToTxn",
            Self::AddOffsets { .. } => "AddOffsetsToTxn",
            Self::TxnOffsetCommit { .. } => "TxnOffsetCommit",
            Self::EndTxn { .. } => "EndTxn",
        }
    }
}

/// A request on its way out, with what its body needs.
#[derive(Debug, Clone)]
pub(crate) struct Outgoing {
    /// Matches the answer to the request taken out.
    pub(crate) token: u64,
    pub(crate) request: TxnRequest,
    pub(crate) transactional_id: Arc<str>,
    pub(crate) producer: (i64, i16),
    pub(crate) timeout_ms: i32,
}

impl Outgoing {
    /// Which coordinator answers it, and for which key.
    pub(crate) fn coordinator(&self) -> (CoordinatorType, String) {
        match &self.request {
            TxnRequest::TxnOffsetCommit { group, .. } => {
                (CoordinatorType::Group, group.group_id.clone())
            }
            _ => (
                CoordinatorType::Transaction,
                self.transactional_id.to_string(),
            ),
        }
    }

    pub(crate) fn api(&self) -> ApiKey {
        self.request.api()
    }

    /// The version to send at, given the broker's range (`None` when no version fits).
    pub(crate) fn version(&self, broker_min: i16, negotiated: i16) -> Option<i16> {
        let v = match self.request {
            TxnRequest::AddPartitions { .. } => negotiated.min(ADD_PARTITIONS_CLIENT_MAX),
            _ => negotiated,
        };
        (v >= broker_min).then_some(v)
    }

    /// The request body at `version`.
    pub(crate) fn body(&self, version: i16) -> RequestBody {
        let tid = || KStr::from(self.transactional_id.to_string());
        let (producer_id, producer_epoch) = self.producer;
        match &self.request {
            TxnRequest::InitProducerId { bump } => {
                // KIP-360: v3+ carries the id and epoch to bump; older versions cannot.
                let (producer_id, producer_epoch) = match bump {
                    Some(p) if version >= 3 => *p,
                    _ => (-1, -1),
                };
                RequestBody::InitProducerId(InitProducerIdRequest {
                    transactional_id: Some(tid()),
                    transaction_timeout_ms: self.timeout_ms,
                    producer_id,
                    producer_epoch,
                    ..Default::default()
                })
            }
            TxnRequest::AddPartitions { partitions } => {
                let mut topics: Vec<add_partitions_to_txn_request::AddPartitionsToTxnTopic> =
                    Vec::new();
                for tp in partitions {
                    match topics.iter_mut().find(|t| *t.name == *tp.topic) {
                        Some(t) => t.partitions.push(tp.partition),
                        None => {
                            topics.push(add_partitions_to_txn_request::AddPartitionsToTxnTopic {
                                name: KStr::from(tp.topic.to_string()),
                                partitions: vec![tp.partition],
                                ..Default::default()
                            })
                        }
                    }
                }
                RequestBody::AddPartitionsToTxn(AddPartitionsToTxnRequest {
                    v3_and_below_transactional_id: tid(),
                    v3_and_below_producer_id: producer_id,
                    v3_and_below_producer_epoch: producer_epoch,
                    v3_and_below_topics: topics,
                    ..Default::default()
                })
            }
            TxnRequest::AddOffsets { group, .. } => {
                RequestBody::AddOffsetsToTxn(AddOffsetsToTxnRequest {
                    transactional_id: tid(),
                    producer_id,
                    producer_epoch,
                    group_id: KStr::from(group.group_id.clone()),
                    ..Default::default()
                })
            }
            TxnRequest::TxnOffsetCommit { group, offsets } => {
                let mut topics: Vec<txn_offset_commit_request::TxnOffsetCommitRequestTopic> =
                    Vec::new();
                for (tp, om) in offsets {
                    let part = txn_offset_commit_request::TxnOffsetCommitRequestPartition {
                        partition_index: tp.partition,
                        committed_offset: om.offset,
                        committed_leader_epoch: if version >= 2 {
                            om.leader_epoch.unwrap_or(-1)
                        } else {
                            -1
                        },
                        committed_metadata: Some(KStr::from(om.metadata.clone())),
                        ..Default::default()
                    };
                    match topics.iter_mut().find(|t| *t.name == *tp.topic) {
                        Some(t) => t.partitions.push(part),
                        None => {
                            topics.push(txn_offset_commit_request::TxnOffsetCommitRequestTopic {
                                name: KStr::from(tp.topic.to_string()),
                                partitions: vec![part],
                                ..Default::default()
                            })
                        }
                    }
                }
                let mut req = TxnOffsetCommitRequest {
                    transactional_id: tid(),
                    group_id: KStr::from(group.group_id.clone()),
                    producer_id,
                    producer_epoch,
                    topics,
                    ..Default::default()
                };
                // v3 (KIP-447) lets the group coordinator check the member's generation.
                if version >= 3 {
                    req.generation_id_or_member_epoch = group.generation_id;
                    req.member_id = KStr::from(group.member_id.clone());
                    req.group_instance_id = group.group_instance_id.clone().map(KStr::from);
                }
                RequestBody::TxnOffsetCommit(Box::new(req))
            }
            TxnRequest::EndTxn { commit } => RequestBody::EndTxn(EndTxnRequest {
                transactional_id: tid(),
                producer_id,
                producer_epoch,
                committed: *commit,
                ..Default::default()
            }),
        }
    }
}

/// An answer, reduced to what the state machine decides on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Answer {
    InitProducerId {
        code: ErrorCode,
        producer_id: i64,
        producer_epoch: i16,
    },
    /// One code per partition named in the answer.
    AddPartitions(Vec<(TopicPartition, ErrorCode)>),
    AddOffsets(ErrorCode),
    TxnOffsetCommit(Vec<(TopicPartition, ErrorCode)>),
    EndTxn(ErrorCode),
}

impl Answer {
    /// Reduces a response body; `None` when it is not an answer to `request`.
    pub(crate) fn from_body(request: &TxnRequest, body: ResponseBody) -> Option<Self> {
        let topic = |name: &KStr| -> Arc<str> { Arc::from(name.to_string()) };
        Some(match (request, body) {
            (TxnRequest::InitProducerId { .. }, ResponseBody::InitProducerId(r)) => {
                Self::InitProducerId {
                    code: ErrorCode(r.error_code),
                    producer_id: r.producer_id,
                    producer_epoch: r.producer_epoch,
                }
            }
            (TxnRequest::AddPartitions { .. }, ResponseBody::AddPartitionsToTxn(r)) => {
                let top = ErrorCode(r.error_code);
                let topics = if r.results_by_topic_v3_and_below.is_empty() {
                    r.results_by_transaction
                        .into_iter()
                        .flat_map(|t| t.topic_results)
                        .collect()
                } else {
                    r.results_by_topic_v3_and_below
                };
                let mut out = Vec::new();
                for t in &topics {
                    let name = topic(&t.name);
                    for p in &t.results_by_partition {
                        let code = match ErrorCode(p.partition_error_code) {
                            ErrorCode::NONE if top.is_err() => top,
                            c => c,
                        };
                        out.push((
                            TopicPartition {
                                topic: name.clone(),
                                partition: p.partition_index,
                            },
                            code,
                        ));
                    }
                }
                Self::AddPartitions(out)
            }
            (TxnRequest::AddOffsets { .. }, ResponseBody::AddOffsetsToTxn(r)) => {
                Self::AddOffsets(ErrorCode(r.error_code))
            }
            (TxnRequest::TxnOffsetCommit { .. }, ResponseBody::TxnOffsetCommit(r)) => {
                let mut out = Vec::new();
                for t in &r.topics {
                    let name = topic(&t.name);
                    for p in &t.partitions {
                        out.push((
                            TopicPartition {
                                topic: name.clone(),
                                partition: p.partition_index,
                            },
                            ErrorCode(p.error_code),
                        ));
                    }
                }
                Self::TxnOffsetCommit(out)
            }
            (TxnRequest::EndTxn { .. }, ResponseBody::EndTxn(r)) => {
                Self::EndTxn(ErrorCode(r.error_code))
            }
            _ => return None,
        })
    }
}
