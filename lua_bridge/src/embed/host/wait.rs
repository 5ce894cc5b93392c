//! A direct local call whose fiber went on waiting (`direct.rs`): its
//! entry in its cord's table ([`Serving::direct`], by the index of its
//! fiber), and how its future gets the answer.
//!
//! Most such calls wait on a Rust future (a registered async function):
//! the poll that started the call lent its task's waker to the fiber
//! ([`luafiber_runtime::lend`]), and the fiber parked on it
//! ([`Ticket`]'s `parked`). The future's next poll on this thread switches
//! straight back to the fiber, lending its waker again
//! ([`Ticket::resume_here`]); a fiber that ends the call then answers into
//! that poll (`direct::resume`), and the entry goes. The rest of this
//! module is for the other ends.
//!
//! When the fiber ends such a call otherwise it keeps the results on its Lua stack,
//! waits out of the pool ([`Wait::Held`]) and wakes the future; the
//! future's next poll on this thread reads them as a call that did not
//! wait reads them ([`direct::read_into`]: `lua_serde`, no MessagePack),
//! then puts the fiber in the pool. No `Arc`, no lock, no bytes between
//! the two: what is shared lives on this thread, in its cord's table.
//!
//! What needs bytes gets them ([`Wait::Done`], the MessagePack answer of
//! the cords' calls): an error; a fiber that ends with its call instead of
//! waiting for the read (cancelled, made joinable, its cord stopping: the
//! checks of [`worker_serves_again`](crate::fiber::worker_serves_again));
//! a holding fiber cancelled before the read; and a future polled on
//! another thread (a tokio task moved to another worker), which makes a
//! [`Gather`] of its own and asks this thread to fill it ([`attach`]).
//!
//! An entry goes with the future's read, with its drop ([`Ticket::drop_with`]:
//! a fiber still running the call is cancelled, one holding results goes
//! to the pool), or with its cord ([`stopped`]: the futures are woken, find
//! no entry and end with [`ErrorKind::Stopped`]). The call's number on this
//! thread (`token`) tells a later call of the same fiber from it.

use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use luafiber_fiber::{FiberId, Parked};
use luafiber_runtime::lend;
use luafiber_runtime::local::Remote;
use serde::de::DeserializeOwned;

use super::direct::{self, Worker};
use super::handle::answer_to_result;
use super::{args, Error, ErrorKind};
use crate::embed::cords::Serving;
use crate::modules::threads::request::{Gather, Outcome, Slot};
use crate::raw::context::Part;
use crate::raw::memory::Exempt;
use crate::raw::Stack;

/// The entry of a direct call that went on waiting.
pub(crate) struct Waiting {
    /// The call's number on its thread.
    token: u64,
    state: Wait,
}

enum Wait {
    /// Its fiber runs the call. `waker`: the task of its future, polled
    /// on this thread; `far`: the slot of a future polled on another one,
    /// which the end fills.
    Running {
        waker: Option<Waker>,
        far: Option<Slot>,
    },
    /// Ended: its results on the stack of its fiber (`[msgh, results...]`),
    /// which waits out of the pool until they are read.
    Held(Worker),
    /// Ended: its answer as MessagePack (boxed: the rare case keeps the
    /// entries small).
    Done(Box<Outcome>),
}

/// What a poll finds of its call's entry.
enum Look {
    Running,
    Ended(Wait),
    Gone,
}

/// What a waiting call's future keeps of it.
pub(super) struct Ticket {
    /// The index of its fiber in the cord's fibers: its entry's.
    idx: usize,
    token: u64,
    fiber: FiberId,
    /// The answer of a future polled on another thread, once it was.
    far: Option<Arc<Gather>>,
    /// Its answer was taken.
    ended: bool,
    /// The wait its fiber parked in on the waker its poll lent
    /// ([`luafiber_runtime::lend`]): the next poll on this thread resumes
    /// it there, lending its own.
    parked: Option<Parked>,
    /// Polled since it went on waiting (the poll that started it lent
    /// the waker it parked on).
    polled: bool,
}

/// Lists the call number `token`, whose fiber `fiber` (at `idx`) went on
/// waiting, in this thread's cord's table.
pub(super) fn enter(idx: usize, token: u64, fiber: FiberId, parked: Option<Parked>) -> Ticket {
    Serving::with(|p| {
        let mut d = p.direct.borrow_mut();
        if d.len() <= idx {
            d.resize_with(idx + 1, || None);
        }
        d[idx] = Some(Waiting {
            token,
            state: Wait::Running {
                waker: None,
                far: None,
            },
        });
    });
    Ticket {
        idx,
        token,
        fiber,
        far: None,
        ended: false,
        parked,
        polled: false,
    }
}

/// Takes the entry of call `token` at `idx` (`None`: gone).
fn take(idx: usize, token: u64) -> Option<Waiting> {
    Serving::try_with(|p| {
        let mut d = p.direct.borrow_mut();
        let slot = d.get_mut(idx)?;
        if slot.as_ref().is_some_and(|e| e.token == token) {
            slot.take()
        } else {
            None
        }
    })
    .flatten()
}

/// Puts `e` back at `idx` (taken from there).
fn put(idx: usize, e: Waiting) {
    Serving::try_with(|p| {
        if let Some(slot) = p.direct.borrow_mut().get_mut(idx) {
            *slot = Some(e);
        }
    });
}

/// The end of call `token`, on its fiber (at `idx`, its stack `t` as
/// [`direct::encode_outcome`] says): when its future still waits on this
/// thread and `hold` readies the fiber to wait for the read (giving it as
/// a [`Worker`]), the results stay on `t` and `true` is returned; else the
/// answer is encoded for the future. No entry (the future went): nothing.
pub(super) fn finish(
    idx: usize,
    token: u64,
    ok: bool,
    t: &mut Stack,
    hold: impl FnOnce(&mut Stack) -> Option<Worker>,
) -> bool {
    // Readied first (it looks at the cord, maybe at Lua), so that the
    // entry is seen and changed in one borrow: a fiber readied for an
    // entry that went is readied again as any ending fiber is.
    let worker = if ok { hold(t) } else { None };
    enum Next {
        Gone,
        Held(Option<Waker>),
        Encode,
    }
    let next = Serving::try_with(|p| {
        let mut d = p.direct.borrow_mut();
        let Some(Some(e)) = d.get_mut(idx) else {
            return Next::Gone;
        };
        match (&mut e.state, worker) {
            _ if e.token != token => Next::Gone,
            (Wait::Running { waker, far: None }, Some(w)) => {
                let waker = waker.take();
                e.state = Wait::Held(w);
                Next::Held(waker)
            }
            _ => Next::Encode,
        }
    })
    .unwrap_or(Next::Gone);
    match next {
        Next::Gone => false,
        Next::Held(waker) => {
            if let Some(w) = waker {
                w.wake();
            }
            true
        }
        Next::Encode => {
            if let Some(Waiting {
                state: Wait::Running { waker, far },
                ..
            }) = take(idx, token)
            {
                let outcome = direct::encode_outcome(ok, t);
                match far {
                    Some(slot) => slot.fill(outcome),
                    None => {
                        done(idx, token, outcome);
                        if let Some(w) = waker {
                            w.wake();
                        }
                    }
                }
            }
            false
        }
    }
}

/// Whether the fiber at `idx` holds the results of a call.
pub(super) fn holds(idx: usize) -> bool {
    Serving::try_with(|p| {
        matches!(
            p.direct.borrow().get(idx),
            Some(Some(Waiting {
                state: Wait::Held(_),
                ..
            }))
        )
    }) == Some(true)
}

/// The fiber `me` (at `idx`) was cancelled, and ends: results it holds
/// are encoded for the call's future first.
pub(super) fn cancelled(idx: usize, me: FiberId) {
    // Taken out of the table while they are encoded (a `__serialize` may
    // run Lua code), put back as the answer.
    let held = Serving::try_with(|p| {
        let mut d = p.direct.borrow_mut();
        let slot = d.get_mut(idx)?;
        match slot {
            Some(Waiting {
                state: Wait::Held(w),
                ..
            }) if w.id == me => slot.take(),
            _ => None,
        }
    })
    .flatten();
    if let Some(Waiting {
        token,
        state: Wait::Held(w),
    }) = held
    {
        done(idx, token, encode_held(&w));
    }
}

/// Makes `outcome` the answer of call `token` at `idx` (its entry taken
/// out meanwhile).
fn done(idx: usize, token: u64, outcome: Outcome) {
    put(
        idx,
        Waiting {
            token,
            state: Wait::Done(Box::new(outcome)),
        },
    );
}

/// The results `w` holds, as MessagePack.
fn encode_held(w: &Worker) -> Outcome {
    let _exempt = Exempt::enter();
    // SAFETY: a holding fiber waits outside any Lua call, its thread at
    // `[msgh, results...]`; nothing else uses the thread meanwhile.
    let t = &mut unsafe { Stack::from_state(w.l) };
    direct::encode_outcome(true, t)
}

/// Pops the results `w` held and puts it in the pool; woken to end when
/// the pool is full.
fn release(w: Worker) {
    // SAFETY: as in `encode_held`; a pop to `[msgh]`, which needs no room.
    unsafe { mlua::ffi::lua_settop(w.l, 1) };
    let id = w.id;
    if !direct::pool(w) {
        let _ = luafiber_fiber::wakeup(id);
    }
}

/// Fills `slot` with the answer of call `token` (at `idx`), for a future
/// polled on another thread: now if the call ended, else at its end. Run
/// on the call's thread, outside any fiber.
fn attach(idx: usize, token: u64, slot: Slot) {
    match take(idx, token).map(|e| e.state) {
        Some(Wait::Running { .. }) => put(
            idx,
            Waiting {
                token,
                state: Wait::Running {
                    waker: None,
                    far: Some(slot),
                },
            },
        ),
        Some(Wait::Held(w)) => {
            slot.fill(encode_held(&w));
            release(w);
        }
        Some(Wait::Done(outcome)) => slot.fill(*outcome),
        // The slot's drop answers.
        None => drop(slot),
    }
}

/// The future of call `token` (at `idx`, fiber `fiber`) went: a fiber
/// still running it is cancelled, one holding its results goes to the
/// pool.
fn abandon(idx: usize, token: u64, fiber: FiberId) {
    match take(idx, token).map(|e| e.state) {
        Some(Wait::Running { .. }) => {
            let _ = luafiber_fiber::cancel(fiber);
        }
        Some(Wait::Held(w)) => release(w),
        Some(Wait::Done(_)) | None => {}
    }
}

/// The cord of the entries `taken` stops: their futures are woken (and
/// find no entry); a far one's slot answers as dropped.
pub(crate) fn stopped(taken: Vec<Option<Waiting>>) {
    for e in taken.into_iter().flatten() {
        if let Wait::Running {
            waker: Some(w),
            far: _,
        } = e.state
        {
            w.wake();
        }
    }
}

/// The waker of a call that waits on this thread's cord, if one does
/// (the latest fiber's first).
pub(super) fn any_waker() -> Option<Waker> {
    Serving::try_with(|p| {
        p.direct.borrow().iter().rev().find_map(|e| match e {
            Some(Waiting {
                state: Wait::Running { waker: Some(w), .. },
                ..
            }) => Some(w.clone()),
            _ => None,
        })
    })
    .flatten()
}

impl Ticket {
    /// Polls for the answer, as `R`. On the call's thread (`remote`'s:
    /// `home`) it reads the entry, keeping `cx`'s waker there while the
    /// call runs; elsewhere it asks that thread for the answer as
    /// MessagePack, once, and polls that.
    pub(super) fn poll<R: DeserializeOwned>(
        &mut self,
        cx: &mut Context<'_>,
        remote: &Remote,
        home: bool,
    ) -> Poll<Result<R, Error>> {
        if self.far.is_none() && !home {
            let (gather, slot) = Gather::one();
            gather.started(0, self.fiber);
            let (idx, token, parked) = (self.idx, self.token, self.parked.take());
            remote.run(move || {
                attach(idx, token, slot);
                // Nobody here lends it a waker again: it polls with its own.
                if let Some(p) = parked {
                    luafiber_fiber::wakeup_parked(p);
                }
            });
            self.far = Some(gather);
        }
        if let Some(r) = self.resume_here::<R>(cx, home) {
            self.ended = true;
            return Poll::Ready(r);
        }
        let answer = match &self.far {
            Some(g) => match g.poll_one(cx) {
                Poll::Ready(a) => {
                    answer_to_result(a, Some(self.fiber)).and_then(|b| args::decode(&b))
                }
                Poll::Pending => return Poll::Pending,
            },
            None => match self.look(cx) {
                Look::Running => return Poll::Pending,
                Look::Ended(Wait::Held(w)) => read::<R>(w),
                Look::Ended(Wait::Done(o)) => {
                    answer_to_result(Some(*o), Some(self.fiber)).and_then(|b| args::decode(&b))
                }
                Look::Ended(Wait::Running { .. }) | Look::Gone => Err(Error::new(
                    ErrorKind::Stopped,
                    "the call was dropped: its cord stopped before it answered",
                )
                .with_fiber(Some(self.fiber))),
            },
        };
        self.ended = true;
        Poll::Ready(answer)
    }

    /// Resumes the call's fiber parked on a lent waker (on this thread,
    /// outside any fiber, when polled since it parked), lending `cx`'s;
    /// its answer when it ended the call meanwhile. Polled in a fiber, it
    /// makes the fiber ready instead.
    fn resume_here<R: DeserializeOwned>(
        &mut self,
        cx: &mut Context<'_>,
        home: bool,
    ) -> Option<Result<R, Error>> {
        let polled = std::mem::replace(&mut self.polled, true);
        if !polled || !home {
            return None;
        }
        let p = self.parked.take()?;
        if luafiber_fiber::current().is_some() {
            // Polled in a fiber (a `block_on_future` of it): no switch from
            // there; the thread's loop runs it, polling with its own waker.
            luafiber_fiber::wakeup_parked(p);
            return None;
        }
        let mut out: Option<Result<R, Error>> = None;
        let sink = direct::Sink::new::<R>(self.token, &mut out);
        let (_, parked) = lend(self.fiber, cx.waker(), || {
            direct::resume(sink, || luafiber_fiber::resume_parked(p))
        });
        self.parked = parked;
        if out.is_some() {
            // Answered into `out`: the entry goes (the fiber is pooled).
            take(self.idx, self.token);
        }
        out
    }

    /// Whether its fiber waits on the waker its last poll lent (woken by
    /// what it awaits, through the call's task).
    pub(super) fn on_loan(&self) -> bool {
        self.parked.is_some()
    }

    /// Whether the call ended, on its thread (its answer waits for this
    /// future, or it went with its cord); `false` once asked elsewhere.
    pub(super) fn ended_here(&self) -> bool {
        self.far.is_none()
            && Serving::try_with(|p| match p.direct.borrow().get(self.idx) {
                Some(Some(e)) if e.token == self.token => !matches!(e.state, Wait::Running { .. }),
                _ => true,
            }) != Some(false)
    }

    /// The entry on this thread: [`Look::Running`] with `cx`'s waker kept
    /// there, else the ended entry's state, taken.
    fn look(&self, cx: &mut Context<'_>) -> Look {
        Serving::try_with(|p| {
            let mut d = p.direct.borrow_mut();
            let Some(slot) = d.get_mut(self.idx) else {
                return Look::Gone;
            };
            match slot {
                Some(e) if e.token == self.token => {
                    if let Wait::Running { waker, .. } = &mut e.state {
                        if !waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                            *waker = Some(cx.waker().clone());
                        }
                        return Look::Running;
                    }
                    slot.take().map_or(Look::Gone, |e| Look::Ended(e.state))
                }
                _ => Look::Gone,
            }
        })
        .unwrap_or(Look::Gone)
    }

    /// The future goes before it had a poll, on the call's thread: as
    /// [`Ticket::drop_with`] there.
    pub(super) fn abandon_here(&self) {
        abandon(self.idx, self.token, self.fiber);
    }

    /// The future went before its answer: the call's entry goes, now on
    /// its thread (outside any fiber), else there at its next drive.
    pub(super) fn drop_with(&mut self, remote: &Remote) {
        if self.ended || self.far.as_ref().is_some_and(|g| g.is_done()) {
            return;
        }
        let (idx, token, fiber) = (self.idx, self.token, self.fiber);
        if remote.is_home() && luafiber_fiber::current().is_none() {
            abandon(idx, token, fiber);
        } else {
            remote.run(move || abandon(idx, token, fiber));
        }
    }
}

/// Reads the results `w` holds as `R`, then pools it.
fn read<R: DeserializeOwned>(w: Worker) -> Result<R, Error> {
    let _exempt = Exempt::enter();
    let mut out: Option<Result<R, Error>> = None;
    {
        // SAFETY: as in `encode_held`.
        let t = &mut unsafe { Stack::from_state(w.l) };
        // SAFETY: `out` is a live `Option<Result<R, Error>>`; `t` is the
        // ended call's stack, `[msgh, results...]`, and this thread holds
        // an exemption from the memory limit.
        unsafe { direct::read_into::<R>((&raw mut out).cast(), true, t, w.id) };
    }
    release(w);
    out.unwrap_or_else(|| Err(Error::new(ErrorKind::Stopped, "no answer")))
}
