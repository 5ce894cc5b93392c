//! [`Channel`]: a bounded multi-producer multi-consumer channel whose
//! blocked readers and writers are fibers on any cord, or plain threads.
//!
//! One mutex guards the buffer and the two queues of blocked parties. A
//! blocked party's record (its waker and its value slot) is shared between
//! its queue and its own frame; the peer that serves it takes it off the
//! queue, fills or empties its slot and sets its outcome, all under the
//! channel's lock, then wakes it (through its cord's inbox). A party whose
//! wait ends by timeout or cancel takes its record off the queue under the
//! lock; when it is no longer there it was served, and the served outcome
//! wins, as with the per-thread [`crate::Channel`].

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Waker;
use std::time::{Duration, Instant};

use luafiber_fiber::{GetError, PutError};

use crate::park::{Parker, Woke};

/// How a blocked party left its queue.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Waiting,
    /// Served: a reader got a value, a writer's value was taken.
    Done,
    /// The channel was closed.
    Closed,
}

struct Slot<T> {
    value: Option<T>,
    outcome: Outcome,
}

/// A blocked party.
struct Party<T> {
    waker: Waker,
    slot: Mutex<Slot<T>>,
}

impl<T> Party<T> {
    fn slot(&self) -> MutexGuard<'_, Slot<T>> {
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }
}

struct State<T> {
    buf: VecDeque<T>,
    closed: bool,
    readers: VecDeque<Arc<Party<T>>>,
    writers: VecDeque<Arc<Party<T>>>,
}

struct Inner<T> {
    size: usize,
    state: Mutex<State<T>>,
}

/// A bounded channel between fibers of any cords and plain threads
/// (multi-producer, multi-consumer; `Send + Sync` for `T: Send`); clones
/// share it. The per-thread [`crate::Channel`]'s semantics (Tarantool's
/// `fiber.channel`): a size-0 channel is a rendezvous (every put waits for
/// a reader); readers and writers are served in the order they began to
/// wait; a close is graceful (buffered values stay readable, blocked
/// writers fail and get their values back, blocked readers fail).
///
/// A blocked fiber parks only itself and is woken through its cord's inbox
/// (see [`crate::cord`]); outside any fiber a blocking call blocks the
/// thread. Blocking calls are cancellation points in fibers.
///
/// # Examples
///
/// ```
/// use luafiber_runtime::{cord, Runtime};
///
/// let rt = Runtime::builder().cords(2).build().unwrap();
/// let requests = cord::Channel::new(16);
/// let replies = cord::Channel::new(16);
/// let (rq, rp) = (requests.clone(), replies.clone());
/// let server = rt.spawn(move || {
///     while let Ok(n) = rq.get(None) {
///         rp.put(n * 2, None).unwrap();
///     }
/// });
/// for n in 0..10u64 {
///     requests.put(n, None).unwrap(); // from this plain thread
///     assert_eq!(replies.get(None), Ok(n * 2));
/// }
/// requests.close();
/// server.join().unwrap();
/// ```
pub struct Channel<T> {
    inner: Arc<Inner<T>>,
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
        let st = self.state();
        f.debug_struct("cord::Channel")
            .field("size", &self.inner.size)
            .field("count", &st.buf.len())
            .field("readers", &st.readers.len())
            .field("writers", &st.writers.len())
            .field("closed", &st.closed)
            .finish()
    }
}

impl<T> Channel<T> {
    /// An open, empty channel buffering up to `size` values (0: every put
    /// waits for a reader).
    pub fn new(size: usize) -> Channel<T> {
        Channel {
            inner: Arc::new(Inner {
                size,
                state: Mutex::new(State {
                    buf: VecDeque::with_capacity(size.min(1024)),
                    closed: false,
                    readers: VecDeque::new(),
                    writers: VecDeque::new(),
                }),
            }),
        }
    }

    fn state(&self) -> MutexGuard<'_, State<T>> {
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Puts `v` without blocking: to the longest-waiting reader, or else
    /// into the buffer.
    ///
    /// # Errors
    ///
    /// Gives `v` back in [`PutError::Closed`] when the channel is closed,
    /// or in [`PutError::TimedOut`] when the buffer is full and no reader
    /// waits.
    pub fn try_put(&self, v: T) -> Result<(), PutError<T>> {
        self.put(v, Some(Duration::ZERO))
    }

    /// Gets the oldest value without blocking.
    ///
    /// # Errors
    ///
    /// [`GetError::Closed`] when the channel is closed and drained;
    /// [`GetError::TimedOut`] when no value is there.
    pub fn try_get(&self) -> Result<T, GetError> {
        self.get(Some(Duration::ZERO))
    }

    /// Puts `v`, waiting up to `timeout` for a reader or for room
    /// (`None`: no limit; `Some(ZERO)`: never blocks). In a fiber the wait
    /// parks the fiber only and is a cancellation point; outside any fiber
    /// it blocks the thread.
    ///
    /// # Errors
    ///
    /// Each gives `v` back: [`PutError::Closed`] when the channel is or
    /// gets closed; [`PutError::TimedOut`]; [`PutError::Cancelled`] when the
    /// fiber is cancelled while it would wait. A put whose value was taken
    /// succeeds even when its timeout or a cancel came meanwhile.
    pub fn put(&self, v: T, timeout: Option<Duration>) -> Result<(), PutError<T>> {
        let mut st = self.state();
        if st.closed {
            return Err(PutError::Closed(v));
        }
        if let Some(r) = st.readers.pop_front() {
            {
                let mut slot = r.slot();
                slot.value = Some(v);
                slot.outcome = Outcome::Done;
            }
            drop(st);
            r.waker.wake_by_ref();
            return Ok(());
        }
        if st.buf.len() < self.inner.size {
            st.buf.push_back(v);
            return Ok(());
        }
        if timeout == Some(Duration::ZERO) {
            return Err(PutError::TimedOut(v));
        }
        let (parker, me) = match party(Some(v)) {
            Ok(p) => p,
            Err(v) => return Err(PutError::Closed(v.expect("a writer's value"))),
        };
        st.writers.push_back(me.clone());
        drop(st);
        let end = self.wait(&parker, &me, timeout, |st| &mut st.writers);
        if end == Ok(Outcome::Done) {
            return Ok(());
        }
        let v = me
            .slot()
            .value
            .take()
            .expect("an unserved writer keeps its value");
        Err(match end {
            Err(Woke::Cancelled) => PutError::Cancelled(v),
            Err(_) => PutError::TimedOut(v),
            Ok(_) => PutError::Closed(v),
        })
    }

    /// Gets the oldest value, waiting up to `timeout` for one (`None`: no
    /// limit; `Some(ZERO)`: never blocks). In a fiber the wait parks the
    /// fiber only and is a cancellation point; outside any fiber it blocks
    /// the thread.
    ///
    /// # Errors
    ///
    /// [`GetError::Closed`] when the channel is closed and its buffer
    /// drained; [`GetError::TimedOut`]; [`GetError::Cancelled`] when the
    /// fiber is cancelled while it would wait. A value handed over is
    /// returned even when its timeout or a cancel came meanwhile.
    pub fn get(&self, timeout: Option<Duration>) -> Result<T, GetError> {
        let mut st = self.state();
        if let Some(v) = st.buf.pop_front() {
            // Room now: the longest-waiting writer's value goes in.
            let woken = st.writers.pop_front();
            if let Some(w) = &woken {
                let wv = serve_writer(w);
                st.buf.push_back(wv);
            }
            drop(st);
            if let Some(w) = woken {
                w.waker.wake_by_ref();
            }
            return Ok(v);
        }
        if let Some(w) = st.writers.pop_front() {
            let v = serve_writer(&w);
            drop(st);
            w.waker.wake_by_ref();
            return Ok(v);
        }
        if st.closed {
            return Err(GetError::Closed);
        }
        if timeout == Some(Duration::ZERO) {
            return Err(GetError::TimedOut);
        }
        let Ok((parker, me)) = party(None) else {
            return Err(GetError::Closed);
        };
        st.readers.push_back(me.clone());
        drop(st);
        match self.wait(&parker, &me, timeout, |st| &mut st.readers) {
            Ok(Outcome::Done) => Ok(me
                .slot()
                .value
                .take()
                .expect("a served reader has its value")),
            Ok(_) => Err(GetError::Closed),
            Err(Woke::Cancelled) => Err(GetError::Cancelled),
            Err(_) => Err(GetError::TimedOut),
        }
    }

    /// Waits until `me` is served or the channel closed (`Ok`: `Done` or
    /// `Closed`), or until the timeout or a cancel (`Err`); giving up, it
    /// takes `me` off its queue, unless a peer served it meanwhile.
    fn wait(
        &self,
        parker: &Parker,
        me: &Arc<Party<T>>,
        timeout: Option<Duration>,
        queue: impl Fn(&mut State<T>) -> &mut VecDeque<Arc<Party<T>>>,
    ) -> Result<Outcome, Woke> {
        let deadline = timeout.map(|t| Instant::now().checked_add(t).unwrap_or_else(far));
        loop {
            let woke = parker.wait(deadline, true);
            let outcome = me.slot().outcome;
            if outcome != Outcome::Waiting {
                return Ok(outcome);
            }
            if woke == Woke::Woken {
                continue;
            }
            let mut st = self.state();
            let q = queue(&mut st);
            match q.iter().position(|p| Arc::ptr_eq(p, me)) {
                Some(i) => {
                    q.remove(i);
                    return Err(woke);
                }
                // Served between the wake-up and the lock.
                None => return Ok(me.slot().outcome),
            }
        }
    }

    /// Closes the channel: later puts fail, buffered values stay readable,
    /// blocked writers fail with [`PutError::Closed`] (their values back),
    /// blocked readers with [`GetError::Closed`]. A no-op when closed.
    pub fn close(&self) {
        let parties: Vec<_> = {
            let mut st = self.state();
            if st.closed {
                return;
            }
            st.closed = true;
            let st = &mut *st;
            st.readers.drain(..).chain(st.writers.drain(..)).collect()
        };
        for p in &parties {
            p.slot().outcome = Outcome::Closed;
        }
        for p in parties {
            p.waker.wake_by_ref();
        }
    }

    /// Whether the channel is closed.
    pub fn is_closed(&self) -> bool {
        self.state().closed
    }

    /// The buffer's capacity, in values.
    pub fn size(&self) -> usize {
        self.inner.size
    }

    /// Values in the buffer now (those of blocked writers not counted).
    pub fn count(&self) -> usize {
        self.state().buf.len()
    }

    /// Whether the buffer is empty.
    pub fn is_empty(&self) -> bool {
        self.count() == 0
    }

    /// Whether fibers or threads are blocked in [`get`](Channel::get).
    pub fn has_readers(&self) -> bool {
        !self.state().readers.is_empty()
    }

    /// Whether fibers or threads are blocked in [`put`](Channel::put).
    pub fn has_writers(&self) -> bool {
        !self.state().writers.is_empty()
    }

    /// Whether the buffer is full (always for size 0).
    pub fn is_full(&self) -> bool {
        self.count() >= self.inner.size
    }
}

/// A blocked party's parker and record, holding `value`; gives the value
/// back when no parker can be made (no event loop for the fiber).
fn party<T>(value: Option<T>) -> Result<(Parker, Arc<Party<T>>), Option<T>> {
    let Ok(parker) = Parker::new() else {
        return Err(value);
    };
    let me = Arc::new(Party {
        waker: parker.waker().clone(),
        slot: Mutex::new(Slot {
            value,
            outcome: Outcome::Waiting,
        }),
    });
    Ok((parker, me))
}

/// Takes a queued writer's value and marks it served (under the channel's
/// lock).
fn serve_writer<T>(w: &Party<T>) -> T {
    let mut slot = w.slot();
    slot.outcome = Outcome::Done;
    slot.value.take().expect("a queued writer holds its value")
}

/// A deadline no wait reaches, for timeouts past what `Instant` holds.
fn far() -> Instant {
    Instant::now() + Duration::from_secs(100 * 365 * 86_400)
}
