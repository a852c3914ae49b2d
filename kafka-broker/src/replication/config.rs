//! Replication settings, with Kafka's key names and defaults.

use crate::group::config::{at_least, number};

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
        }
    }
}

impl ReplicationConfig {
    /// Applies one `key=value`. `Ok(false)` for keys this config does not own.
    pub fn apply(&mut self, key: &str, value: &str) -> Result<bool, String> {
        match key.trim() {
            k @ "replica.lag.time.max.ms" => {
                self.lag_time_max_ms = at_least(k, number(k, value)?, 1)?
            }
            k @ "num.replica.fetchers" => self.num_fetchers = at_least(k, number(k, value)?, 1)?,
            k @ "replica.fetch.max.bytes" => {
                self.fetch_max_bytes = at_least(k, number(k, value)?, 0)?
            }
            k @ "replica.fetch.response.max.bytes" => {
                self.fetch_response_max_bytes = at_least(k, number(k, value)?, 0)?
            }
            k @ "replica.fetch.wait.max.ms" => {
                self.fetch_wait_max_ms = at_least(k, number(k, value)?, 0)?
            }
            k @ "replica.fetch.min.bytes" => {
                self.fetch_min_bytes = at_least(k, number(k, value)?, 1)?
            }
            k @ "replica.fetch.backoff.ms" => {
                self.fetch_backoff_ms = at_least(k, number(k, value)?, 0)?
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

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

#[cfg(test)]
mod tests {
    use super::ReplicationConfig;

    #[test]
    fn keys_are_kafkas_and_checked() {
        let mut c = ReplicationConfig::default();
        assert_eq!(c.lag_time_max_ms, 30_000);
        for (k, v) in [
            ("replica.lag.time.max.ms", "4000"),
            ("num.replica.fetchers", "3"),
            ("replica.fetch.max.bytes", "65536"),
            ("replica.fetch.response.max.bytes", "131072"),
            ("replica.fetch.wait.max.ms", "100"),
            ("replica.fetch.min.bytes", "10"),
            ("replica.fetch.backoff.ms", "50"),
        ] {
            assert_eq!(c.apply(k, v), Ok(true), "{k}");
        }
        assert_eq!(
            c,
            ReplicationConfig {
                lag_time_max_ms: 4000,
                num_fetchers: 3,
                fetch_max_bytes: 65536,
                fetch_response_max_bytes: 131072,
                fetch_wait_max_ms: 100,
                fetch_min_bytes: 10,
                fetch_backoff_ms: 50,
            }
        );
        c.validate().unwrap();
        assert_eq!(c.apply("replica.selector.other", "x"), Ok(false));
        assert!(
            c.apply("num.replica.fetchers", "0")
                .unwrap_err()
                .contains("at least 1")
        );
        assert!(c.apply("replica.lag.time.max.ms", "abc").is_err());
        c.apply("replica.fetch.wait.max.ms", "5000").unwrap();
        assert!(
            c.validate()
                .unwrap_err()
                .contains("replica.lag.time.max.ms")
        );
    }
}
