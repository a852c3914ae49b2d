"""Admin clients against a cluster of our brokers (tests/cluster.rs).

  admin.py confluent describe --bootstrap H:P
      the brokers and the controller confluent-kafka's AdminClient sees, as JSON
  admin.py confluent create --bootstrap H:P --topic T --partitions N --replication R
  admin.py kafka-python create --bootstrap H:P --topic T --partitions N --replication R
      creates the topic, then prints its partitions as the client's metadata has them:
      JSON {"partitions": {index: {"leader": L, "replicas": [...], "isr": [...]}}}

Exit 3 when the client library is missing (the test skips unless peers are required).
"""

import argparse
import json
import sys
import time

EXIT_FAIL = 1
EXIT_MISSING_PEER = 3


def fail(msg):
    print(f"FAIL: {msg}", flush=True)
    sys.exit(EXIT_FAIL)


def confluent(args):
    try:
        from confluent_kafka.admin import AdminClient, NewTopic
    except ImportError as e:
        print(f"MISSING PEER: confluent-kafka ({e})", flush=True)
        sys.exit(EXIT_MISSING_PEER)
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    if args.command == "describe":
        cluster = admin.describe_cluster(request_timeout=15).result()
        md = admin.list_topics(timeout=15)
        print(json.dumps({
            "brokers": sorted(n.id for n in cluster.nodes),
            "controller": cluster.controller.id if cluster.controller else None,
            "cluster_id": cluster.cluster_id,
            "metadata_brokers": sorted(md.brokers.keys()),
            "metadata_controller": md.controller_id,
        }))
        return
    futures = admin.create_topics(
        [NewTopic(args.topic, num_partitions=args.partitions,
                  replication_factor=args.replication)],
        request_timeout=30)
    futures[args.topic].result()
    deadline = time.time() + 20
    while True:
        md = admin.list_topics(topic=args.topic, timeout=15)
        t = md.topics.get(args.topic)
        if t is not None and t.error is None and len(t.partitions) == args.partitions:
            break
        if time.time() > deadline:
            fail(f"topic {args.topic} not in the metadata after creation: {t}")
        time.sleep(0.2)
    print(json.dumps({"partitions": {
        str(p.id): {"leader": p.leader, "replicas": list(p.replicas), "isr": list(p.isrs)}
        for p in t.partitions.values()}}))


def kafka_python(args):
    try:
        from kafka.admin import KafkaAdminClient, NewTopic
        from kafka import KafkaConsumer
    except ImportError as e:
        print(f"MISSING PEER: kafka-python ({e})", flush=True)
        sys.exit(EXIT_MISSING_PEER)
    admin = KafkaAdminClient(bootstrap_servers=args.bootstrap, request_timeout_ms=30000)
    admin.create_topics([NewTopic(args.topic, num_partitions=args.partitions,
                                  replication_factor=args.replication)])
    deadline = time.time() + 20
    while True:
        found = admin.describe_topics([args.topic])
        t = found[0] if found else None
        if t and t.get("error_code", 0) == 0 and len(t.get("partitions", [])) == args.partitions:
            break
        if time.time() > deadline:
            fail(f"topic {args.topic} not described after creation: {t}")
        time.sleep(0.2)
    # kafka-python 3 names the fields as the Metadata schema does; 2.x shortened them.
    def field(p, *names):
        for n in names:
            if n in p:
                return p[n]
        fail(f"no {names[0]} in {p}")
    print(json.dumps({"partitions": {
        str(field(p, "partition_index", "partition")): {
            "leader": field(p, "leader_id", "leader"),
            "replicas": field(p, "replica_nodes", "replicas"),
            "isr": field(p, "isr_nodes", "isr")}
        for p in t["partitions"]}}))
    admin.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("client", choices=["confluent", "kafka-python"])
    p.add_argument("command", choices=["describe", "create"])
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--topic")
    p.add_argument("--partitions", type=int, default=1)
    p.add_argument("--replication", type=int, default=1)
    args = p.parse_args()
    if args.client == "confluent":
        confluent(args)
    else:
        kafka_python(args)


if __name__ == "__main__":
    main()
