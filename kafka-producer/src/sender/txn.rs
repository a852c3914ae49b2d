//! The sender's share of a transactional producer: each turn it takes the producer id and
//! epoch from the transaction manager (renumbering queued batches after an epoch bump),
//! fails the unsent batches of an aborting transaction, and sends the manager's next request
//! to its coordinator; answers go back to the manager. While a request is out no Produce is
//! sent (Java's order), and the accumulator drains only partitions already in the
//! transaction.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kafka_net::{CoordinatorType, NetError};
use kafka_protocol::TopicPartition;
use kafka_protocol::messages::ResponseBody;
use tokio::time::Instant;

use super::Sender;
use crate::error::ProducerError;
use crate::transaction::{Next, Outgoing, TxnManager, lock};

/// The outcome of one transactional request.
pub(crate) struct TxnAnswer {
    token: u64,
    /// The version it went out at (0 when it did not).
    version: i16,
    coordinator: (CoordinatorType, String),
    result: Result<ResponseBody, NetError>,
}

impl Sender {
    /// Carries the transactional producer's coordinator requests.
    #[must_use]
    pub(crate) fn with_transactions(mut self, txn: Arc<Mutex<TxnManager>>) -> Self {
        self.txn = Some(txn);
        self
    }

    /// One turn of the transactional work (see the module docs). Returns the partitions
    /// that may be drained (`None`: not transactional, all) and when to look again.
    pub(super) fn drive_transaction(
        &mut self,
        now: Instant,
    ) -> (Option<Arc<BTreeSet<TopicPartition>>>, Option<Duration>) {
        let Some(txn) = self.txn.clone() else {
            return (None, None);
        };
        let (sendable, wait, aborted, out) = {
            let mut m = lock(&txn);
            let producer = m.producer();
            if producer != self.idem.producer {
                if self.idem.producer.is_some() {
                    // An epoch bump: the new epoch starts every partition at sequence 0.
                    self.acc.reset_sequences();
                    self.idem.last_acked.clear();
                }
                self.idem.producer = producer;
            }
            if let Some(e) = m.fatal_error() {
                self.idem.fatal = Some(e);
            }
            let aborted = m
                .abort_reason()
                .map(|r| (r, self.acc.take_unsent()))
                .filter(|(_, b)| !b.is_empty());
            let mut wait = None;
            let mut out = None;
            if self.txn_req.is_none() {
                match m.next_request(self.acc.has_incomplete(), now) {
                    Next::Send(o) => out = Some(o),
                    Next::Wait(d) => wait = Some(d),
                    Next::Idle => {}
                }
            }
            (m.sendable_partitions(), wait, aborted, out)
        };
        if let Some((reason, batches)) = aborted {
            tracing::debug!(batches = batches.len(), %reason, "failing the unsent batches of the aborted transaction");
            for b in batches {
                self.fail(b, ProducerError::TransactionAborted(Some(reason.clone())));
            }
        }
        if let Some(out) = out {
            self.start_txn_request(out);
        }
        (Some(sendable), wait)
    }

    fn start_txn_request(&mut self, out: Outgoing) {
        let cluster = self.cluster.clone();
        self.txn_req = Some(Box::pin(async move {
            let coordinator = out.coordinator();
            let mut version = 0;
            let result = async {
                let (kind, key) = &coordinator;
                let node = cluster.coordinator(*kind, key).await?;
                let conn = cluster.connection(node).await?;
                let api = out.api();
                let negotiated = conn.version_for(api)?;
                let min = conn
                    .versions()
                    .and_then(|v| v.broker_range(api as i16))
                    .map_or(0, |(lo, _)| lo);
                version = out
                    .version(min, negotiated)
                    .ok_or_else(|| NetError::UnsupportedApi {
                        api,
                        detail: Some(format!(
                            "the broker's versions start at v{min}, beyond what a client sends"
                        )),
                    })?;
                conn.request_at(out.body(version), version).await
            }
            .await;
            TxnAnswer {
                token: out.token,
                version,
                coordinator,
                result,
            }
        }));
    }

    pub(super) fn on_txn_answer(&mut self, answer: TxnAnswer) {
        let Some(txn) = &self.txn else { return };
        let handled =
            lock(txn).handle_response(answer.token, answer.version, answer.result, Instant::now());
        if handled.relookup {
            let (kind, key) = &answer.coordinator;
            self.cluster.invalidate_coordinator(*kind, key);
        }
    }

    /// A batch failed: its transaction must be aborted, or the producer is done (fenced).
    /// Batches failed because their transaction aborts or the producer closes change nothing.
    pub(super) fn txn_batch_failed(&self, e: &ProducerError) {
        let Some(txn) = &self.txn else { return };
        if matches!(
            e,
            ProducerError::TransactionAborted(_) | ProducerError::Closed(_)
        ) {
            return;
        }
        lock(txn).on_batch_failed(e);
    }
}
