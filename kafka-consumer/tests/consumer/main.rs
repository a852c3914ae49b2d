//! The consumer against our broker, started in this process on 127.0.0.1:0 with a temporary
//! data directory (one broker per test). Test data is written with record batches built by
//! kafka-protocol and sent through kafka-net; third-party clients (kcat, kafka-python) are
//! checked in `peers`. Group membership is in `group` (ours only) and `group_peers` (groups
//! shared with confluent-kafka members, offsets shared with `kcat -G`).
#![allow(clippy::unwrap_used)]

mod assign;
mod fake;
mod group;
mod group_peers;
mod leader;
mod offsets;
mod peers;
mod support;

/// The consumer and the futures of its calls can move between threads.
#[allow(dead_code)]
fn futures_are_send(c: &kafka_consumer::Consumer) {
    fn send<T: Send>(_: T) {}
    fn send_sync<T: Send + Sync>(_: &T) {}
    send_sync(c);
    let t = kafka_consumer::TopicPartition::new("t", 0);
    send(c.poll(std::time::Duration::ZERO));
    send(c.position(&t));
    send(c.commit_sync());
    send(c.committed(&[]));
    send(c.end_offsets(&[]));
    send(c.stream());
    send(c.unsubscribe());
}
