package peers;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeProducersOptions;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Java client's side of kafka-peers/tests/our_clients.rs and capture_java.rs.
 *
 * <ul>
 *   <li>{@code read <bootstrap> <topic[,topic...]> <read_committed|read_uncommitted> <expect> <timeoutMs>}:
 *       reads the whole topic from the beginning (assigned, no group) until {@code expect}
 *       records came or the time is up, and prints one line per record: {@code REC <topic> <partition>
 *       <offset> <key hex|-> <value hex|-> <header key>=<value hex>...}.
 *   <li>{@code capture <bootstrap>}: the Java clients' usual calls, for the golden frames: an
 *       AdminClient doing what Kafka's tools do, producers with every codec (idempotent and
 *       not), a transactional producer committing and aborting, a consumer in a group.
 * </ul>
 */
public final class OurClientsPeer {
    private OurClientsPeer() {}

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "read" -> read(args[1], args[2], args[3], Integer.parseInt(args[4]), Long.parseLong(args[5]));
            case "capture" -> capture(args[1]);
            default -> throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }

    static String hex(byte[] b) {
        if (b == null) {
            return "-";
        }
        StringBuilder s = new StringBuilder();
        for (byte x : b) {
            s.append(String.format("%02x", x));
        }
        return s.length() == 0 ? "~" : s.toString();
    }

    static void read(String bootstrap, String topic, String isolation, int expect, long timeoutMs) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("isolation.level", isolation);
        p.put("enable.auto.commit", "false");
        p.put("client.id", "our-clients-reader");
        try (KafkaConsumer<byte[], byte[]> c =
                new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> tps = new ArrayList<>();
            for (String t : topic.split(",")) {
                c.partitionsFor(t).forEach(i -> tps.add(new TopicPartition(t, i.partition())));
            }
            c.assign(tps);
            c.seekToBeginning(tps);
            int seen = 0;
            long deadline = System.currentTimeMillis() + timeoutMs;
            while (seen < expect && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                    StringBuilder line = new StringBuilder();
                    line.append("REC ").append(r.topic()).append(' ').append(r.partition()).append(' ').append(r.offset());
                    line.append(' ').append(hex(r.key())).append(' ').append(hex(r.value()));
                    for (Header h : r.headers()) {
                        line.append(' ').append(h.key()).append('=').append(hex(h.value()));
                    }
                    System.out.println(line);
                    seen++;
                }
            }
            // Once the expected records came, a last short poll shows any extra one.
            for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) {
                System.out.println("REC " + r.topic() + " " + r.partition() + " " + r.offset() + " " + hex(r.key()) + " " + hex(r.value()));
            }
        }
    }

    static Properties base(String bootstrap, String clientId) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", clientId);
        return p;
    }

    static void produce(String bootstrap, String topic, String codec, boolean idempotent) {
        Properties p = base(bootstrap, "golden-java-producer-" + codec + (idempotent ? "-idempotent" : ""));
        p.put("compression.type", codec);
        p.put("linger.ms", "20");
        if (!idempotent) {
            p.put("enable.idempotence", "false");
            p.put("acks", "1");
        }
        try (KafkaProducer<byte[], byte[]> pr =
                new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            for (int i = 0; i < 6; i++) {
                ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, i % 3,
                        ("key-" + i).getBytes(StandardCharsets.UTF_8),
                        ("golden java " + codec + " record " + i).getBytes(StandardCharsets.UTF_8));
                r.headers().add("h1", "one".getBytes(StandardCharsets.UTF_8));
                r.headers().add("h2", null);
                pr.send(r);
            }
            pr.flush();
        }
    }

    static void capture(String bootstrap) throws Exception {
        String topic = "golden-java";
        String txnTopic = "golden-java-txn";
        String group = "golden-java-group";
        try (Admin admin = Admin.create(base(bootstrap, "golden-java-admin"))) {
            admin.createTopics(List.of(new NewTopic(topic, 3, (short) 1),
                    new NewTopic(txnTopic, 3, (short) 1),
                    new NewTopic("golden-java-doomed", 1, (short) 1).configs(Map.of("retention.ms", "3600000"))))
                    .all().get(60, TimeUnit.SECONDS);
            admin.listTopics().names().get();
            admin.describeTopics(List.of(topic)).allTopicNames().get();
            admin.describeCluster().nodes().get();
            ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            admin.describeConfigs(List.of(res)).all().get();
            admin.incrementalAlterConfigs(Map.of(res, List.of(
                    new AlterConfigOp(new ConfigEntry("retention.ms", "7200000"), AlterConfigOp.OpType.SET))))
                    .all().get();
            admin.describeConfigs(List.of(new ConfigResource(ConfigResource.Type.BROKER, "1"))).all().get();
            admin.createPartitions(Map.of("golden-java-doomed", NewPartitions.increaseTo(2))).all().get();
            admin.describeFeatures().featureMetadata().get();
            admin.describeMetadataQuorum().quorumInfo().get();
            admin.describeLogDirs(List.of(1)).allDescriptions().get();
        }
        for (String codec : List.of("none", "gzip", "snappy", "lz4", "zstd")) {
            produce(bootstrap, topic, codec, false);
            produce(bootstrap, topic, codec, true);
        }
        // Transactions: one committed with the group's offsets, one aborted.
        Properties tp = base(bootstrap, "golden-java-txn-producer");
        tp.put("transactional.id", "golden-java-txn");
        try (KafkaProducer<byte[], byte[]> pr =
                new KafkaProducer<>(tp, new ByteArraySerializer(), new ByteArraySerializer())) {
            pr.initTransactions();
            pr.beginTransaction();
            for (int i = 0; i < 3; i++) {
                pr.send(new ProducerRecord<>(txnTopic, i, null, ("committed " + i).getBytes(StandardCharsets.UTF_8)));
            }
            pr.sendOffsetsToTransaction(Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(1)),
                    new ConsumerGroupMetadata(group + "-txn"));
            pr.commitTransaction();
            pr.beginTransaction();
            pr.send(new ProducerRecord<>(txnTopic, 0, null, "aborted".getBytes(StandardCharsets.UTF_8)));
            pr.flush();
            pr.abortTransaction();
        }
        // A consumer in a group: subscribe, read everything, commit, leave.
        Properties cp = base(bootstrap, "golden-java-consumer");
        cp.put("group.id", group);
        cp.put("auto.offset.reset", "earliest");
        cp.put("enable.auto.commit", "false");
        cp.put("isolation.level", "read_committed");
        cp.put("heartbeat.interval.ms", "200");
        int want = 5 * 2 * 6;
        try (KafkaConsumer<byte[], byte[]> c =
                new KafkaConsumer<>(cp, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            c.subscribe(List.of(topic));
            int seen = 0;
            long deadline = System.currentTimeMillis() + 60_000;
            while (seen < want && System.currentTimeMillis() < deadline) {
                seen += c.poll(Duration.ofMillis(200)).count();
            }
            // Long enough for a few heartbeats.
            long until = System.currentTimeMillis() + 1500;
            while (System.currentTimeMillis() < until) {
                c.poll(Duration.ofMillis(100));
            }
            c.commitSync();
            Map<TopicPartition, Long> times = new HashMap<>();
            for (TopicPartition t : c.assignment()) {
                times.put(t, 0L);
            }
            c.offsetsForTimes(times);
            c.endOffsets(c.assignment());
            c.committed(c.assignment());
            System.out.println("CONSUMED " + seen);
        }
        try (Admin admin = Admin.create(base(bootstrap, "golden-java-admin-2"))) {
            Map<TopicPartition, OffsetSpec> specs = new HashMap<>();
            for (int i = 0; i < 3; i++) {
                specs.put(new TopicPartition(topic, i), OffsetSpec.latest());
            }
            admin.listOffsets(specs).all().get();
            admin.listOffsets(Map.of(new TopicPartition(topic, 0), OffsetSpec.earliest(),
                    new TopicPartition(topic, 1), OffsetSpec.maxTimestamp())).all().get();
            admin.listGroups().all().get();
            admin.describeConsumerGroups(List.of(group)).all().get();
            admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
            admin.alterConsumerGroupOffsets(group, Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(2)))
                    .all().get();
            admin.deleteConsumerGroupOffsets(group, Set.of(new TopicPartition(topic, 1))).all().get();
            admin.describeProducers(List.of(new TopicPartition(topic, 0)), new DescribeProducersOptions()).all().get();
            admin.listTransactions().all().get();
            admin.describeTransactions(List.of("golden-java-txn")).all().get();
            admin.deleteRecords(Map.of(new TopicPartition(topic, 2), RecordsToDelete.beforeOffset(3))).all().get();
            admin.deleteConsumerGroups(List.of(group)).all().get();
            admin.deleteTopics(List.of("golden-java-doomed")).all().get();
        }
        System.out.println("CAPTURED");
    }
}
