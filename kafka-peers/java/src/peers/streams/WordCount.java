package peers.streams;

import java.io.IOException;
import java.io.InputStream;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Produced;

/**
 * A Kafka Streams word count with exactly-once v2, and the steps around it, for a test that
 * kills a broker while it runs:
 *
 * <pre>
 *   setup BOOTSTRAP INPUT OUTPUT PARTITIONS RF      create the two topics
 *   produce BOOTSTRAP INPUT FROM COUNT [PER_SEC]    lines FROM..FROM+COUNT-1 (see line()),
 *                                                   PER_SEC lines a second if given
 *   run BOOTSTRAP APP_ID INPUT OUTPUT STATE_DIR     the application, until stdin closes
 *   read BOOTSTRAP OUTPUT IDLE_MS                   the last count of every word, read_committed,
 *                                                   and how many more updates read_uncommitted sees
 * </pre>
 *
 * The application groups by word (a repartition topic) and counts into a state store (its
 * changelog topic), writing every new count to OUTPUT.
 */
public final class WordCount {
    private WordCount() {}

    /** Line i: three words, so that every word's total is known from the number of lines. */
    static String line(long i) {
        return "a" + (i % 7) + " b" + (i % 11) + " c" + (i % 13);
    }

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "setup" -> setup(args[1], args[2], args[3], Integer.parseInt(args[4]), Short.parseShort(args[5]));
            case "produce" -> produce(args[1], args[2], Long.parseLong(args[3]), Long.parseLong(args[4]),
                    args.length > 5 ? Long.parseLong(args[5]) : 0);
            case "run" -> run(args[1], args[2], args[3], args[4], args[5]);
            case "read" -> read(args[1], args[2], Long.parseLong(args[3]));
            default -> throw new IllegalArgumentException("unknown step " + args[0]);
        }
    }

    static void setup(String bootstrap, String input, String output, int partitions, short rf) throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(p)) {
            Map<String, String> configs = Map.of("min.insync.replicas", "2");
            admin.createTopics(List.of(
                    new NewTopic(input, partitions, rf).configs(configs),
                    new NewTopic(output, partitions, rf).configs(configs))).all().get();
        }
        System.out.println("SETUP done");
    }

    static void produce(String bootstrap, String input, long from, long count, long perSec) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "60000");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        long started = System.nanoTime();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (long i = from; i < from + count; i++) {
                if (perSec > 0) {
                    long due = started + (i - from) * 1_000_000_000L / perSec;
                    long wait = due - System.nanoTime();
                    if (wait > 0) {
                        Thread.sleep(wait / 1_000_000L, (int) (wait % 1_000_000L));
                    }
                }
                producer.send(new ProducerRecord<>(input, Long.toString(i), line(i)));
            }
            producer.flush();
        }
        System.out.println("PRODUCED " + count);
    }

    static void run(String bootstrap, String appId, String input, String output, String stateDir) throws Exception {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 3);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 2);
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.topicPrefix("min.insync.replicas"), "2");
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 10000);
        p.put(StreamsConfig.producerPrefix(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG), 60000);
        p.put(StreamsConfig.producerPrefix(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG), 20000);

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .flatMap((k, v) -> {
                    List<KeyValue<String, String>> words = new java.util.ArrayList<>();
                    for (String w : v.split(" ")) {
                        words.add(KeyValue.pair(w, w));
                    }
                    return words;
                })
                .groupByKey(Grouped.with("words", Serdes.String(), Serdes.String()))
                .count()
                .toStream()
                .to(output, Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(builder.build(), p);
        // A task that fails (a broker gone mid-transaction) is replaced; exactly-once aborts
        // what it had not committed.
        streams.setUncaughtExceptionHandler(e -> {
            System.out.println("ERROR " + e);
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.REPLACE_THREAD;
        });
        streams.setStateListener((now, before) -> System.out.println("STATE " + now));
        streams.start();
        // Until the test closes our stdin.
        InputStream in = System.in;
        byte[] buf = new byte[64];
        try {
            while (in.read(buf) >= 0) {
                // ignore
            }
        } catch (IOException e) {
            // stdin gone: stop
        }
        streams.close(Duration.ofSeconds(30));
        System.out.println("STOPPED");
    }

    static void read(String bootstrap, String output, long idleMs) {
        long committed = readAt(bootstrap, output, idleMs, "read_committed", true);
        long all = readAt(bootstrap, output, idleMs, "read_uncommitted", false);
        // Updates of aborted transactions: visible only to read_uncommitted.
        System.out.println("UNCOMMITTED_EXTRA " + (all - committed));
    }

    /** Reads OUTPUT to its end at one isolation level; returns the number of updates. */
    static long readAt(String bootstrap, String output, long idleMs, String isolation, boolean print) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, LongDeserializer.class);
        Map<String, Long> last = new TreeMap<>();
        Map<String, Long> updates = new HashMap<>();
        try (KafkaConsumer<String, Long> consumer = new KafkaConsumer<>(p)) {
            List<TopicPartition> parts = consumer.partitionsFor(output).stream()
                    .map(i -> new TopicPartition(output, i.partition())).toList();
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            long quietSince = System.currentTimeMillis();
            while (System.currentTimeMillis() - quietSince < idleMs) {
                var records = consumer.poll(Duration.ofMillis(200));
                for (ConsumerRecord<String, Long> r : records) {
                    Long before = last.put(r.key(), r.value());
                    updates.merge(r.key(), 1L, Long::sum);
                    // Counts of one word only grow, by one per occurrence, in one partition.
                    if (print && before != null && r.value() <= before) {
                        System.out.println("REGRESSION " + r.key() + " " + before + " -> " + r.value());
                    }
                }
                if (!records.isEmpty()) {
                    quietSince = System.currentTimeMillis();
                }
            }
        }
        if (print) {
            for (Map.Entry<String, Long> e : last.entrySet()) {
                System.out.println("COUNT " + e.getKey() + " " + e.getValue() + " " + updates.get(e.getKey()));
            }
        }
        return updates.values().stream().mapToLong(Long::longValue).sum();
    }
}
