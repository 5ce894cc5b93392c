//! The idle-wait hook: how the scheduler loop waits for events it knows
//! nothing of (the cord's event loop in `luafiber-runtime` installs one).
//!
//! Without a hook, [`run`](crate::run) sleeps the thread until the next
//! timer when no fiber is ready, and returns when none is sleeping either.
//! With one, the loop calls it instead:
//!
//! - once per batch while fibers are ready, with `Some(Duration::ZERO)`: the
//!   hook polls for events without blocking, makes ready the fibers they
//!   are for (they run in a later batch), and returns whether fibers wait
//!   for its events (then the loop keeps its batches short, at least 4
//!   switches instead of 64, so that a fiber that keeps yielding lets the
//!   hook poll again within a few yields);
//! - when no fiber is ready, with the time left until the next timer, or
//!   `None` when no fiber sleeps: the hook blocks at most that long (`None`:
//!   until an event) and returns whether it still has waiters, fibers it
//!   may make ready later. When it has none and no fiber sleeps, the loop
//!   ends, so a hook must return `false` at once, without blocking, when
//!   given `None` with no waiters.
//!
//! The hook runs outside any fiber, with no borrow of the scheduler held:
//! it may wake fibers ([`wakeup`](crate::wakeup),
//! [`Cond::broadcast`](crate::Cond::broadcast)) but not switch to them.

use std::cell::Cell;
use std::time::Duration;

/// The idle-wait hook; see the [module docs](self).
pub type IdleHook = fn(timeout: Option<Duration>) -> bool;

thread_local! {
    static HOOK: Cell<Option<IdleHook>> = const { Cell::new(None) };
}

/// Sets this thread's idle-wait hook (see the [module docs](self));
/// returns the previous one.
pub fn set_idle_hook(hook: Option<IdleHook>) -> Option<IdleHook> {
    HOOK.with(|h| h.replace(hook))
}

/// This thread's idle-wait hook.
#[inline(always)]
pub fn idle_hook() -> Option<IdleHook> {
    HOOK.with(Cell::get)
}
