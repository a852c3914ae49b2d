//! `meta.properties` in the data directory: which cluster and node the data belongs to, as
//! Kafka keeps it (the KRaft "v1" form):
//!
//! ```text
//! # comment lines are allowed
//! version=1
//! cluster.id=<22-character cluster id>
//! node.id=<the node's node.id>
//! directory.id=<22-character id of this directory>
//! ```
//!
//! A node refuses to start on a directory of another node or another cluster. The file is
//! replaced atomically (a temp file, fsynced, renamed over it, the directory fsynced).
//! Files written before this module (`version=1`, `cluster.id`, `node.id`) still open and get
//! a `directory.id` added; Kafka's v0 form (`version=0`, `broker.id`) is read too.
//!
//! A cluster node that does not know its cluster id yet (`process.roles` set, no
//! `cluster.id` configured or stored) writes the file without `cluster.id`; the id learned
//! from the quorum is stored later with [`record_cluster_id`].
//!
//! It takes the configuration's values as plain arguments (data directory, node id, cluster
//! id) and imports no configuration; the configuration checks a configured `cluster.id` when
//! it is read, and this module checks every id again before it is written.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::BrokerError;
use crate::topics;

/// The file's name in the data directory.
pub const FILE_NAME: &str = "meta.properties";
/// The temp file a new version is written to before it is renamed over [`FILE_NAME`].
const TEMP_NAME: &str = "meta.properties.tmp";

/// The contents of `meta.properties`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaProperties {
    /// `version`: 1 (KRaft), or 0 (Kafka's ZooKeeper-era form, `broker.id` for the node id).
    pub version: u32,
    /// `cluster.id`; `None` in a cluster node's directory until the quorum's id is recorded.
    pub cluster_id: Option<String>,
    /// `node.id` (`broker.id` in version 0).
    pub node_id: Option<i32>,
    /// `directory.id`: a random id of this directory (Kafka's base64 text of a v4 UUID).
    pub directory_id: Option<String>,
}

/// The path of `meta.properties` in `dir`.
pub fn path(dir: &Path) -> PathBuf {
    dir.join(FILE_NAME)
}

/// A new random directory (or cluster) id: Kafka's text form of a v4 UUID, 22 characters of
/// URL-safe base64, as `kafka-storage random-uuid` prints.
pub fn random_id() -> String {
    topics::uuid_base64(&topics::random_uuid())
}

/// Whether `id` can be stored as the value of `key` (`cluster.id`, `directory.id`): not empty,
/// no whitespace, control characters or backslashes, which this file would have to escape.
/// Errors name `key`.
fn check_id(key: &str, id: &str) -> Result<(), BrokerError> {
    if id.is_empty() {
        return Err(BrokerError::Config(format!("{key} is empty")));
    }
    if let Some(c) = id
        .chars()
        .find(|c| c.is_whitespace() || c.is_control() || *c == '\\')
    {
        return Err(BrokerError::Config(format!(
            "{key}={id:?}: an id cannot contain {c:?}"
        )));
    }
    Ok(())
}

/// A properties value with Java's backslash escapes undone (`\:`, `\=`, `\\`, `\t`, ...).
/// `None` for a value ending in a single backslash (a continuation line, not supported).
fn unescape(v: &str) -> Option<String> {
    let mut out = String::with_capacity(v.len());
    let mut chars = v.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next()? {
            't' => out.push('\t'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            'f' => out.push('\x0c'),
            other => out.push(other),
        }
    }
    Some(out)
}

impl MetaProperties {
    /// A version 1 file for a node.
    pub fn new(node_id: i32, cluster_id: Option<String>) -> Self {
        Self {
            version: 1,
            cluster_id,
            node_id: Some(node_id),
            directory_id: Some(random_id()),
        }
    }

    /// Reads `dir`'s `meta.properties`: `None` when there is none; an error naming the file
    /// (and the line) when it cannot be read or is malformed.
    pub fn read(dir: &Path) -> Result<Option<Self>, BrokerError> {
        let path = path(dir);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(BrokerError::Storage(format!(
                    "reading {}: {e}",
                    path.display()
                )));
            }
        };
        Self::parse(&text, &path).map(Some)
    }

    /// Parses the text of a `meta.properties` file; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Self, BrokerError> {
        let bad = |line: usize, why: String| {
            BrokerError::Storage(format!("{} line {line}: {why}", path.display()))
        };
        let mut version: Option<u32> = None;
        let mut cluster_id = None;
        let mut node_id: Option<i32> = None;
        let mut broker_id: Option<i32> = None;
        let mut directory_id = None;
        let mut seen: Vec<String> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let n = i + 1;
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
                continue;
            }
            let split = line
                .find(['=', ':'])
                .ok_or_else(|| bad(n, format!("expected key=value, got {line:?}")))?;
            let key = line[..split].trim();
            let value = unescape(line[split + 1..].trim())
                .ok_or_else(|| bad(n, format!("{key}: a value continued on the next line")))?;
            if key.is_empty() {
                return Err(bad(n, format!("expected key=value, got {line:?}")));
            }
            if seen.iter().any(|k| k == key) {
                return Err(bad(n, format!("{key} appears twice")));
            }
            seen.push(key.to_owned());
            let number = |what: &str| {
                value
                    .parse::<i64>()
                    .map_err(|_| bad(n, format!("{key}={value:?}: {what} is not a number")))
            };
            match key {
                "version" => {
                    let v = number("the version")?;
                    version = Some(
                        u32::try_from(v)
                            .map_err(|_| bad(n, format!("version={v}: unsupported version")))?,
                    );
                }
                "node.id" | "broker.id" => {
                    let v = i32::try_from(number("the id")?)
                        .map_err(|_| bad(n, format!("{key}={value}: out of range")))?;
                    if key == "node.id" {
                        node_id = Some(v);
                    } else {
                        broker_id = Some(v);
                    }
                }
                "cluster.id" | "directory.id" => {
                    if value.is_empty() {
                        return Err(bad(n, format!("{key} is empty")));
                    }
                    if key == "cluster.id" {
                        cluster_id = Some(value);
                    } else {
                        directory_id = Some(value);
                    }
                }
                // Kafka may add keys; they are not ours to judge.
                _ => {}
            }
        }
        let whole = |why: String| BrokerError::Storage(format!("{}: {why}", path.display()));
        let version = version.ok_or_else(|| whole("no version".into()))?;
        let node_id = match (version, node_id, broker_id) {
            (0 | 1, Some(a), Some(b)) if a != b => {
                return Err(whole(format!("node.id={a} and broker.id={b} disagree")));
            }
            (1, None, _) => return Err(whole("version=1 but no node.id".into())),
            (0 | 1, a, b) => a.or(b),
            (v, _, _) => {
                return Err(whole(format!(
                    "unsupported version {v} (0 and 1 are known)"
                )));
            }
        };
        Ok(Self {
            version,
            cluster_id,
            node_id,
            directory_id,
        })
    }

    /// The file's text.
    pub fn to_text(&self) -> String {
        let mut out = String::from(
            "# This data directory's identity: the cluster and node its data belongs to.\n",
        );
        out.push_str(&format!("version={}\n", self.version));
        if let Some(id) = &self.cluster_id {
            out.push_str(&format!("cluster.id={id}\n"));
        }
        if let Some(id) = self.node_id {
            let key = if self.version == 0 {
                "broker.id"
            } else {
                "node.id"
            };
            out.push_str(&format!("{key}={id}\n"));
        }
        if let Some(id) = &self.directory_id {
            out.push_str(&format!("directory.id={id}\n"));
        }
        out
    }

    /// Writes `dir`'s `meta.properties` atomically: a temp file, fsynced, renamed over the
    /// old one, the directory fsynced. After a crash the file is the old one or the new one.
    pub fn write(&self, dir: &Path) -> Result<(), BrokerError> {
        for (key, id) in [
            ("cluster.id", &self.cluster_id),
            ("directory.id", &self.directory_id),
        ] {
            if let Some(id) = id {
                check_id(key, id)?;
            }
        }
        let target = path(dir);
        let tmp = dir.join(TEMP_NAME);
        let failed = |what: &str, p: &Path, e: std::io::Error| {
            BrokerError::Storage(format!("{what} {}: {e}", p.display()))
        };
        let written = (|| {
            let mut f = std::fs::File::create(&tmp).map_err(|e| failed("creating", &tmp, e))?;
            f.write_all(self.to_text().as_bytes())
                .map_err(|e| failed("writing", &tmp, e))?;
            f.sync_all().map_err(|e| failed("fsync of", &tmp, e))
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        std::fs::rename(&tmp, &target).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            failed("renaming to", &target, e)
        })?;
        #[cfg(unix)]
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| failed("fsync of the directory", dir, e))?;
        Ok(())
    }

    /// Refuses a directory of another node (`node.id`) or another cluster (`cluster.id`,
    /// when one is configured). `dir` names the file in the message.
    pub fn check(
        &self,
        dir: &Path,
        node_id: i32,
        cluster_id: Option<&str>,
    ) -> Result<(), BrokerError> {
        let file = path(dir);
        if let Some(stored) = self.node_id {
            if stored != node_id {
                return Err(BrokerError::Config(format!(
                    "node.id={node_id} is configured, but {} says node.id={stored}: the data \
                     directory belongs to node {stored} (configure node.id={stored}, or give node \
                     {node_id} a data directory of its own)",
                    file.display()
                )));
            }
        }
        if let (Some(stored), Some(configured)) = (&self.cluster_id, cluster_id) {
            if stored != configured {
                return Err(BrokerError::Config(format!(
                    "cluster.id={configured} is configured, but {} says cluster.id={stored}: the \
                     data directory belongs to another cluster",
                    file.display()
                )));
            }
        }
        Ok(())
    }
}

/// Reads (or creates) `meta.properties` in the data directory `dir` at start and checks it
/// against the configured `node.id` and `cluster.id`. A new directory gets a new file: the
/// configured cluster id, or on a single-node broker (not `clustered`: no `process.roles`) a
/// new random one; a cluster node without either leaves it unset until the quorum's id is
/// recorded ([`record_cluster_id`]). A stored file missing the directory id gets one.
pub fn open(
    dir: &Path,
    node_id: i32,
    cluster_id: Option<&str>,
    clustered: bool,
) -> Result<MetaProperties, BrokerError> {
    let new_cluster_id = || {
        cluster_id
            .map(str::to_owned)
            .or_else(|| (!clustered).then(random_id))
    };
    let Some(mut meta) = MetaProperties::read(dir)? else {
        let meta = MetaProperties::new(node_id, new_cluster_id());
        meta.write(dir)?;
        return Ok(meta);
    };
    meta.check(dir, node_id, cluster_id)?;
    let mut changed = false;
    if meta.node_id.is_none() {
        meta.node_id = Some(node_id);
        changed = true;
    }
    if meta.cluster_id.is_none() {
        meta.cluster_id = new_cluster_id();
        changed |= meta.cluster_id.is_some();
    }
    if meta.directory_id.is_none() {
        meta.directory_id = Some(random_id());
        changed = true;
    }
    if changed {
        meta.write(dir)?;
    }
    Ok(meta)
}

/// Stores the cluster id this node learned (from the quorum) in `dir`'s `meta.properties`,
/// creating the file if needed. Refuses when the file belongs to another node, or already
/// names another cluster.
pub fn record_cluster_id(dir: &Path, node_id: i32, id: &str) -> Result<(), BrokerError> {
    check_id("cluster.id", id)?;
    let Some(mut meta) = MetaProperties::read(dir)? else {
        return MetaProperties::new(node_id, Some(id.to_owned())).write(dir);
    };
    meta.check(dir, node_id, None)?;
    match &meta.cluster_id {
        Some(stored) if stored == id => Ok(()),
        Some(stored) => Err(BrokerError::Config(format!(
            "cluster.id: this node belongs to cluster {stored} ({}); the quorum is cluster {id}",
            path(dir).display()
        ))),
        None => {
            meta.cluster_id = Some(id.to_owned());
            meta.node_id = Some(node_id);
            if meta.directory_id.is_none() {
                meta.directory_id = Some(random_id());
            }
            meta.write(dir)
        }
    }
}

#[cfg(test)]
mod tests;
