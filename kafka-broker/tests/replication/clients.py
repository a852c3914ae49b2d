"""Third-party clients for tests/replication.rs (a cluster losing brokers under load).

Commands (each exits 3 when its client library is missing; the test skips unless peers are
required):
  check --client confluent|kafka-python
      imports the library and exits.
  produce --bootstrap B --topic T --partitions P --stop-file F [--interval-ms N]
      confluent-kafka, idempotent, acks=all: one record per partition every N ms, value
      "<partition>:<sequence>" (a sequence per partition, from 0), sent to its partition,
      until the file F exists; then waits for every delivery report. Prints one line per
      report, "ack <partition> <offset> <value>" or "fail <partition> <value> <error>", and
      last "done <sent> <acked> <failed>". A fatal producer error ends it with "FAIL: ...".
  read --bootstrap B --topic T --partitions P
      kafka-python reads every partition from its log start to its end (as ListOffsets says
      when it starts) and prints "<partition> <offset> <value>" per record.
  group --client confluent|kafka-python --bootstrap B --topic T --group G --ends E
        [--commit-every N] [--pace-ms M]
      a group consumer (subscribe) with manual synchronous commits every N records: prints
      JSON lines {"e": "assigned", "ps": [...]}, {"e": "rec", "p": P, "o": O} per record and
      {"e": "commit", "ok": true|false, "offsets": {P: O}, "error": "..."} per commit; stops
      once it has read up to the ends E ("P:O,P:O,...") and a last commit succeeded, then
      prints {"e": "end"}.
"""

import argparse
import json
import os
import sys
import time

EXIT_MISSING_PEER = 3


def fail(msg):
    print(f"FAIL: {msg}", flush=True)
    sys.exit(1)


def missing(name, e):
    print(f"MISSING PEER: {name} ({e})", flush=True)
    sys.exit(EXIT_MISSING_PEER)


def confluent():
    try:
        import confluent_kafka
    except ImportError as e:
        missing("confluent-kafka", e)
    return confluent_kafka


def kafka_python():
    try:
        import kafka
    except ImportError as e:
        missing("kafka-python", e)
    return kafka


def check(args):
    if args.client == "confluent":
        confluent()
    else:
        kafka_python()
    print("ok", flush=True)


def produce(args):
    ck = confluent()
    fatal = []

    def on_error(err):
        if err.fatal():
            fatal.append(str(err))

    p = ck.Producer({
        "bootstrap.servers": args.bootstrap,
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 5,
        "message.timeout.ms": 90000,
        "request.timeout.ms": 5000,
        "retry.backoff.ms": 100,
        "retry.backoff.max.ms": 500,
        "topic.metadata.refresh.interval.ms": 1000,
        "error_cb": on_error,
    })
    counts = {"sent": 0, "acked": 0, "failed": 0}

    def report(err, msg):
        value = msg.value().decode()
        if err is None:
            counts["acked"] += 1
            print(f"ack {msg.partition()} {msg.offset()} {value}")
        else:
            counts["failed"] += 1
            print(f"fail {msg.partition()} {value} {str(err).replace(' ', '_')}")

    seq = [0] * args.partitions
    deadline = time.time() + args.max_seconds
    while not os.path.exists(args.stop_file):
        if time.time() > deadline:
            fail(f"no stop file after {args.max_seconds} s")
        if fatal:
            fail(f"fatal producer error: {fatal[0]}")
        for part in range(args.partitions):
            value = f"{part}:{seq[part]}"
            seq[part] += 1
            while True:
                try:
                    p.produce(args.topic, value=value.encode(), partition=part,
                              on_delivery=report)
                    break
                except BufferError:
                    p.poll(0.1)
            counts["sent"] += 1
        p.poll(args.interval_ms / 1000.0)
    left = p.flush(120)
    if fatal:
        fail(f"fatal producer error: {fatal[0]}")
    if left:
        fail(f"{left} records without a delivery report after 120 s")
    print(f"done {counts['sent']} {counts['acked']} {counts['failed']}", flush=True)


def read(args):
    kafka_python()
    from kafka import KafkaConsumer, TopicPartition
    c = KafkaConsumer(bootstrap_servers=args.bootstrap.split(","), enable_auto_commit=False,
                      consumer_timeout_ms=1000, request_timeout_ms=30000)
    parts = [TopicPartition(args.topic, p) for p in range(args.partitions)]
    c.assign(parts)
    c.seek_to_beginning(*parts)
    ends = c.end_offsets(parts)
    lines = []
    deadline = time.time() + 60
    while any(c.position(tp) < ends[tp] for tp in parts):
        if time.time() > deadline:
            fail(f"not at the ends {ends} within 60 s: "
                 f"{ {tp.partition: c.position(tp) for tp in parts} }")
        for tp, records in c.poll(timeout_ms=500).items():
            for r in records:
                if r.offset < ends[tp]:
                    lines.append(f"{tp.partition} {r.offset} {r.value.decode()}")
    c.close()
    print("\n".join(lines), flush=True)


def emit(event):
    print(json.dumps(event), flush=True)


def group(args):
    ends = {int(p): int(o) for p, o in (kv.split(":") for kv in args.ends.split(","))}
    position = {}
    since_commit = 0
    deadline = time.time() + args.max_seconds

    def done():
        return all(position.get(p, -1) >= end for p, end in ends.items())

    if args.client == "confluent":
        ck = confluent()
        c = ck.Consumer({
            "bootstrap.servers": args.bootstrap,
            "group.id": args.group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
            # Small fetches, so that the partitions take turns.
            "max.partition.fetch.bytes": 2048,
        })

        def on_assign(consumer, partitions):
            emit({"e": "assigned", "ps": sorted(tp.partition for tp in partitions)})

        c.subscribe([args.topic], on_assign=on_assign)

        def poll():
            m = c.poll(0.5)
            if m is None:
                return []
            if m.error():
                emit({"e": "error", "error": str(m.error())})
                return []
            return [(m.partition(), m.offset())]

        def commit(offsets):
            tps = [ck.TopicPartition(args.topic, p, o) for p, o in offsets.items()]
            try:
                answered = c.commit(offsets=tps, asynchronous=False)
            except ck.KafkaException as e:
                return str(e)
            bad = [str(tp.error) for tp in answered or [] if tp.error is not None]
            return bad[0] if bad else None
    else:
        kafka_python()
        from kafka import KafkaConsumer, TopicPartition
        from kafka.consumer.subscription_state import ConsumerRebalanceListener
        from kafka.structs import OffsetAndMetadata

        c = KafkaConsumer(bootstrap_servers=args.bootstrap.split(","), group_id=args.group,
                          enable_auto_commit=False, auto_offset_reset="earliest",
                          session_timeout_ms=6000, heartbeat_interval_ms=500,
                          request_timeout_ms=10000, max_partition_fetch_bytes=2048)

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked):
                pass

            def on_partitions_assigned(self, assigned):
                emit({"e": "assigned", "ps": sorted(tp.partition for tp in assigned)})

        c.subscribe([args.topic], listener=Listener())

        def poll():
            out = []
            for tp, records in c.poll(timeout_ms=500, max_records=20).items():
                out.extend((tp.partition, r.offset) for r in records)
            return out

        def commit(offsets):
            try:
                c.commit({TopicPartition(args.topic, p): OffsetAndMetadata(o, "", -1)
                          for p, o in offsets.items()})
            except Exception as e:  # noqa: BLE001 - any failure is an unacknowledged commit
                return f"{type(e).__name__}: {e}"
            return None

    def commit_progress():
        offsets = {p: o for p, o in position.items()}
        err = commit(offsets)
        event = {"e": "commit", "ok": err is None, "offsets": offsets}
        if err is not None:
            event["error"] = err
        emit(event)
        return err is None

    while True:
        if time.time() > deadline:
            fail(f"not at the ends {ends} within {args.max_seconds} s: at {position}")
        for p, o in poll():
            if o >= ends.get(p, 0):
                continue
            emit({"e": "rec", "p": p, "o": o})
            position[p] = o + 1
            since_commit += 1
            if args.pace_ms:
                time.sleep(args.pace_ms / 1000.0)
        if since_commit >= args.commit_every or (done() and since_commit > 0):
            if commit_progress():
                since_commit = 0
        if done() and since_commit == 0:
            break
    c.close()
    emit({"e": "end"})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("command", choices=["check", "produce", "read", "group"])
    ap.add_argument("--client", choices=["confluent", "kafka-python"], default="confluent")
    ap.add_argument("--bootstrap")
    ap.add_argument("--topic")
    ap.add_argument("--partitions", type=int, default=1)
    ap.add_argument("--stop-file")
    ap.add_argument("--interval-ms", type=int, default=20)
    ap.add_argument("--max-seconds", type=int, default=240)
    ap.add_argument("--group")
    ap.add_argument("--ends")
    ap.add_argument("--commit-every", type=int, default=25)
    ap.add_argument("--pace-ms", type=int, default=0)
    args = ap.parse_args()
    {"check": check, "produce": produce, "read": read, "group": group}[args.command](args)


if __name__ == "__main__":
    main()
