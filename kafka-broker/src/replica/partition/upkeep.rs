//! Upkeep: what moves a partition's log other than appends (a follower's truncation to its
//! leader, the leader's log start taken, DeleteRecords, retention, compaction) and what keeps
//! its state (producer snapshots and expiry). Each publishes what it moved and wakes whoever
//! waits for it.

use kafka_protocol::error_code::ErrorCode;

use super::super::producer_state::ProducerStates;
use super::Partition;
use super::producers::rebuild_producer_state;
use crate::error::BrokerError;
use crate::log::{CleanStats, CleanerLimits};

impl Partition {
    /// Removes every batch at or past `offset` (a follower truncating to its leader's log),
    /// rebuilds the producer state from what is left and keeps the high watermark within the
    /// log.
    pub fn truncate_to(&self, offset: i64, now_ms: i64) -> Result<(), BrokerError> {
        let mut producers = self.producers();
        let mut log = self.log();
        log.truncate_to(offset)?;
        *producers = rebuild_producer_state(&log, now_ms);
        self.publish(&log, &mut producers);
        drop(log);
        drop(producers);
        self.wake_all();
        Ok(())
    }

    /// A follower whose log ends below its leader's log start (the leader deleted what it
    /// would fetch next): the log starts again, empty, at the leader's log start (Kafka's
    /// `truncateFullyAndStartAt`).
    pub fn restart_at(&self, offset: i64) -> Result<(), BrokerError> {
        let mut producers = self.producers();
        let mut log = self.log();
        log.truncate_fully_and_start_at(offset)?;
        *producers = ProducerStates::default();
        self.publish(&log, &mut producers);
        drop(log);
        drop(producers);
        self.wake_all();
        Ok(())
    }

    /// A follower takes its leader's log start offset (retention or DeleteRecords there),
    /// within its own high watermark: the segments below it go here too.
    pub fn follow_log_start(&self, leader_log_start: i64) -> Result<(), BrokerError> {
        let mut producers = self.producers();
        let mut log = self.log();
        let target = leader_log_start.min(log.high_watermark());
        if target <= log.log_start_offset() {
            return Ok(());
        }
        log.delete_records_before(target)?;
        let moved = self.publish(&log, &mut producers);
        drop(log);
        drop(producers);
        self.wake(moved);
        Ok(())
    }

    /// DeleteRecords on the leader: moves the log start offset to `offset` (-1: to the high
    /// watermark); beyond the high watermark is OFFSET_OUT_OF_RANGE. Returns the new low
    /// watermark.
    pub fn delete_records(&self, offset: i64) -> Result<i64, BrokerError> {
        if !self.is_leader() {
            return Err(self.not_leader());
        }
        if crate::topics::is_internal(&self.topic) {
            // The coordinators' state lives there; clients may not trim it.
            return Err(BrokerError::kafka(
                ErrorCode::INVALID_TOPIC_EXCEPTION,
                format!("Cannot delete records of internal topic {}", self.topic),
            ));
        }
        let mut producers = self.producers();
        let mut log = self.log();
        let hw = log.high_watermark();
        let target = if offset == -1 { hw } else { offset };
        if target < 0 || target > hw {
            return Err(BrokerError::kafka(
                ErrorCode::OFFSET_OUT_OF_RANGE,
                format!("offset {target} is beyond the high watermark {hw}"),
            ));
        }
        log.delete_records_before(target)?;
        let start = log.log_start_offset();
        let moved = self.publish(&log, &mut producers);
        drop(log);
        drop(producers);
        self.wake(moved);
        Ok(start)
    }

    /// Deletes the segments retention lets go (by time and size, see the log's retention);
    /// returns how many.
    pub fn apply_retention(&self, now_ms: i64) -> Result<usize, BrokerError> {
        let mut producers = self.producers();
        let mut log = self.log();
        let deleted = log.apply_retention(now_ms)?;
        if deleted == 0 {
            return Ok(0);
        }
        let moved = self.publish(&log, &mut producers);
        drop(log);
        drop(producers);
        self.wake(moved);
        Ok(deleted)
    }

    /// Flushes the log if its flush interval is due.
    pub fn flush_if_due(&self, now_ms: i64) -> Result<bool, BrokerError> {
        Ok(self.log().flush_if_due(now_ms)?)
    }

    /// One compaction pass if the log is compacted and due (see `log::cleaner`): planned and
    /// swapped in under the log lock, run without it, never past the last stable offset.
    /// `None` when there was nothing to do.
    pub fn clean(
        &self,
        limits: &CleanerLimits,
        now_ms: i64,
    ) -> Result<Option<CleanStats>, BrokerError> {
        let last_stable = self.offsets().last_stable;
        let Some(plan) = self.log().clean_plan_below(now_ms, last_stable) else {
            return Ok(None);
        };
        let last = self.producers().last_offsets();
        let cleaned = plan.with_producer_last_offsets(last).run(limits, now_ms)?;
        let stats = self.log().finish_clean(cleaned)?;
        Ok(Some(stats))
    }

    /// Writes the producer-state snapshot into the log's directory (crash-safely: see
    /// [`super::super::producer_state::write_snapshot`]).
    pub fn write_producer_snapshot(&self) -> std::io::Result<()> {
        let producers = self.producers();
        let log = self.log();
        super::super::producer_state::write_snapshot(log.dir(), &producers, log.log_end_offset())
    }

    /// Forgets producers idle for `expiration_ms` (`producer.id.expiration.ms`).
    pub fn expire_producers(&self, now_ms: i64, expiration_ms: i64) -> usize {
        self.producers().expire(now_ms, expiration_ms)
    }
}
