//! Connection-creation rates (KIP-612), as Kafka's `ConnectionQuotas` enforces them:
//!
//! - broker-wide, `max.connection.creation.rate` counts the connections accepted on every
//!   listener but the inter-broker one (when there is more than one listener), and each
//!   listener may have its own rate (`listener.name.<l>.max.connection.creation.rate`). Over
//!   either, the accept loop *pauses* before going on with the connection: the longer of the
//!   two throttle times, capped at one quota window;
//! - per address, the `connection_creation_rate` quota of an `ip` entity (or of the default
//!   `ip` entity). A connection over it is *refused*: not served, and closed once its throttle
//!   time (capped at one quota window) has passed; it is taken back from the address's,
//!   listener's and broker's counts, so it does not slow others.
//!
//! The accept loop asks [`ConnectionRateLimiter::on_accept`] for every accepted socket:
//! [`Admission::Accept`] serve it; [`Admission::Delay`] pause the loop that long (accept
//! nothing else on the listener), then ask [`ConnectionRateLimiter::after_delay`] (the address
//! check, done after the pause as Kafka does it); [`Admission::Refuse`] keep the socket unread
//! and close it after the time given. The address check comes before `max.connections.per.ip`,
//! as in Kafka. Usage per address is bounded in count and forgotten after an hour idle.

use std::collections::HashMap;
use std::net::IpAddr;

use super::entity::{EntityName, QuotaEntity, QuotaKey};
use super::rate::{self, SampledRate, WindowConfig};
use super::sensors::{INACTIVE_SENSOR_EXPIRATION_MS, Sensors};
use super::store::{QuotaChange, QuotaStore};
use crate::config::QuotaConfig;

/// Kafka's "no limit" for connection rates (`Integer.MAX_VALUE`).
pub const UNLIMITED_RATE: u32 = i32::MAX as u32;

/// What the accept loop does with a new connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Serve it.
    Accept,
    /// The broker or listener rate is exceeded: pause accepting for this many milliseconds,
    /// then call [`ConnectionRateLimiter::after_delay`] for this connection.
    Delay(u64),
    /// The address's rate is exceeded: do not serve it; close it after this many milliseconds.
    Refuse {
        /// When to close, from now.
        close_after_ms: u64,
    },
}

#[derive(Debug)]
struct ListenerRate {
    rate: u32,
    sensor: SampledRate,
}

/// The connection-creation rate limits of one broker.
#[derive(Debug)]
pub struct ConnectionRateLimiter {
    window: WindowConfig,
    max_throttle_ms: i64,
    broker_rate: u32,
    broker: SampledRate,
    listeners: HashMap<String, ListenerRate>,
    inter_broker_listener: Option<String>,
    ip_default: u32,
    ip_rates: HashMap<IpAddr, u32>,
    ip_sensors: Sensors<IpAddr, SampledRate>,
}

impl ConnectionRateLimiter {
    /// Limits for the `listeners` of a broker (`inter_broker_listener` is exempt from the
    /// broker-wide rate when there are others), with `max.connection.creation.rate` and the
    /// windows of `config`. No address has a limit until one is set.
    pub fn new(
        config: &QuotaConfig,
        listeners: &[&str],
        inter_broker_listener: Option<&str>,
    ) -> Self {
        let window = WindowConfig::from_config(config);
        let mut this = Self {
            window,
            max_throttle_ms: window.window_ms(),
            broker_rate: config.max_connection_creation_rate,
            broker: SampledRate::new(),
            listeners: HashMap::new(),
            inter_broker_listener: inter_broker_listener.map(str::to_owned),
            ip_default: UNLIMITED_RATE,
            ip_rates: HashMap::new(),
            ip_sensors: Sensors::new(config.sensors_max, INACTIVE_SENSOR_EXPIRATION_MS),
        };
        for l in listeners {
            this.add_listener(l);
        }
        this
    }

    /// Adds a listener (no rate of its own).
    pub fn add_listener(&mut self, listener: &str) {
        self.listeners
            .entry(listener.to_owned())
            .or_insert_with(|| ListenerRate {
                rate: UNLIMITED_RATE,
                sensor: SampledRate::new(),
            });
    }

    /// Sets `max.connection.creation.rate` (connections a second, broker-wide).
    pub fn set_broker_rate(&mut self, rate: u32) {
        self.broker_rate = rate;
    }

    /// Sets (`Some`) or clears a listener's own rate
    /// (`listener.name.<l>.max.connection.creation.rate`).
    pub fn set_listener_rate(&mut self, listener: &str, rate: Option<u32>) {
        self.add_listener(listener);
        if let Some(l) = self.listeners.get_mut(listener) {
            l.rate = rate.unwrap_or(UNLIMITED_RATE);
        }
    }

    /// Sets or clears (`None`) the `connection_creation_rate` of one address, or of the default
    /// address (`ip` `None`).
    pub fn set_ip_rate(&mut self, ip: Option<IpAddr>, rate: Option<u32>) {
        match (ip, rate) {
            (Some(ip), Some(r)) => {
                self.ip_rates.insert(ip, r);
            }
            (Some(ip), None) => {
                self.ip_rates.remove(&ip);
            }
            (None, r) => self.ip_default = r.unwrap_or(UNLIMITED_RATE),
        }
    }

    /// Follows one quota change: an address's `connection_creation_rate` set or removed.
    /// Other changes are not about connections and are ignored, as is an address that does not
    /// parse (the store refuses those).
    pub fn apply(&mut self, change: &QuotaChange) {
        if change.key != QuotaKey::ConnectionCreationRate {
            return;
        }
        let QuotaEntity::Ip(name) = &change.entity else {
            return;
        };
        let ip = match name {
            EntityName::Default => None,
            EntityName::Named(n) => match n.parse() {
                Ok(ip) => Some(ip),
                Err(_) => return,
            },
        };
        self.set_ip_rate(ip, change.value.map(rate_of));
    }

    /// Takes every address rate of `store` (after a restart or a snapshot).
    pub fn load(&mut self, store: &QuotaStore) {
        self.ip_rates.clear();
        self.ip_default = UNLIMITED_RATE;
        for change in store.changes() {
            self.apply(&change);
        }
    }

    /// The connection rate that applies to `ip`: its own, else the default address's; `None`
    /// when it has none (Kafka's `Integer.MAX_VALUE`).
    pub fn ip_rate(&self, ip: IpAddr) -> Option<u32> {
        let rate = self.ip_rates.get(&ip).copied().unwrap_or(self.ip_default);
        (rate != UNLIMITED_RATE).then_some(rate)
    }

    /// A connection from `ip` was accepted on `listener` at `now_ms`: counts it against the
    /// broker and listener rates and, when neither is exceeded, checks the address
    /// ([`ConnectionRateLimiter::after_delay`]).
    pub fn on_accept(&mut self, ip: IpAddr, listener: &str, now_ms: i64) -> Admission {
        self.add_listener(listener);
        let window = self.window;
        let mut throttle = 0;
        if !self.is_protected(listener) {
            throttle = rate::record_and_throttle(
                &mut self.broker,
                &window,
                f64::from(self.broker_rate),
                1.0,
                now_ms,
            )
            .min(self.max_throttle_ms);
        }
        if let Some(l) = self.listeners.get_mut(listener) {
            let t =
                rate::record_and_throttle(&mut l.sensor, &window, f64::from(l.rate), 1.0, now_ms)
                    .min(self.max_throttle_ms);
            throttle = throttle.max(t);
        }
        if throttle > 0 {
            return Admission::Delay(u64::try_from(throttle).unwrap_or(0));
        }
        self.after_delay(ip, listener, now_ms)
    }

    /// The address check of a connection, after the pause [`Admission::Delay`] asked for (or
    /// at once when there was none): [`Admission::Accept`] or [`Admission::Refuse`].
    pub fn after_delay(&mut self, ip: IpAddr, listener: &str, now_ms: i64) -> Admission {
        let Some(limit) = self.ip_rate(ip) else {
            return Admission::Accept;
        };
        let window = self.window;
        let sensor = self.ip_sensors.use_or_insert(&ip, now_ms, SampledRate::new);
        let throttle = rate::record_and_throttle(sensor, &window, f64::from(limit), 1.0, now_ms)
            .min(self.max_throttle_ms);
        if throttle <= 0 {
            return Admission::Accept;
        }
        // Not accepted: taken back from every count it was recorded in.
        sensor.record(&window, -1.0, now_ms);
        if !self.is_protected(listener) {
            self.broker.record(&window, -1.0, now_ms);
        }
        if let Some(l) = self.listeners.get_mut(listener) {
            l.sensor.record(&window, -1.0, now_ms);
        }
        Admission::Refuse {
            close_after_ms: u64::try_from(throttle).unwrap_or(0),
        }
    }

    /// Addresses whose usage is tracked.
    pub fn tracked_ips(&self) -> usize {
        self.ip_sensors.len()
    }

    /// The inter-broker listener is exempt from the broker-wide rate when the broker has more
    /// than one listener (Kafka's protected listener).
    fn is_protected(&self, listener: &str) -> bool {
        self.inter_broker_listener.as_deref() == Some(listener) && self.listeners.len() > 1
    }
}

/// A stored `connection_creation_rate` as a rate (Kafka takes the integer part).
fn rate_of(v: f64) -> u32 {
    // `as` saturates: negative values and NaN give 0, values past u32::MAX give u32::MAX.
    (v as u32).min(UNLIMITED_RATE)
}
