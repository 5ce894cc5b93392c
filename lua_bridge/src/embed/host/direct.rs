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
//! [`start`], which starts it at once) leaves its results in the caller's
//! own local through this thread's [`SINK`]: no shared slot, no lock, no
//! waker. Only a call whose fiber goes on waiting gets a [`Gather`] (an
//! `Arc`, what a waker and a cancel from another thread need), its slot
//! kept in [`Serving::direct`] until the fiber ends.

use std::cell::Cell;
use std::ffi::c_int;
use std::sync::Arc;

use luafiber_fiber::{Builder, FiberId};
use mlua::ffi::lua_State;
use serde::de::DeserializeOwned;

use super::handle::failure_to_error;
use super::{lua_serde, Error, ErrorKind};
use crate::embed::cords::serve::failure_at;
use crate::embed::cords::Serving;
use crate::fiber::handlers::{handler_ref, Handler};
use crate::fiber::{spawn_request_in, Start, Unfilled};
use crate::modules::msgpack::port;
use crate::modules::threads::request::{FailKind, Failure, Gather};
use crate::raw::context::Part;
use crate::raw::memory::{self, Exempt};
use crate::raw::{Raise, Stack};

/// Reads a call's outcome off its fiber's stack (`[msgh, results...]`
/// when `ok`, else `[msgh, error]`) into the `Option<Result<R, Error>>`
/// at `out`, `R` the type it was made for ([`read_into`]).
type ReadFn = unsafe fn(out: *mut (), ok: bool, t: &mut Stack, fiber: FiberId);

/// Where the call [`start`] runs takes its answer if its fiber ends
/// before `start` returns.
#[derive(Clone, Copy)]
struct Sink {
    /// The call's key in [`Serving::direct`].
    key: usize,
    out: *mut (),
    read: ReadFn,
}

thread_local! {
    /// The sink of the direct call this thread is starting, if any.
    static SINK: Cell<Option<Sink>> = const { Cell::new(None) };
}

/// How a direct call went on.
pub(super) enum Started<R> {
    /// It ended in its first run (or did not start): its results.
    Done(Result<R, Error>),
    /// Its fiber waits; the answer comes to this gather.
    Waiting(Arc<Gather>),
}

/// Runs the global function `name` (a dotted or colon path) on a new fiber
/// of this thread's local cord, at once, with the arguments `push` pushes
/// onto the fiber's thread (as [`lua_serde::push_args`] does: `push` is
/// given that thread's state, idle, with allocations exempt from the
/// memory limit); to be called outside any fiber, on a thread whose local
/// cord runs.
pub(super) fn start<R: DeserializeOwned>(
    name: &[u8],
    push: impl FnOnce(*mut lua_State) -> Result<c_int, Error>,
) -> Started<R> {
    let Ok(s) = &mut crate::embed::handle::main_stack() else {
        return Started::Done(Err(Error::new(ErrorKind::Stopped, "no Lua runtime")));
    };
    let main = s.as_ptr();
    // SAFETY: `main` is this thread's cord state.
    let used = unsafe { memory::used(main) };
    let key = Serving::with(|p| p.direct.borrow_mut().insert(None));
    let fill = |t: &mut Stack| -> Result<(), Error> {
        let full = || Error::new(ErrorKind::Lua, "call: stack overflow");
        t.ensure(8).map_err(|_| full())?;
        // Taken out while it pushes: an allocation may run a finalizer.
        let mut names = Serving::with(|p| p.names.take());
        let found = names.push_function(t, name);
        Serving::with(|p| p.names.replace(names));
        if found.is_none() {
            // The CALL handler finds it (or raises) in the fiber.
            t.push_ref(handler_ref(Handler::Call));
            t.push_bytes(name);
        }
        let pushed = push(t.as_ptr());
        // SAFETY: `push` changed the stack through the C API only.
        unsafe { t.sync() };
        pushed?;
        // SAFETY: as above.
        if unsafe { memory::grew_past_limit(main, used) } {
            return Err(Error::new(ErrorKind::Lua, "not enough memory"));
        }
        Ok(())
    };
    let mut out: Option<Result<R, Error>> = None;
    SINK.set(Some(Sink {
        key,
        out: (&raw mut out).cast(),
        read: read_into::<R>,
    }));
    let done = move |ok: bool, t: &mut Stack| finish(key, ok, t);
    let spawned = spawn_request_in(s, fill, Start::Now, Builder::new().name("call"), done);
    SINK.set(None);
    let fiber = match spawned {
        Ok((id, _)) => id,
        Err(e) => {
            Serving::with(|p| p.direct.borrow_mut().try_remove(key));
            return Started::Done(Err(match e {
                Unfilled::Fill(e) => e,
                Unfilled::Spawn(r) => Error::new(ErrorKind::Stopped, format!("call: {}", text(r))),
            }));
        }
    };
    if let Some(r) = out {
        return Started::Done(r);
    }
    let (gather, slot) = Gather::one();
    gather.started(0, fiber);
    Serving::with(|p| {
        if let Some(s) = p.direct.borrow_mut().get_mut(key) {
            *s = Some(slot);
        }
    });
    Started::Waiting(gather)
}

/// The end of a direct call's fiber: its outcome to the sink of the
/// [`start`] that runs it, or to its slot.
fn finish(key: usize, ok: bool, t: &mut Stack) {
    let _exempt = Exempt::enter();
    let Some(fiber) = luafiber_fiber::current() else {
        return;
    };
    if let Some(sink) = SINK.get().filter(|s| s.key == key) {
        SINK.set(None);
        Serving::try_with(|p| p.direct.borrow_mut().try_remove(key));
        // SAFETY: the sink of this call: `out` is the live local of the
        // `start` that runs this fiber, of the type `read` was made for.
        unsafe { (sink.read)(sink.out, ok, t, fiber) };
        return;
    }
    let slot = Serving::try_with(|p| p.direct.borrow_mut().try_remove(key)).flatten();
    let Some(Some(slot)) = slot else {
        return;
    };
    let outcome = if ok {
        port::encode_array(t, 2, "call", "result").map_err(|e| Failure {
            kind: FailKind::Refused,
            message: text(e),
            value: None,
        })
    } else {
        Err(failure_at(t, 2))
    };
    slot.fill(outcome);
}

/// [`ReadFn`] for `R`.
///
/// # Safety
///
/// `out` points to a live `Option<Result<R, Error>>`; `t` is the ended
/// fiber's stack as [`ReadFn`] says.
unsafe fn read_into<R: DeserializeOwned>(out: *mut (), ok: bool, t: &mut Stack, fiber: FiberId) {
    let r = if ok {
        let n = t.top() - 1;
        // SAFETY: the fiber's thread, its results from 2 to the top; the
        // caller holds an exemption from the memory limit.
        let r = unsafe { lua_serde::read_results::<R>(t.as_ptr(), 2, n) };
        // SAFETY: `read_results` changed the stack through the C API only.
        unsafe { t.sync() };
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
