"""Transactions with confluent-kafka (librdkafka) against the broker under test.

Each command prints one JSON object on its last line: what the client saw, for the Rust
test to check. Exit 3: confluent-kafka is not installed.

  create BS TOPIC...             topics of one partition
  create-spread BS TOPIC P RF     a topic of P partitions, replication factor RF
  produce-spread BS TOPIC TID P  like produce-txns, record i to partition i % P: commit
                                 s0..s5, abort x0..x2 (flushed first), commit d0..d2
  consume-all BS TOPIC ISOLATION N   every partition from the start
  produce-plain BS TOPIC N       N records v0.. outside any transaction
  produce-txns BS TOPIC TID      commit c1 c2 c3, abort a1 a2 (flushed first), commit c4
  consume BS TOPIC ISOLATION N   values from the start until N or 8 s of nothing new
  open-txn BS TOPIC TID          begin, o1 o2 flushed, "open" on stdout, commit on a stdin line
  prepare BS TOPIC TID END       begin, p1 p2 flushed, "produced"; on a stdin line END (commit
                                 or abort) without waiting for more; "ended"
  set-config BS TOPIC KEY VALUE  a topic config (IncrementalAlterConfigs)
  hang BS TOPIC TID TIMEOUT_MS   begin, h1 flushed, "produced" on stdout, then sleeps
  fence BS TOPIC TID             a second producer of the id fences the first
  send-offsets BS IN OUT GROUP   consume-transform-produce: commit, then abort, offsets each
  list-offsets BS TOPIC          latest offset read_committed and read_uncommitted
"""
import json
import sys
import time

try:
    from confluent_kafka import (Consumer, IsolationLevel, KafkaException, OFFSET_BEGINNING,
                                 Producer, TopicPartition)
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry,
                                       ConfigResource, NewTopic, OffsetSpec, ResourceType)
except ImportError:
    print("confluent-kafka is not installed")
    sys.exit(3)

TIMEOUT = 20


def producer(bs, tid, **extra):
    conf = {"bootstrap.servers": bs, "transactional.id": tid, "linger.ms": 5}
    conf.update(extra)
    return Producer(conf)


def error_of(e):
    err = e.args[0]
    return {"name": err.name(), "fatal": err.fatal(), "abortable": err.txn_requires_abort(),
            "retriable": err.retriable()}


def create(bs, *topics):
    a = AdminClient({"bootstrap.servers": bs})
    for t, f in a.create_topics([NewTopic(t, 1, 1) for t in topics]).items():
        f.result(TIMEOUT)
    print(json.dumps({"created": list(topics)}))


def create_spread(bs, topic, partitions, rf):
    a = AdminClient({"bootstrap.servers": bs})
    for t, f in a.create_topics([NewTopic(topic, int(partitions), int(rf))]).items():
        f.result(TIMEOUT)
    print(json.dumps({"created": topic}))


def produce_spread(bs, topic, tid, partitions):
    partitions = int(partitions)
    p = producer(bs, tid)
    p.init_transactions(TIMEOUT)
    for prefix, n, commit in [("s", 6, True), ("x", 3, False), ("d", 3, True)]:
        p.begin_transaction()
        for i in range(n):
            p.produce(topic, f"{prefix}{i}".encode(), partition=i % partitions)
        if commit:
            p.commit_transaction(TIMEOUT)
        else:
            p.flush(TIMEOUT)
            p.abort_transaction(TIMEOUT)
    print(json.dumps({"done": True}))


def consume_all(bs, topic, isolation, n):
    n = int(n)
    c = Consumer({"bootstrap.servers": bs, "group.id": f"reader-{time.time_ns()}",
                  "auto.offset.reset": "earliest", "isolation.level": isolation,
                  "enable.auto.commit": False})
    md = c.list_topics(topic, timeout=TIMEOUT)
    parts = sorted(md.topics[topic].partitions)
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
    got = []
    last = time.time()
    while len(got) < n and time.time() - last < 10:
        m = c.poll(0.2)
        if m is None or m.error():
            continue
        got.append(m.value().decode())
        last = time.time()
    end = time.time() + 1
    while time.time() < end:
        m = c.poll(0.2)
        if m is not None and not m.error():
            got.append(m.value().decode())
    c.close()
    print(json.dumps({"values": sorted(got)}))


def produce_plain(bs, topic, n):
    p = Producer({"bootstrap.servers": bs})
    for i in range(int(n)):
        p.produce(topic, f"v{i}".encode())
    assert p.flush(TIMEOUT) == 0
    print(json.dumps({"produced": int(n)}))


def produce_txns(bs, topic, tid):
    p = producer(bs, tid)
    p.init_transactions(TIMEOUT)
    p.begin_transaction()
    for v in ["c1", "c2", "c3"]:
        p.produce(topic, v.encode(), key=b"k")
    p.commit_transaction(TIMEOUT)
    p.begin_transaction()
    for v in ["a1", "a2"]:
        p.produce(topic, v.encode(), key=b"k")
    p.flush(TIMEOUT)
    p.abort_transaction(TIMEOUT)
    p.begin_transaction()
    p.produce(topic, b"c4", key=b"k")
    p.commit_transaction(TIMEOUT)
    print(json.dumps({"done": True}))


def consume(bs, topic, isolation, n):
    c = Consumer({"bootstrap.servers": bs, "group.id": f"reader-{time.time_ns()}",
                  "auto.offset.reset": "earliest", "isolation.level": isolation,
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    got = []
    last = time.time()
    while len(got) < n and time.time() - last < 8:
        m = c.poll(0.2)
        if m is None:
            continue
        if m.error():
            continue
        got.append(m.value().decode())
        last = time.time()
    # A little longer: nothing more may come.
    end = time.time() + 1
    while time.time() < end:
        m = c.poll(0.2)
        if m is not None and not m.error():
            got.append(m.value().decode())
    c.close()
    print(json.dumps({"values": got}))


def open_txn(bs, topic, tid):
    p = producer(bs, tid)
    p.init_transactions(TIMEOUT)
    p.begin_transaction()
    for v in ["o1", "o2"]:
        p.produce(topic, v.encode())
    p.flush(TIMEOUT)
    print("open", flush=True)
    sys.stdin.readline()
    p.commit_transaction(TIMEOUT)
    print(json.dumps({"committed": True}))


def prepare(bs, topic, tid, end):
    p = producer(bs, tid)
    p.init_transactions(TIMEOUT)
    p.begin_transaction()
    for v in ["p1", "p2"] if end == "commit" else ["q1", "q2"]:
        p.produce(topic, v.encode())
    p.flush(TIMEOUT)
    print("produced", flush=True)
    sys.stdin.readline()
    if end == "commit":
        p.commit_transaction(TIMEOUT)
    else:
        p.abort_transaction(TIMEOUT)
    print("ended", flush=True)
    print(json.dumps({"ended": end}), flush=True)
    time.sleep(3600)


def set_config(bs, topic, key, value):
    a = AdminClient({"bootstrap.servers": bs})
    r = ConfigResource(ResourceType.TOPIC, topic,
                       incremental_configs=[ConfigEntry(key, value,
                                                        incremental_operation=AlterConfigOpType.SET)])
    for f in a.incremental_alter_configs([r]).values():
        f.result(TIMEOUT)
    print(json.dumps({"set": [key, value]}))


def hang(bs, topic, tid, timeout_ms):
    p = producer(bs, tid, **{"transaction.timeout.ms": int(timeout_ms)})
    p.init_transactions(TIMEOUT)
    p.begin_transaction()
    p.produce(topic, b"h1")
    p.flush(TIMEOUT)
    print("produced", flush=True)
    time.sleep(3600)


def fence(bs, topic, tid):
    first = producer(bs, tid)
    first.init_transactions(TIMEOUT)
    first.begin_transaction()
    first.produce(topic, b"f1")
    first.flush(TIMEOUT)
    second = producer(bs, tid)
    second.init_transactions(TIMEOUT)
    out = {}
    try:
        first.produce(topic, b"f2")
        first.commit_transaction(TIMEOUT)
        out["first"] = "committed"
    except KafkaException as e:
        out["first"] = error_of(e)
    second.begin_transaction()
    second.produce(topic, b"s1")
    second.commit_transaction(TIMEOUT)
    out["second"] = "committed"
    print(json.dumps(out))


def committed_offset(bs, group, topic):
    c = Consumer({"bootstrap.servers": bs, "group.id": group, "enable.auto.commit": False})
    tps = c.committed([TopicPartition(topic, 0)], timeout=TIMEOUT)
    c.close()
    return tps[0].offset


def send_offsets(bs, src, dst, group):
    c = Consumer({"bootstrap.servers": bs, "group.id": group, "auto.offset.reset": "earliest",
                  "isolation.level": "read_committed", "enable.auto.commit": False})
    c.subscribe([src])
    p = producer(bs, f"eos-{group}")
    p.init_transactions(TIMEOUT)
    out = {}
    for round_ in ["commit", "abort"]:
        got = []
        deadline = time.time() + TIMEOUT
        while len(got) < 3 and time.time() < deadline:
            m = c.poll(0.2)
            if m is None or m.error():
                continue
            got.append(m.value().decode())
        p.begin_transaction()
        for v in got:
            p.produce(dst, (v + "-out").encode())
        p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(),
                                      TIMEOUT)
        if round_ == "commit":
            p.commit_transaction(TIMEOUT)
        else:
            p.flush(TIMEOUT)
            p.abort_transaction(TIMEOUT)
        out[round_] = {"consumed": got, "committed": committed_offset(bs, group, src)}
    c.close()
    print(json.dumps(out))


def list_offsets(bs, topic):
    a = AdminClient({"bootstrap.servers": bs})
    tp = TopicPartition(topic, 0)
    out = {}
    for name, level in [("read_committed", IsolationLevel.READ_COMMITTED),
                        ("read_uncommitted", IsolationLevel.READ_UNCOMMITTED)]:
        r = a.list_offsets({tp: OffsetSpec.latest()}, isolation_level=level)
        out[name] = r[tp].result().offset
    print(json.dumps(out))


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    {"create": create, "create-spread": create_spread, "produce-spread": produce_spread,
     "consume-all": lambda bs, t, i, n: consume_all(bs, t, i, n), "produce-plain": produce_plain, "produce-txns": produce_txns, "consume": lambda bs, t, i, n: consume(bs, t, i, int(n)),
     "open-txn": open_txn, "prepare": prepare, "set-config": set_config, "hang": hang, "fence": fence, "send-offsets": send_offsets,
     "list-offsets": list_offsets}[cmd](*args)


if __name__ == "__main__":
    main()
