//! Error objects raised by the Lua modules, Tarantool style.
//!
//! An error object is a table `{type = KIND, message = MSG, file = F, line = N}`
//! with a shared metatable: `tostring(err)` and `err .. ''` give the message,
//! `err:unpack()` gives a plain copy of the fields and `err:raise()` raises it
//! again. `file` and `line` name the Lua code that called the failing
//! function (Tarantool's `trace`).

use std::ffi::{c_int, CStr};

use mlua::ffi;

use crate::cfunc::Raise;
use crate::lua;

/// The kinds of error the modules raise (Tarantool's `box.error` types).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// A bad argument or a call that does not fit the object's state.
    IllegalParams,
    /// The fiber was cancelled (raised at cancellation points).
    FiberIsCancelled,
    /// A wait ran out of time.
    TimedOut,
    /// Memory could not be had (the Lua memory limit, or fiber stacks).
    OutOfMemory,
    /// A Rust panic caught at the Lua boundary.
    Panic,
    /// An error of the operating system.
    SystemError,
    /// Malformed data given to a decoder.
    DecodeError,
}

impl ErrorKind {
    /// The `type` field of the error object.
    pub fn name(self) -> &'static CStr {
        match self {
            ErrorKind::IllegalParams => c"IllegalParams",
            ErrorKind::FiberIsCancelled => c"FiberIsCancelled",
            ErrorKind::TimedOut => c"TimedOut",
            ErrorKind::OutOfMemory => c"OutOfMemory",
            ErrorKind::Panic => c"RustPanic",
            ErrorKind::SystemError => c"SystemError",
            ErrorKind::DecodeError => c"DecodeError",
        }
    }
}

/// Pushes the error `raise` describes (for [`Raise::Top`], leaves the top
/// value as it is).
///
/// # Safety
///
/// `l` is a valid state with room for 4 more values.
pub unsafe fn push_error(l: *mut ffi::lua_State, raise: Raise) {
    if let Raise::Error(kind, message) = raise {
        // SAFETY: caller's contract.
        unsafe { push_error_object(l, kind, &message) };
    }
}

/// Pushes a new error object of `kind` with `message`, located at the Lua
/// function that called the running C function.
///
/// # Safety
///
/// `l` is a valid state with room for 4 more values.
pub unsafe fn push_error_object(l: *mut ffi::lua_State, kind: ErrorKind, message: &str) {
    // SAFETY: caller's contract; every call below pushes or pops within it.
    unsafe {
        ffi::lua_createtable(l, 0, 4);
        ffi::lua_pushstring(l, kind.name().as_ptr());
        ffi::lua_setfield(l, -2, c"type".as_ptr());
        lua::push_str(l, message);
        ffi::lua_setfield(l, -2, c"message".as_ptr());
        let mut ar: ffi::lua_Debug = std::mem::zeroed();
        if ffi::lua_getstack(l, 1, &mut ar) != 0
            && ffi::lua_getinfo(l, c"Sl".as_ptr(), &mut ar) != 0
            && ar.currentline > 0
        {
            let src = CStr::from_ptr(ar.short_src.as_ptr());
            ffi::lua_pushstring(l, src.as_ptr());
            ffi::lua_setfield(l, -2, c"file".as_ptr());
            ffi::lua_pushinteger(l, ar.currentline as ffi::lua_Integer);
            ffi::lua_setfield(l, -2, c"line".as_ptr());
        }
        lua::push_registry_ref(l, crate::cord::error_mt_ref());
        ffi::lua_setmetatable(l, -2);
    }
}

/// Whether the value at `idx` is an error object of `kind`.
///
/// # Safety
///
/// `l` is a valid state and `idx` a valid index.
pub unsafe fn is_error_of(l: *mut ffi::lua_State, idx: c_int, kind: ErrorKind) -> bool {
    // SAFETY: caller's contract; the field read is popped again.
    unsafe {
        if ffi::lua_type(l, idx) != ffi::LUA_TTABLE {
            return false;
        }
        ffi::lua_getfield(l, idx, c"type".as_ptr());
        let same = lua::to_str(l, -1) == Some(kind.name().to_bytes());
        ffi::lua_pop(l, 1);
        same
    }
}

/// Maps an error of the fiber layer to the error object Tarantool raises.
pub fn from_fiber(e: luafiber_fiber::Error) -> Raise {
    use luafiber_fiber::Error as E;
    let kind = match e {
        E::Cancelled => ErrorKind::FiberIsCancelled,
        E::TimedOut => ErrorKind::TimedOut,
        E::Stack(_) => ErrorKind::OutOfMemory,
        _ => ErrorKind::IllegalParams,
    };
    Raise::Error(kind, e.to_string())
}

crate::lua_fn! {
    /// `__tostring` and `__concat` helper: the message of an error object.
    pub(crate) fn error_tostring(l) {
        // SAFETY: called by Lua with its arguments on `l`.
        unsafe {
            let idx = if ffi::lua_type(l, 1) == ffi::LUA_TTABLE { 1 } else { 2 };
            ffi::lua_getfield(l, idx, c"message".as_ptr());
            if ffi::lua_type(l, -1) != ffi::LUA_TSTRING {
                ffi::lua_pop(l, 1);
                ffi::lua_pushstring(l, c"unknown error".as_ptr());
            }
        }
        Ok(1)
    }
}

crate::lua_fn! {
    /// `__concat`: `err .. x` and `x .. err` use the message.
    pub(crate) fn error_concat(l) {
        // SAFETY: called by Lua with two arguments on `l`.
        unsafe {
            for i in 1..=2 {
                if ffi::lua_type(l, i) == ffi::LUA_TTABLE {
                    ffi::lua_getfield(l, i, c"message".as_ptr());
                } else if matches!(ffi::lua_type(l, i), ffi::LUA_TSTRING | ffi::LUA_TNUMBER) {
                    ffi::lua_pushvalue(l, i);
                } else {
                    // No metamethod may run here (cfunc rule 2).
                    ffi::lua_pushstring(l, ffi::lua_typename(l, ffi::lua_type(l, i)));
                }
            }
            ffi::lua_concat(l, 2);
        }
        Ok(1)
    }
}

crate::lua_fn! {
    /// `err:unpack()`: a plain table with the fields of the error.
    pub(crate) fn error_unpack(l) {
        // SAFETY: called by Lua with the error object at 1.
        unsafe {
            if ffi::lua_type(l, 1) != ffi::LUA_TTABLE {
                return Err(Raise::illegal("Usage: error:unpack()"));
            }
            ffi::lua_createtable(l, 0, 4);
            ffi::lua_pushnil(l);
            while ffi::lua_next(l, 1) != 0 {
                ffi::lua_pushvalue(l, -2);
                ffi::lua_insert(l, -2);
                ffi::lua_settable(l, -4);
            }
        }
        Ok(1)
    }
}

crate::lua_fn! {
    /// `err:raise()`: raises the error object again.
    pub(crate) fn error_raise(l) {
        // SAFETY: called by Lua with the error object at 1.
        unsafe { ffi::lua_settop(l, 1) };
        Err(Raise::Top)
    }
}
