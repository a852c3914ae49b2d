//! Replication settings (`replica.*`, `num.replica.fetchers`) with Kafka's defaults, and the
//! replica selector of fetches from followers (`replica.selector.class`). Their keys are in
//! the broker key table ([`super::keys`]).

use super::parse::Why;

/// How followers fetch and how leaders judge them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicationConfig {
    /// `replica.lag.time.max.ms`: a follower that has not caught up with the leader's log end
    /// for this long leaves the ISR.
    pub lag_time_max_ms: i64,
    /// `num.replica.fetchers`: fetcher connections per leader broker; a partition always
    /// goes to the same one.
    pub num_fetchers: usize,
    /// `replica.fetch.max.bytes`: the most record data asked for per partition (at least one
    /// batch is sent whatever its size).
    pub fetch_max_bytes: i32,
    /// `replica.fetch.response.max.bytes`: the most record data asked for per fetch.
    pub fetch_response_max_bytes: i32,
    /// `replica.fetch.wait.max.ms`: how long a follower's fetch waits at the leader for data.
    pub fetch_wait_max_ms: i32,
    /// `replica.fetch.min.bytes`: the data a follower's fetch waits for.
    pub fetch_min_bytes: i32,
    /// `replica.fetch.backoff.ms`: the pause after a failed fetch.
    pub fetch_backoff_ms: u64,
    /// `replica.selector.class`: how a partition leader picks the replica a consumer should
    /// read from (KIP-392); `None` (Kafka's default): the leader itself, always.
    pub replica_selector: Option<ReplicaSelectorClass>,
}

impl Default for ReplicationConfig {
    fn default() -> Self {
        Self {
            lag_time_max_ms: 30_000,
            num_fetchers: 1,
            fetch_max_bytes: 1 << 20,
            fetch_response_max_bytes: 10 << 20,
            fetch_wait_max_ms: 500,
            fetch_min_bytes: 1,
            fetch_backoff_ms: 1_000,
            replica_selector: None,
        }
    }
}

impl ReplicationConfig {
    /// Checks the settings against each other (Kafka's rule: a follower's fetch must come
    /// back well within the time after which it is judged lagging).
    pub fn validate(&self) -> Result<(), String> {
        if i64::from(self.fetch_wait_max_ms) >= self.lag_time_max_ms {
            return Err(format!(
                "replica.fetch.wait.max.ms ({}) must be less than replica.lag.time.max.ms ({})",
                self.fetch_wait_max_ms, self.lag_time_max_ms
            ));
        }
        Ok(())
    }
}

/// The replica selectors `replica.selector.class` can name (Kafka's class names; a broker
/// cannot load classes, so only the ones Kafka ships are known).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplicaSelectorClass {
    /// `org.apache.kafka.common.replica.RackAwareReplicaSelector`: a consumer that names its
    /// rack (`client.rack`) reads from an in-sync replica in that rack, the leader if it is
    /// there (see `crate::replica::selector`).
    RackAware,
}

impl ReplicaSelectorClass {
    /// Kafka's class name of the rack-aware selector.
    pub const RACK_AWARE: &'static str = "org.apache.kafka.common.replica.RackAwareReplicaSelector";

    /// The selector a `replica.selector.class` value names; empty is none (the leader only).
    pub fn parse(v: &str) -> Result<Option<Self>, Why> {
        match v.trim() {
            "" => Ok(None),
            Self::RACK_AWARE => Ok(Some(Self::RackAware)),
            _ => Err(format!(
                "unknown replica selector; the one known is {} (empty for reads from the \
                 leader only)",
                Self::RACK_AWARE
            )),
        }
    }

    /// The class name, as DescribeConfigs shows it.
    pub fn class_name(self) -> &'static str {
        match self {
            Self::RackAware => Self::RACK_AWARE,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ReplicationConfig;
    use crate::config::{Applied, BrokerConfig};

    #[test]
    fn keys_are_kafkas_and_checked() {
        let mut b = BrokerConfig::default();
        assert_eq!(b.replication.lag_time_max_ms, 30_000);
        for (k, v) in [
            ("replica.lag.time.max.ms", "4000"),
            ("num.replica.fetchers", "3"),
            ("replica.fetch.max.bytes", "65536"),
            ("replica.fetch.response.max.bytes", "131072"),
            ("replica.fetch.wait.max.ms", "100"),
            ("replica.fetch.min.bytes", "10"),
            ("replica.fetch.backoff.ms", "50"),
        ] {
            assert_eq!(b.apply(k, v).unwrap(), Applied::Known, "{k}");
        }
        assert_eq!(
            b.replication,
            ReplicationConfig {
                lag_time_max_ms: 4000,
                num_fetchers: 3,
                fetch_max_bytes: 65536,
                fetch_response_max_bytes: 131072,
                fetch_wait_max_ms: 100,
                fetch_min_bytes: 10,
                fetch_backoff_ms: 50,
                replica_selector: None,
            }
        );
        b.replication.validate().unwrap();
        assert_eq!(
            b.apply("replica.selector.other", "x").unwrap(),
            Applied::Unknown
        );
        assert!(
            b.apply("num.replica.fetchers", "0")
                .unwrap_err()
                .to_string()
                .contains("at least 1")
        );
        assert!(b.apply("replica.lag.time.max.ms", "abc").is_err());
        b.apply("replica.fetch.wait.max.ms", "5000").unwrap();
        assert!(
            b.replication
                .validate()
                .unwrap_err()
                .contains("replica.lag.time.max.ms")
        );
    }
}
