//! What crosses between cords for a call: the [`Request`] a cord runs, and
//! the [`Gather`] its caller waits on, filled through one [`Slot`] per
//! target cord. Plain `Send` data: MessagePack bytes and strings, no Lua
//! value.
//!
//! A slot is filled once: by the cord that ran the request, or, when the
//! request is dropped unrun (its cord stopped) or its cord ends before
//! replying, by the slot's `Drop` with a [`FailKind::Dropped`] failure, so
//! no caller waits for ever.

use std::future::poll_fn;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use luafiber_fiber::FiberId;
use luafiber_runtime::{block_on_future, block_on_future_timeout, cord, FiberError};

/// What a cord is asked to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A global function by dotted name (`LuaCords::call`: the CALL
    /// handler).
    Call,
    /// A Lua chunk (`LuaCords::eval`, `threads.eval`: the EVAL handler).
    Eval,
    /// A function exported with `threads.export` (`threads.call`).
    Export,
}

/// A call for one cord: run `body.what()` (a name or a chunk, as `kind`
/// says) with the arguments `body.args()` (a MessagePack array), and fill
/// `reply` with the results (a MessagePack array) or the error.
pub(crate) struct Request {
    pub kind: Kind,
    pub body: Body,
    pub reply: Slot,
    /// The API function, for error messages (`threads.call`).
    pub fname: &'static str,
}

/// What a call runs and its arguments: inline when small (no allocation of
/// their own: they travel in the job that carries the request), else in
/// one shared allocation (the same for every target of a call).
#[derive(Clone)]
pub(crate) struct Body {
    split: usize,
    bytes: Bytes,
}

/// Bytes a [`Body`] holds inline at most.
const INLINE: usize = 62;

#[derive(Clone)]
enum Bytes {
    Inline(u8, [u8; INLINE]),
    Shared(Arc<[u8]>),
}

impl Body {
    /// `what` then `args`, copied once.
    pub fn new(what: &[u8], args: &[u8]) -> Body {
        let len = what.len() + args.len();
        let bytes = if len <= INLINE {
            let mut b = [0; INLINE];
            b[..what.len()].copy_from_slice(what);
            b[what.len()..len].copy_from_slice(args);
            Bytes::Inline(len as u8, b)
        } else {
            // An exact-size iterator: one allocation, no copy after it.
            Bytes::Shared(what.iter().chain(args).copied().collect())
        };
        Body {
            split: what.len(),
            bytes,
        }
    }

    fn all(&self) -> &[u8] {
        match &self.bytes {
            Bytes::Inline(len, b) => &b[..usize::from(*len)],
            Bytes::Shared(b) => b,
        }
    }

    /// The function's name or the chunk.
    pub fn what(&self) -> &[u8] {
        &self.all()[..self.split]
    }

    /// The arguments (a MessagePack array).
    pub fn args(&self) -> &[u8] {
        &self.all()[self.split..]
    }
}

/// Why a call failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FailKind {
    /// The called code raised an error (`value` holds it).
    Lua,
    /// A result could not cross to the caller (`IllegalParams` there).
    Refused,
    /// The request was dropped unrun, or its cord ended first (or cut the
    /// call off as it stopped).
    Dropped,
    /// The call's fiber was cancelled (by another fiber of its cord).
    Cancelled,
}

/// A call's failure.
#[derive(Clone, Debug)]
pub(crate) struct Failure {
    pub kind: FailKind,
    /// The error's message: the string raised, or an error object's
    /// `message`.
    pub message: String,
    /// The error value as MessagePack, when it could be encoded.
    pub value: Option<Vec<u8>>,
}

/// One cord's answer: the results as a MessagePack array, or the failure.
pub(crate) type Outcome = Result<Vec<u8>, Failure>;

struct State {
    /// The answer of slot 0 (most calls have one target: no vector).
    first: Option<Outcome>,
    /// The answers of slots `1..`.
    rest: Vec<Option<Outcome>>,
    left: usize,
    waiter: Option<Waker>,
    /// The cord and the Lua fiber running the call (gathers of one, once
    /// started): what a cancel from the caller reaches.
    fiber: Option<(usize, FiberId)>,
    /// The caller went away (a dropped future): the call should not start,
    /// or be cancelled when it has.
    abandoned: bool,
}

impl State {
    fn outcome(&mut self, index: usize) -> &mut Option<Outcome> {
        match index {
            0 => &mut self.first,
            i => &mut self.rest[i - 1],
        }
    }
}

/// The answers of the cords a call went to, and its caller's waker.
pub(crate) struct Gather {
    state: Mutex<State>,
}

impl Gather {
    /// A gather of `n` answers (at least one) and the slots that fill it.
    pub fn new(n: usize) -> (Arc<Gather>, Vec<Slot>) {
        let g = Gather::make(n.max(1));
        let slots = (0..n.max(1))
            .map(|index| Slot {
                gather: Some(g.clone()),
                index,
            })
            .collect();
        (g, slots)
    }

    /// A gather of one answer and its slot (no vector made).
    pub fn one() -> (Arc<Gather>, Slot) {
        let g = Gather::make(1);
        let slot = Slot {
            gather: Some(g.clone()),
            index: 0,
        };
        (g, slot)
    }

    fn make(n: usize) -> Arc<Gather> {
        Arc::new(Gather {
            state: Mutex::new(State {
                first: None,
                rest: (1..n).map(|_| None).collect(),
                left: n,
                waiter: None,
                fiber: None,
                abandoned: false,
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn set(&self, index: usize, outcome: Outcome) {
        let waiter = {
            let mut st = self.lock();
            let slot = st.outcome(index);
            if slot.is_some() {
                return;
            }
            *slot = Some(outcome);
            st.left -= 1;
            if st.left > 0 {
                return;
            }
            st.waiter.take()
        };
        // At the end of this cord's batch: a client waiting for many
        // calls wakes once for those a batch answered.
        if let Some(w) = waiter {
            cord::wake_later(w);
        }
    }

    /// Whether every answer is in.
    pub fn is_done(&self) -> bool {
        self.lock().left == 0
    }

    /// Polls a gather of one ([`Gather::one`]) as a future would: the
    /// answer once it is in (`None` when taken already), or `Pending`
    /// with `cx`'s waker kept for the cord that answers.
    pub fn poll_one(&self, cx: &mut Context<'_>) -> Poll<Option<Outcome>> {
        let mut st = self.lock();
        if st.left == 0 {
            return Poll::Ready(st.first.take());
        }
        if !st.waiter.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            st.waiter = Some(cx.waker().clone());
        }
        Poll::Pending
    }

    /// The waker of the caller waiting for the answer, if one waits.
    pub fn waiter(&self) -> Option<std::task::Waker> {
        let st = self.lock();
        match st.left {
            0 => None,
            _ => st.waiter.clone(),
        }
    }

    /// The caller gives up on the call: it will not start if it has not,
    /// and the cord and id of its fiber are returned when it runs (the
    /// caller cancels it there).
    pub fn abandon(&self) -> Option<(usize, FiberId)> {
        let mut st = self.lock();
        st.abandoned = true;
        st.waiter = None;
        if st.left == 0 {
            return None;
        }
        st.fiber
    }

    /// Whether the caller gave up on the call ([`Gather::abandon`]).
    pub fn is_abandoned(&self) -> bool {
        self.lock().abandoned
    }

    /// Records that the call runs on cord `cord` in fiber `id`; `false`
    /// when the caller gave up on it meanwhile (the cord cancels it then).
    pub fn started(&self, cord: usize, id: FiberId) -> bool {
        let mut st = self.lock();
        st.fiber = Some((cord, id));
        !st.abandoned || st.left == 0
    }

    /// The id of the call's fiber, once it started ([`Gather::started`]).
    pub fn fiber_id(&self) -> Option<FiberId> {
        self.lock().fiber.map(|(_, id)| id)
    }

    /// Waits for every answer (`timeout`: at most that long) and returns
    /// them in slot order. In a fiber only the fiber waits (a cancellation
    /// point); elsewhere the thread blocks.
    ///
    /// # Errors
    ///
    /// [`FiberError::is_timeout`] or [`FiberError::is_cancelled`]; the
    /// answers still due are then dropped when they come.
    pub fn wait(&self, timeout: Option<Duration>) -> Result<Vec<Outcome>, FiberError> {
        self.wait_with(timeout, |st| {
            let rest = std::mem::take(&mut st.rest);
            st.first
                .take()
                .into_iter()
                .chain(rest.into_iter().flatten())
                .collect()
        })
    }

    /// [`Gather::wait`] for a gather of one answer ([`Gather::one`]).
    ///
    /// # Errors
    ///
    /// As [`Gather::wait`].
    pub fn wait_one(&self, timeout: Option<Duration>) -> Result<Option<Outcome>, FiberError> {
        self.wait_with(timeout, |st| st.first.take())
    }

    /// Waits for every answer, then takes them out with `take`.
    fn wait_with<R>(
        &self,
        timeout: Option<Duration>,
        mut take: impl FnMut(&mut State) -> R,
    ) -> Result<R, FiberError> {
        let ready = poll_fn(|cx| {
            let mut st = self.lock();
            if st.left == 0 {
                return Poll::Ready(take(&mut st));
            }
            if !st.waiter.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                st.waiter = Some(cx.waker().clone());
            }
            Poll::Pending
        });
        match timeout {
            None => block_on_future(ready),
            Some(t) => block_on_future_timeout(ready, t),
        }
    }
}

/// Where one cord's answer goes; filled once, or with a
/// [`FailKind::Dropped`] failure when dropped unfilled.
pub(crate) struct Slot {
    gather: Option<Arc<Gather>>,
    index: usize,
}

impl Slot {
    /// The gather this slot fills (`None` once filled).
    pub fn gather(&self) -> Option<&Arc<Gather>> {
        self.gather.as_ref()
    }

    /// Gives the answer (and wakes the caller when it was the last).
    pub fn fill(mut self, outcome: Outcome) {
        if let Some(g) = self.gather.take() {
            g.set(self.index, outcome);
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(g) = self.gather.take() {
            g.set(
                self.index,
                Err(Failure {
                    kind: FailKind::Dropped,
                    message: "the call was dropped: its cord stopped before it answered".into(),
                    value: None,
                }),
            );
        }
    }
}
