//! A bounded FIFO channel between the fibers of one thread (Tarantool's
//! `fiber.channel`).
//!
//! The channel holds a buffer of at most `size` values and two FIFO queues of
//! blocked fibers: readers (in [`Channel::get`]) and writers (in
//! [`Channel::put`]). Each blocked fiber owns a waiter record that the other
//! side completes before waking it:
//!
//! - a put with a reader waiting hands the value straight into that reader's
//!   record (size 0 channels work only this way);
//! - a get that takes a value from a full buffer moves the first blocked
//!   writer's value into the buffer; with an empty buffer it takes the value
//!   straight from the writer's record;
//! - [`Channel::close`] marks every record closed.
//!
//! A record is taken off its queue by whoever completes it, so the waiter
//! knows the outcome when it runs again, whatever else woke it: a value handed
//! to a reader whose timer fired at the same moment is still returned, and a
//! writer whose value was taken succeeds even if it was cancelled meanwhile.
//! A waiter that gives up (timeout, cancel) takes its record off the queue
//! itself. So values are never lost or duplicated.
//!
//! Invariants: readers wait only while the buffer is empty and no writer
//! waits; writers wait only while the buffer is full.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::fmt;
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::waitlist;
use crate::scheduler::{self, Handle};

mod error;

type Link = waitlist::Link<Handle>;
type WaitList = waitlist::WaitList<Handle>;

use error::Fail;
pub use error::{GetError, PutError};

/// Where a waiter record stands; set by the side that completes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    /// Queued, or left the queue on its own (timeout, cancel).
    Waiting,
    /// A reader was given a value, or a writer's value was taken.
    Done,
    /// The channel was closed while the record was queued.
    Closed,
}

/// A blocked fiber's record, in the frame of its `get` or `put` (state
/// rule 5).
#[repr(C)]
struct Waiter<T> {
    /// First, so a pointer to it is a pointer to the record.
    link: Link,
    /// A reader's received value, or a writer's value to hand over.
    value: Cell<Option<T>>,
    outcome: Cell<Outcome>,
}

/// Unlinks the record that has waited longest in `list` (state rule 5, see
/// `WaitList::pop_front`).
fn pop_front<T>(list: &WaitList) -> Option<(Handle, &Waiter<T>)> {
    list.pop_front().map(|(fiber, l)| {
        // SAFETY: state rule 5: a channel's queues link `Waiter<T>` records
        // only, whose link is their first field; the record is valid while
        // its fiber lives and has not run (the caller wakes it first).
        (fiber, unsafe { &*l.cast::<Waiter<T>>() })
    })
}

struct State<T> {
    buf: VecDeque<T>,
    closed: bool,
}

struct Inner<T> {
    size: usize,
    /// Fibers blocked in `get`: the first is the longest waiting.
    readers: WaitList,
    /// Fibers blocked in `put`.
    writers: WaitList,
    state: RefCell<State<T>>,
}

/// A FIFO channel of `T` between the fibers of one thread, with a buffer of
/// `size` values (Tarantool's `fiber.channel(size)`).
///
/// A handle: clones share one channel. Not `Send`. With `size` 0 a put
/// completes only when a reader takes the value.
///
/// # Examples
///
/// ```
/// use luafiber_fiber as fiber;
/// use fiber::{Channel, GetError};
///
/// let ch = Channel::new(0);
/// let tx = ch.clone();
/// fiber::Builder::new()
///     .spawn_ready(move || {
///         for i in 0..3 {
///             tx.put(i, None).unwrap();
///         }
///         tx.close();
///     })
///     .unwrap();
/// fiber::Builder::new()
///     .spawn_ready(move || {
///         let mut got = Vec::new();
///         loop {
///             match ch.get(None) {
///                 Ok(v) => got.push(v),
///                 Err(GetError::Closed) => break,
///                 Err(e) => panic!("{e}"),
///             }
///         }
///         assert_eq!(got, [0, 1, 2]);
///     })
///     .unwrap();
/// fiber::run();
/// ```
pub struct Channel<T> {
    inner: Rc<Inner<T>>,
}

impl<T> Clone for Channel<T> {
    fn clone(&self) -> Self {
        Channel {
            inner: self.inner.clone(),
        }
    }
}

impl<T> fmt::Debug for Channel<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.inner.state.borrow();
        f.debug_struct("Channel")
            .field("size", &self.inner.size)
            .field("count", &st.buf.len())
            .field("readers", &self.inner.readers.len())
            .field("writers", &self.inner.writers.len())
            .field("closed", &st.closed)
            .finish()
    }
}

impl<T> Channel<T> {
    /// An open, empty channel buffering up to `size` values (0: every put
    /// waits for a reader).
    pub fn new(size: usize) -> Channel<T> {
        Channel {
            inner: Rc::new(Inner {
                size,
                readers: WaitList::new(),
                writers: WaitList::new(),
                state: RefCell::new(State {
                    buf: VecDeque::new(),
                    closed: false,
                }),
            }),
        }
    }

    /// Puts `v` without blocking: hands it to the longest-waiting reader, or
    /// else appends it to the buffer. Never a cancellation point, and works
    /// outside fibers.
    ///
    /// # Errors
    ///
    /// Gives `v` back in [`PutError::Closed`] when the channel is closed, or
    /// in [`PutError::TimedOut`] when the buffer is full and no reader waits
    /// (as [`put`](Channel::put) with a zero timeout).
    pub fn try_put(&self, v: T) -> Result<(), PutError<T>> {
        let mut st = self.inner.state.borrow_mut();
        if st.closed {
            return Err(PutError::Closed(v));
        }
        while let Some((fiber, r)) = pop_front::<T>(&self.inner.readers) {
            // A waiter always leaves its queue before its fiber ends, so this
            // fails only for a fiber that ended without unwinding its wait;
            // when it does not, the record's frame is still there (state
            // rule 5).
            if scheduler::wake_fiber(fiber) {
                r.value.set(Some(v));
                r.outcome.set(Outcome::Done);
                return Ok(());
            }
        }
        if st.buf.len() < self.inner.size {
            st.buf.push_back(v);
            return Ok(());
        }
        Err(PutError::TimedOut(v))
    }

    /// Gets the oldest value without blocking: from the buffer (refilling it
    /// from the longest-waiting writer) or, when the buffer is empty,
    /// straight from that writer. Never a cancellation point, and works
    /// outside fibers.
    ///
    /// # Errors
    ///
    /// [`GetError::Closed`] when the channel is closed and drained;
    /// [`GetError::TimedOut`] when no value is there (as [`get`](Channel::get)
    /// with a zero timeout).
    pub fn try_get(&self) -> Result<T, GetError> {
        let mut st = self.inner.state.borrow_mut();
        let buffered = st.buf.pop_front();
        while let Some((fiber, w)) = pop_front::<T>(&self.inner.writers) {
            // As in `try_put`: skips a writer whose fiber is gone.
            if !scheduler::wake_fiber(fiber) {
                continue;
            }
            let wv = w.value.take().expect("a queued writer holds its value");
            w.outcome.set(Outcome::Done);
            match buffered {
                Some(v) => {
                    st.buf.push_back(wv);
                    return Ok(v);
                }
                None => return Ok(wv),
            }
        }
        match buffered {
            Some(v) => Ok(v),
            None if st.closed => Err(GetError::Closed),
            None => Err(GetError::TimedOut),
        }
    }

    /// Puts `v`, waiting up to `timeout` for a reader or for room in the
    /// buffer (`None`: no limit; `Some(ZERO)`: try once, never blocking).
    /// Writers are served in the order they began to wait. A blocking put
    /// is a cancellation point (Tarantool's `channel:put(v[, timeout])`).
    ///
    /// # Errors
    ///
    /// Each error gives `v` back: [`PutError::Closed`] when the channel is
    /// or gets closed; [`PutError::TimedOut`] when the timeout runs out;
    /// [`PutError::Cancelled`] when the fiber is cancelled and finds no room
    /// (even with a zero timeout, as in Tarantool; with a non-zero one it
    /// yields once first), or is cancelled while it waits;
    /// [`PutError::NotInFiber`] when the put would block outside a fiber. A
    /// put whose value was taken succeeds even when the fiber was cancelled
    /// or timed out meanwhile.
    ///
    /// # Examples
    ///
    /// ```
    /// use luafiber_fiber::{Channel, PutError};
    /// use std::time::Duration;
    ///
    /// let ch = Channel::new(1);
    /// ch.put("a", None).unwrap(); // room in the buffer: no fiber needed
    /// match ch.put("b", Some(Duration::ZERO)) {
    ///     Err(PutError::TimedOut(v)) => assert_eq!(v, "b"),
    ///     other => panic!("{other:?}"),
    /// }
    /// ```
    pub fn put(&self, v: T, timeout: Option<Duration>) -> Result<(), PutError<T>> {
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        // `try_put` would fail with `TimedOut` (a blocking put in Lua comes
        // here after its own try).
        let v = match self.no_room() {
            true => v,
            false => match self.try_put(v) {
                Err(PutError::TimedOut(v)) => v,
                done => return done,
            },
        };
        if timeout == Some(Duration::ZERO) {
            return Err(would_not_wait().with(v));
        }
        // Declared before `queued`, so it outlives the queue entry.
        let w = Waiter {
            link: Link::new(),
            value: Cell::new(Some(v)),
            outcome: Cell::new(Outcome::Waiting),
        };
        let queued = Queued::new(&self.inner, Side::Writers, &w.outcome);
        let outcome = queued.wait(&w, timeout, deadline);
        drop(queued);
        match outcome {
            Ok(()) => Ok(()),
            Err(e) => Err(e.with(w.value.take().expect("a writer keeps its value"))),
        }
    }

    /// Gets the oldest value, waiting up to `timeout` for one (`None`: no
    /// limit; `Some(ZERO)`: try once, never blocking). Readers are served in
    /// the order they began to wait. A blocking get is a cancellation point
    /// (Tarantool's `channel:get([timeout])`).
    ///
    /// # Errors
    ///
    /// [`GetError::Closed`] when the channel is closed and its buffer
    /// drained; [`GetError::TimedOut`] when the timeout runs out;
    /// [`GetError::Cancelled`] when the fiber is cancelled and finds no value
    /// (even with a zero timeout, as in Tarantool; with a non-zero one it
    /// yields once first), or is cancelled while it waits;
    /// [`GetError::NotInFiber`] when the get would block outside a fiber. A
    /// value handed to the fiber is returned even when it was cancelled or
    /// timed out meanwhile.
    ///
    /// # Examples
    ///
    /// ```
    /// use luafiber_fiber::{self as fiber, Channel, GetError};
    /// use std::time::{Duration, Instant};
    ///
    /// let ch = Channel::<u32>::new(0);
    /// fiber::Builder::new()
    ///     .spawn_ready(move || {
    ///         let start = Instant::now();
    ///         assert_eq!(ch.get(Some(Duration::from_millis(5))), Err(GetError::TimedOut));
    ///         assert!(start.elapsed() >= Duration::from_millis(5));
    ///     })
    ///     .unwrap();
    /// fiber::run();
    /// ```
    pub fn get(&self, timeout: Option<Duration>) -> Result<T, GetError> {
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        // `try_get` would fail with `TimedOut` (a blocking get in Lua comes
        // here after its own try).
        if !self.no_value() {
            match self.try_get() {
                Err(GetError::TimedOut) => {}
                done => return done,
            }
        }
        if timeout == Some(Duration::ZERO) {
            return Err(would_not_wait().with(()));
        }
        // Declared before `queued`, so it outlives the queue entry.
        let r = Waiter {
            link: Link::new(),
            value: Cell::new(None),
            outcome: Cell::new(Outcome::Waiting),
        };
        let queued = Queued::new(&self.inner, Side::Readers, &r.outcome);
        match queued.wait(&r, timeout, deadline) {
            Ok(()) => Ok(r.value.take().expect("a completed reader holds its value")),
            Err(e) => Err(e.with(())),
        }
    }

    /// Whether [`try_put`](Channel::try_put) would find the channel open
    /// and full, with no reader queued: a few loads.
    #[inline(always)]
    fn no_room(&self) -> bool {
        let st = self.inner.state.borrow();
        !st.closed && st.buf.len() >= self.inner.size && self.inner.readers.is_empty()
    }

    /// Whether [`try_get`](Channel::try_get) would find the channel open and
    /// empty, with no writer queued: a few loads.
    #[inline(always)]
    fn no_value(&self) -> bool {
        let st = self.inner.state.borrow();
        !st.closed && st.buf.is_empty() && self.inner.writers.is_empty()
    }

    /// Closes the channel (Tarantool master's graceful close): later puts
    /// fail, buffered values stay readable, blocked writers fail with
    /// [`PutError::Closed`] and get their values back, and blocked readers
    /// (there are some only when the buffer is empty) fail with
    /// [`GetError::Closed`]. Closing a closed channel is a no-op.
    ///
    /// # Examples
    ///
    /// ```
    /// use luafiber_fiber::{Channel, GetError, PutError};
    ///
    /// let ch = Channel::new(2);
    /// ch.try_put(1).unwrap();
    /// ch.close();
    /// assert!(matches!(ch.try_put(2), Err(PutError::Closed(2))));
    /// assert_eq!(ch.try_get(), Ok(1));
    /// assert_eq!(ch.try_get(), Err(GetError::Closed));
    /// ```
    pub fn close(&self) {
        {
            let mut st = self.inner.state.borrow_mut();
            if st.closed {
                return;
            }
            st.closed = true;
        }
        for list in [&self.inner.readers, &self.inner.writers] {
            while let Some((fiber, w)) = pop_front::<T>(list) {
                // As in `try_put`.
                if scheduler::wake_fiber(fiber) {
                    w.outcome.set(Outcome::Closed);
                }
            }
        }
    }

    /// Whether the channel is closed.
    pub fn is_closed(&self) -> bool {
        self.inner.state.borrow().closed
    }

    /// The buffer's capacity, in values.
    pub fn size(&self) -> usize {
        self.inner.size
    }

    /// Values in the buffer now (values of blocked writers not counted).
    pub fn count(&self) -> usize {
        self.inner.state.borrow().buf.len()
    }

    /// Whether the buffer is full (always true for size 0, as in Tarantool).
    pub fn is_full(&self) -> bool {
        self.count() >= self.inner.size
    }

    /// Whether the buffer is empty.
    pub fn is_empty(&self) -> bool {
        self.count() == 0
    }

    /// Whether fibers are blocked in [`get`](Channel::get).
    pub fn has_readers(&self) -> bool {
        !self.inner.readers.is_empty()
    }

    /// Whether fibers are blocked in [`put`](Channel::put).
    pub fn has_writers(&self) -> bool {
        !self.inner.writers.is_empty()
    }
}

/// Which queue a waiter is in.
#[derive(Clone, Copy)]
enum Side {
    Readers,
    Writers,
}

impl Side {
    fn list<T>(self, ch: &Inner<T>) -> &WaitList {
        match self {
            Side::Readers => &ch.readers,
            Side::Writers => &ch.writers,
        }
    }
}

/// What an operation that cannot complete at once fails with when it may
/// not wait (a zero timeout), in Tarantool's order: a cancelled fiber fails
/// as cancelled, any other caller times out.
fn would_not_wait() -> Fail {
    match scheduler::current_fiber() {
        Some((_, true)) => Fail::Cancelled,
        _ => Fail::TimedOut,
    }
}

/// A waiter's place in a queue; leaving it (return or unwind) takes the
/// record off unless the other side already did (state rule 5).
struct Queued<'a, T> {
    ch: &'a Inner<T>,
    side: Side,
    /// The record's link, once queued.
    link: Cell<Option<&'a Link>>,
    /// Left `Waiting` only while the record is queued.
    outcome: &'a Cell<Outcome>,
}

impl<'a, T> Queued<'a, T> {
    /// A place in `side`'s queue of `ch`, not taken yet.
    fn new(ch: &'a Inner<T>, side: Side, outcome: &'a Cell<Outcome>) -> Queued<'a, T> {
        Queued {
            ch,
            side,
            link: Cell::new(None),
            outcome,
        }
    }

    /// Queues `rec`, the current fiber's record, in the borrow that blocks
    /// the fiber, then waits until the record is completed, the fiber is
    /// cancelled, or `deadline` passes; wakeups that change none of these
    /// are ignored. A completed record wins over a cancel or a timeout that
    /// came at the same time. A fiber cancelled before it waits yields once
    /// (as [`scheduler::block_cancellable`] does) and fails unqueued.
    fn wait(
        &self,
        rec: &'a Waiter<T>,
        timeout: Option<Duration>,
        deadline: Option<Instant>,
    ) -> Result<(), Fail> {
        let first = scheduler::park_queued(timeout, |me| {
            self.side.list(self.ch).push_back(&rec.link, me);
            self.link.set(Some(&rec.link));
        })
        .map_err(|_| Fail::NotInFiber)?;
        let Some(mut r) = first else {
            let _ = scheduler::block_cancellable(Some(Duration::ZERO));
            return Err(Fail::Cancelled);
        };
        loop {
            match self.outcome.get() {
                Outcome::Done => return Ok(()),
                Outcome::Closed => return Err(Fail::Closed),
                Outcome::Waiting => {}
            }
            if r.cancelled {
                return Err(Fail::Cancelled);
            }
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if r.timed_out || left == Some(Duration::ZERO) {
                return Err(Fail::TimedOut);
            }
            r = scheduler::park(left).map_err(|_| Fail::NotInFiber)?;
        }
    }
}

impl<T> Drop for Queued<'_, T> {
    fn drop(&mut self) {
        if let (Outcome::Waiting, Some(link)) = (self.outcome.get(), self.link.get()) {
            self.side.list(self.ch).unlink(link);
        }
    }
}
