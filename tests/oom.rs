//! Out of memory under the Lua memory limit is a Lua error for the code that
//! asked, never an abort.

use luafiber::LuaRuntime;

#[test]
fn lua_allocation_past_the_limit_is_a_lua_error() {
    let rt = LuaRuntime::builder().memory_limit(8 << 20).build().unwrap();
    rt.run_chunk(
        r#"
        local fiber = require('fiber')
        local ok, err = pcall(function()
            local t = {}
            for i = 1, 1e8 do t[i] = {i} end
        end)
        assert(not ok and tostring(err):find('memory'), tostring(err))
        collectgarbage()
        -- fibers, channels and error objects still work after the failure
        local f = fiber.new(function(x) fiber.sleep(0.001); return x end, 7)
        f:set_joinable(true)
        local jok, v = f:join()
        assert(jok and v == 7)
        local ch = fiber.channel(1)
        ch:put('still works')
        assert(ch:get() == 'still works')
        local bad_ok, bad = pcall(fiber.sleep, 'x')
        assert(not bad_ok and bad.type == 'IllegalParams')
        "#,
        "oom",
    )
    .unwrap();
}

#[test]
fn bridge_allocations_near_the_limit_do_not_abort() {
    // Strings filling the heap while bridge C functions allocate (error
    // objects, channel refs): the failure comes back as a Lua error.
    let rt = LuaRuntime::builder().memory_limit(4 << 20).build().unwrap();
    rt.run_chunk(
        r#"
        local fiber = require('fiber')
        local keep, ch = {}, fiber.channel(1000000)
        -- one closure for every step: a new one per step would itself fail
        -- outside pcall once the heap is full
        local function step(i)
            keep[#keep + 1] = string.rep('x', 512) .. i
            ch:put(i, 0)
            pcall(fiber.sleep, 'bad')
        end
        local failed
        for i = 1, 1e6 do
            local ok, e = pcall(step, i)
            if not ok then failed = e break end
        end
        assert(failed and tostring(failed):find('memory'), tostring(failed))
        keep = nil
        collectgarbage()
        "#,
        "oom",
    )
    .unwrap();
}

#[test]
fn fiber_creation_past_the_limit_is_a_lua_error() {
    let rt = LuaRuntime::builder().memory_limit(8 << 20).build().unwrap();
    rt.run_chunk(
        r#"
        local fiber = require('fiber')
        local keep = {}
        local function step()
            keep[#keep + 1] = fiber.create(function() fiber.sleep(0.01) end)
        end
        local failed
        for _ = 1, 200000 do
            local ok, e = pcall(step)
            if not ok then failed = e break end
        end
        assert(failed and tostring(failed):find('memory'), tostring(failed))
        keep = nil
        collectgarbage()
        fiber.sleep(0.02)
        local f = fiber.new(function() return 'after' end)
        f:set_joinable(true)
        local ok, v = f:join()
        assert(ok and v == 'after')
        "#,
        "oom",
    )
    .unwrap();
}

/// Issue 13, item 2: a limit below what the runtime allocates at start is
/// an error naming the limit and the need, not an abort; a limit above it
/// gives a runtime whose allocations past it are Lua errors.
#[test]
fn small_memory_limit_is_an_error() {
    for limit in [0, 1, 4096, 50_000] {
        match LuaRuntime::builder().memory_limit(limit).build() {
            Err(luafiber::Error::Lua(e)) => {
                let msg = e.to_string();
                assert!(msg.contains(&format!("memory_limit({limit})")), "{msg}");
                assert!(msg.contains("bytes of Lua heap at start"), "{msg}");
            }
            Err(e) => panic!("limit {limit}: expected Error::Lua, got {e}"),
            Ok(_) => panic!("limit {limit}: a runtime in {limit} bytes"),
        }
    }
    let needed = {
        let rt = LuaRuntime::new().unwrap();
        rt.lua().used_memory()
    };
    let rt = LuaRuntime::builder()
        .memory_limit(needed + 64 * 1024)
        .build()
        .unwrap();
    let err = rt
        .run_chunk("local t = {} for i = 1, 1e7 do t[i] = {} end", "tight")
        .unwrap_err();
    assert!(err.to_string().contains("memory"), "{err}");
}
