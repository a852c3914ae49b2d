"""A confluent-kafka group member for the mixed-group tests: subscribes to a topic with the
given assignor and prints one line per event on stdout (flushed):

    assign <partitions, comma separated>
    revoke <partitions>
    lost <partitions>
    record <partition> <offset>
    error <text>
    closed

It polls until its stdin is closed, then closes the consumer (committing, leaving).
Arguments: bootstrap group topic strategy client_id."""

import sys
import threading

from confluent_kafka import Consumer

bootstrap, group, topic, strategy, client_id = sys.argv[1:6]
lock = threading.Lock()


def say(line):
    with lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def parts(ps):
    return ",".join(str(p.partition) for p in ps)


stop = threading.Event()


def watch_stdin():
    sys.stdin.read()
    stop.set()


threading.Thread(target=watch_stdin, daemon=True).start()

consumer = Consumer({
    "bootstrap.servers": bootstrap,
    "group.id": group,
    "client.id": client_id,
    "partition.assignment.strategy": strategy,
    "auto.offset.reset": "earliest",
    "enable.auto.commit": True,
    "auto.commit.interval.ms": 200,
    "session.timeout.ms": 6000,
    "heartbeat.interval.ms": 300,
    "topic.metadata.refresh.interval.ms": 1000,
})
consumer.subscribe(
    [topic],
    on_assign=lambda c, ps: say("assign " + parts(ps)),
    on_revoke=lambda c, ps: say("revoke " + parts(ps)),
    on_lost=lambda c, ps: say("lost " + parts(ps)),
)
while not stop.is_set():
    msg = consumer.poll(0.1)
    if msg is None:
        continue
    if msg.error():
        say("error " + str(msg.error()))
        continue
    say(f"record {msg.partition()} {msg.offset()}")
consumer.close()
say("closed")
