//! Stackful fibers for one OS thread, with no Lua: guarded `mmap` stacks and
//! their pool, fiber slots with generation-tagged ids, and a scheduler with a
//! FIFO ready queue and a timer heap; channels and conds on top.
//!
//! Each fiber is a [`corosensei`] coroutine on its own [`FiberStack`]. The
//! scheduler is per thread: fibers never migrate, and every function here acts
//! on the calling thread's scheduler.
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

pub mod channel;
pub mod cond;
pub mod error;
mod guard;
pub mod idle;
pub mod pool;
mod queue;
mod scheduler;
mod slots;
pub mod stack;
mod state;
mod timer;
mod waitlist;

pub use channel::{Channel, GetError, PutError};
pub use cond::Cond;
pub use error::Error;
pub use guard::stack_left;
pub use idle::{set_idle_hook, IdleHook};
pub use pool::StackPoolConfig;
pub use scheduler::{
    all, block, block_cancellable, cancel, clear_stack_pool, config, configure, csw, current,
    current_ext, exists, ext, fiber_word, has_pending, is_cancelled, is_joinable, join, name, run,
    run_until, set_fiber_word, set_joinable, set_name, set_switch_hook, sleep, stack_size, stats,
    status, switch_count, testcancel, truncate, wakeup, with_name, yield_now, Builder, Config,
    FiberId, Stats, FIRST_FID, MAX_NAME_LEN, SCHED_FID,
};
pub use stack::{FiberStack, StackError};
pub use state::Status;
