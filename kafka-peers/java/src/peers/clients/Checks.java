package peers.clients;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * What the client programs share: `CHECK name value` lines for the Rust test, assertions that
 * end the program with a message, and the clients' settings.
 */
final class Checks {
    private Checks() {}

    /** A failed expectation: the program prints it and exits non-zero. */
    static final class Failed extends RuntimeException {
        Failed(String message) {
            super(message);
        }
    }

    /** A line the Rust test reads back and asserts on. */
    static void check(String name, Object value) {
        System.out.println("CHECK " + name + " " + value);
        System.out.flush();
    }

    static void require(boolean condition, String message) {
        if (!condition) {
            throw new Failed(message);
        }
    }

    static void equal(Object expected, Object actual, String what) {
        if (expected == null ? actual != null : !expected.equals(actual)) {
            throw new Failed(what + ": expected " + expected + ", got " + actual);
        }
    }

    /** Runs the named scenarios ("all" runs each of `all`), reporting the first failure. */
    interface Scenario {
        void run(String bootstrap) throws Exception;
    }

    /**
     * Client settings every client of the run gets on top of its own (security.protocol,
     * ssl.*, sasl.*): `--client-properties=FILE`.
     */
    static final Properties EXTRA = new Properties();

    static Properties withExtra(Properties p) {
        p.putAll(EXTRA);
        return p;
    }

    static void main(String program, String[] args, Map<String, Scenario> all) {
        if (args.length < 1) {
            System.err.println("usage: " + program + " BOOTSTRAP [--client-properties=FILE] [SCENARIO...|all]");
            System.exit(2);
        }
        String bootstrap = args[0];
        List<String> names = new ArrayList<>();
        for (int i = 1; i < args.length; i++) {
            if (args[i].startsWith("--client-properties=")) {
                try (java.io.FileReader r = new java.io.FileReader(args[i].substring("--client-properties=".length()))) {
                    EXTRA.load(r);
                } catch (java.io.IOException e) {
                    System.err.println("cannot read " + args[i] + ": " + e);
                    System.exit(2);
                }
            } else if (args[i].equals("all")) {
                names.addAll(all.keySet());
            } else {
                names.add(args[i]);
            }
        }
        if (names.isEmpty()) {
            names.addAll(all.keySet());
        }
        for (String name : names) {
            Scenario s = all.get(name);
            if (s == null) {
                System.err.println("unknown scenario " + name + "; known: " + all.keySet());
                System.exit(2);
            }
            long t0 = System.nanoTime();
            try {
                s.run(bootstrap);
            } catch (Throwable e) {
                System.out.flush();
                System.err.println("FAILED in scenario " + name + ": " + e);
                e.printStackTrace();
                System.exit(1);
            }
            System.err.printf("scenario %s: %.1f s%n", name, (System.nanoTime() - t0) / 1e9);
            check("scenario." + name, "ok");
        }
        System.exit(0);
    }

    static Properties admin(String bootstrap) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        return withExtra(p);
    }

    static Properties producer(String bootstrap) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "60000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        return withExtra(p);
    }

    static Properties consumer(String bootstrap, String group) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        if (group != null) {
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
        }
        return withExtra(p);
    }

    /** Creates topics (name, partitions) and waits until they exist. */
    static void createTopics(String bootstrap, Map<String, Integer> topics) throws Exception {
        try (Admin admin = Admin.create(admin(bootstrap))) {
            List<NewTopic> all = new ArrayList<>();
            topics.forEach((name, n) -> all.add(new NewTopic(name, n, (short) 1)));
            admin.createTopics(all).all().get(30, TimeUnit.SECONDS);
        }
    }

    /**
     * Reads every record of `partitions` from the beginning to the end offsets (as this consumer's
     * isolation level sees them), within `timeout`.
     */
    static List<ConsumerRecord<String, String>> readAll(
            KafkaConsumer<String, String> consumer, Collection<TopicPartition> partitions, Duration timeout) {
        consumer.assign(partitions);
        consumer.seekToBeginning(partitions);
        Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
        List<ConsumerRecord<String, String>> out = new ArrayList<>();
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            boolean done = true;
            for (TopicPartition tp : partitions) {
                if (consumer.position(tp) < end.get(tp)) {
                    done = false;
                }
            }
            if (done) {
                return out;
            }
            require(System.nanoTime() < deadline, "reading " + partitions + " to " + end + " timed out with "
                    + out.size() + " records");
            for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                out.add(r);
            }
        }
    }

    static Set<TopicPartition> partitions(String topic, int n) {
        Set<TopicPartition> out = new java.util.TreeSet<>(
                java.util.Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition));
        for (int i = 0; i < n; i++) {
            out.add(new TopicPartition(topic, i));
        }
        return out;
    }
}
