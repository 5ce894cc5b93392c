//! The direct path of a local CALL ([`super::Handle::call_local`]): the
//! call's fiber (pooled stack, pooled Lua thread) runs the named function
//! itself, with no serve chain in Lua, its arguments pushed by
//! [`lua_serde::push_args`] straight onto the fiber's thread and its results
//! read off it by [`lua_serde::read_results`].
//!
//! The function is found at each call ([`Serving::names`]: the name's
//! pieces kept as refs, a raw walk from the globals); a name the raw walk
//! cannot settle goes to the CALL handler, run by the fiber as its
//! function, which resolves it as before (metamethods, "Procedure 'NAME'
//! is not defined"). Errors are read as the serve chain reads them
//! ([`failure_at`]), so a call fails with the same [`Error`].
//!
//! Where the answer goes: a call whose fiber ends in its first run (inside
//! [`start`], which runs it at once) leaves its results in the caller's
//! own local through the [`Sink`] `start` hands the fiber: no shared slot,
//! no lock, no waker. A call whose fiber goes on waiting gets an entry in
//! its cord's table ([`Serving::direct`], `wait.rs`): when it ends, its
//! fiber keeps its results on its Lua stack and waits, out of the pool,
//! until the call's future reads them at its next poll on this thread.
//!
//! The fibers are pooled, as the IPROTO server's request fibers are
//! (Tarantool's tx `fiber_pool`): one that ended its call waits in the
//! cord's pool ([`Serving::idle`]) and [`start`] hands it the next call by
//! switching to it at once ([`luafiber_fiber::resume_now`]), with no fiber,
//! stack or Lua thread made or freed per call. A pooled fiber keeps its id
//! from one call to the next; what a call can set on it is reset before
//! the next (its `fiber.storage`, its name, its own max slice, its
//! thread's environment and debug hook). One that was cancelled or made
//! joinable, or kept state by its thread (`LuaFiber::keyed`), ends with
//! its call instead; so does one that finds the pool full.

use std::cell::Cell;
use std::ffi::c_int;
use std::task::Waker;

use luafiber_fiber::{Builder, FiberId};
use luafiber_runtime::lend;
use mlua::ffi::lua_State;
use serde::de::DeserializeOwned;

use super::handle::failure_to_error;
use super::wait::{self, Ticket};
use super::{lua_serde, Error, ErrorKind};
use crate::embed::cords::serve::failure_at;
use crate::embed::cords::Serving;
use crate::fiber::handlers::{handler_ref, Handler};
use crate::fiber::{
    call_found, spawn_worker_started, worker_end, worker_serves_again, worker_woken, Start,
    Unfilled,
};
use crate::modules::msgpack::port;
use crate::modules::threads::request::{FailKind, Failure, Outcome};
use crate::raw::context::Part;
use crate::raw::memory::{self, Exempt};
use crate::raw::{Raise, Stack};

/// Reads a call's outcome off its fiber's stack (`[msgh, results...]`
/// when `ok`, else `[msgh, error]`) into the `Option<Result<R, Error>>`
/// at `out`, `R` the type it was made for ([`read_into`]).
type ReadFn = unsafe fn(out: *mut (), ok: bool, t: &mut Stack, fiber: FiberId);

/// Where a call takes its answer if its fiber ends while the one who
/// switched to it ([`start`], or [`resume`] for a call that waited) is
/// still in that switch.
#[derive(Clone, Copy)]
pub(super) struct Sink {
    /// The call's number on this thread ([`LIVE`]).
    token: u64,
    out: *mut (),
    read: ReadFn,
}

thread_local! {
    /// The call [`start`] hands to the fiber it switches to (taken by that
    /// fiber as its first step).
    static CALL: Cell<Option<Sink>> = const { Cell::new(None) };
    /// The sink of the call whose [`start`] (or [`resume`]) runs now: a
    /// fiber that ends that call before the switch returns writes there.
    static LIVE: Cell<Option<Sink>> = const { Cell::new(None) };
    /// The number of the last call started on this thread.
    static LAST: Cell<u64> = const { Cell::new(0) };
}

/// A direct call's fiber waiting in its cord's pool for its next call
/// ([`Serving::idle`]), or holding the results of a call that waited
/// (`wait.rs`).
pub(crate) struct Worker {
    pub(super) id: FiberId,
    /// Its index in the cord's fibers.
    idx: usize,
    /// Its Lua thread, idle at `[msgh]` while it waits in the pool
    /// (`[msgh, results...]` while it holds results).
    pub(super) l: *mut lua_State,
}

/// Fibers kept waiting in a cord's pool, at most; one that ends a call
/// with the pool full ends.
const IDLE_MAX: usize = 256;

/// The name of a direct call's fiber.
const NAME: &[u8] = b"call";

/// How a direct call went on.
pub(super) enum Started<R> {
    /// It ended in its first run (or did not start): its results.
    Done(Result<R, Error>),
    /// Its fiber waits; its entry in the cord's table says how it ends.
    Waiting(Ticket),
}

/// Runs the global function `name` (a dotted or colon path) on a fiber of
/// this thread's local cord (one of its pool, else a new one), at once,
/// with the arguments `push` pushes onto the fiber's thread (as
/// [`lua_serde::push_args_onto`] does: `push` is given that thread's
/// stack handle, idle, with allocations exempt from the memory limit, and
/// leaves the handle told of what it pushed); to be called
/// outside any fiber, on a thread whose local cord runs.
pub(super) fn start<R: DeserializeOwned>(
    name: &[u8],
    push: impl Fn(&mut Stack) -> Result<c_int, Error>,
    waker: &Waker,
) -> Started<R> {
    let Some(main) = crate::cord::try_with(|c| c.main) else {
        return Started::Done(Err(Error::new(ErrorKind::Stopped, "no Lua runtime")));
    };
    // As a main-stack handle would: what the name's cache allocates does
    // not fail on the limit (the arguments' push has its own scope).
    let _exempt = Exempt::enter();
    // SAFETY: `main` is this thread's cord state.
    let used = unsafe { memory::used(main) };
    let fill = |t: &mut Stack| -> Result<(), Error> {
        let full = || Error::new(ErrorKind::Lua, "call: stack overflow");
        t.ensure(8).map_err(|_| full())?;
        // Borrowed while it pushes: a finalizer that an allocation runs
        // and that makes a call meanwhile leaves its name to the handler.
        let found = Serving::with(|p| {
            p.names
                .try_borrow_mut()
                .ok()
                .and_then(|mut n| n.push_function(t, name))
        });
        if found.is_none() {
            // The CALL handler finds it (or raises) in the fiber.
            t.push_ref(handler_ref(Handler::Call));
            t.push_bytes(name);
        }
        push(t)?;
        // SAFETY: `main` is this thread's cord state.
        if unsafe { memory::grew_past_limit(main, used) } {
            return Err(Error::new(ErrorKind::Lua, "not enough memory"));
        }
        Ok(())
    };
    let mut out: Option<Result<R, Error>> = None;
    let token = LAST.get().wrapping_add(1).max(1);
    LAST.set(token);
    let sink = Sink::new::<R>(token, &mut out);
    // The wait a fiber from the pool parks in on the lent waker.
    let mut parked = None;
    let (fiber, idx) = loop {
        let Some(w) = Serving::with(|p| p.idle.borrow_mut().pop()) else {
            let Ok(s) = &mut crate::embed::handle::main_stack() else {
                return Started::Done(Err(Error::new(ErrorKind::Stopped, "no Lua runtime")));
            };
            let spawned = handing(sink, || {
                spawn_worker_started(
                    s,
                    |t| fill(t),
                    Start::Now,
                    Builder::new().name_bytes(NAME),
                    worker,
                )
            });
            match spawned {
                Ok((id, idx, _)) => break (id, idx),
                Err(e) => {
                    return Started::Done(Err(match e {
                        Unfilled::Fill(e) => e,
                        Unfilled::Spawn(r) => {
                            Error::new(ErrorKind::Stopped, format!("call: {}", text(r)))
                        }
                    }))
                }
            }
        };
        // SAFETY: a fiber in the pool is alive (it leaves the pool before
        // it ends) and waits outside any Lua call, its thread idle at
        // `[msgh]`; nothing else uses the thread until the fiber runs.
        let t = &mut unsafe { Stack::from_state(w.l) };
        if let Err(e) = fill(t) {
            t.settop(1);
            Serving::with(|p| p.idle.borrow_mut().push(w));
            return Started::Done(Err(e));
        }
        let (ran, p) = lend(w.id, waker, || {
            handing(sink, || luafiber_fiber::resume_now(w.id))
        });
        if matches!(ran, Ok(true)) {
            parked = p;
            break (w.id, w.idx);
        }
        // Woken by someone else meanwhile, or cancelled: it runs without
        // this call (and puts itself back in the pool, or ends).
        t.settop(1);
    };
    match out {
        Some(r) => Started::Done(r),
        None => Started::Waiting(wait::enter(idx, token, fiber, parked)),
    }
}

/// Runs `f`, which switches to the fiber that takes the call of `sink`.
fn handing<T>(sink: Sink, f: impl FnOnce() -> T) -> T {
    CALL.set(Some(sink));
    let r = resume(sink, f);
    CALL.set(None);
    r
}

/// Runs `f`, which switches to the fiber of the call of `sink` (which
/// waited): if the fiber ends that call meanwhile, its answer goes to
/// `sink`.
pub(super) fn resume<T>(sink: Sink, f: impl FnOnce() -> T) -> T {
    LIVE.set(Some(sink));
    let r = f();
    LIVE.set(None);
    r
}

impl Sink {
    /// The sink of call `token` whose answer, as `R`, goes to `out`.
    pub(super) fn new<R: DeserializeOwned>(token: u64, out: &mut Option<Result<R, Error>>) -> Sink {
        Sink {
            token,
            out: std::ptr::from_mut(out).cast(),
            read: read_into::<R>,
        }
    }
}

/// The body of a direct call's fiber: runs the call [`start`] handed it,
/// then waits in the pool for the next, until it is cancelled, made
/// joinable, keeps state a next call would see, or finds the pool full.
fn worker(idx: usize, l: *mut lua_State) {
    let me = luafiber_fiber::current().expect("a call's fiber runs as current");
    let mut call = CALL.take();
    loop {
        if let Some(sink) = call.take() {
            // SAFETY: the fiber's own thread, which it alone uses while it
            // runs (`start` fills it only while the fiber waits in the
            // pool); the handle lives until the fiber waits again.
            let s = &mut unsafe { Stack::from_state(l) };
            // The function is at 2: found, or the CALL handler (the
            // name above it).
            let ok = call_found(idx, s);
            // Holding its results, it waits out of the pool until they are
            // read (which pools it).
            let held = finish(idx, sink, ok, s, me);
            if !held
                && (!worker_serves_again(idx, me, s, NAME, true)
                    || !pool(Worker { id: me, idx, l }))
            {
                break;
            }
        }
        // Switched to with a call, or cancelled; any other wakeup
        // (`fiber.wakeup` of its id) leaves it waiting in the pool, or
        // holding its results.
        if luafiber_fiber::block_cancellable(None).is_err() {
            wait::cancelled(idx, me);
            Serving::try_with(|p| p.idle.borrow_mut().retain(|w| w.id != me));
            break;
        }
        call = CALL.take();
        if call.is_some() {
            worker_woken(idx);
        } else if !wait::holds(idx) {
            let listed = Serving::try_with(|p| p.idle.borrow().iter().any(|w| w.id == me));
            if listed == Some(false) && !pool(Worker { id: me, idx, l }) {
                break;
            }
        }
    }
    worker_end(idx);
}

/// Puts `w` in its cord's pool; `false` when the pool is full (or gone).
pub(super) fn pool(w: Worker) -> bool {
    Serving::try_with(|p| {
        let mut idle = p.idle.borrow_mut();
        let room = idle.len() < IDLE_MAX;
        if room {
            idle.push(w);
        }
        room
    }) == Some(true)
}

/// The end of a direct call (`ok`, its fiber's stack `t` as [`ReadFn`]
/// says): its outcome to the sink of the [`start`] that runs it, or to its
/// entry ([`wait::finish`]). `true` when the fiber holds the results for
/// the call's future (it waits out of the pool, its stack left as it is).
fn finish(idx: usize, sink: Sink, ok: bool, t: &mut Stack, fiber: FiberId) -> bool {
    let _exempt = Exempt::enter();
    if let Some(live) = LIVE.get().filter(|l| l.token == sink.token) {
        LIVE.set(None);
        // SAFETY: the sink of the call whose `start` (or `resume`) runs
        // now: `out` is its live local, of the type `read` was made for.
        unsafe { (live.read)(live.out, ok, t, fiber) };
        return false;
    }
    wait::finish(idx, sink.token, ok, t, |t| {
        worker_serves_again(idx, fiber, t, NAME, false).then_some(Worker {
            id: fiber,
            idx,
            l: t.as_ptr(),
        })
    })
}

/// The outcome of a call that ended on the stack `t` (`[msgh, results...]`
/// when `ok`, else `[msgh, error]`) as MessagePack, what crosses to a
/// future polled on another thread.
pub(super) fn encode_outcome(ok: bool, t: &mut Stack) -> Outcome {
    if ok {
        port::encode_array(t, 2, "call", "result").map_err(|e| Failure {
            kind: FailKind::Refused,
            message: text(e),
            value: None,
        })
    } else {
        Err(failure_at(t, 2))
    }
}

/// [`ReadFn`] for `R`.
///
/// # Safety
///
/// `out` points to a live `Option<Result<R, Error>>`; `t` is the ended
/// fiber's stack as [`ReadFn`] says.
pub(super) unsafe fn read_into<R: DeserializeOwned>(
    out: *mut (),
    ok: bool,
    t: &mut Stack,
    fiber: FiberId,
) {
    let r = if ok {
        let n = t.top() - 1;
        // SAFETY: the fiber's thread, its results from 2 to the top; the
        // caller holds an exemption from the memory limit.
        let r = unsafe { lua_serde::read_results_on::<R>(t, 2, n) };
        // As a call's answer: a value that cannot cross names the fiber,
        // a conversion does not.
        r.map_err(|e| match e.kind() {
            ErrorKind::Convert => e,
            _ => e.with_fiber(Some(fiber)),
        })
    } else {
        Err(failure_to_error(failure_at(t, 2)).with_fiber(Some(fiber)))
    };
    // SAFETY: the caller's contract.
    unsafe { *out.cast::<Option<Result<R, Error>>>() = Some(r) };
}

fn text(r: Raise) -> String {
    match r {
        Raise::Error(_, m) | Raise::Message(m) => m,
        Raise::Top => "the call could not start".into(),
    }
}
