//! The quotas set on users, client ids and addresses: Kafka's client quota image. Changes are
//! Kafka's `ClientQuotaRecord`s ([`QuotaChange`]): AlterClientQuotas is checked against the
//! store and turned into changes without touching it ([`QuotaStore::alter`], as Kafka's
//! controller does, so a `validate_only` request or a metadata log can come in between), and
//! each change is then applied ([`QuotaStore::apply`]).
//!
//! [`QuotaStore::resolve`] finds the quota that applies to a (user, client id) with Kafka's
//! precedence (KIP-55), and the usage key its use is measured under.
//!
//! The entities are kept in Kafka's strict hierarchy (user, then client id), so that resolving
//! a request's quota looks names up without building a key.

use std::collections::{HashMap, HashSet};

use kafka_protocol::metadata::ClientQuotaRecord;
use kafka_protocol::metadata::client_quota_record::EntityData;

use super::QuotaError;
use super::entity::{EntityName, QuotaEntity, QuotaKey};

/// The values set on one entity, by [`QuotaKey::index`].
type Values = [Option<f64>; 5];

const EMPTY: Values = [None; 5];

fn is_empty(v: &Values) -> bool {
    v.iter().all(Option::is_none)
}

/// One user (or the default user): its own quotas and those with client ids.
#[derive(Debug, Clone, Default, PartialEq)]
struct UserNode {
    alone: Values,
    clients: HashMap<String, Values>,
    default_client: Values,
}

impl UserNode {
    fn is_empty(&self) -> bool {
        is_empty(&self.alone) && self.clients.is_empty() && is_empty(&self.default_client)
    }
}

/// One quota change: a value set, or removed (`None`); Kafka's `ClientQuotaRecord`.
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaChange {
    /// The entity.
    pub entity: QuotaEntity,
    /// The key.
    pub key: QuotaKey,
    /// The new value; `None` removes it (`remove = true` in the record).
    pub value: Option<f64>,
}

impl QuotaChange {
    /// The change as Kafka's metadata record.
    pub fn to_record(&self) -> ClientQuotaRecord {
        ClientQuotaRecord {
            entity: self
                .entity
                .entries()
                .into_iter()
                .map(|(t, name)| EntityData {
                    entity_type: t.name().into(),
                    entity_name: name.map(|n| n.to_owned().into()),
                    ..EntityData::default()
                })
                .collect(),
            key: self.key.name().into(),
            value: self.value.unwrap_or(0.0),
            remove: self.value.is_none(),
            ..ClientQuotaRecord::default()
        }
    }

    /// The change a metadata record carries. The entity and key are checked (the store keeps
    /// only Kafka's); the value is taken as the controller wrote it.
    pub fn from_record(record: &ClientQuotaRecord) -> Result<Self, QuotaError> {
        let entity = QuotaEntity::from_entries(
            record
                .entity
                .iter()
                .map(|e| (e.entity_type.as_str(), e.entity_name.as_deref())),
        )?;
        let key = QuotaKey::parse(record.key.as_str())
            .filter(|k| entity.keys().contains(k))
            .ok_or_else(|| {
                QuotaError::invalid(format!("Invalid configuration key {}", record.key.as_str()))
            })?;
        Ok(Self {
            entity,
            key,
            value: (!record.remove).then_some(record.value),
        })
    }
}

/// One entry of AlterClientQuotas as it comes: the entity as (type, name) pairs and the
/// operations as (key, value; `None` removes).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AlterEntry {
    /// (entity type, name or `None` for the default).
    pub entity: Vec<(String, Option<String>)>,
    /// (key, new value or `None` to remove).
    pub ops: Vec<(String, Option<f64>)>,
}

/// What AlterClientQuotas comes to: one result per entry, in the request's order, and the
/// changes of the entries that succeeded (to apply unless the request only validates).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AlterOutcome {
    /// One result per entry.
    pub results: Vec<Result<(), QuotaError>>,
    /// The changes to apply: only values that differ from the store's.
    pub changes: Vec<QuotaChange>,
}

/// The quota that applies to a client, where it was set, and the usage key its use is measured
/// under.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedQuota {
    /// The bound (bytes a second, percent, ...).
    pub bound: f64,
    /// The entity the quota was set on (a default one included).
    pub entity: QuotaEntity,
    /// Whose use counts against it (Kafka's metric tags).
    pub usage: UsageKey,
}

/// Whose use a quota measures, as Kafka's quota metric tags: a quota set with a user and a
/// client id (names or defaults) is measured per (user, client id), one set on a user alone
/// per user (all its client ids share it), one set on a client id alone per client id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UsageKey {
    /// The user, when the quota is per user.
    pub user: Option<String>,
    /// The client id, when the quota is per client id.
    pub client_id: Option<String>,
}

/// The quotas set on users, client ids and addresses.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QuotaStore {
    users: HashMap<String, UserNode>,
    default_user: UserNode,
    clients: HashMap<String, Values>,
    default_client: Values,
    ips: HashMap<String, Values>,
    default_ip: Values,
}

impl QuotaStore {
    /// An empty store: no quota anywhere.
    pub fn new() -> Self {
        Self::default()
    }

    /// The value of `key` set on `entity` itself (no defaults applied).
    pub fn value(&self, entity: &QuotaEntity, key: QuotaKey) -> Option<f64> {
        self.values_of(entity)
            .and_then(|v| v.get(key.index()).copied().flatten())
    }

    /// Every value set on `entity`, in key order.
    pub fn values(&self, entity: &QuotaEntity) -> Vec<(QuotaKey, f64)> {
        self.values_of(entity).map(pairs).unwrap_or_default()
    }

    /// Sets (`Some`) or removes (`None`) one quota after checking it as AlterClientQuotas is
    /// checked (a key of the entity's kind, a valid value, no empty name, a valid address).
    /// Answers whether the store changed.
    pub fn set(
        &mut self,
        entity: &QuotaEntity,
        key: QuotaKey,
        value: Option<f64>,
    ) -> Result<bool, QuotaError> {
        entity.validate()?;
        if !entity.keys().contains(&key) {
            return Err(QuotaError::invalid(format!(
                "Invalid configuration key {key}"
            )));
        }
        if let Some(v) = value {
            key.validate(v)?;
        }
        let change = QuotaChange {
            entity: entity.clone(),
            key,
            value,
        };
        Ok(self.apply(&change))
    }

    /// Applies one change (a record of the metadata log): the value is set or removed; an
    /// entity left with no value is dropped. Answers whether the store changed.
    pub fn apply(&mut self, change: &QuotaChange) -> bool {
        let i = change.key.index();
        let Some(values) = self.values_mut(&change.entity, change.value.is_some()) else {
            return false;
        };
        let Some(slot) = values.get_mut(i) else {
            return false;
        };
        let changed = *slot != change.value;
        *slot = change.value;
        if change.value.is_none() {
            self.prune(&change.entity);
        }
        changed
    }

    /// Checks AlterClientQuotas entries as Kafka's controller does and answers the changes
    /// they make, without changing the store. An entry fails whole on its first fault (its
    /// other operations are not applied). Removing a key that is not set, or not a quota key,
    /// changes nothing and succeeds, as in Kafka.
    ///
    /// Kafka answers a second entry for the same entity "Ignoring duplicate entity" but still
    /// applies the first; here every entry for that entity fails and none is applied.
    pub fn alter(&self, entries: &[AlterEntry]) -> AlterOutcome {
        let checked: Vec<Result<(QuotaEntity, Vec<QuotaChange>), QuotaError>> =
            entries.iter().map(|e| self.check_entry(e)).collect();
        let mut times: HashMap<&QuotaEntity, usize> = HashMap::new();
        for (entity, _) in checked.iter().flatten() {
            *times.entry(entity).or_default() += 1;
        }
        let mut outcome = AlterOutcome::default();
        for entry in &checked {
            let result = match entry {
                Err(e) => Err(e.clone()),
                Ok((entity, changes)) => {
                    if times.get(entity).is_some_and(|&n| n > 1) {
                        Err(QuotaError::invalid(format!(
                            "Ignoring duplicate entity {entity}"
                        )))
                    } else {
                        outcome.changes.extend(changes.iter().cloned());
                        Ok(())
                    }
                }
            };
            outcome.results.push(result);
        }
        outcome
    }

    fn check_entry(
        &self,
        entry: &AlterEntry,
    ) -> Result<(QuotaEntity, Vec<QuotaChange>), QuotaError> {
        let mut seen: HashSet<&str> = HashSet::with_capacity(entry.ops.len());
        for (key, _) in &entry.ops {
            if !seen.insert(key.as_str()) {
                let shown = entry
                    .entity
                    .iter()
                    .map(|(t, n)| format!("{t}={}", n.as_deref().unwrap_or("null")))
                    .collect::<Vec<_>>()
                    .join(", ");
                return Err(QuotaError::invalid(format!(
                    "Duplicate quota key {key} not updating quota for this entity \
                     ClientQuotaEntity(entries={{{shown}}})"
                )));
            }
        }
        let entity = QuotaEntity::from_entries(
            entry.entity.iter().map(|(t, n)| (t.as_str(), n.as_deref())),
        )?;
        let mut changes = Vec::new();
        for (name, value) in &entry.ops {
            let key = QuotaKey::parse(name).filter(|k| entity.keys().contains(k));
            match (key, value) {
                (Some(key), None) => {
                    if self.value(&entity, key).is_some() {
                        changes.push(QuotaChange {
                            entity: entity.clone(),
                            key,
                            value: None,
                        });
                    }
                }
                (None, None) => {}
                (None, Some(_)) => {
                    return Err(QuotaError::invalid(format!(
                        "Invalid configuration key {name}"
                    )));
                }
                (Some(key), Some(v)) => {
                    key.validate(*v)?;
                    if self.value(&entity, key) != Some(*v) {
                        changes.push(QuotaChange {
                            entity: entity.clone(),
                            key,
                            value: Some(*v),
                        });
                    }
                }
            }
        }
        Ok((entity, changes))
    }

    /// Every entity with a value, sorted, with its values in key order.
    pub fn entities(&self) -> Vec<(QuotaEntity, Vec<(QuotaKey, f64)>)> {
        let mut out = Vec::new();
        let mut push = |entity: QuotaEntity, v: &Values| {
            if !is_empty(v) {
                out.push((entity, pairs(v)));
            }
        };
        let user_nodes = self
            .users
            .iter()
            .map(|(n, node)| (EntityName::named(n.as_str()), node))
            .chain(std::iter::once((EntityName::Default, &self.default_user)));
        for (user, node) in user_nodes {
            push(QuotaEntity::User(user.clone()), &node.alone);
            push(
                QuotaEntity::UserClientId(user.clone(), EntityName::Default),
                &node.default_client,
            );
            for (c, v) in &node.clients {
                push(
                    QuotaEntity::UserClientId(user.clone(), EntityName::named(c.as_str())),
                    v,
                );
            }
        }
        for (c, v) in &self.clients {
            push(QuotaEntity::ClientId(EntityName::named(c.as_str())), v);
        }
        push(
            QuotaEntity::ClientId(EntityName::Default),
            &self.default_client,
        );
        for (ip, v) in &self.ips {
            push(QuotaEntity::Ip(EntityName::named(ip.as_str())), v);
        }
        push(QuotaEntity::Ip(EntityName::Default), &self.default_ip);
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// Every value as a change that sets it: the records of a snapshot of the store.
    pub fn changes(&self) -> Vec<QuotaChange> {
        self.entities()
            .into_iter()
            .flat_map(|(entity, values)| {
                values.into_iter().map(move |(key, v)| QuotaChange {
                    entity: entity.clone(),
                    key,
                    value: Some(v),
                })
            })
            .collect()
    }

    /// Whether no quota is set.
    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
            && self.default_user.is_empty()
            && self.clients.is_empty()
            && is_empty(&self.default_client)
            && self.ips.is_empty()
            && is_empty(&self.default_ip)
    }

    /// The quota of `key` that applies to a request of `user` with `client_id`, in Kafka's
    /// order of precedence (KIP-55), the first level with a value winning:
    /// 1. the user with the client id, 2. the user with the default client id, 3. the user,
    /// 4. the default user with the client id, 5. the default user with the default client id,
    /// 6. the default user, 7. the client id, 8. the default client id.
    ///
    /// `None`: no quota applies (the client is never throttled and nothing is measured).
    pub fn resolve(&self, key: QuotaKey, user: &str, client_id: &str) -> Option<ResolvedQuota> {
        let i = key.index();
        let get = |v: Option<&Values>| v.and_then(|v| v.get(i).copied().flatten());
        let named_user = || EntityName::named(user);
        let named_client = || EntityName::named(client_id);
        let both = || UsageKey {
            user: Some(user.to_owned()),
            client_id: Some(client_id.to_owned()),
        };
        let user_only = || UsageKey {
            user: Some(user.to_owned()),
            client_id: None,
        };
        let client_only = || UsageKey {
            user: None,
            client_id: Some(client_id.to_owned()),
        };
        let found = |bound: f64, entity: QuotaEntity, usage: UsageKey| {
            Some(ResolvedQuota {
                bound,
                entity,
                usage,
            })
        };
        if let Some(node) = self.users.get(user) {
            if let Some(b) = get(node.clients.get(client_id)) {
                return found(
                    b,
                    QuotaEntity::UserClientId(named_user(), named_client()),
                    both(),
                );
            }
            if let Some(b) = get(Some(&node.default_client)) {
                return found(
                    b,
                    QuotaEntity::UserClientId(named_user(), EntityName::Default),
                    both(),
                );
            }
            if let Some(b) = get(Some(&node.alone)) {
                return found(b, QuotaEntity::User(named_user()), user_only());
            }
        }
        let d = &self.default_user;
        if let Some(b) = get(d.clients.get(client_id)) {
            return found(
                b,
                QuotaEntity::UserClientId(EntityName::Default, named_client()),
                both(),
            );
        }
        if let Some(b) = get(Some(&d.default_client)) {
            return found(
                b,
                QuotaEntity::UserClientId(EntityName::Default, EntityName::Default),
                both(),
            );
        }
        if let Some(b) = get(Some(&d.alone)) {
            return found(b, QuotaEntity::User(EntityName::Default), user_only());
        }
        if let Some(b) = get(self.clients.get(client_id)) {
            return found(b, QuotaEntity::ClientId(named_client()), client_only());
        }
        if let Some(b) = get(Some(&self.default_client)) {
            return found(b, QuotaEntity::ClientId(EntityName::Default), client_only());
        }
        None
    }

    fn values_of(&self, entity: &QuotaEntity) -> Option<&Values> {
        let user_node = |u: &EntityName| match u {
            EntityName::Default => Some(&self.default_user),
            EntityName::Named(n) => self.users.get(n),
        };
        match entity {
            QuotaEntity::User(u) => user_node(u).map(|n| &n.alone),
            QuotaEntity::UserClientId(u, c) => {
                let node = user_node(u)?;
                match c {
                    EntityName::Default => Some(&node.default_client),
                    EntityName::Named(c) => node.clients.get(c),
                }
            }
            QuotaEntity::ClientId(EntityName::Default) => Some(&self.default_client),
            QuotaEntity::ClientId(EntityName::Named(c)) => self.clients.get(c),
            QuotaEntity::Ip(EntityName::Default) => Some(&self.default_ip),
            QuotaEntity::Ip(EntityName::Named(ip)) => self.ips.get(ip),
        }
    }

    /// The values of `entity`, made when `create` (else `None` when it has none).
    fn values_mut(&mut self, entity: &QuotaEntity, create: bool) -> Option<&mut Values> {
        fn slot<'a>(
            map: &'a mut HashMap<String, Values>,
            k: &str,
            create: bool,
        ) -> Option<&'a mut Values> {
            if create {
                Some(map.entry(k.to_owned()).or_insert(EMPTY))
            } else {
                map.get_mut(k)
            }
        }
        fn user_node<'a>(
            users: &'a mut HashMap<String, UserNode>,
            default_user: &'a mut UserNode,
            u: &EntityName,
            create: bool,
        ) -> Option<&'a mut UserNode> {
            match u {
                EntityName::Default => Some(default_user),
                EntityName::Named(n) if create => Some(users.entry(n.clone()).or_default()),
                EntityName::Named(n) => users.get_mut(n),
            }
        }
        let (users, default_user) = (&mut self.users, &mut self.default_user);
        match entity {
            QuotaEntity::User(u) => user_node(users, default_user, u, create).map(|n| &mut n.alone),
            QuotaEntity::UserClientId(u, c) => {
                let node = user_node(users, default_user, u, create)?;
                match c {
                    EntityName::Default => Some(&mut node.default_client),
                    EntityName::Named(c) => slot(&mut node.clients, c, create),
                }
            }
            QuotaEntity::ClientId(EntityName::Default) => Some(&mut self.default_client),
            QuotaEntity::ClientId(EntityName::Named(c)) => slot(&mut self.clients, c, create),
            QuotaEntity::Ip(EntityName::Default) => Some(&mut self.default_ip),
            QuotaEntity::Ip(EntityName::Named(ip)) => slot(&mut self.ips, ip, create),
        }
    }

    /// Drops the empty nodes left by a removal.
    fn prune(&mut self, entity: &QuotaEntity) {
        fn drop_empty(map: &mut HashMap<String, Values>, k: &str) {
            if map.get(k).is_some_and(is_empty) {
                map.remove(k);
            }
        }
        match entity {
            QuotaEntity::User(u) | QuotaEntity::UserClientId(u, _) => {
                if let QuotaEntity::UserClientId(_, EntityName::Named(c)) = entity {
                    let node = match u {
                        EntityName::Default => Some(&mut self.default_user),
                        EntityName::Named(n) => self.users.get_mut(n),
                    };
                    if let Some(node) = node {
                        drop_empty(&mut node.clients, c);
                    }
                }
                if let EntityName::Named(n) = u {
                    if self.users.get(n).is_some_and(UserNode::is_empty) {
                        self.users.remove(n);
                    }
                }
            }
            QuotaEntity::ClientId(EntityName::Named(c)) => drop_empty(&mut self.clients, c),
            QuotaEntity::Ip(EntityName::Named(ip)) => drop_empty(&mut self.ips, ip),
            QuotaEntity::ClientId(EntityName::Default) | QuotaEntity::Ip(EntityName::Default) => {}
        }
    }
}

fn pairs(v: &Values) -> Vec<(QuotaKey, f64)> {
    QuotaKey::ALL
        .into_iter()
        .filter_map(|k| v.get(k.index()).copied().flatten().map(|x| (k, x)))
        .collect()
}
