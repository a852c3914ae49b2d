//! UpdateFeatures, as Kafka's `FeatureControlManager` decides it ([`crate::features::decide`]):
//! the broker that forwarded it has checked ALTER on the cluster (`handler/features.rs`); the
//! levels are checked against this controller's support and every registered broker's, and
//! unless the request only validates, each becomes a `FeatureLevelRecord`.

use std::collections::BTreeMap;

use kafka_protocol::messages::{UpdateFeaturesRequest, UpdateFeaturesResponse};

use super::{Controller, Outcome};
use crate::cluster::image::MetadataImage;
use crate::features;

impl Controller {
    /// UpdateFeatures (v0-1).
    pub fn update_features(
        &mut self,
        image: &MetadataImage,
        req: &UpdateFeaturesRequest,
        version: i16,
    ) -> Outcome<UpdateFeaturesResponse> {
        let current: BTreeMap<String, i16> =
            image.features().map(|(n, l)| (n.to_owned(), l)).collect();
        let brokers: Vec<(i32, features::Ranges)> = image
            .brokers()
            .map(|b| {
                let ranges = b
                    .features
                    .iter()
                    .map(|(name, r)| (name.clone(), (r.min, r.max)))
                    .collect();
                (b.id, ranges)
            })
            .collect();
        let node = self.config.broker.server.node_id;
        let decided = features::decide(
            &current,
            &features::updates_of(req, version),
            node,
            &brokers,
        );
        match decided {
            Ok(levels) => {
                let records = if req.validate_only {
                    Vec::new()
                } else {
                    features::records_of(&levels)
                };
                Outcome::new(records, features::response(req, version, Ok(())))
            }
            Err(e) => Outcome::answer(features::response(req, version, Err(e))),
        }
    }

    /// The FeatureLevelRecords of the bootstrap levels the image does not have yet (a new
    /// cluster; written once by the first active controller).
    pub fn bootstrap_features(
        image: &MetadataImage,
    ) -> Vec<kafka_protocol::metadata::MetadataRecord> {
        let finalized: BTreeMap<String, i16> =
            image.features().map(|(n, l)| (n.to_owned(), l)).collect();
        features::bootstrap_records(&finalized)
    }
}
