package peers.clients;

import static peers.clients.Checks.check;
import static peers.clients.Checks.equal;
import static peers.clients.Checks.require;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;

/**
 * The Java consumer with the KIP-848 group protocol (`group.protocol=consumer`): the broker
 * assigns the partitions, the members reconcile through ConsumerGroupHeartbeat; commitSync
 * with member epochs; the AdminClient describes the group as a CONSUMER group.
 */
public final class ConsumerProtocolChecks {
    private ConsumerProtocolChecks() {}

    public static void main(String[] args) {
        Map<String, Checks.Scenario> all = new LinkedHashMap<>();
        all.put("share", ConsumerProtocolChecks::share);
        Checks.main("ConsumerProtocolChecks", args, all);
    }

    static Properties memberProps(String bootstrap, String group) {
        Properties p = Checks.consumer(bootstrap, group);
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "20");
        return p;
    }

    /** The group as the AdminClient describes it. */
    static ConsumerGroupDescription describe(String bootstrap, String group) throws Exception {
        try (Admin admin = Admin.create(Checks.admin(bootstrap))) {
            return admin.describeConsumerGroups(List.of(group)).all().get(30, TimeUnit.SECONDS).get(group);
        }
    }

    /**
     * Two members over 4 partitions: the first owns all, the second joins (2 each, as the
     * broker's uniform assignor gives them), records read once and committed with commitSync,
     * the second closes (it leaves) and the first owns all 4 again.
     */
    static void share(String bootstrap) throws Exception {
        String topic = "kip848-java";
        String group = "g-kip848-java";
        final int partitions = 4;
        Checks.createTopics(bootstrap, Map.of(topic, partitions));
        ConsumerChecks.produce(bootstrap, topic, partitions, 0, 100);
        Map<TopicPartition, String> seen = new HashMap<>();
        ConsumerChecks.Member a = new ConsumerChecks.Member("a", memberProps(bootstrap, group), topic, seen);
        ConsumerChecks.pollUntil(List.of(a), () -> a.owned.size() == partitions && a.records >= 100,
                Duration.ofSeconds(30), "the first member to own every partition");
        ConsumerChecks.Member b = new ConsumerChecks.Member("b", memberProps(bootstrap, group), topic, seen);
        List<ConsumerChecks.Member> both = List.of(a, b);
        ConsumerChecks.pollUntil(both, () -> a.owned.size() == 2 && b.owned.size() == 2, Duration.ofSeconds(30),
                "two members with 2 partitions each");
        Set<TopicPartition> union = new TreeSet<>(ConsumerChecks.ORDER);
        union.addAll(a.owned);
        union.addAll(b.owned);
        equal(partitions, union.size(), "partitions owned after the join: " + a.owned + " " + b.owned);
        check("share.join.owned", a.owned.size() + "," + b.owned.size());
        // Only the partitions that move are revoked from the first member (incremental).
        check("share.join.revoked_from_first", a.revokedPartitions);
        ConsumerChecks.pollUntil(both, () -> seen.size() == 400, Duration.ofSeconds(30), "all 400 records read");
        require(a.records >= 100 && b.records > 0, "both members read: a " + a.records + ", b " + b.records);

        ConsumerGroupDescription d = describe(bootstrap, group);
        equal(GroupType.CONSUMER, d.type(), "described group type");
        List<String> described = new ArrayList<>();
        int describedPartitions = 0;
        for (MemberDescription m : d.members()) {
            described.add(m.consumerId());
            describedPartitions += m.assignment().topicPartitions().size();
        }
        equal(2, described.size(), "described members " + d);
        require(described.contains(a.consumer.groupMetadata().memberId())
                && described.contains(b.consumer.groupMetadata().memberId()),
                "described members " + described);
        check("share.describe", d.type() + " " + described.size() + " " + describedPartitions);

        ConsumerChecks.produce(bootstrap, topic, partitions, 100, 50);
        b.consumer.close();
        int bRecords = b.records;
        ConsumerChecks.pollUntil(List.of(a), () -> a.owned.size() == partitions && seen.size() == 600,
                Duration.ofSeconds(30), "the first member to own every partition again and read all 600 records");
        check("share.leave.owned", a.owned.size());
        equal(bRecords, b.records, "records b read after closing");
        check("share.records", seen.size());
        check("share.duplicates", a.duplicates + b.duplicates);
        Map<TopicPartition, OffsetAndMetadata> committed = a.consumer.committed(Checks.partitions(topic, partitions));
        List<Long> offsets = new ArrayList<>();
        for (TopicPartition tp : Checks.partitions(topic, partitions)) {
            OffsetAndMetadata o = committed.get(tp);
            require(o != null, "no committed offset for " + tp);
            offsets.add(o.offset());
        }
        check("share.committed", offsets);
        equal(1, describe(bootstrap, group).members().size(), "described members after b left");
        a.consumer.close();
    }
}
