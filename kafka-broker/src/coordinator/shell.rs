//! [`Shell`]: a pure coordinator ([`Machine`]) behind one mutex, as the request handlers and
//! the coordinator's background task use it. It decides nothing; it moves answers, records
//! and time:
//!
//! - every call runs on the machine at the clock's `now`, then drains the machine's effects:
//!   answers go to their waiters (oneshot channels), appends to the [`RecordLog`] (under the
//!   lock: a page-cache write), work to the coordinator's driver;
//! - an append's acknowledgement is awaited with the lock released (in a task of its own, so
//!   it completes even if the client goes away), then reported with
//!   [`Machine::append_done`]; a refused append is reported at once;
//! - [`Shell::run_timers`] sleeps until the machine's `poll_timeout` (woken when a call may
//!   have moved it) and fires `handle_timeout`;
//! - [`Shell::close`] and [`Shell::unload`] drop waiters, which their futures read as
//!   NOT_COORDINATOR.
//!
//! Lock order: the shell's lock, then whatever the record log takes (partition locks);
//! nothing takes the shell's lock while holding those.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use kafka_protocol::error_code::ErrorCode;
use tokio::sync::{Notify, mpsc, oneshot};

use super::machine::{Effect, Machine, RequestId};
use super::record_log::{AckWait, RecordLog};
use crate::clock::Clock;

type Completion = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// A coordinator's machine and everything around it. Cheap to clone (one shared state).
pub struct Shell<M: Machine> {
    core: Arc<Core<M>>,
}

impl<M: Machine> Clone for Shell<M> {
    fn clone(&self) -> Self {
        Self {
            core: Arc::clone(&self.core),
        }
    }
}

impl<M: Machine> std::fmt::Debug for Shell<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shell")
            .field("clock", &self.core.clock)
            .field("log", &self.core.log)
            .finish_non_exhaustive()
    }
}

struct Core<M: Machine> {
    state: Mutex<State<M>>,
    clock: Clock,
    log: Arc<dyn RecordLog>,
    /// Woken after every call: the machine's next timer may have moved.
    timers: Notify,
    work: mpsc::UnboundedSender<M::Work>,
    work_rx: Mutex<Option<mpsc::UnboundedReceiver<M::Work>>>,
}

struct State<M: Machine> {
    machine: M,
    waiters: HashMap<RequestId, Waiter<M::Answer>>,
    next_request: u64,
    closed: bool,
    /// Acknowledgements that could not be spawned (no tokio runtime, as in some tests): the
    /// next [`Shell::ask`] drives them before its own answer.
    unspawned: Vec<Completion>,
}

struct Waiter<A> {
    /// The coordinator partition the request belongs to, if it is one partition's.
    partition: Option<i32>,
    tx: oneshot::Sender<A>,
}

impl<M: Machine> Shell<M> {
    /// `machine` on `clock`, appending its records to `log`.
    pub fn new(machine: M, clock: Clock, log: Arc<dyn RecordLog>) -> Self {
        let (work, work_rx) = mpsc::unbounded_channel();
        Self {
            core: Arc::new(Core {
                state: Mutex::new(State {
                    machine,
                    waiters: HashMap::new(),
                    next_request: 0,
                    closed: false,
                    unspawned: Vec::new(),
                }),
                clock,
                log,
                timers: Notify::new(),
                work,
                work_rx: Mutex::new(Some(work_rx)),
            }),
        }
    }

    /// The clock the machine runs on.
    pub fn clock(&self) -> &Clock {
        &self.core.clock
    }

    fn lock(&self) -> MutexGuard<'_, State<M>> {
        crate::sync::lock(&self.core.state)
    }

    /// Runs `f` on the machine at the clock's now, then carries out what it released.
    pub fn call<T>(&self, f: impl FnOnce(&mut M, i64) -> T) -> T {
        let out = {
            let mut state = self.lock();
            let now = self.core.clock.now_ms();
            let out = f(&mut state.machine, now);
            self.drain(&mut state, now);
            out
        };
        self.core.timers.notify_one();
        out
    }

    /// Reads the machine.
    pub fn inspect<T>(&self, f: impl FnOnce(&M) -> T) -> T {
        f(&self.lock().machine)
    }

    /// Starts a request whose answer comes later: `start` gets the request's id, and
    /// [`Asked::answer`] resolves with the machine's [`Effect::Answer`] for it, or
    /// NOT_COORDINATOR if the coordinator closed (or gave up `partition`, the request's
    /// coordinator partition) first.
    pub fn ask(
        &self,
        partition: Option<i32>,
        start: impl FnOnce(&mut M, RequestId, i64),
    ) -> Asked<M::Answer> {
        let (tx, rx) = oneshot::channel();
        let unspawned = {
            let mut state = self.lock();
            if state.closed {
                drop(tx);
                Vec::new()
            } else {
                state.next_request = state.next_request.wrapping_add(1);
                let id = RequestId(state.next_request);
                state.waiters.insert(id, Waiter { partition, tx });
                let now = self.core.clock.now_ms();
                start(&mut state.machine, id, now);
                self.drain(&mut state, now);
                std::mem::take(&mut state.unspawned)
            }
        };
        self.core.timers.notify_one();
        Asked { unspawned, rx }
    }

    /// Carries out the machine's effects until it has none.
    fn drain(&self, state: &mut State<M>, now: i64) {
        while let Some(effect) = state.machine.poll_output(now) {
            match effect {
                Effect::Answer(id, answer) => {
                    if let Some(w) = state.waiters.remove(&id) {
                        // The client may be gone; nothing to do then.
                        let _ = w.tx.send(answer);
                    }
                }
                Effect::Work(work) => {
                    // The driver may be gone (shutting down): the work is moot then.
                    let _ = self.core.work.send(work);
                }
                Effect::Append(append) => {
                    let tag = append.tag;
                    match self
                        .core
                        .log
                        .append(append.partition, append.records, append.producer)
                    {
                        Err(code) => state.machine.append_done(tag, Err(code), now),
                        Ok(wait) if wait.is_done() => state.machine.append_done(tag, Ok(()), now),
                        Ok(wait) => self.await_ack(state, tag, wait),
                    }
                }
            }
        }
    }

    /// Waits for an acknowledgement outside the lock (in a task), then reports it.
    fn await_ack(&self, state: &mut State<M>, tag: M::Tag, wait: AckWait) {
        let core: Weak<Core<M>> = Arc::downgrade(&self.core);
        let completion = async move {
            let result = wait.wait().await;
            if let Some(core) = core.upgrade() {
                Shell { core }.call(|m, now| m.append_done(tag, result, now));
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn(completion);
            }
            Err(_) => state.unspawned.push(Box::pin(completion)),
        }
    }

    /// Fires the machine's timers if they are due.
    pub fn fire_timers(&self) {
        self.call(|m, now| {
            if m.poll_timeout().is_some_and(|due| due <= now) {
                m.handle_timeout(now);
            }
        });
    }

    /// Moves a manual clock forward by `ms` (no effect on the system clock) and fires what
    /// is due then.
    pub fn advance(&self, ms: i64) {
        self.core.clock.advance(ms);
        self.fire_timers();
    }

    /// Fires the machine's timers as they come due, until `shutdown` completes.
    pub async fn run_timers(&self, shutdown: impl Future<Output = ()>) {
        tokio::pin!(shutdown);
        let mut fired_at = None;
        loop {
            let due = self.inspect(|m| m.poll_timeout());
            let now = self.core.clock.now_ms();
            // A timer still due right after firing (the machine did not move it) waits a
            // millisecond rather than spinning.
            let floor = if fired_at == Some(now) { 1 } else { 0 };
            let wait = due.map(|d| {
                let ms = u64::try_from(d.saturating_sub(now)).unwrap_or(0);
                Duration::from_millis(ms.max(floor))
            });
            let sleep = async {
                match wait {
                    Some(w) => tokio::time::sleep(w).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = &mut shutdown => return,
                () = self.core.timers.notified() => fired_at = None,
                () = sleep => {
                    self.fire_timers();
                    fired_at = Some(self.core.clock.now_ms());
                }
            }
        }
    }

    /// Stops coordinating: requests waiting, and any that arrive from now on, are answered
    /// NOT_COORDINATOR. Calls that answer at once still run.
    pub fn close(&self) {
        let mut state = self.lock();
        state.closed = true;
        state.waiters.clear();
    }

    /// Gives up coordinator partition `partition`: runs `f` on the machine (which forgets
    /// what the partition held), then answers NOT_COORDINATOR to the requests of that
    /// partition still waiting.
    pub fn unload<T>(&self, partition: i32, f: impl FnOnce(&mut M, i64) -> T) -> T {
        let out = {
            let mut state = self.lock();
            let now = self.core.clock.now_ms();
            let out = f(&mut state.machine, now);
            self.drain(&mut state, now);
            state.waiters.retain(|_, w| w.partition != Some(partition));
            out
        };
        self.core.timers.notify_one();
        out
    }

    /// The driver's end of the work queue (once).
    pub fn take_work(&self) -> Option<mpsc::UnboundedReceiver<M::Work>> {
        crate::sync::lock(&self.core.work_rx).take()
    }
}

/// A request started with [`Shell::ask`]; borrows nothing.
#[must_use = "the answer comes through Asked::answer"]
pub struct Asked<A> {
    unspawned: Vec<Completion>,
    rx: oneshot::Receiver<A>,
}

impl<A: Send> Asked<A> {
    /// The request's answer; NOT_COORDINATOR if it was dropped unanswered.
    pub async fn answer(self) -> Result<A, ErrorCode> {
        for completion in self.unspawned {
            completion.await;
        }
        self.rx.await.map_err(|_| ErrorCode::NOT_COORDINATOR)
    }
}

impl<A> std::fmt::Debug for Asked<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Asked").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
