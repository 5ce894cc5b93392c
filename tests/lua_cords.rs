//! Lua on several cords from Rust (`LuaRuntime::builder().cords(n)`):
//! calls and evals by MessagePack from any thread, the init steps every
//! cord runs, errors, a cord busy in a long Lua loop, calls that block only
//! their fiber, and the shutdown.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use luafiber::{CallErrorKind, LuaCords, LuaRuntime, Value};

#[path = "../fiber/tests/support/child.rs"]
mod child;

/// A MessagePack array of small non-negative integers.
fn ints(v: &[u64]) -> Vec<u8> {
    let mut buf = Vec::new();
    rmp::encode::write_array_len(&mut buf, v.len() as u32).unwrap();
    for &i in v {
        rmp::encode::write_uint(&mut buf, i).unwrap();
    }
    buf
}

/// The small non-negative integers of a MessagePack array.
fn read_ints(mut b: &[u8]) -> Vec<u64> {
    let n = rmp::decode::read_array_len(&mut b).unwrap();
    let v = (0..n)
        .map(|_| rmp::decode::read_int(&mut b).unwrap())
        .collect();
    assert!(b.is_empty(), "trailing bytes");
    v
}

const EMPTY: &[u8] = &[0x90];

/// Cords whose Lua states know `CORD` (their index) and `whoami()`.
fn cords(n: usize) -> LuaCords {
    LuaRuntime::builder()
        .cords(n)
        .on_cord_start(|rt, i| {
            rt.lua()
                .globals()
                .set("CORD", i as i64)
                .map_err(luafiber::LuaRuntimeError::Lua)
        })
        .eval("function whoami() return CORD end")
        .load_module(
            "calc",
            "return { add = function(a, b) return a + b end, \
                      pair = function(a, b) return b, a end }",
        )
        .build()
        .unwrap()
}

#[test]
fn call_and_eval_give_results_as_messagepack() {
    let c = cords(2);
    assert_eq!(c.cords(), 2);
    assert_eq!(
        read_ints(&c.call("calc.add", &ints(&[40, 2])).unwrap()),
        [42]
    );
    assert_eq!(
        read_ints(&c.call("calc.pair", &ints(&[1, 2])).unwrap()),
        [2, 1]
    );
    assert_eq!(
        read_ints(
            &c.eval("local a, b = ... return a * b, 7", &ints(&[6, 7]))
                .unwrap()
        ),
        [42, 7]
    );
    // Nothing returned: an empty array.
    assert_eq!(c.eval("local x = 1", EMPTY).unwrap(), EMPTY);
    // Strings and tables cross as MessagePack.
    let r = c.eval("return 'hi', {1, 2, 3}, {a = true}", EMPTY).unwrap();
    assert_eq!(r, b"\x93\xa2hi\x93\x01\x02\x03\x81\xa1a\xc3");
}

#[test]
fn call_on_runs_on_that_cord_and_call_on_any() {
    let c = cords(2);
    for i in 0..2u64 {
        assert_eq!(
            read_ints(&c.call_on(i as usize, "whoami", EMPTY).unwrap()),
            [i]
        );
        assert_eq!(
            read_ints(&c.eval_on(i as usize, "return CORD", EMPTY).unwrap()),
            [i]
        );
    }
    let any = read_ints(&c.call("whoami", EMPTY).unwrap());
    assert!(any == [0] || any == [1], "{any:?}");
    let e = c.call_on(2, "whoami", EMPTY).unwrap_err().to_string();
    assert_eq!(e, "LuaCords::call_on: no cord 2 (there are 2)");
}

#[test]
fn errors_name_what_failed() {
    let c = cords(1);
    let e = c.call("nope", EMPTY).unwrap_err();
    assert_eq!(e.kind(), CallErrorKind::Lua);
    assert_eq!(e.message(), "Procedure 'nope' is not defined");
    let e = c.eval("return print", EMPTY).unwrap_err();
    assert_eq!(e.kind(), CallErrorKind::Refused);
    let e = c.call("whoami", &[]).unwrap_err();
    assert_eq!(e.kind(), CallErrorKind::Refused);
    let e = c.eval("error('boom')", EMPTY).unwrap_err().to_string();
    assert_eq!(e, "eval:1: boom");
    let e = c
        .eval("error({message = 'an object'})", EMPTY)
        .unwrap_err()
        .to_string();
    assert_eq!(e, "an object");
    let e = c.eval("return 1 +", EMPTY).unwrap_err().to_string();
    assert!(e.contains("unexpected symbol near"), "{e}");
    // Results that cannot cross, at the top or inside a table.
    let e = c.eval("return 1, print", EMPTY).unwrap_err().to_string();
    assert_eq!(
        e,
        "LuaCords::eval: result 2 (a function) cannot be sent to another cord"
    );
    let e = c
        .eval("return {co = coroutine.create(print)}", EMPTY)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "LuaCords::eval: result 1 (a table holding a thread) cannot be sent to another cord"
    );
    let e = c.eval("return io.stdout", EMPTY).unwrap_err().to_string();
    assert_eq!(
        e,
        "LuaCords::eval: result 1 (a userdata) cannot be sent to another cord"
    );
    // Arguments must be one MessagePack array.
    let e = c.call("whoami", &[0x01]).unwrap_err().to_string();
    assert_eq!(
        e,
        "LuaCords::call: the arguments must be a MessagePack array"
    );
    let e = c.call("whoami", &[0x92, 0x01]).unwrap_err().to_string();
    assert_eq!(e, "LuaCords::call: Invalid MsgPack - truncated input");
    let e = c.call("whoami", &[0x90, 0x01]).unwrap_err().to_string();
    assert_eq!(e, "LuaCords::call: 1 bytes after the arguments' array");
    // The cord goes on serving.
    assert_eq!(read_ints(&c.call("whoami", EMPTY).unwrap()), [0]);
}

#[cfg(feature = "luajit")]
#[test]
fn pointer_cdata_cannot_cross_but_integers_do() {
    let c = cords(1);
    let e = c
        .eval("return require('ffi').cast('void *', 1)", EMPTY)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "LuaCords::eval: result 1 (a cdata) cannot be sent to another cord"
    );
    assert_eq!(c.eval("return 5ULL", EMPTY).unwrap(), [0x91, 5]);
}

#[test]
fn init_steps_run_on_every_cord_and_their_errors_fail_the_build() {
    let started = Arc::new(AtomicUsize::new(0));
    let s = started.clone();
    let c = LuaRuntime::builder()
        .cords(3)
        .on_cord_start(move |rt, _| {
            s.fetch_add(1, Ordering::SeqCst);
            // A Rust function made on the cord: it need not be Send.
            let local = std::rc::Rc::new(7i64);
            rt.register_fn("seven", move |_| Ok(vec![Value::Integer(*local)]))
        })
        .build()
        .unwrap();
    assert_eq!(started.load(Ordering::SeqCst), 3);
    for i in 0..3 {
        assert_eq!(
            read_ints(&c.eval_on(i, "return seven()", EMPTY).unwrap()),
            [7]
        );
    }
    let e = LuaRuntime::builder()
        .cords(2)
        .eval("error('no init for you')")
        .build()
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("cord ") && e.contains("no init for you"),
        "{e}"
    );
    let e = LuaRuntime::builder()
        .cords(1)
        .load_module("broken", "return {")
        .build()
        .unwrap_err()
        .to_string();
    assert!(e.contains("broken"), "{e}");
}

#[test]
fn many_threads_call_at_once_and_every_answer_is_right() {
    let c = Arc::new(cords(2));
    let seen = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
    let clients: Vec<_> = (0..4u64)
        .map(|t| {
            let c = c.clone();
            let seen = seen.clone();
            std::thread::spawn(move || {
                let calls: Vec<_> = (0..500u64)
                    .map(|i| c.spawn_call("calc.add", &ints(&[t * 1000, i])).unwrap())
                    .collect();
                for (i, call) in calls.into_iter().enumerate() {
                    assert_eq!(read_ints(&call.join().unwrap()), [t * 1000 + i as u64]);
                }
                for _ in 0..100 {
                    let who = read_ints(&c.call("whoami", EMPTY).unwrap())[0];
                    seen[who as usize].fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for t in clients {
        t.join().unwrap();
    }
    let total: usize = seen.iter().map(|s| s.load(Ordering::Relaxed)).sum();
    assert_eq!(total, 400);
}

#[test]
fn a_cord_in_a_long_lua_loop_does_not_stop_the_others() {
    static SPINNING: AtomicBool = AtomicBool::new(false);
    static RELEASE: AtomicBool = AtomicBool::new(false);
    let c = LuaRuntime::builder()
        .cords(2)
        .on_cord_start(|rt, i| {
            rt.lua()
                .globals()
                .set("CORD", i as i64)
                .map_err(luafiber::LuaRuntimeError::Lua)?;
            rt.register_fn("spinning", |_| {
                SPINNING.store(true, Ordering::SeqCst);
                Ok(vec![])
            })?;
            rt.register_fn("released", |_| {
                Ok(vec![RELEASE.load(Ordering::SeqCst).into()])
            })
        })
        .eval(
            "function whoami() return CORD end \
             function spin() \
                 spinning() \
                 local n = 0 \
                 while not released() do n = n + 1 end \
                 return CORD, n > 0 \
             end",
        )
        .build()
        .unwrap();
    // Cord 0 runs a loop that never yields until told to stop.
    let spin = c.spawn_call_on(0, "spin", EMPTY).unwrap();
    for _ in 0..10_000 {
        if SPINNING.load(Ordering::SeqCst) {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(SPINNING.load(Ordering::SeqCst), "the loop started");
    // Calls to any cord all go to cord 1 meanwhile, and all come back.
    let calls: Vec<_> = (0..200)
        .map(|_| c.spawn_call("whoami", EMPTY).unwrap())
        .collect();
    for call in calls {
        let r = call.join_timeout(Duration::from_secs(30)).unwrap();
        assert_eq!(read_ints(&r), [1]);
    }
    assert!(!spin.is_finished(), "cord 0 was busy all along");
    RELEASE.store(true, Ordering::SeqCst);
    let r = spin.join_timeout(Duration::from_secs(30)).unwrap();
    assert_eq!(r, [0x92, 0x00, 0xc3]);
    // And cord 0 serves again.
    assert_eq!(read_ints(&c.call_on(0, "whoami", EMPTY).unwrap()), [0]);
}

#[test]
fn a_call_from_a_fiber_blocks_only_that_fiber() {
    let c = Arc::new(cords(1));
    let ticks = luafiber::runtime::Runtime::new().block_on(move || {
        let done = Arc::new(AtomicBool::new(false));
        let d = done.clone();
        let ticker = luafiber::spawn(move || {
            let mut n = 0u32;
            while !d.load(Ordering::SeqCst) {
                luafiber::sleep(Duration::from_millis(1)).unwrap();
                n += 1;
            }
            n
        });
        let r = c
            .eval("require('fiber').sleep(0.05) return 42", EMPTY)
            .unwrap();
        assert_eq!(read_ints(&r), [42]);
        done.store(true, Ordering::SeqCst);
        ticker.join().unwrap()
    });
    assert!(ticks > 0, "the other fiber ran while the call waited");
}

#[test]
fn calls_overlap_on_a_cord_when_they_yield() {
    let c = cords(1);
    // 100 calls that each park on a channel until the last one came: they
    // can only all finish if they wait on the cord at the same time.
    c.eval(
        "local fiber = require('fiber') \
         gate = fiber.cond() arrived = 0 \
         function meet(n) \
             arrived = arrived + 1 \
             if arrived == n then gate:broadcast() else gate:wait() end \
             return arrived \
         end",
        EMPTY,
    )
    .unwrap();
    let calls: Vec<_> = (0..100)
        .map(|_| c.spawn_call("meet", &ints(&[100])).unwrap())
        .collect();
    for call in calls {
        let r = call.join_timeout(Duration::from_secs(30)).unwrap();
        assert_eq!(read_ints(&r), [100]);
    }
}

#[test]
fn join_timeout_and_the_shutdown_end_waits() {
    let c = LuaRuntime::builder()
        .cords(1)
        .eval("function nap(s) require('fiber').sleep(s) return s end")
        .build()
        .unwrap();
    assert_eq!(read_ints(&c.call("nap", &ints(&[0])).unwrap()), [0]);
    let e = c
        .spawn_call("nap", &ints(&[3600]))
        .unwrap()
        .join_timeout(Duration::from_millis(10))
        .unwrap_err();
    assert_eq!(e.to_string(), "timed out");
    // A call still waiting when the cords shut down fails, from any thread.
    let stuck = c.spawn_call("nap", &ints(&[3600])).unwrap();
    let waiter = std::thread::spawn(move || stuck.join());
    c.shutdown_timeout(Duration::from_secs(1));
    let r = waiter.join().unwrap();
    assert!(r.is_err(), "{r:?}");
}

/// Issue 29, item 2: `shutdown_timeout(200 ms)` on several cords whose Lua
/// fibers catch their cancel in a loop never returned (the cords' Lua
/// states were dropped by a shutdown loop that waited for them for ever).
/// Item 7: a call cut off by the shutdown is `Stopped`, not a Lua error.
#[test]
fn shutdown_with_fibers_that_catch_their_cancel_ends() {
    child::isolated("shutdown_with_fibers_that_catch_their_cancel_ends", || {
        let c = LuaRuntime::builder()
            .cords(3)
            .eval(
                "fiber = require('fiber') \
                 function worker() \
                     fiber.create(function() while true do pcall(fiber.sleep, 1) end end) \
                 end \
                 function nap(s) fiber.sleep(s) return s end",
            )
            .build()
            .unwrap();
        for i in 0..3 {
            c.call_on(i, "worker", EMPTY).unwrap();
        }
        let naps: Vec<_> = (0..3)
            .map(|i| c.spawn_call_on(i, "nap", &ints(&[3600])).unwrap())
            .collect();
        // Each nap has started: a later call on its cord has answered.
        for i in 0..3 {
            c.eval_on(i, "return 1", EMPTY).unwrap();
        }
        c.shutdown_timeout(Duration::from_millis(200));
        for nap in naps {
            let e = nap.join().unwrap_err();
            assert_eq!(e.kind(), CallErrorKind::Stopped, "{e}");
        }
    });
}

/// Issue 29, item 7: a call whose fiber another fiber cancels is
/// `Cancelled`; an error value with `__tostring` (or a cdata such as
/// `7LL`) crosses as the text `tostring` gives, not `table: 0x...`.
#[test]
fn cross_cord_errors_keep_their_text_and_kind() {
    let c = cords(1);
    let e = c
        .eval(
            "error(setmetatable({}, {__tostring = function() return 'custom text' end}))",
            EMPTY,
        )
        .unwrap_err();
    assert_eq!((e.kind(), e.message()), (CallErrorKind::Lua, "custom text"));
    #[cfg(feature = "luajit")]
    {
        let e = c.eval("error(7LL)", EMPTY).unwrap_err();
        assert_eq!((e.kind(), e.message()), (CallErrorKind::Lua, "7LL"));
    }
    let e = c
        .eval(
            "local fiber = require('fiber') \
             local me = fiber.self() \
             fiber.create(function() me:cancel() end) \
             fiber.sleep(10)",
            EMPTY,
        )
        .unwrap_err();
    assert_eq!(e.kind(), CallErrorKind::Cancelled, "{e}");
    assert_eq!(e.message(), "fiber is cancelled");
}
