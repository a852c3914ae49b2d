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
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, RwLock};

use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::{
    AlterClientQuotasRequest, AlterClientQuotasResponse, alter_client_quotas_response as alter_resp,
};
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
    /// In a cluster: the offset of the metadata image the values were last taken from.
    image_offset: AtomicU64,
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
            image_offset: AtomicU64::new(0),
        }
    }

    /// The quotas of a node of a cluster: none until the metadata image brings them
    /// ([`Self::follow_image`]); no file is read or written (the metadata log keeps them).
    pub fn clustered(config: &BrokerConfig) -> Self {
        Self::in_memory(config)
    }

    /// Takes the quota values of the metadata image at `offset` (a node of a cluster): they
    /// replace every value held, and the connection limits follow. What clients used so far
    /// is kept. An image older than the last one taken changes nothing.
    pub fn follow_image(&self, offset: u64, values: &QuotaStore) {
        let mut store = write(&self.store);
        if self.image_offset.load(Ordering::Acquire) > offset {
            return;
        }
        self.image_offset.store(offset, Ordering::Release);
        if *store == *values {
            return;
        }
        store.clone_from(values);
        lock(&self.connections).load(&store);
        self.client_quotas
            .store(has_client_quotas(&store), Ordering::Release);
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

/// The entries of an AlterClientQuotas request as the quota store checks them.
pub fn alter_entries(r: &AlterClientQuotasRequest) -> Vec<AlterEntry> {
    r.entries
        .iter()
        .map(|e| AlterEntry {
            entity: e
                .entity
                .iter()
                .map(|d| {
                    (
                        d.entity_type.to_string(),
                        d.entity_name.as_ref().map(ToString::to_string),
                    )
                })
                .collect(),
            ops: e
                .ops
                .iter()
                .map(|o| (o.key.to_string(), (!o.remove).then_some(o.value)))
                .collect(),
        })
        .collect()
}

/// Each entry's code and message from the store's checks.
pub fn entry_results(results: Vec<Result<(), QuotaError>>) -> Vec<(ErrorCode, Option<String>)> {
    results
        .into_iter()
        .map(|res| match res {
            Ok(()) => (ErrorCode::NONE, None),
            Err(e) => (e.error_code(), Some(e.message().to_owned())),
        })
        .collect()
}

/// The AlterClientQuotas answer: each entry of `r` with its entity echoed and its result.
pub fn alter_response(
    r: &AlterClientQuotasRequest,
    results: Vec<(ErrorCode, Option<String>)>,
) -> AlterClientQuotasResponse {
    AlterClientQuotasResponse {
        entries: r
            .entries
            .iter()
            .zip(results)
            .map(|(entry, (code, message))| alter_resp::EntryData {
                error_code: code.0,
                error_message: message.map(KStr::from),
                entity: entry
                    .entity
                    .iter()
                    .map(|e| alter_resp::EntityData {
                        entity_type: e.entity_type.clone(),
                        entity_name: e.entity_name.clone(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
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

    #[test]
    fn a_clustered_node_follows_the_image_values_and_connection_limits() {
        let quotas = Quotas::clustered(&BrokerConfig::default());
        let alice = Client {
            user: "alice",
            client_id: "c1",
        };
        let mut image = QuotaStore::new();
        let outcome = image.alter(&[
            entry("alice", "producer_byte_rate", Some(1000.0)),
            AlterEntry {
                entity: vec![("ip".into(), Some("10.0.0.1".into()))],
                ops: vec![("connection_creation_rate".into(), Some(1.0))],
            },
        ]);
        assert!(outcome.results.iter().all(Result::is_ok));
        for c in &outcome.changes {
            image.apply(c);
        }
        quotas.follow_image(3, &image);
        assert!(quotas.record_produce(alice, 100_000, 1_000) > 0);
        assert_eq!(quotas.describe(&[], false).unwrap().len(), 2);
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        assert_eq!(lock(&quotas.connections).ip_rate(ip), Some(1));
        // An older image changes nothing; a newer empty one removes everything.
        quotas.follow_image(2, &QuotaStore::new());
        assert_eq!(quotas.describe(&[], false).unwrap().len(), 2);
        quotas.follow_image(4, &QuotaStore::new());
        assert!(quotas.describe(&[], false).unwrap().is_empty());
        assert_eq!(quotas.record_produce(alice, 100_000, 2_000), 0);
        assert_eq!(lock(&quotas.connections).ip_rate(ip), None);
    }
}
