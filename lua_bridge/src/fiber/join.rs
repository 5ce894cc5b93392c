//! `fiber:join()` from Lua: the ended fiber's results moved to the joiner.

use luafiber_fiber::{self as fiber, FiberId};

use crate::cord;
use crate::raw::error::{self, ErrorKind};
use crate::raw::{LResult, Raise, Stack};

/// Joins a fiber from Lua: pushes `true, results...` or `false, error`, and
/// returns how many values it pushed. A join that times out pushes
/// `false, TimedOut`.
///
/// # Errors
///
/// What the fiber layer's join refuses (joining itself, a detached fiber,
/// a second joiner...), and too many results for the stack.
pub(crate) fn join(s: &mut Stack, id: FiberId, timeout: Option<std::time::Duration>) -> LResult {
    let ext = match fiber::join(id, timeout) {
        Ok(ext) => ext,
        Err(fiber::Error::TimedOut) => {
            s.push_bool(false);
            error::push(s, ErrorKind::TimedOut, "timed out");
            return Ok(2);
        }
        Err(e) => return Err(error::from_fiber(e)),
    };
    if ext == 0 {
        s.push_bool(true);
        return Ok(1);
    }
    let lf = cord::with(|c| c.fibers.remove(ext - 1));
    // SAFETY: the joined fiber has ended, so nothing runs on its thread.
    let n = unsafe { Stack::from_state(lf.thread.l) }.top() - 1;
    // The results, the flag, and the slot `luaL_unref` takes.
    let room = s.ensure(n + 2);
    if room.is_ok() {
        s.push_bool(lf.rc == Some(0));
        // SAFETY: another thread of the state, idle, with `n` results on
        // top (entry.rs: `[msgh, results...]`).
        unsafe { s.xmove_from(lf.thread.l, n) };
    }
    s.unref(lf.udata);
    // SAFETY: nothing runs on the ended fiber's thread.
    unsafe { cord::recycle_thread(lf.thread) };
    room.map_err(|_| Raise::illegal("fiber:join(): too many results"))?;
    Ok(n + 1)
}
