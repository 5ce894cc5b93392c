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

/// Rounds the shutdown makes at most: in each it cancels every Lua fiber
/// and lets the fibers run until none of them is ready, or until every one
/// had [`ROUND_TURNS`] turns (resumes) on average. A fiber that catches its
/// cancel and yields again (`while true do pcall(fiber.sleep, 1) end`, a
/// worker's usual shape) gets one turn per round: cleanup code that yields
/// fewer than this many times still runs to its end.
pub(crate) const ROUNDS: usize = 100;

/// Turns per Lua fiber in one round (see [`ROUNDS`]).
const ROUND_TURNS: usize = 4;

/// A Lua fiber that the shutdown abandoned, for its report.
#[derive(Debug)]
pub(crate) struct Abandoned {
    pub id: FiberId,
    pub name: String,
    /// It was still ready after [`ROUNDS`] rounds (it caught its cancel and
    /// went on); otherwise it was blocked where a cancel does not end the
    /// wait.
    pub running: bool,
}

impl std::fmt::Display for Abandoned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let why = if self.running {
            "still running after its cancel"
        } else {
            "blocked"
        };
        write!(f, "fiber {} ({}): {why}", self.id.0, self.name)
    }
}

/// Cancels every Lua fiber of this thread, runs the fibers until none of
/// them is ready (other fibers run meanwhile, as in any run) or [`ROUNDS`]
/// rounds have passed, and abandons those left, returning them (for a
/// report). Returns `None`, abandoning none, when a Lua fiber is on the
/// thread's stack (the runtime is dropped inside one, or inside a fiber one
/// of them called): its state must outlive it.
///
/// Inside a fiber, the caller yields until no Lua fiber is ready (at most
/// [`ROUNDS`] × [`ROUND_TURNS`] times) instead of running the loop.
pub(crate) fn end_lua_fibers() -> Option<Vec<Abandoned>> {
    cord::try_with(|c| c.shutting_down = true);
    for _ in 0..ROUNDS {
        let ids = lua_fibers();
        for &id in &ids {
            let _ = fiber::cancel(id);
        }
        let mut turns = ROUND_TURNS * (ids.len() + 1);
        if fiber::current().is_none() {
            // `ids` are checked in order, each once a pass: the run goes on
            // until the last one is seen not ready, or the round's turns
            // are spent (the predicate is asked after each resume).
            let mut seen = 0;
            fiber::run_until(|| {
                while seen < ids.len() && !is_ready(ids[seen]) {
                    seen += 1;
                }
                turns = turns.saturating_sub(1);
                seen == ids.len() || turns == 0
            });
        } else {
            while turns > 0 && ids.iter().any(|&id| is_ready(id)) {
                turns -= 1;
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
        return None;
    }
    let mut abandoned = Vec::new();
    for id in ids {
        let status = fiber::status(id);
        let running = status == Some(Status::Ready);
        let name = fiber::name(id)
            .map(|n| String::from_utf8_lossy(&n).into_owned())
            .unwrap_or_default();
        if fiber::abandon(id).is_ok() && status != Some(Status::Dead) {
            // A fiber that had ended (waiting for its join) is not work lost.
            abandoned.push(Abandoned { id, name, running });
        }
    }
    Some(abandoned)
}
