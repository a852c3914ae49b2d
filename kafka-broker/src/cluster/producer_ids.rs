//! A broker's producer ids in a cluster (Kafka's `RPCProducerIdManager`, KIP-730): ids come
//! in blocks from the active controller (AllocateProducerIds), which records every block in
//! the metadata log, so no two brokers, and no broker before and after a restart, hand out
//! the same id.
//!
//! [`Blocks`] is the pure part: the block ids are taken from, at most one block fetched ahead,
//! and whether a fetch is wanted. A fetch is wanted from the start (the first block) and once
//! 90% of the current block is used with no next block yet; a request that finds no id left
//! wants one too and is answered COORDINATOR_LOAD_IN_PROGRESS, which clients retry
//! InitProducerId on. [`ProducerIdManager`] runs the fetches in one task: while a block is
//! wanted it asks the controller (with the broker's registered epoch), retrying with a short
//! backoff; a block that would go back below an id already handed out is refused.

use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::{AllocateProducerIdsRequest, RequestBody, ResponseBody};
use tokio::sync::mpsc;

use super::ClusterLink;
use super::lifecycle::Standing;
use crate::error::BrokerError;
use crate::sync::lock;

/// How long one AllocateProducerIds may take, forwarding to another controller included.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// The wait after a failed fetch, doubling up to the second.
const MIN_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// A block of ids: `start..start + len`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    pub start: i64,
    pub len: i32,
}

impl Block {
    /// A block as the controller answered it, if it is one (ids non-negative, no overflow).
    pub fn new(start: i64, len: i32) -> Option<Self> {
        (start >= 0 && len > 0 && start.checked_add(i64::from(len)).is_some())
            .then_some(Self { start, len })
    }

    fn end(self) -> i64 {
        self.start + i64::from(self.len)
    }
}

/// The ids a broker hands out.
#[derive(Debug)]
pub struct Blocks {
    /// The block ids are taken from, and its next id.
    current: Option<(Block, i64)>,
    /// The block fetched ahead.
    next: Option<Block>,
    /// A block is wanted (asked for or being fetched).
    wanted: bool,
    /// The end of the highest block taken: a new block must not start below it.
    floor: i64,
}

impl Default for Blocks {
    /// No block yet, the first one wanted.
    fn default() -> Self {
        Self {
            current: None,
            next: None,
            wanted: true,
            floor: 0,
        }
    }
}

impl Blocks {
    /// The next id, if there is one, and whether a fetch must start now (a block became
    /// wanted by this call).
    pub fn take(&mut self) -> (Option<i64>, bool) {
        if self.current.is_none_or(|(b, next)| next >= b.end()) {
            self.current = self.next.take().map(|b| (b, b.start));
        }
        let id = self.current.as_mut().map(|(_, next)| {
            let id = *next;
            *next += 1;
            id
        });
        let low = self.current.is_none_or(|(b, next)| {
            // 90% used (Kafka's threshold for the prefetch).
            (next - b.start) * 10 >= i64::from(b.len) * 9
        });
        let start = low && self.next.is_none() && !self.wanted;
        if start {
            self.wanted = true;
        }
        (id, start)
    }

    /// Whether a block is wanted.
    pub fn wanted(&self) -> bool {
        self.wanted
    }

    /// Takes a fetched block: ids are drawn from it once the current one is used up. A block
    /// starting below an id already handed out is refused (and another still wanted).
    pub fn install(&mut self, block: Block) -> Result<(), String> {
        if block.start < self.floor {
            return Err(format!(
                "the block {}..{} starts below {}, the end of a block already taken",
                block.start,
                block.end(),
                self.floor
            ));
        }
        self.floor = block.end();
        match self.current {
            Some((b, next)) if next < b.end() => self.next = Some(block),
            _ => self.current = Some((block, block.start)),
        }
        self.wanted = false;
        Ok(())
    }
}

/// The producer ids of a broker in a cluster, with the task that fetches their blocks.
#[derive(Debug, Default)]
pub struct ProducerIdManager {
    blocks: Arc<Mutex<Blocks>>,
    /// Wakes the fetch task (set once it runs).
    wake: OnceLock<mpsc::UnboundedSender<()>>,
}

impl ProducerIdManager {
    /// A new producer id, or COORDINATOR_LOAD_IN_PROGRESS while no block is here (a fetch is
    /// then under way).
    pub fn next(&self) -> Result<i64, BrokerError> {
        let (id, start) = lock(&self.blocks).take();
        if start {
            if let Some(wake) = self.wake.get() {
                let _ = wake.send(());
            }
        }
        id.ok_or_else(|| {
            BrokerError::kafka(
                ErrorCode::COORDINATOR_LOAD_IN_PROGRESS,
                "no producer id block from the controller yet",
            )
        })
    }

    /// Starts fetching blocks through `link` for broker `broker_id` (the first block at
    /// once). The task ends with the manager.
    pub fn start(&self, link: Arc<ClusterLink>, broker_id: i32) {
        let (tx, rx) = mpsc::unbounded_channel();
        if self.wake.set(tx).is_err() {
            return;
        }
        tokio::spawn(fetch_blocks(
            Arc::downgrade(&self.blocks),
            link,
            broker_id,
            rx,
        ));
    }
}

/// Fetches blocks while one is wanted, then waits to be woken.
async fn fetch_blocks(
    blocks: Weak<Mutex<Blocks>>,
    link: Arc<ClusterLink>,
    broker_id: i32,
    mut wake: mpsc::UnboundedReceiver<()>,
) {
    let mut backoff = MIN_BACKOFF;
    loop {
        loop {
            let Some(b) = blocks.upgrade() else { return };
            if !lock(&b).wanted() {
                break;
            }
            drop(b);
            let outcome = match fetch(&link, broker_id).await {
                Ok(block) => {
                    let Some(b) = blocks.upgrade() else { return };
                    let installed = lock(&b).install(block);
                    installed.map(|()| block)
                }
                Err(why) => Err(why),
            };
            match outcome {
                Ok(block) => {
                    tracing::info!(
                        start = block.start,
                        len = block.len,
                        "producer id block from the controller"
                    );
                    backoff = MIN_BACKOFF;
                }
                Err(why) => {
                    tracing::warn!(why, "no producer id block this time; trying again");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        }
        if wake.recv().await.is_none() {
            return;
        }
        while wake.try_recv().is_ok() {}
    }
}

/// One AllocateProducerIds with the broker's registered epoch (waiting for its registration).
async fn fetch(link: &ClusterLink, broker_id: i32) -> Result<Block, String> {
    let mut standing = link.standing.clone();
    let epoch = {
        let s = standing
            .wait_for(|s| !matches!(s, Standing::Unregistered))
            .await
            .map_err(|_| "the broker is stopping".to_owned())?;
        match *s {
            Standing::Active { epoch } | Standing::Fenced { epoch } => epoch,
            Standing::Unregistered => return Err("the broker is not registered".into()),
        }
    };
    let req = AllocateProducerIdsRequest {
        broker_id,
        broker_epoch: epoch,
        ..Default::default()
    };
    let answer = link
        .client
        .send(RequestBody::AllocateProducerIds(req), 0, REQUEST_TIMEOUT)
        .await
        .map_err(|e| e.to_string())?;
    let ResponseBody::AllocateProducerIds(r) = answer else {
        return Err(format!(
            "not an AllocateProducerIds answer: {:?}",
            answer.api_key()
        ));
    };
    if r.error_code != ErrorCode::NONE.code() {
        return Err(format!(
            "the controller answered {:?} (broker epoch {epoch})",
            ErrorCode::from(r.error_code)
        ));
    }
    Block::new(r.producer_id_start, r.producer_id_len).ok_or_else(|| {
        format!(
            "the controller answered an invalid block: start {}, length {}",
            r.producer_id_start, r.producer_id_len
        )
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn block(start: i64) -> Block {
        Block::new(start, 1000).unwrap()
    }

    #[test]
    fn the_first_block_is_wanted_and_no_id_is_given_before_it() {
        let mut b = Blocks::default();
        assert!(b.wanted());
        // Already wanted: no second fetch starts.
        assert_eq!(b.take(), (None, false));
        b.install(block(0)).unwrap();
        assert!(!b.wanted());
        assert_eq!(b.take(), (Some(0), false));
    }

    #[test]
    fn the_next_block_is_wanted_at_ninety_percent_and_taken_when_the_current_ends() {
        let mut b = Blocks::default();
        b.install(block(3000)).unwrap();
        let mut starts = 0;
        let mut ids = Vec::new();
        for _ in 0..1000 {
            let (id, start) = b.take();
            ids.push(id.unwrap());
            if start {
                starts += 1;
                // Id 3899 is the 900th: taking it makes the block 90% used.
                assert_eq!(id, Some(3899));
            }
        }
        assert_eq!(starts, 1, "one fetch for the next block");
        assert!(b.wanted());
        assert_eq!(ids, (3000..4000).collect::<Vec<_>>());
        // Used up and nothing fetched: no id, and no second fetch.
        assert_eq!(b.take(), (None, false));
        b.install(block(7000)).unwrap();
        assert_eq!(b.take(), (Some(7000), false));
    }

    #[test]
    fn a_block_fetched_ahead_waits_for_the_current_one() {
        let mut b = Blocks::default();
        b.install(block(0)).unwrap();
        for _ in 0..950 {
            b.take();
        }
        b.install(block(1000)).unwrap();
        let ids: Vec<i64> = (0..100).map(|_| b.take().0.unwrap()).collect();
        assert_eq!(ids, (950..1050).collect::<Vec<_>>());
    }

    #[test]
    fn a_block_below_one_taken_is_refused() {
        let mut b = Blocks::default();
        b.install(block(5000)).unwrap();
        assert!(b.install(block(4500)).is_err());
        b.install(block(6000)).unwrap();
    }

    #[test]
    fn invalid_blocks_are_not_blocks() {
        assert!(Block::new(-1, 1000).is_none());
        assert!(Block::new(0, 0).is_none());
        assert!(Block::new(i64::MAX - 10, 1000).is_none());
        assert!(Block::new(7, 1).is_some());
    }
}
