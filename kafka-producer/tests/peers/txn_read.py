"""Reads a topic with confluent-kafka (librdkafka) at an isolation level, for tests/txn_broker.rs.

  python3 txn_read.py --bootstrap HOST:PORT --topic T --isolation read_committed|read_uncommitted
                      [--expect N] [--timeout S] [--committed-group G]

Assigns every partition of T from its beginning (no group) and reads until each partition
has reported its end (the last stable offset under read_committed, the high watermark under
read_uncommitted) with nothing new and at least N records were read. Prints one line per
record, `REC <partition> <offset> <value as hex>`, in arrival order, then `READ <count>`.
With --committed-group G it then prints `COMMITTED <partition> <offset>` for each partition
of --committed-topic (default T) as group G has it committed (-1: nothing), asking the broker for stable offsets only
(a commit inside an open transaction is not reported).

Exit codes: 0 done, 1 failed (a `FAIL:` line says why), 3 confluent-kafka is missing (a
`MISSING PEER:` line).
"""

import argparse
import sys
import time
import uuid


def fail(msg):
    print(f"FAIL: {msg}", flush=True)
    sys.exit(1)


try:
    from confluent_kafka import Consumer, KafkaError, TopicPartition, OFFSET_BEGINNING
except ImportError as e:  # depends on the machine
    print(f"MISSING PEER: python module confluent_kafka: {e}", flush=True)
    sys.exit(3)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--isolation", required=True, choices=["read_committed", "read_uncommitted"])
    ap.add_argument("--expect", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--committed-group")
    ap.add_argument("--committed-topic")
    args = ap.parse_args()
    deadline = time.monotonic() + args.timeout
    c = Consumer({
        "bootstrap.servers": args.bootstrap,
        "group.id": f"txn-read-{uuid.uuid4()}",
        "enable.auto.commit": False,
        "isolation.level": args.isolation,
        "auto.offset.reset": "earliest",
        "enable.partition.eof": True,
    })
    md = c.list_topics(args.topic, timeout=max(1.0, deadline - time.monotonic()))
    t = md.topics.get(args.topic)
    if t is None or t.error is not None or not t.partitions:
        fail(f"topic {args.topic} not in metadata: {t and t.error}")
    parts = sorted(t.partitions)
    c.assign([TopicPartition(args.topic, p, OFFSET_BEGINNING) for p in parts])
    at_end = set()
    count = 0
    while True:
        if time.monotonic() > deadline:
            fail(f"read {count} records (expected at least {args.expect}); "
                 f"partitions at their end: {sorted(at_end)} of {parts}")
        if count >= args.expect and at_end == set(parts):
            break
        m = c.poll(0.2)
        if m is None:
            continue
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                at_end.add(m.partition())
                continue
            fail(f"consumer error: {m.error()}")
        at_end.discard(m.partition())
        value = m.value() or b""
        print(f"REC {m.partition()} {m.offset()} {value.hex()}")
        count += 1
    print(f"READ {count}", flush=True)
    c.close()
    if args.committed_group:
        ctopic = args.committed_topic or args.topic
        g = Consumer({
            "bootstrap.servers": args.bootstrap,
            "group.id": args.committed_group,
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        })
        cmd = g.list_topics(ctopic, timeout=max(1.0, deadline - time.monotonic()))
        ct = cmd.topics.get(ctopic)
        if ct is None or ct.error is not None:
            fail(f"topic {ctopic} not in metadata")
        got = g.committed([TopicPartition(ctopic, p) for p in sorted(ct.partitions)],
                          timeout=max(1.0, deadline - time.monotonic()))
        for tp in got:
            if tp.error:
                fail(f"committed {tp}: {tp.error}")
            print(f"COMMITTED {tp.partition} {tp.offset if tp.offset >= 0 else -1}")
        g.close()
    sys.stdout.flush()


main()
