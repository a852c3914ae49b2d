"""Third-party clients for tests/topic_configs.rs.

Each command prints what the Rust test checks and exits 3 when its library is missing.
  create       confluent-kafka AdminClient creates a one-partition topic with --config k=v.
  alter        kafka-python KafkaAdminClient.alter_configs with the legacy AlterConfigs API
               (incremental=False: the client adds the other overrides it describes, since
               AlterConfigs replaces the whole set). Prints "altered" or "error <name>".
  incremental  confluent-kafka AdminClient.incremental_alter_configs with --op OP:k=v
               (OP is SET, DELETE, APPEND or SUBTRACT), --validate-only to check only.
               Prints "altered" or "error <name> <message>".
  describe     kafka-python describe_configs (all keys): "<key>\t<value>\t<source>" lines.
  produce      confluent-kafka writes --count records to partition 0: key "key-<i % keys>"
               (none with --keyless), value "v<i>", or --size bytes of "x" when --size is
               given. Prints "delivered <n>" or "error <name>" for the first failure.
  offsets      kafka-python ListOffsets: "<earliest> <latest>" of partition 0.
"""

import argparse
import sys

EXIT_MISSING_PEER = 3


def missing(lib):
    print(f"MISSING PEER: {lib}", flush=True)
    sys.exit(EXIT_MISSING_PEER)


def configs(args):
    return dict(kv.split("=", 1) for kv in args.config)


def create(args):
    try:
        from confluent_kafka.admin import AdminClient, NewTopic
    except ImportError:
        missing("confluent-kafka")
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    futures = admin.create_topics([NewTopic(args.topic, 1, 1, config=configs(args))])
    futures[args.topic].result(timeout=args.timeout)
    print("created", flush=True)


def alter(args):
    try:
        from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
    except ImportError:
        missing("kafka-python")
    admin = KafkaAdminClient(bootstrap_servers=args.bootstrap, request_timeout_ms=15000)
    res = ConfigResource(ConfigResourceType.TOPIC, args.topic, configs=configs(args))
    out = admin.alter_configs([res], incremental=False)
    admin.close()
    result = out["topic"][args.topic]
    print("altered" if result == "OK" else f"error {result}", flush=True)


def incremental(args):
    try:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry,
                                           ConfigResource, ResourceType)
    except ImportError:
        missing("confluent-kafka")
    entries = []
    for op in args.op:
        name, kv = op.split(":", 1)
        key, _, value = kv.partition("=")
        entries.append(ConfigEntry(key, value if name != "DELETE" else None,
                                   incremental_operation=AlterConfigOpType[name]))
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    res = ConfigResource(ResourceType.TOPIC, args.topic, incremental_configs=entries)
    try:
        futures = admin.incremental_alter_configs([res], validate_only=args.validate_only)
        for f in futures.values():
            f.result(timeout=args.timeout)
    except KafkaException as e:
        err = e.args[0]
        print(f"error {err.name()} {err.str()}", flush=True)
        return
    print("altered", flush=True)


def describe(args):
    try:
        from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
    except ImportError:
        missing("kafka-python")
    admin = KafkaAdminClient(bootstrap_servers=args.bootstrap, request_timeout_ms=15000)
    res = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, args.topic)],
                                 config_filter="all")
    admin.close()
    for key, c in sorted(res["topic"][args.topic].items()):
        print(f"{key}\t{c['value']}\t{c['config_source']}", flush=True)


def produce(args):
    try:
        from confluent_kafka import Producer
    except ImportError:
        missing("confluent-kafka")
    p = Producer({
        "bootstrap.servers": args.bootstrap,
        "enable.idempotence": args.idempotent,
        "linger.ms": 2,
        "batch.size": args.batch_size,
        "message.timeout.ms": int(args.timeout * 1000),
    })
    errors = []
    delivered = [0]

    def report(err, msg):
        if err is not None:
            errors.append(err)
        else:
            delivered[0] += 1

    for i in range(args.count):
        key = None if args.keyless else f"key-{i % args.keys}"
        value = "x" * args.size if args.size else f"v{i}"
        p.produce(args.topic, key=key, value=value, partition=0, on_delivery=report)
        if i % 200 == 0:
            p.poll(0)
    left = p.flush(args.timeout)
    if errors:
        print(f"error {errors[0].name()}", flush=True)
    elif left:
        print(f"error {left} records not delivered in time", flush=True)
    else:
        print(f"delivered {delivered[0]}", flush=True)


def offsets(args):
    try:
        from kafka import KafkaConsumer, TopicPartition
    except ImportError:
        missing("kafka-python")
    tp = TopicPartition(args.topic, 0)
    c = KafkaConsumer(bootstrap_servers=args.bootstrap, enable_auto_commit=False)
    earliest = c.beginning_offsets([tp])[tp]
    latest = c.end_offsets([tp])[tp]
    c.close()
    print(f"{earliest} {latest}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("command",
                    choices=["create", "alter", "incremental", "describe", "produce", "offsets"])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--config", action="append", default=[])
    ap.add_argument("--op", action="append", default=[])
    ap.add_argument("--count", type=int, default=1)
    ap.add_argument("--keys", type=int, default=1)
    ap.add_argument("--keyless", action="store_true")
    ap.add_argument("--size", type=int, default=0)
    ap.add_argument("--batch-size", type=int, default=1024)
    ap.add_argument("--idempotent", action="store_true")
    ap.add_argument("--validate-only", action="store_true")
    ap.add_argument("--timeout", type=float, default=20.0)
    args = ap.parse_args()
    {"create": create, "alter": alter, "incremental": incremental, "describe": describe,
     "produce": produce, "offsets": offsets}[args.command](args)


if __name__ == "__main__":
    main()
