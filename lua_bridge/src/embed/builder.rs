//! [`RuntimeBuilder`]: the settings of a [`LuaRuntime`], and the setup of a
//! cord's Lua state (registry refs, metatables, modules).

use luafiber_fiber::{self as fiber, StackPoolConfig};
use mlua::{ffi, Lua, LuaOptions, StdLib};

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
    /// ("not enough memory") for the code that asked, never an abort. The
    /// limit counts what the runtime itself allocates at start (the
    /// standard library and the modules: about 100 KB on LuaJIT, 55 KB on
    /// Lua 5.4); a limit below that makes [`build`](RuntimeBuilder::build)
    /// fail.
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
    /// [`Error::FibersExist`] when it has fibers already; [`Error::Lua`]
    /// (an `mlua::Error::MemoryError` naming both figures) when the memory
    /// limit is below what the runtime allocates at start.
    pub fn build(self) -> Result<LuaRuntime, Error> {
        if crate::raw::context::is_installed() {
            return Err(Error::AlreadyRunning);
        }
        warn_without_stack_clash_protection();
        if !fiber::configure(fiber::Config {
            stacks: self.stacks,
        }) {
            return Err(Error::FibersExist);
        }
        // SAFETY: the full standard library (ffi and debug included) is what
        // a script interpreter offers; scripts are trusted as in `luajit`.
        let lua = unsafe { Lua::unsafe_new_with(StdLib::ALL, LuaOptions::default()) };
        if self.memory_limit.is_some() {
            // mlua pushes strings and tables outside any protected call
            // when it believes no allocation can fail (no limit of its
            // own): it must know that one can, or a string it interns at
            // the limit aborts the process. A limit no heap reaches tells
            // it so while its allocator is still the one it knows; the
            // real limit is the bridge's (below).
            let _ = lua.set_memory_limit(isize::MAX as usize);
        }
        let main = lua.state();
        // SAFETY: `main` is the new, idle state of this thread.
        unsafe { crate::raw::heap::install(main) };
        // Every layer's per-cord state, fresh: setup fills it.
        let cx = super::context::Owned::install();
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
        let rt = LuaRuntime {
            lua: std::mem::ManuallyDrop::new(lua),
            cx: std::mem::ManuallyDrop::new(cx),
        };
        if let Some(limit) = self.memory_limit {
            // The setup above ran without the limit: under it, a failed
            // allocation there would raise with no pcall to catch it.
            // Lua's own count (`collectgarbage('count')`): mlua's
            // `used_memory` no longer sees the blocks of the heap pool.
            let needed = heap_in_use(main);
            if needed > limit {
                return Err(Error::Lua(mlua::Error::MemoryError(format!(
                    "memory_limit({limit}): the runtime needs {needed} bytes of Lua heap at start"
                ))));
            }
            // SAFETY: `main` is the idle main state, which has allocated
            // `needed` bytes; the limit is set once.
            unsafe { memory::set_limit(main, needed, limit) };
        }
        Ok(rt)
    }
}

/// Makes what every layer keeps of the new state, once: registry refs of
/// the functions hot paths call, the metatables.
fn setup(s: &mut Stack) {
    crate::raw::error::init(s);
    crate::raw::report::init(s);
    cord::threads::init(s);
    crate::fiber::entry::init(s);
    crate::fiber::handlers::init(s);
    #[cfg(feature = "luajit")]
    crate::luajit::cstack::install(s);
    crate::modules::init(s);
    #[cfg(feature = "luajit")]
    tracing::debug!(
        active = crate::luajit::cstack::active(),
        "C stack check of lua_call and lua_pcall"
    );
}

/// The bytes the state of `main` has allocated (Lua's own count, whatever
/// allocator served them).
fn heap_in_use(main: *mut ffi::lua_State) -> usize {
    // SAFETY: `main` is an idle, valid state; these options only read the
    // collector's count.
    let (kib, rest) = unsafe {
        (
            ffi::lua_gc(main, ffi::LUA_GCCOUNT, 0),
            ffi::lua_gc(main, ffi::LUA_GCCOUNTB, 0),
        )
    };
    usize::try_from(kib).unwrap_or(0) * 1024 + usize::try_from(rest).unwrap_or(0)
}

/// Logs once per process that the Lua engine was built without
/// `-fstack-clash-protection` ([`STACK_CLASH_PROTECTION`](crate::STACK_CLASH_PROTECTION)).
fn warn_without_stack_clash_protection() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    if !crate::STACK_CLASH_PROTECTION {
        ONCE.call_once(|| {
            tracing::warn!(
                "the Lua engine was built without -fstack-clash-protection: a C frame \
                 larger than the 64 KiB stack guard could jump over it; build with \
                 CFLAGS=-fstack-clash-protection (see luafiber_lua::STACK_CLASH_PROTECTION)"
            );
        });
    }
}
