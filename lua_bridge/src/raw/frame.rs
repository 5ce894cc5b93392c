//! The frame every Lua-callable C function of the bridge runs in: raw
//! rules 1 and 2 (see [`raw`](super)). [`lua_fn!`] declares a C function
//! whose body runs in it; the body gets the call's [`Stack`]. The C module
//! API's functions run in the same frame, made by [`protect_c`].

use std::ffi::c_int;
use std::panic::{self, AssertUnwindSafe};

use mlua::ffi;

use super::error::{push_raise, ErrorKind};
use super::memory::Exempt;
use super::Stack;

/// An error a C function body asks [`protect`] to raise.
#[derive(Debug)]
pub enum Raise {
    /// Raise an error object of this kind with this message.
    Error(ErrorKind, String),
    /// Raise the value on top of the Lua stack as it is.
    Top,
    /// Raise this string, as Tarantool's `luaL_error` does (for the
    /// functions whose Tarantool errors are strings).
    Message(String),
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
/// result (a `lua_CFunction`'s result count), or raises its error (raw
/// rules 1 and 2).
///
/// # Safety
///
/// `l` must be the state the C function was called with; `protect` must be
/// the last thing the C function does.
#[inline(always)]
pub unsafe fn protect<R>(l: *mut ffi::lua_State, body: impl FnOnce() -> LResult<R>) -> R {
    let failed = match panic::catch_unwind(AssertUnwindSafe(|| {
        // Allocations inside the body never fail on the memory limit (raw
        // rule 3): a Lua error must not cross catch_unwind.
        let _exempt = Exempt::enter();
        body()
    })) {
        Ok(Ok(n)) => return n,
        Ok(Err(e)) => Ok(e),
        Err(payload) => Err(payload),
    };
    // SAFETY: `l` is the calling state and this is the last thing the C
    // function does (contract).
    unsafe { raise(l, failed) }
}

/// [`protect`] for a body that works through the call's [`Stack`], made
/// here once.
///
/// # Safety
///
/// As [`protect`].
#[inline(always)]
pub unsafe fn protect_stack(
    l: *mut ffi::lua_State,
    body: impl FnOnce(&mut Stack) -> LResult,
) -> c_int {
    // SAFETY: caller's contract: `l` is the state of the running C
    // function, and the handle is the only user of its stack until the body
    // returns.
    unsafe { protect(l, || body(&mut Stack::from_frame(l))) }
}

/// [`protect_stack`] for a function of the C module API, which C code
/// calls with `l` (a C module's function, or C code on `luaT_state()`):
/// the body's handle assumes no free slot (that C code may have used those
/// its own function was given), its result is the function's, whatever
/// its type, and its error (or panic) is raised as a frame's is.
///
/// # Safety
///
/// `l` is a valid state that the calling C code waits on (nothing else
/// uses its stack until this returns), where a Lua error may be raised
/// (the caller runs under `lua_pcall`, or is a C function Lua called);
/// `protect_c` is the last thing the caller does.
#[inline(always)]
pub unsafe fn protect_c<R>(
    l: *mut ffi::lua_State,
    body: impl FnOnce(&mut Stack) -> LResult<R>,
) -> R {
    // SAFETY: caller's contract: a valid state whose stack only this
    // handle uses until the body returns, where an error may be raised,
    // and this is the last thing the caller does (as `protect`'s).
    unsafe { protect(l, || body(&mut Stack::from_state(l))) }
}

/// The message of a panic caught with `catch_unwind` (its `&str` or
/// `String` payload), or "unknown panic".
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
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
            let msg = panic_message(&*payload);
            Raise::Error(ErrorKind::Panic, format!("Rust panic: {msg}"))
        }
    };
    // SAFETY: `l` is the calling state, and the body is done with its
    // stack (contract); the handle assumes no free slot (a body may have
    // used them all); `push_raise` consumes `raise` and drops every Rust
    // value it made before returning; `lua_error` never returns.
    unsafe {
        {
            // The error object is made by Rust code (raw rule 3).
            let _exempt = Exempt::enter();
            push_raise(&mut Stack::from_state(l), raise);
        }
        ffi::lua_error(l)
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
///
/// `fn name(s: &mut Stack) { ... }`: the body gets the call's [`Stack`].
macro_rules! lua_fn {
    ($(#[$m:meta])* $vis:vis fn $name:ident($s:ident: &mut Stack) $body:block) => {
        $(#[$m])*
        #[allow(non_upper_case_globals)]
        $vis const $name: mlua::ffi::lua_CFunction = {
            /// # Safety
            ///
            /// Lua calls it as a C function with `l`.
            unsafe extern "C-unwind" fn $name(l: *mut mlua::ffi::lua_State) -> isize {
                let body = |$s: &mut $crate::raw::Stack<'_>| -> $crate::raw::LResult { $body };
                // SAFETY: called by Lua with its own state; `protect_stack`
                // is the last thing this function does.
                unsafe { $crate::raw::frame::protect_stack(l, body) as isize }
            }
            $crate::raw::frame::cfunction($name)
        };
    };
}
pub(crate) use lua_fn;

/// A C function written as `unsafe extern "C-unwind" fn(l) -> c_int` (not
/// under [`protect`]), as the `lua_CFunction` to give Lua: widened to a
/// [`WideCFunction`].
macro_rules! wide_cfn {
    ($f:path) => {{
        /// # Safety
        ///
        /// That of `$f`.
        unsafe extern "C-unwind" fn wide(l: *mut mlua::ffi::lua_State) -> isize {
            // SAFETY: the same contract as `$f`, which Lua calls through this.
            unsafe { $f(l) as isize }
        }
        $crate::raw::frame::cfunction(wide)
    }};
}
pub(crate) use wide_cfn;
