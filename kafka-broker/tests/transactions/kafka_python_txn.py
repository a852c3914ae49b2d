"""Transactions with kafka-python against the broker under test; the last line of output is
JSON for the Rust test. Exit 3: kafka-python is not installed.

  produce-txns BS TOPIC TID      commit c1 c2 c3, abort a1 a2 (flushed first), commit c4
  consume BS TOPIC ISOLATION N   values from the start until N or 8 s of nothing new
"""
import json
import sys
import time

try:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
except ImportError:
    print("kafka-python is not installed")
    sys.exit(3)

TIMEOUT = 20


def produce_txns(bs, topic, tid):
    p = KafkaProducer(bootstrap_servers=bs, transactional_id=tid, linger_ms=5)
    p.init_transactions()
    p.begin_transaction()
    for v in ["c1", "c2", "c3"]:
        p.send(topic, v.encode(), key=b"k")
    p.commit_transaction()
    p.begin_transaction()
    for v in ["a1", "a2"]:
        p.send(topic, v.encode(), key=b"k")
    p.flush(TIMEOUT)
    p.abort_transaction()
    p.begin_transaction()
    p.send(topic, b"c4", key=b"k")
    p.commit_transaction()
    p.close(TIMEOUT)
    print(json.dumps({"done": True}))


def consume(bs, topic, isolation, n):
    n = int(n)
    c = KafkaConsumer(bootstrap_servers=bs, isolation_level=isolation,
                      enable_auto_commit=False, auto_offset_reset="earliest")
    tp = TopicPartition(topic, 0)
    c.assign([tp])
    c.seek_to_beginning(tp)
    got = []
    last = time.time()
    while len(got) < n and time.time() - last < 8:
        for records in c.poll(timeout_ms=200).values():
            for r in records:
                got.append(r.value.decode())
                last = time.time()
    end = time.time() + 1
    while time.time() < end:
        for records in c.poll(timeout_ms=200).values():
            got.extend(r.value.decode() for r in records)
    c.close()
    print(json.dumps({"values": got}))


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    {"produce-txns": produce_txns, "consume": consume}[cmd](*args)


if __name__ == "__main__":
    main()
