//! Embedding: `call`/`eval` on fresh fibers by cached handler refs, Rust
//! functions that block only their Lua fiber, and Rust and Lua fibers
//! sharing one channel.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use luafiber::fiber::{self, Channel};
use luafiber::{FiberError, LuaRuntime, LuaRuntimeError as Error};
use luafiber_lua::{LuaHandle, Value};

/// The fiber error of a failed call.
fn fiber_error<T: std::fmt::Debug>(r: Result<T, Error>) -> FiberError {
    match r {
        Err(Error::Fiber(e)) => e,
        other => panic!("expected a fiber error, got {other:?}"),
    }
}

/// The Lua message (and traceback) of a call that raised.
fn lua_error<T: std::fmt::Debug>(r: Result<T, Error>) -> String {
    let e = fiber_error(r);
    assert!(e.is_lua_error(), "{e:?}");
    e.lua_message().unwrap_or_default().to_owned()
}

const MODULE: &str = r#"
local fiber = require('fiber')
local M = {}
function M.add(a, b) return a + b end
function M.many() return 1, nil, 'three', {1, 2, x = true} end
M.log = {}
function M.slow(x)
    table.insert(M.log, 'start')
    fiber.sleep(0.01)
    table.insert(M.log, 'end')
    return x
end
function M.fail(msg) local function deep() error(msg) end deep() end
function M.fail_object() error({message = 'as object'}) end
M.obj = { k = 10 }
function M.obj:get(d) return self.k + d end
return M
"#;

fn rt_with_module() -> LuaRuntime {
    let rt = LuaRuntime::new().unwrap();
    rt.load_module("m", MODULE).unwrap();
    rt
}

#[test]
fn call_returns_values() {
    let rt = rt_with_module();
    assert_eq!(
        rt.call("m.add", vec![40.into(), 2.into()]).unwrap(),
        [Value::Integer(42)]
    );
    let r = rt.call("m.many", vec![]).unwrap();
    assert_eq!(r.len(), 4, "{r:?}");
    assert_eq!(r[0], Value::Integer(1));
    assert_eq!(r[1], Value::Nil);
    assert_eq!(r[2].as_str(), Some("three"));
    let t = &r[3];
    assert_eq!(t.as_array(), None, "has a non-array key");
    assert_eq!(t.get(1), Some(&Value::Integer(1)));
    assert_eq!(t.get("x"), Some(&Value::Boolean(true)));
    // Method call through ':'.
    assert_eq!(
        rt.call("m.obj:get", vec![5.into()]).unwrap(),
        [Value::Integer(15)]
    );
    // The module is also in package.loaded.
    assert_eq!(
        rt.eval("return require('m') == m", vec![]).unwrap(),
        [Value::Boolean(true)]
    );
    // A call that sleeps: the scheduler runs until it ends.
    assert_eq!(
        rt.call("m.slow", vec!["z".into()]).unwrap(),
        [Value::from("z")]
    );
    // Tables and bytes go both ways.
    let arr = Value::from(vec![Value::from(1), Value::from(b"\xff\x00".to_vec())]);
    let r = rt
        .eval("local t = ... return #t, t[2], {a = 1}", vec![arr])
        .unwrap();
    assert_eq!(r[0], Value::Integer(2));
    assert_eq!(r[1].as_bytes(), Some(&b"\xff\x00"[..]));
    assert_eq!(r[2], Value::from(vec![(Value::from("a"), Value::from(1))]));
    assert_eq!(fiber::stats().fibers, 0);
}

#[test]
fn call_errors() {
    let rt = rt_with_module();
    let tb = lua_error(rt.call("m.fail", vec!["boom".into()]));
    assert!(tb.contains("boom"), "{tb}");
    assert!(tb.contains("stack traceback"), "{tb}");
    assert!(tb.contains("deep"), "{tb}");
    let tb = lua_error(rt.call("m.fail_object", vec![]));
    assert!(tb.contains("as object"), "{tb}");
    for name in [
        "nope",
        "m.nope",
        "m.add.x",
        "m..add",
        "",
        "m.obj:nope",
        "m.obj:get.x",
    ] {
        let msg = lua_error(rt.call(name, vec![]));
        assert!(
            msg.contains(&format!("Procedure '{name}' is not defined")),
            "{name}: {msg}"
        );
    }
    let msg = lua_error(rt.eval("return = 1", vec![]));
    assert!(msg.contains("eval"), "{msg}");
    match rt.load_module("bad", "local = 1") {
        Err(Error::Load(msg)) => assert!(msg.contains("bad"), "{msg}"),
        other => panic!("{other:?}"),
    }
    let msg = lua_error(rt.load_module("raises", "error('at load')"));
    assert!(msg.contains("at load"), "{msg}");
    // A call blocked forever with nothing else to run is cancelled; the
    // error names its fiber.
    let e = fiber_error(rt.eval("require('fiber').sleep(math.huge)", vec![]));
    assert!(e.is_cancelled(), "{e:?}");
    assert!(e.to_string().contains("cancelled"), "{e}");
    // A call whose function ends with FiberIsCancelled is a cancel too.
    let e = fiber_error(rt.eval("require('fiber').self():cancel()", vec![]));
    assert!(e.is_cancelled(), "{e:?}");
    // The runtime still works, and nothing leaked.
    assert_eq!(
        rt.call("m.add", vec![1.into(), 1.into()]).unwrap(),
        [Value::Integer(2)]
    );
    assert_eq!(fiber::stats().fibers, 0);
}

#[test]
fn eval_cache_and_args() {
    let rt = LuaRuntime::new().unwrap();
    for i in 0..3000 {
        // Distinct sources past the cache size, and repeats.
        let code = format!("return ... + {}", i % 1500);
        let r = rt.eval(&code, vec![Value::from(i)]).unwrap();
        assert_eq!(r, [Value::Integer(i as i64 + (i as i64 % 1500))]);
    }
    assert_eq!(
        rt.eval("return select('#', ...)", vec![Value::Nil, Value::Nil])
            .unwrap(),
        [Value::Integer(2)]
    );
}

#[test]
fn spawn_call_and_spawn_lua_overlap() {
    let rt = rt_with_module();
    let calls: Vec<_> = (0..200)
        .map(|i| rt.spawn_call("m.slow", vec![Value::from(i)]).unwrap())
        .collect();
    let f: luafiber::mlua::Function = rt
        .lua()
        .load("return function(a, b) require('fiber').sleep(0.01) return a * b end")
        .eval()
        .unwrap();
    let lua_call = rt.spawn_lua(f, vec![6.into(), 7.into()]).unwrap();
    rt.run();
    for (i, c) in calls.into_iter().enumerate() {
        assert_eq!(c.join().unwrap(), [Value::Integer(i as i64)]);
    }
    assert_eq!(lua_call.join().unwrap(), [Value::Integer(42)]);
    // They overlapped: all 200 started before the first one ended.
    let log: Vec<String> = rt.lua().load("return m.log").eval().unwrap();
    assert_eq!(log.len(), 400);
    assert!(log[..200].iter().all(|e| e == "start"), "{log:?}");
    // A dropped handle detaches; an ended, unjoined one is freed on drop.
    drop(rt.spawn_call("m.slow", vec![1.into()]).unwrap());
    rt.run();
    let ended = rt.spawn_call("m.add", vec![1.into(), 2.into()]).unwrap();
    rt.run();
    drop(ended);
    assert_eq!(fiber::stats().fibers, 0);
}

#[test]
fn call_from_rust_fiber_and_from_registered_fn() {
    let rt = rt_with_module();
    let got = Rc::new(Cell::new(0));
    for i in 0..50 {
        let got = got.clone();
        fiber::Builder::new()
            .spawn_ready(move || {
                let h = LuaHandle::current().unwrap();
                let r = h.call("m.slow", vec![Value::from(i)]).unwrap();
                assert_eq!(r, [Value::Integer(i)]);
                let r = h.eval("return ... * 2", vec![Value::from(i)]).unwrap();
                assert_eq!(r, [Value::Integer(i * 2)]);
                got.set(got.get() + 1);
            })
            .unwrap();
    }
    rt.run();
    assert_eq!(got.get(), 50);
    // Lua -> Rust -> Lua: a registered function calls back into Lua.
    rt.register_fn("add_via_rust", |args| {
        Ok(LuaHandle::current().unwrap().call("m.add", args)?)
    })
    .unwrap();
    assert_eq!(
        rt.eval("return add_via_rust(...)", vec![2.into(), 3.into()])
            .unwrap(),
        [Value::Integer(5)]
    );
    assert_eq!(fiber::stats().fibers, 0);
}

#[test]
fn ten_thousand_lua_fibers_block_in_a_rust_function() {
    const N: i64 = 10_000;
    let rt = LuaRuntime::new().unwrap();
    let inside = Rc::new(Cell::new(0i64));
    let peak = Rc::new(Cell::new(0i64));
    {
        let (inside, peak) = (inside.clone(), peak.clone());
        rt.register_fn("rust_sleep", move |args| {
            let x = args
                .first()
                .and_then(Value::as_i64)
                .ok_or("expected an integer")?;
            inside.set(inside.get() + 1);
            peak.set(peak.get().max(inside.get()));
            fiber::sleep(Duration::from_millis(100))?;
            inside.set(inside.get() - 1);
            Ok(vec![Value::Integer(x + 1)])
        })
        .unwrap();
    }
    let r = rt
        .eval(
            r#"
            local fiber = require('fiber')
            local n = ...
            local fs = {}
            for i = 1, n do
                local f = fiber.new(rust_sleep, i)
                f:set_joinable(true)
                fs[i] = f
            end
            local sum = 0
            for i = 1, n do
                local ok, v = fs[i]:join()
                assert(ok, v)
                sum = sum + v
            end
            return sum
            "#,
            vec![Value::Integer(N)],
        )
        .unwrap();
    assert_eq!(r, [Value::Integer(N * (N + 1) / 2 + N)]);
    assert_eq!(peak.get(), N, "all were inside the Rust function at once");
    assert_eq!(fiber::stats().fibers, 0);
}

#[test]
fn rust_and_lua_fibers_share_one_channel() {
    const TOTAL: i64 = 100_000;
    const LUA_PRODUCERS: i64 = 10;
    const RUST_PRODUCERS: i64 = 10;
    const LUA_CONSUMERS: i64 = 5;
    const RUST_CONSUMERS: i64 = 5;
    let rt = LuaRuntime::new().unwrap();
    let ch: Channel<i64> = Channel::new(16);
    {
        let ch = ch.clone();
        rt.register_fn("ch_put", move |args| {
            let v = args
                .first()
                .and_then(Value::as_i64)
                .ok_or("expected an integer")?;
            ch.put(v, None).map_err(|e| e.to_string())?;
            Ok(vec![])
        })
        .unwrap();
    }
    {
        let ch = ch.clone();
        rt.register_fn("ch_get", move |_| match ch.get(None) {
            Ok(v) => Ok(vec![Value::Integer(v)]),
            Err(fiber::GetError::Closed) => Ok(vec![Value::Nil]),
            Err(e) => Err(e.to_string().into()),
        })
        .unwrap();
    }
    // Values 1..=TOTAL: the first half from Lua producers, the rest from
    // Rust producers, each producer a contiguous range.
    let half = TOTAL / 2;
    rt.eval(
        r#"
        function lua_producer(from, to) for v = from, to do ch_put(v) end end
        function lua_consumer()
            local n, sum = 0, 0
            while true do
                local v = ch_get()
                if v == nil then return n, sum end
                n, sum = n + 1, sum + v
            end
        end
        "#,
        vec![],
    )
    .unwrap();
    let mut producers = Vec::new();
    for p in 0..LUA_PRODUCERS {
        let per = half / LUA_PRODUCERS;
        let from = 1 + p * per;
        producers.push(
            rt.spawn_call("lua_producer", vec![from.into(), (from + per - 1).into()])
                .unwrap(),
        );
    }
    let rust_done = Rc::new(Cell::new(0));
    for p in 0..RUST_PRODUCERS {
        let per = (TOTAL - half) / RUST_PRODUCERS;
        let from = half + 1 + p * per;
        let ch = ch.clone();
        let rust_done = rust_done.clone();
        fiber::Builder::new()
            .spawn_ready(move || {
                for v in from..from + per {
                    ch.put(v, None).unwrap();
                }
                rust_done.set(rust_done.get() + 1);
            })
            .unwrap();
    }
    let consumers: Vec<_> = (0..LUA_CONSUMERS)
        .map(|_| rt.spawn_call("lua_consumer", vec![]).unwrap())
        .collect();
    let rust_got = Rc::new(Cell::new((0i64, 0i64)));
    for _ in 0..RUST_CONSUMERS {
        let ch = ch.clone();
        let rust_got = rust_got.clone();
        fiber::Builder::new()
            .spawn_ready(move || {
                while let Ok(v) = ch.get(None) {
                    let (n, s) = rust_got.get();
                    rust_got.set((n + 1, s + v));
                }
            })
            .unwrap();
    }
    // A closer: waits for every producer, then closes the channel.
    {
        let ch = ch.clone();
        let rust_done = rust_done.clone();
        let producers = Rc::new(std::cell::RefCell::new(Some(producers)));
        fiber::Builder::new()
            .spawn_ready(move || {
                for p in producers.borrow_mut().take().unwrap() {
                    p.join().unwrap();
                }
                while rust_done.get() < RUST_PRODUCERS {
                    fiber::sleep(Duration::from_millis(1)).unwrap();
                }
                ch.close();
            })
            .unwrap();
    }
    let t = Instant::now();
    rt.run();
    let (mut n, mut sum) = rust_got.get();
    let rust_n = n;
    for c in consumers {
        let r = c.join().unwrap();
        n += r[0].as_i64().unwrap();
        sum += r[1].as_i64().unwrap();
    }
    eprintln!(
        "{TOTAL} values over one channel in {:?} ({rust_n} to Rust consumers)",
        t.elapsed()
    );
    assert_eq!(n, TOTAL, "none lost, none doubled");
    assert_eq!(sum, TOTAL * (TOTAL + 1) / 2);
    assert!(
        rust_n > 0 && rust_n < TOTAL,
        "both kinds of consumer took values"
    );
    assert_eq!(fiber::stats().fibers, 0);
}

/// Issue 13, item 6: a function of another Lua state is an error, as the
/// docs promise, not a panic inside mlua; the runtime goes on working.
#[test]
fn spawn_lua_with_foreign_function_is_an_error() {
    let rt = LuaRuntime::new().unwrap();
    let other = luafiber::mlua::Lua::new();
    let foreign: luafiber::mlua::Function =
        other.load("return function() return 1 end").eval().unwrap();
    match rt.spawn_lua(foreign, vec![]) {
        Err(Error::Lua(e)) => assert!(e.to_string().contains("another Lua state"), "{e}"),
        other => panic!("expected Error::Lua, got {other:?}"),
    }
    let own: luafiber::mlua::Function = rt
        .lua()
        .load("return function(x) return x + 1 end")
        .eval()
        .unwrap();
    let h = rt.spawn_lua(own, vec![1.into()]).unwrap();
    assert_eq!(h.join().unwrap(), [Value::Integer(2)]);
}

#[path = "../fiber/tests/support/child.rs"]
mod child;

/// A value of `depth` nested tables around an integer, built without
/// recursion.
fn nest(depth: usize) -> Value {
    let mut v = Value::Integer(1);
    for _ in 0..depth {
        v = Value::from(vec![v]);
    }
    v
}

/// Issue 29, item 5: a `Value` nested about 4,000 deep made `call` and
/// `eval` panic ("the Lua stack is full") and aborted the process when a
/// registered function returned it; at 100,000 levels the conversion (and
/// the value's drop) overflowed the fiber's stack. Now Rust values get the
/// cap Lua values have (64 levels): deeper is a clean error both ways.
#[test]
fn deep_rust_values_are_a_clean_error_both_ways() {
    child::isolated("deep_rust_values_are_a_clean_error_both_ways", || {
        let rt = LuaRuntime::new().unwrap();
        rt.eval("function id(...) return ... end", vec![]).unwrap();
        assert_eq!(rt.call("id", vec![nest(63)]).unwrap(), [nest(63)]);
        for depth in [65, 4_000, 100_000] {
            let e = rt.call("id", vec![nest(depth)]).unwrap_err().to_string();
            assert!(
                e.contains("argument 1: table nesting too deep"),
                "{depth}: {e}"
            );
            let e = rt
                .eval("return ...", vec![Value::Nil, nest(depth)])
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("argument 2: table nesting too deep"),
                "{depth}: {e}"
            );
        }
        // Returned by a registered function, called on a fiber (512 KiB of
        // stack).
        rt.register_fn("deep", |args| {
            let depth = args[0].as_i64().unwrap_or(0) as usize;
            Ok(vec![Value::Nil, nest(depth)])
        })
        .unwrap();
        let r = rt
            .eval("local a, b = deep(...) return #b", vec![Value::from(63)])
            .unwrap();
        assert_eq!(r, [Value::Integer(1)]);
        for depth in [65i64, 4_000, 100_000] {
            let r = rt
                .eval(
                    "local ok, e = pcall(deep, ...) return ok, tostring(e)",
                    vec![Value::from(depth)],
                )
                .unwrap();
            assert_eq!(r[0], Value::Boolean(false), "{depth}");
            let msg = r[1].as_str().unwrap_or_default();
            assert!(
                msg.contains("deep: result 2: table nesting too deep"),
                "{depth}: {msg}"
            );
        }
        // Lua to Rust: the same cap.
        let e = rt
            .eval(
                "local t = 1 for i = 1, 100000 do t = {t} end return t",
                vec![],
            )
            .unwrap_err()
            .to_string();
        assert!(e.contains("nesting too deep"), "{e}");
        // The runtime goes on.
        assert_eq!(
            rt.call("id", vec![Value::from(7)]).unwrap(),
            [Value::Integer(7)]
        );
    });
}
