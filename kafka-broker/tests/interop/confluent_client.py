"""confluent-kafka (bundled librdkafka) against the broker. Commands:

  metadata          list_topics and describe_cluster
  produce           write the common record set (--compression, --idempotent)
  consume           read it back by assign (no subscribe) and compare byte for byte
  offsets-for-times ListOffsets by timestamp, plus the watermarks
  admin-topics      create (incl. validate-only and configs), create partitions, delete topics
  admin-configs     describe topic and broker configs, incremental alter of a topic config
  delete-records    (after produce) DeleteRecords, then watermarks and where reading starts
  seek-with-epoch   (after produce) a seek carrying a leader epoch (OffsetForLeaderEpoch)
  live-tail         records produced while a consumer long-polls arrive at once
  large-records     records up to 900 KB through 64 KiB partition fetches
  too-large         a record over message.max.bytes gets MESSAGE_TOO_LARGE
  log-append-time   a LogAppendTime topic: the broker's timestamps, seen by both sides
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


def main():
    p = common.parser(__doc__)
    p.add_argument("--idempotent", action="store_true")
    args = p.parse_args()
    cmds = {
        "metadata": metadata,
        "produce": lambda a: produce(a, idempotent=a.idempotent),
        "consume": consume,
        "offsets-for-times": offsets_for_times,
        "admin-topics": admin_topics,
        "admin-configs": admin_configs,
        "delete-records": delete_records,
        "live-tail": live_tail,
        "seek-with-epoch": seek_with_epoch,
        "large-records": large_records,
        "too-large": too_large,
        "log-append-time": log_append_time,
    }
    if args.command not in cmds:
        fail(f"unknown command {args.command}")
    cmds[args.command](args)
    if ERRORS:
        log(f"note: librdkafka reported {len(ERRORS)} non-fatal errors (above)")


if __name__ == "__main__":
    sys.exit(main())
