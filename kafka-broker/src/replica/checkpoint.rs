//! The high-watermark checkpoint: Kafka's `replication-offset-checkpoint` in the data
//! directory, one `<topic> <partition> <high watermark>` line per partition after a version
//! line (`0`) and a count line, replaced atomically (temporary file, fsync, rename, directory
//! fsync).
//!
//! A follower cannot take its log end as its high watermark after a restart (it may hold
//! records its leader never committed): it starts from the checkpointed value, capped at its
//! log end. A leader with no followers recomputes it from its own log at once, so on a single
//! node the file only matters for being kept up to date. The broker writes it every
//! `replica.high.watermark.checkpoint.interval.ms` and at shutdown.

use std::collections::HashMap;
use std::path::Path;

use crate::log::checkpoint as files;
use crate::log::{LogError, LogIo, TopicPartition};

/// The file's name in the data directory.
pub const HIGH_WATERMARK_FILE: &str = "replication-offset-checkpoint";

/// Writes the high watermarks of `partitions` (replacing the file).
pub fn write(
    io: &dyn LogIo,
    dir: &Path,
    partitions: &[(TopicPartition, i64)],
) -> Result<(), LogError> {
    let lines: Vec<String> = partitions
        .iter()
        .map(|(tp, hw)| format!("{} {} {hw}", tp.topic, tp.partition))
        .collect();
    files::write(io, dir, HIGH_WATERMARK_FILE, &lines)
}

/// Reads the file: empty when it does not exist; an error naming the file when it is
/// malformed (the caller then starts every high watermark from the log, as a missing file).
pub fn read(dir: &Path) -> Result<HashMap<TopicPartition, i64>, LogError> {
    let Some(lines) = files::read(dir, HIGH_WATERMARK_FILE)? else {
        return Ok(HashMap::new());
    };
    let mut out = HashMap::with_capacity(lines.len());
    for line in &lines {
        let mut parts = line.split(' ');
        let parsed = (|| {
            let topic = parts.next()?;
            let partition = parts.next()?.parse::<i32>().ok()?;
            let hw = parts.next()?.parse::<i64>().ok()?;
            (parts.next().is_none() && !topic.is_empty() && partition >= 0 && hw >= 0)
                .then(|| (TopicPartition::new(topic, partition), hw))
        })();
        let Some((tp, hw)) = parsed else {
            return Err(LogError::corrupt(
                dir.join(HIGH_WATERMARK_FILE),
                0,
                format!("malformed entry {line:?}"),
            ));
        };
        out.insert(tp, hw);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::StdIo;

    #[test]
    fn round_trips_in_kafkas_format_and_refuses_damage() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read(dir.path()).unwrap().is_empty());
        let entries = vec![
            (TopicPartition::new("orders", 0), 42),
            (TopicPartition::new("__consumer_offsets", 17), 0),
        ];
        write(&StdIo, dir.path(), &entries).unwrap();
        let text = std::fs::read_to_string(dir.path().join(HIGH_WATERMARK_FILE)).unwrap();
        assert_eq!(text, "0\n2\norders 0 42\n__consumer_offsets 17 0\n");
        let back = read(dir.path()).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(back[&TopicPartition::new("orders", 0)], 42);
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, [HIGH_WATERMARK_FILE]);
        for bad in [
            "0\n1\norders 0\n",
            "0\n1\norders x 4\n",
            "0\n1\norders 0 -5\n",
            "0\n2\norders 0 4\n",
            "1\n0\n",
        ] {
            std::fs::write(dir.path().join(HIGH_WATERMARK_FILE), bad).unwrap();
            assert!(read(dir.path()).is_err(), "{bad:?} was accepted");
        }
    }
}
