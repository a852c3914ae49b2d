//! The client quotas of a node: the values set with AlterClientQuotas, the use each client
//! makes of them, and the connection-creation limits (Kafka's `ClientQuotaManager`s and
//! `ConnectionQuotas`, built from [`crate::quota`]).
//!
//! The values are ClientQuotaRecords in `client-quotas.records` in the data directory
//! ([`crate::record_file`]), written before a change takes effect and read back at start. The
//! handlers record what each request costs ([`Quotas::record_produce`],
//! [`Quotas::record_fetch`], [`Quotas::record_request`]) and answer the throttle time; the
//! network front asks [`Quotas::admit`] for every accepted connection.
//!
//! A quota is set on a user (the principal's name: `alice` for `User:alice`), a client id,
//! both, or an address, each by name or as the default (KIP-55). Nothing is measured for a
//! client no quota applies to, and while no quota is set at all the checks are one atomic load.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, RwLock};

use kafka_protocol::metadata::MetadataRecord;

use crate::config::BrokerConfig;
use crate::error::BrokerError;
use crate::quota::{
    Admission, AlterEntry, ClientQuotaManager, ClientQuotaType, ConnectionRateLimiter,
    DescribedQuotas, FilterComponent, QuotaChange, QuotaError, QuotaStore, describe,
    request_percentage,
};
use crate::sync::{lock, read, write};

/// The file of a node's client quotas.
pub const FILE: &str = "client-quotas.records";

/// A node's client quotas.
#[derive(Debug)]
pub struct Quotas {
    path: Option<PathBuf>,
    store: RwLock<QuotaStore>,
    /// Whether any user / client id quota is set: requests skip every lock while none is.
    client_quotas: AtomicBool,
    produce: Mutex<ClientQuotaManager>,
    fetch: Mutex<ClientQuotaManager>,
    request: Mutex<ClientQuotaManager>,
    connections: Mutex<ConnectionRateLimiter>,
}

/// Who a request's use counts for: the principal's name and the request's client id (empty
/// when the header has none).
#[derive(Debug, Clone, Copy)]
pub struct Client<'a> {
    pub user: &'a str,
    pub client_id: &'a str,
}

impl Quotas {
    /// Quotas kept in memory only (tests and callers in process).
    pub fn in_memory(config: &BrokerConfig) -> Self {
        Self::with(None, QuotaStore::new(), config)
    }

    /// The quotas of data directory `dir`, read back from its file.
    pub fn open(dir: &Path, config: &BrokerConfig) -> Result<Self, BrokerError> {
        let path = dir.join(FILE);
        let mut store = QuotaStore::new();
        for record in crate::record_file::read(&path)? {
            if let MetadataRecord::ClientQuota(r) = record {
                let change = QuotaChange::from_record(&r).map_err(|e| {
                    BrokerError::Config(format!("{}: {}", path.display(), e.message()))
                })?;
                store.apply(&change);
            }
        }
        Ok(Self::with(Some(path), store, config))
    }

    fn with(path: Option<PathBuf>, store: QuotaStore, config: &BrokerConfig) -> Self {
        let q = &config.quota;
        let network = &config.network;
        let listeners: Vec<&str> = network.listeners.iter().map(|l| l.name.as_str()).collect();
        // Broker-to-broker connections are exempt from the broker-wide rate; ours come in on
        // the client listener, so it is exempt only when it is named as the inter-broker one.
        let inter_broker = network.inter_broker_listener_name.as_deref();
        let mut connections = ConnectionRateLimiter::new(q, &listeners, inter_broker);
        connections.load(&store);
        Self {
            path,
            client_quotas: AtomicBool::new(has_client_quotas(&store)),
            store: RwLock::new(store),
            produce: Mutex::new(ClientQuotaManager::new(ClientQuotaType::Produce, q)),
            fetch: Mutex::new(ClientQuotaManager::new(ClientQuotaType::Fetch, q)),
            request: Mutex::new(ClientQuotaManager::new(ClientQuotaType::Request, q)),
            connections: Mutex::new(connections),
        }
    }

    /// DescribeClientQuotas: the entities `components` match, with their values.
    pub fn describe(
        &self,
        components: &[FilterComponent],
        strict: bool,
    ) -> Result<Vec<DescribedQuotas>, QuotaError> {
        describe(&read(&self.store), components, strict)
    }

    /// AlterClientQuotas: checks every entry and, unless `validate_only`, applies the changes
    /// of those that pass (written to the file first). One result per entry.
    pub fn alter(
        &self,
        entries: &[AlterEntry],
        validate_only: bool,
    ) -> Result<Vec<Result<(), QuotaError>>, BrokerError> {
        let mut store = write(&self.store);
        let outcome = store.alter(entries);
        if validate_only || outcome.changes.is_empty() {
            return Ok(outcome.results);
        }
        let mut next = store.clone();
        for change in &outcome.changes {
            next.apply(change);
        }
        self.save(&next)?;
        let mut connections = lock(&self.connections);
        for change in &outcome.changes {
            connections.apply(change);
        }
        self.client_quotas
            .store(has_client_quotas(&next), Ordering::Release);
        *store = next;
        Ok(outcome.results)
    }

    /// Records the bytes of a Produce request and answers its throttle time in ms (0 when no
    /// `producer_byte_rate` applies or the client is within it).
    pub fn record_produce(&self, who: Client<'_>, bytes: usize, now_ms: i64) -> i32 {
        self.record(&self.produce, who, bytes as f64, now_ms)
    }

    /// Records the bytes of a consumer's Fetch answer and answers its throttle time in ms.
    pub fn record_fetch(&self, who: Client<'_>, bytes: usize, now_ms: i64) -> i32 {
        self.record(&self.fetch, who, bytes as f64, now_ms)
    }

    /// Takes back a fetch answer recorded with [`Self::record_fetch`] (Kafka does when the
    /// answer is throttled: it goes out empty).
    pub fn unrecord_fetch(&self, who: Client<'_>, bytes: usize, now_ms: i64) {
        if !self.client_quotas.load(Ordering::Acquire) {
            return;
        }
        let store = read(&self.store);
        let mut fetch = lock(&self.fetch);
        if let Some(quota) = store.resolve(fetch.kind().key(), who.user, who.client_id) {
            fetch.unrecord(&quota, bytes as f64, now_ms);
        }
    }

    /// The most bytes a consumer's fetch may answer without being throttled for sure (Kafka
    /// caps the fetch's `max_bytes` with it); `None` when no fetch quota applies.
    pub fn fetch_window_bytes(&self, who: Client<'_>) -> Option<usize> {
        if !self.client_quotas.load(Ordering::Acquire) {
            return None;
        }
        let store = read(&self.store);
        let max = lock(&self.fetch).max_value_in_window(&store, who.user, who.client_id)?;
        // A float in bytes; saturating casts.
        Some(max.max(1.0) as usize)
    }

    /// Records the time a request took on the broker against `request_percentage` and answers
    /// its throttle time in ms (capped at one quota window, as Kafka caps it).
    pub fn record_request(&self, who: Client<'_>, nanos: u64, now_ms: i64) -> i32 {
        self.record(&self.request, who, request_percentage(nanos), now_ms)
    }

    fn record(
        &self,
        manager: &Mutex<ClientQuotaManager>,
        who: Client<'_>,
        value: f64,
        now_ms: i64,
    ) -> i32 {
        if !self.client_quotas.load(Ordering::Acquire) {
            return 0;
        }
        let store = read(&self.store);
        lock(manager).record_for(&store, who.user, who.client_id, value, now_ms)
    }

    /// What the network front does with a connection from `ip` accepted on `listener`
    /// (`max.connection.creation.rate`, the address's `connection_creation_rate`).
    pub fn admit(&self, ip: IpAddr, listener: &str, now_ms: i64) -> Admission {
        lock(&self.connections).on_accept(ip, listener, now_ms)
    }

    /// The address check of a connection after the pause [`Admission::Delay`] asked for.
    pub fn admit_after_delay(&self, ip: IpAddr, listener: &str, now_ms: i64) -> Admission {
        lock(&self.connections).after_delay(ip, listener, now_ms)
    }

    fn save(&self, store: &QuotaStore) -> Result<(), BrokerError> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let records: Vec<MetadataRecord> = store
            .changes()
            .iter()
            .map(|c| MetadataRecord::ClientQuota(c.to_record()))
            .collect();
        crate::record_file::write(path, &records)
    }
}

/// Whether `store` holds a quota on users or client ids (addresses' quotas are the
/// connection limiter's).
fn has_client_quotas(store: &QuotaStore) -> bool {
    store
        .changes()
        .iter()
        .any(|c| !matches!(c.entity, crate::quota::QuotaEntity::Ip(_)))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn entry(user: &str, key: &str, value: Option<f64>) -> AlterEntry {
        AlterEntry {
            entity: vec![("user".into(), Some(user.into()))],
            ops: vec![(key.into(), value)],
        }
    }

    #[test]
    fn altered_quotas_throttle_and_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let config = BrokerConfig::default();
        let quotas = Quotas::open(dir.path(), &config).unwrap();
        let alice = Client {
            user: "alice",
            client_id: "c1",
        };
        assert_eq!(
            quotas.record_produce(alice, 10_000_000, 0),
            0,
            "no quota yet"
        );
        let results = quotas
            .alter(&[entry("alice", "producer_byte_rate", Some(1000.0))], true)
            .unwrap();
        assert!(results[0].is_ok());
        assert_eq!(
            quotas.record_produce(alice, 10_000_000, 0),
            0,
            "validate_only changes nothing"
        );
        quotas
            .alter(&[entry("alice", "producer_byte_rate", Some(1000.0))], false)
            .unwrap();
        let throttle = quotas.record_produce(alice, 100_000, 1_000);
        assert!(throttle > 0, "100 kB against 1 kB/s: {throttle}");
        let bob = Client {
            user: "bob",
            client_id: "c1",
        };
        assert_eq!(
            quotas.record_produce(bob, 100_000, 1_000),
            0,
            "bob has none"
        );

        let again = Quotas::open(dir.path(), &config).unwrap();
        let all = again.describe(&[], false).unwrap();
        assert_eq!(all.len(), 1);
        assert!(again.record_produce(alice, 100_000, 1_000) > 0);
        again
            .alter(&[entry("alice", "producer_byte_rate", None)], false)
            .unwrap();
        let third = Quotas::open(dir.path(), &config).unwrap();
        assert!(third.describe(&[], false).unwrap().is_empty());
        assert_eq!(third.record_produce(alice, 100_000, 1_000), 0);
    }

    #[test]
    fn an_invalid_entry_is_refused_and_not_stored() {
        let dir = tempfile::tempdir().unwrap();
        let quotas = Quotas::open(dir.path(), &BrokerConfig::default()).unwrap();
        let results = quotas
            .alter(
                &[
                    entry("alice", "producer_byte_rate", Some(-5.0)),
                    entry("bob", "no_such_key", Some(5.0)),
                ],
                false,
            )
            .unwrap();
        assert!(results.iter().all(Result::is_err), "{results:?}");
        assert!(!dir.path().join(FILE).exists());
    }
}
