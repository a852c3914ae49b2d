"""Where librdkafka (through confluent-kafka) puts keyed records, for tests/broker.rs.

  python3 place_keys.py --bootstrap HOST:PORT --topic T --partitions 8 --keys FILE
                        [--partitioner murmur2_random] [--timeout S]

FILE holds one key a line, in hex. Every key is produced once to T with the given
librdkafka partitioner; for each acknowledged record the script prints

  PLACED <key in hex> <partition>

then `DONE <records>`. The Rust test compares the partitions with those our producer chose.

Exit codes: 0 done, 1 failed (a `FAIL:` line says why), 3 confluent-kafka is missing
(a `MISSING PEER:` line).
"""

import argparse
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


try:
    import confluent_kafka
    from confluent_kafka import Producer
except ImportError as e:  # depends on the machine
    missing_peer(f"python module confluent_kafka (confluent-kafka): {e}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--partitions", type=int, required=True)
    p.add_argument("--keys", required=True)
    p.add_argument("--partitioner", default="murmur2_random")
    p.add_argument("--timeout", type=float, default=30.0)
    args = p.parse_args()
    with open(args.keys) as f:
        keys = [bytes.fromhex(line.strip()) for line in f if line.strip()]
    log(f"confluent-kafka {confluent_kafka.version()[0]}, librdkafka "
        f"{confluent_kafka.libversion()[0]}, {len(keys)} keys")
    deadline = time.monotonic() + args.timeout
    producer = Producer({
        "bootstrap.servers": args.bootstrap,
        "client.id": "producer-tests-place-keys",
        "broker.address.family": "v4",
        "partitioner": args.partitioner,
        "linger.ms": 5,
        "acks": "all",
        "message.timeout.ms": int(args.timeout * 1000),
        "error_cb": lambda err: log(f"librdkafka error: {err}"),
    })
    # An auto-created topic can take another metadata round trip to show all partitions.
    while True:
        md = producer.list_topics(args.topic, timeout=5)
        t = md.topics.get(args.topic)
        n = None if t is None or t.error is not None else len(t.partitions)
        if n == args.partitions:
            break
        if time.monotonic() > deadline:
            fail(f"topic {args.topic}: expected {args.partitions} partitions, metadata says {n}")
        time.sleep(0.1)
    placed = [None] * len(keys)
    errors = []

    def delivered(index):
        def cb(err, msg):
            if err is not None:
                errors.append(f"key {keys[index].hex()}: {err}")
            else:
                placed[index] = msg.partition()
        return cb

    for i, key in enumerate(keys):
        while True:
            try:
                producer.produce(args.topic, key=key, value=b"v", on_delivery=delivered(i))
                break
            except BufferError:
                producer.poll(0.05)
    left = producer.flush(max(1.0, deadline - time.monotonic()))
    if errors:
        fail(f"{len(errors)} records not delivered, first: {errors[0]}")
    if left:
        fail(f"{left} records not delivered in time")
    missing = [keys[i].hex() for i, p in enumerate(placed) if p is None]
    if missing:
        fail(f"no delivery report for keys {missing[:10]}")
    print("".join(f"PLACED {k.hex()} {p}\n" for k, p in zip(keys, placed)), end="")
    log(f"DONE {len(keys)}")


if __name__ == "__main__":
    main()
