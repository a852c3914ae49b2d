"""kcat, kafka-python and confluent-kafka against a TLS listener of our broker: each produces
records over TLS and reads them back, again with a client certificate (mutual TLS), and is
refused when it trusts another CA. Prints one line per check; exits 3 when a peer is missing
(the test then skips, or fails under KAFKA_RS_REQUIRE_PEERS=1), 1 on a failed check."""

import argparse
import shutil
import subprocess
import sys
import time

EXIT_MISSING_PEER = 3

p = argparse.ArgumentParser()
p.add_argument("--bootstrap", required=True)
p.add_argument("--ca", required=True)
p.add_argument("--other-ca", required=True)
p.add_argument("--cert", required=True)
p.add_argument("--key", required=True)
args = p.parse_args()

try:
    import kafka  # kafka-python
    import confluent_kafka
except ImportError as e:
    print(f"missing peer: {e}")
    sys.exit(EXIT_MISSING_PEER)
if shutil.which("kcat") is None:
    print("missing peer: kcat")
    sys.exit(EXIT_MISSING_PEER)

N = 10
failed = []


def check(name, ok, detail=""):
    """Prints `NAME ok` (for a refusal check, NAME itself says what happened) or `NAME FAILED`."""
    if ok:
        print(name if name.endswith("refused") else f"{name} ok", "|", detail[:200], flush=True)
    else:
        print(f"{name} FAILED |", detail, flush=True)
        failed.append(name)


def values(n, tag):
    return [f"{tag}-{i}" for i in range(n)]


# --- kcat (librdkafka) ---
def kcat_conf(ca, mtls):
    conf = ["-X", "security.protocol=ssl", "-X", f"ssl.ca.location={ca}"]
    if mtls:
        conf += ["-X", f"ssl.certificate.location={args.cert}", "-X", f"ssl.key.location={args.key}"]
    return conf


def kcat_round_trip(mode, mtls):
    topic = f"tls-kcat-{mode}"
    want = values(N, f"kcat-{mode}")
    conf = kcat_conf(args.ca, mtls)
    subprocess.run(["kcat", "-b", args.bootstrap, *conf, "-t", topic, "-p", "0", "-P"],
                   input="\n".join(want) + "\n", text=True, check=True, timeout=60)
    out = subprocess.run(["kcat", "-b", args.bootstrap, *conf, "-t", topic, "-p", "0", "-C",
                          "-o", "beginning", "-c", str(N), "-e", "-q"],
                         capture_output=True, text=True, check=True, timeout=60).stdout
    got = out.split()
    check(f"kcat {mode}", got == want, f"got {got}")


kcat_round_trip("tls", False)
kcat_round_trip("mtls", True)
r = subprocess.run(["kcat", "-b", args.bootstrap, *kcat_conf(args.other_ca, False), "-L", "-m", "5"],
                   capture_output=True, text=True, timeout=60)
check("kcat untrusted refused", r.returncode != 0 and "ssl" in (r.stderr + r.stdout).lower(),
      f"exit {r.returncode}: {r.stderr.strip()[-300:]}")


# --- kafka-python ---
from kafka import KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402
from kafka.errors import KafkaError  # noqa: E402


def kp_conf(ca, mtls):
    conf = dict(bootstrap_servers=args.bootstrap, security_protocol="SSL", ssl_cafile=ca,
                ssl_check_hostname=True, request_timeout_ms=10000)
    if mtls:
        conf.update(ssl_certfile=args.cert, ssl_keyfile=args.key)
    return conf


def kp_round_trip(mode, mtls):
    topic = f"tls-kp-{mode}"
    want = values(N, f"kp-{mode}")
    prod = KafkaProducer(**kp_conf(args.ca, mtls))
    for v in want:
        prod.send(topic, v.encode(), partition=0).get(timeout=30)
    prod.close()
    cons = KafkaConsumer(**kp_conf(args.ca, mtls), auto_offset_reset="earliest", consumer_timeout_ms=10000)
    tp = TopicPartition(topic, 0)
    cons.assign([tp])
    cons.seek_to_beginning(tp)
    got = []
    for m in cons:
        got.append(m.value.decode())
        if len(got) == N:
            break
    cons.close()
    check(f"kafka-python {mode}", got == want, f"got {got}")


kp_round_trip("tls", False)
kp_round_trip("mtls", True)
started = time.time()
try:
    KafkaProducer(**kp_conf(args.other_ca, False)).close()
    check("kafka-python untrusted refused", False, "connected")
except (KafkaError, OSError) as e:
    check("kafka-python untrusted refused", True, repr(e))


# --- confluent-kafka (librdkafka) ---
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition as CTP  # noqa: E402


def ck_conf(ca, mtls):
    conf = {"bootstrap.servers": args.bootstrap, "security.protocol": "SSL", "ssl.ca.location": ca}
    if mtls:
        conf.update({"ssl.certificate.location": args.cert, "ssl.key.location": args.key})
    return conf


def ck_round_trip(mode, mtls):
    topic = f"tls-ck-{mode}"
    want = values(N, f"ck-{mode}")
    prod = Producer(ck_conf(args.ca, mtls))
    errors = []
    for v in want:
        prod.produce(topic, v.encode(), partition=0, on_delivery=lambda err, msg: err and errors.append(err))
    left = prod.flush(30)
    cons = Consumer({**ck_conf(args.ca, mtls), "group.id": f"tls-{mode}", "enable.auto.commit": False})
    cons.assign([CTP(topic, 0, 0)])
    got = []
    deadline = time.time() + 20
    while len(got) < N and time.time() < deadline:
        m = cons.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m.value().decode())
    cons.close()
    check(f"confluent-kafka {mode}", left == 0 and not errors and got == want, f"left {left} errors {errors} got {got}")


ck_round_trip("tls", False)
ck_round_trip("mtls", True)
prod = Producer({**ck_conf(args.other_ca, False), "socket.timeout.ms": 5000})
try:
    prod.list_topics(timeout=5)
    check("confluent-kafka untrusted refused", False, "metadata came")
except KafkaException as e:
    check("confluent-kafka untrusted refused", True, str(e))

sys.exit(1 if failed else 0)
