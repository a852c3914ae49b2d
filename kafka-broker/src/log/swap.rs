//! The names the cleaner's crash-safe swap uses, and finishing a swap a crash interrupted.
//!
//! The cleaner (`cleaner.rs`) writes a pass's new segments in the staging directory
//! [`STAGING_DIR`] of the log directory. To swap one in, it fsyncs the new segment, renames
//! its `.log` file to `<base>-<end>.log.swap` in the log directory (the commit point: the name
//! says which offsets it replaces), deletes the replaced segments, moves the new indexes in,
//! and renames the swap file to `<base>.log`. Opening a log ([`super::recovery`]) calls
//! [`finish_interrupted_swaps`] before it lists the segments: the unfinished staging directory
//! is removed (a pass that did not reach its commit point changed nothing), and each swap file
//! found replaces the segments in `[base, end)` as the swap would have.
//!
//! Below the cleaner and recovery alike; imports only `io`, `error`, and the file names of
//! `segment` and `txn_index`.

use std::path::Path;

use super::error::LogError;
use super::io::{FileKind, LogIo, file_names};
use super::segment::{INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, segment_path};
use super::txn_index::TXN_INDEX_SUFFIX;

/// Where a cleaning pass writes its new segments before swapping them in.
pub(crate) const STAGING_DIR: &str = "cleaner-staging";
const SWAP_SUFFIX: &str = ".log.swap";

/// The name of the swap file of a new segment at `base` replacing the segments in
/// `[base, end)`.
pub(crate) fn swap_name(base: i64, end: i64) -> String {
    format!("{base:020}-{end:020}{SWAP_SUFFIX}")
}

/// `(base, end)` of a swap file name written by [`swap_name`].
fn parse_swap_name(name: &str) -> Option<(i64, i64)> {
    let stem = name.strip_suffix(SWAP_SUFFIX)?;
    let (base, end) = stem.split_once('-')?;
    let digits = |s: &str| s.len() == 20 && s.bytes().all(|b| b.is_ascii_digit());
    (digits(base) && digits(end)).then(|| Some((base.parse().ok()?, end.parse().ok()?)))?
}

/// What [`finish_interrupted_swaps`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SwapRecovery {
    /// An unfinished cleaning pass's staging directory was removed.
    pub staging_removed: bool,
    /// `(base, end)` of each interrupted swap finished: the segments in `[base, end)` were
    /// replaced by the swap file's segment.
    pub swaps_finished: Vec<(i64, i64)>,
}

/// Finishes swaps a crash interrupted and removes an unfinished staging directory. Called
/// when a log is opened, before its segments are listed.
pub(crate) fn finish_interrupted_swaps(
    io: &dyn LogIo,
    dir: &Path,
) -> Result<SwapRecovery, LogError> {
    let mut done = SwapRecovery::default();
    let staging = dir.join(STAGING_DIR);
    match io.remove_dir_all(&staging) {
        Ok(()) => {
            tracing::warn!(dir = %staging.display(), "removed an unfinished cleaning");
            done.staging_removed = true;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(LogError::io("remove staging directory", &staging, e)),
    }
    let names = file_names(io, dir).map_err(|e| LogError::io("list directory", dir, e))?;
    for (base, end) in names.iter().filter_map(|n| parse_swap_name(n)) {
        tracing::warn!(dir = %dir.display(), base, end, "finishing an interrupted cleaning swap");
        for name in &names {
            let replaced = [
                (FileKind::Log, LOG_SUFFIX),
                (FileKind::OffsetIndex, INDEX_SUFFIX),
                (FileKind::TimeIndex, TIME_INDEX_SUFFIX),
                (FileKind::TxnIndex, TXN_INDEX_SUFFIX),
            ]
            .iter()
            .filter_map(|&(kind, suffix)| {
                Some((kind, name.strip_suffix(suffix)?.strip_suffix('.')?))
            })
            .filter(|(_, stem)| stem.len() == 20 && stem.bytes().all(|b| b.is_ascii_digit()))
            .filter_map(|(kind, stem)| Some((kind, stem.parse::<i64>().ok()?)))
            .find(|&(_, b)| (base..end.max(base + 1)).contains(&b));
            if let Some((kind, _)) = replaced {
                let p = dir.join(name);
                io.remove_file(kind, &p)
                    .map_err(|e| LogError::io("delete segment", &p, e))?;
            }
        }
        let swap = dir.join(swap_name(base, end));
        let log = segment_path(dir, base, LOG_SUFFIX);
        io.rename(FileKind::Log, &swap, &log)
            .map_err(|e| LogError::io("rename cleaned segment", &swap, e))?;
        done.swaps_finished.push((base, end));
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swap_names_round_trip_and_others_are_not_swaps() {
        let name = swap_name(42, 1_000);
        assert_eq!(name, "00000000000000000042-00000000000000001000.log.swap");
        assert_eq!(parse_swap_name(&name), Some((42, 1_000)));
        for other in [
            "00000000000000000042.log",
            "42-1000.log.swap",
            "00000000000000000042-0000000000000000100x.log.swap",
            "00000000000000000042.log.swap",
        ] {
            assert_eq!(parse_swap_name(other), None, "{other}");
        }
    }
}
