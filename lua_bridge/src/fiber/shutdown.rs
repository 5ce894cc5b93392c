//! Ending every Lua fiber before the cord's Lua state closes (docs/design.md's
//! shutdown rule: cancel all, run until nothing is runnable, then unwind
//! what remains). A Lua fiber left in the scheduler past its state would
//! run Lua code on freed memory the next time the scheduler runs.
//!
//! What remains after the cancels and the run (a fiber blocked where a
//! cancel does not end the wait, e.g. a join or a Rust function that
//! blocks again) cannot be unwound: an unwind would cross its Lua frames.
//! It is abandoned instead ([`fiber::abandon`]): never resumed, its stack
//! leaked.

use luafiber_fiber::{self as fiber, FiberId, Status};

use crate::cord;

/// The ids of this thread's Lua fibers.
fn lua_fibers() -> Vec<FiberId> {
    fiber::all()
        .into_iter()
        .filter(|&id| fiber::ext(id).is_ok_and(|e| e > 0))
        .collect()
}

fn is_ready(id: FiberId) -> bool {
    fiber::status(id) == Some(Status::Ready)
}

/// Cancels every Lua fiber of this thread, runs the fibers until none of
/// them is ready (other fibers run meanwhile, as in any run), and abandons
/// those left. Returns `false`, abandoning none, when a Lua fiber is on the
/// thread's stack (the runtime is dropped inside one, or inside a fiber one
/// of them called): its state must outlive it.
///
/// Inside a fiber, the caller yields until no Lua fiber is ready instead of
/// running the loop. A fiber that catches its cancel and goes on yielding
/// keeps this waiting, as it would keep [`fiber::run`] going.
pub(crate) fn end_lua_fibers() -> bool {
    cord::try_with(|c| c.shutting_down = true);
    loop {
        let ids = lua_fibers();
        for &id in &ids {
            let _ = fiber::cancel(id);
        }
        if fiber::current().is_none() {
            // `ids` are checked in order, each once a pass: the run goes on
            // until the last one is seen not ready.
            let mut seen = 0;
            fiber::run_until(|| {
                while seen < ids.len() && !is_ready(ids[seen]) {
                    seen += 1;
                }
                seen == ids.len()
            });
        } else {
            while ids.iter().any(|&id| is_ready(id)) {
                let _ = fiber::yield_now();
            }
        }
        // Fibers made ready after they were passed, or started meanwhile
        // (by a fiber that caught its cancel): another round.
        if !lua_fibers().into_iter().any(is_ready) {
            break;
        }
    }
    let ids = lua_fibers();
    if ids
        .iter()
        .any(|&id| matches!(fiber::status(id), Some(Status::Running | Status::Calling)))
    {
        return false;
    }
    for id in ids {
        let _ = fiber::abandon(id);
    }
    true
}
