//! The built-in uniform sticky partitioning of records without a key (KIP-480, KIP-794).

use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::TopicPartitions;
use super::rng::Rng;

/// Where records without a key (or whose partitioner has no opinion) go: one partition per
/// topic at a time, so they fill a batch together, switching to another partition once
/// `batch.size` bytes went to the current one (Kafka's built-in partitioner since 3.3,
/// KIP-794; the "uniform sticky" partitioner of KIP-480 before it).
///
/// The accumulator asks [`partition`](Self::partition) for the topic's current sticky
/// partition, appends the record there and reports the bytes with
/// [`on_append`](Self::on_append). A partition is chosen at random among the partitions whose
/// leader is known (among all of them when none is), and never the one just left when there
/// is another to choose. With [`set_queue_sizes`](Self::set_queue_sizes) (adaptive
/// partitioning, `partitioner.adaptive.partitioning.enable`) partitions with shorter queues
/// are chosen more often.
///
/// Thread-safe. The per-record calls are a few atomic operations on the topic's
/// [`StickyTopic`] (hold one from [`topic`](Self::topic) and use the `*_in` methods to skip
/// the lookup by name); choosing a new partition takes the topic's mutex.
#[derive(Debug)]
pub struct StickyPartitioner {
    batch_size: usize,
    rng: Rng,
    topics: Mutex<crate::fast_hash::FastMap<String, Arc<StickyTopic>>>,
}

/// One topic's sticky state.
#[derive(Debug)]
pub struct StickyTopic {
    /// The current sticky partition, -1 for none yet.
    current: AtomicI32,
    /// Bytes appended to `current` since it was chosen.
    produced: AtomicUsize,
    /// Adaptive partitioning: (partition, weight) to choose among; empty for uniform choice.
    /// The lock also serializes the choice of a new partition.
    weights: Mutex<Vec<(i32, u64)>>,
}

impl Default for StickyTopic {
    fn default() -> Self {
        Self {
            current: AtomicI32::new(-1),
            produced: AtomicUsize::new(0),
            weights: Mutex::new(Vec::new()),
        }
    }
}

impl StickyTopic {
    fn weights(&self) -> MutexGuard<'_, Vec<(i32, u64)>> {
        // The state stays consistent whatever panicked while holding the lock.
        self.weights.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set_current(&self, p: i32) {
        self.produced.store(0, Ordering::Relaxed);
        self.current.store(p.max(-1), Ordering::Release);
    }

    /// The current sticky partition, if one was chosen.
    pub fn current(&self) -> Option<i32> {
        let p = self.current.load(Ordering::Acquire);
        (p >= 0).then_some(p)
    }
}

impl StickyPartitioner {
    /// Switches partition after `batch_size` bytes (`batch.size`; 0 is taken as 1).
    pub fn new(batch_size: usize) -> Self {
        Self::with_rng(batch_size, Rng::from_time())
    }

    /// As [`new`](Self::new), with a fixed seed for the random choices (tests, simulations).
    pub fn with_seed(batch_size: usize, seed: u64) -> Self {
        Self::with_rng(batch_size, Rng::with_seed(seed))
    }

    fn with_rng(batch_size: usize, rng: Rng) -> Self {
        Self {
            batch_size: batch_size.max(1),
            rng,
            topics: Mutex::new(crate::fast_hash::FastMap::default()),
        }
    }

    /// The number of bytes after which the partition switches.
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// The state of a topic (created empty when the topic is new here).
    pub fn topic(&self, topic: &str) -> Arc<StickyTopic> {
        let mut topics = self.topics.lock().unwrap_or_else(PoisonError::into_inner);
        match topics.get(topic) {
            Some(s) => Arc::clone(s),
            None => Arc::clone(topics.entry(topic.to_owned()).or_default()),
        }
    }

    /// The topic's current sticky partition. A new one is chosen when the topic has none yet
    /// or when the current one is no longer usable (not in `available` when that is not
    /// empty, or not below `count`). Returns -1 when the topic has no partition at all
    /// (`count` not positive and nothing available).
    pub fn partition(&self, topic: &TopicPartitions<'_>) -> i32 {
        self.partition_in(&self.topic(topic.topic), topic)
    }

    /// [`partition`](Self::partition) with the topic's state at hand.
    pub fn partition_in(&self, state: &StickyTopic, topic: &TopicPartitions<'_>) -> i32 {
        let p = state.current.load(Ordering::Acquire);
        if p >= 0 && usable(topic, p) {
            return p;
        }
        let weights = state.weights();
        let p = state.current.load(Ordering::Acquire);
        if p >= 0 && usable(topic, p) {
            return p;
        }
        let p = choose(&self.rng, topic, &weights, None);
        state.set_current(p);
        p
    }

    /// The topic's current sticky partition without choosing one.
    pub fn current(&self, topic: &str) -> Option<i32> {
        self.topic(topic).current()
    }

    /// Reports `bytes` appended to `partition` of the topic. Once at least `batch_size` bytes
    /// went to the current sticky partition, the next record goes to a newly chosen one.
    /// Appends to any other partition (keyed records, explicit partitions) are ignored.
    pub fn on_append(&self, topic: &TopicPartitions<'_>, partition: i32, bytes: usize) {
        self.on_append_in(&self.topic(topic.topic), topic, partition, bytes, true);
    }

    /// As [`on_append`](Self::on_append), for an accumulator that holds the switch back while
    /// the current batch is not ready to send (as the Java producer does with a high
    /// `linger.ms`, to avoid leaving small batches behind): with `switch_allowed` false the
    /// partition switches only after twice `batch_size` bytes.
    pub fn on_append_with_switch(
        &self,
        topic: &TopicPartitions<'_>,
        partition: i32,
        bytes: usize,
        switch_allowed: bool,
    ) {
        self.on_append_in(
            &self.topic(topic.topic),
            topic,
            partition,
            bytes,
            switch_allowed,
        );
    }

    /// [`on_append_with_switch`](Self::on_append_with_switch) with the topic's state at hand.
    pub fn on_append_in(
        &self,
        state: &StickyTopic,
        topic: &TopicPartitions<'_>,
        partition: i32,
        bytes: usize,
        switch_allowed: bool,
    ) {
        if state.current.load(Ordering::Acquire) != partition {
            return;
        }
        let produced = state
            .produced
            .fetch_add(bytes, Ordering::Relaxed)
            .saturating_add(bytes);
        let full = produced >= self.batch_size;
        let overfull = produced >= self.batch_size.saturating_mul(2);
        if (full && switch_allowed) || overfull {
            self.switch_from(state, topic, partition);
        }
    }

    /// The batch of `partition` just filled up: if it is the topic's current sticky
    /// partition, the next record goes to a newly chosen one (so records without keys fill
    /// whole batches instead of leaving a small tail behind).
    pub fn batch_full(&self, topic: &TopicPartitions<'_>, partition: i32) {
        self.batch_full_in(&self.topic(topic.topic), topic, partition);
    }

    /// [`batch_full`](Self::batch_full) with the topic's state at hand.
    pub fn batch_full_in(&self, state: &StickyTopic, topic: &TopicPartitions<'_>, partition: i32) {
        if state.current.load(Ordering::Acquire) == partition {
            self.switch_from(state, topic, partition);
        }
    }

    /// Chooses a new partition if `leaving` is still the current one.
    fn switch_from(&self, state: &StickyTopic, topic: &TopicPartitions<'_>, leaving: i32) {
        let weights = state.weights();
        if state.current.load(Ordering::Acquire) == leaving {
            let p = choose(&self.rng, topic, &weights, Some(leaving));
            state.set_current(p);
        }
    }

    /// Adaptive partitioning (KIP-794): the queue sizes (batches waiting) of the partitions to
    /// choose among, usually those with a known leader. The next choices pick partition `p`
    /// with a weight of `max + 1 - size(p)` (`max` the largest size given), so that a
    /// partition with a longer queue gets fewer new records; partitions not listed are not
    /// chosen while usable listed ones exist. An empty list goes back to uniform choice.
    pub fn set_queue_sizes(&self, topic: &str, sizes: &[(i32, usize)]) {
        let max = sizes.iter().map(|&(_, s)| s as u64).max().unwrap_or(0);
        let weights: Vec<(i32, u64)> = sizes
            .iter()
            .map(|&(p, s)| (p, max.saturating_add(1).saturating_sub(s as u64)))
            .collect();
        *self.topic(topic).weights() = weights;
    }

    /// Forgets the topic (its sticky partition and queue sizes), e.g. when it expires from
    /// the producer's metadata.
    pub fn remove_topic(&self, topic: &str) {
        self.topics
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(topic);
    }
}

/// Whether the sticky partition `p` can still take records.
fn usable(topic: &TopicPartitions<'_>, p: i32) -> bool {
    if topic.available.is_empty() {
        p >= 0 && p < topic.count
    } else {
        topic.available.binary_search(&p).is_ok()
    }
}

/// A new sticky partition, other than `leaving` when there is another to choose from;
/// -1 when there is none at all.
fn choose(
    rng: &Rng,
    topic: &TopicPartitions<'_>,
    weights: &[(i32, u64)],
    leaving: Option<i32>,
) -> i32 {
    if let Some(p) = choose_weighted(rng, topic, weights, leaving) {
        return p;
    }
    if !topic.available.is_empty() {
        let list = topic.available;
        let skip = leaving
            .filter(|_| list.len() > 1)
            .and_then(|l| list.iter().position(|&p| p == l));
        let i = match skip {
            Some(pos) => {
                let i = rng.index(list.len() - 1);
                if i >= pos { i + 1 } else { i }
            }
            None => rng.index(list.len()),
        };
        return list.get(i).copied().unwrap_or(-1);
    }
    let Ok(count) = u64::try_from(topic.count) else {
        return -1;
    };
    if count == 0 {
        return -1;
    }
    let skip = leaving
        .and_then(|l| u64::try_from(l).ok())
        .filter(|&l| count > 1 && l < count);
    let p = match skip {
        Some(l) => {
            let p = rng.below(count - 1);
            if p >= l { p + 1 } else { p }
        }
        None => rng.below(count),
    };
    // Below `count`, itself an i32.
    p as i32
}

/// The weighted choice among the usable partitions of `weights`; None when there is none.
fn choose_weighted(
    rng: &Rng,
    topic: &TopicPartitions<'_>,
    weights: &[(i32, u64)],
    leaving: Option<i32>,
) -> Option<i32> {
    if weights.is_empty() {
        return None;
    }
    let usable_count = weights.iter().filter(|&&(p, _)| usable(topic, p)).count();
    let candidate = |p: i32| usable(topic, p) && (usable_count < 2 || Some(p) != leaving);
    let total: u64 = weights
        .iter()
        .filter(|&&(p, _)| candidate(p))
        .fold(0u64, |acc, &(_, w)| acc.saturating_add(w));
    if total == 0 {
        return None;
    }
    let mut r = rng.below(total);
    for &(p, w) in weights.iter().filter(|&&(p, _)| candidate(p)) {
        if r < w {
            return Some(p);
        }
        r -= w;
    }
    None
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
    fn stays_until_batch_size_then_switches_to_another() {
        let s = StickyPartitioner::with_seed(100, 1);
        let all = [0, 1, 2, 3, 4, 5];
        let t = view(6, &all);
        for _ in 0..50 {
            let first = s.partition(&t);
            assert!(all.contains(&first));
            // 99 bytes in small appends: still the same partition.
            for _ in 0..9 {
                s.on_append(&t, first, 11);
                assert_eq!(s.partition(&t), first);
            }
            s.on_append(&t, first, 1);
            // 100 bytes: switched, and to a different partition.
            let next = s.partition(&t);
            assert_ne!(next, first);
            assert!(all.contains(&next));
        }
    }

    #[test]
    fn one_large_record_switches_at_once() {
        let s = StickyPartitioner::with_seed(16_384, 2);
        let t = view(3, &[0, 1, 2]);
        let first = s.partition(&t);
        s.on_append(&t, first, 1_000_000);
        assert_ne!(s.partition(&t), first);
    }

    #[test]
    fn appends_elsewhere_are_ignored() {
        let s = StickyPartitioner::with_seed(10, 3);
        let t = view(4, &[0, 1, 2, 3]);
        let first = s.partition(&t);
        let other = (first + 1) % 4;
        s.on_append(&t, other, 1_000);
        assert_eq!(s.partition(&t), first);
        // A topic never asked about is not created by an append.
        let u = TopicPartitions {
            topic: "u",
            count: 4,
            available: &[],
        };
        s.on_append(&u, 0, 1_000);
        assert_eq!(s.current("u"), None);
    }

    #[test]
    fn only_available_partitions_are_chosen() {
        let s = StickyPartitioner::with_seed(1, 4);
        let available = [1, 4, 6];
        let t = view(8, &available);
        let mut seen = [0u32; 8];
        for _ in 0..3000 {
            let p = s.partition(&t);
            assert!(available.contains(&p), "chose {p}");
            seen[p as usize] += 1;
            s.on_append(&t, p, 1);
        }
        for p in available {
            assert!(seen[p as usize] > 800, "{seen:?}");
        }
    }

    #[test]
    fn a_partition_that_became_unavailable_is_left() {
        let s = StickyPartitioner::with_seed(1_000, 5);
        let first = s.partition(&view(4, &[0, 1, 2, 3]));
        let rest: Vec<i32> = (0..4).filter(|&p| p != first).collect();
        let t = view(4, &rest);
        let next = s.partition(&t);
        assert_ne!(next, first);
        assert!(rest.contains(&next));
        // And it sticks to the new one.
        assert_eq!(s.partition(&t), next);
    }

    #[test]
    fn without_available_partitions_all_are_candidates() {
        let s = StickyPartitioner::with_seed(1, 6);
        let t = view(5, &[]);
        let mut seen = [0u32; 5];
        let mut prev = -1;
        for _ in 0..2500 {
            let p = s.partition(&t);
            assert!((0..5).contains(&p));
            assert_ne!(p, prev);
            seen[p as usize] += 1;
            prev = p;
            s.on_append(&t, p, 1);
        }
        assert!(seen.iter().all(|&c| c > 350), "{seen:?}");
        // Fewer partitions than before: the current one is left when out of range.
        assert_eq!(s.partition(&view(1, &[])), 0);
    }

    #[test]
    fn single_partition_and_no_partition() {
        let s = StickyPartitioner::with_seed(1, 7);
        let one = view(1, &[0]);
        for _ in 0..10 {
            assert_eq!(s.partition(&one), 0);
            s.on_append(&one, 0, 10);
        }
        let s = StickyPartitioner::with_seed(1, 7);
        assert_eq!(s.partition(&view(0, &[])), -1);
        assert_eq!(s.current("t"), None);
        let p = s.partition(&view(2, &[]));
        assert_eq!(s.current("t"), Some(p));
    }

    #[test]
    fn uniform_over_many_switches() {
        let s = StickyPartitioner::with_seed(1, 8);
        let all: Vec<i32> = (0..8).collect();
        let t = view(8, &all);
        let mut seen = [0u32; 8];
        for _ in 0..8000 {
            let p = s.partition(&t);
            seen[p as usize] += 1;
            s.on_append(&t, p, 5);
        }
        // 1000 expected each.
        assert!(seen.iter().all(|&c| (800..1200).contains(&c)), "{seen:?}");
    }

    #[test]
    fn topics_are_independent() {
        let s = StickyPartitioner::with_seed(10, 9);
        let a = TopicPartitions {
            topic: "a",
            count: 100,
            available: &[],
        };
        let b = TopicPartitions {
            topic: "b",
            count: 100,
            available: &[],
        };
        let pa = s.partition(&a);
        let pb = s.partition(&b);
        s.on_append(&a, pa, 100);
        assert_eq!(s.partition(&b), pb);
        assert_ne!(s.partition(&a), pa);
        s.remove_topic("a");
        assert_eq!(s.current("a"), None);
        assert_eq!(s.current("b"), Some(pb));
    }

    #[test]
    fn held_back_switch_happens_at_twice_the_batch_size() {
        let s = StickyPartitioner::with_seed(100, 10);
        let t = view(4, &[0, 1, 2, 3]);
        let first = s.partition(&t);
        s.on_append_with_switch(&t, first, 150, false);
        assert_eq!(s.partition(&t), first);
        s.on_append_with_switch(&t, first, 49, false);
        assert_eq!(s.partition(&t), first);
        s.on_append_with_switch(&t, first, 1, false);
        assert_ne!(s.partition(&t), first);
    }

    #[test]
    fn weighted_choice_follows_inverse_queue_sizes() {
        let rng = Rng::with_seed(11);
        let t = view(4, &[0, 1, 2, 3]);
        // Queue sizes 0, 3, 1 and 3: weights 4, 1, 3, 1 (Java's example with a fourth).
        let s = StickyPartitioner::with_seed(1, 11);
        s.set_queue_sizes("t", &[(0, 0), (1, 3), (2, 1), (3, 3)]);
        let weights = s.topic("t").weights().clone();
        assert_eq!(weights, vec![(0, 4), (1, 1), (2, 3), (3, 1)]);
        let mut seen = [0u32; 4];
        for _ in 0..9000 {
            seen[choose(&rng, &t, &weights, None) as usize] += 1;
        }
        // Expected 4000, 1000, 3000, 1000.
        assert!((3600..4400).contains(&seen[0]), "{seen:?}");
        assert!((800..1200).contains(&seen[1]), "{seen:?}");
        assert!((2600..3400).contains(&seen[2]), "{seen:?}");
        assert!((800..1200).contains(&seen[3]), "{seen:?}");
        // Leaving partition 0: never 0 again, the others keep their proportions.
        let mut seen = [0u32; 4];
        for _ in 0..5000 {
            seen[choose(&rng, &t, &weights, Some(0)) as usize] += 1;
        }
        assert_eq!(seen[0], 0);
        assert!((2600..3400).contains(&seen[2]), "{seen:?}");
    }

    #[test]
    fn adaptive_switching_prefers_short_queues_and_respects_availability() {
        let s = StickyPartitioner::with_seed(1, 12);
        s.set_queue_sizes("t", &[(0, 0), (1, 100), (2, 100), (3, 100)]);
        let t = view(4, &[0, 1, 2, 3]);
        let mut seen = [0u32; 4];
        for _ in 0..4000 {
            let p = s.partition(&t);
            seen[p as usize] += 1;
            s.on_append(&t, p, 1);
        }
        // Every other choice leaves 0 and comes back to it with probability 101/103.
        assert!(seen[0] > 1800, "{seen:?}");
        for p in 1..4 {
            assert!(seen[0] > 2 * seen[p], "{seen:?}");
        }
        // Partition 0 loses its leader: the weights only choose among usable partitions.
        let t = view(4, &[1, 2, 3]);
        for _ in 0..200 {
            let p = s.partition(&t);
            assert_ne!(p, 0);
            s.on_append(&t, p, 1);
        }
        // None of the weighted partitions usable: uniform among the available ones.
        s.set_queue_sizes("t", &[(0, 0)]);
        for _ in 0..50 {
            let p = s.partition(&t);
            assert!((1..4).contains(&p));
            s.on_append(&t, p, 1);
        }
        // Back to uniform.
        s.set_queue_sizes("t", &[]);
        assert!(s.topic("t").weights().is_empty());
    }

    #[test]
    fn concurrent_use() {
        let s = StickyPartitioner::with_seed(64, 13);
        let available = [0, 2, 3, 5];
        std::thread::scope(|scope| {
            for _ in 0..4 {
                let s = &s;
                scope.spawn(move || {
                    let t = view(6, &available);
                    for _ in 0..2000 {
                        let p = s.partition(&t);
                        assert!(available.contains(&p));
                        s.on_append(&t, p, 7);
                    }
                });
            }
        });
    }
}
