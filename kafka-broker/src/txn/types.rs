//! Requests, answers and outputs of the transaction coordinator, as plain data.

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::error_code::ErrorCode;

use super::records::TxnRecord;
use super::state::{NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TxnState};
use crate::log::TopicPartition;

/// Names a request whose answer comes out of [`super::TransactionManager::poll_output`].
pub use crate::coordinator::RequestId;

/// Names a `__transaction_state` write; report its outcome with
/// [`super::TransactionManager::write_done`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WriteId(pub u64);

/// Where new producer ids come from (the broker's block of ids from the controller, or a
/// counter on a single node). An error code (COORDINATOR_LOAD_IN_PROGRESS while a block is
/// being fetched, say) is answered to the client as is.
pub trait ProducerIdSource {
    fn next_producer_id(&mut self) -> Result<i64, ErrorCode>;
}

/// Ids counting up from a start: a single node's source, and the tests'.
#[derive(Debug, Clone)]
pub struct SequentialIds {
    pub next: i64,
}

impl ProducerIdSource for SequentialIds {
    fn next_producer_id(&mut self) -> Result<i64, ErrorCode> {
        let id = self.next;
        self.next = self.next.saturating_add(1);
        Ok(id)
    }
}

/// The end of a transaction, as a marker says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TxnResult {
    Commit,
    Abort,
}

/// InitProducerId with a transactional id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitProducerIdRequest {
    pub transactional_id: String,
    pub transaction_timeout_ms: i32,
    /// KIP-360: the producer's current id and epoch when it asks to recover (both -1
    /// otherwise).
    pub producer_id: i64,
    pub producer_epoch: i16,
}

/// The answer to InitProducerId.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InitProducerIdResult {
    pub error: ErrorCode,
    pub producer_id: i64,
    pub producer_epoch: i16,
}

impl InitProducerIdResult {
    /// An error answer (no id, no epoch).
    pub fn error(error: ErrorCode) -> Self {
        Self {
            error,
            producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
        }
    }
}

/// AddPartitionsToTxn of one transaction: the v0-3 client form, and one transaction of the
/// v4+ batch (with `verify_only`, KIP-890 part 1: a partition leader asking whether a
/// partition is already in the transaction before it accepts a transactional write).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddPartitionsRequest {
    pub transactional_id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub partitions: BTreeSet<TopicPartition>,
    /// v4+: only check, change nothing ([`super::TransactionManager::verify_partitions`]).
    pub verify_only: bool,
}

/// AddPartitionsToTxn v4+: transactions from a broker, each answered per partition.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AddPartitionsBatch {
    pub transactions: Vec<AddPartitionsRequest>,
}

/// The per-partition answer of one transaction of the v4+ form (a v0-3 answer is one code
/// for every partition; see [`PartitionResults::all`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PartitionResults {
    pub transactional_id: String,
    pub partitions: BTreeMap<TopicPartition, ErrorCode>,
}

impl PartitionResults {
    /// `error` for every partition of `req`.
    pub fn all(req: &AddPartitionsRequest, error: ErrorCode) -> Self {
        Self {
            transactional_id: req.transactional_id.clone(),
            partitions: req
                .partitions
                .iter()
                .map(|tp| (tp.clone(), error))
                .collect(),
        }
    }
}

/// AddOffsetsToTxn: the group's `__consumer_offsets` partition joins the transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddOffsetsRequest {
    pub transactional_id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub group_id: String,
}

/// EndTxn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndTxnRequest {
    pub transactional_id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// Commit (true) or abort.
    pub commit: bool,
}

/// The answer to a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    InitProducerId(InitProducerIdResult),
    /// For every partition of the request (v0-3; the handler expands it).
    AddPartitions(ErrorCode),
    AddOffsets(ErrorCode),
    EndTxn(ErrorCode),
}

impl Answer {
    /// The answer's error code.
    pub fn error(&self) -> ErrorCode {
        match self {
            Self::InitProducerId(r) => r.error,
            Self::AddPartitions(e) | Self::AddOffsets(e) | Self::EndTxn(e) => *e,
        }
    }
}

/// Which request an answer belongs to (what the coordinator keeps while a write is out).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AnswerKind {
    InitProducerId,
    AddPartitions,
    AddOffsets,
    EndTxn,
}

impl AnswerKind {
    pub(super) fn with(self, error: ErrorCode) -> Answer {
        match self {
            Self::InitProducerId => Answer::InitProducerId(InitProducerIdResult::error(error)),
            Self::AddPartitions => Answer::AddPartitions(error),
            Self::AddOffsets => Answer::AddOffsets(error),
            Self::EndTxn => Answer::EndTxn(error),
        }
    }
}

/// Control records to write: one COMMIT or ABORT marker in each partition, for the
/// producer's id and epoch, stamped with the coordinator epoch (the leader epoch of the
/// id's `__transaction_state` partition). Report each partition done with
/// [`super::TransactionManager::marker_written`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkerRequest {
    pub transactional_id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub result: TxnResult,
    pub coordinator_epoch: i32,
    pub partitions: BTreeSet<TopicPartition>,
}

/// A record to append to `__transaction_state` partition `partition` (with acks=all); the
/// change it carries takes effect when the append is reported done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnWrite {
    pub id: WriteId,
    pub partition: i32,
    pub record: TxnRecord,
}

/// What comes out of the coordinator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// The answer to a request.
    Answer { request: RequestId, answer: Answer },
    /// A record to write.
    Write(TxnWrite),
    /// Markers to write.
    Markers(MarkerRequest),
}

/// DescribeTransactions of one id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnDescription {
    pub error: ErrorCode,
    pub transactional_id: String,
    /// Kafka's state name (empty with an error).
    pub state: String,
    pub timeout_ms: i32,
    pub start_ms: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// The transaction's partitions by topic.
    pub topics: BTreeMap<String, Vec<i32>>,
}

impl TxnDescription {
    pub(super) fn error(transactional_id: &str, error: ErrorCode) -> Self {
        Self {
            error,
            transactional_id: transactional_id.to_owned(),
            state: String::new(),
            timeout_ms: 0,
            start_ms: -1,
            producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
            topics: BTreeMap::new(),
        }
    }
}

/// ListTransactions filters; empty lists match everything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListFilter {
    /// State names (Kafka's); unknown names match nothing and are answered back.
    pub states: Vec<String>,
    pub producer_ids: Vec<i64>,
    /// v1 (KIP-994): only transactions running longer than this many ms; -1 for any.
    pub duration_ms: i64,
}

impl Default for ListFilter {
    fn default() -> Self {
        Self {
            states: Vec::new(),
            producer_ids: Vec::new(),
            duration_ms: -1,
        }
    }
}

/// One transactional id of ListTransactions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnListing {
    pub transactional_id: String,
    pub producer_id: i64,
    pub state: TxnState,
}

/// The ListTransactions answer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TxnList {
    pub error: ErrorCode,
    pub unknown_state_filters: Vec<String>,
    pub transactions: Vec<TxnListing>,
}

/// The transactional APIs whose old versions know PRODUCER_FENCED as INVALID_PRODUCER_EPOCH
/// (KIP-588).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnApi {
    InitProducerId,
    AddPartitionsToTxn,
    AddOffsetsToTxn,
    EndTxn,
    TxnOffsetCommit,
}

/// The error a client of `version` of `api` is sent for `error`: PRODUCER_FENCED became a
/// code of its own in InitProducerId v4 and the others' v2; older versions get
/// INVALID_PRODUCER_EPOCH, as Kafka answers them.
pub fn error_for_version(api: TxnApi, version: i16, error: ErrorCode) -> ErrorCode {
    let first = match api {
        TxnApi::InitProducerId => 4,
        _ => 2,
    };
    if error == ErrorCode::PRODUCER_FENCED && version < first {
        ErrorCode::INVALID_PRODUCER_EPOCH
    } else {
        error
    }
}

/// The code a client gets when a `__transaction_state` append fails with `error` (Kafka's
/// mapping: replication trouble means the coordinator is not available, a lost leadership
/// that it is not the coordinator, an oversized record is the server's fault).
pub fn write_error_for_client(error: ErrorCode) -> ErrorCode {
    crate::coordinator::answer_for_append_error(error, crate::coordinator::Written::State)
}
