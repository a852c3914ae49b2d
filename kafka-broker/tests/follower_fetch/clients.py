"""Third-party clients for tests/follower_fetch.rs.

  clients.py consume --bootstrap H:P --topic T --rack R --count N
      confluent-kafka (librdkafka) with client.rack=R reads partition 0 of T from the start
      until it has N records. Prints JSON {"values": [...], "fetches": [[broker, offset], ...],
      "partition_brokers": [...], "leaders": [...]}: the broker each "Fetch topic T [0] at
      offset O" debug line (debug=fetch) was sent by, and the broker / leader that the
      statistics (statistics.interval.ms) said partition 0 was fetched from / led by.
  clients.py produce-hint --addr H:P --topic T --partition P
      kafka-python's own codec: a Produce v11 request to one broker, its answer decoded with
      kafka-python's schema-driven decoder (KIP-951 tagged fields included). Prints JSON
      {"partitions": [{"index", "error_code", "leader_id", "leader_epoch"}],
       "node_endpoints": [{"node_id", "host", "port", "rack"}]}.

Exit 3 when the client library is missing (the test skips unless peers are required).
"""

import argparse
import json
import logging
import re
import socket
import struct
import sys
import time

EXIT_FAIL = 1
EXIT_MISSING_PEER = 3


def fail(msg):
    print(f"FAIL: {msg}", flush=True)
    sys.exit(EXIT_FAIL)


def missing(what, e):
    print(f"MISSING PEER: {what} ({e})", flush=True)
    sys.exit(EXIT_MISSING_PEER)


class Lines(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def consume(args):
    try:
        from confluent_kafka import Consumer, TopicPartition, OFFSET_BEGINNING
    except ImportError as e:
        missing("confluent-kafka", e)
    handler = Lines()
    logger = logging.getLogger("rdkafka")
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    partition_brokers, leaders = [], []

    def stats(text):
        s = json.loads(text)
        p = s.get("topics", {}).get(args.topic, {}).get("partitions", {}).get("0")
        if p:
            partition_brokers.append(p.get("broker"))
            leaders.append(p.get("leader"))

    c = Consumer({
        "bootstrap.servers": args.bootstrap,
        "group.id": "follower-fetch-unused",
        "client.rack": args.rack,
        "enable.auto.commit": False,
        "fetch.wait.max.ms": 100,
        "debug": "fetch",
        "statistics.interval.ms": 200,
        "stats_cb": stats,
    }, logger=logger)
    c.assign([TopicPartition(args.topic, 0, OFFSET_BEGINNING)])
    values = []
    deadline = time.time() + 40
    while len(values) < args.count and time.time() < deadline:
        m = c.poll(0.2)
        if m is None:
            continue
        if m.error():
            fail(f"consume error: {m.error()}")
        values.append(m.value().decode())
    # One more statistics round while still fetching from where the partition is.
    end = time.time() + 0.5
    while time.time() < end:
        c.poll(0.1)
    c.close()
    fetch_line = re.compile(
        r"/(\d+): Fetch topic " + re.escape(args.topic) + r" \[0\] at offset (\d+)")
    fetches = []
    for line in handler.lines:
        m = fetch_line.search(line)
        if m:
            fetches.append([int(m.group(1)), int(m.group(2))])
    print(json.dumps({
        "values": values,
        "fetches": fetches,
        "partition_brokers": partition_brokers,
        "leaders": leaders,
        "preferred_lines": [l for l in handler.lines if "preferred" in l.lower()][:20],
    }), flush=True)


def produce_hint(args):
    try:
        from kafka.protocol.producer import ProduceRequest, ProduceResponse
        from kafka.record import MemoryRecordsBuilder
    except ImportError as e:
        missing("kafka-python", e)
    b = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 20)
    b.append(timestamp=None, key=None, value=b"to a follower", headers=[])
    b.close()
    data = ProduceRequest.TopicProduceData
    req = ProduceRequest(transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[
        data(name=args.topic, partition_data=[
            data.PartitionProduceData(index=args.partition, records=b.buffer())])])
    req.with_header(correlation_id=951, client_id="kafka-python-kip951")
    host, port = args.addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(req.encode(version=11, header=True, framed=True))

        def read(n):
            out = b""
            while len(out) < n:
                chunk = s.recv(n - len(out))
                if not chunk:
                    fail("the broker closed the connection")
                out += chunk
            return out

        (size,) = struct.unpack(">i", read(4))
        payload = read(size)
    resp = ProduceResponse.decode(payload, version=11, header=True)
    if resp.header.correlation_id != 951:
        fail(f"correlation id {resp.header.correlation_id}")
    print(json.dumps({
        "partitions": [{
            "topic": t.name,
            "index": p.index,
            "error_code": p.error_code,
            "leader_id": p.current_leader.leader_id,
            "leader_epoch": p.current_leader.leader_epoch,
        } for t in resp.responses for p in t.partition_responses],
        "node_endpoints": [{
            "node_id": e.node_id, "host": e.host, "port": e.port, "rack": e.rack,
        } for e in resp.node_endpoints],
    }), flush=True)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("consume")
    c.add_argument("--bootstrap", required=True)
    c.add_argument("--topic", required=True)
    c.add_argument("--rack", required=True)
    c.add_argument("--count", type=int, required=True)
    p = sub.add_parser("produce-hint")
    p.add_argument("--addr", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--partition", type=int, default=0)
    args = ap.parse_args()
    {"consume": consume, "produce-hint": produce_hint}[args.command](args)


if __name__ == "__main__":
    main()
