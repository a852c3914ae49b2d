"""confluent-kafka (librdkafka) told the broker is Kafka 0.9.0 (api.version.request=false,
broker.version.fallback=0.9.0): it then speaks Produce and Fetch versions that carry magic 0
message sets, as it would to a 0.9 broker.

    confluent_legacy.py produce ADDR TOPIC N CODEC PREFIX
    confluent_legacy.py consume ADDR TOPIC N

Same message shapes and output as kafka_python_legacy.py: message i has key "PREFIX-key-i",
value "PREFIX-value-i", timestamp 1700000000000+i (dropped by magic 0); consume prints
"offset<TAB>key<TAB>value<TAB>timestamp_ms" (-1 for none), then "read N", exit 1 if short.
"""
import sys

from confluent_kafka import TIMESTAMP_NOT_AVAILABLE, Consumer, Producer, TopicPartition

BASE_TIMESTAMP = 1700000000000


def config(addr):
    return {
        "bootstrap.servers": addr,
        "client.id": "librdkafka-0.9.0",
        "api.version.request": False,
        "broker.version.fallback": "0.9.0",
        "log_level": 3,
    }


def produce(addr, topic, n, codec, prefix):
    p = Producer({**config(addr), "compression.codec": codec, "linger.ms": 100})
    failed = []

    def report(err, _msg):
        if err is not None:
            failed.append(err)

    for i in range(n):
        p.produce(
            topic,
            key=f"{prefix}-key-{i}",
            value=f"{prefix}-value-{i}",
            partition=0,
            timestamp=BASE_TIMESTAMP + i,
            on_delivery=report,
        )
    left = p.flush(30)
    if left or failed:
        sys.exit(f"{left} undelivered, errors: {failed}")
    print("produced", n)


def consume(addr, topic, n):
    c = Consumer({**config(addr), "group.id": "legacy-test", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    read = 0
    while read < n:
        m = c.poll(15)
        if m is None:
            break
        if m.error():
            print("error:", m.error(), file=sys.stderr)
            break
        kind, ts = m.timestamp()
        ts = -1 if kind == TIMESTAMP_NOT_AVAILABLE else ts
        key = m.key().decode() if m.key() is not None else ""
        print(m.offset(), key, m.value().decode(), ts, sep="\t")
        read += 1
    c.close()
    print("read", read)
    if read < n:
        sys.exit(1)


def main():
    cmd, addr, topic, n = sys.argv[1:5]
    if cmd == "produce":
        produce(addr, topic, int(n), sys.argv[5], sys.argv[6])
    elif cmd == "consume":
        consume(addr, topic, int(n))
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
