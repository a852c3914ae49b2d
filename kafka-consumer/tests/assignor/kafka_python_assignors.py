#!/usr/bin/env python3
"""Independent answers from kafka-python for tests/assignor_crosscheck.rs.

Reads one JSON document on stdin:

    {"scenarios": [{"topics": {"t": 3, ...},
                    "members": [{"id": "m1", "instance": null, "topics": ["t"]}, ...]}, ...],
     "subscriptions": ["<hex of versioned ConsumerProtocolSubscription bytes>", ...],
     "assignments": ["<hex of versioned ConsumerProtocolAssignment bytes>", ...]}

and prints one line per item, in order, each a compact JSON document with sorted keys:

- per scenario: {"range": {member: [[topic, partition], ...]}, "roundrobin": {...}}, from
  kafka-python's RangePartitionAssignor and RoundRobinPartitionAssignor (an assignor that
  raises gives {"error": "<exception type>"} instead). Members are passed
  to the assignors in the order given (kafka-python's result depends on it; see FINDINGS.md).
  Topics missing from "topics" have no metadata.
- per subscription: {"version", "topics", "user_data" (hex or null), "owned_partitions"
  ([[topic, [partitions]], ...]), "generation_id", "rack_id"} as kafka-python decodes them.
- per assignment: {"version", "assigned_partitions", "user_data"}.

Exits with 3 when kafka-python is not installed (the test then skips, or fails under
KAFKA_RS_REQUIRE_PEERS=1).
"""

import json
import sys

try:
    import kafka
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.protocol.consumer.metadata import (
        ConsumerProtocolAssignment,
        ConsumerProtocolSubscription,
    )
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"kafka-python is not importable: {e}", file=sys.stderr)
    sys.exit(3)


class Cluster:
    """The one method the assignors call on cluster metadata."""

    def __init__(self, topics):
        self.topics = topics

    def partitions_for_topic(self, topic):
        n = self.topics.get(topic)
        return None if n is None else set(range(n))


class Member:
    """What the assignors read from a JoinGroup response member."""

    def __init__(self, m):
        self.member_id = m["id"]
        self.group_instance_id = m["instance"]
        self.metadata = ConsumerProtocolSubscription(0, list(m["topics"]), b"")


def flat(assignment):
    return sorted([tp.topic, tp.partition] for tp in assignment.partitions())


def assign(assignor, scenario):
    """The assignment, or {"error": "<exception type>[:tuple]"} when the assignor raises
    (":tuple" for a KeyError on a tuple key, the known roundrobin bug in FINDINGS.md)."""
    cluster = Cluster(scenario["topics"])
    members = [Member(m) for m in scenario["members"]]
    try:
        result = assignor.assign(cluster, members)
    except Exception as e:  # reported, judged by the Rust side
        kind = type(e).__name__
        if isinstance(e, KeyError) and e.args and isinstance(e.args[0], tuple):
            kind += ":tuple"
        return {"error": kind}
    return {member_id: flat(a) for member_id, a in result.items()}


def hex_or_none(b):
    return None if b is None else bytes(b).hex()


def main():
    doc = json.load(sys.stdin)
    out = []
    for scenario in doc.get("scenarios", []):
        out.append({
            "range": assign(RangePartitionAssignor, scenario),
            "roundrobin": assign(RoundRobinPartitionAssignor, scenario),
        })
    for h in doc.get("subscriptions", []):
        s = ConsumerProtocolSubscription.decode(bytes.fromhex(h))
        out.append({
            "version": s.version,
            "topics": list(s.topics),
            "user_data": hex_or_none(s.user_data),
            "owned_partitions": [[tp.topic, list(tp.partitions)]
                                 for tp in (s.owned_partitions or [])],
            "generation_id": s.generation_id,
            "rack_id": s.rack_id,
        })
    for h in doc.get("assignments", []):
        a = ConsumerProtocolAssignment.decode(bytes.fromhex(h))
        out.append({
            "version": a.version,
            "assigned_partitions": [[tp.topic, list(tp.partitions)]
                                    for tp in a.assigned_partitions],
            "user_data": hex_or_none(a.user_data),
        })
    for item in out:
        print(json.dumps(item, sort_keys=True, separators=(",", ":")))
    print(f"kafka-python {kafka.__version__}", file=sys.stderr)


if __name__ == "__main__":
    main()
