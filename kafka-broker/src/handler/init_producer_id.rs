//! InitProducerId for idempotent producers: a new producer id, or (KIP-360, v3+) the same id
//! with its epoch bumped when the producer presents its current id and epoch.
//!
//! As Kafka (KIP-679): the request needs IDEMPOTENT_WRITE on the cluster or WRITE on some
//! topic, else CLUSTER_AUTHORIZATION_FAILED.

use kafka_auth::acl::{AclOperation, ResourceType};
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::{InitProducerIdRequest, InitProducerIdResponse, ResponseBody};

use super::authz::Authz;
use crate::node::Broker;

pub(super) fn handle(
    broker: &Broker,
    authz: &Authz<'_>,
    req: InitProducerIdRequest,
) -> ResponseBody {
    let fail = |code: ErrorCode| {
        ResponseBody::InitProducerId(InitProducerIdResponse {
            error_code: code.code(),
            producer_id: -1,
            producer_epoch: -1,
            ..Default::default()
        })
    };
    if !authz.cluster(AclOperation::IdempotentWrite)
        && !authz.on_any(AclOperation::Write, ResourceType::Topic)
    {
        return fail(ErrorCode::CLUSTER_AUTHORIZATION_FAILED);
    }
    if req.transactional_id.as_ref().is_some_and(|t| !t.is_empty()) {
        // Transactions need the transaction coordinator, which this broker does not have yet.
        return fail(ErrorCode::COORDINATOR_NOT_AVAILABLE);
    }
    let (id, epoch) = if req.producer_id >= 0 && req.producer_epoch >= 0 {
        if req.producer_epoch == i16::MAX - 1 {
            // Epoch exhausted: a new id, as Kafka does.
            match broker.next_producer_id() {
                Ok(id) => (id, 0),
                Err(e) => return fail(e.error_code()),
            }
        } else {
            (req.producer_id, req.producer_epoch + 1)
        }
    } else {
        match broker.next_producer_id() {
            Ok(id) => (id, 0),
            Err(e) => return fail(e.error_code()),
        }
    };
    ResponseBody::InitProducerId(InitProducerIdResponse {
        producer_id: id,
        producer_epoch: epoch,
        ..Default::default()
    })
}
