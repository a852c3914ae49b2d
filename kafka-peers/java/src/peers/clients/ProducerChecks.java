package peers.clients;

import static peers.clients.Checks.check;
import static peers.clients.Checks.equal;
import static peers.clients.Checks.require;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.Future;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;

/**
 * The Java producer against a broker: idempotent acks=all with every codec and headers,
 * `max.in.flight.requests.per.connection=5` ordering, transactions (commit, abort, what
 * read_committed and read_uncommitted consumers see).
 */
public final class ProducerChecks {
    private ProducerChecks() {}

    static final String[] CODECS = {"none", "gzip", "snappy", "lz4", "zstd"};

    public static void main(String[] args) {
        Map<String, Checks.Scenario> all = new LinkedHashMap<>();
        all.put("codecs", ProducerChecks::codecs);
        all.put("ordering", ProducerChecks::ordering);
        all.put("transactions", ProducerChecks::transactions);
        Checks.main("ProducerChecks", args, all);
    }

    /** Per codec: 600 records over 3 partitions with two headers each, read back in order. */
    static void codecs(String bootstrap) throws Exception {
        Map<String, Integer> topics = new LinkedHashMap<>();
        for (String codec : CODECS) {
            topics.put("codec-" + codec, 3);
        }
        Checks.createTopics(bootstrap, topics);
        final int n = 600;
        for (String codec : CODECS) {
            String topic = "codec-" + codec;
            Properties p = Checks.producer(bootstrap);
            p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec);
            p.put(ProducerConfig.LINGER_MS_CONFIG, "20");
            p.put(ProducerConfig.CLIENT_ID_CONFIG, "codec-" + codec);
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
                for (int i = 0; i < n; i++) {
                    // Compressible values: the same text repeated, with the index in front.
                    String value = i + ":" + codec + "-value-".repeat(8);
                    ProducerRecord<String, String> r = new ProducerRecord<>(topic, i % 3, "k" + i, value);
                    r.headers().add("index", Integer.toString(i).getBytes(StandardCharsets.UTF_8));
                    r.headers().add("codec", codec.getBytes(StandardCharsets.UTF_8));
                    if (i % 7 == 0) {
                        r.headers().add("empty", new byte[0]);
                    }
                    sent.add(producer.send(r));
                }
                producer.flush();
                for (Future<RecordMetadata> f : sent) {
                    f.get();
                }
            }
            Properties c = Checks.consumer(bootstrap, null);
            List<ConsumerRecord<String, String>> got;
            try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
                got = Checks.readAll(consumer, Checks.partitions(topic, 3), Duration.ofSeconds(30));
            }
            equal(n, got.size(), codec + ": records read back");
            Map<Integer, Integer> lastIndex = new HashMap<>();
            int headersOk = 0;
            for (ConsumerRecord<String, String> r : got) {
                int i = Integer.parseInt(r.value().substring(0, r.value().indexOf(':')));
                equal("k" + i, r.key(), codec + ": key of record " + i);
                equal(i % 3, r.partition(), codec + ": partition of record " + i);
                Integer before = lastIndex.put(r.partition(), i);
                require(before == null || before + 3 == i, codec + ": partition " + r.partition()
                        + " has record " + i + " after " + before);
                equal((long) (i / 3), r.offset(), codec + ": offset of record " + i);
                Header index = r.headers().lastHeader("index");
                Header codecHeader = r.headers().lastHeader("codec");
                Header empty = r.headers().lastHeader("empty");
                require(index != null && codecHeader != null, codec + ": headers missing on " + i);
                equal(Integer.toString(i), new String(index.value(), StandardCharsets.UTF_8), codec + ": header");
                equal(codec, new String(codecHeader.value(), StandardCharsets.UTF_8), codec + ": header");
                if (i % 7 == 0) {
                    require(empty != null && empty.value() != null && empty.value().length == 0,
                            codec + ": empty header of " + i);
                    equal(3, r.headers().toArray().length, codec + ": header count of " + i);
                } else {
                    require(empty == null, codec + ": unexpected header on " + i);
                }
                headersOk++;
            }
            check("codec." + codec + ".records", got.size());
            check("codec." + codec + ".headers", headersOk);
        }
    }

    /**
     * 20000 records to 4 partitions with max.in.flight=5 and small batches (many requests in
     * flight per partition): each partition holds its records once and in the order sent.
     */
    static void ordering(String bootstrap) throws Exception {
        String topic = "ordering";
        final int partitions = 4;
        final int n = 20000;
        Checks.createTopics(bootstrap, Map.of(topic, partitions));
        Properties p = Checks.producer(bootstrap);
        p.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "5");
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, "2048");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4");
        long[] offsets = new long[n];
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            List<Future<RecordMetadata>> sent = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                sent.add(producer.send(new ProducerRecord<>(topic, i % partitions, null, Integer.toString(i))));
            }
            producer.flush();
            for (int i = 0; i < n; i++) {
                offsets[i] = sent.get(i).get().offset();
            }
        }
        for (int i = 0; i < n; i++) {
            equal((long) (i / partitions), offsets[i], "acknowledged offset of record " + i);
        }
        Properties c = Checks.consumer(bootstrap, null);
        c.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "5000");
        List<ConsumerRecord<String, String>> got;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            got = Checks.readAll(consumer, Checks.partitions(topic, partitions), Duration.ofSeconds(60));
        }
        Set<Integer> seen = new HashSet<>();
        Map<Integer, Integer> last = new HashMap<>();
        int duplicates = 0;
        int outOfOrder = 0;
        for (ConsumerRecord<String, String> r : got) {
            int i = Integer.parseInt(r.value());
            if (!seen.add(i)) {
                duplicates++;
            }
            Integer before = last.put(r.partition(), i);
            if ((before == null ? i != r.partition() : before + partitions != i) || r.offset() != i / partitions) {
                outOfOrder++;
            }
        }
        equal(0, duplicates, "duplicates");
        equal(0, outOfOrder, "records out of order");
        equal(n, seen.size(), "distinct records read back");
        check("ordering.records", seen.size());
        check("ordering.duplicates", duplicates);
        check("ordering.out_of_order", outOfOrder);
    }

    /**
     * A transactional producer over 2 partitions: commit 10, abort 10, commit 6 with a group's
     * offsets, abort other offsets. read_committed
     * reads the 16 committed records, read_uncommitted all 26; the end offsets agree with the
     * markers (one per partition per transaction).
     */
    static void transactions(String bootstrap) throws Exception {
        String topic = "txn";
        Checks.createTopics(bootstrap, Map.of(topic, 2));
        Properties p = Checks.producer(bootstrap);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "java-txn");
        p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "30000");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            producer.beginTransaction();
            for (int i = 0; i < 10; i++) {
                producer.send(new ProducerRecord<>(topic, i % 2, null, "committed-a-" + i));
            }
            producer.commitTransaction();
            producer.beginTransaction();
            for (int i = 0; i < 10; i++) {
                producer.send(new ProducerRecord<>(topic, i % 2, null, "aborted-" + i));
            }
            producer.flush();
            producer.abortTransaction();
            producer.beginTransaction();
            for (int i = 0; i < 6; i++) {
                producer.send(new ProducerRecord<>(topic, i % 2, null, "committed-b-" + i));
            }
            // Consume-transform-produce: the group's offsets commit with the transaction...
            producer.sendOffsetsToTransaction(Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(5, "txn")),
                    new ConsumerGroupMetadata("txn-group"));
            producer.commitTransaction();
            // ...and not when it aborts.
            producer.beginTransaction();
            producer.sendOffsetsToTransaction(Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(9)),
                    new ConsumerGroupMetadata("txn-group"));
            producer.abortTransaction();
        }
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(Checks.consumer(bootstrap, "txn-group"))) {
            OffsetAndMetadata o = c.committed(Set.of(new TopicPartition(topic, 0))).get(new TopicPartition(topic, 0));
            require(o != null, "no offset committed by sendOffsetsToTransaction");
            equal(5L, o.offset(), "offset committed by the transaction (the aborted one's 9 left out)");
            equal("txn", o.metadata(), "metadata committed by the transaction");
            check("txn.group_offset", o.offset() + " " + o.metadata());
        }
        Set<TopicPartition> tps = Checks.partitions(topic, 2);
        for (String isolation : new String[] {"read_committed", "read_uncommitted"}) {
            Properties c = Checks.consumer(bootstrap, null);
            c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
            List<String> values = new ArrayList<>();
            Map<TopicPartition, Long> end;
            try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
                for (ConsumerRecord<String, String> r : Checks.readAll(consumer, tps, Duration.ofSeconds(30))) {
                    values.add(r.value());
                }
                end = consumer.endOffsets(tps);
            }
            long committed = values.stream().filter(v -> v.startsWith("committed-")).count();
            long aborted = values.stream().filter(v -> v.startsWith("aborted-")).count();
            equal(16L, committed, isolation + ": committed records " + values);
            equal(isolation.equals("read_committed") ? 0L : 10L, aborted, isolation + ": aborted records " + values);
            equal(new HashSet<>(values).size(), values.size(), isolation + ": duplicates in " + values);
            // Each partition: 13 records and 3 markers, all transactions ended.
            for (TopicPartition tp : tps) {
                equal(16L, end.get(tp), isolation + ": end offset of " + tp);
            }
            check("txn." + isolation + ".committed", committed);
            check("txn." + isolation + ".aborted", aborted);
            check("txn." + isolation + ".end_offsets", end.get(new TopicPartition(topic, 0)) + "," + end.get(new TopicPartition(topic, 1)));
        }
    }
}
