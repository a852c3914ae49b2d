//! AllocateProducerIds (KIP-730): brokers take producer ids in blocks from the controller, so
//! that no two brokers ever hand out the same id.
//!
//! The image keeps the first id of the next block (`ProducerIdsRecord.next_producer_id`, 0
//! before any block). A request from a broker registered with the request's epoch gets the
//! block `[next, next + PRODUCER_ID_BLOCK_SIZE)` and one `ProducerIdsRecord` moving `next`
//! past it; the answer goes out once that record is committed, so a block is never handed out
//! twice, also across a controller failover (the new controller reads `next` from the same
//! log). As Kafka's `ProducerIdControlManager` (through `ClusterControlManager.
//! checkBrokerEpoch`): an unknown broker and a broker of another epoch both get
//! STALE_BROKER_EPOCH; a fenced broker of the current epoch gets its block (ids it never uses
//! are only lost, never repeated); a block past `i64::MAX` is UNKNOWN_SERVER_ERROR.

use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::{AllocateProducerIdsRequest, AllocateProducerIdsResponse};
use kafka_protocol::metadata::{MetadataRecord, ProducerIdsRecord};

use super::{Controller, Outcome};
use crate::cluster::image::MetadataImage;

/// The ids in one block (Kafka's `ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE`).
pub const PRODUCER_ID_BLOCK_SIZE: i32 = 1000;

impl Controller {
    /// AllocateProducerIds (v0).
    pub fn allocate_producer_ids(
        &mut self,
        image: &MetadataImage,
        req: &AllocateProducerIdsRequest,
    ) -> Outcome<AllocateProducerIdsResponse> {
        let refuse = |code: ErrorCode| {
            Outcome::answer(AllocateProducerIdsResponse {
                error_code: code.code(),
                producer_id_start: -1,
                producer_id_len: 0,
                ..Default::default()
            })
        };
        let current = image
            .broker(req.broker_id)
            .is_some_and(|b| b.epoch == req.broker_epoch);
        if !current {
            return refuse(ErrorCode::STALE_BROKER_EPOCH);
        }
        let start = image.producer_ids().map_or(0, |p| p.next_producer_id);
        let Some(next) = start.checked_add(i64::from(PRODUCER_ID_BLOCK_SIZE)) else {
            tracing::error!(start, "every producer id has been handed out");
            return refuse(ErrorCode::UNKNOWN_SERVER_ERROR);
        };
        tracing::info!(
            broker = req.broker_id,
            start,
            len = PRODUCER_ID_BLOCK_SIZE,
            "producer id block handed out"
        );
        Outcome::new(
            vec![MetadataRecord::ProducerIds(ProducerIdsRecord {
                broker_id: req.broker_id,
                broker_epoch: req.broker_epoch,
                next_producer_id: next,
                ..Default::default()
            })],
            AllocateProducerIdsResponse {
                producer_id_start: start,
                producer_id_len: PRODUCER_ID_BLOCK_SIZE,
                ..Default::default()
            },
        )
    }
}
