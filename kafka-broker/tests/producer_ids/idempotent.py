"""Idempotent confluent-kafka (librdkafka) producers against a cluster of our brokers
(tests/producer_ids.rs).

  idempotent.py --bootstrap H:P [--bootstrap H:P ...] --topic T
      one producer per bootstrap address (enable.idempotence, acks=all): each sends one
      record to T and waits for its delivery; prints JSON {"pids": [id, ...]}, the producer
      id librdkafka was assigned (from its `eos` debug log), in the order of the addresses.

Exit 3 when the client library is missing (the test skips unless peers are required).
"""

import argparse
import json
import re
import sys
import time

EXIT_FAIL = 1
EXIT_MISSING_PEER = 3
PID = re.compile(r"PID\{Id:(\d+),Epoch:(\d+)\}")


def fail(msg):
    print(f"FAIL: {msg}", flush=True)
    sys.exit(EXIT_FAIL)


class Log:
    """Collects librdkafka's log lines (the `logger` config)."""

    def __init__(self):
        self.lines = []

    def log(self, level, msg, *args):
        self.lines.append(msg % args if args else str(msg))

    # logging.Logger's interface, as confluent-kafka calls it
    def debug(self, msg, *args):
        self.log(7, msg, *args)

    info = warning = error = critical = debug


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bootstrap", action="append", required=True)
    p.add_argument("--topic", required=True)
    args = p.parse_args()
    try:
        from confluent_kafka import Producer
    except ImportError as e:
        print(f"MISSING PEER: confluent-kafka ({e})", flush=True)
        sys.exit(EXIT_MISSING_PEER)
    pids = []
    for bootstrap in args.bootstrap:
        log = Log()
        producer = Producer({
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "debug": "eos",
            "message.timeout.ms": 20000,
        }, logger=log)
        delivered = []
        producer.produce(args.topic, value=b"idempotent",
                         on_delivery=lambda err, msg: delivered.append(err))
        deadline = time.time() + 25
        while not delivered and time.time() < deadline:
            producer.poll(0.1)
        producer.flush(5)
        if not delivered:
            fail(f"{bootstrap}: no delivery report")
        if delivered[0] is not None:
            fail(f"{bootstrap}: delivery failed: {delivered[0]}")
        assigned = [int(m.group(1)) for line in log.lines for m in PID.finditer(line)
                    if int(m.group(1)) >= 0]
        if not assigned:
            fail(f"{bootstrap}: no PID in librdkafka's eos log:\n" + "\n".join(log.lines[-30:]))
        pids.append(assigned[-1])
    print(json.dumps({"pids": pids}), flush=True)


if __name__ == "__main__":
    main()
