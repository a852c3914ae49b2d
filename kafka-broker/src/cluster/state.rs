//! What the metadata log is applied to on every node: the cluster id and the metadata image.

use super::image::MetadataImage;
use super::quorum::StateMachine;
use super::quorum::entry::{Payload, SnapshotData};

/// The state of the metadata log at an offset.
#[derive(Debug, Clone, Default)]
pub struct MetadataState {
    /// Set by the first entry a new quorum commits.
    pub cluster_id: Option<String>,
    pub image: MetadataImage,
}

impl StateMachine for MetadataState {
    fn apply(&mut self, offset: u64, payload: Payload) {
        match payload {
            Payload::ClusterId(id) => {
                if self.cluster_id.is_none() {
                    tracing::info!(cluster_id = %id, "the controller quorum named the cluster");
                    self.cluster_id = Some(id);
                }
            }
            Payload::Records(records) => {
                if let Err(e) = self.image.apply_batch(offset, &records) {
                    // Every node skips the same entry alike: the controller wrote records that
                    // do not fit the image, a bug worth a loud line.
                    tracing::error!(offset, error = %e, "a committed metadata entry does not apply to the image; skipped");
                }
            }
        }
    }

    fn snapshot(&self, offset: u64) -> SnapshotData {
        SnapshotData {
            cluster_id: self.cluster_id.clone(),
            offset,
            records: self.image.to_records(),
        }
    }

    fn restore(data: SnapshotData) -> Self {
        let mut image = MetadataImage::new();
        if let Err(e) = image.apply_batch(data.offset, &data.records) {
            tracing::error!(offset = data.offset, error = %e, "a metadata snapshot does not apply; starting from an empty image");
            image = MetadataImage::new();
        }
        Self {
            cluster_id: data.cluster_id,
            image,
        }
    }
}
