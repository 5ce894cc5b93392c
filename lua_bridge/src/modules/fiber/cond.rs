//! `fiber.cond()`: Tarantool's `fiber_cond.c` over the fiber layer's
//! [`Cond`] (a cond object's userdata holds an `Rc` of it). On LuaJIT
//! `wait`, `signal` and `broadcast` are Lua wrappers
//! ([`wrappers`](super::wrappers)) for the common case.

use std::cell::Cell;
use std::rc::Rc;

use luafiber_fiber::Cond;

use crate::fiber::check_switch;
use crate::luajit::entry;
use crate::raw::args::opt_timeout;
use crate::raw::context::Part;
use crate::raw::{error, lua_fn, Kind, LResult, Raise, Stack};

/// Per-cord state of cond objects (a part of the cord context): their
/// kind.
#[derive(Default)]
pub(crate) struct CondKind(Cell<Kind<CondBox>>);

/// The kind of cond objects.
#[inline(always)]
fn cond_kind() -> Kind<CondBox> {
    CondKind::with(|k| k.0.get())
}

/// What a cond object's userdata holds: a cond of its own, so a method can
/// hold it whatever happens to the object.
type CondBox = Rc<Cond>;

/// The cond of the object at argument 1 (checked by its metatable, in
/// place when it can be).
#[inline(always)]
fn cond(s: &mut Stack, usage: &str) -> LResult<CondBox> {
    entry::arg_of(s, 1, cond_kind()).ok_or_else(|| Raise::illegal(usage))
}

lua_fn! {
    /// `fiber.cond()`: a condition variable.
    pub(super) fn cond_new(s: &mut Stack) {
        cond_kind().push(s, CondBox::new(Cond::new()));
        Ok(1)
    }
}

lua_fn! {
    /// `cond:wait([timeout])`: master's `luaT_fiber_cond_wait` over
    /// `fiber_cond_wait_timeout` ([`Cond::wait_tarantool`]): true when the
    /// fiber is woken (a signal, a broadcast, `f:wakeup()`), false on
    /// timeout; raises `FiberIsCancelled` when the fiber is cancelled once
    /// the wait is over (a cancelled fiber waits too). `"Usage:
    /// cond:wait([timeout])"` for a bad or negative timeout.
    fn cond_wait(s: &mut Stack) {
        const USAGE: &str = "Usage: cond:wait([timeout])";
        let c = cond(s, USAGE)?;
        let timeout = opt_timeout(s, 2, USAGE)?;
        check_switch(s, "cond:wait")?;
        let signalled = c.wait_tarantool(timeout).map_err(error::from_fiber)?;
        s.push_bool(signalled);
        Ok(1)
    }
}

lua_fn! {
    /// `cond:wait()` for `wrappers.lua`, which checked that argument 1 is a
    /// cond and that no timeout is given. Returns nothing: with no timeout,
    /// a wait that returns was woken (the wrapper returns `true`); a
    /// cancelled wait returns its `FiberIsCancelled` error object, which
    /// the wrapper raises (an error raised from Lua unwinds two native
    /// frames fewer than one raised here: about a fifth of a cancelled
    /// fiber's end on LuaJIT).
    pub(super) fn cond_wait_unchecked(s: &mut Stack) {
        check_switch(s, "cond:wait")?;
        // SAFETY: the wrapper checked that argument 1 is a cond.
        let c = unsafe { entry::arg1_of_kind(s, cond_kind()) };
        match c.wait_tarantool(None) {
            Ok(_) => Ok(0),
            Err(e) => {
                error::push_raise(s, error::from_fiber(e));
                Ok(1)
            }
        }
    }
}

lua_fn! {
    /// `cond:signal()`: wakes the first waiter.
    fn cond_signal(s: &mut Stack) {
        cond(s, "Usage: cond:signal()")?.signal();
        Ok(0)
    }
}

lua_fn! {
    /// `cond:broadcast()`: wakes every waiter.
    fn cond_broadcast(s: &mut Stack) {
        cond(s, "Usage: cond:broadcast()")?.broadcast();
        Ok(0)
    }
}

lua_fn! {
    /// `__tostring`: "cond", as in Tarantool.
    fn cond_tostring(s: &mut Stack) {
        s.push_cstr(c"cond");
        Ok(1)
    }
}

lua_fn! {
    /// `__gc`: drops the cond.
    fn cond_gc(s: &mut Stack) {
        // A resurrected cond is no cond any more (udata rule 2).
        drop(cond_kind().take(s, 1));
        Ok(0)
    }
}

/// Makes the cond metatable; returns the kind.
pub(super) fn init(s: &mut Stack) -> Kind<CondBox> {
    let kind = Kind::new(
        s,
        c"fiber.cond",
        &[
            (c"wait", cond_wait),
            (c"signal", cond_signal),
            (c"broadcast", cond_broadcast),
        ],
        &[(c"__tostring", cond_tostring), (c"__gc", cond_gc)],
    );
    CondKind::with(|k| k.0.set(kind));
    kind
}
