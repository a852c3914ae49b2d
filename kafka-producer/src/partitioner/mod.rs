//! Partitioners: which partition of its topic a record goes to.
//!
//! A record with an explicit partition goes there. Otherwise the configured [`Partitioner`]
//! (`partitioner.class`, see [`by_name`]) is asked; when it has no opinion (returns `None`,
//! as the default partitioner does for records without a key) the producer's built-in
//! [`StickyPartitioner`] picks the partition.
//!
//! | name (`partitioner.class`) | keyed record | record without key |
//! |---|---|---|
//! | `default`, empty, Java's `...internals.DefaultPartitioner`, librdkafka's `murmur2_random` | murmur2 over all partitions | sticky |
//! | Java's `...UniformStickyPartitioner` | sticky | sticky |
//! | Java's `...RoundRobinPartitioner` | next in turn | next in turn |
//! | librdkafka's `murmur2` | murmur2 | murmur2 of the empty key |
//! | librdkafka's `consistent` | CRC-32 | CRC-32 of the empty key (partition 0) |
//! | librdkafka's `consistent_random` | CRC-32; an empty key sticky | sticky |
//! | librdkafka's `fnv1a` | FNV-1a | FNV-1a of the empty key |
//! | librdkafka's `fnv1a_random` | FNV-1a | sticky |
//! | librdkafka's `random` | random | sticky |

mod hash;
mod rng;
mod sticky;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

pub use hash::{
    crc32, fnv1a, murmur2, partition_for_key, partition_for_key_crc32, partition_for_key_fnv1a,
    to_positive,
};
pub use sticky::{StickyPartitioner, StickyTopic};

use rng::Rng;

/// What a partitioner knows of a topic: its partition count and the partitions whose leader
/// is known (sorted; empty when none is).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopicPartitions<'a> {
    pub topic: &'a str,
    /// All partitions of the topic, `0..count`.
    pub count: i32,
    /// The partitions with a known leader, sorted.
    pub available: &'a [i32],
}

/// Chooses the partition of a record that has none set (`partitioner.class`).
pub trait Partitioner: Send + Sync + std::fmt::Debug {
    /// The partition for a record with this (serialized) key and value, or `None` for no
    /// opinion: the producer's built-in uniform sticky logic ([`StickyPartitioner`]) picks.
    /// A returned partition must be in `0..topic.count`; the producer fails the record with
    /// `UnknownPartition` otherwise.
    fn partition(
        &self,
        topic: &TopicPartitions<'_>,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
    ) -> Option<i32>;

    /// Called when a new batch is about to be created for `prev_partition`, the partition
    /// this partitioner chose for the record (the Java client's `onNewBatch`).
    fn on_new_batch(&self, _topic: &TopicPartitions<'_>, _prev_partition: i32) {}
}

/// The Java producer's built-in partitioning (Kafka 3.3 and later): a keyed record goes to
/// [`partition_for_key`] over all partitions of the topic; a record without a key is left to
/// the sticky logic. With `ignore_keys` (`partitioner.ignore.keys=true`, or Java's
/// `UniformStickyPartitioner`) keyed records are left to the sticky logic too.
///
/// librdkafka's `murmur2_random` places keyed records the same way (an empty key is a key
/// and is hashed; only a null key is "no key").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DefaultPartitioner {
    ignore_keys: bool,
}

impl DefaultPartitioner {
    pub fn new() -> Self {
        Self::default()
    }

    /// One that leaves every record to the sticky logic (`partitioner.ignore.keys=true`).
    pub fn ignoring_keys() -> Self {
        Self { ignore_keys: true }
    }

    /// `partitioner.ignore.keys`.
    #[must_use]
    pub fn with_ignore_keys(mut self, ignore_keys: bool) -> Self {
        self.ignore_keys = ignore_keys;
        self
    }

    pub fn ignores_keys(&self) -> bool {
        self.ignore_keys
    }
}

impl Partitioner for DefaultPartitioner {
    fn partition(
        &self,
        topic: &TopicPartitions<'_>,
        key: Option<&[u8]>,
        _value: Option<&[u8]>,
    ) -> Option<i32> {
        match key {
            Some(key) if !self.ignore_keys && topic.count > 0 => {
                Some(partition_for_key(key, topic.count))
            }
            _ => None,
        }
    }
}

/// Java's `RoundRobinPartitioner`: every record (key or not) takes the next partition in
/// turn, per topic, among the available partitions (among all of them when none is
/// available). Keys are ignored.
///
/// Like the Java one it keeps one counter per topic and ignores
/// [`on_new_batch`](Partitioner::on_new_batch): it expects one `partition` call per record.
#[derive(Debug, Default)]
pub struct RoundRobinPartitioner {
    counters: Mutex<HashMap<String, i32>>,
}

impl RoundRobinPartitioner {
    pub fn new() -> Self {
        Self::default()
    }

    fn next_value(&self, topic: &str) -> i32 {
        let mut counters = self.counters.lock().unwrap_or_else(PoisonError::into_inner);
        match counters.get_mut(topic) {
            Some(c) => {
                let v = *c;
                *c = c.wrapping_add(1);
                v
            }
            None => {
                counters.insert(topic.to_owned(), 1);
                0
            }
        }
    }
}

impl Partitioner for RoundRobinPartitioner {
    fn partition(
        &self,
        topic: &TopicPartitions<'_>,
        _key: Option<&[u8]>,
        _value: Option<&[u8]>,
    ) -> Option<i32> {
        if topic.available.is_empty() && topic.count <= 0 {
            return None;
        }
        // Java's counter is an int that wraps; to_positive keeps the turn going after it does.
        let next = to_positive(self.next_value(topic.topic));
        if topic.available.is_empty() {
            Some(next % topic.count)
        } else {
            let i = usize::try_from(next).unwrap_or(0) % topic.available.len();
            topic.available.get(i).copied()
        }
    }
}

/// The hash of a [`HashPartitioner`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyHash {
    /// Kafka's murmur2 ([`partition_for_key`]).
    Murmur2,
    /// CRC-32 ([`partition_for_key_crc32`]), librdkafka's "consistent".
    Crc32,
    /// FNV-1a ([`partition_for_key_fnv1a`]).
    Fnv1a,
}

/// When a [`HashPartitioner`] leaves a record to the sticky logic instead of hashing its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unhashed {
    /// Never: a null key is hashed as the empty key, so all such records go to one
    /// partition (librdkafka's `murmur2`, `consistent`, `fnv1a`).
    Never,
    /// A null key (librdkafka's `murmur2_random`, `fnv1a_random`).
    NullKey,
    /// A null or empty key (librdkafka's `consistent_random`).
    NullOrEmptyKey,
}

/// librdkafka's hashing partitioners: the key's hash modulo the partition count (over all
/// partitions, available or not), as librdkafka computes it, so that records produced by
/// both clients with the same setting land together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HashPartitioner {
    hash: KeyHash,
    unhashed: Unhashed,
}

impl HashPartitioner {
    pub fn new(hash: KeyHash, unhashed: Unhashed) -> Self {
        Self { hash, unhashed }
    }

    /// librdkafka's `murmur2`.
    pub fn murmur2() -> Self {
        Self::new(KeyHash::Murmur2, Unhashed::Never)
    }

    /// librdkafka's `murmur2_random` (placing records as [`DefaultPartitioner`] does).
    pub fn murmur2_random() -> Self {
        Self::new(KeyHash::Murmur2, Unhashed::NullKey)
    }

    /// librdkafka's `consistent`.
    pub fn consistent() -> Self {
        Self::new(KeyHash::Crc32, Unhashed::Never)
    }

    /// librdkafka's `consistent_random` (librdkafka's default partitioner).
    pub fn consistent_random() -> Self {
        Self::new(KeyHash::Crc32, Unhashed::NullOrEmptyKey)
    }

    /// librdkafka's `fnv1a`.
    pub fn fnv1a() -> Self {
        Self::new(KeyHash::Fnv1a, Unhashed::Never)
    }

    /// librdkafka's `fnv1a_random`.
    pub fn fnv1a_random() -> Self {
        Self::new(KeyHash::Fnv1a, Unhashed::NullKey)
    }

    pub fn hash(&self) -> KeyHash {
        self.hash
    }

    pub fn unhashed(&self) -> Unhashed {
        self.unhashed
    }
}

impl Partitioner for HashPartitioner {
    fn partition(
        &self,
        topic: &TopicPartitions<'_>,
        key: Option<&[u8]>,
        _value: Option<&[u8]>,
    ) -> Option<i32> {
        if topic.count <= 0 {
            return None;
        }
        let key = match (key, self.unhashed) {
            (None, Unhashed::Never) => &[][..],
            (None, _) => return None,
            (Some([]), Unhashed::NullOrEmptyKey) => return None,
            (Some(k), _) => k,
        };
        Some(match self.hash {
            KeyHash::Murmur2 => partition_for_key(key, topic.count),
            KeyHash::Crc32 => partition_for_key_crc32(key, topic.count),
            KeyHash::Fnv1a => partition_for_key_fnv1a(key, topic.count),
        })
    }
}

/// librdkafka's `random`: a keyed record goes to a partition chosen at random among the
/// available ones (among all when none is available), every time; a record without a key is
/// left to the sticky logic, as librdkafka does with `sticky.partitioning.linger.ms` on.
#[derive(Debug)]
pub struct RandomPartitioner {
    rng: Rng,
}

impl Default for RandomPartitioner {
    fn default() -> Self {
        Self::new()
    }
}

impl RandomPartitioner {
    pub fn new() -> Self {
        Self {
            rng: Rng::from_time(),
        }
    }

    /// With a fixed seed (tests, simulations).
    pub fn with_seed(seed: u64) -> Self {
        Self {
            rng: Rng::with_seed(seed),
        }
    }
}

impl Partitioner for RandomPartitioner {
    fn partition(
        &self,
        topic: &TopicPartitions<'_>,
        key: Option<&[u8]>,
        _value: Option<&[u8]>,
    ) -> Option<i32> {
        key?;
        if !topic.available.is_empty() {
            return topic
                .available
                .get(self.rng.index(topic.available.len()))
                .copied();
        }
        let count = u64::try_from(topic.count).ok().filter(|&c| c > 0)?;
        // Below `count`, itself an i32.
        Some(self.rng.below(count) as i32)
    }
}

/// Java's class name of the built-in default partitioner (deprecated there since 3.3).
pub const JAVA_DEFAULT_PARTITIONER: &str =
    "org.apache.kafka.clients.producer.internals.DefaultPartitioner";
/// Java's class name of the partitioner that makes every record sticky, keyed or not.
pub const JAVA_UNIFORM_STICKY_PARTITIONER: &str =
    "org.apache.kafka.clients.producer.UniformStickyPartitioner";
/// Java's class name of the round-robin partitioner.
pub const JAVA_ROUND_ROBIN_PARTITIONER: &str =
    "org.apache.kafka.clients.producer.RoundRobinPartitioner";

/// The partitioner a `partitioner.class` (Java) or `partitioner` (librdkafka) value names,
/// `None` for a name not known here. Surrounding whitespace is ignored; names are
/// case-sensitive, as in both clients.
///
/// - `""`, `"default"`, [`JAVA_DEFAULT_PARTITIONER`] and librdkafka's `"murmur2_random"`:
///   [`DefaultPartitioner`] (murmur2 for keyed records, sticky otherwise). Unlike Java, which
///   runs the old KIP-480 sticky logic when that class is named explicitly, the built-in
///   KIP-794 logic is used.
/// - [`JAVA_UNIFORM_STICKY_PARTITIONER`]: [`DefaultPartitioner`] ignoring keys.
/// - [`JAVA_ROUND_ROBIN_PARTITIONER`]: the [`RoundRobinPartitioner`].
/// - `"murmur2"`, `"consistent"`, `"consistent_random"`, `"fnv1a"`, `"fnv1a_random"`: the
///   [`HashPartitioner`] of that name.
/// - `"random"`: [`RandomPartitioner`].
///
/// `partitioner.ignore.keys` is separate: apply it with
/// [`DefaultPartitioner::with_ignore_keys`] when no class is named.
pub fn by_name(name: &str) -> Option<Arc<dyn Partitioner>> {
    let p: Arc<dyn Partitioner> = match name.trim() {
        "" | "default" | JAVA_DEFAULT_PARTITIONER | "murmur2_random" => {
            Arc::new(DefaultPartitioner::new())
        }
        JAVA_UNIFORM_STICKY_PARTITIONER => {
            Arc::new(DefaultPartitioner::new().with_ignore_keys(true))
        }
        JAVA_ROUND_ROBIN_PARTITIONER => Arc::new(RoundRobinPartitioner::new()),
        "murmur2" => Arc::new(HashPartitioner::murmur2()),
        "consistent" => Arc::new(HashPartitioner::consistent()),
        "consistent_random" => Arc::new(HashPartitioner::consistent_random()),
        "fnv1a" => Arc::new(HashPartitioner::fnv1a()),
        "fnv1a_random" => Arc::new(HashPartitioner::fnv1a_random()),
        "random" => Arc::new(RandomPartitioner::new()),
        _ => return None,
    };
    Some(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view<'a>(count: i32, available: &'a [i32]) -> TopicPartitions<'a> {
        TopicPartitions {
            topic: "t",
            count,
            available,
        }
    }

    #[test]
    fn default_hashes_keys_over_all_partitions() {
        let p = DefaultPartitioner::new();
        // Only partition 3 has a leader: keyed records still hash over all 50.
        let t = view(50, &[3]);
        assert_eq!(p.partition(&t, Some(b"foobar"), None), Some(16));
        assert_eq!(
            p.partition(&t, Some(b""), Some(b"v")),
            Some(partition_for_key(b"", 50))
        );
        assert_eq!(p.partition(&t, None, Some(b"v")), None);
        assert_eq!(p.partition(&view(0, &[]), Some(b"k"), None), None);
    }

    #[test]
    fn default_ignoring_keys_has_no_opinion() {
        let p = DefaultPartitioner::new().with_ignore_keys(true);
        assert!(p.ignores_keys());
        assert_eq!(p, DefaultPartitioner::ignoring_keys());
        assert!(!DefaultPartitioner::new().ignores_keys());
        assert_eq!(p.partition(&view(8, &[]), Some(b"foobar"), None), None);
        assert_eq!(p.partition(&view(8, &[]), None, None), None);
    }

    #[test]
    fn round_robin_goes_in_turn_over_available_partitions() {
        let p = RoundRobinPartitioner::new();
        let t = view(6, &[0, 2, 5]);
        let got: Vec<Option<i32>> = (0..7).map(|_| p.partition(&t, Some(b"k"), None)).collect();
        let want = [0, 2, 5, 0, 2, 5, 0].map(Some);
        assert_eq!(got, want);
        // The turn continues over all partitions when none is available.
        let all = view(4, &[]);
        let got: Vec<Option<i32>> = (0..5).map(|_| p.partition(&all, None, None)).collect();
        // Counter is at 7: 7 % 4 = 3, then 0, 1, 2, 3.
        assert_eq!(got, [3, 0, 1, 2, 3].map(Some));
        // Another topic has its own counter.
        let other = TopicPartitions {
            topic: "other",
            count: 3,
            available: &[],
        };
        assert_eq!(p.partition(&other, None, None), Some(0));
        assert_eq!(p.partition(&view(0, &[]), None, None), None);
    }

    #[test]
    fn round_robin_survives_counter_wrap() {
        let p = RoundRobinPartitioner::new();
        p.counters
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert("t".to_owned(), i32::MAX);
        let t = view(3, &[]);
        // i32::MAX % 3 = 1; then i32::MIN -> to_positive 0.
        assert_eq!(p.partition(&t, None, None), Some(1));
        assert_eq!(p.partition(&t, None, None), Some(0));
        assert_eq!(p.partition(&t, None, None), Some(1));
    }

    #[test]
    fn hash_partitioners_match_librdkafka_rules() {
        let t = view(8, &[1]);
        let murmur = HashPartitioner::murmur2();
        assert_eq!(
            murmur.partition(&t, Some(b"foobar"), None),
            Some(partition_for_key(b"foobar", 8))
        );
        // Null keys hash as empty: 275646681 % 8 = 1.
        assert_eq!(murmur.partition(&t, None, None), Some(1));

        let murmur_random = HashPartitioner::murmur2_random();
        assert_eq!(murmur_random.partition(&t, None, None), None);
        assert_eq!(murmur_random.partition(&t, Some(b""), None), Some(1));

        let consistent = HashPartitioner::consistent();
        assert_eq!(consistent.partition(&t, None, None), Some(0));
        assert_eq!(
            consistent.partition(&t, Some(b"123456789"), None),
            Some((0xcbf4_3926u32 % 8) as i32)
        );
        let consistent_random = HashPartitioner::consistent_random();
        assert_eq!(consistent_random.partition(&t, None, None), None);
        assert_eq!(consistent_random.partition(&t, Some(b""), None), None);
        assert_eq!(
            consistent_random.partition(&t, Some(b"123456789"), None),
            Some((0xcbf4_3926u32 % 8) as i32)
        );

        let fnv = HashPartitioner::fnv1a();
        assert_eq!(
            fnv.partition(&t, None, None),
            Some((0x7ee3_623bu32 % 8) as i32)
        );
        assert_eq!(
            fnv.partition(&t, Some(b"kafka"), None),
            Some((0x0d33_c4e1u32 % 8) as i32)
        );
        let fnv_random = HashPartitioner::fnv1a_random();
        assert_eq!(fnv_random.partition(&t, None, None), None);
        assert_eq!(
            fnv_random.partition(&t, Some(b""), None),
            Some((0x7ee3_623bu32 % 8) as i32)
        );

        assert_eq!(murmur.partition(&view(0, &[]), Some(b"k"), None), None);
    }

    #[test]
    fn random_picks_available_partitions_for_keyed_records() {
        let p = RandomPartitioner::with_seed(1);
        let t = view(10, &[2, 7]);
        let mut seen = [0u32; 10];
        for _ in 0..1000 {
            let Some(q) = p.partition(&t, Some(b"k"), None) else {
                panic!("a keyed record must get a partition");
            };
            seen[q as usize] += 1;
        }
        assert_eq!(seen[2] + seen[7], 1000);
        assert!(seen[2] > 400 && seen[7] > 400, "{seen:?}");
        assert_eq!(p.partition(&t, None, None), None);
        let none_available = view(3, &[]);
        for _ in 0..100 {
            assert!(matches!(
                p.partition(&none_available, Some(b""), None),
                Some(0..=2)
            ));
        }
        assert_eq!(p.partition(&view(0, &[]), Some(b"k"), None), None);
    }

    #[test]
    fn by_name_knows_java_and_librdkafka_names() {
        let t = view(8, &[0, 1, 2, 3, 4, 5, 6, 7]);
        let hashed = Some(partition_for_key(b"foobar", 8));
        for name in [
            "",
            "default",
            " default ",
            JAVA_DEFAULT_PARTITIONER,
            "murmur2_random",
        ] {
            let p = by_name(name).unwrap_or_else(|| panic!("{name:?} unknown"));
            assert_eq!(p.partition(&t, Some(b"foobar"), None), hashed, "{name}");
            assert_eq!(p.partition(&t, None, None), None, "{name}");
        }
        let sticky = by_name(JAVA_UNIFORM_STICKY_PARTITIONER).unwrap_or_else(|| panic!("unknown"));
        assert_eq!(sticky.partition(&t, Some(b"foobar"), None), None);

        let rr = by_name(JAVA_ROUND_ROBIN_PARTITIONER).unwrap_or_else(|| panic!("unknown"));
        assert_eq!(rr.partition(&t, Some(b"foobar"), None), Some(0));
        assert_eq!(rr.partition(&t, Some(b"foobar"), None), Some(1));

        let murmur = by_name("murmur2").unwrap_or_else(|| panic!("unknown"));
        assert_eq!(murmur.partition(&t, None, None), Some(1));
        assert_eq!(murmur.partition(&t, Some(b"foobar"), None), hashed);
        for name in [
            "consistent",
            "consistent_random",
            "fnv1a",
            "fnv1a_random",
            "random",
        ] {
            let p = by_name(name).unwrap_or_else(|| panic!("{name:?} unknown"));
            assert!(
                matches!(p.partition(&t, Some(b"k"), None), Some(0..=7)),
                "{name}"
            );
        }
        assert!(by_name("Default").is_none());
        assert!(by_name("murmur3").is_none());
        assert!(by_name("com.example.MyPartitioner").is_none());
    }

    /// A custom partitioner used as a trait object, as the producer holds it.
    #[derive(Debug, Default)]
    struct FirstByte {
        new_batches: Mutex<Vec<i32>>,
    }

    impl Partitioner for FirstByte {
        fn partition(
            &self,
            topic: &TopicPartitions<'_>,
            key: Option<&[u8]>,
            _value: Option<&[u8]>,
        ) -> Option<i32> {
            let first = key?.first()?;
            Some(i32::from(*first) % topic.count.max(1))
        }

        fn on_new_batch(&self, _topic: &TopicPartitions<'_>, prev_partition: i32) {
            self.new_batches
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(prev_partition);
        }
    }

    #[test]
    fn custom_partitioner_as_trait_object() {
        let custom = Arc::new(FirstByte::default());
        let p: Arc<dyn Partitioner> = custom.clone();
        let t = view(4, &[]);
        assert_eq!(p.partition(&t, Some(b"\x07"), None), Some(3));
        assert_eq!(p.partition(&t, Some(b""), None), None);
        p.on_new_batch(&t, 3);
        assert_eq!(
            *custom
                .new_batches
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
            vec![3]
        );
        // The default on_new_batch does nothing, and every built-in one is usable the same way.
        let all: Vec<Arc<dyn Partitioner>> = vec![
            Arc::new(DefaultPartitioner::new()),
            Arc::new(RoundRobinPartitioner::new()),
            Arc::new(HashPartitioner::murmur2()),
            Arc::new(RandomPartitioner::new()),
            p,
        ];
        for q in &all {
            q.on_new_batch(&t, 0);
            assert!(format!("{q:?}").len() > 3);
        }
        fn assert_send_sync<T: Send + Sync>(_: &T) {}
        assert_send_sync(&all);
    }
}
