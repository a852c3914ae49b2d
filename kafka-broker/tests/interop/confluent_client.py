"""confluent-kafka (bundled librdkafka) against the broker. Commands:

  metadata          list_topics and describe_cluster
  produce           write the common record set (--compression, --idempotent)
  consume           read it back by assign (no subscribe) and compare byte for byte
  offsets-for-times ListOffsets by timestamp, plus the watermarks
  produce-past      records two hours old, linger.ms=50, then offsets_for_times (issue 13)
  admin-topics      create (incl. validate-only and configs), create partitions, delete topics
  admin-configs     describe topic and broker configs, incremental alter of a topic config
  delete-records    (after produce) DeleteRecords, then watermarks and where reading starts
  seek-with-epoch   (after produce) a seek carrying a leader epoch (OffsetForLeaderEpoch)
  live-tail         records produced while a consumer long-polls arrive at once
  large-records     records up to 900 KB through 64 KiB partition fetches
  too-large         a record over message.max.bytes gets MESSAGE_TOO_LARGE
  log-append-time   a LogAppendTime topic: the broker's timestamps, seen by both sides
  group-rebalance   3 subscribers on 6 partitions, one leaves (--strategy: the assignor)
  group-commit      a group member commits known offsets with metadata (--group)
  group-committed   reads back the offsets group-commit wrote (from any library)
  group-broadcast   two groups on one topic each get every record, separate offsets
  group-kill        a member killed with SIGKILL is expired; the survivor takes over
  group-member      (a child process of group-kill)
"""

import sys
import time

import common
from common import fail, log

try:
    import confluent_kafka
    from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry,
                                       ConfigResource, NewPartitions, NewTopic, ResourceType)
except ImportError as e:  # pragma: no cover - depends on the machine
    common.missing_peer(f"python module confluent_kafka (confluent-kafka): {e}")

ERRORS = []


def error_cb(err):
    # librdkafka reports connection-level trouble here (e.g. the broker closed a connection
    # after a request it does not implement). Kept and printed; fatal ones fail the step.
    ERRORS.append(err)
    log(f"librdkafka error: {err}")
    if err.fatal():
        fail(f"fatal librdkafka error: {err}")


def base_config(args):
    return {
        "bootstrap.servers": args.bootstrap,
        "client.id": "interop-confluent",
        "error_cb": error_cb,
        "socket.timeout.ms": 15000,
        "broker.address.family": "v4",
    }


def produce(args, idempotent=False):
    cfg = base_config(args)
    cfg.update({
        "compression.type": args.compression,
        "linger.ms": 5,
        "enable.idempotence": idempotent,
        "acks": "all" if idempotent else "1",
        "message.timeout.ms": int(args.timeout * 1000),
    })
    producer = Producer(cfg)
    log(f"confluent-kafka {confluent_kafka.version()[0]}, librdkafka "
        f"{confluent_kafka.libversion()[0]}")
    md = producer.list_topics(args.topic, timeout=args.timeout)
    tmd = md.topics.get(args.topic)
    if tmd is None or tmd.error is not None or len(tmd.partitions) != args.partitions:
        # An auto-created topic can take one more metadata round trip to show up.
        time.sleep(0.5)
        md = producer.list_topics(args.topic, timeout=args.timeout)
        tmd = md.topics.get(args.topic)
    if tmd is None or tmd.error is not None or len(tmd.partitions) != args.partitions:
        fail(f"topic {args.topic}: expected {args.partitions} partitions, metadata says "
             f"{None if tmd is None else (tmd.error, sorted(tmd.partitions))}")
    reports = {}

    def delivered(index):
        def cb(err, msg):
            reports[index] = (err, msg.partition() if msg is not None else None,
                              msg.offset() if msg is not None else None)
        return cb

    recs = common.records(args)
    for r in recs:
        while True:
            try:
                producer.produce(args.topic, key=r.key, value=r.value, headers=r.headers,
                                 partition=r.partition, timestamp=r.timestamp or 0,
                                 on_delivery=delivered(r.index))
                break
            except BufferError:
                producer.poll(0.1)
    left = producer.flush(args.timeout)
    if left:
        fail(f"{left} records not delivered within {args.timeout} s")
    next_offset = {}
    for r in recs:
        err, part, off = reports.get(r.index, ("no delivery report", None, None))
        if err is not None:
            fail(f"record {r.index}: {err}")
        expected = next_offset.get(r.partition, 0)
        if (part, off) != (r.partition, expected):
            fail(f"record {r.index}: acknowledged at partition {part} offset {off}, expected "
                 f"partition {r.partition} offset {expected}")
        next_offset[r.partition] = expected + 1
    log(f"OK: produced {len(recs)} records to {args.topic} ({args.compression}"
        f"{', idempotent' if idempotent else ''})")


def consumer_for(args):
    cfg = base_config(args)
    cfg.update({
        # Required by the library even for assign(); no group api is used: nothing is
        # subscribed, committed or fetched from the group.
        "group.id": "interop-unused",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        "fetch.wait.max.ms": 200,
        # librdkafka's default is read_committed.
        "isolation.level": "read_committed",
    })
    return Consumer(cfg)


def consume(args):
    consumer = consumer_for(args)
    tps = [TopicPartition(args.topic, p, confluent_kafka.OFFSET_BEGINNING)
           for p in range(args.partitions)]
    consumer.assign(tps)
    want = {p: 0 for p in range(args.partitions)}
    for i in range(args.count):
        want[i % args.spread] += 1
    got = {p: [] for p in range(args.partitions)}
    deadline = time.monotonic() + args.timeout
    while any(len(got[p]) < want[p] for p in got) and time.monotonic() < deadline:
        msgs = consumer.consume(num_messages=500, timeout=0.5)
        for m in msgs:
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    continue
                fail(f"consume error: {m.error()}")
            ts_type, ts = m.timestamp()
            if ts_type != confluent_kafka.TIMESTAMP_CREATE_TIME:
                fail(f"offset {m.offset()}: timestamp type {ts_type}, expected CreateTime")
            got[m.partition()].append((m.key(), m.value(), list(m.headers() or []), ts))
    for p in range(args.partitions):
        lo, hi = consumer.get_watermark_offsets(TopicPartition(args.topic, p), timeout=10)
        if (lo, hi) != (0, want[p]):
            fail(f"partition {p}: watermarks {lo}..{hi}, expected 0..{want[p]}")
    consumer.close()
    common.report(args, got, check_timestamps=args.style == "binary")


def offsets_for_times(args):
    recs = common.records(args)
    by_part = common.by_partition(recs)
    consumer = consumer_for(args)
    for case in range(4):
        q = []
        expect = {}
        for p in range(args.spread):
            rs = by_part[p]
            mid = len(rs) // 2
            ts, off = [
                (rs[0].timestamp - 1000, 0),
                (rs[mid].timestamp, mid),
                (rs[mid].timestamp + 1, mid + 1),
                # Past the last record: no offset (librdkafka reports -1, "end").
                (rs[-1].timestamp + 1, -1),
            ][case]
            q.append(TopicPartition(args.topic, p, ts))
            expect[p] = off
        res = consumer.offsets_for_times(q, timeout=15)
        for tp in res:
            if tp.error is not None:
                fail(f"offsets_for_times partition {tp.partition}: {tp.error}")
            if tp.offset != expect[tp.partition]:
                fail(f"offsets_for_times case {case} partition {tp.partition}: offset "
                     f"{tp.offset}, expected {expect[tp.partition]}")
    for p in range(args.spread):
        lo, hi = consumer.get_watermark_offsets(TopicPartition(args.topic, p), timeout=10)
        if (lo, hi) != (0, len(by_part[p])):
            fail(f"partition {p}: watermarks {lo}..{hi}, expected 0..{len(by_part[p])}")
    consumer.close()
    log("OK: offsets_for_times and watermarks agree with the records")


def produce_past(args):
    """Issue 13: librdkafka with linger.ms=50 writes `count` records with CreateTime two hours
    in the past, one second apart; then its offsets_for_times (ListOffsets, read_committed,
    with the current leader epoch) must find the first offset at or after each time asked."""
    cfg = base_config(args)
    cfg.update({"linger.ms": 50, "acks": "all", "message.timeout.ms": int(args.timeout * 1000)})
    producer = Producer(cfg)
    times = common.past_times(args)
    failed = []

    def cb(err, msg):
        if err is not None:
            failed.append(err)

    for i in range(args.count):
        p = i % args.spread
        producer.produce(args.topic, value=b"past-%d" % i, partition=p,
                         timestamp=times[p][i // args.spread], on_delivery=cb)
    left = producer.flush(args.timeout)
    if left or failed:
        fail(f"{left} records not delivered, errors {failed[:3]}")
    log(f"OK: produced {args.count} records two hours in the past (linger.ms=50)")
    offsets_for_past_times(args)


def offsets_for_past_times(args):
    consumer = consumer_for(args)
    times = common.past_times(args)
    queries = {p: common.past_time_queries(ts) for p, ts in times.items()}
    wrong = []
    for case in range(max(len(q) for q in queries.values())):
        ask = [TopicPartition(args.topic, p, q[case][0]) for p, q in queries.items()
               if case < len(q)]
        for tp in consumer.offsets_for_times(ask, timeout=15):
            if tp.error is not None:
                fail(f"offsets_for_times partition {tp.partition}: {tp.error}")
            expect = queries[tp.partition][case][1]
            if tp.offset != (-1 if expect is None else expect):
                wrong.append(f"partition {tp.partition} time {queries[tp.partition][case][0]}: "
                             f"offset {tp.offset}, expected {expect}")
    consumer.close()
    if wrong:
        fail(f"{len(wrong)} wrong answers: " + "; ".join(wrong[:5]))
    log("OK: offsets_for_times finds the first offset at or after every time asked")


def delete_records(args):
    """After `produce`: delete the records of partition 0 below the middle, then check the
    low watermark, ListOffsets earliest and that a consumer from the beginning starts there."""
    by_part = common.by_partition(common.records(args))
    n = len(by_part[0])
    cut = n // 2
    admin = admin_client(args)
    r = wait(admin.delete_records([TopicPartition(args.topic, 0, cut)]), "delete_records")
    expect_ok(r, "delete_records")
    deleted = next(iter(r.values()))
    if deleted.low_watermark != cut:
        fail(f"delete_records: low watermark {deleted.low_watermark}, expected {cut}")
    consumer = consumer_for(args)
    lo, hi = consumer.get_watermark_offsets(TopicPartition(args.topic, 0), timeout=10)
    if (lo, hi) != (cut, n):
        fail(f"watermarks after delete_records: {lo}..{hi}, expected {cut}..{n}")
    consumer.assign([TopicPartition(args.topic, 0, confluent_kafka.OFFSET_BEGINNING)])
    got = []
    deadline = time.monotonic() + args.timeout
    while len(got) < n - cut and time.monotonic() < deadline:
        for m in consumer.consume(num_messages=500, timeout=0.5):
            if m.error():
                fail(f"consume error: {m.error()}")
            got.append(m)
    if len(got) != n - cut or got[0].offset() != cut:
        fail(f"consumed {len(got)} records from offset "
             f"{got[0].offset() if got else None}, expected {n - cut} from {cut}")
    for m, e in zip(got, by_part[0][cut:]):
        if (m.key(), m.value()) != (e.key, e.value):
            fail(f"offset {m.offset()}: not the record written there")
    # Reading below the log start offset: OFFSET_OUT_OF_RANGE, which the consumer resolves
    # with auto.offset.reset=earliest to the new log start.
    consumer.assign([TopicPartition(args.topic, 0, 1)])
    first = None
    deadline = time.monotonic() + args.timeout
    while first is None and time.monotonic() < deadline:
        for m in consumer.consume(num_messages=1, timeout=0.5):
            if not m.error():
                first = m.offset()
    if first != cut:
        fail(f"a fetch from offset 1 (below the log start {cut}) resumed at {first}")
    consumer.close()
    log(f"OK: delete_records moved the log start of partition 0 to {cut}")


def seek_with_epoch(args):
    """After `produce`: seek partition 0 to its middle with the leader epoch the records there
    carry. librdkafka validates such a position with OffsetForLeaderEpoch before fetching."""
    by_part = common.by_partition(common.records(args))
    mid = len(by_part[0]) // 2
    consumer = consumer_for(args)
    consumer.assign([TopicPartition(args.topic, 0, confluent_kafka.OFFSET_BEGINNING)])
    first = None
    deadline = time.monotonic() + args.timeout
    while first is None and time.monotonic() < deadline:
        m = consumer.poll(0.5)
        if m is not None and not m.error():
            first = m
    if first is None:
        fail("nothing consumed")
    epoch = first.leader_epoch()
    if epoch is None:
        fail("records carry no leader epoch (Fetch v9+ returns the partition leader epoch)")
    consumer.seek(TopicPartition(args.topic, 0, mid, leader_epoch=epoch))
    got = None
    deadline = time.monotonic() + args.timeout
    while got is None and time.monotonic() < deadline:
        m = consumer.poll(0.5)
        if m is not None:
            if m.error():
                fail(f"after seek with leader epoch {epoch}: {m.error()}")
            got = m
    consumer.close()
    if got is None or got.offset() != mid or got.key() != by_part[0][mid].key:
        fail(f"after seek to {mid} (epoch {epoch}): got offset "
             f"{got.offset() if got else None}")
    log(f"OK: seek to offset {mid} with leader epoch {epoch} validated and resumed there")


def live_tail(args):
    """Fetch long polling woken by appends: a consumer waits at the end of a partition with a
    long fetch.wait.max.ms while records are produced one by one; each must arrive soon after
    it was acknowledged, not when the broker's wait runs out."""
    import threading

    admin = admin_client(args)
    r = wait(admin.create_topics([NewTopic(args.topic, 1, 1)]), "create_topics")
    expect_ok(r, "create_topics")
    cfg = base_config(args)
    cfg.update({"group.id": "interop-unused", "enable.auto.commit": False,
                "fetch.wait.max.ms": 5000, "fetch.error.backoff.ms": 50})
    consumer = Consumer(cfg)
    consumer.assign([TopicPartition(args.topic, 0, confluent_kafka.OFFSET_BEGINNING)])
    received = {}
    stop = threading.Event()

    def poll():
        while not stop.is_set():
            m = consumer.poll(0.05)
            if m is not None and not m.error():
                received[int(m.value())] = time.monotonic()

    t = threading.Thread(target=poll)
    t.start()
    time.sleep(1.0)  # the consumer is now parked in a long-poll fetch
    producer = Producer({**base_config(args), "linger.ms": 0, "acks": "1"})
    sent = {}
    n = 15
    for i in range(n):
        producer.produce(args.topic, value=str(i).encode(), partition=0)
        producer.flush(10)
        sent[i] = time.monotonic()
        time.sleep(0.15)
    deadline = time.monotonic() + 10
    while len(received) < n and time.monotonic() < deadline:
        time.sleep(0.05)
    stop.set()
    t.join()
    consumer.close()
    if len(received) < n:
        fail(f"received {len(received)} of {n} records")
    lat = sorted(received[i] - sent[i] for i in range(n))
    median = lat[n // 2]
    log(f"latency after acknowledgement: median {median * 1000:.0f} ms, max "
        f"{lat[-1] * 1000:.0f} ms (fetch.wait.max.ms 5000)")
    if median > 1.0:
        fail(f"median latency {median * 1000:.0f} ms: fetches are not woken by appends")
    log("OK: long-polling fetches answered on append")


def large_records(args):
    """Records up to ~900 KB with a consumer whose max.partition.fetch.bytes is 64 KiB: the
    broker must still return a whole first batch so the consumer makes progress (KIP-74)."""
    sizes = [300_000, 10, 900_000, 64 * 1024, 64 * 1024 + 1, 500_000]
    producer = Producer({**base_config(args), "linger.ms": 0, "acks": "1",
                         "compression.type": args.compression})
    for i, size in enumerate(sizes):
        producer.produce(args.topic, key=str(i).encode(), value=bytes([i]) * size, partition=0)
        if producer.flush(args.timeout):
            fail(f"record {i} ({size} bytes) not delivered")
    cfg = base_config(args)
    cfg.update({"group.id": "interop-unused", "enable.auto.commit": False,
                "max.partition.fetch.bytes": 65536, "fetch.max.bytes": 131072,
                "message.max.bytes": 131072,
                "receive.message.max.bytes": 4_000_000})
    consumer = Consumer(cfg)
    consumer.assign([TopicPartition(args.topic, 0, confluent_kafka.OFFSET_BEGINNING)])
    got = []
    deadline = time.monotonic() + args.timeout
    while len(got) < len(sizes) and time.monotonic() < deadline:
        for m in consumer.consume(num_messages=10, timeout=0.5):
            if m.error():
                fail(f"consume error: {m.error()}")
            got.append(m)
    consumer.close()
    if len(got) != len(sizes):
        fail(f"consumed {len(got)} of {len(sizes)} large records")
    for i, (m, size) in enumerate(zip(got, sizes)):
        if m.key() != str(i).encode() or m.value() != bytes([i]) * size:
            fail(f"record {i}: {len(m.value() or b'')} bytes, expected {size}")
    log(f"OK: {len(sizes)} records up to {max(sizes)} bytes through 64 KiB partition fetches")


def too_large(args):
    """A record over the broker's message.max.bytes (1048588) but under the client's limit:
    the broker refuses it with MESSAGE_TOO_LARGE, and the producer goes on working."""
    producer = Producer({**base_config(args), "linger.ms": 0, "acks": "1",
                         "message.max.bytes": 3_000_000, "message.timeout.ms": 15000})
    results = []

    def cb(err, msg):
        results.append(err)

    producer.produce(args.topic, value=b"x" * 1_500_000, partition=0, on_delivery=cb)
    producer.flush(20)
    producer.produce(args.topic, value=b"small", partition=0, on_delivery=cb)
    producer.flush(20)
    if len(results) != 2:
        fail(f"delivery reports: {results}")
    if results[0] is None or results[0].code() != KafkaError.MSG_SIZE_TOO_LARGE:
        fail(f"oversized record: expected MSG_SIZE_TOO_LARGE, got {results[0]}")
    if results[1] is not None:
        fail(f"the record after the oversized one failed: {results[1]}")
    log("OK: MESSAGE_TOO_LARGE for a 1.5 MB record, later records delivered")


def log_append_time(args):
    """A topic with message.timestamp.type=LogAppendTime: the broker stamps its own time on
    every batch; producer and consumer both see type LogAppendTime and the broker's time."""
    admin = admin_client(args)
    r = wait(admin.create_topics([NewTopic(args.topic, 1, 1, config={
        "message.timestamp.type": "LogAppendTime"})]), "create_topics")
    expect_ok(r, "create_topics")
    producer = Producer({**base_config(args), "linger.ms": 0, "acks": "1",
                         "compression.type": args.compression})
    reports = []
    before = int(time.time() * 1000)
    for i in range(5):
        producer.produce(args.topic, value=b"v%d" % i, partition=0, timestamp=1_000_000 + i,
                         on_delivery=lambda err, msg: reports.append((err, msg.timestamp())))
    producer.flush(args.timeout)
    after = int(time.time() * 1000)
    for err, (tstype, ts) in reports:
        if err is not None:
            fail(f"delivery: {err}")
        if tstype != confluent_kafka.TIMESTAMP_LOG_APPEND_TIME or not before - 1000 <= ts <= after + 1000:
            fail(f"delivery report timestamp ({tstype}, {ts}), expected LogAppendTime within "
                 f"{before}..{after}")
    consumer = consumer_for(args)
    consumer.assign([TopicPartition(args.topic, 0, confluent_kafka.OFFSET_BEGINNING)])
    got = []
    deadline = time.monotonic() + args.timeout
    while len(got) < 5 and time.monotonic() < deadline:
        got.extend(m for m in consumer.consume(num_messages=10, timeout=0.5) if not m.error())
    consumer.close()
    if len(got) != 5:
        fail(f"consumed {len(got)} of 5")
    for m in got:
        tstype, ts = m.timestamp()
        if tstype != confluent_kafka.TIMESTAMP_LOG_APPEND_TIME or not before - 1000 <= ts <= after + 1000:
            fail(f"offset {m.offset()}: timestamp ({tstype}, {ts}), expected LogAppendTime "
                 f"within {before}..{after}")
    log("OK: LogAppendTime stamped by the broker, seen by producer and consumer")


def admin_client(args):
    return AdminClient(base_config(args))


def wait(futures, what):
    out = {}
    for k, f in futures.items():
        try:
            out[k] = f.result(timeout=20)
        except KafkaException as e:
            out[k] = e.args[0]
        except Exception as e:  # noqa: BLE001 - reported, not hidden
            fail(f"{what} {k}: {type(e).__name__}: {e}")
    return out


def expect_ok(results, what):
    for k, v in results.items():
        if isinstance(v, KafkaError):
            fail(f"{what} {k}: {v}")


def expect_error(results, code, what):
    for k, v in results.items():
        if not isinstance(v, KafkaError) or v.code() != code:
            fail(f"{what} {k}: expected {code}, got {v!r}")


def wait_until(pred, what, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.1)
    fail(f"timed out waiting until {what}")


def topic_partitions(admin, name):
    t = admin.list_topics(name, timeout=10).topics.get(name)
    if t is None or t.error is not None:
        return None
    return len(t.partitions)


def admin_topics(args):
    admin = admin_client(args)
    name = args.topic
    other = args.topic + "-validate"
    r = wait(admin.create_topics([NewTopic(name, 2, 1, config={"retention.ms": "3600000"})]),
             "create_topics")
    expect_ok(r, "create_topics")
    r = wait(admin.create_topics([NewTopic(other, 1, 1)], validate_only=True),
             "create_topics(validate_only)")
    expect_ok(r, "create_topics(validate_only)")
    listed = admin.list_topics(timeout=10).topics
    if other in listed:
        fail(f"validate-only create made topic {other}")
    if name not in listed or len(listed[name].partitions) != 2:
        fail(f"created topic {name} not listed with 2 partitions: {listed.get(name)}")
    r = wait(admin.create_topics([NewTopic(name, 1, 1)]), "create_topics(again)")
    expect_error(r, KafkaError.TOPIC_ALREADY_EXISTS, "create_topics(again)")
    r = wait(admin.create_partitions([NewPartitions(name, 4)]), "create_partitions")
    expect_ok(r, "create_partitions")
    wait_until(lambda: topic_partitions(admin, name) == 4, f"{name} has 4 partitions")
    r = wait(admin.delete_topics([name], operation_timeout=10), "delete_topics")
    expect_ok(r, "delete_topics")
    wait_until(lambda: name not in admin.list_topics(timeout=10).topics,
               f"{name} is no longer listed")
    r = wait(admin.delete_topics([name]), "delete_topics(again)")
    expect_error(r, KafkaError.UNKNOWN_TOPIC_OR_PART, "delete_topics(again)")
    log("OK: create (with configs, validate-only, duplicate), create partitions, delete")


def describe(admin, resource):
    r = wait(admin.describe_configs([resource]), "describe_configs")
    expect_ok(r, "describe_configs")
    return next(iter(r.values()))


def admin_configs(args):
    admin = admin_client(args)
    name = args.topic
    r = wait(admin.create_topics([NewTopic(name, 1, 1, config={"cleanup.policy": "compact"})]),
             "create_topics")
    expect_ok(r, "create_topics")
    cfg = describe(admin, ConfigResource(ResourceType.TOPIC, name))
    log(f"describe_configs(topic): {sorted(cfg)}")
    if cfg.get("cleanup.policy") is None or cfg["cleanup.policy"].value != "compact":
        fail(f"cleanup.policy: {cfg.get('cleanup.policy')}")
    if cfg["cleanup.policy"].source != confluent_kafka.admin.ConfigSource.DYNAMIC_TOPIC_CONFIG.value:
        fail(f"cleanup.policy source: {cfg['cleanup.policy'].source}")
    if "retention.ms" not in cfg or not cfg["retention.ms"].is_default:
        fail(f"retention.ms should be listed as a default: {cfg.get('retention.ms')}")
    bcfg = describe(admin, ConfigResource(ResourceType.BROKER, "1"))
    log(f"describe_configs(broker): {len(bcfg)} keys")
    if "num.partitions" not in bcfg:
        fail(f"num.partitions missing from broker configs {sorted(bcfg)}")
    res = ConfigResource(ResourceType.TOPIC, name, incremental_configs=[
        ConfigEntry("retention.ms", "7200000",
                    incremental_operation=AlterConfigOpType.SET)])
    r = wait(admin.incremental_alter_configs([res]), "incremental_alter_configs")
    expect_ok(r, "incremental_alter_configs")
    cfg = describe(admin, ConfigResource(ResourceType.TOPIC, name))
    if cfg["retention.ms"].value != "7200000" or cfg["cleanup.policy"].value != "compact":
        fail(f"after incremental alter: retention.ms={cfg['retention.ms']}, "
             f"cleanup.policy={cfg['cleanup.policy']}")
    r = wait(admin.delete_topics([name]), "delete_topics")
    expect_ok(r, "delete_topics")
    log("OK: describe topic and broker configs, incremental alter of a topic config")


def metadata(args):
    admin = admin_client(args)
    md = admin.list_topics(timeout=10)
    log(f"brokers: {md.brokers}, topics: {sorted(md.topics)}")
    if len(md.brokers) != 1:
        fail(f"expected one broker, got {md.brokers}")
    cluster = admin.describe_cluster(request_timeout=10).result(timeout=15)
    log(f"describe_cluster: id={cluster.cluster_id} controller={cluster.controller} "
        f"nodes={cluster.nodes}")
    if not cluster.cluster_id or len(cluster.nodes) != 1:
        fail(f"describe_cluster: {cluster}")
    log("OK: metadata")


# --- consumer groups -------------------------------------------------------------------------

GROUP_PARTITIONS = 6


def group_config(args, group, **extra):
    """A subscribing consumer with short timeouts, so rebalances take seconds, not minutes."""
    cfg = base_config(args)
    cfg.update({
        "group.id": group,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 500,
        "max.poll.interval.ms": 20000,
        "fetch.wait.max.ms": 200,
        "topic.metadata.refresh.interval.ms": 2000,
    })
    cfg.update(extra)
    return cfg


def create_topic(args, partitions):
    admin = admin_client(args)
    r = wait(admin.create_topics([NewTopic(args.topic, partitions, 1)]), "create_topics")
    expect_ok(r, "create_topics")
    wait_until(lambda: topic_partitions(admin, args.topic) == partitions,
               f"{args.topic} has {partitions} partitions")


def produce_numbered(args, start, count, partitions):
    """Values b"<i>" for i in start..start+count, record i to partition i % partitions;
    returns {partition: [offset, ...]} as acknowledged."""
    producer = Producer({**base_config(args), "linger.ms": 5, "acks": "all"})
    acked = {}
    errors = []

    def cb(err, msg):
        if err is not None:
            errors.append(err)
        else:
            acked.setdefault(msg.partition(), []).append(msg.offset())

    for i in range(start, start + count):
        producer.produce(args.topic, value=str(i).encode(), partition=i % partitions,
                         on_delivery=cb)
    if producer.flush(args.timeout) or errors:
        fail(f"produce: {len(errors)} errors {errors[:3]}")
    return acked


def end_offsets(consumer, topic, partitions):
    return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in range(partitions)}


class Member:
    """One subscribing consumer polled by a thread of its own. Keeps the partitions it owns
    (from the rebalance callbacks, eager or incremental), every record it consumed, and
    commits synchronously after each batch."""

    def __init__(self, name, cfg, topic):
        import threading

        self.name = name
        self.owned = set()
        self.records = []  # (partition, offset, value)
        self.commit_errors = []
        self.assignments = 0
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.consumer = Consumer(cfg)
        self.consumer.subscribe([topic], on_assign=self._assign, on_revoke=self._revoke,
                                on_lost=self._revoke)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _assign(self, consumer, parts):
        with self.lock:
            self.owned |= {tp.partition for tp in parts}
            self.assignments += 1
        log(f"{self.name}: assigned {sorted(tp.partition for tp in parts)} -> "
            f"{sorted(self.owned)}")

    def _revoke(self, consumer, parts):
        with self.lock:
            self.owned -= {tp.partition for tp in parts}
        log(f"{self.name}: revoked {sorted(tp.partition for tp in parts)} -> "
            f"{sorted(self.owned)}")

    def _run(self):
        # A commit that failed is tried again on the next round even when no record comes:
        # the partitions the member keeps after a rebalance would otherwise stay uncommitted
        # when their records were all read before it.
        retry = False
        while not self.stop.is_set():
            msgs = self.consumer.consume(num_messages=100, timeout=0.2)
            good = []
            for m in msgs:
                if m.error():
                    if m.error().code() != KafkaError._PARTITION_EOF:
                        log(f"{self.name}: consume error {m.error()}")
                    continue
                good.append(m)
            if not good and not retry:
                continue
            with self.lock:
                self.records.extend((m.partition(), m.offset(), int(m.value())) for m in good)
            try:
                self.consumer.commit(asynchronous=False)
                retry = False
            except KafkaException as e:
                if e.args[0].code() == KafkaError._NO_OFFSET:
                    # Nothing consumed since the last commit on what it owns now.
                    retry = False
                    continue
                # A commit racing a rebalance may fail (ILLEGAL_GENERATION or
                # REBALANCE_IN_PROGRESS, as Kafka answers too); those records may come again
                # (at least once), which the checks allow for records not committed before.
                self.commit_errors.append(e.args[0])
                log(f"{self.name}: commit failed: {e.args[0]}")
                retry = True
        self.consumer.close()

    def owned_now(self):
        with self.lock:
            return set(self.owned)

    def close(self):
        self.stop.set()
        self.thread.join(timeout=30)
        if self.thread.is_alive():
            fail(f"{self.name}: close did not finish")


def wait_balanced(members, partitions, timeout, what):
    """Waits until the members own disjoint, non-empty sets covering every partition and all
    sizes within one of each other."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sets = [m.owned_now() for m in members]
        union = set().union(*sets)
        sizes = [len(s) for s in sets]
        if (sum(sizes) == len(union) and union == set(range(partitions))
                and min(sizes) > 0 and max(sizes) - min(sizes) <= 1):
            log(f"{what}: " + ", ".join(f"{m.name}={sorted(s)}" for m, s in zip(members, sets)))
            return sets
        time.sleep(0.1)
    fail(f"{what}: no balanced assignment within {timeout} s: "
         + ", ".join(f"{m.name}={sorted(m.owned_now())}" for m in members))


def committed_offsets(args, group, partitions):
    c = Consumer({**base_config(args), "group.id": group, "enable.auto.commit": False})
    res = c.committed([TopicPartition(args.topic, p) for p in range(partitions)], timeout=10)
    c.close()
    out = {}
    for tp in res:
        if tp.error is not None:
            fail(f"committed({group}, {tp.partition}): {tp.error}")
        out[tp.partition] = tp.offset
    return out


def describe_group(args, group):
    admin = admin_client(args)
    fut = admin.describe_consumer_groups([group], request_timeout=10)
    return fut[group].result(timeout=15)


def wait_for(pred, what, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.1)
    fail(f"timed out after {timeout} s waiting until {what}")


def group_rebalance(args):
    """3 members subscribe to a 6-partition topic in one group: disjoint assignments covering
    every partition (checked on the clients and in DescribeGroups); every record consumed and
    committed; one member closes, the other two take over its partitions from the committed
    offsets and consume everything produced afterwards."""
    n = GROUP_PARTITIONS
    group = f"{args.topic}-group"
    create_topic(args, n)
    first = produce_numbered(args, 0, 120, n)
    cfg = group_config(args, group, **{"partition.assignment.strategy": args.strategy})
    members = [Member(f"m{i}", cfg, args.topic) for i in range(3)]
    sets = wait_balanced(members, n, args.timeout / 2, "3 members")
    ends = {p: max(offs) + 1 for p, offs in first.items()}
    wait_for(lambda: committed_offsets(args, group, n) == ends,
             f"the group committed {ends}", 15)
    desc = describe_group(args, group)
    seen = {m.member_id: sorted(tp.partition for tp in m.assignment.topic_partitions)
            for m in desc.members}
    log(f"describe_consumer_groups: state {desc.state}, protocol {desc.partition_assignor}, "
        f"members {seen}")
    if str(desc.state).split(".")[-1] != "STABLE" or len(desc.members) != 3:
        fail(f"describe_consumer_groups: state {desc.state} with {len(desc.members)} members")
    if sorted(seen.values()) != sorted(sorted(s) for s in sets):
        fail(f"describe_consumer_groups assignments {seen} differ from the members' {sets}")
    if desc.partition_assignor != args.strategy:
        fail(f"protocol {desc.partition_assignor}, expected {args.strategy}")
    # Phase 1: every record once, nothing twice (unless a commit raced a rebalance).
    before = [(p, o) for m in members for p, o, _ in m.records]
    if any(m.commit_errors for m in members):
        before = list(set(before))
    if sorted(before) != sorted((p, o) for p, offs in first.items() for o in offs):
        fail(f"phase 1: consumed {len(before)} records ({len(set(before))} distinct), "
             f"expected 120 once each")
    gone = members.pop()
    taken = sets[-1]
    gone.close()
    log(f"{gone.name} closed; its partitions {sorted(taken)} go to the others")
    t0 = time.monotonic()
    wait_balanced(members, n, args.timeout / 2, "2 members after one left")
    log(f"rebalanced {time.monotonic() - t0:.1f} s after the member left")
    second = produce_numbered(args, 120, 120, n)
    expect = {(p, o) for p, offs in second.items() for o in offs}
    marks = [len(m.records) for m in members]

    def after():
        return [r for m, k in zip(members, marks) for r in m.records[k:]]

    wait_for(lambda: expect <= {(p, o) for p, o, _ in after()},
             "the two members consumed every record produced after the rebalance", 20)
    for m in members:
        m.close()
    for p, o, _ in after():
        if o < ends[p]:
            fail(f"partition {p} offset {o} (committed before the rebalance, committed offset "
                 f"{ends[p]}) consumed again: the new owner did not start at the committed "
                 f"offset")
    final = committed_offsets(args, group, n)
    want = {p: max(offs) + 1 for p, offs in second.items()}
    if final != want:
        fail(f"committed offsets at the end {final}, expected {want}")
    log(f"OK: {args.strategy}: 3 members then 2, disjoint and complete assignments, "
        f"240 records consumed, committed offsets {final}")


def commit_plan(partitions):
    """The offsets and metadata the cross-library commit scenarios write and expect (the same
    as kafka_python_client.commit_plan)."""
    return {p: (3 + 2 * p, f"interop-{p}") for p in range(partitions)}


def group_commit(args):
    """A subscribed group member commits commit_plan() offsets, with metadata."""
    group = args.group or f"{args.topic}-group"
    c = Consumer(group_config(args, group))
    c.subscribe([args.topic])
    deadline = time.monotonic() + args.timeout
    while len(c.assignment()) < args.partitions and time.monotonic() < deadline:
        c.poll(0.2)
    if len(c.assignment()) != args.partitions:
        fail(f"assignment {c.assignment()}")
    plan = commit_plan(args.partitions)
    res = c.commit(offsets=[TopicPartition(args.topic, p, o, m) for p, (o, m) in plan.items()],
                   asynchronous=False)
    for tp in res or []:
        if tp.error is not None:
            fail(f"commit partition {tp.partition}: {tp.error}")
    c.close()
    log(f"OK: committed {plan} for group {group}")


def group_committed(args):
    """Reads back what another library committed for the group (commit_plan())."""
    group = args.group or f"{args.topic}-group"
    c = Consumer({**base_config(args), "group.id": group, "enable.auto.commit": False})
    res = c.committed([TopicPartition(args.topic, p) for p in range(args.partitions)],
                      timeout=10)
    c.close()
    got = {tp.partition: (tp.offset, tp.metadata) for tp in res}
    plan = commit_plan(args.partitions)
    if got != plan:
        fail(f"committed offsets of {group}: {got}, expected {plan}")
    log(f"OK: group {group} committed offsets read back: {got}")


def broadcast(args):
    """Two groups on one topic each receive every record and keep their own committed
    offsets: group b stops, a goes on; b resumes from its own committed offsets."""
    n = args.partitions
    ga, gb = f"{args.topic}-a", f"{args.topic}-b"
    first = produce_numbered(args, 0, 60, n)
    ends1 = {p: max(o) + 1 for p, o in first.items()}
    a = Member("a", group_config(args, ga), args.topic)
    b = Member("b", group_config(args, gb), args.topic)
    for g in (ga, gb):
        wait_for(lambda: committed_offsets(args, g, n) == ends1, f"group {g} committed {ends1}",
                 args.timeout / 3)
    b.close()
    second = produce_numbered(args, 60, 60, n)
    ends2 = {p: max(o) + 1 for p, o in second.items()}
    wait_for(lambda: committed_offsets(args, ga, n) == ends2, f"group {ga} committed {ends2}",
             args.timeout / 3)
    cb = committed_offsets(args, gb, n)
    if cb != ends1:
        fail(f"group {gb} (stopped) committed {cb}, expected its own {ends1}")
    b2 = Member("b2", group_config(args, gb), args.topic)
    wait_for(lambda: committed_offsets(args, gb, n) == ends2, f"group {gb} committed {ends2}",
             args.timeout / 3)
    a.close()
    b2.close()
    everything = sorted((p, o) for p, e in ends2.items() for o in range(e))
    if sorted((p, o) for p, o, _ in a.records) != everything:
        fail(f"group {ga} consumed {len(a.records)} records, expected each of 120 once")
    if sorted((p, o) for p, o, _ in b.records + b2.records) != everything:
        fail(f"group {gb} consumed {len(b.records)}+{len(b2.records)} records, expected each "
             f"of 120 once (the second member from the committed offsets {ends1})")
    log(f"OK: groups {ga} and {gb} each consumed all 120 records; {gb} resumed at {ends1}")


def group_member(args):
    """A child process for group-kill: one member, printing `OWNED <partitions>` on every
    change, until stdin closes."""
    import threading

    m = Member("child", group_config(args, args.group), args.topic)
    done = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
    last = None
    while not done.is_set():
        now = sorted(m.owned_now())
        if now != last:
            print("OWNED " + ",".join(map(str, now)), flush=True)
            last = now
        time.sleep(0.05)
    m.close()


def group_kill(args):
    """Two member processes; one is killed with SIGKILL (no LeaveGroup). The coordinator
    expires it after its session timeout (6 s) and the survivor takes its partitions over and
    consumes everything."""
    import os
    import signal
    import subprocess
    import threading

    n = GROUP_PARTITIONS
    group = f"{args.topic}-group"
    create_topic(args, n)
    first = produce_numbered(args, 0, 60, n)
    owned = {}
    procs = []
    for i in range(2):
        p = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "group-member", "--bootstrap",
             args.bootstrap, "--topic", args.topic, "--group", group, "--timeout",
             str(args.timeout)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True)
        procs.append(p)
        owned[i] = set()

        def read(i=i, p=p):
            for line in p.stdout:
                if line.startswith("OWNED "):
                    owned[i] = {int(x) for x in line[6:].strip().split(",") if x}
                    log(f"member {i} owns {sorted(owned[i])}")
                elif "consume error" in line or "FAIL" in line:
                    log(f"member {i}: {line.rstrip()}")

        threading.Thread(target=read, daemon=True).start()
    try:
        def balanced():
            a, b = owned[0], owned[1]
            return a and b and not a & b and a | b == set(range(n))

        wait_for(balanced, "the 2 members share the partitions", args.timeout / 3)
        ends1 = {p: max(o) + 1 for p, o in first.items()}
        wait_for(lambda: committed_offsets(args, group, n) == ends1,
                 f"the group committed {ends1}", 10)
        log(f"killing member 1 (owns {sorted(owned[1])}) with SIGKILL")
        procs[1].send_signal(signal.SIGKILL)
        procs[1].wait()
        t0 = time.monotonic()
        wait_for(lambda: owned[0] == set(range(n)), "the survivor owns every partition",
                 20)
        took = time.monotonic() - t0
        log(f"the survivor owned every partition {took:.1f} s after the kill")
        if took < 4.5:
            fail(f"the killed member was dropped after {took:.1f} s, before its 6 s session "
                 f"timeout could have run out")
        second = produce_numbered(args, 60, 60, n)
        ends2 = {p: max(o) + 1 for p, o in second.items()}
        wait_for(lambda: committed_offsets(args, group, n) == ends2,
                 f"the survivor consumed and committed up to {ends2}", 15)
        desc = describe_group(args, group)
        if len(desc.members) != 1:
            fail(f"describe_consumer_groups: {len(desc.members)} members after the kill")
    finally:
        for p in procs:
            if p.poll() is None:
                p.stdin.close()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
    log(f"OK: a member killed without leaving was expired after {took:.1f} s; the survivor "
        f"took its partitions and committed {ends2}")


def main():
    p = common.parser(__doc__)
    p.add_argument("--idempotent", action="store_true")
    p.add_argument("--strategy", default="range")
    p.add_argument("--group", default=None)
    args = p.parse_args()
    cmds = {
        "metadata": metadata,
        "produce": lambda a: produce(a, idempotent=a.idempotent),
        "consume": consume,
        "offsets-for-times": offsets_for_times,
        "produce-past": produce_past,
        "admin-topics": admin_topics,
        "admin-configs": admin_configs,
        "delete-records": delete_records,
        "live-tail": live_tail,
        "seek-with-epoch": seek_with_epoch,
        "large-records": large_records,
        "too-large": too_large,
        "log-append-time": log_append_time,
        "group-rebalance": group_rebalance,
        "group-commit": group_commit,
        "group-committed": group_committed,
        "group-broadcast": broadcast,
        "group-member": group_member,
        "group-kill": group_kill,
    }
    if args.command not in cmds:
        fail(f"unknown command {args.command}")
    cmds[args.command](args)
    if ERRORS:
        log(f"note: librdkafka reported {len(ERRORS)} non-fatal errors (above)")


if __name__ == "__main__":
    sys.exit(main())
