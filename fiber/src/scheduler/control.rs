//! Acting on a fiber by id: wakeup, cancel, joinability, join, renaming,
//! abandoning.

use std::borrow::Cow;
use std::time::{Duration, Instant};

use super::core::with;
use super::error::Error;
use super::id::FiberId;
use super::park::{block, far_future, Parked};
use super::record::{Handle, Status, MAX_NAME_LEN};
use super::switch::switch_to;

/// Makes the fiber ready if it is suspended (as [`wakeup`] does, by handle,
/// with no id lookup). Returns `false` when it has ended or is gone.
#[inline(always)]
pub(crate) fn wake_fiber(h: Handle) -> bool {
    with(|s| s.wake(h))
}

/// Makes a suspended fiber ready. A no-op on a running, ready or calling
/// fiber, on the caller itself, and on one that has ended but waits for its
/// join (Tarantool's `fiber_wakeup`).
///
/// # Errors
///
/// [`Error::Dead`] when there is no such fiber (it ended and was joined,
/// or was not joinable).
pub fn wakeup(id: FiberId) -> Result<(), Error> {
    with(|s| {
        let (h, _) = s.live(id)?;
        s.wake(h);
        Ok(())
    })
}

/// [`wakeup`] for a pool of fibers that wait for work: wakes the fiber
/// unless its cancel flag is set, in one lookup. Returns `true` when it is
/// not cancelled (woken now, or already ready or running), `false` when it
/// is (it was not woken: a cancel woke it already).
///
/// # Errors
///
/// [`Error::Dead`] when there is no such fiber.
pub fn wakeup_uncancelled(id: FiberId) -> Result<bool, Error> {
    with(|s| {
        let (h, slot) = s.live(id)?;
        if slot.cancelled {
            return Ok(false);
        }
        s.wake(h);
        Ok(true)
    })
}

/// [`wakeup_uncancelled`] that runs the fiber at once, until its next yield
/// or its end, as [`Builder::spawn_now`](crate::Builder::spawn_now) runs a
/// new one: a pool of fibers that wait for work hands one its work with no
/// trip through the ready queue (Tarantool's `fiber_call` of a pool fiber in
/// `fiber_pool_cb`). From a fiber, that fiber is `Calling` meanwhile and goes
/// on when the resumed one yields or ends. Returns `true` when it ran;
/// `false` (and nothing is done) when it is cancelled, not suspended (ready,
/// running, ended), or running the loop's batch from its own stack under the
/// caller (state rule 6: the caller runs on its stack). A timer it waited
/// with is dropped, as a wakeup drops it.
///
/// # Errors
///
/// [`Error::Dead`] when there is no such fiber.
pub fn resume_now(id: FiberId) -> Result<bool, Error> {
    let h = with(|s| {
        let (h, slot) = s.live(id)?;
        if slot.status != Status::Suspended || slot.cancelled {
            return Ok(None);
        }
        if s.resumes_current(h) {
            return Ok(None);
        }
        let slot = &mut s.slots[h];
        // As `wake`: the timer of its wait is stale from now on.
        slot.wait += 1;
        Ok::<_, Error>(Some(h))
    })?;
    match h {
        Some(h) => {
            switch_to(h);
            Ok(true)
        }
        None => Ok(false),
    }
}

/// [`resume_now`] of the wait `p` names ([`block_noted`](super::park::block_noted)): runs its fiber
/// at once when it is still in that wait (not woken, cancelled or
/// gone since), from outside any fiber or from a fiber. Returns whether
/// it ran.
pub fn resume_parked(p: Parked) -> bool {
    let h = with(|s| {
        let (h, slot) = s.live(p.fiber()).ok()?;
        if slot.status != Status::Suspended || slot.cancelled || !p.is(slot.wait) {
            return None;
        }
        if s.resumes_current(h) {
            return None;
        }
        // As `wake`: the wait is over.
        s.slots[h].wait += 1;
        Some(h)
    });
    match h {
        Some(h) => {
            switch_to(h);
            true
        }
        None => false,
    }
}

/// [`wakeup`] of the wait `p` names ([`block_noted`](super::park::block_noted)): makes its fiber
/// ready when it is still in that wait. Returns whether it did.
pub fn wakeup_parked(p: Parked) -> bool {
    with(|s| {
        let Ok((h, slot)) = s.live(p.fiber()) else {
            return false;
        };
        slot.status == Status::Suspended && p.is(slot.wait) && s.wake(h)
    })
}

/// Sets the fiber's cancel flag and wakes it; it sees the cancel at its next
/// cancellation point. A no-op on a finished joinable fiber. Cancelling the
/// caller itself only sets the flag: call [`testcancel`](crate::testcancel) after.
///
/// # Errors
///
/// [`Error::Dead`] when the fiber has ended (and is not waiting for a join).
pub fn cancel(id: FiberId) -> Result<(), Error> {
    with(|s| {
        let (h, slot) = s.live(id)?;
        if slot.status == Status::Dead {
            return Ok(());
        }
        slot.cancelled = true;
        tracing::trace!(id = id.0, "cancel");
        s.wake(h);
        Ok(())
    })
}

/// Makes a fiber joinable (it keeps its slot after its end until joined) or
/// not. On a fiber that has ended and waits for its join, `true` changes
/// nothing and `false` frees it, as the end of a fiber that is not joinable
/// does, dropping its results (Tarantool panics there): an embedder that
/// keeps data for it (its [`ext`](crate::ext) word) joins it instead.
///
/// # Errors
///
/// [`Error::Dead`] when there is no such fiber.
pub fn set_joinable(id: FiberId, joinable: bool) -> Result<(), Error> {
    with(|s| {
        let (h, slot) = s.live(id)?;
        if slot.status == Status::Dead {
            if !joinable {
                let joiner = slot.joiner;
                s.remove(h);
                if let Some(j) = joiner {
                    s.wake(j);
                }
            }
            return Ok(());
        }
        slot.joinable = joinable;
        Ok(())
    })
}

/// What [`join`] of `id` by the current fiber would refuse first, checked
/// in one lookup in master's order (`lbox_fiber_join`: not joinable, then
/// itself); else whether the fiber has ended: `Some(true)` ended and
/// waiting for its join, `Some(false)` still going, `None` no such fiber
/// (which `join` reports).
///
/// # Errors
///
/// [`Error::NotJoinable`], [`Error::JoinSelf`].
pub fn join_state(id: FiberId) -> Result<Option<bool>, Error> {
    with(|s| {
        let me = s.current;
        let Ok((h, slot)) = s.live(id) else {
            return Ok(None);
        };
        if !slot.joinable {
            return Err(Error::NotJoinable(id));
        }
        if me == Some(h) {
            return Err(Error::JoinSelf);
        }
        Ok(Some(slot.status == Status::Dead))
    })
}

/// Waits for a joinable fiber to end, then frees its slot and returns its
/// embedder word ([`ext`](crate::ext)). Not a cancellation point: a cancelled joiner
/// keeps waiting.
///
/// # Errors
///
/// [`Error::NotInFiber`] when the fiber has not ended and the caller is not a
/// fiber; [`Error::Dead`] when there is no such fiber (or it was joined);
/// [`Error::NotJoinable`]; [`Error::JoinSelf`] (a joinable fiber joining
/// itself); [`Error::JoinedConcurrently`]
/// when another fiber waits for it; [`Error::TimedOut`] when `timeout` runs
/// out first (the fiber stays joinable).
pub fn join(id: FiberId, timeout: Option<Duration>) -> Result<usize, Error> {
    let deadline = timeout.map(|t| Instant::now().checked_add(t).unwrap_or_else(far_future));
    loop {
        let me = with(|s| {
            let me = s.current;
            let (h, slot) = s.live(id)?;
            if !slot.joinable {
                // A joiner made to give up (set_joinable(false) + wakeup)
                // leaves no trace, so a later join is not refused.
                if slot.joiner.is_some() && slot.joiner == me {
                    slot.joiner = None;
                }
                return Err(Error::NotJoinable(id));
            }
            // After the joinable check, as master's `lbox_fiber_join`.
            if me.map(|h| h.id) == Some(id.0) {
                return Err(Error::JoinSelf);
            }
            if slot.status == Status::Dead {
                let ext = slot.running.ext;
                s.remove(h);
                return Ok(Err(ext));
            }
            match (slot.joiner, me) {
                (Some(j), Some(me)) if j != me => Err(Error::JoinedConcurrently(id)),
                (_, None) => Err(Error::NotInFiber),
                (_, Some(me)) => {
                    slot.joiner = Some(me);
                    Ok(Ok(h))
                }
            }
        })?;
        let target = match me {
            Err(ext) => return Ok(ext),
            Ok(target) => target,
        };
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        if left == Some(Duration::ZERO) || block(left)? {
            let gave_up = with(|s| match s.slot(target) {
                Some(slot) if slot.status != Status::Dead => {
                    s.slots[target].joiner = None;
                    true
                }
                _ => false,
            });
            if gave_up {
                return Err(Error::TimedOut);
            }
        }
    }
}

/// Renames a fiber: any bytes (not necessarily UTF-8). A fiber that has
/// ended and waits for its join keeps its name and can be renamed until
/// then.
///
/// # Errors
///
/// [`Error::Dead`] when there is no such fiber; [`Error::NameTooLong`]
/// past [`MAX_NAME_LEN`] bytes (use [`truncate`](crate::truncate) first to
/// cut instead).
pub fn set_name(id: FiberId, name: &[u8]) -> Result<(), Error> {
    if name.len() > MAX_NAME_LEN {
        return Err(Error::NameTooLong);
    }
    with(|s| {
        let (_, slot) = s.live(id)?;
        let old = std::mem::replace(&mut slot.name, Cow::Owned(name.to_owned()));
        // State rule 7: the record points at the new bytes before the old
        // ones are freed.
        slot.running.name = (slot.name.as_ptr(), slot.name.len());
        drop(old);
        Ok(())
    })
}

/// Removes a fiber from the scheduler for good without running it again,
/// and returns its embedder word ([`ext`](crate::ext)). For an embedder
/// whose fibers can no longer run (the Lua bridge, when its Lua state
/// closes) once cancelling them and running the scheduler ended all that
/// could end (docs/design.md's shutdown rule).
///
/// A fiber that has started and not ended is neither resumed nor unwound
/// (an unwind would cross whatever frames it has, Lua's among them, which
/// no Rust unwind may cross): its stack and all its frames own are leaked,
/// so a waiter record on that stack stays valid (state rule 5), and its
/// id is gone, so a wakeup by handle finds nothing. A fiber that has not
/// started is dropped with its function; one that has ended (waiting for
/// its join) only loses its slot. Its joiner is woken, and finds no such
/// fiber.
///
/// # Errors
///
/// [`Error::Dead`] when there is no such fiber.
///
/// # Panics
///
/// When the fiber is running or calling (its frames are on the thread's
/// stack).
pub fn abandon(id: FiberId) -> Result<usize, Error> {
    let (ext, unstarted) = with(|s| {
        let (h, slot) = s.live(id)?;
        assert!(
            !matches!(slot.status, Status::Running | Status::Calling),
            "abandon: fiber {id} is on the thread's stack"
        );
        let ext = slot.running.ext;
        let joiner = slot.joiner;
        let unstarted = match slot.coro.take() {
            Some(coro) if coro.started() => {
                std::mem::forget(coro);
                None
            }
            coro => coro,
        };
        s.remove(h);
        if let Some(j) = joiner {
            s.wake(j);
        }
        tracing::trace!(id = id.0, "abandon");
        Ok::<_, Error>((ext, unstarted))
    })?;
    // Outside the borrow: the function's captures may touch the scheduler
    // as they drop.
    drop(unstarted);
    Ok(ext)
}
