"""Reads topics back with kafka-python, an independent decoder, for tests/broker.rs.

  python3 read_back.py --bootstrap HOST:PORT --out-dir DIR --topic T=N [--topic T=N ...]
                       [--codecs gzip,snappy,lz4,zstd] [--no-check-crcs] [--timeout S]

For every topic T (N: the number of records the test expects in it) the script waits until
the end offsets of its partitions add up to at least N (records produced with acks=0 may
still be on their way), then reads every partition from its beginning to those end offsets
by assign (no group) and writes the records to DIR/T.dump in offset order per partition:

  <partition> <offset> <key length> <value length>:<key bytes><value bytes>\\n

(a length of -1: null, and no bytes), the same layout as `kcat -f '%p %o %K %S:%k%s\\n'`,
so one parser reads both. Then a line `READ <topic> <records>` per topic.

Exit codes: 0 done, 1 failed (a `FAIL:` line says why), 3 kafka-python or a codec module
is missing (a `MISSING PEER:` line).
"""

import argparse
import os
import sys
import time

EXIT_FAIL = 1
EXIT_MISSING_PEER = 3

# The python modules kafka-python decodes each codec with (any one of them will do).
CODEC_MODULES = {"gzip": [], "snappy": ["snappy", "cramjam"], "lz4": ["lz4", "cramjam"],
                 "zstd": ["zstandard", "cramjam"]}


def fail(msg):
    print(f"FAIL: {msg}", flush=True)
    sys.exit(EXIT_FAIL)


def missing_peer(what):
    print(f"MISSING PEER: {what}", flush=True)
    sys.exit(EXIT_MISSING_PEER)


def log(msg):
    print(msg, flush=True)


try:
    import kafka
    from kafka import KafkaConsumer, TopicPartition
except ImportError as e:  # depends on the machine
    missing_peer(f"python module kafka (kafka-python): {e}")


def require_codecs(names):
    for name in names:
        mods = CODEC_MODULES.get(name)
        if mods is None:
            fail(f"unknown codec {name}")
        if not mods:
            continue
        for m in mods:
            try:
                __import__(m)
                break
            except ImportError:
                pass
        else:
            missing_peer(f"a python module for {name} ({' or '.join(mods)})")


def encode(partition, offset, key, value):
    klen = -1 if key is None else len(key)
    vlen = -1 if value is None else len(value)
    head = f"{partition} {offset} {klen} {vlen}:".encode()
    return b"".join((head, key or b"", value or b"", b"\n"))


def wait_for_partitions(consumer, topic, deadline):
    while True:
        parts = consumer.partitions_for_topic(topic)
        if parts:
            return sorted(parts)
        if time.monotonic() > deadline:
            fail(f"topic {topic}: no partitions in the metadata")
        time.sleep(0.1)


def read_topic(consumer, topic, expected, out_path, deadline):
    parts = wait_for_partitions(consumer, topic, deadline)
    tps = [TopicPartition(topic, p) for p in parts]
    # acks=0 records may still be arriving: wait for the end offsets to cover them.
    while True:
        end = consumer.end_offsets(tps)
        total = sum(end.values())
        if total >= expected:
            break
        if time.monotonic() > deadline:
            fail(f"topic {topic}: end offsets add up to {total}, expected {expected}: {end}")
        time.sleep(0.1)
    begin = consumer.beginning_offsets(tps)
    consumer.assign(tps)
    for tp in tps:
        consumer.seek(tp, begin[tp])
    position = {tp: begin[tp] for tp in tps}
    records = 0
    with open(out_path, "wb") as out:
        while any(position[tp] < end[tp] for tp in tps):
            if time.monotonic() > deadline:
                left = {tp.partition: (position[tp], end[tp]) for tp in tps
                        if position[tp] < end[tp]}
                fail(f"topic {topic}: not read to the end in time (position, end): {left}")
            batch = consumer.poll(timeout_ms=500, max_records=100000)
            chunks = []
            for tp, msgs in batch.items():
                for m in msgs:
                    if m.offset >= end[tp]:
                        continue
                    if m.offset != position[tp]:
                        fail(f"{topic}-{tp.partition}: offset {m.offset} after "
                             f"{position[tp] - 1} (a gap or a repeat)")
                    position[tp] = m.offset + 1
                    chunks.append(encode(tp.partition, m.offset, m.key, m.value))
            records += len(chunks)
            out.write(b"".join(chunks))
    consumer.unsubscribe()
    log(f"READ {topic} {records}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--out-dir", required=True)
    p.add_argument("--topic", action="append", required=True, metavar="TOPIC=RECORDS")
    p.add_argument("--codecs", default="")
    p.add_argument("--no-check-crcs", action="store_true")
    p.add_argument("--timeout", type=float, default=60.0)
    args = p.parse_args()
    require_codecs([c for c in args.codecs.split(",") if c])
    deadline = time.monotonic() + args.timeout
    log(f"kafka-python {kafka.__version__}")
    consumer = KafkaConsumer(
        bootstrap_servers=args.bootstrap,
        client_id="producer-tests-read-back",
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        check_crcs=not args.no_check_crcs,
        fetch_max_wait_ms=100,
        max_partition_fetch_bytes=4 * 1024 * 1024,
        fetch_max_bytes=32 * 1024 * 1024,
        request_timeout_ms=30000,
    )
    for spec in args.topic:
        topic, _, expected = spec.partition("=")
        read_topic(consumer, topic, int(expected or 0),
                   os.path.join(args.out_dir, f"{topic}.dump"), deadline)
    consumer.close()
    log("OK")


if __name__ == "__main__":
    main()
