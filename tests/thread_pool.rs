//! The Lua thread pool: a finished fiber's thread is reused by a later
//! fiber, which finds nothing of the last one on it.

use luafiber::LuaRuntime;

fn run(code: &str) {
    let rt = LuaRuntime::new().unwrap();
    if let Err(e) = rt.run_chunk(code, "thread_pool") {
        panic!("{e}");
    }
}

/// Issue 13, item 5: a debug hook set in a fiber (per thread on Lua 5.4;
/// LuaJIT's are per state, as in Tarantool) and its environment (per thread
/// on LuaJIT, `setfenv(0, ...)`) stay with that fiber: the next fiber on its
/// pooled thread runs without them, as on a new thread (whose Lua 5.4 hook,
/// if any, `debug.sethook` keeps per thread too).
#[test]
fn pooled_thread_keeps_no_hook_or_environment() {
    run(r#"
        local fiber = require('fiber')
        local per_thread_hooks = rawget(_G, 'jit') == nil
        local hits = {}
        local function hook()
            local id = fiber.id()
            hits[id] = (hits[id] or 0) + 1
        end
        local function joinable(fn)
            local f = fiber.new(fn)
            f:set_joinable(true)
            return f
        end
        local function body()
            local x = 1
            x = x + 1
            return getfenv and getfenv(0)
        end
        -- two threads in the pool
        local a, b = joinable(body), joinable(body)
        assert(a:join())
        assert(b:join())
        local f = joinable(function()
            if per_thread_hooks then debug.sethook(hook, 'l') end
            body()
            if setfenv then setfenv(0, setmetatable({}, {__index = _G})) end
        end)
        assert(f:join())
        -- the next fiber takes the thread `f` ran on
        local g = joinable(body)
        local _, env = assert(g:join())
        if per_thread_hooks then
            assert((hits[f:id()] or 0) > 0, 'the hook never fired')
            assert(hits[g:id()] == nil, ('the hook of another fiber fired %d times'):format(hits[g:id()] or 0))
        end
        if getfenv then assert(env == _G, 'the environment of another fiber stayed') end
    "#);
}
