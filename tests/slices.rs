//! Fiber slices (Tarantool master's `fiber.set_max_slice`, `set_slice`,
//! `extend_slice`, `check_slice`, `info().max_slice`), and their
//! enforcement by the slice watchdog: a fiber that runs Lua past its `err`
//! limit without yielding gets `FiberSliceIsExceeded` raised in it.

use luafiber::LuaRuntime;

fn run(code: &str) {
    let rt = LuaRuntime::new().unwrap();
    if let Err(e) = rt.run_chunk(
        &format!("local fiber = require('fiber')\nlocal clock = require('clock')\n{code}"),
        "slices",
    ) {
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
        -- A compiled loop on LuaJIT (built with LUAJIT_ENABLE_CHECKHOOK).
        local spinner = fiber.new(function() while true do end end)
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
        fiber.set_max_slice(0.3)
        local function spin(s)
            local t = clock.monotonic()
            while clock.monotonic() - t < s do end
        end
        local f = fiber.new(function()
            for _ = 1, 4 do spin(0.15); fiber.yield() end
            fiber.extend_slice(1)
            spin(0.5)
            return 'done'
        end)
        f:set_joinable(true)
        local ok, res = f:join()
        assert(ok and res == 'done', tostring(res))
        -- pcall catches the error; the fiber goes on once it yields.
        local g = fiber.new(function()
            local pok, err = pcall(function() while true do end end)
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
            while true do fiber.check_slice() end
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
