"""KIP-848 consumer groups (group.protocol=consumer) with confluent-kafka (librdkafka)
against the broker: run by tests/consumer_protocol.rs.

    python3 confluent_consumer_protocol.py --bootstrap HOST:PORT [--timeout S]

1. A 6-partition topic; three consumers of one group (group.protocol=consumer) poll until
   each owns 2 partitions, as the broker's uniform assignor gives them.
2. Records produced to every partition are consumed once each (offsets committed per
   record, synchronously).
3. The admin client describes the group: type CONSUMER, three members, 6 partitions in all;
   listing groups of type CONSUMER shows it, of type CLASSIC does not.
4. One consumer closes (it leaves the group); the other two take its partitions over (3
   each) and read the records produced after, without re-reading any committed record.

Exit 0 on success, 1 on a failed check (the reason printed), 3 when confluent-kafka is
missing.
"""

import argparse
import sys
import time

EXIT_FAIL = 1
EXIT_MISSING_PEER = 3

try:
    from confluent_kafka import Consumer, ConsumerGroupType, KafkaException, Producer
    from confluent_kafka.admin import AdminClient, NewTopic
except ImportError as e:  # pragma: no cover
    print(f"MISSING PEER: confluent-kafka ({e})", flush=True)
    sys.exit(EXIT_MISSING_PEER)

TOPIC = "kip848"
GROUP = "kip848-group"
PARTITIONS = 6


def log(msg):
    print(msg, flush=True)


def fail(msg):
    log(f"FAIL: {msg}")
    sys.exit(EXIT_FAIL)


class Deadline:
    def __init__(self, seconds):
        self.end = time.monotonic() + seconds

    def left(self):
        return self.end - time.monotonic()


def create_topic(admin):
    futures = admin.create_topics([NewTopic(TOPIC, num_partitions=PARTITIONS, replication_factor=1)])
    for f in futures.values():
        f.result(timeout=20)


def produce(bootstrap, start, count):
    """Records start..start+count, record i to partition i % PARTITIONS; returns their values."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    values = []
    for i in range(start, start + count):
        v = f"record-{i}".encode()
        p.produce(TOPIC, value=v, partition=i % PARTITIONS)
        values.append(v)
    left = p.flush(20)
    if left:
        fail(f"{left} records not delivered")
    return values


def consumer(bootstrap, name):
    c = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": GROUP,
        "group.protocol": "consumer",
        "client.id": name,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    })
    c.subscribe([TOPIC])
    return c


def owned(c):
    return sorted(tp.partition for tp in c.assignment() if tp.topic == TOPIC)


def poll_round(consumers, seen):
    """One poll of each consumer: a record is recorded and its offset committed at once."""
    for name, c in consumers.items():
        m = c.poll(0.05)
        if m is None:
            continue
        if m.error():
            log(f"{name}: poll error {m.error()}")
            continue
        key = (m.partition(), m.offset())
        seen.setdefault(key, []).append((name, m.value()))
        c.commit(message=m, asynchronous=False)


def wait_for_assignment(consumers, want, deadline, seen):
    while True:
        poll_round(consumers, seen)
        counts = {n: owned(c) for n, c in consumers.items()}
        if all(len(p) == want for p in counts.values()):
            got = sorted(p for ps in counts.values() for p in ps)
            if got != list(range(PARTITIONS)):
                fail(f"partitions owned twice or not at all: {counts}")
            log(f"assignment: {counts}")
            return
        if deadline.left() <= 0:
            fail(f"each consumer should own {want} partitions, they own {counts}")


def consume_all(consumers, values, deadline, seen):
    wanted = set(values)
    while True:
        got = {v for entries in seen.values() for (_, v) in entries}
        if wanted <= got:
            return
        if deadline.left() <= 0:
            fail(f"{len(wanted - got)} records never consumed")
        poll_round(consumers, seen)


def check_once(seen):
    twice = {k: v for k, v in seen.items() if len(v) > 1}
    if twice:
        fail(f"records consumed more than once: {sorted(twice.items())[:5]}")


def describe(admin, members):
    futures = admin.describe_consumer_groups([GROUP])
    d = futures[GROUP].result(timeout=20)
    kind = getattr(d, "type", None)
    if kind != ConsumerGroupType.CONSUMER:
        fail(f"group type {kind}, expected CONSUMER")
    if len(d.members) != members:
        fail(f"described {len(d.members)} members, expected {members}: {d}")
    partitions = sorted(tp.partition for m in d.members for tp in m.assignment.topic_partitions)
    if partitions != list(range(PARTITIONS)):
        fail(f"described assignment {partitions}")
    log(f"described: state {d.state}, type {kind}, {len(d.members)} members")


def listed(admin, types):
    result = admin.list_consumer_groups(types=types).result(timeout=20)
    return {g.group_id: g for g in result.valid}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--timeout", type=float, default=90.0)
    args = p.parse_args()
    deadline = Deadline(args.timeout)
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    create_topic(admin)

    consumers = {n: consumer(args.bootstrap, n) for n in ("c1", "c2", "c3")}
    seen = {}
    wait_for_assignment(consumers, 2, deadline, seen)

    first = produce(args.bootstrap, 0, 300)
    consume_all(consumers, first, deadline, seen)
    check_once(seen)
    log(f"consumed {len(first)} records once each")

    describe(admin, 3)
    consumer_groups = listed(admin, {ConsumerGroupType.CONSUMER})
    if GROUP not in consumer_groups:
        fail(f"{GROUP} not listed among consumer groups: {sorted(consumer_groups)}")
    if consumer_groups[GROUP].type != ConsumerGroupType.CONSUMER:
        fail(f"listed with type {consumer_groups[GROUP].type}")
    if GROUP in listed(admin, {ConsumerGroupType.CLASSIC}):
        fail(f"{GROUP} listed among classic groups")
    log("listed with type CONSUMER only")

    leaving = consumers.pop("c3")
    leaving.close()
    log("c3 closed")
    wait_for_assignment(consumers, 3, deadline, seen)
    second = produce(args.bootstrap, 300, 300)
    consume_all(consumers, second, deadline, seen)
    check_once(seen)
    log(f"consumed {len(second)} more records once each after c3 left")
    describe(admin, 2)

    for c in consumers.values():
        c.close()
    log("OK")


if __name__ == "__main__":
    try:
        main()
    except KafkaException as e:
        fail(f"client error: {e}")
