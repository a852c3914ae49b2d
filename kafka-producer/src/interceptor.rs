//! Producer interceptors (`interceptor.classes`): see or change every record before it is
//! serialized into a batch, and see every acknowledgement.
//!
//! As in the Java client, an interceptor that fails does not break sending: a panic in an
//! interceptor is caught and logged, the record goes on as it was before that interceptor,
//! and the next interceptors still run. (A panic can only be caught when the build unwinds,
//! which is Rust's default; with `panic = "abort"` it ends the process.)

use std::any::Any;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use crate::{ProducerError, ProducerRecord, RecordMetadata};

/// Hooks around a record's trip through the producer.
pub trait ProducerInterceptor: Send + Sync {
    /// Called on `send`, before the key and value are serialized and the partition chosen;
    /// returns the record to send in its place (the same one by default). Runs on the
    /// caller's task, so it should be quick.
    fn on_send(&self, record: ProducerRecord) -> ProducerRecord {
        record
    }

    /// Called once per record when it is acknowledged or fails (also for a record that failed
    /// before reaching a batch). Runs on the producer's I/O task: it must be quick.
    fn on_acknowledgement(&self, result: Result<&RecordMetadata, &ProducerError>) {
        let _ = result;
    }
}

/// The configured interceptors, called in the order they were added.
#[derive(Clone, Default)]
pub struct Interceptors {
    list: Vec<Arc<dyn ProducerInterceptor>>,
}

impl fmt::Debug for Interceptors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Interceptors")
            .field("len", &self.list.len())
            .finish()
    }
}

impl Interceptors {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an interceptor after those already there.
    pub fn push(&mut self, interceptor: Arc<dyn ProducerInterceptor>) {
        self.list.push(interceptor);
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Runs the record through every interceptor in order, each getting what the previous
    /// one returned. An interceptor that panics is skipped: the record goes on as it was
    /// before it.
    pub fn on_send(&self, record: ProducerRecord) -> ProducerRecord {
        let mut record = record;
        for (index, interceptor) in self.list.iter().enumerate() {
            // Kept in case this interceptor fails: it takes the record by value.
            let before = record.clone();
            match catch_unwind(AssertUnwindSafe(|| interceptor.on_send(record))) {
                Ok(r) => record = r,
                Err(panic) => {
                    tracing::warn!(
                        interceptor = index,
                        topic = %before.topic,
                        "producer interceptor panicked in on_send ({}); the record goes on as it was before it",
                        panic_message(panic.as_ref())
                    );
                    record = before;
                }
            }
        }
        record
    }

    /// Tells every interceptor, in order, how a record ended. An interceptor that panics is
    /// logged and the others are still called.
    pub fn on_acknowledgement(&self, result: Result<&RecordMetadata, &ProducerError>) {
        for (index, interceptor) in self.list.iter().enumerate() {
            if let Err(panic) =
                catch_unwind(AssertUnwindSafe(|| interceptor.on_acknowledgement(result)))
            {
                tracing::warn!(
                    interceptor = index,
                    "producer interceptor panicked in on_acknowledgement ({})",
                    panic_message(panic.as_ref())
                );
            }
        }
    }
}

impl FromIterator<Arc<dyn ProducerInterceptor>> for Interceptors {
    fn from_iter<I: IntoIterator<Item = Arc<dyn ProducerInterceptor>>>(iter: I) -> Self {
        Self {
            list: iter.into_iter().collect(),
        }
    }
}

/// The message of a caught panic, when it has one.
fn panic_message(panic: &(dyn Any + Send)) -> &str {
    if let Some(s) = panic.downcast_ref::<&'static str>() {
        s
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s
    } else {
        "no message"
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use bytes::Bytes;

    use super::*;

    /// Adds a header naming itself, and records what it saw acknowledged.
    struct Tag {
        name: &'static str,
        acks: Mutex<Vec<Result<i64, String>>>,
    }

    impl Tag {
        fn new(name: &'static str) -> Arc<Self> {
            Arc::new(Self {
                name,
                acks: Mutex::new(Vec::new()),
            })
        }

        fn acks(&self) -> Vec<Result<i64, String>> {
            self.acks.lock().unwrap().clone()
        }
    }

    impl ProducerInterceptor for Tag {
        fn on_send(&self, record: ProducerRecord) -> ProducerRecord {
            record.header("via", Some(Bytes::from_static(self.name.as_bytes())))
        }

        fn on_acknowledgement(&self, result: Result<&RecordMetadata, &ProducerError>) {
            self.acks
                .lock()
                .unwrap()
                .push(result.map(|m| m.offset).map_err(ToString::to_string));
        }
    }

    /// Panics in both hooks, after changing the record it was given.
    struct Broken;

    impl ProducerInterceptor for Broken {
        fn on_send(&self, mut record: ProducerRecord) -> ProducerRecord {
            record.topic = "changed".into();
            record.value = None;
            panic!("broken interceptor");
        }

        fn on_acknowledgement(&self, _result: Result<&RecordMetadata, &ProducerError>) {
            panic!("{}", String::from("broken on ack"));
        }
    }

    /// Uses the default hooks.
    struct Passive;

    impl ProducerInterceptor for Passive {}

    fn record() -> ProducerRecord {
        ProducerRecord::new("orders", Bytes::from_static(b"v")).key(Bytes::from_static(b"k"))
    }

    fn via(r: &ProducerRecord) -> Vec<&[u8]> {
        r.headers
            .iter()
            .filter(|h| h.key == "via")
            .filter_map(|h| h.value.as_deref())
            .collect()
    }

    fn metadata(offset: i64) -> RecordMetadata {
        RecordMetadata {
            topic: "orders".into(),
            partition: 0,
            offset,
            timestamp: 0,
            serialized_key_size: 1,
            serialized_value_size: 1,
        }
    }

    #[test]
    fn no_interceptors_leave_the_record_alone() {
        let i = Interceptors::new();
        assert!(i.is_empty());
        assert_eq!(i.len(), 0);
        assert_eq!(i.on_send(record()), record());
        i.on_acknowledgement(Ok(&metadata(1)));
    }

    #[test]
    fn on_send_chains_in_order() {
        let mut i = Interceptors::new();
        i.push(Tag::new("first"));
        i.push(Arc::new(Passive));
        i.push(Tag::new("second"));
        assert_eq!(i.len(), 3);
        let out = i.on_send(record());
        assert_eq!(via(&out), [&b"first"[..], b"second"]);
        assert_eq!(&*out.topic, "orders");
        assert_eq!(out.value.as_deref(), Some(&b"v"[..]));
    }

    #[test]
    fn a_panicking_interceptor_is_skipped() {
        let first = Tag::new("first");
        let last = Tag::new("last");
        let i: Interceptors = [
            first.clone() as Arc<dyn ProducerInterceptor>,
            Arc::new(Broken),
            last.clone(),
        ]
        .into_iter()
        .collect();
        let out = i.on_send(record());
        // Broken's changes are gone; what first did stays, and last still ran.
        assert_eq!(&*out.topic, "orders");
        assert_eq!(out.value.as_deref(), Some(&b"v"[..]));
        assert_eq!(via(&out), [&b"first"[..], b"last"]);

        i.on_acknowledgement(Ok(&metadata(42)));
        let err = ProducerError::Closed(None);
        i.on_acknowledgement(Err(&err));
        let want = vec![Ok(42), Err("producer closed".to_owned())];
        assert_eq!(first.acks(), want);
        assert_eq!(last.acks(), want);
    }

    #[test]
    fn acknowledgements_reach_every_interceptor() {
        let a = Tag::new("a");
        let b = Tag::new("b");
        let mut i = Interceptors::new();
        i.push(a.clone());
        i.push(b.clone());
        for offset in 0..3 {
            i.on_acknowledgement(Ok(&metadata(offset)));
        }
        assert_eq!(a.acks(), vec![Ok(0), Ok(1), Ok(2)]);
        assert_eq!(b.acks(), a.acks());
        assert!(format!("{i:?}").contains("len: 2"));
    }

    #[test]
    fn panic_messages() {
        assert_eq!(panic_message(&"static"), "static");
        assert_eq!(panic_message(&String::from("owned")), "owned");
        assert_eq!(panic_message(&7u8), "no message");
    }
}
