//! Stackful fibers for one OS thread, with no Lua: guarded `mmap` stacks and
//! their pool, fiber slots with generation-tagged ids, and a scheduler with a
//! FIFO ready queue and a timer heap; channels and conds on top.
//!
//! Each fiber is a [`corosensei`] coroutine on its own [`FiberStack`]. The
//! scheduler is per thread: fibers never migrate, and every function here acts
//! on the calling thread's scheduler.
//!
//! The layers, bottom up (each imports only those below it):
//!
//! - `context`: the running fiber's thread-local record, the switch count
//!   and the fiber word;
//! - [`stack`]: guarded stacks, their [`pool`], and the report of an overflow
//!   into a guard;
//! - `scheduler`: fiber slots, the ready FIFO, the timer heap, switching,
//!   the run loop and its [`idle`]-wait hook (the cord's event loop, in
//!   `luafiber-runtime`), blocking, control and introspection; its module doc
//!   holds the numbered state rules that every `SAFETY` comment cites;
//! - `sync`: [`Cond`] and [`Channel`], on wait lists of records in the
//!   waiting fibers' frames.
//!
//! `scripts/memcheck.sh` runs the unit tests under Miri (strict
//! provenance) where the nightly toolchain has the `miri` component, and
//! says it skipped them where it has not; no Miri run has been recorded
//! yet, so none is claimed here.
//!
//! ```
//! use luafiber_fiber as fiber;
//! use std::{cell::Cell, rc::Rc, time::Duration};
//!
//! let hits = Rc::new(Cell::new(0));
//! for _ in 0..3 {
//!     let hits = hits.clone();
//!     fiber::Builder::new()
//!         .spawn_ready(move || {
//!             fiber::sleep(Duration::from_millis(1)).unwrap();
//!             hits.set(hits.get() + 1);
//!         })
//!         .unwrap();
//! }
//! fiber::run();
//! assert_eq!(hits.get(), 3);
//! ```

mod context;
mod scheduler;
pub mod stack;
mod sync;

pub use context::{
    current_ext, current_tag, fiber_word, set_fiber_word, switch_count, switch_counter,
    with_running,
};
pub use scheduler::error;
pub use scheduler::error::Error;
pub use scheduler::idle::{self, set_idle_hook, IdleHook};
pub use scheduler::{
    abandon, all, block, block_cancellable, block_noted, cancel, clear_stack_pool, config,
    configure, csw, current, current_flags, exists, ext, has_pending, has_ready, is_cancelled,
    is_joinable, join, join_state, name, next_timer, poll_soon, resume_now, resume_parked, run,
    run_until, serve, set_joinable, set_name, set_switch_hook, sleep, stack_size, stats, status,
    testcancel, truncate, wakeup, wakeup_parked, wakeup_uncancelled, with_name, yield_now, Builder,
    Config, CurrentFlags, DisplayName, FiberId, Parked, Stats, Status, FIRST_FID, MAX_NAME_LEN,
    SCHED_FID,
};
pub use stack::overflow::{stack_left, stack_left_and_size, stack_room};
pub use stack::pool;
pub use stack::pool::StackPoolConfig;
pub use stack::{FiberStack, StackError};
pub use sync::channel::{self, Channel, GetError, PutError};
pub use sync::cond::{self, Cond};
