//! The Lua `fiber` module: Tarantool's `src/lua/fiber.c` over luafiber fibers.
//!
//! Every function is a raw `lua_CFunction` (`lua_fn!`), so a switch happens
//! only here, on the fiber's own stack. Fiber objects are userdata holding
//! only the fiber id: collecting one never touches the fiber. One object per
//! live Lua fiber is cached (a registry ref), so `fiber.self() == fiber.self()`
//! and objects work as table keys; `__eq` compares ids for the rest.

use std::ffi::{c_int, c_void, CStr};

use luafiber_fiber::{self as fiber, Builder, FiberId, Status};
use mlua::ffi;

use crate::cfunc::{LResult, Raise};
use crate::cord;
use crate::error;
use crate::lua;
use crate::spawn::{self, Start};

thread_local! {
    static FIBER_MT: std::cell::Cell<*const c_void> = const { std::cell::Cell::new(std::ptr::null()) };
}

/// The fiber id of the fiber object at `idx`, or `None`.
unsafe fn to_fiber(l: *mut ffi::lua_State, idx: c_int) -> Option<FiberId> {
    // SAFETY: caller passes a valid state and index; a userdata with the
    // fiber metatable holds a `u64` fiber id.
    unsafe {
        let p = lua::udata_with_mt(l, idx, FIBER_MT.with(|m| m.get()))?;
        Some(FiberId(*p.cast::<u64>()))
    }
}

/// A fiber object or a numeric id at `idx`.
unsafe fn to_fiber_or_id(l: *mut ffi::lua_State, idx: c_int) -> Option<FiberId> {
    // SAFETY: caller's contract.
    unsafe {
        to_fiber(l, idx).or_else(|| {
            let n = lua::to_number(l, idx)?;
            (n >= 0.0 && n.fract() == 0.0).then_some(FiberId(n as u64))
        })
    }
}

/// The current fiber, or the error `what` gets outside any fiber.
fn current(what: &str) -> LResult<FiberId> {
    fiber::current().ok_or_else(|| Raise::illegal(format!("{what}: not in a fiber")))
}

/// The Lua data index of a live Lua fiber.
fn lua_index(id: FiberId) -> Option<usize> {
    fiber::ext(id).ok().filter(|&e| e > 0).map(|e| e - 1)
}

/// Pushes the fiber object of `id`: the cached one of a live Lua fiber, else
/// a new one.
///
/// # Safety
///
/// `l` is a thread of the cord's state with room for 2 values.
pub(crate) unsafe fn push_fiber(l: *mut ffi::lua_State, id: FiberId) {
    let idx = lua_index(id);
    if let Some(idx) = idx {
        let r = cord::with(|c| c.fibers[idx].udata);
        if r != ffi::LUA_NOREF {
            // SAFETY: caller's contract.
            unsafe { lua::push_registry_ref(l, r) };
            return;
        }
    }
    // SAFETY: caller's contract; the userdata is 8 bytes, written at once.
    unsafe {
        let p = ffi::lua_newuserdata(l, std::mem::size_of::<u64>()).cast::<u64>();
        p.write(id.0);
        lua::push_registry_ref(l, cord::refs().fiber_mt);
        ffi::lua_setmetatable(l, -2);
        if let Some(idx) = idx {
            ffi::lua_pushvalue(l, -1);
            let r = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
            cord::with(|c| c.fibers[idx].udata = r);
        }
    }
}

/// Maps the fiber layer's errors; a cancel becomes `FiberIsCancelled`.
fn check(r: Result<(), fiber::Error>) -> LResult<()> {
    r.map_err(error::from_fiber)
}

unsafe fn create_impl(l: *mut ffi::lua_State, start: Start, what: &str) -> LResult {
    // SAFETY: called from a lua_fn body with its arguments on `l`.
    unsafe {
        if ffi::lua_type(l, 1) != ffi::LUA_TFUNCTION {
            return Err(Raise::illegal(format!(
                "{what}(function, ...): bad arguments"
            )));
        }
        let id = spawn::spawn(l, 1, start, Builder::new(), false)?;
        push_fiber(l, id);
    }
    Ok(1)
}

crate::lua_fn! {
    /// `fiber.create(fn, ...)`: runs `fn(...)` in a new fiber at once, until
    /// its first yield or its end; returns the fiber object. Tarantool's
    /// `fiber.create`, same errors.
    fn fiber_create(l) {
        // SAFETY: arguments are on `l`.
        unsafe { create_impl(l, Start::Now, "fiber.create") }
    }
}

crate::lua_fn! {
    /// `fiber.new(fn, ...)`: a new fiber appended to the ready queue; it runs
    /// when the caller yields. Tarantool's `fiber.new`.
    fn fiber_new(l) {
        // SAFETY: arguments are on `l`.
        unsafe { create_impl(l, Start::Ready, "fiber.new") }
    }
}

crate::lua_fn! {
    /// `fiber.yield()`: `sleep(0)`: back of the ready queue. A cancellation
    /// point.
    fn fiber_yield(l) {
        // SAFETY: `l` is the calling state.
        unsafe { spawn::check_switch(l, "fiber.yield")? };
        check(fiber::yield_now())?;
        Ok(0)
    }
}

crate::lua_fn! {
    /// `fiber.sleep(seconds)`: sleeps at least that long (negative = 0; a
    /// wakeup ends it early). NaN or a non-number: "Usage: fiber.sleep(delay)".
    /// A cancellation point.
    fn fiber_sleep(l) {
        // SAFETY: `l` is the calling state.
        let t = unsafe { lua::to_number(l, 1) }
            .filter(|t| !t.is_nan())
            .ok_or_else(|| Raise::illegal("Usage: fiber.sleep(delay)"))?;
        // SAFETY: `l` is the calling state.
        unsafe { spawn::check_switch(l, "fiber.sleep")? };
        match lua::seconds(t) {
            Some(d) => check(fiber::sleep(d))?,
            None => check(fiber::block_cancellable(None).map(drop))?,
        }
        Ok(0)
    }
}

crate::lua_fn! {
    /// `fiber.self()`: the current fiber's object.
    fn fiber_self(l) {
        let me = current("fiber.self()")?;
        // SAFETY: `l` is the calling state.
        unsafe { push_fiber(l, me) };
        Ok(1)
    }
}

crate::lua_fn! {
    /// `fiber.id([f])` / `f:id()`: the id (works on dead fibers too; 1 outside
    /// any fiber, Tarantool's scheduler).
    fn fiber_id(l) {
        // SAFETY: arguments are on `l`.
        let id = unsafe {
            if ffi::lua_type(l, 1) <= ffi::LUA_TNIL {
                fiber::current().map_or(fiber::SCHED_FID, |f| f.0)
            } else {
                to_fiber(l, 1).ok_or_else(|| Raise::illegal("expected fiber as 1 argument"))?.0
            }
        };
        // SAFETY: `l` has room for one result.
        unsafe { ffi::lua_pushinteger(l, id as ffi::lua_Integer) };
        Ok(1)
    }
}

crate::lua_fn! {
    /// `fiber.find(id)`: the fiber object with that id, or nil when it is
    /// gone. No argument: "Usage: fiber.find(id)".
    fn fiber_find(l) {
        // SAFETY: arguments are on `l`.
        unsafe {
            if ffi::lua_type(l, 1) <= ffi::LUA_TNIL {
                return Err(Raise::illegal("Usage: fiber.find(id)"));
            }
            match to_fiber_or_id(l, 1).filter(|&id| fiber::exists(id)) {
                Some(id) => push_fiber(l, id),
                None => ffi::lua_pushnil(l),
            }
        }
        Ok(1)
    }
}

crate::lua_fn! {
    /// `fiber.status([f])` / `f:status()`: "running", "suspended" or "dead".
    fn fiber_status(l) {
        // SAFETY: arguments are on `l`.
        let status = unsafe {
            if ffi::lua_type(l, 1) <= ffi::LUA_TNIL {
                c"running"
            } else {
                let id = to_fiber(l, 1).ok_or_else(|| Raise::illegal("expected fiber as 1 argument"))?;
                // A finished joinable fiber waiting for its join is
                // "suspended", as in Tarantool.
                match fiber::status(id) {
                    Some(Status::Running) => c"running",
                    None => c"dead",
                    Some(_) => c"suspended",
                }
            }
        };
        // SAFETY: `l` has room for one result.
        unsafe { ffi::lua_pushstring(l, status.as_ptr()) };
        Ok(1)
    }
}

crate::lua_fn! {
    /// `fiber.name([f,] [name [, {truncate = bool}]])`: gets or sets a name
    /// (at most 255 bytes: "Fiber name is too long" unless `truncate`).
    fn fiber_name(l) {
        // SAFETY: arguments are on `l`.
        unsafe {
            let (target, at) = match to_fiber(l, 1) {
                Some(id) => (Some(id), 2),
                None => (fiber::current(), 1),
            };
            let arg_type = ffi::lua_type(l, at);
            if arg_type <= ffi::LUA_TNIL {
                match target {
                    Some(id) => {
                        if matches!(fiber::status(id), Some(Status::Dead) | None) {
                            return Err(error::from_fiber(fiber::Error::Dead(id)));
                        }
                        fiber::with_name(id, |n| lua::push_str(l, n)).map_err(error::from_fiber)?;
                    }
                    None => {
                        ffi::lua_pushstring(l, c"sched".as_ptr());
                    }
                }
                return Ok(1);
            }
            if arg_type != ffi::LUA_TSTRING && arg_type != ffi::LUA_TNUMBER {
                return Err(Raise::illegal("fiber.name(): bad arguments"));
            }
            let mut truncate = false;
            if ffi::lua_type(l, at + 1) == ffi::LUA_TTABLE {
                ffi::lua_pushstring(l, c"truncate".as_ptr());
                ffi::lua_rawget(l, at + 1);
                truncate = ffi::lua_toboolean(l, -1) != 0;
                ffi::lua_pop(l, 1);
            } else if ffi::lua_type(l, at + 1) > ffi::LUA_TNIL {
                return Err(Raise::illegal("fiber.name(): bad arguments"));
            }
            let mut len = 0;
            let p = ffi::lua_tolstring(l, at, &mut len);
            let bytes = std::slice::from_raw_parts(p.cast::<u8>(), len);
            let name = String::from_utf8_lossy(bytes);
            let name = if truncate { fiber::truncate(&name) } else { &name };
            let id = target.ok_or_else(|| Raise::illegal("fiber.name(): not in a fiber"))?;
            fiber::set_name(id, name).map_err(error::from_fiber)?;
        }
        Ok(0)
    }
}

crate::lua_fn! {
    /// `fiber.cancel(f | id)` / `f:cancel()` (alias `kill`): sets the cancel
    /// flag and wakes the fiber. Cancelling oneself raises at once. A dead
    /// fiber: "the fiber is dead".
    fn fiber_cancel(l) {
        // SAFETY: arguments are on `l`.
        let id = unsafe { to_fiber_or_id(l, 1) }
            .ok_or_else(|| Raise::illegal("Usage: fiber.cancel(fiber)"))?;
        if fiber::status(id).is_none() {
            return Err(error::from_fiber(fiber::Error::Dead(id)));
        }
        check(fiber::cancel(id))?;
        if fiber::current() == Some(id) {
            check(fiber::testcancel())?;
        }
        Ok(0)
    }
}

crate::lua_fn! {
    /// `fiber.testcancel()`: raises `FiberIsCancelled` when the current fiber
    /// is cancelled. Any argument (so also `f:testcancel()`):
    /// "fiber.testcancel(): bad arguments", as in Tarantool.
    fn fiber_testcancel(l) {
        // SAFETY: arguments are on `l`.
        if unsafe { ffi::lua_gettop(l) } != 0 {
            return Err(Raise::illegal("fiber.testcancel(): bad arguments"));
        }
        check(fiber::testcancel())?;
        Ok(0)
    }
}

crate::lua_fn! {
    /// `fiber.wakeup(f | id)` / `f:wakeup()`: makes a sleeping or blocked
    /// fiber ready (its sleep ends early). No-op on oneself and on ready or
    /// running fibers; a dead fiber: "the fiber is dead".
    fn fiber_wakeup(l) {
        // SAFETY: arguments are on `l`.
        let id = unsafe { to_fiber_or_id(l, 1) }
            .ok_or_else(|| Raise::illegal("Usage: fiber.wakeup(fiber)"))?;
        check(fiber::wakeup(id))?;
        Ok(0)
    }
}

crate::lua_fn! {
    /// `fiber.set_joinable(f, bool)` / `f:set_joinable(bool)`.
    fn fiber_set_joinable(l) {
        // SAFETY: arguments are on `l`.
        let (id, yes) = unsafe {
            match (to_fiber(l, 1), ffi::lua_type(l, 2)) {
                (Some(id), ffi::LUA_TBOOLEAN) => (id, ffi::lua_toboolean(l, 2) != 0),
                _ => return Err(Raise::illegal("fiber.set_joinable(id, yesno): bad arguments")),
            }
        };
        check(fiber::set_joinable(id, yes))?;
        Ok(0)
    }
}

crate::lua_fn! {
    /// `fiber.join(f [, timeout])` / `f:join([timeout])`: waits for a joinable
    /// fiber's end; returns `true, results...` (nils kept) or `false, err`
    /// (the very value raised). A timeout gives `false, TimedOut` and the
    /// fiber stays joinable. Not a cancellation point.
    fn fiber_join(l) {
        // SAFETY: arguments are on `l`.
        unsafe {
            let id = to_fiber(l, 1).ok_or_else(|| Raise::illegal("Usage: fiber:join([timeout])"))?;
            const USAGE: &str = "fiber:join(timeout): bad arguments";
            if lua::to_number(l, 2).is_some_and(|t| t < 0.0) {
                return Err(Raise::illegal(USAGE));
            }
            let timeout = lua::opt_timeout(l, 2, USAGE)?;
            if !matches!(fiber::status(id), Some(Status::Dead) | None) && fiber::current() != Some(id) {
                spawn::check_switch(l, "fiber:join")?;
            }
            ffi::lua_settop(l, 0);
            spawn::join(l, id, timeout)
        }
    }
}

crate::lua_fn! {
    /// `f:csw()`: context switches into the fiber so far.
    fn fiber_csw(l) {
        // SAFETY: arguments are on `l`.
        let id = unsafe { to_fiber(l, 1) }.or_else(fiber::current)
            .ok_or_else(|| Raise::illegal("Usage: fiber:csw()"))?;
        let n = fiber::csw(id).map_err(error::from_fiber)?;
        // SAFETY: room for one result.
        unsafe { ffi::lua_pushinteger(l, n as ffi::lua_Integer) };
        Ok(1)
    }
}

/// Pushes `{name, fid, csw, memory = {used, total}}` for one fiber.
unsafe fn push_info(l: *mut ffi::lua_State, id: FiberId) -> LResult<()> {
    let csw = fiber::csw(id).map_err(error::from_fiber)?;
    let stack = fiber::stack_size(id).map_err(error::from_fiber)?;
    // SAFETY: caller's contract: room for 3 values.
    unsafe {
        ffi::lua_createtable(l, 0, 4);
        fiber::with_name(id, |n| lua::push_str(l, n)).map_err(error::from_fiber)?;
        ffi::lua_setfield(l, -2, c"name".as_ptr());
        ffi::lua_pushinteger(l, id.0 as ffi::lua_Integer);
        ffi::lua_setfield(l, -2, c"fid".as_ptr());
        ffi::lua_pushinteger(l, csw as ffi::lua_Integer);
        ffi::lua_setfield(l, -2, c"csw".as_ptr());
        ffi::lua_createtable(l, 0, 2);
        ffi::lua_pushinteger(l, 0);
        ffi::lua_setfield(l, -2, c"used".as_ptr());
        ffi::lua_pushinteger(l, stack as ffi::lua_Integer);
        ffi::lua_setfield(l, -2, c"total".as_ptr());
        ffi::lua_setfield(l, -2, c"memory".as_ptr());
    }
    Ok(())
}

crate::lua_fn! {
    /// `fiber.info()`: `{[fid] = {name, fid, csw, memory = {used, total}}}` for
    /// every fiber; `f:info()`: that fiber's entry. `memory.total` is the
    /// stack size; `used` is 0 (luafiber has no per-fiber region).
    fn fiber_info(l) {
        // SAFETY: arguments are on `l`.
        unsafe {
            if let Some(id) = to_fiber(l, 1) {
                if matches!(fiber::status(id), Some(Status::Dead) | None) {
                    return Err(error::from_fiber(fiber::Error::Dead(id)));
                }
                push_info(l, id)?;
                return Ok(1);
            }
            ffi::lua_createtable(l, 0, 0);
            for id in fiber::all() {
                if matches!(fiber::status(id), Some(Status::Dead) | None) {
                    continue;
                }
                push_info(l, id)?;
                ffi::lua_rawseti(l, -2, id.0 as ffi::lua_Integer);
            }
        }
        Ok(1)
    }
}

/// Pushes the storage table of `id`, made on first use.
unsafe fn push_storage(l: *mut ffi::lua_State, id: FiberId) -> LResult<()> {
    let idx = match (fiber::status(id), lua_index(id)) {
        (Some(s), Some(idx)) if s != Status::Dead => idx,
        _ => return Err(error::from_fiber(fiber::Error::Dead(id))),
    };
    let r = cord::with(|c| c.fibers[idx].storage);
    // SAFETY: caller's contract: room for 2 values.
    unsafe {
        if r != ffi::LUA_NOREF {
            lua::push_registry_ref(l, r);
        } else {
            ffi::lua_createtable(l, 0, 0);
            ffi::lua_pushvalue(l, -1);
            let r = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
            cord::with(|c| c.fibers[idx].storage = r);
        }
    }
    Ok(())
}

fn is_key(l: *mut ffi::lua_State, idx: c_int, key: &[u8]) -> bool {
    // SAFETY: called with a valid index of a lua_fn body.
    unsafe { lua::to_str(l, idx) == Some(key) }
}

crate::lua_fn! {
    /// `__index` of fiber objects: `f.storage`, else the methods.
    fn fiber_index(l) {
        // SAFETY: `__index` gets the object and the key.
        unsafe {
            if is_key(l, 2, b"storage") {
                let id = to_fiber(l, 1).ok_or_else(|| Raise::illegal("expected fiber"))?;
                push_storage(l, id)?;
                return Ok(1);
            }
            lua::push_registry_ref(l, cord::refs().fiber_methods);
            ffi::lua_pushvalue(l, 2);
            ffi::lua_rawget(l, -2);
        }
        Ok(1)
    }
}

crate::lua_fn! {
    /// `__index` of the module table: `fiber.storage` is the current fiber's.
    fn module_index(l) {
        // SAFETY: `__index` gets the module and the key.
        unsafe {
            if is_key(l, 2, b"storage") {
                push_storage(l, current("fiber.storage")?)?;
            } else {
                ffi::lua_pushnil(l);
            }
        }
        Ok(1)
    }
}

crate::lua_fn! {
    /// `__tostring`: "fiber: N", or "fiber: N (dead)".
    fn fiber_tostring(l) {
        // SAFETY: called with the object at 1.
        unsafe {
            let id = to_fiber(l, 1).ok_or_else(|| Raise::illegal("expected fiber"))?;
            let dead = !fiber::exists(id);
            let s = if dead { format!("fiber: {id} (dead)") } else { format!("fiber: {id}") };
            lua::push_str(l, &s);
        }
        Ok(1)
    }
}

crate::lua_fn! {
    /// `__eq`: same fiber id.
    fn fiber_eq(l) {
        // SAFETY: called with two operands.
        unsafe {
            let same = matches!((to_fiber(l, 1), to_fiber(l, 2)), (Some(a), Some(b)) if a == b);
            ffi::lua_pushboolean(l, c_int::from(same));
        }
        Ok(1)
    }
}

crate::lua_fn! {
    /// `__serialize`: `{id = N, name = S, status = S}` (no name when dead).
    fn fiber_serialize(l) {
        // SAFETY: called with the object at 1.
        unsafe {
            let id = to_fiber(l, 1).ok_or_else(|| Raise::illegal("expected fiber"))?;
            ffi::lua_createtable(l, 0, 3);
            ffi::lua_pushinteger(l, id.0 as ffi::lua_Integer);
            ffi::lua_setfield(l, -2, c"id".as_ptr());
            let status = fiber::status(id).unwrap_or(Status::Dead);
            if status != Status::Dead {
                fiber::with_name(id, |n| lua::push_str(l, n)).map_err(error::from_fiber)?;
                ffi::lua_setfield(l, -2, c"name".as_ptr());
            }
            lua::push_str(l, status.as_str());
            ffi::lua_setfield(l, -2, c"status".as_ptr());
        }
        Ok(1)
    }
}

crate::lua_fn! {
    /// `fiber.time()`: the loop's wall-clock time in seconds (a float):
    /// read once, then the same until the fiber yields, as in Tarantool.
    fn fiber_time(l) {
        // SAFETY: room for one result.
        unsafe { ffi::lua_pushnumber(l, crate::clock_lib::loop_time()) };
        Ok(1)
    }
}

crate::lua_fn! {
    /// `fiber.time64()`: [`fiber_time`] in microseconds (an integer; Tarantool
    /// gives an `int64` cdata).
    fn fiber_time64(l) {
        // SAFETY: room for one result.
        unsafe { ffi::lua_pushinteger(l, crate::clock_lib::loop_time64()) };
        Ok(1)
    }
}

crate::lua_fn! {
    /// `fiber.clock()`: the loop's monotonic time in seconds (a float): read
    /// once, then the same until the fiber yields, as in Tarantool.
    fn fiber_clock(l) {
        // SAFETY: room for one result.
        unsafe { ffi::lua_pushnumber(l, crate::clock_lib::loop_clock()) };
        Ok(1)
    }
}

crate::lua_fn! {
    /// `fiber.clock64()`: [`fiber_clock`] in microseconds (an integer;
    /// Tarantool gives an `int64` cdata).
    fn fiber_clock64(l) {
        // SAFETY: room for one result.
        unsafe { ffi::lua_pushinteger(l, crate::clock_lib::loop_clock64()) };
        Ok(1)
    }
}

type Reg = (&'static CStr, ffi::lua_CFunction);

const MODULE: &[Reg] = &[
    (c"create", fiber_create),
    (c"new", fiber_new),
    (c"yield", fiber_yield),
    (c"sleep", fiber_sleep),
    (c"self", fiber_self),
    (c"id", fiber_id),
    (c"find", fiber_find),
    (c"status", fiber_status),
    (c"name", fiber_name),
    (c"cancel", fiber_cancel),
    (c"kill", fiber_cancel),
    (c"testcancel", fiber_testcancel),
    (c"wakeup", fiber_wakeup),
    (c"set_joinable", fiber_set_joinable),
    (c"join", fiber_join),
    (c"info", fiber_info),
    (c"time", fiber_time),
    (c"time64", fiber_time64),
    (c"clock", fiber_clock),
    (c"clock64", fiber_clock64),
    (c"channel", crate::channel_lib::channel_new),
    (c"cond", crate::channel_lib::cond_new),
];

const METHODS: &[Reg] = &[
    (c"id", fiber_id),
    (c"name", fiber_name),
    (c"status", fiber_status),
    (c"cancel", fiber_cancel),
    (c"kill", fiber_cancel),
    (c"testcancel", fiber_testcancel),
    (c"wakeup", fiber_wakeup),
    (c"set_joinable", fiber_set_joinable),
    (c"join", fiber_join),
    (c"info", fiber_info),
    (c"csw", fiber_csw),
];

/// Sets `funcs` into the table on top of `l`.
pub(crate) unsafe fn set_funcs(l: *mut ffi::lua_State, funcs: &[Reg]) {
    for (name, f) in funcs {
        // SAFETY: caller's contract: a table on top, room for one value.
        unsafe {
            ffi::lua_pushcfunction(l, *f);
            ffi::lua_setfield(l, -2, name.as_ptr());
        }
    }
}

/// Makes the fiber metatable and methods; returns their registry refs.
///
/// # Safety
///
/// `l` is the cord's main state, at setup.
pub(crate) unsafe fn init_metatable(l: *mut ffi::lua_State) -> (c_int, c_int) {
    // SAFETY: caller's contract.
    unsafe {
        ffi::lua_createtable(l, 0, METHODS.len() as c_int);
        set_funcs(l, METHODS);
        let methods = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
        ffi::lua_createtable(l, 0, 5);
        set_funcs(
            l,
            &[
                (c"__index", fiber_index),
                (c"__tostring", fiber_tostring),
                (c"__eq", fiber_eq),
                (c"__serialize", fiber_serialize),
            ],
        );
        ffi::lua_pushstring(l, c"fiber".as_ptr());
        ffi::lua_setfield(l, -2, c"__name".as_ptr());
        FIBER_MT.with(|m| m.set(ffi::lua_topointer(l, -1)));
        let mt = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
        (mt, methods)
    }
}

/// Pushes the `fiber` module table.
///
/// # Safety
///
/// `l` is the cord's main state, after [`init_metatable`].
pub(crate) unsafe fn open(l: *mut ffi::lua_State) {
    // SAFETY: caller's contract.
    unsafe {
        ffi::lua_createtable(l, 0, MODULE.len() as c_int);
        set_funcs(l, MODULE);
        crate::clock_lib::ffi_loop_clocks(l);
        ffi::lua_createtable(l, 0, 1);
        ffi::lua_pushcfunction(l, module_index);
        ffi::lua_setfield(l, -2, c"__index".as_ptr());
        ffi::lua_setmetatable(l, -2);
    }
}
