//! The frame every Lua-callable C function of the bridge runs in.
//!
//! Rules (DESIGN.md, "Hard rules"):
//!
//! 1. No Rust panic crosses a Lua frame: the body runs under `catch_unwind`,
//!    and a panic becomes a Lua error.
//! 2. No Lua error crosses a Rust frame that owns something: the body returns
//!    [`Raise`] instead of raising, and [`protect`] calls `lua_error` only
//!    after the body and every value it owned are dropped.

use std::ffi::c_int;
use std::panic::{self, AssertUnwindSafe};

use mlua::ffi;

use crate::error::{push_error, ErrorKind};

/// An error a C function body asks [`protect`] to raise.
#[derive(Debug)]
pub enum Raise {
    /// Raise an error object of this kind with this message.
    Error(ErrorKind, String),
    /// Raise the value on top of the Lua stack as it is.
    Top,
}

impl Raise {
    /// An `IllegalParams` error object with `msg`.
    pub fn illegal(msg: impl Into<String>) -> Raise {
        Raise::Error(ErrorKind::IllegalParams, msg.into())
    }
}

/// What a C function body returns: the number of results it pushed.
pub type LResult<T = c_int> = Result<T, Raise>;

/// Runs `body` as the body of a `lua_CFunction` called on `l`: returns its
/// result count, or raises its error (rules 1 and 2).
///
/// # Safety
///
/// `l` must be the state the C function was called with; `protect` must be
/// the last thing the C function does.
#[inline(always)]
pub unsafe fn protect(l: *mut ffi::lua_State, body: impl FnOnce() -> LResult) -> c_int {
    match panic::catch_unwind(AssertUnwindSafe(|| {
        // Allocations inside the body never fail on the memory limit (see
        // `memory`): a Lua error must not cross catch_unwind.
        let _exempt = Exempt::enter();
        body()
    })) {
        Ok(Ok(n)) => n,
        // SAFETY: `l` is the calling state and this is the last thing the
        // C function does (contract).
        Ok(Err(e)) => unsafe { raise(l, Ok(e)) },
        // SAFETY: as above.
        Err(payload) => unsafe { raise(l, Err(payload)) },
    }
}

/// The failure half of [`protect`], out of line so that the success path
/// stays short: raises the body's error, or the message of its panic.
///
/// # Safety
///
/// As [`protect`].
#[cold]
#[inline(never)]
unsafe fn raise(l: *mut ffi::lua_State, failed: std::thread::Result<Raise>) -> ! {
    let raise = match failed {
        Ok(raise) => raise,
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Raise::Error(ErrorKind::Panic, format!("Rust panic: {msg}"))
        }
    };
    // SAFETY: `l` is the calling state (contract); `push_error` consumes
    // `raise` and drops every Rust value it made before returning.
    unsafe {
        push_error(l, raise);
        ffi::lua_error(l)
    }
}

/// Counts a bridge C function frame in the running fiber's word while it
/// lives, on a thread with a memory limit (`memory`, the word's only
/// reader); elsewhere it costs one thread-local read, not a call to the
/// fiber layer's.
struct Exempt(Option<usize>);

impl Exempt {
    #[inline(always)]
    fn enter() -> Exempt {
        if !crate::memory::limited() {
            return Exempt(None);
        }
        let depth = luafiber_fiber::fiber_word();
        luafiber_fiber::set_fiber_word(depth + 1);
        Exempt(Some(depth))
    }
}

impl Drop for Exempt {
    #[inline(always)]
    fn drop(&mut self) {
        if let Some(depth) = self.0 {
            luafiber_fiber::set_fiber_word(depth);
        }
    }
}

/// What the bridge's C functions really are: a `lua_CFunction` whose result
/// count comes back in a whole register.
///
/// LuaJIT's x64 interpreter reads the count of a C function with all 64 bits
/// of `rax` (`BC_FUNCC` in `vm_x64.dasc`: `lea RA, [BASE+RD*8]`), but the
/// x86-64 ABI leaves the upper half of an `int` result undefined, and rustc
/// does leave garbage there (e.g. when it loads the `c_int` out of an
/// `Ok(Ok(n))` with one 64-bit move): the interpreter then copies the
/// results from a wild offset and crashes in `lj_BC_RET`/`lj_vm_returnp`.
/// Returning `isize` makes the whole register the count, which is what the
/// interpreter reads and is still a valid `int` for C callers.
pub type WideCFunction = unsafe extern "C-unwind" fn(*mut ffi::lua_State) -> isize;

/// `f` as the `lua_CFunction` Lua is given.
pub const fn cfunction(f: WideCFunction) -> ffi::lua_CFunction {
    // SAFETY: only Lua calls the result (never Rust code through this type):
    // LuaJIT's interpreter reads all of the result register and C reads its
    // low `int`, which holds the same value; the argument is the same.
    unsafe { std::mem::transmute::<WideCFunction, ffi::lua_CFunction>(f) }
}

/// Declares `$name`, a `lua_CFunction` whose body runs under [`protect`]
/// (a [`WideCFunction`], see there).
#[macro_export]
#[doc(hidden)]
macro_rules! lua_fn {
    ($(#[$m:meta])* $vis:vis fn $name:ident($l:ident) $body:block) => {
        $(#[$m])*
        #[allow(non_upper_case_globals)]
        $vis const $name: mlua::ffi::lua_CFunction = {
            unsafe extern "C-unwind" fn $name($l: *mut mlua::ffi::lua_State) -> isize {
                let body = || $body;
                // SAFETY: called by Lua with its own state; `protect` is the
                // last thing this function does.
                unsafe { $crate::cfunc::protect($l, body) as isize }
            }
            $crate::cfunc::cfunction($name)
        };
    };
}

/// A C function written as `unsafe extern "C-unwind" fn(l) -> c_int` (not
/// under [`protect`]), as the `lua_CFunction` to give Lua: widened to a
/// [`WideCFunction`].
#[macro_export]
#[doc(hidden)]
macro_rules! wide_cfn {
    ($f:path) => {{
        unsafe extern "C-unwind" fn wide(l: *mut mlua::ffi::lua_State) -> isize {
            // SAFETY: the same contract as `$f`, which Lua calls through this.
            unsafe { $f(l) as isize }
        }
        $crate::cfunc::cfunction(wide)
    }};
}
