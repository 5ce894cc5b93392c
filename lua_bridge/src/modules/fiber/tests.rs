//! The blocking methods' entry (the switch guard's fast test on the hot
//! path, `fiber/guard.rs`) refuses a switch exactly where its slow check
//! does, with its message; on LuaJIT these calls go through the unchecked C
//! functions.

use std::cell::Cell;
use std::rc::Rc;

use mlua::ffi;

use crate::LuaRuntime;

/// Defines `attempts()`: each blocking method as `{name, fn}`, on a
/// cond nobody signals and an unbuffered channel nobody reads or
/// writes; `try_all(wrap)` runs each through `wrap` and returns a line
/// "name: error" for each (`ok` for one that did not raise).
const ATTEMPTS: &str = r#"
    local fiber = require('fiber')
    local cond, ch = fiber.cond(), fiber.channel()
    function try_all(wrap)
        local out = {}
        for _, case in ipairs({
            {'cond:wait', function() return cond:wait() end},
            {'channel:get', function() return ch:get() end},
            {'channel:put', function() return ch:put(1) end},
        }) do
            local ok, err = wrap(case[2])
            err = ok and 'ok' or tostring(err):gsub('\n', ' ')
            out[#out + 1] = case[1] .. ': ' .. err
        end
        return table.concat(out, '\n')
    end
"#;

fn runtime() -> LuaRuntime {
    let rt = LuaRuntime::new().unwrap();
    rt.lua().load(ATTEMPTS).exec().unwrap();
    rt
}

/// Checks that every line of `out` refuses with `why` after its name.
fn refused(out: &str, why: &str) {
    let lines: Vec<_> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    for line in lines {
        let (name, err) = line.split_once(": ").unwrap();
        assert!(err.contains(&format!("{name}: {why}")), "{line}");
    }
}

#[test]
fn outside_a_fiber() {
    let rt = runtime();
    let out: String = rt.lua().load("return try_all(pcall)").eval().unwrap();
    refused(&out, "cannot yield outside a fiber");
}

#[test]
fn on_the_main_thread_inside_a_fiber() {
    // mlua runs this chunk on the main thread, from a (Rust) fiber.
    let rt = Rc::new(runtime());
    let out = Rc::new(Cell::new(String::new()));
    let (rt2, out2) = (rt.clone(), out.clone());
    luafiber_fiber::Builder::new()
        .spawn_ready(move || out2.set(rt2.lua().load("return try_all(pcall)").eval().unwrap()))
        .unwrap();
    luafiber_fiber::run();
    refused(&out.take(), "cannot yield on the main Lua thread");
}

#[test]
fn on_a_foreign_state() {
    // `cond:wait()`'s C function called on another state, in a fiber:
    // refused before its argument is used.
    let _rt = runtime();
    let foreign = mlua::Lua::new();
    let out = Rc::new(Cell::new(String::new()));
    let out2 = out.clone();
    luafiber_fiber::Builder::new()
        .spawn_ready(move || {
            let l = foreign.state();
            // SAFETY: `l` is `foreign`'s idle main state; a new thread
            // calls the C function with a userdata it does not read.
            unsafe {
                let t = ffi::lua_newthread(l);
                ffi::lua_pushcfunction(t, super::cond::cond_wait_unchecked);
                ffi::lua_newuserdata(t, 64);
                assert_ne!(ffi::lua_pcall(t, 1, 0, 0), 0);
                ffi::lua_getfield(t, -1, c"message".as_ptr());
                out2.set(
                    crate::raw::api::to_str(t, -1)
                        .map(|s| String::from_utf8_lossy(s).into_owned())
                        .unwrap_or_default(),
                );
                ffi::lua_pop(l, 1);
            }
        })
        .unwrap();
    luafiber_fiber::run();
    let out = out.take();
    assert!(
        out.contains("cond:wait: cannot yield on a foreign Lua state"),
        "{out}"
    );
}

#[test]
fn inside_a_gc_finalizer() {
    let rt = runtime();
    rt.run_chunk(
        r#"
        local out
        local function hook()
            out = try_all(pcall)
        end
        if newproxy then
            local p = newproxy(true)
            getmetatable(p).__gc = hook
        else
            setmetatable({}, {__gc = hook})
        end
        collectgarbage('collect')
        collectgarbage('collect')
        GC_OUT = out
        "#,
        "gc",
    )
    .unwrap();
    let out: String = rt.lua().globals().get("GC_OUT").unwrap();
    refused(&out, "cannot yield inside a __gc finalizer");
}

#[test]
fn under_an_mlua_callback() {
    let rt = runtime();
    let via = rt
        .lua()
        .create_function(|_, f: mlua::Function| f.call::<mlua::MultiValue>(()))
        .unwrap();
    rt.lua().globals().set("via_mlua", via).unwrap();
    rt.run_chunk(
        "MLUA_OUT = try_all(function(f) return pcall(via_mlua, f) end)",
        "mlua",
    )
    .unwrap();
    let out: String = rt.lua().globals().get("MLUA_OUT").unwrap();
    refused(&out, "cannot yield under an mlua callback");
}

#[test]
fn allowed_in_a_fiber_also_with_the_gc_stopped() {
    // LuaJIT cannot tell a stopped collector from a running finalizer;
    // `collectgarbage("stop")` is tracked so that blocking still works.
    let rt = LuaRuntime::new().unwrap();
    rt.run_chunk(
        r#"
        local fiber = require('fiber')
        for _, stop in ipairs({false, true, false}) do
            collectgarbage(stop and 'stop' or 'restart')
            local cond, ch, got = fiber.cond(), fiber.channel(), {}
            local f = fiber.new(function()
                got[1] = ch:get()
                assert(ch:put('back'))
                cond:signal()
            end)
            fiber.yield()
            assert(ch:put('there'))
            got[2] = ch:get()
            fiber.new(function() cond:signal() end)
            assert(cond:wait())
            assert(got[1] == 'there' and got[2] == 'back')
        end
        "#,
        "gc_stopped",
    )
    .unwrap();
}
