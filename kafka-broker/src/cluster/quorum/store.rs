//! The Raft log of the controller quorum on disk, and the [`raft::Storage`] view of it.
//!
//! A directory `__cluster_metadata-0` in the node's data dir (Kafka's name for the metadata
//! log) holds three files:
//!
//! ```text
//! raft.log       entries, appended: [u32 length][u32 crc32c of payload][payload: Entry protobuf]
//! quorum-state   the hard state (term, vote, commit): [u32 crc32c][HardState protobuf]
//! snapshot       the last snapshot (metadata image at an index): [u32 crc32c][Snapshot protobuf]
//! ```
//!
//! Every write is fsynced before [`DiskStore::append`] or [`DiskStore::set_hard_state`] return,
//! and the driver sends the messages that depend on them only afterwards, so a voter that
//! acknowledged an entry or a vote still has it after a crash. `quorum-state` and `snapshot`
//! are replaced whole (temporary file, fsync, rename, fsync of the directory). A torn tail of
//! `raft.log` (a crash in the middle of an append, which was never acknowledged) is cut off at
//! the first frame that does not check out.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use protobuf::Message as _;
use raft::eraftpb::{ConfState, Entry, HardState, Snapshot};
use raft::{GetEntriesContext, RaftState, StorageError};

use crate::error::BrokerError;

/// The directory of the metadata log inside a data dir.
pub const DIR: &str = "__cluster_metadata-0";
const LOG: &str = "raft.log";
const STATE: &str = "quorum-state";
const SNAPSHOT: &str = "snapshot";
/// No single entry is larger (a CreateTopics of 10,000 partitions is about 1 MB).
const MAX_ENTRY_BYTES: u32 = 64 << 20;

/// The metadata log: entries after the snapshot in memory (the metadata log is small: it is
/// compacted into snapshots), every change written through to the files.
#[derive(Debug)]
pub struct DiskStore {
    dir: PathBuf,
    log: File,
    hard_state: HardState,
    conf_state: ConfState,
    snapshot: Snapshot,
    /// Entries after the snapshot, in index order, and where each starts in `raft.log`.
    entries: Vec<Entry>,
    positions: Vec<u64>,
    log_len: u64,
}

fn io(what: &str, path: &Path, e: std::io::Error) -> BrokerError {
    BrokerError::Storage(format!("{what} {}: {e}", path.display()))
}

fn framed(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 4);
    out.extend_from_slice(&crc32c::crc32c(payload).to_be_bytes());
    out.extend_from_slice(payload);
    out
}

fn unframed<'a>(bytes: &'a [u8], path: &Path) -> Result<&'a [u8], BrokerError> {
    let (crc, payload) = bytes.split_first_chunk::<4>().ok_or_else(|| {
        BrokerError::Storage(format!("{}: shorter than its checksum", path.display()))
    })?;
    if u32::from_be_bytes(*crc) != crc32c::crc32c(payload) {
        return Err(BrokerError::Storage(format!(
            "{}: checksum mismatch (the file is damaged)",
            path.display()
        )));
    }
    Ok(payload)
}

/// Replaces `path` whole: a temporary file, fsynced, renamed over it, the directory fsynced.
fn replace(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), BrokerError> {
    let path = dir.join(name);
    let tmp = dir.join(format!("{name}.tmp"));
    let mut f = File::create(&tmp).map_err(|e| io("creating", &tmp, e))?;
    f.write_all(bytes).map_err(|e| io("writing", &tmp, e))?;
    f.sync_all().map_err(|e| io("syncing", &tmp, e))?;
    std::fs::rename(&tmp, &path).map_err(|e| io("renaming to", &path, e))?;
    sync_dir(dir)
}

fn sync_dir(dir: &Path) -> Result<(), BrokerError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io("syncing the directory", dir, e))
}

impl DiskStore {
    /// Opens (creating) the metadata log in `data_dir`. A new log starts with `voters` as its
    /// configuration; an existing one must have been made with the same voters.
    pub fn open(data_dir: &Path, voters: &[u64]) -> Result<Self, BrokerError> {
        let dir = data_dir.join(DIR);
        std::fs::create_dir_all(&dir).map_err(|e| io("creating", &dir, e))?;
        let mut voters = voters.to_vec();
        voters.sort_unstable();
        let conf_state = ConfState {
            voters,
            ..Default::default()
        };

        let state_path = dir.join(STATE);
        let hard_state = match std::fs::read(&state_path) {
            Ok(bytes) => HardState::parse_from_bytes(unframed(&bytes, &state_path)?)
                .map_err(|e| BrokerError::Storage(format!("{}: {e}", state_path.display())))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => HardState::default(),
            Err(e) => return Err(io("reading", &state_path, e)),
        };
        let snap_path = dir.join(SNAPSHOT);
        let snapshot = match std::fs::read(&snap_path) {
            Ok(bytes) => Snapshot::parse_from_bytes(unframed(&bytes, &snap_path)?)
                .map_err(|e| BrokerError::Storage(format!("{}: {e}", snap_path.display())))?,
            // A new log: an empty snapshot at index 0 records the voters it is made by.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let mut s = Snapshot::default();
                s.mut_metadata().set_conf_state(conf_state.clone());
                let payload = s
                    .write_to_bytes()
                    .map_err(|e| BrokerError::Storage(format!("encoding a snapshot: {e}")))?;
                replace(&dir, SNAPSHOT, &framed(&payload))?;
                s
            }
            Err(e) => return Err(io("reading", &snap_path, e)),
        };
        let mut stored_voters = snapshot.get_metadata().get_conf_state().voters.clone();
        stored_voters.sort_unstable();
        if stored_voters != conf_state.voters {
            return Err(BrokerError::Config(format!(
                "controller.quorum.voters names the voters {:?}, but the metadata log in {} was \
                 made by the voters {stored_voters:?}",
                conf_state.voters,
                dir.display()
            )));
        }

        let log_path = dir.join(LOG);
        let mut log = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&log_path)
            .map_err(|e| io("opening", &log_path, e))?;
        let mut bytes = Vec::new();
        log.read_to_end(&mut bytes)
            .map_err(|e| io("reading", &log_path, e))?;
        let (entries, positions, valid) = scan(&bytes);
        if valid < bytes.len() as u64 {
            tracing::warn!(
                file = %log_path.display(),
                valid,
                len = bytes.len(),
                "the metadata log ends in a torn or damaged frame (a crash during an append); \
                 cutting it off"
            );
            log.set_len(valid)
                .and_then(|()| log.sync_all())
                .map_err(|e| io("truncating", &log_path, e))?;
        }
        let snap_index = snapshot.get_metadata().index;
        let mut store = Self {
            dir,
            log,
            hard_state,
            conf_state,
            snapshot,
            entries,
            positions,
            log_len: valid,
        };
        // Entries the snapshot already covers (a crash between writing a snapshot and
        // rewriting the log) are dropped; a log that does not continue the snapshot is damage.
        let keep_from = store.entries.partition_point(|e| e.index <= snap_index);
        store.entries.drain(..keep_from);
        store.positions.drain(..keep_from);
        for (i, e) in store.entries.iter().enumerate() {
            if e.index != snap_index + 1 + i as u64 {
                return Err(BrokerError::Storage(format!(
                    "{}: entry {} found where {} was expected",
                    log_path.display(),
                    e.index,
                    snap_index + 1 + i as u64
                )));
            }
        }
        // Raft refuses a commit index outside the log: one beyond it (entries lost to a torn
        // tail were never acknowledged, but the hard state may have been written first) is
        // brought back within it; one before the snapshot moves up to it (the snapshot holds
        // committed state only).
        let last = store.last();
        let snap_term = store.snapshot.get_metadata().term;
        if snap_index > 0 || store.hard_state.commit > 0 {
            store.hard_state.commit = store.hard_state.commit.clamp(snap_index, last);
            store.hard_state.term = store.hard_state.term.max(snap_term);
        }
        Ok(store)
    }

    fn first(&self) -> u64 {
        self.snapshot.get_metadata().index + 1
    }

    fn last(&self) -> u64 {
        self.entries
            .last()
            .map_or_else(|| self.snapshot.get_metadata().index, |e| e.index)
    }

    /// The directory the files are in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The snapshot the log starts after.
    pub fn snapshot_ref(&self) -> &Snapshot {
        &self.snapshot
    }

    /// The hard state as last written.
    pub fn hard_state(&self) -> &HardState {
        &self.hard_state
    }

    /// Entries `from..=to` that are in memory (those after the snapshot).
    pub fn entries_between(&self, from: u64, to: u64) -> &[Entry] {
        let first = self.first();
        if from < first || to < from || self.entries.is_empty() {
            return &[];
        }
        let lo = (from - first) as usize;
        let hi = ((to - first) as usize + 1).min(self.entries.len());
        self.entries.get(lo..hi).unwrap_or(&[])
    }

    /// Appends entries (replacing any from the first one's index on: a new leader's log wins
    /// over an unacknowledged tail), then fsyncs.
    pub fn append(&mut self, ents: &[Entry]) -> Result<(), BrokerError> {
        let Some(first_new) = ents.first().map(|e| e.index) else {
            return Ok(());
        };
        let path = self.dir.join(LOG);
        if first_new < self.first() {
            return Err(BrokerError::Storage(format!(
                "{}: an append at {first_new} would overwrite the snapshot at {}",
                path.display(),
                self.first() - 1
            )));
        }
        if first_new > self.last() + 1 {
            return Err(BrokerError::Storage(format!(
                "{}: an append at {first_new} leaves a gap after {}",
                path.display(),
                self.last()
            )));
        }
        let keep = (first_new - self.first()) as usize;
        if keep < self.entries.len() {
            let cut = self.positions[keep];
            self.entries.truncate(keep);
            self.positions.truncate(keep);
            self.log
                .set_len(cut)
                .map_err(|e| io("truncating", &path, e))?;
            self.log_len = cut;
        }
        let mut buf = Vec::new();
        for e in ents {
            let payload = e.write_to_bytes().map_err(|err| {
                BrokerError::Storage(format!("encoding entry {}: {err}", e.index))
            })?;
            self.positions.push(self.log_len + buf.len() as u64);
            buf.extend_from_slice(&(payload.len() as u32).to_be_bytes());
            buf.extend_from_slice(&crc32c::crc32c(&payload).to_be_bytes());
            buf.extend_from_slice(&payload);
        }
        // Append mode writes at the end whatever the cursor says.
        self.log
            .seek(SeekFrom::End(0))
            .and_then(|_| self.log.write_all(&buf))
            .and_then(|()| self.log.sync_data())
            .map_err(|e| io("appending to", &path, e))?;
        self.log_len += buf.len() as u64;
        self.entries.extend_from_slice(ents);
        Ok(())
    }

    /// Writes the hard state (term, vote, commit) and fsyncs it.
    pub fn set_hard_state(&mut self, hs: &HardState) -> Result<(), BrokerError> {
        let payload = hs
            .write_to_bytes()
            .map_err(|e| BrokerError::Storage(format!("encoding the hard state: {e}")))?;
        replace(&self.dir, STATE, &framed(&payload))?;
        self.hard_state = hs.clone();
        Ok(())
    }

    /// Records a new commit index (written with the next hard state; raft re-derives it on a
    /// restart from the leader, so it need not be fsynced on its own).
    pub fn set_commit(&mut self, commit: u64) {
        self.hard_state.commit = commit;
    }

    /// Takes a snapshot received from the leader: the log is replaced by it.
    pub fn apply_snapshot(&mut self, snapshot: &Snapshot) -> Result<(), BrokerError> {
        let meta = snapshot.get_metadata();
        if meta.index < self.snapshot.get_metadata().index {
            return Ok(());
        }
        let payload = snapshot
            .write_to_bytes()
            .map_err(|e| BrokerError::Storage(format!("encoding a snapshot: {e}")))?;
        replace(&self.dir, SNAPSHOT, &framed(&payload))?;
        self.snapshot = snapshot.clone();
        self.hard_state.commit = self.hard_state.commit.max(meta.index);
        self.hard_state.term = self.hard_state.term.max(meta.term);
        let drop = self.entries.partition_point(|e| e.index <= meta.index);
        let rest: Vec<Entry> = self.entries.split_off(drop);
        // The entries after the snapshot are kept only when they continue it.
        let continues = self
            .entries
            .last()
            .is_some_and(|e| e.index == meta.index && e.term == meta.term);
        self.entries.clear();
        self.positions.clear();
        self.rewrite_log(if continues { rest } else { Vec::new() })
    }

    /// Makes a snapshot of the applied state at `index` (which must be applied, so committed)
    /// and drops the entries it covers.
    pub fn compact(&mut self, index: u64, data: bytes::Bytes) -> Result<(), BrokerError> {
        if index <= self.snapshot.get_metadata().index || index > self.last() {
            return Ok(());
        }
        let term = self.term_of(index).unwrap_or(0);
        let mut snapshot = Snapshot {
            data,
            ..Default::default()
        };
        let meta = snapshot.mut_metadata();
        meta.index = index;
        meta.term = term;
        meta.set_conf_state(self.conf_state.clone());
        let payload = snapshot
            .write_to_bytes()
            .map_err(|e| BrokerError::Storage(format!("encoding a snapshot: {e}")))?;
        replace(&self.dir, SNAPSHOT, &framed(&payload))?;
        self.snapshot = snapshot;
        let drop = self.entries.partition_point(|e| e.index <= index);
        let rest = self.entries.split_off(drop);
        self.entries.clear();
        self.positions.clear();
        self.rewrite_log(rest)
    }

    /// Rewrites `raft.log` with just `entries` (a temporary file renamed over it).
    fn rewrite_log(&mut self, entries: Vec<Entry>) -> Result<(), BrokerError> {
        let mut buf = Vec::new();
        let mut positions = Vec::with_capacity(entries.len());
        for e in &entries {
            let payload = e.write_to_bytes().map_err(|err| {
                BrokerError::Storage(format!("encoding entry {}: {err}", e.index))
            })?;
            positions.push(buf.len() as u64);
            buf.extend_from_slice(&(payload.len() as u32).to_be_bytes());
            buf.extend_from_slice(&crc32c::crc32c(&payload).to_be_bytes());
            buf.extend_from_slice(&payload);
        }
        replace(&self.dir, LOG, &buf)?;
        let path = self.dir.join(LOG);
        self.log = OpenOptions::new()
            .read(true)
            .append(true)
            .open(&path)
            .map_err(|e| io("opening", &path, e))?;
        self.log_len = buf.len() as u64;
        self.entries = entries;
        self.positions = positions;
        Ok(())
    }

    fn term_of(&self, idx: u64) -> Option<u64> {
        let snap = self.snapshot.get_metadata();
        if idx == snap.index {
            return Some(snap.term);
        }
        if idx < self.first() {
            return None;
        }
        self.entries
            .get((idx - self.first()) as usize)
            .map(|e| e.term)
    }
}

/// Reads the frames of `raft.log`: the entries, where each starts, and how many bytes are
/// sound (everything after is a torn or damaged tail).
fn scan(bytes: &[u8]) -> (Vec<Entry>, Vec<u64>, u64) {
    let mut entries = Vec::new();
    let mut positions = Vec::new();
    let mut at = 0usize;
    while let Some(head) = bytes.get(at..at + 8) {
        let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
        let crc = u32::from_be_bytes([head[4], head[5], head[6], head[7]]);
        if len > MAX_ENTRY_BYTES {
            break;
        }
        let Some(payload) = bytes.get(at + 8..at + 8 + len as usize) else {
            break;
        };
        if crc32c::crc32c(payload) != crc {
            break;
        }
        let Ok(entry) = Entry::parse_from_bytes(payload) else {
            break;
        };
        // Indexes must follow each other.
        if entries
            .last()
            .is_some_and(|prev: &Entry| prev.index + 1 != entry.index)
        {
            break;
        }
        positions.push(at as u64);
        entries.push(entry);
        at += 8 + len as usize;
    }
    (entries, positions, at as u64)
}

impl raft::Storage for DiskStore {
    fn initial_state(&self) -> raft::Result<RaftState> {
        Ok(RaftState {
            hard_state: self.hard_state.clone(),
            conf_state: self.conf_state.clone(),
        })
    }

    fn entries(
        &self,
        low: u64,
        high: u64,
        max_size: impl Into<Option<u64>>,
        _context: GetEntriesContext,
    ) -> raft::Result<Vec<Entry>> {
        if low < self.first() {
            return Err(raft::Error::Store(StorageError::Compacted));
        }
        if high > self.last() + 1 || low > high {
            return Err(raft::Error::Store(StorageError::Unavailable));
        }
        let lo = (low - self.first()) as usize;
        let hi = (high - self.first()) as usize;
        let mut out = self
            .entries
            .get(lo..hi)
            .map(<[Entry]>::to_vec)
            .unwrap_or_default();
        raft::util::limit_size(&mut out, max_size.into());
        Ok(out)
    }

    fn term(&self, idx: u64) -> raft::Result<u64> {
        if idx < self.first() && idx != self.snapshot.get_metadata().index {
            return Err(raft::Error::Store(StorageError::Compacted));
        }
        self.term_of(idx)
            .ok_or(raft::Error::Store(StorageError::Unavailable))
    }

    fn first_index(&self) -> raft::Result<u64> {
        Ok(self.first())
    }

    fn last_index(&self) -> raft::Result<u64> {
        Ok(self.last())
    }

    fn snapshot(&self, request_index: u64, _to: u64) -> raft::Result<Snapshot> {
        if self.snapshot.get_metadata().index < request_index {
            return Err(raft::Error::Store(
                StorageError::SnapshotTemporarilyUnavailable,
            ));
        }
        Ok(self.snapshot.clone())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use raft::Storage;

    fn entry(index: u64, term: u64, data: &str) -> Entry {
        Entry {
            index,
            term,
            data: bytes::Bytes::copy_from_slice(data.as_bytes()),
            ..Default::default()
        }
    }

    fn datas(s: &DiskStore, low: u64, high: u64) -> Vec<String> {
        s.entries(low, high, None, GetEntriesContext::empty(false))
            .unwrap()
            .iter()
            .map(|e| String::from_utf8(e.data.to_vec()).unwrap())
            .collect()
    }

    #[test]
    fn entries_and_hard_state_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = DiskStore::open(dir.path(), &[1, 2, 3]).unwrap();
        assert_eq!((s.first_index().unwrap(), s.last_index().unwrap()), (1, 0));
        s.append(&[entry(1, 1, "a"), entry(2, 1, "b"), entry(3, 1, "c")])
            .unwrap();
        let hs = HardState {
            term: 1,
            vote: 2,
            commit: 2,
            ..Default::default()
        };
        s.set_hard_state(&hs).unwrap();
        drop(s);
        let s = DiskStore::open(dir.path(), &[3, 2, 1]).unwrap();
        assert_eq!(s.last_index().unwrap(), 3);
        assert_eq!(datas(&s, 1, 4), ["a", "b", "c"]);
        assert_eq!(s.initial_state().unwrap().hard_state, hs);
        assert_eq!(s.initial_state().unwrap().conf_state.voters, [1, 2, 3]);
        assert_eq!(s.term(3).unwrap(), 1);
        // Other voters: refused, naming the key.
        let e = DiskStore::open(dir.path(), &[1, 2])
            .unwrap_err()
            .to_string();
        assert!(e.contains("controller.quorum.voters"), "{e}");
    }

    #[test]
    fn a_new_leaders_entries_replace_an_unacknowledged_tail() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = DiskStore::open(dir.path(), &[1]).unwrap();
        s.append(&[entry(1, 1, "a"), entry(2, 1, "b"), entry(3, 1, "c")])
            .unwrap();
        s.append(&[entry(2, 2, "B"), entry(3, 2, "C"), entry(4, 2, "D")])
            .unwrap();
        assert_eq!(datas(&s, 1, 5), ["a", "B", "C", "D"]);
        drop(s);
        let s = DiskStore::open(dir.path(), &[1]).unwrap();
        assert_eq!(datas(&s, 1, 5), ["a", "B", "C", "D"]);
        assert_eq!(s.term(2).unwrap(), 2);
        // A gap is refused.
        let mut s = s;
        assert!(s.append(&[entry(9, 2, "x")]).is_err());
    }

    #[test]
    fn a_torn_tail_is_cut_off_and_the_rest_kept() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = DiskStore::open(dir.path(), &[1]).unwrap();
        s.append(&[entry(1, 1, "a"), entry(2, 1, "b")]).unwrap();
        drop(s);
        let path = dir.path().join(DIR).join(LOG);
        let full = std::fs::read(&path).unwrap();
        // Half of a third frame, then a flipped byte in the second.
        let mut torn = full.clone();
        torn.extend_from_slice(&full[..full.len() / 3]);
        std::fs::write(&path, &torn).unwrap();
        let s = DiskStore::open(dir.path(), &[1]).unwrap();
        assert_eq!(datas(&s, 1, 3), ["a", "b"]);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), full.len() as u64);
        drop(s);
        let mut bad = full.clone();
        let last = bad.len() - 1;
        bad[last] ^= 0xff;
        std::fs::write(&path, &bad).unwrap();
        let mut s = DiskStore::open(dir.path(), &[1]).unwrap();
        assert_eq!(datas(&s, 1, 2), ["a"]);
        assert_eq!(s.last_index().unwrap(), 1);
        // Appends continue after the cut.
        s.append(&[entry(2, 1, "b2")]).unwrap();
        drop(s);
        let s = DiskStore::open(dir.path(), &[1]).unwrap();
        assert_eq!(datas(&s, 1, 3), ["a", "b2"]);
    }

    #[test]
    fn compaction_keeps_the_snapshot_and_the_entries_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = DiskStore::open(dir.path(), &[1, 2, 3]).unwrap();
        s.append(
            &(1..=10)
                .map(|i| entry(i, 1 + i / 5, &i.to_string()))
                .collect::<Vec<_>>(),
        )
        .unwrap();
        s.compact(6, bytes::Bytes::from_static(b"image@6")).unwrap();
        assert_eq!(s.first_index().unwrap(), 7);
        assert_eq!(s.term(6).unwrap(), 2);
        assert!(matches!(
            s.entries(3, 8, None, GetEntriesContext::empty(false)),
            Err(raft::Error::Store(StorageError::Compacted))
        ));
        assert_eq!(datas(&s, 7, 11), ["7", "8", "9", "10"]);
        drop(s);
        let s = DiskStore::open(dir.path(), &[1, 2, 3]).unwrap();
        assert_eq!(s.first_index().unwrap(), 7);
        assert_eq!(datas(&s, 7, 11), ["7", "8", "9", "10"]);
        let snap = s.snapshot(0, 2).unwrap();
        assert_eq!(&snap.data[..], b"image@6");
        assert_eq!(snap.get_metadata().index, 6);
        assert_eq!(snap.get_metadata().get_conf_state().voters, [1, 2, 3]);
    }

    #[test]
    fn a_received_snapshot_replaces_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = DiskStore::open(dir.path(), &[1, 2, 3]).unwrap();
        s.append(&[entry(1, 1, "a"), entry(2, 1, "b")]).unwrap();
        let mut snap = Snapshot {
            data: bytes::Bytes::from_static(b"image@20"),
            ..Default::default()
        };
        snap.mut_metadata().index = 20;
        snap.mut_metadata().term = 3;
        snap.mut_metadata().set_conf_state(ConfState {
            voters: vec![1, 2, 3],
            ..Default::default()
        });
        s.apply_snapshot(&snap).unwrap();
        assert_eq!(
            (s.first_index().unwrap(), s.last_index().unwrap()),
            (21, 20)
        );
        s.append(&[entry(21, 3, "x")]).unwrap();
        drop(s);
        let s = DiskStore::open(dir.path(), &[1, 2, 3]).unwrap();
        assert_eq!(datas(&s, 21, 22), ["x"]);
        assert_eq!(s.term(20).unwrap(), 3);
        // The snapshot holds committed state: the commit index is at least its index.
        assert_eq!(s.initial_state().unwrap().hard_state.commit, 20);
        assert_eq!(s.initial_state().unwrap().hard_state.term, 3);
    }
}
