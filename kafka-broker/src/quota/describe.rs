//! DescribeClientQuotas: which entities a filter matches, with the rules of Kafka's client quota
//! image (`ClientQuotasImage.describe`). A filter is a list of components, each an entity type
//! with a match: EXACT (a name), DEFAULT (the default entity) or SPECIFIED (any entity with that
//! type, the default one included, as Kafka matches it). An entity matches when it has every
//! component's type with a matching name; `strict` also requires it to have no other type (an
//! empty strict filter matches nothing, an empty open one everything).
//!
//! Bad filters answer INVALID_REQUEST with Kafka's message; an unknown entity type answers
//! UNSUPPORTED_VERSION, as Kafka does.

use std::collections::BTreeMap;

use super::QuotaError;
use super::entity::{EntityType, QuotaEntity, QuotaKey};
use super::store::QuotaStore;

/// Kafka's `match_type` 0: the name given.
pub const MATCH_TYPE_EXACT: i8 = 0;
/// Kafka's `match_type` 1: the default entity.
pub const MATCH_TYPE_DEFAULT: i8 = 1;
/// Kafka's `match_type` 2: any entity of the type.
pub const MATCH_TYPE_SPECIFIED: i8 = 2;

/// One component of a DescribeClientQuotas filter, as the request carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterComponent {
    /// The entity type (`user`, `client-id`, `ip`).
    pub entity_type: String,
    /// [`MATCH_TYPE_EXACT`], [`MATCH_TYPE_DEFAULT`] or [`MATCH_TYPE_SPECIFIED`].
    pub match_type: i8,
    /// The name for EXACT; must be null for the others.
    pub name: Option<String>,
}

impl FilterComponent {
    /// Matches the entity of `entity_type` named `name`.
    pub fn exact(entity_type: &str, name: &str) -> Self {
        Self {
            entity_type: entity_type.to_owned(),
            match_type: MATCH_TYPE_EXACT,
            name: Some(name.to_owned()),
        }
    }

    /// Matches the default entity of `entity_type`.
    pub fn default_entity(entity_type: &str) -> Self {
        Self {
            entity_type: entity_type.to_owned(),
            match_type: MATCH_TYPE_DEFAULT,
            name: None,
        }
    }

    /// Matches any entity of `entity_type`.
    pub fn specified(entity_type: &str) -> Self {
        Self {
            entity_type: entity_type.to_owned(),
            match_type: MATCH_TYPE_SPECIFIED,
            name: None,
        }
    }
}

/// One matching entity and its values, as DescribeClientQuotas answers it.
#[derive(Debug, Clone, PartialEq)]
pub struct DescribedQuotas {
    /// The entity.
    pub entity: QuotaEntity,
    /// Its values, in key order.
    pub values: Vec<(QuotaKey, f64)>,
}

/// What a component asks of one entity type: a name, the default (`None`), or any.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Want {
    Name(Option<String>),
    Any,
}

/// Checks a filter as Kafka does, then answers the entities of `store` it matches (sorted).
pub fn describe(
    store: &QuotaStore,
    components: &[FilterComponent],
    strict: bool,
) -> Result<Vec<DescribedQuotas>, QuotaError> {
    let wants = check(components)?;
    Ok(store
        .entities()
        .into_iter()
        .filter(|(entity, _)| matches(entity, &wants, strict))
        .map(|(entity, values)| DescribedQuotas { entity, values })
        .collect())
}

fn check(components: &[FilterComponent]) -> Result<BTreeMap<EntityType, Want>, QuotaError> {
    let mut wants = BTreeMap::new();
    let mut seen: Vec<&str> = Vec::new();
    for c in components {
        let t = c.entity_type.as_str();
        if t.is_empty() {
            return Err(QuotaError::invalid("Invalid empty entity type."));
        }
        if seen.contains(&t) {
            return Err(QuotaError::invalid(format!(
                "Entity type {t} cannot appear more than once in the filter."
            )));
        }
        seen.push(t);
        let Some(entity_type) = EntityType::parse(t) else {
            return Err(QuotaError::UnsupportedVersion(format!(
                "Unsupported entity type {t}"
            )));
        };
        let want = match (c.match_type, &c.name) {
            (MATCH_TYPE_EXACT, Some(name)) => Want::Name(Some(name.clone())),
            (MATCH_TYPE_EXACT, None) => {
                return Err(QuotaError::invalid(
                    "Request specified MATCH_TYPE_EXACT, but set match string to null.",
                ));
            }
            (MATCH_TYPE_DEFAULT, None) => Want::Name(None),
            (MATCH_TYPE_DEFAULT, Some(_)) => {
                return Err(QuotaError::invalid(
                    "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.",
                ));
            }
            (MATCH_TYPE_SPECIFIED, None) => Want::Any,
            (MATCH_TYPE_SPECIFIED, Some(_)) => {
                return Err(QuotaError::invalid(
                    "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.",
                ));
            }
            (other, _) => {
                return Err(QuotaError::invalid(format!("Unknown match type {other}")));
            }
        };
        wants.insert(entity_type, want);
    }
    let has = |t| wants.contains_key(&t);
    if has(EntityType::Ip) && (has(EntityType::User) || has(EntityType::ClientId)) {
        return Err(QuotaError::invalid(
            "Invalid entity filter component combination. IP filter component should not be \
             used with user or clientId filter component.",
        ));
    }
    Ok(wants)
}

fn matches(entity: &QuotaEntity, wants: &BTreeMap<EntityType, Want>, strict: bool) -> bool {
    let entries = entity.entries();
    if strict && entries.len() != wants.len() {
        return false;
    }
    wants.iter().all(|(t, want)| match entity.name_of(*t) {
        None => false,
        Some(name) => match want {
            Want::Any => true,
            Want::Name(w) => w.as_deref() == name,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::super::entity::{CLIENT_ID, EntityName, IP, USER};
    use super::*;

    fn named(n: &str) -> EntityName {
        EntityName::named(n)
    }

    /// Kafka's ClientQuotasRequestTest.testDescribeClientQuotasMatchPartial entities.
    fn kafka_match_store() -> QuotaStore {
        use EntityName::Default as D;
        use QuotaEntity::*;
        let mut s = QuotaStore::new();
        let rp = QuotaKey::RequestPercentage;
        let cc = QuotaKey::ConnectionCreationRate;
        for (e, v) in [
            (UserClientId(named("user-1"), named("client-id-1")), 50.50),
            (UserClientId(named("user-2"), named("client-id-1")), 51.51),
            (UserClientId(named("user-3"), named("client-id-2")), 52.52),
            (UserClientId(D, named("client-id-1")), 53.53),
            (UserClientId(named("user-1"), D), 54.54),
            (UserClientId(named("user-3"), D), 55.55),
            (User(named("user-1")), 56.56),
            (User(named("user-2")), 57.57),
            (User(named("user-3")), 58.58),
            (User(D), 59.59),
            (ClientId(named("client-id-2")), 60.60),
        ] {
            s.set(&e, rp, Some(v)).unwrap();
        }
        s.set(&Ip(named("1.2.3.4")), cc, Some(10.0)).unwrap();
        s.set(&Ip(named("2.3.4.5")), cc, Some(20.0)).unwrap();
        s
    }

    fn count(s: &QuotaStore, c: &[FilterComponent], strict: bool) -> usize {
        describe(s, c, strict).unwrap().len()
    }

    #[test]
    fn kafka_match_partial_counts() {
        let s = kafka_match_store();
        let ex = FilterComponent::exact;
        let def = FilterComponent::default_entity;
        let any = FilterComponent::specified;
        assert_eq!(count(&s, &[ex(USER, "user-1")], false), 3);
        assert_eq!(count(&s, &[ex(USER, "unknown")], false), 0);
        assert_eq!(count(&s, &[ex(CLIENT_ID, "client-id-2")], false), 2);
        assert_eq!(count(&s, &[def(USER)], false), 2);
        assert_eq!(count(&s, &[ex(USER, "user-2")], true), 1);
        assert_eq!(count(&s, &[ex(CLIENT_ID, "client-id-1")], true), 0);
        // SPECIFIED matches the default entity too: user-1..3 and the default user.
        assert_eq!(count(&s, &[any(USER)], true), 4);
        assert_eq!(count(&s, &[any(USER)], false), 10);
        assert_eq!(count(&s, &[any(CLIENT_ID)], true), 1);
        assert_eq!(count(&s, &[any(CLIENT_ID)], false), 7);
        assert_eq!(count(&s, &[any(IP)], false), 2);
        assert_eq!(count(&s, &[], false), 13);
        assert_eq!(count(&s, &[], true), 0);
        // Both parts named.
        let both = describe(
            &s,
            &[ex(USER, "user-1"), ex(CLIENT_ID, "client-id-1")],
            true,
        )
        .unwrap();
        assert_eq!(both.len(), 1);
        assert_eq!(both[0].values, vec![(QuotaKey::RequestPercentage, 50.50)]);
        assert_eq!(count(&s, &[def(USER), any(CLIENT_ID)], true), 1);
        assert_eq!(count(&s, &[any(USER), def(CLIENT_ID)], true), 2);
    }

    #[test]
    fn a_name_that_reads_like_the_default_is_not_the_default() {
        let mut s = QuotaStore::new();
        let e = QuotaEntity::ClientId(named("<default>"));
        s.set(&e, QuotaKey::ProducerByteRate, Some(20_000.0))
            .unwrap();
        let d = FilterComponent::default_entity(CLIENT_ID);
        assert_eq!(count(&s, &[d], true), 0);
        assert_eq!(
            count(&s, &[FilterComponent::exact(CLIENT_ID, "<default>")], true),
            1
        );
    }

    #[test]
    fn filters_kafka_refuses() {
        let s = kafka_match_store();
        let err = |c: Vec<FilterComponent>| describe(&s, &c, false).unwrap_err();
        let e = err(vec![FilterComponent::specified("")]);
        assert_eq!(e.to_string(), "Invalid empty entity type.");
        assert_eq!(e.error_code().0, 42);
        let e = err(vec![
            FilterComponent::exact(USER, "a"),
            FilterComponent::specified(USER),
        ]);
        assert_eq!(
            e.to_string(),
            "Entity type user cannot appear more than once in the filter."
        );
        let e = err(vec![FilterComponent::specified("other")]);
        assert_eq!(e.to_string(), "Unsupported entity type other");
        assert_eq!(e.error_code().0, 35, "UNSUPPORTED_VERSION, as Kafka");
        let mut c = FilterComponent::exact(USER, "a");
        c.name = None;
        assert!(err(vec![c]).to_string().contains("MATCH_TYPE_EXACT"));
        let mut c = FilterComponent::default_entity(USER);
        c.name = Some("a".into());
        assert!(err(vec![c]).to_string().contains("MATCH_TYPE_DEFAULT"));
        let mut c = FilterComponent::specified(USER);
        c.name = Some("a".into());
        assert!(err(vec![c]).to_string().contains("MATCH_TYPE_SPECIFIED"));
        let mut c = FilterComponent::specified(USER);
        c.match_type = 7;
        assert_eq!(err(vec![c]).to_string(), "Unknown match type 7");
        for other in [USER, CLIENT_ID] {
            let e = err(vec![
                FilterComponent::specified(IP),
                FilterComponent::specified(other),
            ]);
            assert!(
                e.to_string()
                    .starts_with("Invalid entity filter component combination"),
                "{e}"
            );
        }
    }
}
