//! The `fiber` module's functions over fibers: create, yield, sleep, names,
//! cancel, wakeup, join, introspection, the loop clocks (Tarantool's
//! `src/lua/fiber.c`).

use luafiber_fiber::{self as fiber, Builder, FiberId, Status};
use mlua::ffi;

use super::object::{check, current, push_fiber, push_lua_fiber, to_fiber, to_fiber_or_id};
use crate::cord::ErrorUse;
use crate::fiber::{self as lua_fiber, Start};
use crate::modules::clock;
use crate::raw::args::{opt_timeout, seconds};
use crate::raw::{error, lua_fn, LResult, Raise, Stack};

fn create(s: &mut Stack, start: Start, what: &str) -> LResult {
    if s.type_of(1) != ffi::LUA_TFUNCTION {
        return Err(Raise::illegal(format!(
            "{what}(function, ...): bad arguments"
        )));
    }
    if start == Start::Now {
        super::top::note_switch();
    }
    let (id, idx) = lua_fiber::spawn_at(s, 1, start, Builder::new(), ErrorUse::Lua)?;
    match start {
        // It has not run: it lives, at `idx`.
        Start::Ready => push_lua_fiber(s, id, idx),
        Start::Now => push_fiber(s, id),
    }
    Ok(1)
}

lua_fn! {
    /// `fiber.create(fn, ...)`: runs `fn(...)` in a new fiber at once, until
    /// its first yield or its end; returns the fiber object. Tarantool's
    /// `fiber.create`, same errors.
    pub(super) fn fiber_create(s: &mut Stack) {
        create(s, Start::Now, "fiber.create")
    }
}

lua_fn! {
    /// `fiber.new(fn, ...)`: a new fiber appended to the ready queue; it runs
    /// when the caller yields. Tarantool's `fiber.new`.
    pub(super) fn fiber_new(s: &mut Stack) {
        create(s, Start::Ready, "fiber.new")
    }
}

lua_fn! {
    /// `fiber.yield()`: `sleep(0)`: back of the ready queue. A cancellation
    /// point.
    pub(super) fn fiber_yield(s: &mut Stack) {
        lua_fiber::check_switch(s, "fiber.yield")?;
        check(fiber::yield_now())?;
        Ok(0)
    }
}

lua_fn! {
    /// `fiber.sleep(seconds)`: sleeps at least that long (negative = 0; a
    /// wakeup ends it early). A number or a numeric string (master's
    /// `lua_isnumber`); NaN, anything else or another count of arguments:
    /// "Usage: fiber.sleep(delay)". A cancellation point.
    pub(super) fn fiber_sleep(s: &mut Stack) {
        let t = (s.top() == 1)
            .then(|| s.to_number_coerced(1))
            .flatten()
            .filter(|t| !t.is_nan())
            .ok_or_else(|| Raise::illegal("Usage: fiber.sleep(delay)"))?;
        lua_fiber::check_switch(s, "fiber.sleep")?;
        match seconds(t) {
            Some(d) => check(fiber::sleep(d))?,
            None => check(fiber::block_cancellable(None).map(drop))?,
        }
        Ok(0)
    }
}

lua_fn! {
    /// `fiber.self()`: the current fiber's object.
    pub(super) fn fiber_self(s: &mut Stack) {
        push_fiber(s, current("fiber.self()")?);
        Ok(1)
    }
}

lua_fn! {
    /// `fiber.id([f])` / `f:id()`: the id (works on dead fibers too; 1 outside
    /// any fiber, Tarantool's scheduler).
    pub(super) fn fiber_id(s: &mut Stack) {
        let id = if s.is_none_or_nil(1) {
            fiber::current().map_or(fiber::SCHED_FID, |f| f.0)
        } else {
            to_fiber(s, 1).ok_or_else(|| Raise::illegal("expected fiber as 1 argument"))?.0
        };
        s.push_int(id as i64);
        Ok(1)
    }
}

lua_fn! {
    /// `fiber.find(id)`: the fiber object with that id, or nil when it is
    /// gone. No argument: "Usage: fiber.find(id)".
    pub(super) fn fiber_find(s: &mut Stack) {
        if s.is_none_or_nil(1) {
            return Err(Raise::illegal("Usage: fiber.find(id)"));
        }
        match to_fiber_or_id(s, 1).filter(|&id| fiber::exists(id)) {
            Some(id) => push_fiber(s, id),
            None => s.push_nil(),
        }
        Ok(1)
    }
}

lua_fn! {
    /// `fiber.status([f])` / `f:status()`: "running", "suspended" or "dead".
    pub(super) fn fiber_status(s: &mut Stack) {
        // Any argument, nil too, must be a fiber (master's
        // `lbox_get_fiber`).
        let status = if s.top() == 0 {
            c"running"
        } else {
            let id = to_fiber(s, 1).ok_or_else(|| Raise::illegal("expected fiber as 1 argument"))?;
            // A finished joinable fiber waiting for its join is
            // "suspended", as in Tarantool.
            match fiber::status(id) {
                Some(Status::Running) => c"running",
                None => c"dead",
                Some(_) => c"suspended",
            }
        };
        s.push_cstr(status);
        Ok(1)
    }
}

/// Whether `id` has ended (or is gone).
fn dead(id: FiberId) -> bool {
    matches!(fiber::status(id), Some(Status::Dead) | None)
}

lua_fn! {
    /// `fiber.name([f,] [name [, {truncate = bool}]])`: gets or sets a name:
    /// bytes, not necessarily UTF-8, up to the first NUL (Tarantool takes a
    /// C string), at most 255 ("Fiber name is too long" unless `truncate`,
    /// which cuts by bytes).
    pub(super) fn fiber_name(s: &mut Stack) {
        let (target, at) = match to_fiber(s, 1) {
            Some(id) => (Some(id), 2),
            None => (fiber::current(), 1),
        };
        if s.is_none_or_nil(at) {
            match target {
                // An ended fiber that waits for its join has its name.
                Some(id) => fiber::with_name(id, |n| s.push_bytes(n)).map_err(error::from_fiber)?,
                None => s.push_cstr(c"sched"),
            }
            return Ok(1);
        }
        let truncate = match s.type_of(at + 1) {
            ffi::LUA_TTABLE => {
                s.rawget_field(at + 1, c"truncate");
                let yes = s.to_bool(-1);
                s.pop(1);
                yes
            }
            t if t <= ffi::LUA_TNIL => false,
            _ => return Err(Raise::illegal("fiber.name(): bad arguments")),
        };
        let bytes = s.coerce_str(at).ok_or_else(|| Raise::illegal("fiber.name(): bad arguments"))?;
        // The bytes as they are, up to a NUL: Tarantool takes a C string.
        let bytes = bytes.split(|&b| b == 0).next().unwrap_or_default();
        let name = if truncate { fiber::truncate(bytes) } else { bytes };
        let id = target.ok_or_else(|| Raise::illegal("fiber.name(): not in a fiber"))?;
        fiber::set_name(id, name).map_err(error::from_fiber)?;
        Ok(0)
    }
}

lua_fn! {
    /// `fiber.cancel(f | id)` / `f:cancel()` (alias `kill`): sets the cancel
    /// flag and wakes the fiber. Cancelling oneself raises at once. A dead
    /// fiber: "the fiber is dead".
    pub(super) fn fiber_cancel(s: &mut Stack) {
        let id = to_fiber_or_id(s, 1).ok_or_else(|| Raise::illegal("Usage: fiber.cancel(fiber)"))?;
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
    pub(super) fn fiber_testcancel(s: &mut Stack) {
        if s.top() != 0 {
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
    pub(super) fn fiber_wakeup(s: &mut Stack) {
        let id = to_fiber_or_id(s, 1).ok_or_else(|| Raise::illegal("Usage: fiber.wakeup(fiber)"))?;
        check(fiber::wakeup(id))?;
        Ok(0)
    }
}

lua_fn! {
    /// `fiber.set_joinable(f, bool)` / `f:set_joinable(bool)`. On a fiber
    /// that has ended and waits for its join, `true` changes nothing and
    /// `false` frees it with its results (Tarantool master panics there; 2.6
    /// allowed it).
    pub(super) fn fiber_set_joinable(s: &mut Stack) {
        let (id, yes) = match (to_fiber(s, 1), s.type_of(2)) {
            (Some(id), ffi::LUA_TBOOLEAN) => (id, s.to_bool(2)),
            _ => return Err(Raise::illegal("fiber.set_joinable(id, yesno): bad arguments")),
        };
        if !yes && fiber::status(id) == Some(Status::Dead) {
            return crate::fiber::join::discard(id).map(|()| 0);
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
    pub(super) fn fiber_join(s: &mut Stack) {
        const USAGE: &str = "fiber:join(timeout): bad arguments";
        let id = to_fiber(s, 1).ok_or_else(|| Raise::illegal("Usage: fiber:join([timeout])"))?;
        // Master's order: not joinable, itself, then the timeout.
        let ended = fiber::join_state(id).map_err(error::from_fiber)?;
        let timeout = opt_timeout(s, 2, USAGE)?;
        if ended == Some(false) {
            lua_fiber::check_switch(s, "fiber:join")?;
        }
        s.settop(0);
        lua_fiber::join(s, id, timeout)
    }
}

lua_fn! {
    /// `f:csw()`: context switches into the fiber so far.
    pub(super) fn fiber_csw(s: &mut Stack) {
        let id = to_fiber(s, 1).or_else(fiber::current)
            .ok_or_else(|| Raise::illegal("Usage: fiber:csw()"))?;
        let n = fiber::csw(id).map_err(error::from_fiber)?;
        s.push_int(n as i64);
        Ok(1)
    }
}

/// Pushes `{name, fid, csw, memory = {used, total}}` for one fiber.
fn push_info(s: &mut Stack, id: FiberId) -> LResult<()> {
    let csw = fiber::csw(id).map_err(error::from_fiber)?;
    let stack = fiber::stack_size(id).map_err(error::from_fiber)?;
    let t = s.new_table(0, 4);
    fiber::with_name(id, |n| s.push_bytes(n)).map_err(error::from_fiber)?;
    s.set_field(t, c"name");
    s.push_int(id.0 as i64);
    s.set_field(t, c"fid");
    s.push_int(csw as i64);
    s.set_field(t, c"csw");
    s.push_number(super::top::cputime(id));
    s.set_field(t, c"time");
    super::slice::push_max_slice(s, t, id)?;
    let memory = s.new_table(0, 2);
    s.push_int(0);
    s.set_field(memory, c"used");
    s.push_int(stack as i64);
    s.set_field(memory, c"total");
    s.set_field(t, c"memory");
    Ok(())
}

lua_fn! {
    /// `fiber.info()`: `{[fid] = {name, fid, csw, memory = {used, total}}}` for
    /// every fiber; `f:info()`: that fiber's entry. `memory.total` is the
    /// stack size; `used` is 0 (luafiber has no per-fiber region).
    pub(super) fn fiber_info(s: &mut Stack) {
        if let Some(id) = to_fiber(s, 1) {
            if dead(id) {
                return Err(error::from_fiber(fiber::Error::Dead(id)));
            }
            push_info(s, id)?;
            return Ok(1);
        }
        let all = s.new_table(0, 0);
        for id in fiber::all() {
            if dead(id) {
                continue;
            }
            push_info(s, id)?;
            s.rawseti(all, id.0 as i64);
        }
        // As master's `lbox_fiber_info`: YAML shows it in block mode.
        let mt = s.new_table(0, 1);
        s.push_cstr(c"mapping");
        s.set_field(mt, c"__serialize");
        s.set_metatable(all);
        Ok(1)
    }
}

lua_fn! {
    /// `fiber.time()`: the loop's wall-clock time in seconds (a float):
    /// read once, then the same until the fiber yields, as in Tarantool.
    pub(super) fn fiber_time(s: &mut Stack) {
        s.push_number(clock::loop_time());
        Ok(1)
    }
}

lua_fn! {
    /// `fiber.time64()`: [`fiber_time`] in microseconds (an integer; Tarantool
    /// gives an `int64` cdata).
    pub(super) fn fiber_time64(s: &mut Stack) {
        s.push_int(clock::loop_time64());
        Ok(1)
    }
}

lua_fn! {
    /// `fiber.clock()`: the loop's monotonic time in seconds (a float): read
    /// once, then the same until the fiber yields, as in Tarantool.
    pub(super) fn fiber_clock(s: &mut Stack) {
        s.push_number(clock::loop_clock());
        Ok(1)
    }
}

lua_fn! {
    /// `fiber.clock64()`: [`fiber_clock`] in microseconds (an integer;
    /// Tarantool gives an `int64` cdata).
    pub(super) fn fiber_clock64(s: &mut Stack) {
        s.push_int(clock::loop_clock64());
        Ok(1)
    }
}
