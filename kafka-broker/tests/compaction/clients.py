"""Third-party clients for tests/compaction.rs.

Commands (each prints what the Rust test checks, and exits 3 when its library is missing):
  create   confluent-kafka AdminClient creates the compacted topic with the given configs.
  produce  confluent-kafka writes --count records: record i has key "key-<i % keys>" and value
           "v<i>", except that the last --tombstones records are tombstones (null value) for
           keys 0, 1, ...; one partition, idempotent, so record i lands at offset i. Then a
           record without a key must be refused with INVALID_RECORD. Prints "produced <n>".
  read     kafka-python reads the partition from the beginning to its end and prints one line
           per record: "<offset>\t<key>\t<value or NULL>".
"""

import argparse
import sys
import time

EXIT_MISSING_PEER = 3


def fail(msg):
    print(f"FAIL: {msg}", flush=True)
    sys.exit(1)


def create(args):
    try:
        from confluent_kafka.admin import AdminClient, NewTopic
    except ImportError:
        print("MISSING PEER: confluent-kafka", flush=True)
        sys.exit(EXIT_MISSING_PEER)
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    configs = dict(kv.split("=", 1) for kv in args.config)
    futures = admin.create_topics([NewTopic(args.topic, 1, 1, config=configs)])
    futures[args.topic].result(timeout=args.timeout)
    print("created", flush=True)


def produce(args):
    try:
        from confluent_kafka import KafkaError, Producer
    except ImportError:
        print("MISSING PEER: confluent-kafka", flush=True)
        sys.exit(EXIT_MISSING_PEER)
    p = Producer({
        "bootstrap.servers": args.bootstrap,
        "enable.idempotence": True,
        "linger.ms": 2,
        "batch.size": 2048,
    })
    errors = []

    def report(err, msg):
        if err is not None:
            errors.append(str(err))

    first_tombstone = args.count - args.tombstones
    for i in range(args.count):
        key = f"key-{i % args.keys}" if i < first_tombstone else f"key-{i - first_tombstone}"
        value = None if i >= first_tombstone else f"v{i}"
        p.produce(args.topic, key=key, value=value, partition=0, on_delivery=report)
        if i % 500 == 0:
            p.poll(0)
    left = p.flush(args.timeout)
    if left or errors:
        fail(f"{left} records not delivered, errors: {errors[:3]}")
    refused = []

    def keyless(err, msg):
        refused.append(err)

    p.produce(args.topic, value=b"no key", partition=0, on_delivery=keyless)
    p.flush(args.timeout)
    if len(refused) != 1 or refused[0] is None:
        fail(f"a record without a key was not refused: {refused}")
    if refused[0].code() != KafkaError.INVALID_RECORD:
        fail(f"a record without a key was refused with {refused[0]}, not INVALID_RECORD")
    print(f"produced {args.count}", flush=True)


def read(args):
    try:
        from kafka import KafkaConsumer, TopicPartition
    except ImportError:
        print("MISSING PEER: kafka-python", flush=True)
        sys.exit(EXIT_MISSING_PEER)
    tp = TopicPartition(args.topic, 0)
    c = KafkaConsumer(bootstrap_servers=args.bootstrap, enable_auto_commit=False)
    c.assign([tp])
    c.seek_to_beginning(tp)
    end = c.end_offsets([tp])[tp]
    deadline = time.time() + args.timeout
    lines = []
    while c.position(tp) < end:
        if time.time() > deadline:
            fail(f"read stopped at {c.position(tp)} of {end}")
        for records in c.poll(timeout_ms=500).values():
            for r in records:
                value = "NULL" if r.value is None else r.value.decode()
                lines.append(f"{r.offset}\t{r.key.decode()}\t{value}")
    c.close()
    print("\n".join(lines), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("command", choices=["create", "produce", "read"])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--config", action="append", default=[])
    ap.add_argument("--count", type=int, default=0)
    ap.add_argument("--keys", type=int, default=1)
    ap.add_argument("--tombstones", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=30.0)
    args = ap.parse_args()
    {"create": create, "produce": produce, "read": read}[args.command](args)


if __name__ == "__main__":
    main()
