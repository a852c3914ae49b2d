package peers.tools;

import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Transactional writes that Kafka's tools cannot make on their own, for the tool checks of
 * kafka-broker/tests/kafka_tools.rs.
 *
 * <pre>
 * Txns BOOTSTRAP TOPIC TRANSACTIONAL_ID COMPRESSION PLAN
 * </pre>
 * PLAN is a list of steps separated by commas, each {@code c:N} (a transaction of N records
 * to partition 0, committed), {@code a:N} (the same, aborted) or {@code h:N} (N records in a
 * transaction left open: the process halts without ending it, as a crashed producer would).
 * Record i of the whole run has key {@code k<i>} and value {@code v<i>}. Prints one line per
 * step: {@code STEP <kind> <first offset> <last offset>}.
 */
public final class Txns {
    private Txns() {}

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, args[2]);
        props.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, args[3]);
        props.put(ProducerConfig.LINGER_MS_CONFIG, "50");
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        String topic = args[1];
        KafkaProducer<String, String> producer = new KafkaProducer<>(props);
        producer.initTransactions();
        int next = 0;
        for (String step : args[4].split(",")) {
            String[] kv = step.split(":");
            int n = Integer.parseInt(kv[1]);
            producer.beginTransaction();
            long first = -1;
            long last = -1;
            java.util.List<java.util.concurrent.Future<org.apache.kafka.clients.producer.RecordMetadata>> sent =
                new java.util.ArrayList<>();
            for (int i = 0; i < n; i++, next++) {
                sent.add(producer.send(new ProducerRecord<>(topic, 0, "k" + next, "v" + next)));
            }
            producer.flush();
            for (java.util.concurrent.Future<org.apache.kafka.clients.producer.RecordMetadata> f : sent) {
                long o = f.get().offset();
                if (first < 0) {
                    first = o;
                }
                last = o;
            }
            System.out.println("STEP " + kv[0] + " " + first + " " + last);
            System.out.flush();
            switch (kv[0]) {
                case "c":
                    producer.commitTransaction();
                    break;
                case "a":
                    producer.abortTransaction();
                    break;
                default:
                    Runtime.getRuntime().halt(0);
            }
        }
        producer.close();
    }
}
