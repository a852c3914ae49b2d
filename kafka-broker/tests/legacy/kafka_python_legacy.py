"""kafka-python pinned to an old broker version (api_version), which fixes the request
versions and message format it uses: (0, 10, 1) Produce v2 / Fetch v3 with magic 1, (0, 9)
Produce v1 / Fetch v1 with magic 0; "auto" probes the broker (current versions, magic 2).

    kafka_python_legacy.py produce API ADDR TOPIC N CODEC PREFIX
    kafka_python_legacy.py consume API ADDR TOPIC N TIMEOUT_S

Produced message i has key "PREFIX-key-i", value "PREFIX-value-i" and the timestamp
1700000000000+i ms. consume prints "offset<TAB>key<TAB>value<TAB>timestamp_ms" (-1 for none)
per message from offset 0, then "read N"; it exits 1 if fewer than N arrive in TIMEOUT_S.
"""
import sys

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

BASE_TIMESTAMP = 1700000000000


def options(api):
    opts = {"client_id": "kafka-python-" + api}
    if api != "auto":
        opts["api_version"] = tuple(int(x) for x in api.split("."))
    return opts


def produce(api, addr, topic, n, codec, prefix):
    producer = KafkaProducer(
        bootstrap_servers=addr,
        compression_type=None if codec == "none" else codec,
        linger_ms=50,
        enable_idempotence=False,
        retries=0,
        **options(api),
    )
    futures = [
        producer.send(
            topic,
            key=f"{prefix}-key-{i}".encode(),
            value=f"{prefix}-value-{i}".encode(),
            partition=0,
            timestamp_ms=BASE_TIMESTAMP + i,
        )
        for i in range(n)
    ]
    producer.flush(30)
    for f in futures:
        f.get(10)
    producer.close()
    print("produced", n)


def consume(api, addr, topic, n, timeout_s):
    consumer = KafkaConsumer(
        bootstrap_servers=addr,
        enable_auto_commit=False,
        group_id=None,
        consumer_timeout_ms=int(timeout_s * 1000),
        **options(api),
    )
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek(tp, 0)
    read = 0
    for m in consumer:
        key = m.key.decode() if m.key is not None else ""
        ts = m.timestamp if m.timestamp is not None else -1
        print(m.offset, key, m.value.decode(), ts, sep="\t")
        read += 1
        if read >= n:
            break
    consumer.close()
    print("read", read)
    if read < n:
        sys.exit(1)


def main():
    cmd, api, addr, topic, n = sys.argv[1:6]
    if cmd == "produce":
        produce(api, addr, topic, int(n), sys.argv[6], sys.argv[7])
    elif cmd == "consume":
        consume(api, addr, topic, int(n), float(sys.argv[6]))
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
