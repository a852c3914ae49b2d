//! The shell on a toy machine: answers reach their waiters, closing and unloading answer
//! NOT_COORDINATOR, appends are reported back (refused at once, acknowledged later, also when
//! nobody waits any more or there is no runtime), and timers fire when the machine says.
#![allow(clippy::unwrap_used)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::error_code::ErrorCode;
use tokio::sync::oneshot;

use super::*;
use crate::coordinator::DiscardRecords;
use crate::coordinator::machine::{Append, EffectOf, KeyValue, Producer};

/// Answers requests with numbers; writes one record per `write` and answers once it is
/// acknowledged (the error code's number if it failed); fires timers as work.
#[derive(Debug, Default)]
struct Toy {
    out: VecDeque<EffectOf<Toy>>,
    /// (request, what it answers) of writes not reported yet, by tag.
    writes: Vec<(u64, RequestId)>,
    timers: Vec<i64>,
    reported: Vec<(u64, Result<(), ErrorCode>)>,
}

impl Toy {
    fn answer(&mut self, id: RequestId, n: u64) {
        self.out.push_back(Effect::Answer(id, n));
    }

    fn write(&mut self, id: RequestId, partition: i32, tag: u64) {
        self.writes.push((tag, id));
        self.out.push_back(Effect::Append(Append {
            tag,
            partition,
            records: vec![(Bytes::from_static(b"k"), None)],
            producer: None,
        }));
    }
}

impl Machine for Toy {
    type Answer = u64;
    type Tag = u64;
    type Work = i64;

    fn poll_output(&mut self, _now: i64) -> Option<EffectOf<Self>> {
        self.out.pop_front()
    }

    fn poll_timeout(&self) -> Option<i64> {
        self.timers.iter().copied().min()
    }

    fn handle_timeout(&mut self, now: i64) {
        let (due, later): (Vec<i64>, Vec<i64>) = self.timers.iter().partition(|t| **t <= now);
        self.timers = later;
        for t in due {
            self.out.push_back(Effect::Work(t));
        }
    }

    fn append_done(&mut self, tag: u64, result: Result<(), ErrorCode>, _now: i64) {
        self.reported.push((tag, result));
        if let Some(i) = self.writes.iter().position(|(t, _)| *t == tag) {
            let (_, id) = self.writes.remove(i);
            let n = result.map_or_else(|e| u64::try_from(e.0).unwrap_or(0), |()| tag);
            self.answer(id, n);
        }
    }
}

/// A record log that refuses partition 9 (NOT_ENOUGH_REPLICAS), acknowledges partition 0 at
/// once and holds the acknowledgements of the others for the test to give.
#[derive(Debug, Default)]
struct Log {
    held: Mutex<Vec<oneshot::Sender<Result<(), ErrorCode>>>>,
}

impl RecordLog for Log {
    fn append(
        &self,
        partition: i32,
        _records: Vec<KeyValue>,
        _producer: Option<Producer>,
    ) -> Result<AckWait, ErrorCode> {
        match partition {
            9 => Err(ErrorCode::NOT_ENOUGH_REPLICAS),
            0 => Ok(AckWait::done()),
            _ => {
                let (tx, rx) = oneshot::channel();
                crate::sync::lock(&self.held).push(tx);
                Ok(AckWait::pending(async move {
                    rx.await.unwrap_or(Err(ErrorCode::NOT_COORDINATOR))
                }))
            }
        }
    }
}

fn shell(log: Arc<Log>) -> Shell<Toy> {
    Shell::new(Toy::default(), Clock::manual(1_000), log)
}

fn release(log: &Log, result: Result<(), ErrorCode>) {
    let tx = crate::sync::lock(&log.held).remove(0);
    tx.send(result).unwrap();
}

#[tokio::test]
async fn answers_reach_their_waiters_and_closing_answers_not_coordinator() {
    let s = shell(Arc::default());
    let now = s.ask(None, |m, id, _| m.answer(id, 7));
    assert_eq!(now.answer().await, Ok(7));
    // Answered later, by another call.
    let mut ids = Vec::new();
    let later = s.ask(Some(1), |_, id, _| ids.push(id));
    s.call(|m, _| m.answer(ids[0], 8));
    assert_eq!(later.answer().await, Ok(8));
    // Unloading a partition drops its waiters only.
    let mut ids = Vec::new();
    let p1 = s.ask(Some(1), |_, id, _| ids.push(id));
    let p2 = s.ask(Some(2), |_, id, _| ids.push(id));
    s.unload(1, |_, _| ());
    assert_eq!(p1.answer().await, Err(ErrorCode::NOT_COORDINATOR));
    s.call(|m, _| m.answer(ids[1], 9));
    assert_eq!(p2.answer().await, Ok(9));
    // Closing: waiting requests and new ones.
    let waiting = s.ask(Some(2), |_, _, _| {});
    s.close();
    assert_eq!(waiting.answer().await, Err(ErrorCode::NOT_COORDINATOR));
    let mut started = false;
    let after = s.ask(None, |_, _, _| started = true);
    assert_eq!(after.answer().await, Err(ErrorCode::NOT_COORDINATOR));
    assert!(!started, "a closed coordinator started a request");
}

#[tokio::test]
async fn appends_are_reported_refused_at_once_and_acknowledged_later() {
    let log = Arc::new(Log::default());
    let s = shell(log.clone());
    // Refused: reported inside the call, so answered at once.
    let refused = s.ask(None, |m, id, _| m.write(id, 9, 1));
    assert_eq!(
        refused.answer().await,
        Ok(u64::try_from(ErrorCode::NOT_ENOUGH_REPLICAS.0).unwrap())
    );
    // Acknowledged already.
    assert_eq!(
        s.ask(None, |m, id, _| m.write(id, 0, 2)).answer().await,
        Ok(2)
    );
    // Held: the answer waits for the acknowledgement, taken outside the lock.
    let held = tokio::spawn(s.ask(None, |m, id, _| m.write(id, 3, 3)).answer());
    tokio::task::yield_now().await;
    assert!(!held.is_finished());
    assert_eq!(
        s.inspect(|m| m.reported.len()),
        2,
        "the shell stays usable meanwhile"
    );
    release(&log, Ok(()));
    assert_eq!(held.await.unwrap(), Ok(3));
    // Nobody waits any more: the acknowledgement is still reported.
    drop(s.ask(None, |m, id, _| m.write(id, 3, 4)));
    release(&log, Err(ErrorCode::REQUEST_TIMED_OUT));
    for _ in 0..100 {
        if s.inspect(|m| m.reported.len()) == 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(
        s.inspect(|m| m.reported.last().copied()),
        Some((4, Err(ErrorCode::REQUEST_TIMED_OUT)))
    );
}

#[test]
fn without_a_runtime_the_answer_drives_its_acknowledgement() {
    let log = Arc::new(Log::default());
    let s = shell(log.clone());
    let asked = s.ask(None, |m, id, _| m.write(id, 3, 5));
    release(&log, Ok(()));
    assert_eq!(futures::executor::block_on(asked.answer()), Ok(5));
}

#[test]
fn advance_fires_what_is_due_on_a_manual_clock() {
    let s = shell(Arc::default());
    let mut work = s.take_work().unwrap();
    assert!(s.take_work().is_none(), "the work queue is taken once");
    s.call(|m, now| m.timers.extend([now + 100, now + 300]));
    s.advance(99);
    assert!(work.try_recv().is_err());
    s.advance(1);
    assert_eq!(work.try_recv(), Ok(1_100));
    s.advance(500);
    assert_eq!(work.try_recv(), Ok(1_300));
    assert_eq!(s.inspect(|m| m.poll_timeout()), None);
}

#[tokio::test(start_paused = true)]
async fn timers_fire_when_the_machine_says_and_move_with_its_calls() {
    let s = Shell::new(Toy::default(), Clock::system(), Arc::new(DiscardRecords));
    let mut work = s.take_work().unwrap();
    let start = s.clock().now_ms();
    s.call(|m, _| m.timers.push(start + 10_000));
    let (stop, stopped) = oneshot::channel::<()>();
    let task = {
        let s = s.clone();
        tokio::spawn(async move {
            s.run_timers(async {
                let _ = stopped.await;
            })
            .await;
        })
    };
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert!(work.try_recv().is_err());
    // An earlier timer set by a call wakes the loop.
    s.call(|m, _| m.timers.push(start + 2_000));
    let fired = work.recv().await.unwrap();
    assert_eq!(fired, start + 2_000);
    assert!((2_000..2_100).contains(&(s.clock().now_ms() - start)));
    let fired = work.recv().await.unwrap();
    assert_eq!(fired, start + 10_000);
    assert!((10_000..10_100).contains(&(s.clock().now_ms() - start)));
    stop.send(()).unwrap();
    task.await.unwrap();
}
