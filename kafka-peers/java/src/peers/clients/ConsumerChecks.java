package peers.clients;

import static peers.clients.Checks.check;
import static peers.clients.Checks.equal;
import static peers.clients.Checks.require;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;

/**
 * The Java consumer against a broker: classic groups with the range and cooperative-sticky
 * assignors (rebalances on join and leave, committed offsets carried across), static
 * membership, offsetsForTimes, seek, pause/resume, committed().
 */
public final class ConsumerChecks {
    private ConsumerChecks() {}

    static final Comparator<TopicPartition> ORDER =
            Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition);

    public static void main(String[] args) {
        Map<String, Checks.Scenario> all = new LinkedHashMap<>();
        all.put("range", b -> group(b, "range", RangeAssignor.class.getName()));
        all.put("cooperative", b -> group(b, "cooperative", CooperativeStickyAssignor.class.getName()));
        all.put("static", ConsumerChecks::staticMembership);
        all.put("offsets", ConsumerChecks::offsets);
        Checks.main("ConsumerChecks", args, all);
    }

    /** Produces `count` records to each partition of `topic`, values "p:i" (i from `from`). */
    static void produce(String bootstrap, String topic, int partitions, int from, int count) throws Exception {
        try (KafkaProducer<String, String> p = new KafkaProducer<>(Checks.producer(bootstrap))) {
            for (int i = from; i < from + count; i++) {
                for (int part = 0; part < partitions; part++) {
                    p.send(new ProducerRecord<>(topic, part, null, part + ":" + i));
                }
            }
            p.flush();
        }
    }

    /** One group member, polled by the main thread; every record it reads goes to `seen`. */
    static final class Member implements ConsumerRebalanceListener {
        final String name;
        final KafkaConsumer<String, String> consumer;
        final Set<TopicPartition> owned = new TreeSet<>(ORDER);
        final Map<TopicPartition, String> seen;
        int assignedCalls;
        int revokedPartitions;
        int records;
        int duplicates;
        boolean pendingCommit;
        int commitRetries;

        Member(String name, Properties props, String topic, Map<TopicPartition, String> seen) {
            this.name = name;
            this.seen = seen;
            this.consumer = new KafkaConsumer<>(props);
            consumer.subscribe(List.of(topic), this);
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            if (!partitions.isEmpty()) {
                // What this member read is committed before another may take the partitions.
                consumer.commitSync();
            }
            revokedPartitions += partitions.size();
            owned.removeAll(partitions);
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            assignedCalls++;
            owned.addAll(partitions);
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            throw new Checks.Failed(name + " lost " + partitions);
        }

        void poll() {
            ConsumerRecords<String, String> got = consumer.poll(Duration.ofMillis(100));
            for (ConsumerRecord<String, String> r : got) {
                String key = r.topic() + "-" + r.partition() + "@" + r.offset();
                require(owned.contains(new TopicPartition(r.topic(), r.partition())),
                        name + " read " + key + " it does not own (" + owned + ")");
                if (seen.put(new TopicPartition(key, 0), name) != null) {
                    duplicates++;
                }
                records++;
            }
            if (!got.isEmpty() || pendingCommit) {
                // A cooperative member keeps reading during a rebalance; its commits then fail
                // with RebalanceInProgressException until a poll completes the rebalance (as
                // the exception's documentation says), so they are retried after the next poll.
                try {
                    consumer.commitSync();
                    pendingCommit = false;
                } catch (RebalanceInProgressException e) {
                    pendingCommit = true;
                    commitRetries++;
                }
            }
        }
    }

    static Set<TopicPartition> sorted(Collection<TopicPartition> partitions) {
        Set<TopicPartition> out = new TreeSet<>(ORDER);
        out.addAll(partitions);
        return out;
    }

    static void pollUntil(List<Member> members, BooleanSupplier done, Duration timeout, String what) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!done.getAsBoolean()) {
            StringBuilder state = new StringBuilder();
            for (Member m : members) {
                state.append(m.name).append(" owns ").append(m.owned).append(" read ").append(m.records).append("; ");
            }
            require(System.nanoTime() < deadline, "timed out waiting for " + what + ": " + state);
            for (Member m : members) {
                m.poll();
            }
        }
    }

    static Properties memberProps(String bootstrap, String group, String assignor) {
        Properties p = Checks.consumer(bootstrap, group);
        p.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, assignor);
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "20");
        p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "10000");
        p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "300");
        return p;
    }

    /**
     * Two members of one classic group over 4 partitions: the first reads alone, the second
     * joins (a rebalance: 2 partitions each), the second leaves (a rebalance: all back to the
     * first). Every record is read exactly once across both, as committed offsets say.
     */
    static void group(String bootstrap, String label, String assignor) throws Exception {
        String topic = "group-" + label;
        String group = "g-" + label;
        final int partitions = 4;
        Checks.createTopics(bootstrap, Map.of(topic, partitions));
        produce(bootstrap, topic, partitions, 0, 100);
        Map<TopicPartition, String> seen = new HashMap<>();
        Member a = new Member("a", memberProps(bootstrap, group, assignor), topic, seen);
        pollUntil(List.of(a), () -> a.owned.size() == partitions && a.records >= 100, Duration.ofSeconds(30),
                "the first member to own every partition");
        Set<TopicPartition> before = sorted(a.owned);
        int revokedBefore = a.revokedPartitions;
        Member b = new Member("b", memberProps(bootstrap, group, assignor), topic, seen);
        List<Member> both = List.of(a, b);
        pollUntil(both, () -> a.owned.size() == 2 && b.owned.size() == 2, Duration.ofSeconds(30),
                "two members with 2 partitions each");
        Set<TopicPartition> union = new TreeSet<>(ORDER);
        union.addAll(a.owned);
        union.addAll(b.owned);
        equal(partitions, union.size(), "partitions owned after the join: " + a.owned + " " + b.owned);
        require(before.containsAll(a.owned), "a owns " + a.owned);
        int revokedOnJoin = a.revokedPartitions - revokedBefore;
        check(label + ".join.owned", a.owned.size() + "," + b.owned.size());
        check(label + ".join.revoked_from_first", revokedOnJoin);
        pollUntil(both, () -> seen.size() == 400, Duration.ofSeconds(30), "all 400 records read");
        require(a.records > 100 && b.records > 0, "both members read: a " + a.records + ", b " + b.records);
        produce(bootstrap, topic, partitions, 100, 50);
        b.consumer.close();
        int bRecords = b.records;
        pollUntil(List.of(a), () -> a.owned.size() == partitions && seen.size() == 600, Duration.ofSeconds(30),
                "the first member to own every partition again and read all 600 records");
        check(label + ".leave.owned", a.owned.size());
        equal(0, a.duplicates + b.duplicates, "records read twice");
        equal(bRecords, b.records, "records b read after closing");
        check(label + ".records", seen.size());
        check(label + ".duplicates", a.duplicates + b.duplicates);
        Map<TopicPartition, OffsetAndMetadata> committed = a.consumer.committed(Checks.partitions(topic, partitions));
        List<Long> offsets = new ArrayList<>();
        for (TopicPartition tp : Checks.partitions(topic, partitions)) {
            OffsetAndMetadata o = committed.get(tp);
            require(o != null, "no committed offset for " + tp);
            equal(150L, o.offset(), "committed offset of " + tp);
            offsets.add(o.offset());
        }
        check(label + ".committed", offsets);
        a.consumer.close();
    }

    /**
     * Static membership: two members with group.instance.id; one closes (a static member sends
     * no LeaveGroup) and a new consumer with its instance id joins within session.timeout.ms:
     * it gets the same partitions and the other member sees no rebalance.
     */
    static void staticMembership(String bootstrap) throws Exception {
        String topic = "static";
        String group = "g-static";
        final int partitions = 4;
        Checks.createTopics(bootstrap, Map.of(topic, partitions));
        produce(bootstrap, topic, partitions, 0, 10);
        Map<TopicPartition, String> seen = new HashMap<>();
        Properties pa = memberProps(bootstrap, group, RangeAssignor.class.getName());
        pa.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "static-a");
        Properties pb = memberProps(bootstrap, group, RangeAssignor.class.getName());
        pb.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "static-b");
        pb.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "30000");
        Member a = new Member("a", pa, topic, seen);
        pollUntil(List.of(a), () -> a.owned.size() == partitions, Duration.ofSeconds(30), "a to own every partition");
        Member b = new Member("b", pb, topic, seen);
        pollUntil(List.of(a, b), () -> a.owned.size() == 2 && b.owned.size() == 2 && seen.size() == 40,
                Duration.ofSeconds(30), "a and b with 2 partitions each");
        Set<TopicPartition> bOwned = sorted(b.owned);
        int aAssigned = a.assignedCalls;
        int aRevoked = a.revokedPartitions;
        int generation = a.consumer.groupMetadata().generationId();
        String bMemberId = b.consumer.groupMetadata().memberId();
        b.consumer.close();
        Member b2 = new Member("b2", pb, topic, seen);
        pollUntil(List.of(a, b2), () -> b2.owned.size() == 2, Duration.ofSeconds(20), "the restarted b to own 2");
        // A while longer: a rebalance of the other member would show now.
        long until = System.nanoTime() + Duration.ofSeconds(2).toNanos();
        while (System.nanoTime() < until) {
            a.poll();
            b2.poll();
        }
        equal(bOwned, b2.owned, "partitions of the restarted static member");
        equal(aAssigned, a.assignedCalls, "assignments of the other member after the restart");
        equal(aRevoked, a.revokedPartitions, "revocations of the other member after the restart");
        equal(generation, a.consumer.groupMetadata().generationId(), "generation of the other member");
        equal(generation, b2.consumer.groupMetadata().generationId(), "generation of the restarted member");
        require(!bMemberId.equals(b2.consumer.groupMetadata().memberId()), "the restarted member has a new member id");
        check("static.same_partitions", bOwned.equals(b2.owned));
        check("static.other_rebalanced", a.assignedCalls - aAssigned);
        check("static.generation_kept", generation == b2.consumer.groupMetadata().generationId());
        a.consumer.close();
        b2.consumer.close();
    }

    /** offsetsForTimes, seek, pause/resume, commitSync with metadata and committed(). */
    static void offsets(String bootstrap) throws Exception {
        String topic = "offsets";
        Checks.createTopics(bootstrap, Map.of(topic, 2));
        long base = System.currentTimeMillis() - 600_000;
        try (KafkaProducer<String, String> p = new KafkaProducer<>(Checks.producer(bootstrap))) {
            for (int i = 0; i < 20; i++) {
                for (int part = 0; part < 2; part++) {
                    p.send(new ProducerRecord<>(topic, part, base + i * 1000L, null, part + ":" + i));
                }
            }
            p.flush();
        }
        TopicPartition p0 = new TopicPartition(topic, 0);
        TopicPartition p1 = new TopicPartition(topic, 1);
        Properties props = Checks.consumer(bootstrap, "g-offsets");
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(props)) {
            c.assign(List.of(p0, p1));
            Map<TopicPartition, Long> query = new HashMap<>();
            query.put(p0, base + 5500);
            query.put(p1, base + 20_000);
            Map<TopicPartition, OffsetAndTimestamp> times = c.offsetsForTimes(query);
            OffsetAndTimestamp t0 = times.get(p0);
            require(t0 != null, "offsetsForTimes found nothing for " + p0 + ": " + times);
            equal(6L, t0.offset(), "offsetsForTimes offset");
            equal(base + 6000, t0.timestamp(), "offsetsForTimes timestamp");
            require(times.containsKey(p1) && times.get(p1) == null, "a time after the last record: " + times);
            OffsetAndTimestamp first = c.offsetsForTimes(Map.of(p0, base - 1)).get(p0);
            equal(0L, first == null ? null : first.offset(), "offsetsForTimes before the first record");
            check("offsets.for_times", t0.offset() + " " + (t0.timestamp() - base) + " " + times.get(p1));
            equal(Map.of(p0, 0L, p1, 0L), c.beginningOffsets(List.of(p0, p1)), "beginning offsets");
            equal(Map.of(p0, 20L, p1, 20L), c.endOffsets(List.of(p0, p1)), "end offsets");

            // seek
            c.seek(p0, 13);
            c.seek(p1, 20);
            ConsumerRecord<String, String> firstRead = null;
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            while (firstRead == null) {
                require(System.nanoTime() < deadline, "nothing read after seek");
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    require(r.partition() == 0, "a record of p1 after seeking it to its end: " + r);
                    if (firstRead == null) {
                        firstRead = r;
                    }
                }
            }
            equal(13L, firstRead.offset(), "offset of the first record after seek(13)");
            equal("0:13", firstRead.value(), "value after seek");
            equal(base + 13_000, firstRead.timestamp(), "timestamp after seek");
            check("offsets.seek", firstRead.offset());

            // pause p0, read p1 only; resume
            c.seek(p0, 0);
            c.seek(p1, 0);
            c.pause(List.of(p0));
            equal(Set.of(p0), c.paused(), "paused()");
            int fromP0 = 0;
            int fromP1 = 0;
            deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            while (fromP1 < 20) {
                require(System.nanoTime() < deadline, "p1 not read while p0 is paused: " + fromP1);
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    if (r.partition() == 0) {
                        fromP0++;
                    } else {
                        fromP1++;
                    }
                }
            }
            for (int i = 0; i < 3; i++) {
                fromP0 += c.poll(Duration.ofMillis(200)).count();
            }
            equal(0, fromP0, "records of the paused partition");
            equal(0L, c.position(p0), "position of the paused partition");
            c.resume(List.of(p0));
            equal(Set.of(), c.paused(), "paused() after resume");
            List<Long> resumed = new ArrayList<>();
            deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            while (resumed.size() < 20) {
                require(System.nanoTime() < deadline, "p0 not read after resume: " + resumed);
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    require(r.partition() == 0, "p1 read again: " + r);
                    resumed.add(r.offset());
                }
            }
            equal(0L, resumed.get(0), "first offset after resume");
            check("offsets.pause", fromP0 + " " + fromP1 + " " + resumed.size());

            // commit with metadata, committed()
            Map<TopicPartition, OffsetAndMetadata> commit = new HashMap<>();
            commit.put(p0, new OffsetAndMetadata(7, "meta-7"));
            commit.put(p1, new OffsetAndMetadata(20));
            c.commitSync(commit);
            Map<TopicPartition, OffsetAndMetadata> got = c.committed(Set.of(p0, p1));
            equal(7L, got.get(p0).offset(), "committed offset of p0");
            equal("meta-7", got.get(p0).metadata(), "committed metadata of p0");
            equal(20L, got.get(p1).offset(), "committed offset of p1");
            check("offsets.committed", got.get(p0).offset() + " " + got.get(p0).metadata() + " " + got.get(p1).offset());
        }
        // A new consumer of the group starts at the committed offsets.
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(props)) {
            c.assign(List.of(p0, p1));
            equal(7L, c.position(p0), "position from the committed offset");
            equal(20L, c.position(p1), "position from the committed offset");
            check("offsets.restart_position", c.position(p0) + " " + c.position(p1));
        }
    }
}
