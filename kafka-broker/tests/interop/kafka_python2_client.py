"""kafka-python 2.3.3 against the broker (kept beside the 3.0.12 the other scripts use: it is
loaded from the directory in KAFKA_RS_KAFKA_PYTHON2_PATH, where `.ci/run` installs it with
`pip install --target`). Commands:

  authorized-ops    describe_cluster, describe_topics and describe_consumer_groups decode the
                    authorized-operations bit fields (issue 13: 2.3.3's describe_cluster used
                    to raise "31 is not a valid ACLOperation" on INT32_MIN); without an
                    authorizer each lists every operation of its resource type
"""

import os
import sys
import time

import common
from common import fail, log

PATH = os.environ.get("KAFKA_RS_KAFKA_PYTHON2_PATH")
if not PATH or not os.path.isdir(os.path.join(PATH, "kafka")):
    common.missing_peer("kafka-python 2.3.3: set KAFKA_RS_KAFKA_PYTHON2_PATH to a directory "
                        "made by `pip install --target DIR kafka-python==2.3.3`")
sys.path.insert(0, PATH)
try:
    import kafka
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
except ImportError as e:  # pragma: no cover - depends on the machine
    common.missing_peer(f"kafka-python 2.3.3 from {PATH}: {e}")
if kafka.__version__ != "2.3.3":
    common.missing_peer(f"{PATH} holds kafka-python {kafka.__version__}, not 2.3.3")

# Kafka's operations per resource type (no authorizer: all of them).
CLUSTER = {"CREATE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE",
           "ALTER", "DESCRIBE"}
TOPIC = {"READ", "WRITE", "CREATE", "DESCRIBE", "DELETE", "ALTER", "DESCRIBE_CONFIGS",
         "ALTER_CONFIGS"}
# Kafka 4.0+ (group configs, KAFKA-14510) adds DESCRIBE_CONFIGS and ALTER_CONFIGS to a group's.
GROUP = {"READ", "DESCRIBE", "DELETE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"}


def authorized_ops(args):
    log(f"kafka-python {kafka.__version__} from {os.path.dirname(kafka.__file__)}")
    admin = KafkaAdminClient(bootstrap_servers=args.bootstrap, client_id="interop-kp2",
                             request_timeout_ms=15000)
    wrong = []
    cluster = admin.describe_cluster()
    log(f"describe_cluster: {cluster}")
    if set(cluster.get("authorized_operations") or []) != CLUSTER:
        wrong.append(f"cluster operations {cluster.get('authorized_operations')}")

    producer = KafkaProducer(bootstrap_servers=args.bootstrap)
    producer.send(args.topic, b"x").get(timeout=args.timeout)
    producer.close()
    topics = admin.describe_topics([args.topic])
    log(f"describe_topics: {topics}")
    if len(topics) != 1 or set(topics[0].get("authorized_operations") or []) != TOPIC:
        wrong.append(f"topic operations {[t.get('authorized_operations') for t in topics]}")

    group = f"{args.topic}-group"
    consumer = KafkaConsumer(args.topic, bootstrap_servers=args.bootstrap, group_id=group,
                             auto_offset_reset="earliest", session_timeout_ms=6000)
    deadline = time.monotonic() + args.timeout
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(timeout_ms=200)
    if not consumer.assignment():
        fail("the consumer got no assignment")
    described = admin.describe_consumer_groups([group], include_authorized_operations=True)
    log(f"describe_consumer_groups: {described}")
    ops = [getattr(g, "authorized_operations", None) for g in described]
    if len(ops) != 1 or set(ops[0] or []) != GROUP:
        wrong.append(f"group operations {ops}")
    consumer.close()
    admin.close()
    if wrong:
        fail("; ".join(wrong))
    log("OK: cluster, topic and group authorized operations are Kafka's")


def main():
    args = common.parser(__doc__).parse_args()
    commands = {"authorized-ops": authorized_ops}
    if args.command not in commands:
        fail(f"unknown command {args.command}")
    commands[args.command](args)


if __name__ == "__main__":
    main()
