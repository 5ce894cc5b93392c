//! Calling Lua from Rust on fresh fibers, the way Tarantool serves iproto
//! CALL and EVAL (`src/box/lua/call.c`).
//!
//! Each call runs on a new Lua fiber whose function is one of three handler
//! C functions, made once when the runtime is set up and fetched by registry
//! ref for every call (no `lua_pushcfunction` per call, so no `GCfunc` is
//! allocated per call on LuaJIT):
//!
//! - the CALL handler, stack `[name, args...]`: finds the function the
//!   dotted name `a.b.c` (or `a.b:c`, a method call) names, starting at the
//!   globals, and calls it with the arguments;
//! - the EVAL handler, stack `[source, args...]`: compiles `source` as a
//!   chunk (compiled chunks are kept by source in a registry table) and calls
//!   it with `...` = the arguments;
//! - the module handler, stack `[name, chunk]`: runs `chunk(name)` and stores
//!   its first result (or `true`) in `package.loaded[name]` and the global
//!   `name`.
//!
//! The handlers are raw C functions, not `lua_fn!` bodies: they run Lua code
//! (lookups that may run `__index`, the called function) whose errors must
//! unwind through them, so they own no Rust value and never call into Rust
//! code that could panic. Their errors reach the fiber's `lua_pcall` and its
//! message handler, which records the traceback.

use std::cell::Cell;
use std::ffi::c_int;

use mlua::ffi;

use crate::raw::context::Part;
use crate::raw::{api, Stack};

/// Most compiled EVAL chunks kept; past it the cache starts over empty.
const EVAL_CACHE_MAX: usize = 1024;

/// Which handler a call runs.
#[derive(Clone, Copy)]
pub(crate) enum Handler {
    Call,
    Eval,
    Module,
}

/// Registry refs of the handlers and the EVAL cache.
#[derive(Clone, Copy)]
struct Refs {
    call: c_int,
    eval: c_int,
    module: c_int,
    eval_cache: c_int,
}

/// Per-cord state of the handlers (a part of the cord context).
pub(crate) struct HandlerRefs {
    refs: Cell<Refs>,
    /// Chunks in the EVAL cache now.
    eval_cached: Cell<usize>,
}

impl Default for HandlerRefs {
    fn default() -> HandlerRefs {
        HandlerRefs {
            refs: Cell::new(Refs {
                call: ffi::LUA_NOREF,
                eval: ffi::LUA_NOREF,
                module: ffi::LUA_NOREF,
                eval_cache: ffi::LUA_NOREF,
            }),
            eval_cached: Cell::new(0),
        }
    }
}

/// Makes the handlers and the EVAL cache; called once per cord.
pub(crate) fn init(s: &mut Stack) {
    let mut refs = [0; 3];
    for (r, h) in refs
        .iter_mut()
        .zip([Handler::Call, Handler::Eval, Handler::Module])
    {
        s.push_cfunction(handler_fn(h));
        *r = s.make_ref();
    }
    s.new_table(0, 0);
    let eval_cache = s.make_ref();
    let [call, eval, module] = refs;
    HandlerRefs::with(|r| {
        r.refs.set(Refs {
            call,
            eval,
            module,
            eval_cache,
        });
        r.eval_cached.set(0);
    });
}

/// The registry ref of `handler`.
pub(crate) fn handler_ref(handler: Handler) -> c_int {
    let refs = HandlerRefs::with(|r| r.refs.get());
    match handler {
        Handler::Call => refs.call,
        Handler::Eval => refs.eval,
        Handler::Module => refs.module,
    }
}

/// Whether a CALL of `name` may be laid out as `[msgh, name, args...]`
/// with no handler ([`resolve_global`]): a plain global name, with no `.`
/// or `:`.
pub(crate) fn is_plain_name(name: &[u8]) -> bool {
    !name.is_empty() && !name.iter().any(|&b| b == b'.' || b == b':')
}

/// Readies a CALL laid out as `[msgh, name, args...]` on `s` (a plain
/// global name, [`is_plain_name`]), on the fiber that runs it, right
/// before its call: when the globals have no metatable and hold a
/// function by that name, the function replaces the name (it is then
/// called with no C function between: what the CALL handler would call,
/// looked up now as the handler would); else the CALL handler goes below
/// the name, to look it up and raise what it raises.
pub(crate) fn resolve_global(s: &mut Stack) {
    let l = s.as_ptr();
    // SAFETY: the fiber's own thread, idle before its call, laid out as
    // above with the room its layout had (a fiber's thread keeps
    // LUA_MINSTACK free above what was pushed); the raw get runs no Lua
    // code; what this pushes it pops or moves.
    unsafe {
        ffi::lua_pushglobaltable(l);
        if ffi::lua_getmetatable(l, -1) == 0 {
            ffi::lua_pushvalue(l, 2);
            if ffi::lua_rawget(l, -2) == ffi::LUA_TFUNCTION {
                // [msgh, name, args..., G, fn]
                ffi::lua_replace(l, 2);
                ffi::lua_settop(l, -2);
                s.sync();
                return;
            }
            ffi::lua_settop(l, -3);
        } else {
            ffi::lua_settop(l, -3);
        }
        ffi::lua_rawgeti(l, ffi::LUA_REGISTRYINDEX, handler_ref(Handler::Call).into());
        ffi::lua_insert(l, 2);
        s.sync();
    }
}

/// The C function of `handler` (what a bench pushes per call).
pub(crate) fn handler_fn(handler: Handler) -> ffi::lua_CFunction {
    match handler {
        Handler::Call => crate::raw::wide_cfn!(call_handler),
        Handler::Eval => crate::raw::wide_cfn!(eval_handler),
        Handler::Module => crate::raw::wide_cfn!(module_handler),
    }
}

/// Raises the string `parts` concatenated.
///
/// # Safety
///
/// `l` is the calling state of a raw handler; no Rust value owning memory
/// is live in the caller.
unsafe fn raise(l: *mut ffi::lua_State, parts: &[&[u8]]) -> ! {
    // SAFETY: caller's contract; lua_error does not return.
    unsafe {
        for p in parts {
            ffi::lua_pushlstring(l, p.as_ptr().cast(), p.len());
        }
        ffi::lua_concat(l, parts.len() as c_int);
        ffi::lua_error(l)
    }
}

/// The CALL handler: `[name, args...]` → the results of the named function.
///
/// A name is split at `.` and `:`; each part indexes the value before it
/// (metamethods run), starting at the globals. A `:` before the last part
/// makes a method call (the object is passed first). A part that cannot be
/// looked up or a last value that is neither a function nor a table
/// (callable by its metatable) raises "Procedure 'NAME' is not defined"
/// (Tarantool's `ER_NO_SUCH_PROC`, as `box_lua_find` does).
///
/// # Safety
///
/// Lua calls it as a C function, the name at index 1.
unsafe extern "C-unwind" fn call_handler(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: called by Lua with the name at 1. No Rust value owning memory
    // is live here, so Lua errors may unwind through this frame; `name`
    // borrows the string at index 1, which stays there until it is replaced.
    unsafe {
        let nargs = ffi::lua_gettop(l) - 1;
        let Some(name) = api::to_str(l, 1) else {
            raise(l, &[b"call: the function name must be a string"]);
        };
        if ffi::lua_checkstack(l, 4) == 0 {
            raise(l, &[b"call: stack overflow"]);
        }
        ffi::lua_pushglobaltable(l);
        let mut start = 0;
        let mut method = false;
        loop {
            let end = name[start..]
                .iter()
                .position(|&b| b == b'.' || b == b':')
                .map_or(name.len(), |p| start + p);
            let t = ffi::lua_type(l, -1);
            if (t != ffi::LUA_TTABLE && t != ffi::LUA_TUSERDATA) || end == start {
                raise(l, &[b"Procedure '", name, b"' is not defined"]);
            }
            if end - start == name.len() {
                // A plain name: the string at 1 is the key (no new string).
                ffi::lua_pushvalue(l, 1);
            } else {
                let part = &name[start..end];
                ffi::lua_pushlstring(l, part.as_ptr().cast(), part.len());
            }
            ffi::lua_gettable(l, -2);
            if end == name.len() {
                break;
            }
            if name[end] == b':' {
                // `obj:method`: the rest must be one part.
                let rest = &name[end + 1..];
                if rest.is_empty() || rest.iter().any(|&b| b == b'.' || b == b':') {
                    raise(l, &[b"Procedure '", name, b"' is not defined"]);
                }
                method = true;
            }
            ffi::lua_remove(l, -2);
            start = end + 1;
            if method {
                // [name, args..., obj]
                let t = ffi::lua_type(l, -1);
                if t != ffi::LUA_TTABLE && t != ffi::LUA_TUSERDATA {
                    raise(l, &[b"Procedure '", name, b"' is not defined"]);
                }
                ffi::lua_pushvalue(l, -1);
                ffi::lua_pushlstring(l, name[start..].as_ptr().cast(), name.len() - start);
                ffi::lua_gettable(l, -2);
                ffi::lua_remove(l, -2);
                // [name, args..., obj, fn]
                break;
            }
        }
        // As box_lua_find: only a function or a table (callable by its
        // metatable) is a procedure.
        let t = ffi::lua_type(l, -1);
        if t != ffi::LUA_TFUNCTION && t != ffi::LUA_TTABLE {
            raise(l, &[b"Procedure '", name, b"' is not defined"]);
        }
        // From here `name` is no longer used: its string may go.
        ffi::lua_replace(l, 1);
        if method {
            // [fn, args..., obj] -> [fn, obj, args...]
            ffi::lua_insert(l, 2);
            ffi::lua_call(l, nargs + 1, ffi::LUA_MULTRET);
        } else {
            // [fn, args..., parent]
            ffi::lua_pop(l, 1);
            ffi::lua_call(l, nargs, ffi::LUA_MULTRET);
        }
        ffi::lua_gettop(l)
    }
}

/// The EVAL handler: `[source, args...]` → the results of the chunk
/// `source` called with `...` = args. A chunk that does not compile raises
/// the compiler's message.
///
/// # Safety
///
/// Lua calls it as a C function, the source at index 1.
unsafe extern "C-unwind" fn eval_handler(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: called by Lua with the source at 1. No Rust value owning
    // memory is live here, so Lua errors may unwind through this frame.
    unsafe {
        let nargs = ffi::lua_gettop(l) - 1;
        if ffi::lua_type(l, 1) != ffi::LUA_TSTRING {
            raise(l, &[b"eval: the expression must be a string"]);
        }
        if ffi::lua_checkstack(l, 4) == 0 {
            raise(l, &[b"eval: stack overflow"]);
        }
        // No panic here (a raw handler): with no context, a Lua error.
        let Some(cache) = HandlerRefs::try_with(|r| r.refs.get().eval_cache) else {
            raise(l, &[b"eval: this thread has no Lua runtime"]);
        };
        api::push_registry_ref(l, cache);
        ffi::lua_pushvalue(l, 1);
        ffi::lua_rawget(l, -2);
        if ffi::lua_type(l, -1) != ffi::LUA_TFUNCTION {
            ffi::lua_pop(l, 1);
            let mut len = 0;
            let src = ffi::lua_tolstring(l, 1, &mut len);
            if ffi::luaL_loadbuffer(l, src, len, c"=eval".as_ptr()) != 0 {
                ffi::lua_error(l);
            }
            // [source, args..., cache, fn]
            let n = HandlerRefs::try_with(|r| r.eval_cached.get()).unwrap_or(0);
            if n >= EVAL_CACHE_MAX {
                ffi::lua_createtable(l, 0, 0);
                ffi::lua_pushvalue(l, -1);
                ffi::lua_rawseti(l, ffi::LUA_REGISTRYINDEX, cache as ffi::lua_Integer);
                ffi::lua_replace(l, -3);
                HandlerRefs::try_with(|r| r.eval_cached.set(0));
            }
            ffi::lua_pushvalue(l, 1);
            ffi::lua_pushvalue(l, -2);
            ffi::lua_rawset(l, -4);
            HandlerRefs::try_with(|r| r.eval_cached.set(r.eval_cached.get() + 1));
        }
        // [source, args..., cache, fn]
        ffi::lua_replace(l, 1);
        ffi::lua_pop(l, 1);
        ffi::lua_call(l, nargs, ffi::LUA_MULTRET);
        ffi::lua_gettop(l)
    }
}

/// The module handler: `[name, chunk]` → `chunk(name)`'s first result (or
/// `true`), also stored in `package.loaded[name]` and the global `name`.
///
/// # Safety
///
/// Lua calls it as a C function with `[name, chunk]`.
unsafe extern "C-unwind" fn module_handler(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: called by Lua with `[name, chunk]`. No Rust value owning
    // memory is live here, so Lua errors may unwind through this frame.
    unsafe {
        ffi::lua_settop(l, 2);
        ffi::lua_pushvalue(l, 2);
        ffi::lua_pushvalue(l, 1);
        ffi::lua_call(l, 1, 1);
        if ffi::lua_type(l, -1) == ffi::LUA_TNIL {
            ffi::lua_pop(l, 1);
            ffi::lua_pushboolean(l, 1);
        }
        // [name, chunk, module]
        ffi::lua_getfield(l, ffi::LUA_REGISTRYINDEX, c"_LOADED".as_ptr());
        if ffi::lua_type(l, -1) == ffi::LUA_TTABLE {
            ffi::lua_pushvalue(l, 1);
            ffi::lua_pushvalue(l, 3);
            ffi::lua_rawset(l, -3);
        }
        ffi::lua_pop(l, 1);
        ffi::lua_pushglobaltable(l);
        ffi::lua_pushvalue(l, 1);
        ffi::lua_pushvalue(l, 3);
        ffi::lua_rawset(l, -3);
        ffi::lua_pop(l, 1);
        1
    }
}
