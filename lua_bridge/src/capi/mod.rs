//! Tarantool's C module API (`module.h`) for what luafiber has: fibers
//! (`fiber_new`, `fiber_start`, `fiber_sleep`, `fiber_join`, ...), conds
//! (`fiber_cond_*`), clocks (`clock_*`, `fiber_time`, ...), waits on file
//! descriptors (`coio_wait`, `coio_close`), the cord's
//! buffers (`cord_ibuf_take`, ...) and the Lua helpers (`luaL_pushint64`,
//! `luaT_call`, `luaT_error`, ...), with Tarantool's C signatures. The
//! `luafiber` binary exports them with the Lua C API (its build script's
//! dynamic symbol list), so C modules and `ffi.C` reach them; the header C
//! modules include is `include/module.h` at the root of the repository.
//!
//! A fiber a C module makes is a fiber of the scheduler, and the functions
//! that wait (`fiber_sleep`, `fiber_yield`, `fiber_join`,
//! `fiber_cond_wait`, `coio_wait`) switch on the calling fiber's own
//! stack. Rules, cited as "capi rule N":
//!
//! 1. No Rust panic crosses into C: every function body that could panic
//!    runs under `guard`, which logs the panic and returns a failure (a
//!    function of a Lua state raises it as a Lua error instead: rule 5).
//! 2. A wait happens only where the bridge allows a switch (`may_switch`:
//!    in a fiber, not inside a `__gc` finalizer nor under an mlua callback);
//!    elsewhere the function returns at once, failing (-1 where it returns
//!    `int`) with the reason in the diagnostics.
//! 3. No Lua error crosses a Rust frame that owns something: a body that
//!    raises returns its error, which is raised once the body returned
//!    (rule 5), and the Lua code a body runs runs under `lua_pcall`.
//! 4. `struct fiber *` handles are tokens, never dereferenced (`handle`).
//! 5. An exported function is declared with `capi!` (`entry.rs`): its
//!    `# Safety` section is the C caller's contract, and the macro turns
//!    each argument it names (`arg: RAW => SAFE`) into the safe value the
//!    body works on (`FromC`), and a function's `*mut lua_State` into the
//!    caller's `Stack` (under `raw::frame::protect_c`: raw rules 1 to 3
//!    hold in the body, whose error is raised after it returned). So the
//!    bodies are safe code.
//!
//! Not yet: `box_region_*`, `luaL_pushcdata`/`luaL_checkcdata`/`luaL_ctypeid`
//! and `luaT_toibuf`.

#[macro_use]
mod entry;

mod clock;
mod coio;
mod cond;
mod datetime;
mod diag;
mod fiber;
mod handle;
mod ibuf;
pub(crate) mod lua;

// The C API's parts of the cord context.
pub(crate) use diag::LastDiag;
pub(crate) use fiber::FiberNames;
pub(crate) use handle::FiberHandles;
pub(crate) use ibuf::CordStash;

use std::panic::{self, AssertUnwindSafe};

use luafiber_fiber as sched;

use crate::raw::error::ErrorKind;

pub use cond::FiberCond;
pub(crate) use entry::FromC;
pub use fiber::{FiberAttr, VaArgs};
pub use handle::{Fiber, FiberFunc};
pub use ibuf::CIbuf;

/// Runs `f`; a panic in it is logged, recorded in the diagnostics, and
/// gives `failed` (capi rule 1).
pub(crate) fn guard<R>(what: &str, failed: R, f: impl FnOnce() -> R) -> R {
    match panic::catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            let msg = crate::raw::frame::panic_message(&*payload);
            tracing::error!("{what}: Rust panic: {msg}");
            diag::set(ErrorKind::Panic, format!("{what}: Rust panic: {msg}"));
            failed
        }
    }
}

/// Whether the current fiber may switch now (capi rule 2); when not, records
/// why in the diagnostics.
pub(crate) fn may_switch(what: &str) -> bool {
    let refusal = match sched::current_ext() {
        None => Some("outside a fiber"),
        Some(ext) => lua_refusal(ext.checked_sub(1)),
    };
    match refusal {
        None => true,
        Some(why) => {
            tracing::warn!("{what}: cannot yield {why}");
            diag::set(
                ErrorKind::IllegalParams,
                format!("{what}: cannot yield {why}"),
            );
            false
        }
    }
}

/// Why the current fiber (Lua fiber number `lua`, if it is one) may not
/// switch now, if it may not: the checks of `fiber::guard::check_switch` that need
/// no calling Lua state. Any fiber, a C module's too, is refused under an
/// mlua callback and while the cord's main Lua thread runs a function (C
/// code calling Lua on `luaT_state()`: other fibers would find that
/// thread's stack in use); a Lua fiber also inside a `__gc` finalizer.
fn lua_refusal(lua: Option<usize>) -> Option<&'static str> {
    let (main, is_lua, gc_stopped, under_mlua) = crate::cord::try_with(|c| {
        let is_lua = lua.and_then(|i| c.fibers.get(i)).is_some();
        (c.main, is_lua, c.gc_stopped, c.lua.state() != c.main)
    })?;
    if under_mlua {
        return Some("under an mlua callback");
    }
    // SAFETY: `main` is the cord's live main thread; the handle only reads
    // (its call frames, the collector's state: every fiber's thread shares
    // it), so it disturbs no function running there, and is dropped at
    // once.
    let main = unsafe { crate::raw::Stack::from_state(main) };
    if main.is_running() {
        return Some("on the main Lua thread");
    }
    if is_lua && !(main.gc_may_run() || cfg!(feature = "luajit") && gc_stopped) {
        return Some("inside a __gc finalizer");
    }
    None
}

/// An exported function's address (for [`EXPORTS`]).
#[derive(Clone, Copy)]
pub struct Export(pub *const ());

// SAFETY: only the address is shared; nothing reads through it.
unsafe impl Sync for Export {}

macro_rules! exports {
    ($($f:path),* $(,)?) => {
        /// Every function of the C module API, by address: a binary that
        /// references this table (see [`keep_exports`]) keeps them all in
        /// its link, where nothing else calls most of them.
        pub static EXPORTS: &[Export] = &[$(Export($f as *const ())),*];
    };
}

exports![
    fiber::fiber_attr_new,
    fiber::fiber_attr_delete,
    fiber::fiber_attr_setstacksize,
    fiber::fiber_attr_getstacksize,
    fiber::fiber_new,
    fiber::fiber_new_ex,
    fiber::fiber_start,
    fiber::luafiber_capi_start,
    fiber::fiber_self,
    fiber::fiber_yield,
    fiber::fiber_sleep,
    fiber::fiber_reschedule,
    fiber::fiber_wakeup,
    fiber::fiber_cancel,
    fiber::fiber_set_cancellable,
    fiber::fiber_is_cancelled,
    fiber::fiber_set_joinable,
    fiber::fiber_join,
    fiber::fiber_join_timeout,
    fiber::fiber_id,
    fiber::fiber_find,
    fiber::fiber_csw,
    fiber::fiber_name,
    fiber::fiber_set_name_n,
    fiber::fiber_set_ctx,
    fiber::fiber_get_ctx,
    coio::coio_wait,
    coio::coio_close,
    cond::fiber_cond_new,
    cond::fiber_cond_delete,
    cond::fiber_cond_signal,
    cond::fiber_cond_broadcast,
    cond::fiber_cond_wait_timeout,
    cond::fiber_cond_wait,
    clock::clock_realtime,
    clock::clock_monotonic,
    clock::clock_process,
    clock::clock_thread,
    clock::clock_realtime64,
    clock::clock_monotonic64,
    clock::clock_process64,
    clock::clock_thread64,
    clock::fiber_time,
    clock::fiber_time64,
    clock::fiber_clock,
    clock::fiber_clock64,
    ibuf::ibuf_create,
    ibuf::ibuf_destroy,
    ibuf::ibuf_reinit,
    ibuf::ibuf_reserve_slow,
    ibuf::box_ibuf_reserve,
    ibuf::box_ibuf_read_range,
    ibuf::box_ibuf_write_range,
    ibuf::cord_ibuf_take,
    ibuf::cord_ibuf_put,
    ibuf::cord_ibuf_drop,
    lua::luaL_pushuint64,
    lua::luaL_pushint64,
    lua::luaL_checkuint64,
    lua::luaL_checkint64,
    lua::luaL_touint64,
    lua::luaL_toint64,
    lua::luaL_iscdata,
    lua::luaL_pushnull,
    lua::luaL_isnull,
    lua::luaL_iscallable,
    lua::luaT_state,
    lua::luaT_call,
    lua::luaT_cpcall,
    lua::luaT_error,
    lua::luaT_tolstring,
    datetime::tnt_datetime_to_string,
    datetime::tnt_datetime_strftime,
];

/// Keeps the C module API in the calling binary's link: the `luafiber`
/// binary calls it once; so does an embedder whose program loads C modules
/// (with the dynamic symbol list of docs/c-modules.md).
pub fn keep_exports() -> usize {
    std::hint::black_box(EXPORTS).len()
}
