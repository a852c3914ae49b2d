//! The producer state of a log: loaded at open (the clean-shutdown snapshot, or rebuilt from
//! the batch headers with the aborted transactions indexed again), rebuilt after a truncation,
//! and followed batch by batch on a follower (the producers and transactions a leader's
//! batches record).

use bytes::Bytes;

use super::super::producer_state::{BatchMeta, CompletedTxn, Marker, ProducerStates};
use crate::log::{AbortedTxn, Log, LogError};

/// The producer state of a log rebuilt from its batch headers, from the log start to the end.
/// The log keeps no append times, and a batch's own timestamp may be the client's (CreateTime,
/// possibly far in the past), so every producer found counts as having appended now: it is
/// kept a whole `producer.id.expiration.ms` from here rather than forgotten too early.
pub fn rebuild_producer_state(log: &Log, now_ms: i64) -> ProducerStates {
    rebuild_with_aborts(log, now_ms).0
}

/// [`rebuild_producer_state`], with the aborted transactions found on the way (in marker
/// order) and the high watermark's stable transactions settled.
fn rebuild_with_aborts(log: &Log, now: i64) -> (ProducerStates, Vec<(CompletedTxn, i64)>) {
    let mut states = ProducerStates::default();
    let mut aborts = Vec::new();
    let mut offset = log.log_start_offset();
    let end = log.log_end_offset();
    while offset < end {
        let Ok(info) = log.read(offset, 1 << 20, end) else {
            break;
        };
        let Ok(bytes) = info.read_bytes() else { break };
        if info.next_offset <= offset {
            break;
        }
        for txn in record_producers(&mut states, bytes, now) {
            let lso = states.last_stable_after(&txn);
            aborts.push((txn, lso));
        }
        offset = info.next_offset;
    }
    states.on_high_watermark(log.high_watermark());
    (states, aborts)
}

/// The producer state of an opened log (see [`crate::replica::producer_state::load`]). When the log
/// asks for its `.txnindex` files to be rebuilt (recovery scanned segments, or a file was
/// damaged), the state is rebuilt from the batches whatever the snapshot, and the aborts found
/// in those segments are indexed again.
pub fn load_producer_state(log: &mut Log, now_ms: i64, expiration_ms: i64) -> ProducerStates {
    let dir = log.dir().to_path_buf();
    let end = log.log_end_offset();
    let Some(from) = log.txn_index_rebuild_from() else {
        return super::super::producer_state::load(&dir, end, now_ms, expiration_ms, || {
            rebuild_producer_state(log, now_ms)
        });
    };
    let (states, aborts) = rebuild_with_aborts(log, now_ms);
    let mut rebuilt = 0usize;
    for (txn, lso) in aborts {
        if txn.last_offset < from {
            continue;
        }
        let entry = AbortedTxn {
            producer_id: txn.producer_id,
            first_offset: txn.first_offset,
            last_offset: txn.last_offset,
            last_stable_offset: lso,
        };
        match log.add_aborted_txn(entry) {
            Ok(()) => rebuilt += 1,
            Err(e) => tracing::warn!(dir = %dir.display(), error = %e,
                "transaction index entry not rebuilt"),
        }
    }
    match log.finish_txn_index_rebuild() {
        Ok(()) => tracing::info!(dir = %dir.display(), from, aborted = rebuilt,
            "transaction indexes rebuilt from the log"),
        Err(e) => tracing::warn!(dir = %dir.display(), error = %e,
            "transaction index rebuild not persisted; it runs again at the next open"),
    }
    super::super::producer_state::load(&dir, end, now_ms, expiration_ms, || states)
}

/// Records an aborted transaction in the `.txnindex` of the segment holding its marker.
pub(super) fn index_abort(
    log: &mut Log,
    producers: &ProducerStates,
    txn: &CompletedTxn,
) -> Result<(), LogError> {
    log.add_aborted_txn(AbortedTxn {
        producer_id: txn.producer_id,
        first_offset: txn.first_offset,
        last_offset: txn.last_offset,
        last_stable_offset: producers.last_stable_after(txn),
    })
}

/// Records the producers' batches of a record set from the batch headers, as appended at
/// `append_ms`, as a follower or a rebuild does (nothing refused): idempotent batches,
/// transactional batches opening transactions, markers ending them. Returns the aborted
/// transactions, in marker order.
pub(super) fn record_producers(
    states: &mut ProducerStates,
    records: Bytes,
    append_ms: i64,
) -> Vec<CompletedTxn> {
    use kafka_protocol::record::control::{ControlRecordType, parse_end_txn_marker};
    let mut aborted = Vec::new();
    for batch in kafka_protocol::record::RecordBatches::new(records).flatten() {
        let (pid, epoch) = (batch.producer_id(), batch.producer_epoch());
        if pid < 0 {
            continue;
        }
        if batch.is_control() {
            let Ok(Some((kind, marker))) = parse_end_txn_marker(&batch) else {
                continue;
            };
            let commit = kind == ControlRecordType::Commit;
            let marker = Marker {
                epoch,
                coordinator_epoch: marker.coordinator_epoch,
                offset: batch.base_offset(),
                commit,
                timestamp: batch.max_timestamp(),
            };
            let done = states.complete_txn(pid, marker, append_ms);
            aborted.extend(done.filter(|t| t.aborted));
            continue;
        }
        if batch.is_transactional() {
            states.begin_txn(pid, epoch, batch.base_offset(), append_ms);
        }
        if batch.base_sequence() >= 0 {
            states.record(
                pid,
                epoch,
                BatchMeta {
                    first_seq: batch.base_sequence(),
                    last_seq: batch.last_sequence(),
                    first_offset: batch.base_offset(),
                    last_offset: batch.last_offset(),
                    timestamp: batch.max_timestamp(),
                },
                append_ms,
            );
        }
    }
    aborted
}
