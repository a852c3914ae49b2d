//! How a record's result reaches whoever sent it: a future, a boxed callback, or a number
//! handed to the producer's [`DeliveryHandler`] (librdkafka's delivery report callback with
//! its per-message opaque: nothing allocated per record).
//!
//! Interceptors see every result first, then the record's own completion runs. A panic in a
//! callback or handler is caught and logged: it must not take the sender task down.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use tokio::sync::oneshot;

use crate::error::ProducerError;
use crate::interceptor::Interceptors;
use crate::record::RecordMetadata;

/// The result a record's sender gets.
pub type DeliveryResult = Result<RecordMetadata, ProducerError>;

/// A user callback run when a record completes.
pub type Callback = Box<dyn FnOnce(DeliveryResult) + Send + 'static>;

/// Receives the result of every record sent with
/// [`Producer::send_with_opaque`](crate::Producer::send_with_opaque), with the number the
/// record was sent with. One handler serves the whole producer (set it with
/// [`ProducerConfigBuilder::delivery_handler`](crate::ProducerConfigBuilder::delivery_handler)),
/// so a record costs no allocation for its report.
///
/// Runs on the producer's sender task, in each partition's append order: keep it short.
pub trait DeliveryHandler: Send + Sync {
    fn on_delivery(&self, opaque: u64, result: Result<&RecordMetadata, &ProducerError>);
}

/// How a record's completion is reported.
pub(crate) enum Completion {
    Future(oneshot::Sender<DeliveryResult>),
    Callback(Callback),
    /// For the producer's [`DeliveryHandler`].
    Opaque(u64),
}

/// Where results go besides the records' own completions: the interceptors and the
/// producer's delivery handler.
#[derive(Clone, Default)]
pub(crate) struct Reports {
    pub(crate) interceptors: Interceptors,
    pub(crate) handler: Option<Arc<dyn DeliveryHandler>>,
}

impl fmt::Debug for Reports {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reports")
            .field("interceptors", &self.interceptors)
            .field("handler", &self.handler.is_some())
            .finish()
    }
}

impl Reports {
    /// Tells the interceptors, then completes the record.
    pub(crate) fn report(
        &self,
        completion: Completion,
        result: Result<&RecordMetadata, &ProducerError>,
    ) {
        if !self.interceptors.is_empty() {
            self.interceptors.on_acknowledgement(result);
        }
        match completion {
            Completion::Future(tx) => {
                let _ = tx.send(owned(result));
            }
            Completion::Callback(cb) => {
                let result = owned(result);
                if catch_unwind(AssertUnwindSafe(|| cb(result))).is_err() {
                    tracing::warn!("a producer callback panicked");
                }
            }
            Completion::Opaque(opaque) => match &self.handler {
                Some(h) => {
                    if catch_unwind(AssertUnwindSafe(|| h.on_delivery(opaque, result))).is_err() {
                        tracing::warn!("the producer's delivery handler panicked");
                    }
                }
                // `send_with_opaque` refuses records when there is no handler.
                None => tracing::warn!(opaque, "no delivery handler for a record's report"),
            },
        }
    }
}

fn owned(result: Result<&RecordMetadata, &ProducerError>) -> DeliveryResult {
    result.cloned().map_err(Clone::clone)
}
