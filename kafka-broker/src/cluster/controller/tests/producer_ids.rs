//! AllocateProducerIds: consecutive blocks recorded in the log, refusals, and the next block
//! after a controller restart or failover (the image rebuilt from the log or a snapshot).

use kafka_protocol::messages::{AllocateProducerIdsRequest, AllocateProducerIdsResponse};
use kafka_protocol::metadata::{MetadataRecord, ProducerIdsRecord};

use super::*;

fn allocate(h: &mut H, broker: i32, epoch: i64) -> AllocateProducerIdsResponse {
    let req = AllocateProducerIdsRequest {
        broker_id: broker,
        broker_epoch: epoch,
        ..Default::default()
    };
    h.run(|c, image, _| c.allocate_producer_ids(image, &req))
}

/// A block for a registered broker with its current epoch: (start, length).
fn block(h: &mut H, broker: i32) -> (i64, i32) {
    let epoch = h.image.broker(broker).unwrap().epoch;
    let r = allocate(h, broker, epoch);
    assert_eq!(code(r.error_code), ErrorCode::NONE, "broker {broker}");
    (r.producer_id_start, r.producer_id_len)
}

#[test]
fn blocks_are_consecutive_and_each_is_one_record() {
    let mut h = H::new();
    h.brokers(&[1, 2, 3]);
    assert!(h.image.producer_ids().is_none());
    assert_eq!(block(&mut h, 1), (0, 1000));
    let epoch1 = h.image.broker(1).unwrap().epoch;
    assert_eq!(
        h.last_batch(),
        &[MetadataRecord::ProducerIds(ProducerIdsRecord {
            broker_id: 1,
            broker_epoch: epoch1,
            next_producer_id: 1000,
            ..Default::default()
        })]
    );
    assert_eq!(block(&mut h, 2), (1000, 1000));
    assert_eq!(block(&mut h, 1), (2000, 1000));
    assert_eq!(block(&mut h, 3), (3000, 1000));
    let p = h.image.producer_ids().unwrap();
    assert_eq!((p.broker_id, p.next_producer_id), (3, 4000));
}

#[test]
fn an_unknown_broker_or_another_epoch_is_stale_and_writes_nothing() {
    let mut h = H::new();
    h.brokers(&[1]);
    let epoch = h.image.broker(1).unwrap().epoch;
    let before = h.image.offset();
    for (broker, e) in [(1, epoch + 1), (1, epoch - 1), (1, -1), (7, epoch)] {
        let out = h.peek(|c, image, _| {
            c.allocate_producer_ids(
                image,
                &AllocateProducerIdsRequest {
                    broker_id: broker,
                    broker_epoch: e,
                    ..Default::default()
                },
            )
        });
        assert!(out.records.is_empty(), "broker {broker} epoch {e}");
        assert_eq!(
            code(out.response.error_code),
            ErrorCode::STALE_BROKER_EPOCH,
            "broker {broker} epoch {e}"
        );
        assert_eq!(out.response.producer_id_len, 0);
    }
    assert_eq!(h.image.offset(), before);
    // The next block for the real epoch is still the first.
    assert_eq!(block(&mut h, 1), (0, 1000));
}

#[test]
fn a_broker_registered_again_gets_blocks_only_with_its_new_epoch() {
    let mut h = H::new();
    h.brokers(&[1, 2]);
    let old = h.image.broker(1).unwrap().epoch;
    assert_eq!(block(&mut h, 1), (0, 1000));
    // A restart: a new incarnation registers (fenced until it catches up).
    h.advance(SESSION + 1_000, &[2]);
    let r = h.register_req(&registration(1, 1, None));
    assert_eq!(r.error_code, 0);
    assert_ne!(r.broker_epoch, old);
    assert_eq!(
        code(allocate(&mut h, 1, old).error_code),
        ErrorCode::STALE_BROKER_EPOCH
    );
    // As Kafka's controller (which checks the epoch only): fenced with its current epoch, it
    // gets the next block.
    assert!(h.image.broker(1).unwrap().fenced);
    let r = allocate(&mut h, 1, r.broker_epoch);
    assert_eq!(code(r.error_code), ErrorCode::NONE);
    assert_eq!((r.producer_id_start, r.producer_id_len), (1000, 1000));
}

#[test]
fn a_new_controller_continues_after_the_last_recorded_block() {
    let mut h = H::new();
    h.brokers(&[1, 2, 3]);
    for b in [1, 2, 3, 2] {
        block(&mut h, b);
    }
    // Restart: the image replayed from the log, batch by batch.
    let mut replayed = MetadataImage::new();
    for (offset, records) in &h.log {
        replayed.apply_batch(*offset, records).unwrap();
    }
    assert_eq!(replayed, h.image);
    // Failover to a node that loaded a snapshot of the image.
    let mut restored = MetadataImage::new();
    restored
        .apply_batch(h.image.offset(), &h.image.to_records())
        .unwrap();
    assert_eq!(restored.producer_ids(), h.image.producer_ids());
    for image in [replayed, restored] {
        let mut next = H::new();
        next.c = Controller::new(config(), &image, next.now);
        next.image = image;
        assert_eq!(block(&mut next, 3), (4000, 1000));
        assert_eq!(block(&mut next, 1), (5000, 1000));
    }
}

#[test]
fn the_last_blocks_before_the_end_of_the_ids_and_none_after() {
    let mut h = H::new();
    h.brokers(&[1]);
    let epoch = h.image.broker(1).unwrap().epoch;
    h.commit(vec![MetadataRecord::ProducerIds(ProducerIdsRecord {
        broker_id: 1,
        broker_epoch: epoch,
        next_producer_id: i64::MAX - 1000,
        ..Default::default()
    })]);
    assert_eq!(block(&mut h, 1), (i64::MAX - 1000, 1000));
    let before = h.image.offset();
    let r = allocate(&mut h, 1, epoch);
    assert_eq!(code(r.error_code), ErrorCode::UNKNOWN_SERVER_ERROR);
    assert_eq!(h.image.offset(), before);
}
