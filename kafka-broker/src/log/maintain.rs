//! [`Log`] upkeep: flush, close, retention, DeleteRecords, truncation. Imports the log
//! (`local_log`), `segment`, `checkpoint`, `error`.

use std::ops::Bound;
use std::sync::Arc;

use super::checkpoint::{self, LOG_START_FILE, RECOVERY_POINT_FILE, sync_dir};
use super::error::LogError;
use super::local_log::Log;
use super::segment::Segment;

impl Log {
    /// Fsyncs every segment that holds data past the recovery point (log and indexes) and the
    /// directory, then moves the recovery point to the log end and checkpoints it. Runs under
    /// the partition lock; call it on a timer (Kafka's
    /// `log.flush.offset.checkpoint.interval.ms`) so recovery after a crash stays short, and
    /// before shutdown ([`Self::close`] does). Durability of single appends is the
    /// [`super::Flusher`]'s job.
    pub fn flush(&mut self) -> Result<(), LogError> {
        if self.flusher.is_poisoned() {
            return Err(LogError::SyncPoisoned {
                dir: self.dir.clone(),
                reason: "an earlier fsync failed".into(),
            });
        }
        let io = Arc::clone(&self.io);
        let point = self.recovery_point;
        let mut synced = Ok(());
        for seg in self.segments.values_mut() {
            if seg.next_offset() > point || seg.base_offset() >= point {
                synced = seg.flush(io.as_ref());
                if synced.is_err() {
                    break;
                }
            }
        }
        if synced.is_ok() {
            synced = sync_dir(io.as_ref(), &self.dir);
        }
        if let Err(e) = synced {
            if matches!(&e, LogError::Io { op, .. } if op.starts_with("fsync")) {
                self.flusher.poison(e.to_string());
            }
            return Err(e);
        }
        let leo = self.log_end_offset();
        checkpoint::write_offset(io.as_ref(), &self.dir, RECOVERY_POINT_FILE, leo)?;
        if self.epochs.dirty {
            self.epochs.persist(io.as_ref(), &self.dir)?;
        }
        self.recovery_point = leo;
        self.flusher.note_flushed(leo);
        self.unflushed_messages = 0;
        Ok(())
    }

    /// Flushes if `flush.ms` has passed since the last flush and there is unflushed data;
    /// returns whether it flushed. For the broker's flush timer.
    pub fn flush_if_due(&mut self, now_ms: i64) -> Result<bool, LogError> {
        let last = *self.last_flush_ms.get_or_insert(now_ms);
        let due = self
            .config
            .flush_interval_ms
            .is_some_and(|ms| now_ms.saturating_sub(last) >= ms);
        if !due || self.recovery_point >= self.log_end_offset() {
            return Ok(false);
        }
        self.flush()?;
        self.last_flush_ms = Some(now_ms);
        Ok(true)
    }

    /// Writes the final time index entry and flushes everything: the next open finds the
    /// indexes complete and needs no recovery. The log stays usable.
    pub fn close(&mut self) -> Result<(), LogError> {
        if self.deleted {
            return Ok(());
        }
        let io = Arc::clone(&self.io);
        self.active_mut()?.seal(io.as_ref())?;
        self.flush()
    }

    /// Marks the log deleted: later appends fail with [`LogError::Deleted`].
    pub fn mark_deleted(&mut self) {
        self.deleted = true;
    }

    /// DeleteRecords: moves the log start offset up to `offset` (at most the high watermark,
    /// else [`LogError::OffsetOutOfRange`]), checkpoints it, and deletes the segments wholly
    /// below it. Returns the new log start offset.
    pub fn delete_records_before(&mut self, offset: i64) -> Result<i64, LogError> {
        if offset < 0 || offset > self.high_watermark {
            return Err(LogError::OffsetOutOfRange {
                offset,
                log_start_offset: self.log_start_offset,
                log_end_offset: self.high_watermark,
            });
        }
        if offset > self.log_start_offset {
            self.set_log_start(offset)?;
        }
        let doomed = self.segments_below_start();
        self.remove_oldest(doomed)?;
        Ok(self.log_start_offset)
    }

    /// Retention: deletes the oldest segments (never the active one) that are wholly below the
    /// log start offset, or whose largest timestamp is more than `retention.ms` before
    /// `now_ms`, or while the log is larger than `retention.bytes`. Returns how many.
    pub fn apply_retention(&mut self, now_ms: i64) -> Result<usize, LogError> {
        let sealed: Vec<&Segment> = self
            .segments
            .values()
            .take(self.segments.len().saturating_sub(1))
            .collect();
        let mut doomed = self.segments_below_start();
        if self.config.retention_ms >= 0 {
            let limit = self.config.retention_ms;
            doomed += sealed
                .iter()
                .skip(doomed)
                .take_while(|s| now_ms.saturating_sub(s.largest_timestamp()) > limit)
                .count();
        }
        if self.config.retention_bytes >= 0 {
            let total: u64 = self.segments.values().map(Segment::size).sum();
            let kept: u64 = sealed.iter().take(doomed).map(|s| s.size()).sum();
            let mut excess = (total - kept) as i64 - self.config.retention_bytes;
            for s in sealed.iter().skip(doomed) {
                if excess < s.size() as i64 {
                    break;
                }
                excess -= s.size() as i64;
                doomed += 1;
            }
        }
        if doomed == 0 {
            return Ok(0);
        }
        let new_start = self
            .segments
            .keys()
            .nth(doomed)
            .copied()
            .unwrap_or(self.log_start_offset);
        if new_start > self.log_start_offset {
            self.set_log_start(new_start)?;
        }
        self.remove_oldest(doomed)?;
        Ok(doomed)
    }

    /// Sealed segments whose records are all below the log start offset.
    fn segments_below_start(&self) -> usize {
        let bases: Vec<i64> = self.segments.keys().copied().collect();
        bases
            .windows(2)
            .take_while(|w| w.get(1).is_some_and(|&next| next <= self.log_start_offset))
            .count()
    }

    /// Moves the log start offset forward and checkpoints it before any data goes.
    fn set_log_start(&mut self, offset: i64) -> Result<(), LogError> {
        checkpoint::write_offset(self.io.as_ref(), &self.dir, LOG_START_FILE, offset)?;
        self.log_start_offset = offset;
        self.high_watermark = self.high_watermark.max(offset);
        self.epochs.truncate_from_start(offset);
        if self.epochs.dirty {
            self.epochs.persist(self.io.as_ref(), &self.dir)?;
        }
        Ok(())
    }

    /// Deletes the `count` oldest segments (never the last one).
    fn remove_oldest(&mut self, count: usize) -> Result<(), LogError> {
        for _ in 0..count.min(self.segments.len().saturating_sub(1)) {
            if let Some((_, seg)) = self.segments.pop_first() {
                tracing::debug!(segment = %seg.path().display(), "deleting segment");
                seg.delete_files(self.io.as_ref())?;
            }
        }
        Ok(())
    }

    /// Removes every batch whose last offset is at least `offset` (a follower truncating to
    /// its leader's log). Truncation is per batch: the log end becomes the end of the last
    /// whole batch below `offset`, which is `offset` itself when it is a batch boundary (as
    /// the end offsets of leader epochs and the high watermark are). Below the first segment
    /// this is [`Self::truncate_fully_and_start_at`]. No-op if `offset` is at or past the end.
    pub fn truncate_to(&mut self, offset: i64) -> Result<(), LogError> {
        if offset < 0 {
            return Err(LogError::OffsetOutOfRange {
                offset,
                log_start_offset: self.log_start_offset,
                log_end_offset: self.log_end_offset(),
            });
        }
        if offset >= self.log_end_offset() {
            return Ok(());
        }
        if self
            .segments
            .keys()
            .next()
            .is_none_or(|&first| offset < first)
        {
            return self.truncate_fully_and_start_at(offset);
        }
        let later: Vec<i64> = self
            .segments
            .range((Bound::Excluded(offset), Bound::Unbounded))
            .map(|(&b, _)| b)
            .collect();
        for base in later.into_iter().rev() {
            if let Some(seg) = self.segments.remove(&base) {
                seg.delete_files(self.io.as_ref())?;
            }
        }
        let io = Arc::clone(&self.io);
        let active = self.active_mut()?;
        active.truncate_to(io.as_ref(), offset)?;
        active.flush(io.as_ref())?;
        let leo = self.log_end_offset();
        self.log_start_offset = self.log_start_offset.min(leo);
        self.after_truncation(leo)
    }

    /// Deletes every segment and starts the log empty at `offset` (log start and end).
    pub fn truncate_fully_and_start_at(&mut self, offset: i64) -> Result<(), LogError> {
        while let Some((_, seg)) = self.segments.pop_first() {
            seg.delete_files(self.io.as_ref())?;
        }
        let seg = Segment::create(
            &self.files,
            &self.io,
            &self.dir,
            offset,
            self.config.index_interval_bytes,
        )?;
        self.segments.insert(offset, seg);
        checkpoint::write_offset(self.io.as_ref(), &self.dir, LOG_START_FILE, offset)?;
        self.log_start_offset = offset;
        self.epochs.truncate_from_end(i64::MIN);
        self.after_truncation(offset)
    }

    fn after_truncation(&mut self, leo: i64) -> Result<(), LogError> {
        self.high_watermark = self.high_watermark.clamp(self.log_start_offset, leo);
        self.cleaner_checkpoint = self.cleaner_checkpoint.min(leo);
        self.recovery_point = self.recovery_point.min(leo);
        self.epochs.truncate_from_end(leo);
        self.flusher.note_truncated(leo);
        self.unflushed_messages = 0;
        let io = self.io.as_ref();
        sync_dir(io, &self.dir)?;
        checkpoint::write_offset(io, &self.dir, RECOVERY_POINT_FILE, self.recovery_point)?;
        if self.epochs.dirty {
            self.epochs.persist(io, &self.dir)?;
        }
        Ok(())
    }
}
