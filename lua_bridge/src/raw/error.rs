//! Error objects raised by the Lua modules, Tarantool style.
//!
//! An error object is a table `{type = KIND, message = MSG, file = F, line = N}`
//! with a shared metatable: `tostring(err)` and `err .. ''` give the message,
//! `err:unpack()` gives a plain copy of the fields and `err:raise()` raises it
//! again. `file` and `line` name the Lua code that called the failing
//! function (Tarantool's `trace`).

use std::cell::Cell;
use std::ffi::{c_int, CStr};

use mlua::ffi;

use super::{api, lua_fn, Raise, Stack};

thread_local! {
    /// Registry ref of the error objects' metatable in this thread's Lua
    /// state, made by [`init`].
    static ERROR_MT: Cell<c_int> = const { Cell::new(ffi::LUA_NOREF) };
}

/// Makes the error objects' metatable of `l`'s state (once per state, at
/// setup).
///
/// # Safety
///
/// `l` is a valid, idle state with room for 4 values.
pub unsafe fn init(l: *mut ffi::lua_State) {
    // SAFETY: caller's contract; the tables are fresh, so their fields are
    // set without metamethods, and the pushes are balanced.
    let r = unsafe {
        ffi::lua_createtable(l, 0, 3);
        ffi::lua_pushcfunction(l, error_tostring);
        ffi::lua_setfield(l, -2, c"__tostring".as_ptr());
        ffi::lua_pushcfunction(l, error_concat);
        ffi::lua_setfield(l, -2, c"__concat".as_ptr());
        ffi::lua_createtable(l, 0, 2);
        ffi::lua_pushcfunction(l, error_unpack);
        ffi::lua_setfield(l, -2, c"unpack".as_ptr());
        ffi::lua_pushcfunction(l, error_raise);
        ffi::lua_setfield(l, -2, c"raise".as_ptr());
        ffi::lua_setfield(l, -2, c"__index".as_ptr());
        ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX)
    };
    ERROR_MT.with(|m| m.set(r));
}

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
    #[allow(dead_code, reason = "for the modules that make system calls")]
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
        api::push_str(l, message);
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
        api::push_registry_ref(l, ERROR_MT.with(Cell::get));
        ffi::lua_setmetatable(l, -2);
    }
}

/// Whether the value at `idx` is an error object of `kind`.
///
/// # Safety
///
/// `l` is a valid state and `idx` a valid index.
#[allow(dead_code, reason = "its users are on their way")]
pub unsafe fn is_error_of(l: *mut ffi::lua_State, idx: c_int, kind: ErrorKind) -> bool {
    // SAFETY: caller's contract; the field read is popped again.
    unsafe {
        if ffi::lua_type(l, idx) != ffi::LUA_TTABLE {
            return false;
        }
        ffi::lua_getfield(l, idx, c"type".as_ptr());
        let same = api::to_str(l, -1) == Some(kind.name().to_bytes());
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

lua_fn! {
    /// `__tostring`: the message of an error object.
    fn error_tostring(s: &mut Stack) {
        let idx = if s.type_of(1) == ffi::LUA_TTABLE { 1 } else { 2 };
        push_message(s, idx);
        Ok(1)
    }
}

/// Pushes the `message` field of the error object at `idx` (raw), or
/// "unknown error" when it has no string there.
fn push_message(s: &mut Stack, idx: c_int) {
    if s.type_of(idx) != ffi::LUA_TTABLE || s.rawget_field(idx, c"message") != ffi::LUA_TSTRING {
        if s.type_of(idx) == ffi::LUA_TTABLE {
            s.pop(1);
        }
        s.push_cstr(c"unknown error");
    }
}

lua_fn! {
    /// `__concat`: `err .. x` and `x .. err` use the message.
    fn error_concat(s: &mut Stack) {
        for i in 1..=2 {
            match s.type_of(i) {
                ffi::LUA_TTABLE => push_message(s, i),
                ffi::LUA_TSTRING | ffi::LUA_TNUMBER => s.push_value(i),
                // No metamethod may run here (raw rule 2).
                t => s.push_cstr(type_name(t)),
            }
        }
        s.concat(2);
        Ok(1)
    }
}

/// The name of Lua type `t` (`lua_typename`).
fn type_name(t: c_int) -> &'static CStr {
    match t {
        ffi::LUA_TNIL => c"nil",
        ffi::LUA_TBOOLEAN => c"boolean",
        ffi::LUA_TLIGHTUSERDATA | ffi::LUA_TUSERDATA => c"userdata",
        ffi::LUA_TNUMBER => c"number",
        ffi::LUA_TSTRING => c"string",
        ffi::LUA_TTABLE => c"table",
        ffi::LUA_TFUNCTION => c"function",
        ffi::LUA_TTHREAD => c"thread",
        _ => c"cdata",
    }
}

lua_fn! {
    /// `err:unpack()`: a plain table with the fields of the error.
    fn error_unpack(s: &mut Stack) {
        if s.type_of(1) != ffi::LUA_TTABLE {
            return Err(Raise::illegal("Usage: error:unpack()"));
        }
        s.settop(1);
        let copy = s.new_table(0, 4);
        s.push_nil();
        // SAFETY: the key on top is nil, then the one `next` returned; the
        // loop assigns no key of table 1.
        while unsafe { s.next(1) } {
            s.push_value(-2);
            s.insert(-2);
            s.rawset(copy)?;
        }
        Ok(1)
    }
}

lua_fn! {
    /// `err:raise()`: raises the error object again.
    fn error_raise(s: &mut Stack) {
        s.settop(1);
        Err(Raise::Top)
    }
}
