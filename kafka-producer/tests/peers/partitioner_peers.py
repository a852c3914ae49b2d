"""Where third-party producers put keyed records, for tests/partitioner_peers.rs.

  python3 partitioner_peers.py confluent    --bootstrap HOST:PORT --topic T --partitions 8
  python3 partitioner_peers.py kafka-python --bootstrap HOST:PORT --topic T --partitions 8

Produces a fixed set of keys (text, binary, empty, non-ASCII) to the topic and prints, for
every acknowledged record, one line

  PLACED <partitioner> <key> <partition>

where <key> is `x` followed by the key's bytes in hex (`x` alone: the empty key), or `-` for
a null key,

from the delivery reports, then `DONE <partitioner> <records>` per partitioner. The Rust
test computes the same placements and compares.

confluent (librdkafka): `murmur2_random` (the Java-compatible one) for every key; `murmur2`,
`consistent` and `fnv1a` for a subset, plus records with a null key, which those three hash
as the empty key. kafka-python: its default partitioner (murmur2, as Java's) for every key.

Exit codes: 0 done, 1 failed (a `FAIL:` line says why), 3 the client library is missing
(a `MISSING PEER:` line).
"""

import argparse
import random
import sys
import time

EXIT_FAIL = 1
EXIT_MISSING_PEER = 3


def fail(msg):
    print(f"FAIL: {msg}", flush=True)
    sys.exit(EXIT_FAIL)


def missing_peer(what):
    print(f"MISSING PEER: {what}", flush=True)
    sys.exit(EXIT_MISSING_PEER)


def log(msg):
    print(msg, flush=True)


def keys(count, seed):
    """`count` distinct keys: mostly `key-<i>`, then random binary ones of every length up
    to 64 (all tail lengths of murmur2), the empty key and some non-ASCII text."""
    rng = random.Random(seed)
    special = [b""] + [f"ключ-{i}-鍵".encode() for i in range(9)]
    binary = []
    seen = set()
    while len(binary) < 200:
        k = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 65)))
        if k not in seen and not k.startswith(b"key-"):
            seen.add(k)
            binary.append(k)
    text = [f"key-{i}".encode() for i in range(max(0, count - len(special) - len(binary)))]
    return (text + binary + special)[:count]


def report(partitioner, placed):
    for key, partition in placed:
        shown = "-" if key is None else "x" + key.hex()
        print(f"PLACED {partitioner} {shown} {partition}")
    print(f"DONE {partitioner} {len(placed)}", flush=True)


def confluent(args, all_keys):
    try:
        import confluent_kafka
        from confluent_kafka import Producer
    except ImportError as e:
        missing_peer(f"python module confluent_kafka (confluent-kafka): {e}")
    log(f"confluent-kafka {confluent_kafka.version()[0]}, librdkafka "
        f"{confluent_kafka.libversion()[0]}")
    subset = all_keys[::7]
    runs = [("murmur2_random", all_keys), ("murmur2", subset + [None] * 3),
            ("consistent", subset + [None] * 3), ("fnv1a", subset + [None] * 3)]
    deadline = time.monotonic() + args.timeout
    for name, run_keys in runs:
        producer = Producer({
            "bootstrap.servers": args.bootstrap,
            "client.id": "partitioner-peers",
            "broker.address.family": "v4",
            "partitioner": name,
            "linger.ms": 5,
            "acks": "1",
            "enable.idempotence": False,
            "message.timeout.ms": int(args.timeout * 1000),
            "error_cb": lambda err: log(f"librdkafka error: {err}"),
        })
        wait_for_partitions(lambda: confluent_partitions(producer, args), args, deadline)
        placed = [None] * len(run_keys)
        errors = []

        def delivered(index):
            def cb(err, msg):
                if err is not None:
                    errors.append(f"record {index}: {err}")
                else:
                    placed[index] = msg.partition()
            return cb

        for i, key in enumerate(run_keys):
            while True:
                try:
                    producer.produce(args.topic, key=key, value=b"v", on_delivery=delivered(i))
                    break
                except BufferError:
                    producer.poll(0.05)
        left = producer.flush(max(1.0, deadline - time.monotonic()))
        if errors:
            fail(f"{name}: {len(errors)} records not delivered, first: {errors[0]}")
        if left:
            fail(f"{name}: {left} records not delivered in time")
        missing = [i for i, p in enumerate(placed) if p is None]
        if missing:
            fail(f"{name}: no delivery report for records {missing[:10]}")
        report(name, list(zip(run_keys, placed)))


def confluent_partitions(producer, args):
    md = producer.list_topics(args.topic, timeout=5)
    t = md.topics.get(args.topic)
    return None if t is None or t.error is not None else len(t.partitions)


def wait_for_partitions(get, args, deadline):
    # An auto-created topic can take another metadata round trip to show up.
    while True:
        n = get()
        if n == args.partitions:
            return
        if time.monotonic() > deadline:
            fail(f"topic {args.topic}: expected {args.partitions} partitions, metadata says {n}")
        time.sleep(0.2)


def kafka_python(args, all_keys):
    try:
        import kafka
        from kafka import KafkaProducer
    except ImportError as e:
        missing_peer(f"python module kafka (kafka-python): {e}")
    log(f"kafka-python {kafka.__version__}")
    producer = KafkaProducer(bootstrap_servers=args.bootstrap, client_id="partitioner-peers",
                             acks=1, linger_ms=5, enable_idempotence=False,
                             request_timeout_ms=15000, max_block_ms=int(args.timeout * 1000))
    deadline = time.monotonic() + args.timeout

    def partitions():
        parts = producer.partitions_for(args.topic)
        return None if parts is None else len(parts)

    wait_for_partitions(partitions, args, deadline)
    futures = [producer.send(args.topic, key=k, value=b"v") for k in all_keys]
    producer.flush(timeout=max(1.0, deadline - time.monotonic()))
    placed = []
    for key, f in zip(all_keys, futures):
        md = f.get(timeout=max(1.0, deadline - time.monotonic()))
        placed.append((key, md.partition))
    producer.close(timeout=5)
    report("kafka-python-default", placed)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("client", choices=["confluent", "kafka-python"])
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--partitions", type=int, default=8)
    p.add_argument("--count", type=int, default=2000)
    p.add_argument("--seed", type=int, default=794)
    p.add_argument("--timeout", type=float, default=30.0)
    args = p.parse_args()
    all_keys = keys(args.count, args.seed)
    if len(set(all_keys)) != len(all_keys):
        fail("the key set has duplicates")
    if args.client == "confluent":
        confluent(args, all_keys)
    else:
        kafka_python(args, all_keys)
    log("OK")


if __name__ == "__main__":
    main()
