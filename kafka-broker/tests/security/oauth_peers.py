"""confluent-kafka (librdkafka) with SASL/OAUTHBEARER against our broker: the token comes from
librdkafka's `oauth_cb` (here: tokens the test signed and handed over). With --token a producer
writes and a consumer reads back; with --bad-token the client must fail to authenticate.
Prints one line per check; exits 3 when confluent-kafka is missing, 1 on a failed check."""

import argparse
import sys
import time

EXIT_MISSING_PEER = 3

p = argparse.ArgumentParser()
p.add_argument("--bootstrap", required=True)
p.add_argument("--topic", required=True)
p.add_argument("--token", required=True)
p.add_argument("--bad-token", required=True)
args = p.parse_args()

try:
    from confluent_kafka import Consumer, KafkaError, Producer
except ImportError as e:
    print(f"missing peer: {e}")
    sys.exit(EXIT_MISSING_PEER)

failed = []


def check(name, ok, detail=""):
    print(f"{name} {'ok' if ok else 'FAILED'} |", str(detail)[:300], flush=True)
    if not ok:
        failed.append(name)


def conf(token, errors):
    def oauth_cb(_config):
        return token, time.time() + 300

    return {"bootstrap.servers": args.bootstrap, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER", "oauth_cb": oauth_cb,
            "error_cb": lambda e: errors.append(e)}


errors = []
producer = Producer(conf(args.token, errors))
delivered = []
for i in range(10):
    producer.produce(args.topic, f"jwt-{i}".encode(),
                     on_delivery=lambda err, msg: delivered.append(err))
left = producer.flush(20)
check("confluent-kafka produces with a signed token",
      left == 0 and len(delivered) == 10 and all(e is None for e in delivered), delivered[:3])

c = dict(conf(args.token, errors), **{"group.id": "jwt-readers", "auto.offset.reset": "earliest"})
consumer = Consumer(c)
consumer.subscribe([args.topic])
got = []
deadline = time.time() + 30
while len(got) < 10 and time.time() < deadline:
    msg = consumer.poll(0.5)
    if msg is not None and msg.error() is None:
        got.append(msg.value().decode())
consumer.close()
check("confluent-kafka consumes with a signed token", got == [f"jwt-{i}" for i in range(10)], got)
check("no error with the signed token", not errors, errors[:3])

bad_errors = []
bad = Producer(conf(args.bad_token, bad_errors))
bad_delivered = []
bad.produce(args.topic, b"refused", on_delivery=lambda err, msg: bad_delivered.append(err))
deadline = time.time() + 15
while not bad_errors and time.time() < deadline:
    bad.poll(0.2)
auth = [e for e in bad_errors if e.code() == KafkaError._AUTHENTICATION]
check("confluent-kafka with a bad token: authentication error", bool(auth), bad_errors[:3])
sys.exit(1 if failed else 0)
