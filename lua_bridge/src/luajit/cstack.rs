//! The C stack check LuaJIT lacks. Lua 5.4 counts nested C calls and
//! raises "C stack overflow" past `LUAI_MAXCCALLS`; LuaJIT counts nothing,
//! so recursion through C functions that call back into Lua (`string.gsub`
//! callbacks, `table.sort` comparators, `print`'s `tostring`) runs until it
//! faults in the fiber's stack guard, which ends the process.
//!
//! `cstack.c` wraps `lua_call` and `lua_pcall` (the linker's `--wrap`, which
//! the root package's `build.rs` passes for the binary, the tests, benches
//! and examples): each call first asks [`luafiber_cstack_low`] whether the
//! running fiber's machine stack has less than a margin left; then
//! `lua_call` raises "C stack overflow" (a Lua error the caller's `pcall`
//! catches) and `lua_pcall` returns it as `LUA_ERRRUN`, without calling.
//!
//! LuaJIT's `tostring` calls a `__tostring` metamethod as a tail call, so a
//! `__tostring` that calls `tostring` on a new object loops for ever, on no
//! stack at all. [`install`] puts a Lua function in front of it that sends
//! tables and userdata through a C function ([`tostring_nested`]) which
//! calls LuaJIT's `tostring` with `lua_call`: that recursion is C recursion,
//! which the check above ends, as Lua 5.4's `luaL_tolstring` does. Other
//! values go straight to LuaJIT's `tostring`, which traces still compile.
//!
//! The guard report stays the backstop for what the wrappers do not see:
//! LuaJIT's own internal calls (metamethods called by the C API, nested
//! `coroutine.resume`), C modules loaded at run time (they call the
//! binary's exported `lua_call`, which the linker does not redirect), and
//! single frames larger than the margin.

use std::ffi::c_int;

use mlua::ffi;

use crate::raw::Stack;

extern "C-unwind" {
    // cstack.c.
    fn __wrap_lua_call(l: *mut ffi::lua_State, nargs: c_int, nresults: c_int);
    fn luafiber_pcall_unchecked(
        l: *mut ffi::lua_State,
        nargs: c_int,
        nresults: c_int,
        errfunc: c_int,
    ) -> c_int;
}

/// Calls the function below the `nargs` values on top of `s` as
/// [`Stack::pcall_with`] does, without the check of the margin: for a call
/// at the top of a fresh fiber stack (a fiber's body), which has the whole
/// stack below it.
pub(crate) fn pcall_fresh(s: &mut Stack, nargs: c_int, nresults: c_int, handler: c_int) -> c_int {
    // SAFETY: `luafiber_pcall_unchecked` is LuaJIT's own `lua_pcall`.
    unsafe {
        s.pcall_through(
            |l, nargs, nresults, handler| luafiber_pcall_unchecked(l, nargs, nresults, handler),
            nargs,
            nresults,
            handler,
        )
    }
}

/// Bytes of machine stack a call into Lua must leave, on stacks of 128 KiB
/// and more (a quarter of smaller ones): room for a few levels of LuaJIT's
/// largest library frame (`gsub`'s 8.8 KiB buffer), for raising and
/// unwinding the error, and for the fiber's message handler.
pub const MARGIN: usize = 32 * 1024;

/// Whether the running fiber has less than the margin of machine stack
/// left (never outside fibers: the thread's own stack is the kernel's to
/// grow). Called by `cstack.c` before every wrapped call; never unwinds.
#[no_mangle]
pub extern "C" fn luafiber_cstack_low() -> c_int {
    (!luafiber_fiber::stack_room(MARGIN, 4)).into()
}

/// The `tostring` installed in front of LuaJIT's: its arguments are
/// LuaJIT's `tostring`, [`tostring_nested`] and `type`.
const TOSTRING: &str = r#"
local tostring, nested, type = ...
_G.tostring = function(...)
    local t = type((...))
    if t == 'table' or t == 'userdata' then
        return nested(...)
    end
    return tostring(...)
end
"#;

/// Replaces the global `tostring` with the one of [`TOSTRING`]; when that
/// fails, LuaJIT's stays. At setup, on a new main state with its base
/// library open.
pub(crate) fn install(s: &mut Stack) {
    s.run_setup_chunk(TOSTRING, c"=tostring", |s| {
        s.push_globals();
        s.rawget_field(-1, c"tostring");
        s.remove(-2);
        s.push_value(-1);
        s.push_closure(tostring_nested, 1);
        s.push_globals();
        s.rawget_field(-1, c"type");
        s.remove(-2);
        3
    });
}

/// `nested(v, ...)`: LuaJIT's `tostring(v, ...)` (upvalue 1), called with
/// `lua_call`, one C call deeper; returns what it returns.
///
/// # Safety
///
/// Called by Lua as a C function with LuaJIT's `tostring` as upvalue 1. A
/// Lua error from the call unwinds through this frame, which owns nothing
/// (`C-unwind`), and no Rust code here can panic.
unsafe extern "C-unwind" fn tostring_nested(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: the caller's contract; the arguments and one more slot (a C
    // function has LUA_MINSTACK) are on `l`.
    unsafe {
        ffi::lua_pushvalue(l, ffi::lua_upvalueindex(1));
        ffi::lua_insert(l, 1);
        ffi::lua_call(l, ffi::lua_gettop(l) - 1, ffi::LUA_MULTRET);
        ffi::lua_gettop(l)
    }
}

/// Whether this program was linked with the wrappers (`--wrap`): then
/// its own references to `lua_call` resolve to the wrapper. Also keeps
/// `cstack.c` in the link, which LuaJIT's libraries, linked after it,
/// need once `--wrap` sends their calls there.
pub fn active() -> bool {
    let seen = ffi::lua_call as unsafe extern "C-unwind" fn(_, _, _) as usize;
    seen == __wrap_lua_call as unsafe extern "C-unwind" fn(_, _, _) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_crates_tests_are_linked_with_the_wrappers() {
        assert!(active());
    }

    #[test]
    fn outside_fibers_the_stack_is_never_low() {
        assert_eq!(luafiber_cstack_low(), 0);
    }
}
