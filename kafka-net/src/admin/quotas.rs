//! Describing and altering client quotas (DescribeClientQuotas and AlterClientQuotas v0-1,
//! KIP-546), as Kafka's Java `Admin` does it.
//!
//! A quota applies to an entity: a user, a client id, both, or an IP address, where each part
//! is either a name or the default for that entity type (Kafka's `ClientQuotaEntity`). Its
//! values are keys such as `producer_byte_rate`, `consumer_byte_rate`,
//! `request_percentage`, `controller_mutation_rate` or `connection_creation_rate`, each a
//! number. The broker checks the keys and values; this client sends what it is given. Both
//! requests go to any broker; in KRaft the broker forwards the alteration to the controller.

use std::fmt;

use futures::future::BoxFuture;
use kafka_protocol::KStr;
use kafka_protocol::messages::{
    AlterClientQuotasRequest, ApiKey, DescribeClientQuotasRequest, RequestBody,
    alter_client_quotas_request, describe_client_quotas_request,
};

use super::{ANY, Admin, Replies, Retry, Routes, check_code, duplicate, duplicates, expect_body};
use crate::error::NetError;

/// The entity type of a user (the principal's name, `User:<name>` without the type).
pub const USER: &str = "user";
/// The entity type of a client id (`client.id`).
pub const CLIENT_ID: &str = "client-id";
/// The entity type of a client IP address (connection-creation quotas).
pub const IP: &str = "ip";

/// Who a quota applies to (Kafka's `ClientQuotaEntity`): entity type to name, where a name of
/// `None` is the default entity of that type (`<default>` in Kafka's tools). The parts are
/// kept sorted by entity type, so two entities with the same parts compare equal whatever
/// order they were given (or answered) in.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct QuotaEntity {
    parts: Vec<(String, Option<String>)>,
}

impl QuotaEntity {
    /// An entity from its parts (entity type, name or `None` for the default).
    pub fn new(parts: impl IntoIterator<Item = (String, Option<String>)>) -> Self {
        let mut parts: Vec<_> = parts.into_iter().collect();
        parts.sort();
        Self { parts }
    }

    /// The entity with one more part.
    #[must_use]
    pub fn with(mut self, entity_type: impl Into<String>, name: Option<&str>) -> Self {
        self.parts
            .push((entity_type.into(), name.map(str::to_owned)));
        self.parts.sort();
        self
    }

    /// The user `name` (`None`: the default user).
    pub fn user(name: Option<&str>) -> Self {
        Self::default().with(USER, name)
    }

    /// The client id `name` (`None`: the default client id).
    pub fn client_id(name: Option<&str>) -> Self {
        Self::default().with(CLIENT_ID, name)
    }

    /// The parts, sorted by entity type.
    pub fn parts(&self) -> &[(String, Option<String>)] {
        &self.parts
    }

    /// The name (or `None` for the default) of the part of type `entity_type`, if there is one.
    pub fn get(&self, entity_type: &str) -> Option<Option<&str>> {
        self.parts
            .iter()
            .find(|(t, _)| t == entity_type)
            .map(|(_, n)| n.as_deref())
    }
}

impl fmt::Display for QuotaEntity {
    /// `user=alice, client-id=<default>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (t, n)) in self.parts.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{t}={}", n.as_deref().unwrap_or("<default>"))?;
        }
        Ok(())
    }
}

/// How a filter component matches the part of one entity type (Kafka's
/// `ClientQuotaFilterComponent`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum QuotaMatch {
    /// The entity with exactly this name (`ofEntity`; match type 0).
    Exact(String),
    /// The default entity of the type (`ofDefaultEntity`; match type 1).
    Default,
    /// Any entity with a part of this type (`ofEntityType`; match type 2, "specified").
    /// KIP-546 describes it as any named entity, but Kafka's KRaft brokers (4.x) answer the
    /// default entity of the type too: tested against Apache Kafka 4.4.
    Specified,
}

/// One component of a [`QuotaFilter`]: an entity type and how its part is matched.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct QuotaFilterComponent {
    /// `user`, `client-id` or `ip`.
    pub entity_type: String,
    /// What the part must be.
    pub matches: QuotaMatch,
}

impl QuotaFilterComponent {
    /// Matches the entity named `name` of `entity_type`.
    pub fn exact(entity_type: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            entity_type: entity_type.into(),
            matches: QuotaMatch::Exact(name.into()),
        }
    }

    /// Matches the default entity of `entity_type`.
    pub fn default_entity(entity_type: impl Into<String>) -> Self {
        Self {
            entity_type: entity_type.into(),
            matches: QuotaMatch::Default,
        }
    }

    /// Matches any entity with a part of `entity_type` (see [`QuotaMatch::Specified`]).
    pub fn specified(entity_type: impl Into<String>) -> Self {
        Self {
            entity_type: entity_type.into(),
            matches: QuotaMatch::Specified,
        }
    }
}

/// Which quota entities DescribeClientQuotas answers for (Kafka's `ClientQuotaFilter`): every
/// component must match. Not `strict`: entities may also have parts of types the filter does
/// not name; `strict`: only entities whose parts are exactly the components' types.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct QuotaFilter {
    /// The components; none with `strict` false matches every entity.
    pub components: Vec<QuotaFilterComponent>,
    /// Whether entities with other parts are left out.
    pub strict: bool,
}

impl QuotaFilter {
    /// Entities with parts matching `components`, and possibly others (`contains`).
    pub fn containing(components: Vec<QuotaFilterComponent>) -> Self {
        Self {
            components,
            strict: false,
        }
    }

    /// Entities made of exactly the parts `components` match (`containsOnly`).
    pub fn only(components: Vec<QuotaFilterComponent>) -> Self {
        Self {
            components,
            strict: true,
        }
    }

    /// Every entity that has a quota (`all`).
    pub fn all() -> Self {
        Self::default()
    }
}

/// One change of a quota value (Kafka's `ClientQuotaAlteration.Op`).
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaOp {
    /// The quota key, e.g. `producer_byte_rate`.
    pub key: String,
    /// The new value, or `None` to remove the key.
    pub value: Option<f64>,
}

impl QuotaOp {
    /// Sets `key` to `value`.
    pub fn set(key: impl Into<String>, value: f64) -> Self {
        Self {
            key: key.into(),
            value: Some(value),
        }
    }

    /// Removes `key`.
    pub fn remove(key: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            value: None,
        }
    }
}

/// The changes to one entity's quotas (Kafka's `ClientQuotaAlteration`).
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaAlteration {
    /// Whose quotas.
    pub entity: QuotaEntity,
    /// The changes, applied together.
    pub ops: Vec<QuotaOp>,
}

impl QuotaAlteration {
    /// The changes `ops` to `entity`.
    pub fn new(entity: QuotaEntity, ops: Vec<QuotaOp>) -> Self {
        Self { entity, ops }
    }
}

/// An entity and its quota values, as DescribeClientQuotas answers.
pub type QuotaEntry = (QuotaEntity, Vec<(String, f64)>);

fn kstr(s: &str) -> KStr {
    KStr::from(s.to_owned())
}

/// The entity of an answer.
fn entity_from_wire<'a>(parts: impl Iterator<Item = (&'a KStr, Option<&'a KStr>)>) -> QuotaEntity {
    QuotaEntity::new(parts.map(|(t, n)| (t.to_string(), n.map(ToString::to_string))))
}

/// The DescribeClientQuotas request for `filter`.
fn describe_request(filter: &QuotaFilter) -> DescribeClientQuotasRequest {
    DescribeClientQuotasRequest {
        components: filter
            .components
            .iter()
            .map(|c| {
                let (match_type, name) = match &c.matches {
                    QuotaMatch::Exact(name) => (0, Some(kstr(name))),
                    QuotaMatch::Default => (1, None),
                    QuotaMatch::Specified => (2, None),
                };
                describe_client_quotas_request::ComponentData {
                    entity_type: kstr(&c.entity_type),
                    match_type,
                    r#match: name,
                    ..Default::default()
                }
            })
            .collect(),
        strict: filter.strict,
        ..Default::default()
    }
}

/// The AlterClientQuotas entry for one alteration.
fn alter_entry(a: &QuotaAlteration) -> alter_client_quotas_request::EntryData {
    alter_client_quotas_request::EntryData {
        entity: a
            .entity
            .parts
            .iter()
            .map(|(t, n)| alter_client_quotas_request::EntityData {
                entity_type: kstr(t),
                entity_name: n.as_deref().map(kstr),
                ..Default::default()
            })
            .collect(),
        ops: a
            .ops
            .iter()
            .map(|o| alter_client_quotas_request::OpData {
                key: kstr(&o.key),
                value: o.value.unwrap_or(0.0),
                remove: o.value.is_none(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

impl Admin {
    /// The quotas of the entities `filter` selects (Kafka's `Admin.describeClientQuotas`):
    /// each entity with its keys and values, in the broker's order. Kafka refuses a filter
    /// naming an entity type twice, or an unknown type, with INVALID_REQUEST (the outer
    /// error, with Kafka's message).
    pub async fn describe_client_quotas(
        &self,
        filter: &QuotaFilter,
    ) -> Result<Vec<QuotaEntry>, NetError> {
        self.cluster
            .retry(|| self.describe_client_quotas_once(filter))
            .await
    }

    async fn describe_client_quotas_once(
        &self,
        filter: &QuotaFilter,
    ) -> Result<Vec<QuotaEntry>, NetError> {
        let conn = self.cluster.least_loaded().await?;
        let version = conn.version_for(ApiKey::DescribeClientQuotas)?;
        let body = conn
            .request_at(
                RequestBody::DescribeClientQuotas(describe_request(filter)),
                version,
            )
            .await?;
        let resp = expect_body!(body, DescribeClientQuotas);
        check_code(resp.error_code, resp.error_message.as_ref(), || {
            "DescribeClientQuotas".to_owned()
        })?;
        Ok(resp
            .entries
            .iter()
            .flatten()
            .map(|e| {
                let entity = entity_from_wire(
                    e.entity
                        .iter()
                        .map(|p| (&p.entity_type, p.entity_name.as_ref())),
                );
                let values = e
                    .values
                    .iter()
                    .map(|v| (v.key.to_string(), v.value))
                    .collect();
                (entity, values)
            })
            .collect())
    }

    /// Changes quotas (Kafka's `Admin.alterClientQuotas`): per entity, set keys to values or
    /// remove them. With `validate_only` the broker checks and changes nothing. One
    /// `(entity, result)` per alteration, in order; an unknown key or a bad value is
    /// Kafka's INVALID_REQUEST with its message. An entity given twice fails from the second
    /// time on, without being sent.
    pub async fn alter_client_quotas(
        &self,
        alterations: &[QuotaAlteration],
        validate_only: bool,
    ) -> Vec<(QuotaEntity, Result<(), NetError>)> {
        let dup = &duplicates(alterations.iter().map(|a| &a.entity));
        let route = |_round: u32, pending: Vec<usize>| -> BoxFuture<'_, Routes> {
            Box::pin(std::future::ready(
                pending.into_iter().map(|i| (i, Ok(ANY))).collect(),
            ))
        };
        let send = |node: i32, idx: Vec<usize>| -> BoxFuture<'_, Replies<()>> {
            Box::pin(async move {
                let (dups, ok): (Vec<usize>, Vec<usize>) = idx
                    .into_iter()
                    .partition(|i| dup.get(*i).copied().unwrap_or(false));
                let mut out: Vec<(usize, Result<(), NetError>)> = dups
                    .into_iter()
                    .filter_map(|i| {
                        let a = alterations.get(i)?;
                        Some((i, Err(duplicate("quota entity", &a.entity.to_string()))))
                    })
                    .collect();
                let sent: Vec<(usize, &QuotaAlteration)> = ok
                    .into_iter()
                    .filter_map(|i| alterations.get(i).map(|a| (i, a)))
                    .collect();
                if sent.is_empty() {
                    return Ok(out);
                }
                let conn = self.conn_for(node).await?;
                let version = conn.version_for(ApiKey::AlterClientQuotas)?;
                let req = AlterClientQuotasRequest {
                    entries: sent.iter().map(|(_, a)| alter_entry(a)).collect(),
                    validate_only,
                    ..Default::default()
                };
                let body = conn
                    .request_at(RequestBody::AlterClientQuotas(req), version)
                    .await?;
                let resp = expect_body!(body, AlterClientQuotas);
                for e in &resp.entries {
                    let entity = entity_from_wire(
                        e.entity
                            .iter()
                            .map(|p| (&p.entity_type, p.entity_name.as_ref())),
                    );
                    if let Some((i, _)) = sent.iter().find(|(_, a)| a.entity == entity) {
                        let res = check_code(e.error_code, e.error_message.as_ref(), || {
                            format!("AlterClientQuotas {entity}")
                        });
                        out.push((*i, res));
                    }
                }
                Ok(out)
            })
        };
        let results = self
            .fan_out(
                "AlterClientQuotas",
                Retry::Transport,
                alterations.len(),
                route,
                send,
            )
            .await;
        alterations
            .iter()
            .map(|a| a.entity.clone())
            .zip(results)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entities_compare_whatever_the_order_of_their_parts() {
        let a = QuotaEntity::user(Some("alice")).with(CLIENT_ID, None);
        let b = QuotaEntity::new([
            (CLIENT_ID.to_owned(), None),
            (USER.to_owned(), Some("alice".to_owned())),
        ]);
        assert_eq!(a, b);
        assert_eq!(a.get(USER), Some(Some("alice")));
        assert_eq!(a.get(CLIENT_ID), Some(None));
        assert_eq!(a.get(IP), None);
        assert_eq!(a.to_string(), "client-id=<default>, user=alice");
        // The default user is not the user named "<default>".
        assert_ne!(
            QuotaEntity::user(None),
            QuotaEntity::user(Some("<default>"))
        );
    }

    #[test]
    fn filter_components_carry_kafkas_match_types() {
        let f = QuotaFilter::only(vec![
            QuotaFilterComponent::exact(USER, "alice"),
            QuotaFilterComponent::default_entity(CLIENT_ID),
            QuotaFilterComponent::specified(IP),
        ]);
        let r = describe_request(&f);
        assert!(r.strict);
        let got: Vec<(&str, i8, Option<&str>)> = r
            .components
            .iter()
            .map(|c| {
                (
                    c.entity_type.as_str(),
                    c.match_type,
                    c.r#match.as_ref().map(KStr::as_str),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("user", 0, Some("alice")),
                ("client-id", 1, None),
                ("ip", 2, None)
            ]
        );
        assert!(!describe_request(&QuotaFilter::all()).strict);
        assert!(describe_request(&QuotaFilter::all()).components.is_empty());
    }

    #[test]
    fn removals_set_the_remove_flag_and_defaults_go_as_null_names() {
        let a = QuotaAlteration::new(
            QuotaEntity::user(Some("alice")).with(CLIENT_ID, None),
            vec![
                QuotaOp::set("producer_byte_rate", 1024.0),
                QuotaOp::remove("consumer_byte_rate"),
            ],
        );
        let e = alter_entry(&a);
        let parts: Vec<(&str, Option<&str>)> = e
            .entity
            .iter()
            .map(|p| {
                (
                    p.entity_type.as_str(),
                    p.entity_name.as_ref().map(KStr::as_str),
                )
            })
            .collect();
        assert_eq!(parts, [("client-id", None), ("user", Some("alice"))]);
        let ops: Vec<(&str, f64, bool)> = e
            .ops
            .iter()
            .map(|o| (o.key.as_str(), o.value, o.remove))
            .collect();
        assert_eq!(
            ops,
            [
                ("producer_byte_rate", 1024.0, false),
                ("consumer_byte_rate", 0.0, true)
            ]
        );
    }
}
