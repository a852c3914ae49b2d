//! CreateAcls and DeleteAcls, as Kafka's `AclControlManager` decides them: the broker that
//! forwarded the request has checked that an authorizer is configured and that the caller may
//! ALTER the cluster (`handler/acls.rs`); here each creation is validated as the single node
//! validates it ([`validate_new_binding`], INVALID_REQUEST on that creation alone), a binding
//! already held (or asked twice) succeeds without a record, and each new one gets an
//! `AccessControlEntryRecord` with a fresh Uuid. Each DeleteAcls filter is validated
//! ([`validate_filter`]) and every ACL it matches gets one `RemoveAccessControlEntryRecord`
//! (an ACL matched by two filters is listed under both and removed once).

use std::collections::BTreeSet;

use kafka_auth::acl::{validate_filter, validate_new_binding};
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::create_acls_response::AclCreationResult;
use kafka_protocol::messages::delete_acls_response::DeleteAclsFilterResult;
use kafka_protocol::messages::{
    CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse,
};
use kafka_protocol::metadata::{MetadataRecord, RemoveAccessControlEntryRecord};
use kafka_protocol::{KStr, Uuid};

use super::{Controller, Outcome};
use crate::cluster::image::MetadataImage;

impl Controller {
    /// CreateAcls (v0-3).
    pub fn create_acls(
        &mut self,
        image: &MetadataImage,
        req: &CreateAclsRequest,
    ) -> Outcome<CreateAclsResponse> {
        let mut records = Vec::new();
        let mut asked = BTreeSet::new();
        let mut taken: BTreeSet<Uuid> = BTreeSet::new();
        let mut results = Vec::with_capacity(req.creations.len());
        for c in &req.creations {
            let binding = crate::acls::creation_binding(c);
            if let Err(e) = validate_new_binding(&binding) {
                let (code, message) = crate::acls::refusal(&e);
                results.push(AclCreationResult {
                    error_code: code,
                    error_message: Some(KStr::from(message)),
                    ..Default::default()
                });
                continue;
            }
            if image.acl_id(&binding).is_none() && !asked.contains(&binding) {
                let fresh = (0..1000).map(|_| (self.topic_ids)()).find(|id| {
                    !id.is_zero() && !image.acls().contains_key(id) && !taken.contains(id)
                });
                let Some(id) = fresh else {
                    results.push(AclCreationResult {
                        error_code: ErrorCode::UNKNOWN_SERVER_ERROR.code(),
                        error_message: Some(KStr::from_static("no free ACL id")),
                        ..Default::default()
                    });
                    continue;
                };
                taken.insert(id);
                tracing::info!(id = %id, acl = ?binding, "ACL created");
                records.push(MetadataRecord::AccessControlEntry(crate::acls::to_record(
                    id, &binding,
                )));
                asked.insert(binding);
            }
            results.push(AclCreationResult::default());
        }
        Outcome::new(
            records,
            CreateAclsResponse {
                results,
                ..Default::default()
            },
        )
    }

    /// DeleteAcls (v0-3).
    pub fn delete_acls(
        &mut self,
        image: &MetadataImage,
        req: &DeleteAclsRequest,
    ) -> Outcome<DeleteAclsResponse> {
        let mut records = Vec::new();
        let mut removed: BTreeSet<Uuid> = BTreeSet::new();
        let mut filter_results = Vec::with_capacity(req.filters.len());
        for f in &req.filters {
            let filter = crate::acls::delete_filter(f);
            if let Err(e) = validate_filter(&filter) {
                let (code, message) = crate::acls::refusal(&e);
                filter_results.push(DeleteAclsFilterResult {
                    error_code: code,
                    error_message: Some(KStr::from(message)),
                    ..Default::default()
                });
                continue;
            }
            let mut matching_acls = Vec::new();
            for (id, binding) in image.acls() {
                if !filter.matches(binding) {
                    continue;
                }
                matching_acls.push(crate::acls::matching_acl(binding));
                if removed.insert(*id) {
                    tracing::info!(id = %id, acl = ?binding, "ACL deleted");
                    records.push(MetadataRecord::RemoveAccessControlEntry(
                        RemoveAccessControlEntryRecord {
                            id: *id,
                            ..Default::default()
                        },
                    ));
                }
            }
            filter_results.push(DeleteAclsFilterResult {
                matching_acls,
                ..Default::default()
            });
        }
        Outcome::new(
            records,
            DeleteAclsResponse {
                filter_results,
                ..Default::default()
            },
        )
    }
}
