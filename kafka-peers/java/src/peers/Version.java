package peers;

import org.apache.kafka.common.utils.internals.AppInfoParser;

/** Prints the version of the Kafka client library on the class path. */
public final class Version {
    private Version() {}

    public static void main(String[] args) {
        System.out.println(AppInfoParser.getVersion());
    }
}
