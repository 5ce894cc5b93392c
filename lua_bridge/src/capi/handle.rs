//! `struct fiber *`: what the C module API hands out for a fiber. A handle
//! is a token, never dereferenced, so a stale one is refused, not followed
//! (cited as "handle rule N"):
//!
//! 1. A fiber made by `fiber_new` is named by an even token, `serial << 1`,
//!    naming its [`Record`] here. The record lives from `fiber_new` until
//!    the fiber ends (not joinable) or is joined; a fiber that is never
//!    started keeps it (as Tarantool keeps such a fiber).
//! 2. Any other fiber (a Lua fiber, a Rust fiber) is `(id << 1) | 1`.
//! 3. NULL means the current fiber where Tarantool says so.
//!
//! Everything is per cord (its context), as the scheduler is.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::{c_int, c_void};

use luafiber_fiber::{self as fiber, FiberId};

use super::diag::Diag;
use crate::raw::context::Part;

/// Tarantool's `struct fiber`, opaque to C (see the module doc).
#[repr(C)]
pub struct Fiber {
    _opaque: [u8; 0],
}

/// A `fiber_func` (`int (*)(va_list)`): only C calls it (`shim.c`).
pub type FiberFunc = unsafe extern "C" fn();

/// Where a fiber made by `fiber_new` is in its life.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    /// Made, not yet started (`fiber_start`, `fiber_wakeup`, `fiber_cancel`).
    Pending,
    /// Started as this fiber; `done` once its function returned (it waits
    /// for its join).
    Started { id: FiberId, done: bool },
}

/// A fiber made by `fiber_new`.
pub(crate) struct Record {
    pub f: FiberFunc,
    pub name: Vec<u8>,
    pub stack_size: Option<usize>,
    /// Joinable when it starts (`fiber_set_joinable` before the start).
    pub joinable: bool,
    /// `fiber_set_ctx`.
    pub ctx: *mut c_void,
    pub state: State,
    /// The function's result, for `fiber_join`.
    pub ret: c_int,
    /// The error it left when it returned non-zero, for its joiner.
    pub diag: Option<Diag>,
}

/// What a handle names.
#[derive(Clone, Copy)]
pub(crate) enum Target {
    /// A fiber of the scheduler; `Some(serial)` when `fiber_new` made it.
    Fiber(FiberId, Option<u64>),
    /// A fiber made by `fiber_new`, not started yet.
    Pending(u64),
    /// NULL outside any fiber, or a stale handle.
    Gone,
}

/// Per-cord state of the C API's fiber handles (a part of the cord
/// context).
pub(crate) struct FiberHandles {
    records: RefCell<HashMap<u64, Record>>,
    /// Running fibers made by `fiber_new`: fiber id -> serial.
    by_fid: RefCell<HashMap<u64, u64>>,
    next_serial: Cell<u64>,
    /// `fiber_set_ctx` of fibers not made by `fiber_new`, by fiber id.
    ctx: RefCell<HashMap<u64, *mut c_void>>,
}

impl Default for FiberHandles {
    fn default() -> FiberHandles {
        FiberHandles {
            records: RefCell::default(),
            by_fid: RefCell::default(),
            next_serial: Cell::new(1),
            ctx: RefCell::default(),
        }
    }
}

/// The serial of the running fiber `id` made by `fiber_new`, if it is one.
fn serial_of(id: FiberId) -> Option<u64> {
    FiberHandles::try_with(|h| h.by_fid.borrow().get(&id.0).copied()).flatten()
}

/// Keeps `rec`; returns its handle (handle rule 1).
pub(crate) fn insert(rec: Record) -> *mut Fiber {
    let serial = FiberHandles::with(|h| {
        let s = h.next_serial.get();
        h.next_serial.set(s + 1);
        h.records.borrow_mut().insert(s, rec);
        s
    });
    (serial << 1) as *mut Fiber
}

/// Runs `f` on the record `serial`, if it is there. `f` must not call into
/// the scheduler (the records are borrowed).
pub(crate) fn with_record<R>(serial: u64, f: impl FnOnce(&mut Record) -> R) -> Option<R> {
    FiberHandles::try_with(|h| h.records.borrow_mut().get_mut(&serial).map(f)).flatten()
}

/// Drops the record `serial` and gives it back.
pub(crate) fn remove(serial: u64) -> Option<Record> {
    FiberHandles::try_with(|h| h.records.borrow_mut().remove(&serial)).flatten()
}

/// Marks fiber `id` as running the record `serial` (or no longer, with
/// `None`).
pub(crate) fn set_running(id: FiberId, serial: Option<u64>) {
    FiberHandles::try_with(|h| match serial {
        Some(s) => h.by_fid.borrow_mut().insert(id.0, s),
        None => h.by_fid.borrow_mut().remove(&id.0),
    });
}

/// The handle of the live fiber `id` (handle rules 1 and 2).
pub(crate) fn of(id: FiberId) -> *mut Fiber {
    match serial_of(id) {
        Some(serial) => (serial << 1) as *mut Fiber,
        None => ((id.0 << 1) | 1) as *mut Fiber,
    }
}

/// What `f` names; NULL is the current fiber (handle rule 3).
pub(crate) fn resolve(f: *const Fiber) -> Target {
    let token = f as u64;
    if token == 0 {
        return match fiber::current() {
            Some(id) => Target::Fiber(id, serial_of(id)),
            None => Target::Gone,
        };
    }
    if token & 1 == 1 {
        return Target::Fiber(FiberId(token >> 1), None);
    }
    let serial = token >> 1;
    match with_record(serial, |r| r.state) {
        Some(State::Pending) => Target::Pending(serial),
        Some(State::Started { id, .. }) => Target::Fiber(id, Some(serial)),
        None => Target::Gone,
    }
}

/// `fiber_set_ctx` for a fiber not made by `fiber_new`. Entries of ended
/// fibers are dropped as the map grows.
pub(crate) fn set_ctx(id: FiberId, ctx: *mut c_void) {
    FiberHandles::try_with(|h| {
        let mut m = h.ctx.borrow_mut();
        if m.len() >= 64 && m.len().is_power_of_two() {
            m.retain(|&fid, _| fiber::exists(FiberId(fid)));
        }
        m.insert(id.0, ctx);
    });
}

/// `fiber_get_ctx` for a fiber not made by `fiber_new`.
pub(crate) fn ctx(id: FiberId) -> *mut c_void {
    FiberHandles::try_with(|h| h.ctx.borrow().get(&id.0).copied())
        .flatten()
        .unwrap_or(std::ptr::null_mut())
}
