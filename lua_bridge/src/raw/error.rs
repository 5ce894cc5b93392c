//! Error objects raised by the Lua modules, Tarantool style.
//!
//! An error object is a table `{type = KIND, message = MSG, file = F, line = N}`
//! (and `code`, `prev`, `errno` and payload fields where they apply) with a
//! shared metatable: `tostring(err)` and `err .. ''` give the message,
//! and so do the serializers (`__serialize`: json, msgpack, the console and
//! IPROTO replies), as master's `error_serialize` in `src/lua/error.lua`
//! (without `box_error_serialize_verbose`); the `threads` module sends the
//! fields between cords ([`push_plain`]). `file` and `line` name the Lua
//! code that called the failing function; `err.trace` reads them as
//! Tarantool's `{{file = F, line = N}}` (`{}` without them), and
//! `err.base_type` is the type (or `CustomError` for a `box.error` of a
//! custom type); a payload field missing from the error is read from its
//! `prev` chain. Methods, as master's `error.lua`: `err:unpack()` (a plain
//! table of the fields, `trace` instead of `file` and `line`, `base_type`),
//! `err:raise()` (raises the same object again), `err:match(pattern)`
//! (`string.match` on the message), `err:set_prev(prev)` (an error object
//! or nil; cycles refused). `box.error` makes and raises these objects:
//! `type(err)` is `'table'` where Tarantool's is a `struct error` cdata.

use std::ffi::{c_int, CStr};

use mlua::ffi;

use super::context::{Part, RegRef};
use super::{lua_fn, LResult, Raise, Stack};

/// Per-cord state of the error objects (a part of the cord context):
/// registry ref of their metatable in the cord's Lua state, made by
/// [`init`].
#[derive(Default)]
pub(crate) struct ErrorMt(RegRef);

/// Makes the error objects' metatable of `s`'s state (once per state, at
/// setup).
pub fn init(s: &mut Stack) {
    let mt = s.new_table(0, 4);
    s.set_funcs(
        mt,
        &[
            (c"__tostring", error_tostring),
            (c"__concat", error_concat),
            (c"__serialize", error_tostring),
        ],
    );
    let methods = s.new_table(0, 4);
    s.set_funcs(
        methods,
        &[
            (c"unpack", error_unpack),
            (c"raise", error_raise),
            (c"match", error_match),
            (c"set_prev", error_set_prev),
        ],
    );
    s.push_closure(error_index, 1);
    s.set_field(mt, c"__index");
    ErrorMt::with(|m| m.0.set(s.make_ref()));
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
    /// A fiber ran past its slice without yielding (Tarantool's
    /// `FiberSliceIsExceeded`).
    FiberSliceIsExceeded,
    /// Malformed MsgPack found by a check (Tarantool's `ClientError`
    /// `ER_INVALID_MSGPACK`).
    ClientError,
    /// A cipher refused its key, IV or data (Tarantool's `CryptoError`).
    CryptoError,
    /// The object waited on was closed meanwhile (Tarantool's
    /// `ChannelIsClosed`, which `popen`'s `ph:wait()` returns too).
    ChannelIsClosed,
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
            ErrorKind::FiberSliceIsExceeded => c"FiberSliceIsExceeded",
            ErrorKind::ClientError => c"ClientError",
            ErrorKind::CryptoError => c"CryptoError",
            ErrorKind::ChannelIsClosed => c"ChannelIsClosed",
        }
    }
}

/// Pushes the error `raise` describes (for [`Raise::Top`], leaves the top
/// value as it is).
pub fn push_raise(s: &mut Stack, raise: Raise) {
    match raise {
        Raise::Error(kind, message) => push(s, kind, &message),
        Raise::Message(message) => s.push_str(&message),
        Raise::Top => {}
    }
}

/// Pushes a new error object of `kind` with `message`, located at the Lua
/// function that called the running C function.
pub fn push(s: &mut Stack, kind: ErrorKind, message: &str) {
    let t = s.new_table(0, 4);
    s.push_cstr(kind.name());
    s.set_field(t, c"type");
    s.push_str(message);
    s.set_field(t, c"message");
    if let Some((src, line)) = caller(s) {
        s.push_bytes(src.to_bytes());
        s.set_field(t, c"file");
        s.push_int(line);
        s.set_field(t, c"line");
    }
    s.push_ref(ErrorMt::try_with(|m| m.0.get()).unwrap_or(ffi::LUA_NOREF));
    s.set_metatable(t);
}

/// `"SOURCE:LINE: "` of the Lua function that called the running C
/// function, or `""` when it is not a Lua function: the prefix
/// `luaL_error` (and Lua's `error(msg, 2)` in a Lua function) puts before a
/// message.
pub fn location(s: &Stack) -> String {
    match caller(s) {
        Some((src, line)) => format!("{}:{line}: ", src.to_string_lossy()),
        None => String::new(),
    }
}

/// `luaL_error`'s string: `msg` after the position of the Lua code that
/// called the running C function (`luaL_where(L, 1)`: "chunk:line: ", or
/// nothing when its caller is no Lua function, e.g. after a tail call).
pub fn located(s: &Stack, msg: &str) -> Raise {
    Raise::Message(format!("{}{msg}", location(s)))
}

/// Pushes a new error object of type `ty` with a box error `code` and
/// `message` (a remote error of net.box keeps the server's type, code and
/// message), located as [`push`] locates it.
pub fn push_coded(s: &mut Stack, ty: &[u8], code: u32, message: &[u8]) {
    let t = s.new_table(0, 5);
    s.push_bytes(ty);
    s.set_field(t, c"type");
    s.push_int(code.into());
    s.set_field(t, c"code");
    s.push_bytes(message);
    s.set_field(t, c"message");
    if let Some((src, line)) = caller(s) {
        s.push_bytes(src.to_bytes());
        s.set_field(t, c"file");
        s.push_int(line);
        s.set_field(t, c"line");
    }
    s.push_ref(ErrorMt::try_with(|m| m.0.get()).unwrap_or(ffi::LUA_NOREF));
    s.set_metatable(t);
}

/// The source and line of the Lua function that called the running C
/// function (Tarantool's `trace`), if it is a Lua function.
fn caller(s: &Stack) -> Option<(std::ffi::CString, i64)> {
    // SAFETY: all-zero is a valid `lua_Debug` (integers and null pointers);
    // `l` is valid; `lua_getstack` and `lua_getinfo` with "Sl" fill `ar`
    // from the call stack and push nothing; `short_src` is a NUL-terminated
    // buffer inside `ar`.
    unsafe {
        let mut ar: ffi::lua_Debug = std::mem::zeroed();
        let l = s.as_ptr();
        let found = ffi::lua_getstack(l, 1, &mut ar) != 0
            && ffi::lua_getinfo(l, c"Sl".as_ptr(), &mut ar) != 0
            && ar.currentline > 0;
        found.then(|| {
            (
                CStr::from_ptr(ar.short_src.as_ptr()).to_owned(),
                i64::from(ar.currentline),
            )
        })
    }
}

/// Whether the value at `idx` is an error object of `kind`.
pub fn is_error_of(s: &mut Stack, idx: c_int, kind: ErrorKind) -> bool {
    if s.type_of(idx) != ffi::LUA_TTABLE {
        return false;
    }
    s.rawget_field(idx, c"type");
    let same = s.to_str(-1) == Some(kind.name().to_bytes());
    s.pop(1);
    same
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
pub fn type_name(t: c_int) -> &'static CStr {
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
    /// `err:unpack()`: a plain table with the fields of the error, as
    /// master's (with its default `compat.box_error_unpack_type_and_code =
    /// 'old'`): `trace` in place of `file` and `line`, and `base_type`.
    fn error_unpack(s: &mut Stack) {
        if !is_error(s, 1) {
            return Err(Raise::illegal("Usage: error:unpack()"));
        }
        s.settop(1);
        s.ensure(8)?;
        let copy = s.new_table(0, 6);
        s.push_nil();
        while s.next_checked(1)? {
            if matches!(s.to_str(-2), Some(b"file" | b"line")) {
                s.pop(1);
                continue;
            }
            s.push_value(-2);
            s.insert(-2);
            s.rawset(copy)?;
        }
        push_trace(s, 1);
        s.set_field(copy, c"trace");
        if s.rawget_field(copy, c"base_type") == ffi::LUA_TNIL {
            s.pop(1);
            s.rawget_field(1, c"type");
            s.set_field(copy, c"base_type");
        } else {
            s.pop(1);
        }
        s.settop(copy);
        Ok(1)
    }
}

/// Whether the value at `idx` is an error object (has the shared
/// metatable).
pub fn is_error(s: &mut Stack, idx: c_int) -> bool {
    if s.type_of(idx) != ffi::LUA_TTABLE || !s.get_metatable(idx) {
        return false;
    }
    let mt = s.top();
    s.push_ref(ErrorMt::try_with(|m| m.0.get()).unwrap_or(ffi::LUA_NOREF));
    let same = s.to_pointer(-1) == s.to_pointer(mt);
    s.pop(2);
    same
}

/// Pushes a copy of the error object at `idx` without the metatable (and
/// its `prev` chain likewise), so that a serializer writes its fields
/// rather than its message: what crosses cords for it.
pub fn push_plain(s: &mut Stack, idx: c_int) -> LResult<()> {
    let idx = s.abs(idx);
    s.ensure(6)?;
    let copy = s.new_table(0, 8);
    s.push_nil();
    while s.next_checked(idx)? {
        if is_error(s, -1) {
            push_plain(s, -1)?;
            s.replace(-2);
        }
        s.push_value(-2);
        s.insert(-2);
        s.rawset(copy)?;
    }
    Ok(())
}

/// Pushes Tarantool's `trace` of the error object at `idx`: `{{file = F,
/// line = N}}`, or `{}` when it has no place.
fn push_trace(s: &mut Stack, idx: c_int) {
    let idx = s.abs(idx);
    let t = s.new_table(1, 0);
    if s.rawget_field(idx, c"file") == ffi::LUA_TSTRING {
        let frame = s.new_table(0, 2);
        s.push_value(-2);
        s.set_field(frame, c"file");
        s.rawget_field(idx, c"line");
        s.set_field(frame, c"line");
        s.rawseti(t, 1);
    }
    s.settop(t);
}

lua_fn! {
    /// `__index`: the methods (upvalue 1), then the fields master computes:
    /// `trace` (from `file` and `line`) and `base_type` (the `type`).
    fn error_index(s: &mut Stack) {
        s.settop(2);
        s.ensure(6)?;
        if s.type_of(2) == ffi::LUA_TSTRING {
            s.push_value(2);
            s.rawget(Stack::upvalue(1));
            if s.type_of(-1) != ffi::LUA_TNIL {
                return Ok(1);
            }
            s.pop(1);
            match s.to_str(2) {
                Some(b"trace") if s.type_of(1) == ffi::LUA_TTABLE => {
                    push_trace(s, 1);
                    return Ok(1);
                }
                Some(b"base_type") if s.type_of(1) == ffi::LUA_TTABLE => {
                    s.rawget_field(1, c"type");
                    return Ok(1);
                }
                Some(b"type" | b"message" | b"code" | b"prev" | b"errno" | b"file" | b"line") => {
                    s.push_nil();
                    return Ok(1);
                }
                _ => {}
            }
            // A payload field of a cause (master: the payload is inherited
            // along the `prev` chain).
            if s.type_of(1) == ffi::LUA_TTABLE {
                s.rawget_field(1, c"prev");
                let mut steps = 0;
                while s.type_of(-1) == ffi::LUA_TTABLE && steps < 1000 {
                    s.push_value(2);
                    s.rawget(-2);
                    if s.type_of(-1) != ffi::LUA_TNIL {
                        return Ok(1);
                    }
                    s.pop(1);
                    s.rawget_field(-1, c"prev");
                    s.remove(-2);
                    steps += 1;
                }
            }
        }
        s.push_nil();
        Ok(1)
    }
}

lua_fn! {
    /// `err:match(pattern [, init])`: `string.match` on the message (master's
    /// Tarantool 1.6 compatibility method).
    fn error_match(s: &mut Stack) {
        if !is_error(s, 1) {
            return Err(Raise::illegal("Usage: error:match()"));
        }
        let n = s.top();
        s.ensure(n + 4)?;
        s.push_globals();
        s.rawget_field(-1, c"string");
        if s.type_of(-1) != ffi::LUA_TTABLE {
            return Err(Raise::illegal("error:match(): no string library"));
        }
        s.rawget_field(-1, c"match");
        let base = s.top();
        push_message(s, 1);
        for i in 2..=n {
            s.push_value(i);
        }
        s.pcall(n, ffi::LUA_MULTRET).map_err(|()| Raise::Top)?;
        Ok(s.top() - base + 1)
    }
}

lua_fn! {
    /// `err:set_prev(prev)`: `prev` (an error object, or nil to clear)
    /// becomes the error's cause; a cycle is refused.
    fn error_set_prev(s: &mut Stack) {
        s.settop(2);
        let prev_ok = s.type_of(2) == ffi::LUA_TNIL || is_error(s, 2);
        if !is_error(s, 1) || !prev_ok {
            return Err(Raise::illegal("Usage: error1:set_prev(error2)"));
        }
        // Walk prev's chain: meeting err would make a cycle.
        s.push_value(2);
        let mut steps = 0;
        while s.type_of(-1) == ffi::LUA_TTABLE {
            if s.to_pointer(-1) == s.to_pointer(1) {
                return Err(Raise::illegal("Cycles are not allowed"));
            }
            steps += 1;
            if steps > 10_000 {
                return Err(Raise::illegal("Cycles are not allowed"));
            }
            s.rawget_field(-1, c"prev");
            s.remove(-2);
        }
        s.pop(1);
        s.push_value(2);
        s.set_field(1, c"prev");
        Ok(0)
    }
}

lua_fn! {
    /// `err:raise()`: raises the error object again.
    fn error_raise(s: &mut Stack) {
        s.settop(1);
        Err(Raise::Top)
    }
}
