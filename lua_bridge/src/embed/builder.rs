//! [`RuntimeBuilder`]: the settings of a [`LuaRuntime`], and the setup of a
//! cord's Lua state (registry refs, metatables, modules).

use luafiber_fiber::{self as fiber, StackPoolConfig};
use mlua::{Lua, LuaOptions, StdLib};

use super::{Error, LuaRuntime};
use crate::cord::{self, NewThread, ThreadPoolConfig};
use crate::raw::{memory, Stack};

/// Settings of a [`LuaRuntime`]; `RuntimeBuilder::default()` gives
/// Tarantool's defaults.
#[derive(Clone, Debug, Default)]
pub struct RuntimeBuilder {
    stacks: StackPoolConfig,
    threads: ThreadPoolConfig,
    memory_limit: Option<usize>,
    new_thread: NewThread,
}

impl RuntimeBuilder {
    /// Usable stack size of each fiber, in bytes (default 512 KiB; at least
    /// 16 KiB; rounded up to pages).
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stacks.stack_size = bytes;
        self
    }

    /// Most stacks kept for reuse (default 16384, the first 1024 keeping their pages; 0: every fiber maps a fresh
    /// stack).
    pub fn stack_pool(mut self, max: usize) -> Self {
        self.stacks.max = max;
        self.stacks.hot = self.stacks.hot.min(max);
        self
    }

    /// Most finished Lua threads kept for reuse (default 4096; 0: every fiber
    /// makes a new Lua thread).
    pub fn thread_pool(mut self, max: usize) -> Self {
        self.threads.max = max;
        self
    }

    /// Caps the Lua heap, in bytes: an allocation past it is a Lua error
    /// ("not enough memory") for the code that asked, never an abort.
    pub fn memory_limit(mut self, bytes: usize) -> Self {
        self.memory_limit = Some(bytes);
        self
    }

    /// How new Lua threads are made (benches compare the variants; the
    /// default is the cached wrapper ref).
    #[cfg(luafiber_bench)]
    pub fn new_thread(mut self, how: NewThread) -> Self {
        self.new_thread = how;
        self
    }

    /// Sets up the Lua state and the scheduler of the calling thread.
    ///
    /// # Errors
    ///
    /// [`Error::AlreadyRunning`] when the thread has a runtime;
    /// [`Error::FibersExist`] when it has fibers already; [`Error::Lua`] when
    /// the memory limit cannot be set.
    pub fn build(self) -> Result<LuaRuntime, Error> {
        if cord::is_installed() {
            return Err(Error::AlreadyRunning);
        }
        if !fiber::configure(fiber::Config {
            stacks: self.stacks,
        }) {
            return Err(Error::FibersExist);
        }
        // SAFETY: the full standard library (ffi and debug included) is what
        // a script interpreter offers; scripts are trusted as in `luajit`.
        let lua = unsafe { Lua::unsafe_new_with(StdLib::ALL, LuaOptions::default()) };
        let main = lua.state();
        let used = lua.used_memory();
        // SAFETY: `main` is the new, idle state of this thread.
        unsafe { crate::raw::heap::install(main) };
        if let Some(limit) = self.memory_limit {
            // SAFETY: `main` is the new, idle state; the limit is set once.
            unsafe { memory::set_limit(main, used, limit) };
        }
        // SAFETY: `main` is the new state's main thread, idle: nothing else
        // uses its stack while setup runs, once, before any fiber.
        let s = &mut unsafe { Stack::from_state(main) };
        setup(s);
        let cord_lua = std::rc::Rc::new(lua.clone());
        cord::install(cord::Cord::new(
            cord_lua.clone(),
            s,
            self.threads,
            self.new_thread,
        ));
        // The probe runs before the modules that read what it found.
        crate::luajit::install(s);
        crate::fiber::guard::install(s, &cord_lua);
        crate::modules::register(s);
        super::cords::install_starter(&self);
        Ok(LuaRuntime { lua })
    }
}

/// Makes what every layer keeps of the new state, once: registry refs of
/// the functions hot paths call, the metatables.
fn setup(s: &mut Stack) {
    crate::raw::error::init(s);
    cord::threads::init(s);
    crate::fiber::entry::init(s);
    super::handlers::init(s);
    #[cfg(feature = "luajit")]
    crate::luajit::cstack::install(s);
    crate::modules::init(s);
    #[cfg(feature = "luajit")]
    tracing::debug!(
        active = crate::luajit::cstack::active(),
        "C stack check of lua_call and lua_pcall"
    );
}
