//! The `fiber` module's functions over fibers: create, yield, sleep, names,
//! cancel, wakeup, join, introspection, the loop clocks (Tarantool's
//! `src/lua/fiber.c`).

use luafiber_fiber::{self as fiber, Builder, FiberId, Status};
use mlua::ffi;

use super::object::{check, current, push_fiber, to_fiber, to_fiber_or_id};
use crate::cord::ErrorUse;
use crate::fiber::{self as lua_fiber, Start};
use crate::raw::{api, error, lua_fn, LResult, Raise};

unsafe fn create_impl(l: *mut ffi::lua_State, start: Start, what: &str) -> LResult {
    // SAFETY: called from a lua_fn body with its arguments on `l`.
    unsafe {
        if ffi::lua_type(l, 1) != ffi::LUA_TFUNCTION {
            return Err(Raise::illegal(format!(
                "{what}(function, ...): bad arguments"
            )));
        }
        let id = lua_fiber::spawn(l, 1, start, Builder::new(), ErrorUse::Lua)?;
        push_fiber(l, id);
    }
    Ok(1)
}

lua_fn! {
    /// `fiber.create(fn, ...)`: runs `fn(...)` in a new fiber at once, until
    /// its first yield or its end; returns the fiber object. Tarantool's
    /// `fiber.create`, same errors.
    pub(super) fn fiber_create(l) {
        // SAFETY: arguments are on `l`.
        unsafe { create_impl(l, Start::Now, "fiber.create") }
    }
}

lua_fn! {
    /// `fiber.new(fn, ...)`: a new fiber appended to the ready queue; it runs
    /// when the caller yields. Tarantool's `fiber.new`.
    pub(super) fn fiber_new(l) {
        // SAFETY: arguments are on `l`.
        unsafe { create_impl(l, Start::Ready, "fiber.new") }
    }
}

lua_fn! {
    /// `fiber.yield()`: `sleep(0)`: back of the ready queue. A cancellation
    /// point.
    pub(super) fn fiber_yield(l) {
        // SAFETY: `l` is the calling state.
        unsafe { lua_fiber::check_switch(l, "fiber.yield")? };
        check(fiber::yield_now())?;
        Ok(0)
    }
}

lua_fn! {
    /// `fiber.sleep(seconds)`: sleeps at least that long (negative = 0; a
    /// wakeup ends it early). NaN or a non-number: "Usage: fiber.sleep(delay)".
    /// A cancellation point.
    pub(super) fn fiber_sleep(l) {
        // SAFETY: `l` is the calling state.
        let t = unsafe { api::to_number(l, 1) }
            .filter(|t| !t.is_nan())
            .ok_or_else(|| Raise::illegal("Usage: fiber.sleep(delay)"))?;
        // SAFETY: `l` is the calling state.
        unsafe { lua_fiber::check_switch(l, "fiber.sleep")? };
        match api::seconds(t) {
            Some(d) => check(fiber::sleep(d))?,
            None => check(fiber::block_cancellable(None).map(drop))?,
        }
        Ok(0)
    }
}

lua_fn! {
    /// `fiber.self()`: the current fiber's object.
    pub(super) fn fiber_self(l) {
        let me = current("fiber.self()")?;
        // SAFETY: `l` is the calling state.
        unsafe { push_fiber(l, me) };
        Ok(1)
    }
}

lua_fn! {
    /// `fiber.id([f])` / `f:id()`: the id (works on dead fibers too; 1 outside
    /// any fiber, Tarantool's scheduler).
    pub(super) fn fiber_id(l) {
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

lua_fn! {
    /// `fiber.find(id)`: the fiber object with that id, or nil when it is
    /// gone. No argument: "Usage: fiber.find(id)".
    pub(super) fn fiber_find(l) {
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

lua_fn! {
    /// `fiber.status([f])` / `f:status()`: "running", "suspended" or "dead".
    pub(super) fn fiber_status(l) {
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

lua_fn! {
    /// `fiber.name([f,] [name [, {truncate = bool}]])`: gets or sets a name:
    /// bytes, not necessarily UTF-8, up to the first NUL (Tarantool takes a
    /// C string), at most 255 ("Fiber name is too long" unless `truncate`,
    /// which cuts by bytes).
    pub(super) fn fiber_name(l) {
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
                        // An ended fiber that waits for its join has its name.
                        fiber::with_name(id, |n| api::push_bytes(l, n)).map_err(error::from_fiber)?;
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
            // The bytes as they are, up to a NUL: Tarantool takes a C string.
            let bytes = bytes.split(|&b| b == 0).next().unwrap_or_default();
            let name = if truncate { fiber::truncate(bytes) } else { bytes };
            let id = target.ok_or_else(|| Raise::illegal("fiber.name(): not in a fiber"))?;
            fiber::set_name(id, name).map_err(error::from_fiber)?;
        }
        Ok(0)
    }
}

lua_fn! {
    /// `fiber.cancel(f | id)` / `f:cancel()` (alias `kill`): sets the cancel
    /// flag and wakes the fiber. Cancelling oneself raises at once. A dead
    /// fiber: "the fiber is dead".
    pub(super) fn fiber_cancel(l) {
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

lua_fn! {
    /// `fiber.testcancel()`: raises `FiberIsCancelled` when the current fiber
    /// is cancelled. Any argument (so also `f:testcancel()`):
    /// "fiber.testcancel(): bad arguments", as in Tarantool.
    pub(super) fn fiber_testcancel(l) {
        // SAFETY: arguments are on `l`.
        if unsafe { ffi::lua_gettop(l) } != 0 {
            return Err(Raise::illegal("fiber.testcancel(): bad arguments"));
        }
        check(fiber::testcancel())?;
        Ok(0)
    }
}

lua_fn! {
    /// `fiber.wakeup(f | id)` / `f:wakeup()`: makes a sleeping or blocked
    /// fiber ready (its sleep ends early). No-op on oneself, on ready or
    /// running fibers and on an ended one that waits for its join; a fiber
    /// that is gone: "the fiber is dead".
    pub(super) fn fiber_wakeup(l) {
        // SAFETY: arguments are on `l`.
        let id = unsafe { to_fiber_or_id(l, 1) }
            .ok_or_else(|| Raise::illegal("Usage: fiber.wakeup(fiber)"))?;
        check(fiber::wakeup(id))?;
        Ok(0)
    }
}

lua_fn! {
    /// `fiber.set_joinable(f, bool)` / `f:set_joinable(bool)`. On a fiber
    /// that has ended and waits for its join, `true` changes nothing and
    /// `false` frees it with its results (Tarantool master panics there; 2.6
    /// allowed it).
    pub(super) fn fiber_set_joinable(l) {
        // SAFETY: arguments are on `l`.
        let (id, yes) = unsafe {
            match (to_fiber(l, 1), ffi::lua_type(l, 2)) {
                (Some(id), ffi::LUA_TBOOLEAN) => (id, ffi::lua_toboolean(l, 2) != 0),
                _ => return Err(Raise::illegal("fiber.set_joinable(id, yesno): bad arguments")),
            }
        };
        if !yes && fiber::status(id) == Some(Status::Dead) {
            // SAFETY: `l` is the calling thread.
            return unsafe { crate::fiber::join::discard(l, id) }.map(|()| 0);
        }
        check(fiber::set_joinable(id, yes))?;
        Ok(0)
    }
}

lua_fn! {
    /// `fiber.join(f [, timeout])` / `f:join([timeout])`: waits for a joinable
    /// fiber's end; returns `true, results...` (nils kept) or `false, err`
    /// (the very value raised). A timeout gives `false, TimedOut` and the
    /// fiber stays joinable. Not a cancellation point.
    pub(super) fn fiber_join(l) {
        // SAFETY: arguments are on `l`.
        unsafe {
            let id = to_fiber(l, 1).ok_or_else(|| Raise::illegal("Usage: fiber:join([timeout])"))?;
            const USAGE: &str = "fiber:join(timeout): bad arguments";
            if api::to_number(l, 2).is_some_and(|t| t < 0.0) {
                return Err(Raise::illegal(USAGE));
            }
            let timeout = api::opt_timeout(l, 2, USAGE)?;
            if !matches!(fiber::status(id), Some(Status::Dead) | None) && fiber::current() != Some(id) {
                lua_fiber::check_switch(l, "fiber:join")?;
            }
            ffi::lua_settop(l, 0);
            lua_fiber::join(l, id, timeout)
        }
    }
}

lua_fn! {
    /// `f:csw()`: context switches into the fiber so far.
    pub(super) fn fiber_csw(l) {
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
        fiber::with_name(id, |n| api::push_bytes(l, n)).map_err(error::from_fiber)?;
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

lua_fn! {
    /// `fiber.info()`: `{[fid] = {name, fid, csw, memory = {used, total}}}` for
    /// every fiber; `f:info()`: that fiber's entry. `memory.total` is the
    /// stack size; `used` is 0 (luafiber has no per-fiber region).
    pub(super) fn fiber_info(l) {
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

lua_fn! {
    /// `fiber.time()`: the loop's wall-clock time in seconds (a float):
    /// read once, then the same until the fiber yields, as in Tarantool.
    pub(super) fn fiber_time(l) {
        // SAFETY: room for one result.
        unsafe { ffi::lua_pushnumber(l, crate::modules::clock::loop_time()) };
        Ok(1)
    }
}

lua_fn! {
    /// `fiber.time64()`: [`fiber_time`] in microseconds (an integer; Tarantool
    /// gives an `int64` cdata).
    pub(super) fn fiber_time64(l) {
        // SAFETY: room for one result.
        unsafe { ffi::lua_pushinteger(l, crate::modules::clock::loop_time64()) };
        Ok(1)
    }
}

lua_fn! {
    /// `fiber.clock()`: the loop's monotonic time in seconds (a float): read
    /// once, then the same until the fiber yields, as in Tarantool.
    pub(super) fn fiber_clock(l) {
        // SAFETY: room for one result.
        unsafe { ffi::lua_pushnumber(l, crate::modules::clock::loop_clock()) };
        Ok(1)
    }
}

lua_fn! {
    /// `fiber.clock64()`: [`fiber_clock`] in microseconds (an integer;
    /// Tarantool gives an `int64` cdata).
    pub(super) fn fiber_clock64(l) {
        // SAFETY: room for one result.
        unsafe { ffi::lua_pushinteger(l, crate::modules::clock::loop_clock64()) };
        Ok(1)
    }
}
