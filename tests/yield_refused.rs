//! Yields that cannot be done safely are refused with a catchable Lua error,
//! never a crash: outside any fiber, inside a `__gc` finalizer, and under an
//! mlua callback. The runtime keeps working afterwards.

use std::time::Duration;

use luafiber::{mlua, LuaRuntime};

fn runtime() -> LuaRuntime {
    let rt = LuaRuntime::new().unwrap();
    rt.register_fn("rust_sleep", |args| {
        let secs = args.first().and_then(|v| v.as_f64()).unwrap_or(0.0);
        luafiber::fiber::sleep(Duration::from_secs_f64(secs))?;
        Ok(vec![true.into()])
    })
    .unwrap();
    rt
}

fn run(rt: &LuaRuntime, code: &str) {
    if let Err(e) = rt.run_chunk(code, "yield_refused") {
        panic!("{e}");
    }
}

/// The runtime still runs fibers that yield.
fn still_works(rt: &LuaRuntime) {
    run(
        rt,
        r#"
        local fiber = require('fiber')
        local n = 0
        for i = 1, 10 do fiber.new(function() fiber.sleep(0.001); fiber.yield(); n = n + 1 end) end
        local deadline = fiber.clock() + 30
        while n < 10 and fiber.clock() < deadline do fiber.sleep(0.001) end
        assert(n == 10)
        "#,
    );
}

#[test]
fn yield_outside_any_fiber_is_refused() {
    let rt = runtime();
    for call in ["fiber.yield", "fiber.sleep, 0", "fiber.sleep, 0.001"] {
        let code = format!(
            "local fiber = require('fiber') local ok, e = pcall({call}) return ok, tostring(e)"
        );
        let (ok, msg): (bool, String) = rt.lua().load(&code).eval().unwrap();
        assert!(!ok, "{call} outside a fiber succeeded");
        assert!(msg.contains("outside a fiber"), "{call}: {msg}");
    }
    // A registered Rust function that sleeps outside a fiber gets the
    // fiber layer's error back, raised as a Lua error.
    let (ok, msg): (bool, String) = rt
        .lua()
        .load("local ok, e = pcall(rust_sleep, 0.001) return ok, tostring(e)")
        .eval()
        .unwrap();
    assert!(!ok, "rust_sleep outside a fiber succeeded");
    assert!(msg.contains("not in a fiber"), "{msg}");
    // The brief's form: mlua runs it on the main thread.
    let (ok, err): (bool, mlua::Value) = rt
        .lua()
        .load("return pcall(require('fiber').yield)")
        .call(())
        .unwrap();
    assert!(!ok);
    let msg = match err {
        mlua::Value::Table(t) => t.get::<String>("message").unwrap(),
        other => panic!("expected an error object, got {other:?}"),
    };
    assert!(msg.contains("outside a fiber"), "{msg}");
    still_works(&rt);
}

/// Installs `gc_hook(fn)`: `fn` runs as a `__gc` finalizer of a fresh
/// garbage object (a `newproxy` userdata on LuaJIT, a table on Lua 5.4).
const GC_HOOK: &str = r#"
function gc_hook(fn)
    if newproxy then
        local p = newproxy(true)
        getmetatable(p).__gc = fn
    else
        setmetatable({}, {__gc = fn})
    end
end
"#;

#[test]
fn yield_inside_gc_finalizer_is_refused() {
    let rt = runtime();
    run(&rt, GC_HOOK);
    run(
        &rt,
        r#"
        local fiber = require('fiber')
        local unpack = unpack or table.unpack
        local results = {}
        local function record(name, f, ...)
            local args = {...}
            gc_hook(function()
                local ok, err = pcall(f, unpack(args))
                results[#results + 1] = {name = name, ok = ok, msg = tostring(err)}
            end)
        end
        local other_ran = false
        fiber.new(function() other_ran = true end)
        record('fiber.yield', fiber.yield)
        record('fiber.sleep(0)', fiber.sleep, 0)
        record('fiber.sleep(0.001)', fiber.sleep, 0.001)
        record('rust_sleep', rust_sleep, 0.001)
        local joinee = fiber.new(function() fiber.sleep(0.01) end)
        joinee:set_joinable(true)
        record('join', joinee.join, joinee)
        collectgarbage('collect')
        collectgarbage('collect')
        assert(#results == 5, #results .. ' finalizers ran')
        assert(not other_ran, 'a finalizer switched to another fiber')
        for _, r in ipairs(results) do
            assert(r.ok == false, r.name .. ' inside __gc was not refused')
            assert(r.msg:find('__gc', 1, true), r.name .. ': ' .. r.msg)
        end
        -- The fiber that collected goes on and can yield normally.
        fiber.yield()
        assert(other_ran)
        assert(joinee:join())
        FINALIZED = #results
        "#,
    );
    let n: i64 = rt.lua().globals().get("FINALIZED").unwrap();
    assert_eq!(n, 5);
    still_works(&rt);
}

#[test]
fn gc_finalizers_run_from_many_fibers_under_collection_pressure() {
    // Finalizers that try to yield fire from whichever fiber happens to
    // trigger a GC step, at any allocation; every attempt is refused.
    let rt = runtime();
    run(&rt, GC_HOOK);
    run(
        &rt,
        r#"
        local fiber = require('fiber')
        local refused, allowed = 0, 0
        local done = 0
        for i = 1, 100 do
            fiber.new(function()
                for k = 1, 50 do
                    gc_hook(function()
                        if pcall(fiber.yield) then allowed = allowed + 1 else refused = refused + 1 end
                    end)
                    local garbage = {string.rep('g', 100) .. k}
                    if k % 10 == 0 then collectgarbage('step') end
                    fiber.yield()
                end
                done = done + 1
            end)
        end
        for _ = 1, 100000 do
            if done == 100 then break end
            fiber.sleep(0.001)
        end
        assert(done == 100, done .. ' of 100 fibers finished')
        collectgarbage('collect')
        collectgarbage('collect')
        assert(allowed == 0, allowed .. ' yields inside __gc went through')
        assert(refused == 5000, refused .. ' of 5000 finalizers ran')
        "#,
    );
    still_works(&rt);
}

#[test]
fn yield_under_mlua_callback_is_refused() {
    let rt = runtime();
    let call_it = rt
        .lua()
        .create_function(|_, f: mlua::Function| f.call::<mlua::MultiValue>(()))
        .unwrap();
    rt.lua().globals().set("via_mlua", call_it).unwrap();
    run(
        &rt,
        r#"
        local fiber = require('fiber')
        local other_ran = false
        fiber.new(function() other_ran = true end)
        local results = {}
        for _, case in ipairs({
            {'fiber.yield', function() return fiber.yield() end},
            {'fiber.sleep(0)', function() return fiber.sleep(0) end},
            {'fiber.sleep(0.001)', function() return fiber.sleep(0.001) end},
            {'rust_sleep', function() return rust_sleep(0.001) end},
        }) do
            local name, f = case[1], case[2]
            local outer_ok, ok, err = pcall(via_mlua, function()
                local ok, err = pcall(f)
                return ok, tostring(err)
            end)
            assert(outer_ok, tostring(ok))
            assert(ok == false, name .. ' under an mlua callback was not refused')
            assert(err:find('mlua', 1, true), name .. ': ' .. err)
            results[#results + 1] = name
        end
        assert(not other_ran, 'a refused yield switched fibers')
        -- An unprotected yield under the callback comes out as an error.
        local ok, err = pcall(via_mlua, function() fiber.yield() end)
        assert(not ok and tostring(err):find('mlua', 1, true), tostring(err))
        -- Back outside the callback, yields work again.
        fiber.yield()
        assert(other_ran)
        fiber.sleep(0.001)
        REFUSED = #results
        "#,
    );
    let n: i64 = rt.lua().globals().get("REFUSED").unwrap();
    assert_eq!(n, 4);
    still_works(&rt);
}

#[test]
fn mlua_callback_that_does_not_yield_works_inside_fibers() {
    let rt = runtime();
    let add = rt
        .lua()
        .create_function(|_, (a, b): (i64, i64)| Ok(a + b))
        .unwrap();
    rt.lua().globals().set("mlua_add", add).unwrap();
    run(
        &rt,
        r#"
        local fiber = require('fiber')
        local sum, done = 0, 0
        for i = 1, 100 do
            fiber.new(function()
                for k = 1, 10 do
                    sum = mlua_add(sum, k)
                    fiber.yield()
                end
                done = done + 1
            end)
        end
        while done < 100 do fiber.yield() end
        assert(sum == 100 * 55, sum)
        "#,
    );
}
