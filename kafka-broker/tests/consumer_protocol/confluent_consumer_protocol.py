"""KIP-848 consumer groups (group.protocol=consumer) with confluent-kafka (librdkafka)
against the broker: run by tests/consumer_protocol.rs.

    python3 confluent_consumer_protocol.py --bootstrap HOST:PORT [--timeout S] [--scenario S]

Scenario `share` (the default):
1. A 6-partition topic; three consumers of one group (group.protocol=consumer) poll until
   each owns 2 partitions, as the broker's uniform assignor gives them.
2. Records produced to every partition are consumed once each (offsets committed per
   record, synchronously).
3. The admin client describes the group: type CONSUMER, three members, 6 partitions in all;
   listing groups of type CONSUMER shows it, of type CLASSIC does not.
4. One consumer closes (it leaves the group); the other two take its partitions over (3
   each) and read the records produced after, without re-reading any committed record.

Scenario `regex`:
1. Two consumers subscribe to `^orders-.*` (resolved on the broker); `orders-a` (2 partitions)
   and `payments` (2 partitions, not matching) exist: each consumer owns one partition of
   `orders-a` and none of `payments`.
2. `orders-b` (4 partitions) is created while they stay in the group: its partitions are
   assigned to them without a rejoin (same member ids as described before), 3 partitions each,
   never one of `payments`.
3. Records produced to `orders-b` (and to `payments`) are consumed once each, from
   `orders-b` only.

Scenario `failover` (a cluster of 3; run by the test that kills the coordinator):
1. A 4-partition topic replicated 3 times; two consumers own 2 partitions each and read 200
   records, each committed synchronously.
2. The script prints `KILL <coordinator id>` (FindCoordinator's answer, through the admin
   client) and waits for a line on its standard input: the test SIGKILLs that broker and
   checks the group's epochs and assignment on the new coordinator before it answers.
3. 200 more records are produced; the same two members (same member ids, same partitions)
   read them, and no record read before the kill is read again.

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


def produce(bootstrap, start, count, topic=TOPIC, partitions=PARTITIONS):
    """Records start..start+count, record i to partition i % partitions; returns their values."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    values = []
    for i in range(start, start + count):
        v = f"{topic}-record-{i}".encode()
        p.produce(topic, value=v, partition=i % partitions)
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
        key = (m.topic(), m.partition(), m.offset())
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


REGEX_GROUP = "kip848-regex-group"
REGEX = "^orders-.*"


def create_topics(admin, topics, replication_factor=1):
    futures = admin.create_topics([
        NewTopic(t, num_partitions=n, replication_factor=replication_factor)
        for t, n in topics.items()
    ])
    for f in futures.values():
        f.result(timeout=20)


def owned_all(c):
    return sorted((tp.topic, tp.partition) for tp in c.assignment())


def described_members(admin, group):
    d = admin.describe_consumer_groups([group])[group].result(timeout=20)
    if getattr(d, "type", None) != ConsumerGroupType.CONSUMER:
        fail(f"group type {getattr(d, 'type', None)}, expected CONSUMER")
    return {
        m.member_id: sorted((tp.topic, tp.partition) for tp in m.assignment.topic_partitions)
        for m in d.members
    }


def wait_for_owned(consumers, want, each, deadline, seen):
    """Polls until the consumers together own exactly `want` (a list of (topic, partition)),
    `each` apiece."""
    while True:
        poll_round(consumers, seen)
        counts = {n: owned_all(c) for n, c in consumers.items()}
        got = sorted(tp for tps in counts.values() for tp in tps)
        if got == sorted(want) and all(len(tps) == each for tps in counts.values()):
            log(f"assignment: {counts}")
            return counts
        if any(t == "payments" for tps in counts.values() for (t, _) in tps):
            fail(f"a topic not matching {REGEX} assigned: {counts}")
        if deadline.left() <= 0:
            fail(f"the consumers should own {sorted(want)}, {each} each; they own {counts}")


def scenario_regex(args, deadline):
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    create_topics(admin, {"orders-a": 2, "payments": 2})
    consumers = {}
    for name in ("r1", "r2"):
        c = Consumer({
            "bootstrap.servers": args.bootstrap,
            "group.id": REGEX_GROUP,
            "group.protocol": "consumer",
            "client.id": name,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        })
        c.subscribe([REGEX])
        consumers[name] = c
    seen = {}
    wait_for_owned(consumers, [("orders-a", 0), ("orders-a", 1)], 1, deadline, seen)
    ids_before = {n: c.memberid() for n, c in consumers.items()}
    described_before = described_members(admin, REGEX_GROUP)
    if sorted(described_before) != sorted(ids_before.values()):
        fail(f"described members {sorted(described_before)}, the consumers are {ids_before}")

    create_topics(admin, {"orders-b": 4})
    log("orders-b created")
    want = [("orders-a", p) for p in range(2)] + [("orders-b", p) for p in range(4)]
    wait_for_owned(consumers, want, 3, deadline, seen)
    ids_after = {n: c.memberid() for n, c in consumers.items()}
    if ids_after != ids_before:
        fail(f"member ids changed (a rejoin): {ids_before} -> {ids_after}")
    while True:
        described_after = described_members(admin, REGEX_GROUP)
        if sorted(tp for tps in described_after.values() for tp in tps) == sorted(want):
            break
        if deadline.left() <= 0:
            fail(f"described assignment {described_after}, expected {sorted(want)}")
        poll_round(consumers, seen)
    if sorted(described_after) != sorted(described_before):
        fail(f"described members changed: {sorted(described_before)} -> {sorted(described_after)}")
    log(f"orders-b assigned without a rejoin: members {sorted(ids_after.values())}")

    orders = produce(args.bootstrap, 0, 200, topic="orders-b", partitions=4)
    payments = produce(args.bootstrap, 0, 20, topic="payments", partitions=2)
    consume_all(consumers, orders, deadline, seen)
    check_once(seen)
    foreign = [k for k in seen if k[0] != "orders-b" and k[0] != "orders-a"]
    if foreign or any(v in payments for entries in seen.values() for (_, v) in entries):
        fail(f"records of a topic not matching {REGEX} consumed: {foreign[:5]}")
    log(f"consumed {len(orders)} records of orders-b once each")
    for c in consumers.values():
        c.close()
    log("OK")


FAILOVER_GROUP = "kip848-failover"
FAILOVER_TOPIC = "kip848-failover"


def scenario_failover(args, deadline):
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    create_topics(admin, {FAILOVER_TOPIC: 4}, replication_factor=3)
    consumers = {}
    for name in ("f1", "f2"):
        c = Consumer({
            "bootstrap.servers": args.bootstrap,
            "group.id": FAILOVER_GROUP,
            "group.protocol": "consumer",
            "client.id": name,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        })
        c.subscribe([FAILOVER_TOPIC])
        consumers[name] = c
    seen = {}
    want = [(FAILOVER_TOPIC, p) for p in range(4)]
    before = wait_for_owned(consumers, want, 2, deadline, seen)
    ids = {n: c.memberid() for n, c in consumers.items()}
    first = produce(args.bootstrap, 0, 200, topic=FAILOVER_TOPIC, partitions=4)
    consume_all(consumers, first, deadline, seen)
    check_once(seen)
    log(f"consumed {len(first)} records once each")

    d = admin.describe_consumer_groups([FAILOVER_GROUP])[FAILOVER_GROUP].result(timeout=20)
    log(f"KILL {d.coordinator.id}")
    answer = sys.stdin.readline().strip()
    if answer != "killed":
        fail(f"the test answered {answer!r} to the kill")
    log(f"coordinator {d.coordinator.id} killed")

    second = produce(args.bootstrap, 200, 200, topic=FAILOVER_TOPIC, partitions=4)
    consume_all(consumers, second, deadline, seen)
    check_once(seen)
    after = {n: owned_all(c) for n, c in consumers.items()}
    if after != before:
        fail(f"assignment changed across the failover: {before} -> {after}")
    ids_after = {n: c.memberid() for n, c in consumers.items()}
    if ids_after != ids:
        fail(f"member ids changed across the failover: {ids} -> {ids_after}")
    log(f"consumed {len(second)} more records once each on the new coordinator")
    for c in consumers.values():
        c.close()
    log("OK")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--timeout", type=float, default=90.0)
    p.add_argument("--scenario", choices=("share", "regex", "failover"), default="share")
    args = p.parse_args()
    deadline = Deadline(args.timeout)
    if args.scenario == "regex":
        scenario_regex(args, deadline)
    elif args.scenario == "failover":
        scenario_failover(args, deadline)
    else:
        scenario_share(args, deadline)


def scenario_share(args, deadline):
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
