//! AlterClientQuotas, as Kafka's `ClientQuotaControlManager` decides it: the broker that
//! forwarded it has checked ALTER_CONFIGS on the cluster (`handler/quotas.rs`); the entries
//! are checked against the image's quotas by the same store the single node uses
//! ([`crate::quota::QuotaStore::alter`]), and unless the request only validates, each value
//! that changes becomes a `ClientQuotaRecord`.

use kafka_protocol::messages::{AlterClientQuotasRequest, AlterClientQuotasResponse};
use kafka_protocol::metadata::MetadataRecord;

use super::{Controller, Outcome};
use crate::cluster::image::MetadataImage;

impl Controller {
    /// AlterClientQuotas (v0-1).
    pub fn alter_client_quotas(
        &mut self,
        image: &MetadataImage,
        req: &AlterClientQuotasRequest,
    ) -> Outcome<AlterClientQuotasResponse> {
        let entries = crate::quotas::alter_entries(req);
        let outcome = image.quotas().alter(&entries);
        let records = if req.validate_only {
            Vec::new()
        } else {
            outcome
                .changes
                .iter()
                .map(|c| MetadataRecord::ClientQuota(c.to_record()))
                .collect()
        };
        let results = crate::quotas::entry_results(outcome.results);
        Outcome::new(records, crate::quotas::alter_response(req, results))
    }
}
