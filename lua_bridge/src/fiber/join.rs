//! `fiber:join()` from Lua: the ended fiber's results moved to the joiner.

use std::ffi::c_int;

use luafiber_fiber::{self as fiber, FiberId};
use mlua::ffi;

use crate::cord;
use crate::raw::error::{self, ErrorKind};
use crate::raw::{api, LResult, Raise};

/// Joins a fiber from Lua: pushes `true, results...` or `false, error`, and
/// returns how many values it pushed. A join that times out pushes
/// `false, TimedOut`.
///
/// # Safety
///
/// `l` is a thread of the cord's state.
pub(crate) unsafe fn join(
    l: *mut ffi::lua_State,
    id: FiberId,
    timeout: Option<std::time::Duration>,
) -> LResult {
    // SAFETY: caller's contract; the joined fiber has ended, so its thread
    // is idle and its values can be moved.
    unsafe {
        let ext = match fiber::join(id, timeout) {
            Ok(ext) => ext,
            Err(fiber::Error::TimedOut) => {
                ffi::lua_pushboolean(l, 0);
                error::push_error_object(l, ErrorKind::TimedOut, "timed out");
                return Ok(2);
            }
            Err(e) => return Err(error::from_fiber(e)),
        };
        if ext == 0 {
            ffi::lua_pushboolean(l, 1);
            return Ok(1);
        }
        let lf = cord::with(|c| c.fibers.remove(ext - 1));
        let t = lf.thread.l;
        let n = ffi::lua_gettop(t) - 1;
        // The results, the flag, and the two slots `luaL_unref` takes.
        if ffi::lua_checkstack(l, n + 3) == 0 {
            api::unref(l, lf.udata);
            cord::recycle_thread(lf.thread);
            return Err(Raise::illegal("fiber:join(): too many results"));
        }
        ffi::lua_pushboolean(l, c_int::from(lf.rc == Some(0)));
        ffi::lua_xmove(t, l, n);
        api::unref(l, lf.udata);
        cord::recycle_thread(lf.thread);
        Ok(n + 1)
    }
}

/// Frees an ended fiber that waits for its join, its results with it (what
/// `f:set_joinable(false)` does to one): as a join that drops them.
///
/// # Errors
///
/// As `fiber::join` (the fiber is gone, or is not joinable).
///
/// # Safety
///
/// `l` is a thread of the cord's state.
pub(crate) unsafe fn discard(l: *mut ffi::lua_State, id: FiberId) -> LResult<()> {
    let ext = fiber::join(id, None).map_err(error::from_fiber)?;
    if ext > 0 {
        let lf = cord::with(|c| c.fibers.remove(ext - 1));
        // SAFETY: the fiber has ended, so nothing runs on its thread.
        unsafe {
            api::unref(l, lf.udata);
            cord::recycle_thread(lf.thread);
        }
    }
    Ok(())
}
