#!/usr/bin/env python3
"""Client scenarios for capture.sh: drive kafka-python or confluent-kafka against the capture
server so that it records the request frames those clients really send.

Usage: capture_clients.py <kafka-python|confluent-kafka> <scenario> <bootstrap> [arg]
Scenarios: produce <compression|none>, idempotent <compression|none>, consume, admin.
Every step is bounded in time; errors are printed, and the exit code is 0 unless the driver
itself is broken, so that one failing client does not stop the capture run.
"""

import sys
import time

TOPIC_PREFIX = "golden"
HEADERS = [("h1", b"v1"), ("trace", b"abc")]


def kp_produce(bootstrap, compression, idempotent=False):
    from kafka import KafkaProducer

    kwargs = dict(
        bootstrap_servers=bootstrap,
        client_id="golden-kafka-python",
        linger_ms=50,
        request_timeout_ms=5000,
        max_block_ms=10000,
        # kafka-python 3 turns idempotence on by default; say which one we want.
        enable_idempotence=idempotent,
    )
    if compression != "none":
        kwargs["compression_type"] = compression
    if idempotent:
        kwargs["acks"] = "all"
    producer = KafkaProducer(**kwargs)
    topic = f"{TOPIC_PREFIX}-kp-{compression}"
    futures = [
        producer.send(topic, key=f"key-{i}".encode(), value=f"value {i} {compression}".encode(), headers=HEADERS)
        for i in range(3)
    ]
    producer.flush(timeout=10)
    for f in futures:
        print("sent", f.get(timeout=5))
    producer.close(timeout=5)
    return topic


def kp_consume(bootstrap):
    from kafka import KafkaConsumer

    topic = kp_produce(bootstrap, "none")
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        client_id="golden-kafka-python",
        group_id="golden-kp-group",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        heartbeat_interval_ms=1000,
        session_timeout_ms=10000,
    )
    consumer.subscribe([topic])
    got = 0
    deadline = time.time() + 7
    while time.time() < deadline:
        for recs in consumer.poll(timeout_ms=500).values():
            got += len(recs)
    print("consumed", got)
    consumer.commit()
    print("committed", consumer.committed(next(iter(consumer.assignment()), None)) if consumer.assignment() else None)
    consumer.close()


def kp_admin(bootstrap):
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="golden-kafka-python", request_timeout_ms=5000)
    topic = f"{TOPIC_PREFIX}-kp-admin"
    print(admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1, topic_configs={"retention.ms": "60000"})]))
    print(admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)]))
    print(admin.delete_topics([topic]))
    print(admin.list_topics())
    admin.close()


def ck_produce(bootstrap, compression, idempotent=False):
    from confluent_kafka import Producer

    conf = {
        "bootstrap.servers": bootstrap,
        "client.id": "golden-confluent-kafka",
        "linger.ms": 50,
        "compression.type": compression,
        "enable.idempotence": idempotent,
        "message.timeout.ms": 10000,
    }
    producer = Producer(conf)
    topic = f"{TOPIC_PREFIX}-ck-{compression}"

    def report(err, msg):
        print("delivery", err, msg.topic(), msg.partition(), msg.offset())

    for i in range(3):
        producer.produce(topic, key=f"key-{i}", value=f"value {i} {compression}", headers=HEADERS, on_delivery=report)
    producer.flush(10)
    return topic


def ck_consume(bootstrap):
    from confluent_kafka import Consumer

    topic = ck_produce(bootstrap, "none")
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": "golden-confluent-kafka",
            "group.id": "golden-ck-group",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "heartbeat.interval.ms": 1000,
            "session.timeout.ms": 10000,
        }
    )
    consumer.subscribe([topic])
    got = 0
    deadline = time.time() + 7
    while time.time() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            got += 1
    print("consumed", got)
    try:
        print("committed", consumer.commit(asynchronous=False))
    except Exception as e:  # noqa: BLE001 - report and go on
        print("commit failed:", e)
    consumer.close()


def ck_admin(bootstrap):
    from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": "golden-confluent-kafka"})
    topic = f"{TOPIC_PREFIX}-ck-admin"
    for t, f in admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1, config={"retention.ms": "60000"})], request_timeout=5).items():
        print("create", t, f.result(timeout=10))
    for r, f in admin.describe_configs([ConfigResource("topic", topic)], request_timeout=5).items():
        print("describe", r, f.result(timeout=10))
    for t, f in admin.delete_topics([topic], request_timeout=5).items():
        print("delete", t, f.result(timeout=10))
    print("topics", admin.list_topics(timeout=5).topics)


def main():
    client, scenario, bootstrap = sys.argv[1:4]
    arg = sys.argv[4] if len(sys.argv) > 4 else "none"
    kp = client == "kafka-python"
    if scenario == "produce":
        (kp_produce if kp else ck_produce)(bootstrap, arg)
    elif scenario == "idempotent":
        (kp_produce if kp else ck_produce)(bootstrap, arg, idempotent=True)
    elif scenario == "consume":
        (kp_consume if kp else ck_consume)(bootstrap)
    elif scenario == "admin":
        (kp_admin if kp else ck_admin)(bootstrap)
    else:
        sys.exit(f"unknown scenario {scenario}")


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # noqa: BLE001 - a client error must not stop the capture run
        print(f"{sys.argv[1:3]}: {type(e).__name__}: {e}")
