//! Feature flags (KIP-584): the features this build supports, the levels finalized for the
//! cluster, and how ApiVersions and UpdateFeatures show and change them.
//!
//! A feature is finalized only once its implementation is complete: `metadata.version` at
//! 3.9-IV0 (21, the metadata records this broker reads and writes are Kafka 3.9's), and
//! `group.version` at 1 (KIP-848 consumer groups), and `kraft.version` and
//! `transaction.version` supported at level 0 only until KIP-853 (dynamic quorum) and KIP-890
//! part 2 (transactions v2) are done here. Features a Kafka 4 broker has that this one does not implement at all
//! (`eligible.leader.replicas.version`, `share.version`, `streams.version`) are not listed:
//! a client reads them as level 0.
//!
//! In a cluster the finalized levels are FeatureLevelRecords in the metadata log (the active
//! controller writes the bootstrap levels once, [`bootstrap_records`]); a single node keeps
//! them as the same records in `features.records` in its data directory
//! ([`crate::record_file`]). [`Features`] holds a node's copy; [`decide`] is the controller's
//! rule for UpdateFeatures (Kafka's `FeatureControlManager`), used by both.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::RwLock;

use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::api_versions_response::{FinalizedFeatureKey, SupportedFeatureKey};
use kafka_protocol::messages::update_features_response::UpdatableFeatureResult;
use kafka_protocol::messages::{UpdateFeaturesRequest, UpdateFeaturesResponse};
use kafka_protocol::metadata::{FeatureLevelRecord, MetadataRecord};

use crate::error::BrokerError;
use crate::sync::{read, write};

/// `metadata.version`.
pub const METADATA_VERSION: &str = "metadata.version";

/// The feature ranges one node registered, by name (min, max).
pub type Ranges = BTreeMap<String, (i16, i16)>;

/// The file of a single node's finalized features.
pub const FILE: &str = "features.records";

/// One feature this build knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Known {
    pub name: &'static str,
    /// The levels this build supports, inclusive.
    pub min: i16,
    pub max: i16,
    /// The level a new cluster (or single node) finalizes; 0 finalizes nothing.
    pub bootstrap: i16,
}

/// Every feature this build supports, as ApiVersions lists them.
pub const KNOWN: &[Known] = &[
    // 3.3-IV3 (the first KRaft production level, Kafka 4's minimum) to 3.9-IV0.
    Known {
        name: METADATA_VERSION,
        min: 7,
        max: 21,
        bootstrap: 21,
    },
    // A static quorum (controller.quorum.voters); KIP-853's level 1 is not implemented.
    Known {
        name: "kraft.version",
        min: 0,
        max: 0,
        bootstrap: 0,
    },
    // KIP-890 part 2 (level 2) is not implemented yet.
    Known {
        name: "transaction.version",
        min: 0,
        max: 0,
        bootstrap: 0,
    },
    // KIP-848 consumer groups (level 1): ConsumerGroupHeartbeat and ConsumerGroupDescribe.
    Known {
        name: "group.version",
        min: 0,
        max: 1,
        bootstrap: 1,
    },
];

/// The range this build supports for `name`; `None` for a feature it does not know.
pub fn supported(name: &str) -> Option<(i16, i16)> {
    KNOWN
        .iter()
        .find(|k| k.name == name)
        .map(|k| (k.min, k.max))
}

/// The levels a new cluster finalizes, by name (level 0 left out).
pub fn bootstrap_levels() -> BTreeMap<String, i16> {
    KNOWN
        .iter()
        .filter(|k| k.bootstrap > 0)
        .map(|k| (k.name.to_owned(), k.bootstrap))
        .collect()
}

/// The FeatureLevelRecords of [`bootstrap_levels`] when `finalized` is empty (what the active
/// controller writes when the metadata log has none yet: a new cluster). A log with any
/// level is an existing cluster: a feature this build bootstraps (`group.version`) stays
/// off there until `kafka-features upgrade` finalizes it, as in Kafka.
pub fn bootstrap_records(finalized: &BTreeMap<String, i16>) -> Vec<MetadataRecord> {
    if !finalized.is_empty() {
        return Vec::new();
    }
    bootstrap_levels()
        .into_iter()
        .filter(|(name, _)| !finalized.contains_key(name))
        .map(|(name, level)| level_record(&name, level))
        .collect()
}

fn level_record(name: &str, level: i16) -> MetadataRecord {
    MetadataRecord::FeatureLevel(FeatureLevelRecord {
        name: KStr::from(name.to_owned()),
        feature_level: level,
        ..Default::default()
    })
}

/// The finalized levels (level 0 left out) and their epoch: the metadata offset they were
/// read at in a cluster, the count of changes on a single node; -1 when nothing is known yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finalized {
    pub epoch: i64,
    pub levels: BTreeMap<String, i16>,
}

impl Default for Finalized {
    fn default() -> Self {
        Self {
            epoch: -1,
            levels: BTreeMap::new(),
        }
    }
}

/// ApiVersions' feature fields at `version` (Kafka's `ApiVersionsResponse` builder): every
/// supported feature, except those whose minimum is 0 before v4 (older clients cannot read a
/// minimum of 0, KAFKA-17492), and every finalized level above 0 (as min = max = level).
pub fn api_versions_fields(
    version: i16,
    finalized: &Finalized,
) -> (Vec<SupportedFeatureKey>, i64, Vec<FinalizedFeatureKey>) {
    let supported = KNOWN
        .iter()
        .filter(|k| version >= 4 || k.min != 0)
        .map(|k| SupportedFeatureKey {
            name: KStr::from_static(k.name),
            min_version: k.min,
            max_version: k.max,
            ..Default::default()
        })
        .collect();
    let levels = finalized
        .levels
        .iter()
        .filter(|(_, level)| **level != 0)
        .map(|(name, level)| FinalizedFeatureKey {
            name: KStr::from(name.clone()),
            max_version_level: *level,
            min_version_level: *level,
            ..Default::default()
        })
        .collect();
    (supported, finalized.epoch, levels)
}

/// How an UpdateFeatures entry may move a level (`UpgradeType`; v0's `AllowDowngrade` is a
/// safe downgrade).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpgradeType {
    Upgrade,
    SafeDowngrade,
    UnsafeDowngrade,
    Unknown,
}

impl UpgradeType {
    fn from_code(code: i8) -> Self {
        match code {
            1 => Self::Upgrade,
            2 => Self::SafeDowngrade,
            3 => Self::UnsafeDowngrade,
            _ => Self::Unknown,
        }
    }
}

/// One entry of an UpdateFeatures request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Update {
    pub feature: String,
    pub level: i16,
    pub upgrade: UpgradeType,
}

/// The entries of `req` at `version`.
pub fn updates_of(req: &UpdateFeaturesRequest, version: i16) -> Vec<Update> {
    req.feature_updates
        .iter()
        .map(|u| Update {
            feature: u.feature.to_string(),
            level: u.max_version_level,
            upgrade: if version == 0 {
                if u.allow_downgrade {
                    UpgradeType::SafeDowngrade
                } else {
                    UpgradeType::Upgrade
                }
            } else {
                UpgradeType::from_code(u.upgrade_type)
            },
        })
        .collect()
}

/// Why a level is not supported by one node (Kafka's `QuorumFeatures.reasonNotSupported`).
fn not_supported(level: i16, what: &str, range: Option<(i16, i16)>) -> Option<String> {
    let (min, max) = range.unwrap_or((0, 0));
    if (min..=max).contains(&level) {
        return None;
    }
    Some(if max == 0 {
        format!("{what} does not support this feature.")
    } else if min == max {
        format!("{what} only supports versions {min}")
    } else {
        format!("{what} only supports versions {min}-{max}")
    })
}

/// UpdateFeatures as Kafka's controller decides it: every entry checked against the finalized
/// `current` levels, this node's support and each registered broker's (`brokers`: id and the
/// ranges it registered), and the direction its upgrade type allows; the first entry refused
/// refuses the whole request (INVALID_UPDATE_VERSION with Kafka's message). Accepted: the new
/// levels, by name (0 removes a feature).
pub fn decide(
    current: &BTreeMap<String, i16>,
    updates: &[Update],
    node: i32,
    brokers: &[(i32, Ranges)],
) -> Result<BTreeMap<String, i16>, (ErrorCode, String)> {
    let mut out = BTreeMap::new();
    for u in updates {
        let invalid = |message: &str| {
            (
                ErrorCode::INVALID_UPDATE_VERSION,
                format!(
                    "Invalid update version {} for feature {}. {message}",
                    u.level, u.feature
                ),
            )
        };
        if u.upgrade == UpgradeType::Unknown {
            return Err(invalid(
                "The controller does not support the given upgrade type.",
            ));
        }
        let now = current.get(&u.feature).copied().unwrap_or(0);
        if u.level < 0 {
            return Err(invalid("A feature version cannot be less than 0."));
        }
        let local = format!("Local controller {node}");
        if let Some(reason) = not_supported(u.level, &local, supported(&u.feature)) {
            return Err(invalid(&reason));
        }
        for (id, ranges) in brokers {
            let what = format!("Broker {id}");
            if let Some(reason) = not_supported(u.level, &what, ranges.get(&u.feature).copied()) {
                return Err(invalid(&reason));
            }
        }
        if u.level < now && u.upgrade == UpgradeType::Upgrade {
            return Err(invalid(
                "Can't downgrade the version of this feature without setting the upgrade \
                 type to either safe or unsafe downgrade.",
            ));
        }
        if u.level > now && u.upgrade != UpgradeType::Upgrade {
            return Err(invalid("Can't downgrade to a newer version."));
        }
        if u.feature == METADATA_VERSION && u.level < now {
            // Kafka refuses every metadata.version downgrade that changes the metadata
            // records; between the levels this build supports, every step does.
            let message = if u.upgrade == UpgradeType::UnsafeDowngrade {
                "Unsafe metadata downgrade is not supported in this version."
            } else {
                "Refusing to perform the requested downgrade because it might delete \
                 metadata information."
            };
            return Err((
                ErrorCode::INVALID_UPDATE_VERSION,
                format!("Invalid metadata.version {}. {message}", u.level),
            ));
        }
        out.insert(u.feature.clone(), u.level);
    }
    Ok(out)
}

/// The FeatureLevelRecords of accepted levels.
pub fn records_of(levels: &BTreeMap<String, i16>) -> Vec<MetadataRecord> {
    levels
        .iter()
        .map(|(name, level)| level_record(name, *level))
        .collect()
}

/// The UpdateFeatures response Kafka's controller gives at `version`: a refusal is the
/// top-level error with "The update failed for all features since the following feature had
/// an error: ..."; a success lists every entry as succeeded before v2 (v2 has no results).
pub fn response(
    req: &UpdateFeaturesRequest,
    version: i16,
    result: Result<(), (ErrorCode, String)>,
) -> UpdateFeaturesResponse {
    match result {
        Err((code, message)) => UpdateFeaturesResponse {
            error_code: code.0,
            error_message: Some(KStr::from(format!(
                "The update failed for all features since the following feature had an \
                 error: {message}"
            ))),
            ..Default::default()
        },
        Ok(()) => UpdateFeaturesResponse {
            error_code: ErrorCode::NONE.0,
            error_message: None,
            results: if version <= 1 {
                req.feature_updates
                    .iter()
                    .map(|u| UpdatableFeatureResult {
                        feature: u.feature.clone(),
                        error_code: ErrorCode::NONE.0,
                        error_message: None,
                        ..Default::default()
                    })
                    .collect()
            } else {
                Vec::new()
            },
            ..Default::default()
        },
    }
}

/// A refusal of the whole request with `code` (authorization, not the controller).
pub fn refused(code: ErrorCode, message: &str) -> UpdateFeaturesResponse {
    UpdateFeaturesResponse {
        error_code: code.0,
        error_message: Some(KStr::from(message.to_owned())),
        ..Default::default()
    }
}

/// A node's finalized features.
#[derive(Debug)]
pub struct Features {
    /// A single node's file; `None` in a cluster (the metadata log keeps them) or in memory.
    path: Option<PathBuf>,
    state: RwLock<Finalized>,
}

impl Features {
    /// The bootstrap levels, kept in memory only (tests and callers in process).
    pub fn in_memory() -> Self {
        Self {
            path: None,
            state: RwLock::new(Finalized {
                epoch: 0,
                levels: bootstrap_levels(),
            }),
        }
    }

    /// A single node's features in data directory `dir`: the levels of its file (every
    /// change is kept as a record; the epoch counts them), the bootstrap levels written there
    /// first if it has none.
    pub fn open(dir: &Path) -> Result<Self, BrokerError> {
        let path = dir.join(FILE);
        let mut records = crate::record_file::read(&path)?;
        if records.is_empty() {
            records = bootstrap_records(&BTreeMap::new());
            crate::record_file::write(&path, &records)?;
        }
        let mut levels = BTreeMap::new();
        for r in &records {
            if let MetadataRecord::FeatureLevel(f) = r {
                apply(&mut levels, &f.name, f.feature_level);
            }
        }
        let epoch = i64::try_from(records.len()).unwrap_or(i64::MAX) - 1;
        Ok(Self {
            path: Some(path),
            state: RwLock::new(Finalized { epoch, levels }),
        })
    }

    /// A node of a cluster: nothing finalized until the metadata image brings the levels.
    pub fn clustered() -> Self {
        Self {
            path: None,
            state: RwLock::new(Finalized::default()),
        }
    }

    /// What is finalized now.
    pub fn finalized(&self) -> Finalized {
        read(&self.state).clone()
    }

    /// Takes the levels of the metadata image at `offset` (a node of a cluster); an older
    /// image changes nothing.
    pub fn follow_image<'a>(&self, offset: u64, levels: impl IntoIterator<Item = (&'a str, i16)>) {
        let epoch = i64::try_from(offset).unwrap_or(i64::MAX);
        let mut state = write(&self.state);
        if state.epoch > epoch {
            return;
        }
        state.epoch = epoch;
        state.levels = levels
            .into_iter()
            .filter(|(_, l)| *l != 0)
            .map(|(n, l)| (n.to_owned(), l))
            .collect();
    }

    /// UpdateFeatures on a single node (node id `node`, no other broker): decided as the
    /// controller decides, and unless it only validates, written to the file before the
    /// levels change.
    pub fn update(
        &self,
        req: &UpdateFeaturesRequest,
        version: i16,
        node: i32,
    ) -> UpdateFeaturesResponse {
        let mut state = write(&self.state);
        let decided = decide(&state.levels, &updates_of(req, version), node, &[]);
        let levels = match decided {
            Ok(levels) => levels,
            Err(e) => return response(req, version, Err(e)),
        };
        if req.validate_only || levels.is_empty() {
            return response(req, version, Ok(()));
        }
        if let Some(path) = &self.path {
            let mut records = match crate::record_file::read(path) {
                Ok(r) => r,
                Err(e) => return storage_failed(req, version, &e),
            };
            records.extend(records_of(&levels));
            if let Err(e) = crate::record_file::write(path, &records) {
                return storage_failed(req, version, &e);
            }
        }
        for (name, level) in &levels {
            tracing::info!(feature = %name, level, "finalized feature level changed");
            apply(&mut state.levels, name, *level);
        }
        // One more record per change, as the file counts them.
        let added = i64::try_from(levels.len()).unwrap_or(i64::MAX);
        state.epoch = state.epoch.saturating_add(added);
        response(req, version, Ok(()))
    }
}

fn storage_failed(
    req: &UpdateFeaturesRequest,
    version: i16,
    e: &BrokerError,
) -> UpdateFeaturesResponse {
    tracing::error!(error = %e, "storing finalized features failed");
    response(
        req,
        version,
        Err((ErrorCode::UNKNOWN_SERVER_ERROR, e.to_string())),
    )
}

/// A level taken into `levels`: 0 removes the feature.
fn apply(levels: &mut BTreeMap<String, i16>, name: &str, level: i16) {
    if level == 0 {
        levels.remove(name);
    } else {
        levels.insert(name.to_owned(), level);
    }
}

#[cfg(test)]
mod tests;
