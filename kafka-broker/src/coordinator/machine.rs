//! The contract between a pure coordinator and the [`Shell`](super::Shell) that drives it,
//! in quinn-proto's shape: calls go in with `now`, effects come out of
//! [`Machine::poll_output`], timers are asked for with [`Machine::poll_timeout`] and fired
//! with [`Machine::handle_timeout`]. Nothing here sleeps, reads a clock or does I/O.

use bytes::Bytes;
use kafka_protocol::error_code::ErrorCode;

/// Names a request whose answer comes later (an [`Effect::Answer`]). The shell chooses it;
/// it is unique among the requests still waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestId(pub u64);

/// One record of a coordinator's topic: its key, and its value (`None`: a tombstone).
pub type KeyValue = (Bytes, Option<Bytes>);

/// The producer of a transactional batch (id and epoch; a coordinator's batches carry no
/// sequence).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Producer {
    pub id: i64,
    pub epoch: i16,
}

/// Records to append as one batch to one partition of the coordinator's topic (acks=all).
/// The outcome comes back through [`Machine::append_done`] with `tag`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Append<T> {
    pub tag: T,
    pub partition: i32,
    pub records: Vec<KeyValue>,
    /// A transactional batch of this producer (a TxnOffsetCommit's), or an ordinary one.
    pub producer: Option<Producer>,
}

/// What a machine wants done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect<A, T, W> {
    /// The answer to a waiting request.
    Answer(RequestId, A),
    /// Records to append.
    Append(Append<T>),
    /// Work for the coordinator's own driver (the transaction markers).
    Work(W),
}

/// The [`Effect`] type of a machine.
pub type EffectOf<M> = Effect<<M as Machine>::Answer, <M as Machine>::Tag, <M as Machine>::Work>;

/// A pure coordinator as the shell drives it. After every call the shell drains
/// [`Machine::poll_output`]; it calls [`Machine::handle_timeout`] once
/// [`Machine::poll_timeout`] is due, and [`Machine::append_done`] once an append is
/// acknowledged or has failed (right away when the record log refuses it, so from inside a
/// drain too).
pub trait Machine: Send + 'static {
    /// What a waiting request is answered with.
    type Answer: Send + 'static;
    /// What names an append when its outcome comes back.
    type Tag: Send + 'static;
    /// Work handed to the coordinator's own driver.
    type Work: Send + 'static;

    /// The next effect, if any.
    #[must_use]
    fn poll_output(&mut self, now: i64) -> Option<EffectOf<Self>>;

    /// When [`Machine::handle_timeout`] is next due (milliseconds on the shell's clock), if
    /// ever.
    #[must_use]
    fn poll_timeout(&self) -> Option<i64>;

    /// Fires what is due at `now`.
    fn handle_timeout(&mut self, now: i64);

    /// The outcome of the append tagged `tag`: `Ok` once acknowledged (acks=all), else the
    /// partition layer's error code (the machine maps it to its answer,
    /// [`super::answer_for_append_error`]).
    fn append_done(&mut self, tag: Self::Tag, result: Result<(), ErrorCode>, now: i64);
}
