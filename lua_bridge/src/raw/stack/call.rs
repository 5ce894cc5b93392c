//! What a [`Stack`] does beyond reading and pushing values: protected
//! calls, compiling chunks, registry refs, moving values between threads,
//! and the questions about its state (main thread, collector).

use std::ffi::{c_int, CStr};

use mlua::ffi;

use super::Stack;

impl Stack<'_> {
    /// Calls the function below the `nargs` values on top with them, in
    /// protected mode: `Ok` with `nresults` results (all of them for
    /// `LUA_MULTRET`) in their place, or `Err` with the error value there.
    ///
    /// The function may run any Lua code, which may switch fibers.
    ///
    /// # Panics
    ///
    /// Panics when fewer than `nargs + 1` values are on the stack.
    pub fn pcall(&mut self, nargs: c_int, nresults: c_int) -> Result<(), ()> {
        match self.pcall_with(nargs, nresults, 0) {
            0 => Ok(()),
            _ => Err(()),
        }
    }

    /// [`Stack::pcall`] with the message handler at `handler` (an absolute
    /// index, 0 for none); returns `lua_pcall`'s status (0: success).
    ///
    /// # Panics
    ///
    /// Panics when fewer than `nargs + 1` values are on the stack, or
    /// `handler` is not below them.
    pub fn pcall_with(&mut self, nargs: c_int, nresults: c_int, handler: c_int) -> c_int {
        // SAFETY: `lua_pcall` itself, on the arguments `pcall_through`
        // checked (raw rule 2).
        unsafe {
            self.pcall_through(
                |l, nargs, nresults, handler| ffi::lua_pcall(l, nargs, nresults, handler),
                nargs,
                nresults,
                handler,
            )
        }
    }

    /// [`Stack::pcall_with`] through `pcall`, a call with `lua_pcall`'s
    /// arguments, contract and results (for a caller that knows which of the engine's
    /// entries it wants, e.g. one without the C stack check).
    ///
    /// # Safety
    ///
    /// `pcall` behaves as `lua_pcall` does on this state.
    ///
    /// # Panics
    ///
    /// As [`Stack::pcall_with`].
    #[inline(always)]
    pub unsafe fn pcall_through(
        &mut self,
        pcall: impl FnOnce(*mut ffi::lua_State, c_int, c_int, c_int) -> c_int,
        nargs: c_int,
        nresults: c_int,
        handler: c_int,
    ) -> c_int {
        let top = self.t();
        assert!(nargs >= 0 && nargs < top, "pcall: {nargs} arguments");
        assert!(
            (0..top - nargs).contains(&handler),
            "pcall: handler at {handler}"
        );
        // A function and its arguments on top, a handler below them (or
        // none): what `pcall`, which is lua_pcall (contract), catches every
        // Lua error of (raw rule 2).
        let rc = pcall(self.l, nargs, nresults, handler);
        // The top is read again when needed; the room above it is unknown
        // after Lua code ran (a collection may shrink the stack).
        self.top.set(-1);
        self.room = 0;
        rc
    }

    /// Pops the top value into the registry; returns its ref
    /// (`luaL_ref`; `LUA_REFNIL` for nil).
    ///
    /// # Panics
    ///
    /// Panics when the stack is empty.
    pub fn make_ref(&mut self) -> c_int {
        assert!(self.has(1), "make_ref: no value");
        self.bump(-1);
        self.room += 1;
        // SAFETY: a value on top; the registry is a table.
        unsafe { ffi::luaL_ref(self.l, ffi::LUA_REGISTRYINDEX) }
    }

    /// Compiles `chunk` (named `name`, e.g. `=probe`) and pushes it as a
    /// function, or pushes the compiler's message and returns `Err`.
    pub fn load(&mut self, chunk: &str, name: &CStr) -> Result<(), ()> {
        self.slot();
        // SAFETY: a free slot; the chunk is `chunk.len()` bytes; compiling
        // runs no Lua code.
        let rc = unsafe {
            ffi::luaL_loadbuffer(self.l, chunk.as_ptr().cast(), chunk.len(), name.as_ptr())
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(())
        }
    }

    /// Whether this stack is its state's main thread.
    pub fn is_main_thread(&mut self) -> bool {
        if self.room < 1 {
            self.grow();
        }
        // SAFETY: a free slot for the thread, popped at once.
        unsafe {
            let main = ffi::lua_pushthread(self.l) == 1;
            ffi::lua_settop(self.l, -2);
            main
        }
    }

    /// Whether the state's collector may run now: false inside a `__gc`
    /// finalizer (and, on LuaJIT, after `collectgarbage("stop")`).
    #[inline]
    pub fn gc_may_run(&self) -> bool {
        // LuaJIT stops GC steps while a finalizer runs (and after "stop");
        // Lua 5.4's `lua_gc` returns -1 while a finalizer runs (a stopped
        // collector is not reported: the cord's flag stays false there).
        #[cfg(feature = "luajit")]
        let (what, running) = (crate::raw::LUA_GCISRUNNING, |r: c_int| r != 0);
        #[cfg(not(feature = "luajit"))]
        let (what, running) = (ffi::LUA_GCCOUNT, |r: c_int| r >= 0);
        // SAFETY: `l` is valid; either call only reads the GC state.
        running(unsafe { ffi::lua_gc(self.l, what, 0) })
    }

    /// The thread at `idx`, or null.
    pub fn to_thread(&self, idx: c_int) -> *mut ffi::lua_State {
        self.read(idx, ffi::lua_tothread)
            .unwrap_or(std::ptr::null_mut())
    }

    /// Releases the registry ref `r` (`luaL_unref`; nothing for `LUA_NOREF`
    /// and `LUA_REFNIL`).
    pub fn unref(&mut self, r: c_int) {
        if r == ffi::LUA_NOREF || r == ffi::LUA_REFNIL {
            return;
        }
        if self.room < 1 {
            self.grow();
        }
        // SAFETY: a free slot for `luaL_unref`'s own use; it does not
        // allocate (the registry slot exists).
        unsafe { ffi::luaL_unref(self.l, ffi::LUA_REGISTRYINDEX, r) }
    }

    /// Moves the `n` values on top to the thread `to`.
    ///
    /// # Safety
    ///
    /// `to` is another thread of the same state, with room for `n` values,
    /// and nothing else uses its stack meanwhile.
    ///
    /// # Panics
    ///
    /// Panics when fewer than `n` values are on the stack.
    pub unsafe fn xmove_to(&mut self, to: *mut ffi::lua_State, n: c_int) {
        assert!((0..=self.t()).contains(&n), "xmove_to: {n} values");
        self.bump(-n);
        self.room += n;
        // SAFETY: caller's contract; `n` values on this stack.
        unsafe { ffi::lua_xmove(self.l, to, n) }
    }

    /// Moves the `n` values on top of the thread `from` here.
    ///
    /// # Safety
    ///
    /// `from` is another thread of the same state with at least `n` values,
    /// and nothing else uses its stack meanwhile.
    ///
    /// # Panics
    ///
    /// Panics when this stack cannot take `n` more values.
    pub unsafe fn xmove_from(&mut self, from: *mut ffi::lua_State, n: c_int) {
        if self.ensure(n).is_err() {
            panic!("the Lua stack is full");
        }
        self.bump(n);
        self.room -= n;
        // SAFETY: caller's contract; room for `n` values here.
        unsafe { ffi::lua_xmove(from, self.l, n) }
    }

    /// Runs `chunk` (named `name`) once, at setup, with the arguments
    /// `args` pushes (returning their count), dropping its results, and
    /// sets the top back. A chunk that fails to load or raises changes
    /// nothing more than it did before failing, so setup goes on with what
    /// was there.
    pub fn run_setup_chunk(
        &mut self,
        chunk: &str,
        name: &CStr,
        args: impl FnOnce(&mut Self) -> c_int,
    ) {
        let top = self.t();
        if self.load(chunk, name).is_ok() {
            let n = args(self);
            let _ = self.pcall(n, 0);
        }
        self.settop(top);
    }

    /// Compiles the file at `path` (stdin for `None`) and pushes it as a
    /// function, or pushes the message and returns `Err`.
    pub fn load_file(&mut self, path: Option<&CStr>) -> Result<(), ()> {
        self.slot();
        let path = path.map_or(std::ptr::null(), CStr::as_ptr);
        // SAFETY: a free slot; a null path reads stdin; compiling runs no
        // Lua code.
        if unsafe { ffi::luaL_loadfile(self.l, path) } == 0 {
            Ok(())
        } else {
            Err(())
        }
    }

    /// A printable form of the value at `idx` that runs no metamethod other
    /// than an error object's message (read raw).
    pub fn describe(&mut self, idx: c_int) -> String {
        let idx = self.abs(idx);
        match self.type_of(idx) {
            ffi::LUA_TSTRING | ffi::LUA_TNUMBER => {
                let s = self.coerce_str(idx).unwrap_or_default();
                String::from_utf8_lossy(s).into_owned()
            }
            ffi::LUA_TTABLE => {
                self.rawget_field(idx, c"message");
                let s = self
                    .to_str(-1)
                    .map(|b| String::from_utf8_lossy(b).into_owned());
                self.pop(1);
                s.unwrap_or_else(|| format!("table: {:p}", self.to_pointer(idx)))
            }
            ffi::LUA_TNIL => "nil".into(),
            t => format!(
                "{}: {:p}",
                crate::raw::error::type_name(t).to_string_lossy(),
                self.to_pointer(idx)
            ),
        }
    }

    /// The text of the error value at `idx`: what `tostring` gives when the
    /// value has a `__tostring` metamethod (as `lua` and Tarantool print
    /// it), else [`Stack::describe`]'s (the message of an error object).
    /// The metamethod runs under [`Stack::pcall`] (so it may run any Lua
    /// code), with the memory limit in force; when it fails or gives no string, the value is described as
    /// if it had none. The stack is left as it was.
    pub fn describe_tostring(&mut self, idx: c_int) -> String {
        let idx = self.abs(idx);
        let t = self.type_of(idx);
        if t != ffi::LUA_TSTRING && t != ffi::LUA_TNUMBER && self.get_metatable(idx) {
            let mt = self.top();
            if self.rawget_field(mt, c"__tostring") != ffi::LUA_TNIL {
                self.push_value(idx);
                // The metamethod is Lua code: under the memory limit even
                // where the caller is exempt (its failure is caught here).
                let text = match crate::raw::memory::with_limit(|| self.pcall(1, 1)) {
                    Ok(()) => self
                        .to_str(-1)
                        .map(|b| String::from_utf8_lossy(b).into_owned()),
                    Err(()) => None,
                };
                self.settop(mt - 1);
                if let Some(text) = text {
                    return text;
                }
            } else {
                self.settop(mt - 1);
            }
        }
        self.describe(idx)
    }
}

impl Stack<'_> {
    /// Clears the debug hook (`lua_sethook` with none): the state's on
    /// LuaJIT, this thread's on Lua 5.4.
    pub fn clear_hook(&mut self) {
        // SAFETY: `l` is valid; clearing a hook only stores the hook
        // fields and does not raise.
        unsafe { ffi::lua_sethook(self.l, None, 0, 0) };
    }
}
