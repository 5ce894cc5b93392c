//! The Lua `clock` module: Tarantool's `clock` (`src/lua/clock.lua`).
//!
//! `time`/`realtime` (wall clock), `monotonic`, `proc` (process CPU time),
//! `thread` (thread CPU time) return seconds as floats; the `64` variants
//! return integer nanoseconds (Tarantool returns `int64` cdata there).
//! `bench(fn, ...)` returns `{seconds, results...}` measured with `proc`.

use std::ffi::CStr;

use luafiber_runtime::clock;
use mlua::ffi;

use crate::raw::error::ErrorKind;
use crate::raw::{lua_fn, Stack};

macro_rules! clock_fns {
    ($($name:ident => $push:ident($f:path);)*) => {$(
        lua_fn! {
            fn $name(s: &mut Stack) {
                s.$push($f() as _);
                Ok(1)
            }
        }
    )*};
}

clock_fns! {
    clock_realtime => push_number(clock::realtime);
    clock_realtime64 => push_int(clock::realtime64);
    clock_monotonic => push_number(clock::monotonic);
    clock_monotonic64 => push_int(clock::monotonic64);
    clock_proc => push_number(clock::process);
    clock_proc64 => push_int(clock::process64);
    clock_thread => push_number(clock::thread);
    clock_thread64 => push_int(clock::thread64);
}

/// `clock.bench(fn, ...)`: calls `fn(...)` and returns `{cpu_seconds,
/// results...}`. Not under `protect`: it calls Lua, whose errors propagate
/// to the caller as they are.
///
/// # Safety
///
/// Lua calls it as a C function with `l`, its arguments on the stack.
unsafe extern "C-unwind" fn clock_bench(l: *mut ffi::lua_State) -> std::ffi::c_int {
    // SAFETY: called by Lua; no Rust value owning memory is live across
    // lua_call, which may raise.
    unsafe {
        if ffi::lua_type(l, 1) != ffi::LUA_TFUNCTION {
            let s = &mut Stack::from_frame(l);
            crate::raw::error::push(s, ErrorKind::IllegalParams, "Usage: clock.bench(func, ...)");
            ffi::lua_error(l);
        }
        let base = 1;
        let t0 = clock::process();
        ffi::lua_call(l, ffi::lua_gettop(l) - 1, ffi::LUA_MULTRET);
        let dt = clock::process() - t0;
        let n = ffi::lua_gettop(l) - base + 1;
        ffi::lua_createtable(l, n + 1, 0);
        ffi::lua_pushnumber(l, dt);
        ffi::lua_rawseti(l, -2, 1);
        for i in 0..n {
            ffi::lua_pushvalue(l, base + i);
            ffi::lua_rawseti(l, -2, (i + 2) as ffi::lua_Integer);
        }
        1
    }
}

/// `fiber.clock()`: the loop's monotonic time in seconds.
pub(crate) extern "C" fn loop_clock() -> f64 {
    clock::loop_monotonic64() as f64 * 1e-9
}

/// `fiber.time()`: the loop's wall-clock time in seconds.
pub(crate) extern "C" fn loop_time() -> f64 {
    clock::loop_realtime64() as f64 * 1e-9
}

/// `fiber.clock64()`: the loop's monotonic time in microseconds.
pub(crate) extern "C" fn loop_clock64() -> i64 {
    clock::loop_monotonic64() / 1000
}

/// `fiber.time64()`: the loop's wall-clock time in microseconds.
pub(crate) extern "C" fn loop_time64() -> i64 {
    clock::loop_realtime64() / 1000
}

/// On LuaJIT, makes `fiber.clock`, `time`, `clock64` and `time64` of the
/// `fiber` table on top Lua functions over FFI calls of the functions above
/// (compiled into the caller's trace, as Tarantool's are); elsewhere (or
/// under `--cfg luafiber_no_fast_paths`), or when the chunk fails, the C
/// functions stay.
pub(crate) fn ffi_loop_clocks(s: &mut Stack) {
    const CHUNK: &str = r#"
        local fiber, clock, time, clock64, time64 = ...
        local ok, ffi = pcall(require, 'ffi')
        if not ok or type(ffi) ~= 'table' or not ffi.cast then return end
        local dbl, i64 = ffi.typeof('double (*)(void)'), ffi.typeof('int64_t (*)(void)')
        clock, time = ffi.cast(dbl, clock), ffi.cast(dbl, time)
        clock64, time64 = ffi.cast(i64, clock64), ffi.cast(i64, time64)
        local tonumber = tonumber
        fiber.clock = function() return clock() end
        fiber.time = function() return time() end
        fiber.clock64 = function() return tonumber(clock64()) end
        fiber.time64 = function() return tonumber(time64()) end
    "#;
    if !cfg!(feature = "luajit") || cfg!(luafiber_no_fast_paths) {
        return;
    }
    let fiber = s.top();
    s.run_setup_chunk(CHUNK, c"=fiber.clock", |s| {
        s.push_value(fiber);
        for f in [
            loop_clock as *mut std::ffi::c_void,
            loop_time as *mut _,
            loop_clock64 as *mut _,
            loop_time64 as *mut _,
        ] {
            s.push_light(f);
        }
        5
    });
}

const FUNCS: &[(&CStr, ffi::lua_CFunction)] = &[
    (c"time", clock_realtime),
    (c"realtime", clock_realtime),
    (c"time64", clock_realtime64),
    (c"realtime64", clock_realtime64),
    (c"monotonic", clock_monotonic),
    (c"monotonic64", clock_monotonic64),
    (c"proc", clock_proc),
    (c"proc64", clock_proc64),
    (c"thread", clock_thread),
    (c"thread64", clock_thread64),
    (c"bench", crate::raw::wide_cfn!(clock_bench)),
];

/// Pushes the `clock` module table.
pub(crate) fn open(s: &mut Stack) {
    let t = s.new_table(0, FUNCS.len() as _);
    s.set_funcs(t, FUNCS);
}
