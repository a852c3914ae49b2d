"""confluent-kafka (librdkafka) and kafka-python against our broker with ACLs on: the admin
(a super user) makes topics and ACLs with confluent-kafka's AdminClient; alice is refused what
no ACL allows (TOPIC_AUTHORIZATION_FAILED on produce, GROUP_AUTHORIZATION_FAILED on a group,
a refused DeleteTopics), a PREFIXED ACL allows a family of topics, a LITERAL DENY beats it.
Prints one line per check; exits 3 when a peer is missing, 1 on a failed check."""

import argparse
import sys
import time

EXIT_MISSING_PEER = 3

p = argparse.ArgumentParser()
p.add_argument("--bootstrap", required=True)
args = p.parse_args()

try:
    import kafka  # noqa: F401  kafka-python
    import confluent_kafka  # noqa: F401
except ImportError as e:
    print(f"missing peer: {e}")
    sys.exit(EXIT_MISSING_PEER)

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer  # noqa: E402
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation,  # noqa: E402
                                   AclPermissionType, AdminClient, NewTopic, ResourcePatternType,
                                   ResourceType)

failed = []


def check(name, ok, detail=""):
    print(f"{name} {'ok' if ok else 'FAILED'} |", str(detail)[:300], flush=True)
    if not ok:
        failed.append(name)


def conf(user):
    return {"bootstrap.servers": args.bootstrap, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN", "sasl.username": user, "sasl.password": f"{user}-secret"}


admin = AdminClient(conf("admin"))
for f in admin.create_topics([NewTopic(t, 1, 1) for t in ("orders", "logs-a", "logs-b", "logs-secret")]).values():
    f.result(timeout=20)


def acl(name, pattern, op, permission=AclPermissionType.ALLOW, rtype=ResourceType.TOPIC):
    return AclBinding(rtype, name, pattern, "User:alice", "*", op, permission)


acls = [
    acl("orders", ResourcePatternType.LITERAL, AclOperation.DESCRIBE),
    acl("logs-", ResourcePatternType.PREFIXED, AclOperation.WRITE),
    acl("logs-", ResourcePatternType.PREFIXED, AclOperation.READ),
    acl("logs-secret", ResourcePatternType.LITERAL, AclOperation.WRITE, AclPermissionType.DENY),
    acl("g-readers", ResourcePatternType.LITERAL, AclOperation.READ, rtype=ResourceType.GROUP),
]
for f in admin.create_acls(acls).values():
    f.result(timeout=20)
listed = admin.describe_acls(AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                              AclOperation.ANY, AclPermissionType.ANY)).result(timeout=20)
check("confluent-kafka acls created and described", len(listed) == len(acls), [str(b) for b in listed])


def ck_produce(topic):
    """The error librdkafka reports for one record to `topic` as alice (None: delivered)."""
    prod = Producer({**conf("alice"), "message.timeout.ms": 10000, "enable.idempotence": False})
    result = []
    prod.produce(topic, b"x", partition=0, on_delivery=lambda err, msg: result.append(err))
    prod.flush(15)
    return result[0] if result else "no delivery report"


err = ck_produce("orders")
check("confluent-kafka without WRITE: TOPIC_AUTHORIZATION_FAILED",
      err is not None and err != "no delivery report" and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, err)
for t in ("logs-a", "logs-b"):
    check(f"confluent-kafka prefixed ACL allows {t}", ck_produce(t) is None)
err = ck_produce("logs-secret")
check("confluent-kafka DENY beats the prefixed ALLOW",
      err is not None and err != "no delivery report" and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, err)


def ck_group_error(group):
    cons = Consumer({**conf("alice"), "group.id": group, "auto.offset.reset": "earliest"})
    cons.subscribe(["logs-a"])
    deadline = time.time() + 15
    error = None
    got = 0
    while time.time() < deadline:
        m = cons.poll(0.5)
        if m is None:
            continue
        if m.error():
            error = m.error()
            break
        got += 1
        break
    cons.close()
    return error, got


error, _ = ck_group_error("g-nobody")
check("confluent-kafka consumer without group READ: GROUP_AUTHORIZATION_FAILED",
      error is not None and error.code() == KafkaError.GROUP_AUTHORIZATION_FAILED, error)
error, got = ck_group_error("g-readers")
check("confluent-kafka consumer with group and topic READ reads", error is None and got == 1, (error, got))

alice_admin = AdminClient(conf("alice"))
try:
    alice_admin.delete_topics(["logs-a"])["logs-a"].result(timeout=20)
    check("confluent-kafka DeleteTopics without DELETE refused", False, "deleted")
except KafkaException as e:
    check("confluent-kafka DeleteTopics without DELETE refused",
          e.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, e)

# --- kafka-python ---
from kafka import KafkaProducer  # noqa: E402
from kafka.errors import TopicAuthorizationFailedError  # noqa: E402

kp = KafkaProducer(bootstrap_servers=args.bootstrap, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                   sasl_plain_username="alice", sasl_plain_password="alice-secret", request_timeout_ms=10000,
                   max_block_ms=10000, retries=0)
try:
    kp.send("orders", b"x", partition=0).get(timeout=15)
    check("kafka-python without WRITE: TopicAuthorizationFailedError", False, "delivered")
except TopicAuthorizationFailedError as e:
    check("kafka-python without WRITE: TopicAuthorizationFailedError", True, repr(e))
except Exception as e:  # noqa: BLE001
    check("kafka-python without WRITE: TopicAuthorizationFailedError", False, repr(e))
try:
    kp.send("logs-b", b"y", partition=0).get(timeout=15)
    check("kafka-python prefixed ACL allows logs-b", True)
except Exception as e:  # noqa: BLE001
    check("kafka-python prefixed ACL allows logs-b", False, repr(e))
kp.close()

sys.exit(1 if failed else 0)
