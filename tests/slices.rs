//! Fiber slices (Tarantool master's `fiber.set_max_slice`, `set_slice`,
//! `extend_slice`, `check_slice`, `info().max_slice`), and their
//! enforcement by the slice watchdog: a fiber that runs Lua past its `err`
//! limit without yielding gets `FiberSliceIsExceeded` raised in it.

use luafiber::LuaRuntime;

/// Runs `code` with `fiber` and `clock` required and two helpers:
/// `spin(s)` runs Lua for `s` seconds without yielding; `spin_forever()`
/// runs Lua (a compiled loop on LuaJIT, built with
/// `LUAJIT_ENABLE_CHECKHOOK`) until an error interrupts it, and fails with
/// "not interrupted" after 60 s: the bound that turns a hang into a
/// failure.
fn run(code: &str) {
    let rt = LuaRuntime::new().unwrap();
    let prelude = r#"local fiber = require('fiber')
local clock = require('clock')
local function spin(s)
    local t = clock.monotonic()
    while clock.monotonic() - t < s do end
end
local function spin_forever()
    local t = clock.monotonic()
    for _ = 1, 1e9 do
        for _ = 1, 1e5 do end
        if clock.monotonic() - t > 60 then break end
    end
    error('not interrupted')
end
"#;
    if let Err(e) = rt.run_chunk(&format!("{prelude}{code}"), "slices") {
        panic!("{e}");
    }
}

#[test]
fn a_spinning_fiber_gets_the_error_and_a_sleeper_keeps_its_schedule() {
    run(r#"
        fiber.set_max_slice(0.5)
        local ticks = {}
        local sleeper = fiber.new(function()
            for i = 1, 20 do fiber.sleep(0.02); ticks[#ticks + 1] = i end
            return 'slept'
        end)
        sleeper:set_joinable(true)
        local spinner = fiber.new(spin_forever)
        spinner:set_joinable(true)
        local ok, err = spinner:join()
        assert(not ok and err.type == 'FiberSliceIsExceeded', tostring(err))
        assert(tostring(err) == 'fiber slice is exceeded', tostring(err))
        local sok, res = sleeper:join()
        assert(sok and res == 'slept' and #ticks == 20, #ticks)
        for i = 1, 20 do assert(ticks[i] == i) end
    "#);
}

#[test]
fn the_slice_is_reset_at_every_switch_and_extend_slice_counts() {
    run(r#"
        -- Each round stays 0.4 s under the slice; together they pass it.
        fiber.set_max_slice(0.5)
        local f = fiber.new(function()
            for _ = 1, 6 do spin(0.1); fiber.yield() end
            fiber.extend_slice(1)
            spin(0.6)
            return 'done'
        end)
        f:set_joinable(true)
        local ok, res = f:join()
        assert(ok and res == 'done', tostring(res))
        -- pcall catches the error; the fiber goes on once it yields.
        local g = fiber.new(function()
            local pok, err = pcall(spin_forever)
            fiber.yield()
            return pok, err.type
        end)
        g:set_joinable(true)
        local gok, pok, kind = g:join()
        assert(gok and pok == false and kind == 'FiberSliceIsExceeded', tostring(kind))
    "#);
}

#[test]
fn check_slice_and_the_api_follow_master() {
    run(r#"
        -- Without a slice set nothing is enforced; check_slice uses the
        -- default {warn = 0.5, err = 1.0}.
        assert(fiber.self():info().max_slice.warn == 0.5)
        assert(fiber.self():info().max_slice.err == 1.0)
        fiber.set_slice({warn = 1, err = 0.2})
        local ok, err = pcall(function()
            for _ = 1, 1e9 do fiber.check_slice() end
        end)
        assert(not ok and err.type == 'FiberSliceIsExceeded')
        fiber.yield()
        assert(pcall(fiber.check_slice))
        for _, bad in ipairs({'foo', {err = 1}, {warn = 1, err = 'x'}}) do
            local _, e = pcall(fiber.set_slice, bad)
            assert(tostring(e) == 'slice must be a number or a table {warn = <number>, err = <number>}', tostring(e))
        end
        local _, e = pcall(fiber.set_max_slice, -1)
        assert(tostring(e) == 'slice value must be >= 0')
        _, e = pcall(fiber.check_slice, 1)
        assert(tostring(e) == 'fiber.check_slice(): bad arguments')
        local f = fiber.new(function() end)
        f:set_joinable(true)
        f:set_max_slice({warn = 2.5, err = 100 * 365 * 86400})
        local ms = f:info().max_slice
        assert(ms.warn == 2.5 and ms.err == nil)
        f:join()
    "#);
}

/// The flake this pins: `check_slice` raised the error of an exceeded
/// slice, and the watchdog, which had seen the same slice exceeded, raised
/// it again once the signal it had sent landed, just after the `pcall`
/// that caught the first. A slice's error is reported once: Lua that runs
/// on in the same slice, 50 watchdog ticks (5 of its `ASK_AGAIN`) past the
/// error, gets no second one.
#[test]
fn the_watchdog_does_not_raise_again_what_check_slice_raised() {
    run(r#"
        fiber.set_slice(0.05)
        local ok, err = pcall(function()
            for _ = 1, 1e9 do fiber.check_slice() end
        end)
        assert(not ok and err.type == 'FiberSliceIsExceeded', tostring(err))
        local sok, serr = pcall(spin, 0.5)
        assert(sok, tostring(serr))
        -- An explicit check still fails, as master's.
        local cok, cerr = pcall(fiber.check_slice)
        assert(not cok and cerr.type == 'FiberSliceIsExceeded', tostring(cerr))
        sok, serr = pcall(spin, 0.2)
        assert(sok, tostring(serr))
        fiber.yield()
        assert(pcall(fiber.check_slice))
    "#);
}

/// The watchdog's own error is reported once too; a new limit the fiber
/// sets for itself is a new slice, which the watchdog enforces again.
#[test]
fn the_watchdog_raises_once_a_slice_and_again_for_a_new_limit() {
    run(r#"
        local f = fiber.new(function()
            fiber.set_slice(0.05)
            local ok, err = pcall(spin_forever)
            assert(not ok and err.type == 'FiberSliceIsExceeded', tostring(err))
            local sok, serr = pcall(spin, 0.5)
            assert(sok, tostring(serr))
            fiber.extend_slice(0.05)
            ok, err = pcall(spin_forever)
            assert(not ok and err.type == 'FiberSliceIsExceeded', tostring(err))
            fiber.yield()
            return 'done'
        end)
        f:set_joinable(true)
        local ok, res = f:join()
        assert(ok and res == 'done', tostring(res))
    "#);
}
