//! `fiber:join()` from Lua: the ended fiber's results moved to the joiner.

use luafiber_fiber::{self as fiber, FiberId};

use crate::cord::Ended;
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
    let ended = match Ended::joined(id, timeout) {
        Ok(ended) => ended,
        Err(fiber::Error::TimedOut) => {
            s.push_bool(false);
            error::push(s, ErrorKind::TimedOut, "timed out");
            return Ok(2);
        }
        Err(e) => return Err(error::from_fiber(e)),
    };
    let Some(mut ended) = ended else {
        s.push_bool(true);
        return Ok(1);
    };
    // `[msgh, results...]` or `[msgh, error]` (fiber/mod.rs).
    let n = ended.stack().top() - 1;
    s.ensure(n + 1)
        .map_err(|_| Raise::illegal("fiber:join(): too many results"))?;
    s.push_bool(ended.rc() == Some(0));
    ended
        .move_to(s, n)
        .map_err(|_| Raise::illegal("fiber:join(): too many results"))?;
    Ok(n + 1)
}

/// Frees an ended fiber that waits for its join, its results with it (what
/// `f:set_joinable(false)` does to one): as a join that drops them.
///
/// # Errors
///
/// As `fiber::join` (the fiber is gone, or is not joinable).
pub(crate) fn discard(id: FiberId) -> LResult<()> {
    drop(Ended::joined(id, None).map_err(error::from_fiber)?);
    Ok(())
}
