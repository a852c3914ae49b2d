//! What a quota is set on and which quotas there are, with Kafka's names: entities of type
//! `user`, `client-id` (alone or together) or `ip`, each a name or the default (Kafka's null
//! name), and the quota keys each kind of entity takes. The checks are those of Kafka's
//! controller for AlterClientQuotas (`ClientQuotaControlManager`), with its messages; all
//! answer INVALID_REQUEST.

use std::fmt;
use std::net::IpAddr;

use super::QuotaError;

/// Kafka's entity type `user` (a principal's name).
pub const USER: &str = "user";
/// Kafka's entity type `client-id`.
pub const CLIENT_ID: &str = "client-id";
/// Kafka's entity type `ip` (a client address; only for connection-creation rates).
pub const IP: &str = "ip";

/// The three entity types Kafka knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EntityType {
    /// `user`.
    User,
    /// `client-id`.
    ClientId,
    /// `ip`.
    Ip,
}

impl EntityType {
    /// Kafka's name of the type.
    pub fn name(self) -> &'static str {
        match self {
            Self::User => USER,
            Self::ClientId => CLIENT_ID,
            Self::Ip => IP,
        }
    }

    /// The type of a name, `None` for one Kafka does not know.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            USER => Some(Self::User),
            CLIENT_ID => Some(Self::ClientId),
            IP => Some(Self::Ip),
            _ => None,
        }
    }
}

/// The name part of an entity: a given name, or the default that applies to every name with no
/// quota of its own (Kafka's null entity name, `<default>` in its tools).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EntityName {
    /// The default entity.
    Default,
    /// One user, client id or address.
    Named(String),
}

impl EntityName {
    /// The name as Kafka's records carry it: `None` for the default.
    pub fn as_option(&self) -> Option<&str> {
        match self {
            Self::Default => None,
            Self::Named(n) => Some(n),
        }
    }

    /// From Kafka's form: `None` is the default.
    pub fn from_option(name: Option<&str>) -> Self {
        name.map_or(Self::Default, |n| Self::Named(n.to_owned()))
    }

    /// A given name.
    pub fn named(name: impl Into<String>) -> Self {
        Self::Named(name.into())
    }
}

/// What a quota is set on: Kafka's `ClientQuotaEntity` restricted to the combinations its
/// controller accepts (a user, a client id, both, or an address; never an address with
/// another type).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QuotaEntity {
    /// `user` alone.
    User(EntityName),
    /// `client-id` alone.
    ClientId(EntityName),
    /// `user` and `client-id` together.
    UserClientId(EntityName, EntityName),
    /// `ip`.
    Ip(EntityName),
}

impl QuotaEntity {
    /// The entity as Kafka's records and responses list it: (type, name or `None` for the
    /// default), the user before the client id.
    pub fn entries(&self) -> Vec<(EntityType, Option<&str>)> {
        match self {
            Self::User(u) => vec![(EntityType::User, u.as_option())],
            Self::ClientId(c) => vec![(EntityType::ClientId, c.as_option())],
            Self::UserClientId(u, c) => vec![
                (EntityType::User, u.as_option()),
                (EntityType::ClientId, c.as_option()),
            ],
            Self::Ip(i) => vec![(EntityType::Ip, i.as_option())],
        }
    }

    /// The name given for `t`: `None` when the entity has no such type, `Some(None)` for the
    /// default.
    pub fn name_of(&self, t: EntityType) -> Option<Option<&str>> {
        self.entries()
            .into_iter()
            .find(|(et, _)| *et == t)
            .map(|(_, n)| n)
    }

    /// The quota keys this kind of entity takes (Kafka's `QuotaConfig` sets: the four client
    /// quotas for users and client ids, `connection_creation_rate` for addresses).
    pub fn keys(&self) -> &'static [QuotaKey] {
        match self {
            Self::Ip(_) => &[QuotaKey::ConnectionCreationRate],
            _ => &QuotaKey::CLIENT,
        }
    }

    /// Builds and checks an entity from the (type, name) pairs of a request or record, as
    /// Kafka's controller does: not empty, each type once and known, no empty name, an
    /// address alone and a valid address.
    pub fn from_entries<'a, I>(entries: I) -> Result<Self, QuotaError>
    where
        I: IntoIterator<Item = (&'a str, Option<&'a str>)>,
    {
        let mut user = None;
        let mut client = None;
        let mut ip = None;
        let mut any = false;
        for (type_name, name) in entries {
            any = true;
            let slot = match EntityType::parse(type_name) {
                Some(EntityType::User) => &mut user,
                Some(EntityType::ClientId) => &mut client,
                Some(EntityType::Ip) => &mut ip,
                None => {
                    return Err(QuotaError::invalid(format!(
                        "Unhandled client quota entity type: {type_name}"
                    )));
                }
            };
            if slot.is_some() {
                return Err(QuotaError::invalid(format!(
                    "Invalid client quota entity, duplicate entity entry {type_name}"
                )));
            }
            if name.is_some_and(str::is_empty) {
                return Err(QuotaError::invalid(format!(
                    "Empty {type_name} not supported"
                )));
            }
            *slot = Some(EntityName::from_option(name));
        }
        if !any {
            return Err(QuotaError::invalid("Invalid empty client quota entity"));
        }
        let entity = match (user, client, ip) {
            (None, None, Some(ip)) => Self::Ip(ip),
            (_, _, Some(_)) => {
                // Kafka's message lacks the space between "should" and "not".
                return Err(QuotaError::invalid(
                    "Invalid quota entity combination, IP entity should not be combined with \
                     User or ClientId",
                ));
            }
            (Some(u), Some(c), None) => Self::UserClientId(u, c),
            (Some(u), None, None) => Self::User(u),
            (None, Some(c), None) => Self::ClientId(c),
            (None, None, None) => {
                return Err(QuotaError::invalid("Invalid empty client quota entity"));
            }
        };
        entity.validate()?;
        Ok(entity)
    }

    /// Checks an entity built in code as [`QuotaEntity::from_entries`] checks a request's: no
    /// empty name, and an address that parses (Kafka also resolves host names; no name is
    /// resolved here).
    pub fn validate(&self) -> Result<(), QuotaError> {
        for (t, name) in self.entries() {
            if name.is_some_and(str::is_empty) {
                return Err(QuotaError::invalid(format!(
                    "Empty {} not supported",
                    t.name()
                )));
            }
            if let (EntityType::Ip, Some(addr)) = (t, name) {
                if addr.parse::<IpAddr>().is_err() {
                    return Err(QuotaError::invalid(format!(
                        "{addr} is not a valid IP or resolvable host."
                    )));
                }
            }
        }
        Ok(())
    }
}

impl fmt::Display for QuotaEntity {
    /// Kafka's `ClientQuotaEntity` text: `ClientQuotaEntity(entries={user=alice, client-id=null})`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClientQuotaEntity(entries={")?;
        for (i, (t, n)) in self.entries().into_iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{}={}", t.name(), n.unwrap_or("null"))?;
        }
        f.write_str("})")
    }
}

/// How Kafka types a quota value (its `ConfigDef` type), which decides what values it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// A whole number up to `i64::MAX` (the byte rates).
    Long,
    /// A whole number up to `i32::MAX` (the connection rate).
    Int,
    /// Any positive number.
    Double,
}

/// A quota key, with Kafka's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QuotaKey {
    /// `producer_byte_rate`: bytes per second a client may produce to this broker.
    ProducerByteRate,
    /// `consumer_byte_rate`: bytes per second a client may fetch from this broker.
    ConsumerByteRate,
    /// `request_percentage`: the time this broker may spend on a client's requests, in percent
    /// of one thread (KIP-124).
    RequestPercentage,
    /// `controller_mutation_rate`: partitions a second CreateTopics, CreatePartitions and
    /// DeleteTopics may create or delete (KIP-599).
    ControllerMutationRate,
    /// `connection_creation_rate`: connections per second from one address (KIP-612).
    ConnectionCreationRate,
}

impl QuotaKey {
    /// Every key, in a fixed order (the index of [`QuotaKey::index`]).
    pub const ALL: [Self; 5] = [
        Self::ProducerByteRate,
        Self::ConsumerByteRate,
        Self::RequestPercentage,
        Self::ControllerMutationRate,
        Self::ConnectionCreationRate,
    ];

    /// The keys of user and client-id entities.
    pub const CLIENT: [Self; 4] = [
        Self::ProducerByteRate,
        Self::ConsumerByteRate,
        Self::RequestPercentage,
        Self::ControllerMutationRate,
    ];

    /// Kafka's name of the key.
    pub fn name(self) -> &'static str {
        match self {
            Self::ProducerByteRate => "producer_byte_rate",
            Self::ConsumerByteRate => "consumer_byte_rate",
            Self::RequestPercentage => "request_percentage",
            Self::ControllerMutationRate => "controller_mutation_rate",
            Self::ConnectionCreationRate => "connection_creation_rate",
        }
    }

    /// The key of a name, `None` for one Kafka does not know.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The position of the key in [`QuotaKey::ALL`].
    pub fn index(self) -> usize {
        match self {
            Self::ProducerByteRate => 0,
            Self::ConsumerByteRate => 1,
            Self::RequestPercentage => 2,
            Self::ControllerMutationRate => 3,
            Self::ConnectionCreationRate => 4,
        }
    }

    /// How Kafka types the value.
    pub fn kind(self) -> ValueKind {
        match self {
            Self::ProducerByteRate | Self::ConsumerByteRate => ValueKind::Long,
            Self::RequestPercentage | Self::ControllerMutationRate => ValueKind::Double,
            Self::ConnectionCreationRate => ValueKind::Int,
        }
    }

    /// Checks a value as Kafka's controller does: above 0, whole and in range for the integer
    /// keys. Ours besides: not NaN, and finite for every key (Kafka takes NaN, and infinity for
    /// the double keys).
    pub fn validate(self, value: f64) -> Result<(), QuotaError> {
        let key = self.name();
        if value.is_nan() {
            return Err(QuotaError::invalid(format!("Quota {key} must be a number")));
        }
        if value <= 0.0 {
            return Err(QuotaError::invalid(format!(
                "Quota {key} must be greater than 0"
            )));
        }
        let integral = |too_large: &str, max: f64| {
            if value > max {
                Err(QuotaError::invalid(format!(
                    "Proposed value for {key} is too large for {too_large}."
                )))
            } else if (value % 1.0).abs() > 1e-6 {
                Err(QuotaError::invalid(format!(
                    "{key} cannot be a fractional value."
                )))
            } else {
                Ok(())
            }
        };
        match self.kind() {
            ValueKind::Long => integral("a LONG", i64::MAX as f64),
            ValueKind::Int => integral("an INT", f64::from(i32::MAX)),
            ValueKind::Double if value.is_infinite() => Err(QuotaError::invalid(format!(
                "Quota {key} must be a finite number"
            ))),
            ValueKind::Double => Ok(()),
        }
    }
}

impl fmt::Display for QuotaKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(r: Result<impl fmt::Debug, QuotaError>) -> String {
        let e = r.unwrap_err();
        assert_eq!(e.error_code().0, 42, "{e}");
        e.to_string()
    }

    #[test]
    fn entities_from_request_entries() {
        let e = QuotaEntity::from_entries([(USER, Some("alice")), (CLIENT_ID, None)]).unwrap();
        assert_eq!(
            e,
            QuotaEntity::UserClientId(EntityName::named("alice"), EntityName::Default)
        );
        assert_eq!(
            e.to_string(),
            "ClientQuotaEntity(entries={user=alice, client-id=null})"
        );
        // The order of the entries does not matter.
        let same = QuotaEntity::from_entries([(CLIENT_ID, None), (USER, Some("alice"))]).unwrap();
        assert_eq!(same, e);
        assert_eq!(
            QuotaEntity::from_entries([(IP, Some("::1"))]).unwrap(),
            QuotaEntity::Ip(EntityName::named("::1"))
        );
        assert_eq!(
            QuotaEntity::from_entries([(IP, None)]).unwrap(),
            QuotaEntity::Ip(EntityName::Default)
        );
    }

    #[test]
    fn entities_kafka_refuses() {
        assert_eq!(
            message(QuotaEntity::from_entries([])),
            "Invalid empty client quota entity"
        );
        assert_eq!(
            message(QuotaEntity::from_entries([("group", Some("g"))])),
            "Unhandled client quota entity type: group"
        );
        assert_eq!(
            message(QuotaEntity::from_entries([
                (USER, Some("a")),
                (USER, Some("b"))
            ])),
            "Invalid client quota entity, duplicate entity entry user"
        );
        assert_eq!(
            message(QuotaEntity::from_entries([(CLIENT_ID, Some(""))])),
            "Empty client-id not supported"
        );
        let m = message(QuotaEntity::from_entries([
            (IP, Some("1.2.3.4")),
            (USER, None),
        ]));
        assert!(m.starts_with("Invalid quota entity combination"), "{m}");
        assert!(
            message(QuotaEntity::from_entries([
                (CLIENT_ID, Some("c")),
                (IP, None)
            ]))
            .contains("IP entity")
        );
        assert_eq!(
            message(QuotaEntity::from_entries([(IP, Some("not-an-ip"))])),
            "not-an-ip is not a valid IP or resolvable host."
        );
        assert!(
            QuotaEntity::Ip(EntityName::named("300.1.1.1"))
                .validate()
                .is_err()
        );
    }

    #[test]
    fn keys_by_entity_kind() {
        let user = QuotaEntity::User(EntityName::Default);
        let ip = QuotaEntity::Ip(EntityName::Default);
        assert!(user.keys().contains(&QuotaKey::RequestPercentage));
        assert!(!user.keys().contains(&QuotaKey::ConnectionCreationRate));
        assert_eq!(ip.keys(), &[QuotaKey::ConnectionCreationRate]);
        for k in QuotaKey::ALL {
            assert_eq!(QuotaKey::parse(k.name()), Some(k));
            assert_eq!(QuotaKey::ALL[k.index()], k);
        }
        assert_eq!(QuotaKey::parse("producer-byte-rate"), None);
    }

    #[test]
    fn values_as_kafka_checks_them() {
        use QuotaKey::*;
        assert!(ProducerByteRate.validate(1024.0).is_ok());
        assert!(RequestPercentage.validate(12.5).is_ok());
        assert!(ConnectionCreationRate.validate(f64::from(i32::MAX)).is_ok());
        assert_eq!(
            message(ProducerByteRate.validate(0.0)),
            "Quota producer_byte_rate must be greater than 0"
        );
        assert_eq!(
            message(RequestPercentage.validate(-1.0)),
            "Quota request_percentage must be greater than 0"
        );
        assert_eq!(
            message(ConsumerByteRate.validate(10.5)),
            "consumer_byte_rate cannot be a fractional value."
        );
        assert_eq!(
            message(ConnectionCreationRate.validate(f64::from(i32::MAX) + 1.0)),
            "Proposed value for connection_creation_rate is too large for an INT."
        );
        assert_eq!(
            message(ProducerByteRate.validate(1e19)),
            "Proposed value for producer_byte_rate is too large for a LONG."
        );
        assert!(message(ProducerByteRate.validate(f64::INFINITY)).contains("too large"));
        assert!(message(RequestPercentage.validate(f64::INFINITY)).contains("finite"));
        assert!(message(RequestPercentage.validate(f64::NAN)).contains("must be a number"));
        // Within Kafka's tolerance of 1e-6 a value is whole.
        assert!(ProducerByteRate.validate(100.000_000_1).is_ok());
    }
}
