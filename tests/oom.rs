//! Out of memory under the Lua memory limit is a Lua error for the code that
//! asked, never an abort.

use luafiber::{LuaRuntime, Value};

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
            Err(luafiber::LuaRuntimeError::Lua(e)) => {
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

#[path = "../fiber/tests/support/child.rs"]
mod child;

/// A runtime limited to `limit` bytes whose Lua code holds data (the global
/// `KEEP`) that fills the heap to within a few bytes of the limit;
/// `release()` lets go of it.
fn full_heap(limit: usize) -> LuaRuntime {
    let rt = LuaRuntime::builder().memory_limit(limit).build().unwrap();
    rt.eval(
        r#"
        function release() KEEP = nil collectgarbage() collectgarbage() end
        -- made before the heap fills, so calling them allocates nothing
        -- before their code runs
        function noop() end
        function grow() local t = {} for i = 1, 1e6 do t[i] = {i} end return t end
        function joined()
            local f = require('fiber').new(grow)
            f:set_joinable(true)
            return f:join()
        end
        local _ = {'return grow()', 'return noop()'}
        KEEP = {}
        local function fill()
            local t = KEEP
            -- big steps, then ever smaller ones: a linked list of tiny
            -- tables ends within one of them of the limit
            for i = 1, 1e9 do t[i] = string.rep('x', 1000) .. i end
        end
        local function tiny()
            local head = KEEP
            while true do head = {head} ; KEEP = head end
        end
        assert(not pcall(fill))
        collectgarbage()
        assert(not pcall(tiny))
        collectgarbage()
        assert(not pcall(tiny))
        "#,
        vec![],
    )
    .unwrap();
    rt
}

/// Whether `r` is Ok, or an error saying memory ran out (counted in
/// `OOMS`).
fn ok_or_oom<T: std::fmt::Debug>(r: Result<T, luafiber::LuaRuntimeError>, what: &str) {
    if let Err(e) = r {
        let msg = e.to_string();
        assert!(msg.contains("not enough memory"), "{what}: {msg}");
        OOMS.with(|n| n.set(n.get() + 1));
    }
}

thread_local! {
    /// The calls [`ok_or_oom`] saw fail for memory.
    static OOMS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Issue 29, item 1: with the heap at its limit, every Rust entry point
/// that pushes onto a Lua stack outside a protected call (the code of an
/// `eval`, the name of a `call`, arguments, a registered function's name,
/// mlua's own strings, the drop's collection) aborted the process ("Rust
/// cannot catch foreign exceptions" on LuaJIT, an unprotected error on Lua
/// 5.4). Now each one is an `Err` ("not enough memory") or works, and the
/// runtime is usable again once Lua lets go of the data.
#[test]
fn rust_calls_with_the_heap_at_its_limit_fail_cleanly() {
    child::isolated("rust_calls_with_the_heap_at_its_limit_fail_cleanly", || {
        for limit in [1 << 20, 8 << 20, 64 << 20] {
            let rt = full_heap(limit);
            let long = "x".repeat(4096);
            for i in 0..3 {
                let code = format!("return '{i}{long}'");
                ok_or_oom(rt.eval(&code, vec![]), "eval");
                ok_or_oom(rt.call(&format!("no_such_{i}_{long}"), vec![]), "call");
                ok_or_oom(
                    rt.call("release_no", vec![Value::from(long.as_str()); 8]),
                    "call with arguments",
                );
                ok_or_oom(
                    rt.spawn_call(&format!("spawned_{i}_{long}"), vec![])
                        .map(|h| drop(h.join())),
                    "spawn_call",
                );
                ok_or_oom(rt.load_module(&format!("m{i}{long}"), &code), "load_module");
                ok_or_oom(
                    rt.register_fn(&format!("f_{i}_{long}"), |_| Ok(vec![])),
                    "register_fn",
                );
                if let Err(e) = rt.lua().globals().set(format!("g{i}{long}"), long.as_str()) {
                    assert!(e.to_string().contains("memory"), "mlua set: {e}");
                }
                // A Rust fiber calling Lua through a handle.
                let h = rt.handle();
                let name = format!("from_rust_fiber_{i}_{long}");
                let got = std::rc::Rc::new(std::cell::RefCell::new(None));
                let put = got.clone();
                luafiber::fiber::Builder::new()
                    .spawn_ready(move || *put.borrow_mut() = Some(h.call(&name, vec![]).map(drop)))
                    .unwrap();
                rt.run();
                let r = got.borrow_mut().take().expect("the Rust fiber ran");
                ok_or_oom(r, "LuaHandle::call in a Rust fiber");
            }
            // Each call with a new 4 KiB string failed (the heap was full).
            assert!(OOMS.with(|n| n.take()) >= 3 * 3, "too few calls failed");
            rt.call("release", vec![]).unwrap();
            let r = rt
                .eval("return ...", vec![Value::from(long.as_str())])
                .unwrap();
            assert_eq!(r, [Value::from(long.as_str())]);
            // Dropped with the heap full again.
            drop(full_heap_again(rt));
        }
    });
}

/// Fills `rt`'s heap once more (as [`full_heap`]) and gives it back.
fn full_heap_again(rt: LuaRuntime) -> LuaRuntime {
    rt.eval(
        "KEEP = {} local function tiny() local h = KEEP \
         while true do h = {h} KEEP = h end end \
         assert(not pcall(tiny)) collectgarbage() assert(not pcall(tiny))",
        vec![],
    )
    .unwrap();
    rt
}

/// Calls that start with the heap at its limit (their name or code, and
/// the fiber's Lua thread, need no new memory) and run out of memory in
/// their function end with that error, on both engines: the fiber's
/// message handler made its traceback under the limit and failed, so the
/// call ended with "error in error handling" (both engines) instead. The
/// fiber's own work around its function (the handler, reading the outcome,
/// the report of a detached fiber's error) is exempt from the limit now.
/// And the runtime is usable once Lua lets go of the data: on Lua 5.4 the
/// threads that exempt bodies made past the limit (`fiber.new`) were
/// pooled, which kept the heap past it, so no call could run, not even the
/// one that lets go (a call needs a little memory there); a thread is not
/// pooled while the heap is past its limit now.
#[test]
fn calls_that_run_out_of_memory_after_they_start_end_with_that_error() {
    const TEST: &str = "calls_that_run_out_of_memory_after_they_start_end_with_that_error";
    if child::is_child(TEST) || child::inline() {
        run_out_after_start();
        return;
    }
    let out = child::run_alone_within(TEST, child::PATIENCE);
    child::assert_passed(&out);
    // The detached calls' errors were reported, each as it was.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("fiber error in fiber") && stderr.contains("not enough memory"),
        "{stderr}"
    );
    assert!(!stderr.contains("error in error handling"), "{stderr}");
}

/// The body of [`calls_that_run_out_of_memory_after_they_start_end_with_that_error`].
fn run_out_after_start() {
    let nem = |r: Result<Vec<Value>, luafiber::LuaRuntimeError>, what: &str| {
        let msg = r.expect_err(what).to_string();
        assert!(msg.contains("not enough memory"), "{what}: {msg}");
        assert!(!msg.contains("error in error handling"), "{what}: {msg}");
    };
    for limit in [1 << 20, 8 << 20, 64 << 20] {
        let rt = full_heap(limit);
        for i in 0..3 {
            nem(rt.call("grow", vec![]), "call");
            nem(rt.eval("return grow()", vec![]), "eval");
            nem(
                rt.spawn_call("grow", vec![])
                    .unwrap()
                    .join()
                    .map_err(luafiber::LuaRuntimeError::Fiber),
                "spawn_call",
            );
            // A fiber made by Lua code, joined by Lua code: its error is the
            // join's second result (or the caller ran out first).
            match rt.call("joined", vec![]) {
                Ok(r) => {
                    assert_eq!(r.first(), Some(&Value::Boolean(false)), "{r:?}");
                    let e = r.get(1).and_then(Value::as_bytes).unwrap_or_default();
                    assert!(
                        String::from_utf8_lossy(e).contains("not enough memory"),
                        "{r:?}"
                    );
                }
                Err(e) => nem(Err(e), "joined"),
            }
            // A call that needs nothing works, or fails for memory.
            if let Err(e) = rt.eval("return noop()", vec![]) {
                nem(Err(e), "noop");
            }
            // Detached: its error goes to stderr (checked by the parent).
            if i == 0 {
                let _ = rt.spawn_call("grow", vec![]).map(|h| h.detach());
                rt.run();
            }
        }
        rt.call("release", vec![]).unwrap();
        assert_eq!(
            rt.eval(
                "local t = {} for i = 1, 1000 do t[i] = {i} end return #t",
                vec![]
            )
            .unwrap(),
            [Value::Integer(1000)]
        );
    }
}
