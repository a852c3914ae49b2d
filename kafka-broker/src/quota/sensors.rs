//! The usage state quotas keep, bounded: one entry per tracked client (or address), forgotten
//! when idle for longer than its expiry (Kafka expires quota sensors after an hour without a
//! record) or, past the configured count, least recently used first. Recording and evicting are
//! O(log n).

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

/// Kafka's inactive quota sensor expiration: one hour.
pub const INACTIVE_SENSOR_EXPIRATION_MS: i64 = 3_600_000;

#[derive(Debug)]
struct Slot<V> {
    value: V,
    stamp: (i64, u64),
}

/// A map whose entries expire when idle and whose size is bounded.
#[derive(Debug)]
pub(crate) struct Sensors<K, V> {
    map: HashMap<K, Slot<V>>,
    /// (last use, sequence) of every entry, oldest first.
    order: BTreeMap<(i64, u64), K>,
    next: u64,
    max: usize,
    idle_ms: i64,
}

impl<K: Clone + Eq + Hash, V> Sensors<K, V> {
    /// At most `max` entries (at least 1), each dropped after `idle_ms` without use.
    pub(crate) fn new(max: usize, idle_ms: i64) -> Self {
        Self {
            map: HashMap::new(),
            order: BTreeMap::new(),
            next: 0,
            max: max.max(1),
            idle_ms,
        }
    }

    /// The entry of `key`, made with `make` when absent (after dropping expired entries and, at
    /// the bound, the least recently used one); marked used at `now_ms`.
    pub(crate) fn use_or_insert(
        &mut self,
        key: &K,
        now_ms: i64,
        make: impl FnOnce() -> V,
    ) -> &mut V {
        self.expire(now_ms);
        let stamp = (now_ms, self.next);
        self.next = self.next.wrapping_add(1);
        if let Some(slot) = self.map.get(key) {
            self.order.remove(&slot.stamp);
        } else {
            while self.map.len() >= self.max {
                let Some((_, oldest)) = self.order.pop_first() else {
                    break;
                };
                self.map.remove(&oldest);
            }
        }
        self.order.insert(stamp, key.clone());
        let slot = self.map.entry(key.clone()).or_insert_with(|| Slot {
            value: make(),
            stamp,
        });
        slot.stamp = stamp;
        &mut slot.value
    }

    /// The entry of `key`, if tracked, without marking it used.
    pub(crate) fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        self.map.get_mut(key).map(|s| &mut s.value)
    }

    /// Drops the entries idle for longer than the expiry at `now_ms`.
    pub(crate) fn expire(&mut self, now_ms: i64) {
        while let Some((&(last, _), _)) = self.order.first_key_value() {
            if now_ms.saturating_sub(last) <= self.idle_ms {
                break;
            }
            if let Some((_, key)) = self.order.pop_first() {
                self.map.remove(&key);
            }
        }
    }

    /// Entries tracked.
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_entries_expire_after_the_expiry_only() {
        let mut s: Sensors<&str, u32> = Sensors::new(10, 1_000);
        *s.use_or_insert(&"a", 0, || 0) += 1;
        *s.use_or_insert(&"b", 500, || 0) += 1;
        s.expire(1_000);
        assert_eq!(
            s.len(),
            2,
            "idle exactly the expiry: kept (Kafka expires after it)"
        );
        s.expire(1_001);
        assert_eq!(s.len(), 1);
        assert!(s.get_mut(&"a").is_none());
        // Use keeps an entry alive.
        *s.use_or_insert(&"b", 1_400, || 0) += 1;
        s.expire(2_300);
        assert_eq!(s.get_mut(&"b").copied(), Some(2));
    }

    #[test]
    fn the_least_recently_used_goes_at_the_bound() {
        let mut s: Sensors<u32, u32> = Sensors::new(3, i64::MAX);
        for k in 0..3 {
            s.use_or_insert(&k, i64::from(k), || k);
        }
        s.use_or_insert(&0, 10, || 99);
        s.use_or_insert(&7, 11, || 7);
        assert_eq!(s.len(), 3);
        assert!(s.get_mut(&1).is_none(), "1 was the least recently used");
        assert_eq!(s.get_mut(&0).copied(), Some(0), "0 kept its value");
        for k in 100..10_000 {
            s.use_or_insert(&k, 20, || k);
        }
        assert_eq!(s.len(), 3);
        assert_eq!(s.order.len(), 3);
    }
}
