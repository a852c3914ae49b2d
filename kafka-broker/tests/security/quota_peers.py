"""confluent-kafka (librdkafka) against byte-rate quotas of our broker: a producer with client id
`quota-producer` and a consumer with client id `quota-consumer`, each pushing as fast as it can
against the quota the test set (--rate bytes a second). Prints the rate each achieved, measured
at the client over the span after a warm-up, and the largest throttle time librdkafka reported
in its statistics. Exits 3 when confluent-kafka is missing."""

import argparse
import json
import sys
import time

EXIT_MISSING_PEER = 3

p = argparse.ArgumentParser()
p.add_argument("--bootstrap", required=True)
p.add_argument("--topic", required=True)
p.add_argument("--rate", type=float, required=True)
p.add_argument("--warmup", type=float, default=2.0)
p.add_argument("--span", type=float, default=20.0)
args = p.parse_args()

try:
    from confluent_kafka import Consumer, Producer
except ImportError as e:
    print(f"missing peer: {e}")
    sys.exit(EXIT_MISSING_PEER)

VALUE = b"q" * 10_000
throttle = {"producer": 0, "consumer": 0}


def stats_cb(who):
    def cb(text):
        stats = json.loads(text)
        for b in stats.get("brokers", {}).values():
            throttle[who] = max(throttle[who], b.get("throttle", {}).get("max", 0))
    return cb


def per_second(events, start):
    """Bytes in each second since `start`, for the log."""
    out = {}
    for t, n in events:
        out[int(t - start)] = out.get(int(t - start), 0) + n
    return " ".join(f"{out.get(i, 0) // 1000}" for i in range(int(max(out, default=0)) + 1))


def rate(events, start):
    """Bytes a second over [start + warmup, start + warmup + span]."""
    lo, hi = start + args.warmup, start + args.warmup + args.span
    return sum(n for t, n in events if lo <= t < hi) / args.span


producer = Producer({"bootstrap.servers": args.bootstrap, "client.id": "quota-producer",
                     "linger.ms": 5, "acks": "all", "statistics.interval.ms": 1000,
                     "queue.buffering.max.kbytes": 4096, "stats_cb": stats_cb("producer")})
delivered = []
errors = []


def on_delivery(err, msg):
    if err is not None:
        errors.append(str(err))
    else:
        delivered.append((time.monotonic(), len(msg.value())))


start = time.monotonic()
end = start + args.warmup + args.span
while time.monotonic() < end:
    try:
        producer.produce(args.topic, VALUE, on_delivery=on_delivery)
    except BufferError:
        producer.poll(0.05)
    producer.poll(0)
producer.flush(30)
print(f"producer rate {rate(delivered, start):.0f} quota {args.rate:.0f} "
      f"ratio {rate(delivered, start) / args.rate:.3f} errors {len(errors)}", flush=True)
print(f"producer kB per second: {per_second(delivered, start)}", flush=True)
print(f"producer throttle max {throttle['producer']}", flush=True)

consumer = Consumer({"bootstrap.servers": args.bootstrap, "client.id": "quota-consumer",
                     "group.id": "quota-readers", "auto.offset.reset": "earliest",
                     "enable.auto.commit": False, "statistics.interval.ms": 1000,
                     "stats_cb": stats_cb("consumer")})
consumer.subscribe([args.topic])
consumed = []
start = time.monotonic()
end = start + args.warmup + args.span
while time.monotonic() < end:
    msg = consumer.poll(0.5)
    if msg is not None and msg.error() is None:
        consumed.append((time.monotonic(), len(msg.value())))
consumer.close()
print(f"consumer rate {rate(consumed, start):.0f} quota {args.rate:.0f} "
      f"ratio {rate(consumed, start) / args.rate:.3f} total {sum(n for _, n in consumed)}", flush=True)
print(f"consumer kB per second: {per_second(consumed, start)}", flush=True)
print(f"consumer throttle max {throttle['consumer']}", flush=True)
