//! AlterUserScramCredentials, as Kafka's `ScramControlManager` decides it: the broker that
//! forwarded it has checked ALTER on the cluster (`handler/scram.rs`); the request is checked
//! against the image's credentials with the single node's rules
//! ([`crate::credentials::plan_alteration`]), each deletion becomes a
//! `RemoveUserScramCredentialRecord` and each upsertion a `UserScramCredentialRecord` carrying
//! the salt, stored key, server key and iterations (never the salted password).

use kafka_protocol::KStr;
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
};
use kafka_protocol::metadata::{MetadataRecord, RemoveUserScramCredentialRecord};

use super::{Controller, Outcome};
use crate::cluster::image::{MetadataImage, scram_record};

impl Controller {
    /// AlterUserScramCredentials (v0).
    pub fn alter_scram_credentials(
        &mut self,
        image: &MetadataImage,
        req: &AlterUserScramCredentialsRequest,
    ) -> Outcome<AlterUserScramCredentialsResponse> {
        let existing = image.scram_credentials();
        let plan = crate::credentials::plan_alteration(
            |mechanism, user| existing.contains_key(&(mechanism, user.to_owned())),
            req,
        );
        let mut records = Vec::new();
        for (user, mechanism) in &plan.deletions {
            records.push(MetadataRecord::RemoveUserScramCredential(
                RemoveUserScramCredentialRecord {
                    name: KStr::from(user.clone()),
                    mechanism: mechanism.type_id(),
                    ..Default::default()
                },
            ));
        }
        for (_, ((mechanism, user), cred)) in &plan.upsertions {
            records.push(MetadataRecord::UserScramCredential(scram_record(
                *mechanism, user, cred,
            )));
        }
        Outcome::new(records, plan.response(Ok(())))
    }
}
