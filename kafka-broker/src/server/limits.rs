//! Connection limits of the accept loop: connections per peer address
//! (`max.connections.per.ip`, `max.connections.per.ip.overrides`), and the refusal log, which
//! says once per interval how many connections were refused instead of once per connection (a
//! client looping on reconnects would otherwise fill the log).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::rate_limit::RateLimit;

/// Open connections per peer address.
#[derive(Debug)]
pub(crate) struct PerIp {
    default: usize,
    overrides: HashMap<IpAddr, usize>,
    open: Mutex<HashMap<IpAddr, usize>>,
}

/// One connection counted against its address; released when dropped.
#[derive(Debug)]
pub(crate) struct IpSlot {
    limits: Arc<PerIp>,
    ip: IpAddr,
}

impl PerIp {
    pub(crate) fn new(default: usize, overrides: &[(IpAddr, usize)]) -> Self {
        Self {
            default,
            overrides: overrides.iter().copied().collect(),
            open: Mutex::new(HashMap::new()),
        }
    }

    /// The limit for `ip`.
    pub(crate) fn limit(&self, ip: IpAddr) -> usize {
        self.overrides.get(&ip).copied().unwrap_or(self.default)
    }

    /// A slot for one more connection from `ip`, or `None` when it holds its limit.
    pub(crate) fn acquire(self: &Arc<Self>, ip: IpAddr) -> Option<IpSlot> {
        let limit = self.limit(ip);
        let mut open = crate::sync::lock(&self.open);
        let n = open.entry(ip).or_insert(0);
        if *n >= limit {
            if *n == 0 {
                open.remove(&ip);
            }
            return None;
        }
        *n += 1;
        Some(IpSlot {
            limits: Arc::clone(self),
            ip,
        })
    }
}

impl Drop for IpSlot {
    fn drop(&mut self) {
        let mut open = crate::sync::lock(&self.limits.open);
        if let Some(n) = open.get_mut(&self.ip) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

/// Failed accepts (out of descriptors: EMFILE, ENFILE), logged at most once per interval with
/// a count; the accept loop backs off and goes on, and existing connections are served.
#[derive(Debug)]
pub(crate) struct AcceptFailureLog {
    every: Duration,
    last: Option<Instant>,
    unlogged: u64,
}

impl AcceptFailureLog {
    pub(crate) fn new(every: Duration) -> Self {
        Self {
            every,
            last: None,
            unlogged: 0,
        }
    }

    pub(crate) fn failed(&mut self, error: &std::io::Error) {
        self.unlogged += 1;
        let now = Instant::now();
        if self
            .last
            .is_some_and(|l| now.duration_since(l) < self.every)
        {
            return;
        }
        tracing::warn!(
            %error,
            failed = self.unlogged,
            "accept failed ({} times since the last report); retrying, existing connections \
             are served (out of descriptors: raise the limit, or lower max.connections or \
             log.open.files.max)",
            self.unlogged
        );
        self.last = Some(now);
        self.unlogged = 0;
    }
}

/// Refused connections, logged at most once per interval with a count.
#[derive(Debug)]
pub(crate) struct RefusalLog(RateLimit);

impl RefusalLog {
    pub(crate) fn new(every: Duration) -> Self {
        Self(RateLimit::new(every))
    }

    /// A connection from `peer` was refused by the limit named `key` (at `max`).
    pub(crate) fn refused(&mut self, peer: SocketAddr, key: &str, max: usize) {
        let Some(refused) = self.0.hit(Instant::now()) else {
            return;
        };
        tracing::warn!(
            %peer,
            limit = key,
            max,
            refused,
            "refusing connections over {key} ({refused} refused since the last report)"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_ip_slots_are_counted_and_released() {
        let a = IpAddr::from([127, 0, 0, 1]);
        let b = IpAddr::from([127, 0, 0, 2]);
        let limits = Arc::new(PerIp::new(2, &[(b, 3)]));
        let s1 = limits.acquire(a);
        let s2 = limits.acquire(a);
        assert!(s1.is_some() && s2.is_some());
        assert!(limits.acquire(a).is_none(), "a third from the same address");
        let bs: Vec<_> = (0..3).map(|_| limits.acquire(b)).collect();
        assert!(bs.iter().all(Option::is_some), "the override allows 3");
        assert!(limits.acquire(b).is_none());
        drop(s1);
        assert!(
            limits.acquire(a).is_some(),
            "a closed connection frees its slot"
        );
        drop(bs);
        assert_eq!(crate::sync::lock(&limits.open).get(&b), None);
        let none = Arc::new(PerIp::new(5, &[(a, 0)]));
        assert!(
            none.acquire(a).is_none(),
            "an override of 0 refuses every connection"
        );
    }
}
