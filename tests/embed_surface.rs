//! The embedding surface (issue 30): one `Builder`, `Runtime`, `Handle`
//! and `Error`; typed calls (tuples, structs, maps, nil, 64-bit integers,
//! binary strings), error kinds, call futures awaited from tokio and from
//! hand-made executors, a dropped future cancelling its Lua fiber, Lua
//! awaiting Rust async functions, one cord and two. Both engines.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use luafiber::{Builder, Error, ErrorKind, Handle, Runtime};
use serde::{Deserialize, Serialize};

const APP: &str = r#"
local fiber = require('fiber')
local M = {}
function M.add(a, b) return a + b end
function M.id(...) return ... end
function M.pair() return 1, 'two' end
function M.none() end
function M.null() return box.NULL end
function M.typeof(...)
    local t = {}
    for i = 1, select('#', ...) do
        local v = select(i, ...)
        -- A nil arrives as box.NULL, as Tarantool's msgpack decodes it
        -- (== nil on LuaJIT; a light userdata on Lua 5.4).
        t[i] = (v == nil or v == box.NULL) and 'nil' or type(v)
    end
    return t
end
function M.bytes() return '\0\255\1' end
function M.fail() error('no such user') end
function M.fail_table() error({code = 7, reason = 'bad'}) end
function M.func() return function() end end
function M.cancel_self() fiber.self():cancel() fiber.testcancel() end
function M.slow()
    M.started = true
    local ok = pcall(fiber.sleep, 30)
    M.state = ok and 'slept' or 'cancelled'
end
function M.cord() return CORD end
function M.mark() M.marked = 'yes' end
return M
"#;

fn runtime(cords: usize) -> Runtime {
    Builder::new()
        .cords(cords)
        .load_module("app", APP)
        .on_cord_start(|lua, cord| {
            lua.mlua()
                .globals()
                .set("CORD", cord as i64)
                .map_err(|e| Error::new(ErrorKind::Lua, e.to_string()))
        })
        .build()
        .expect("the runtime starts")
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct User {
    id: u64,
    name: String,
    tags: Vec<String>,
    boss: Option<Box<User>>,
}

#[test]
fn typed_values_cross_both_ways() {
    let rt = runtime(1);
    let h = rt.handle();
    assert_eq!(h.call::<i64>("app.add", (1, 2)).unwrap(), 3);
    assert_eq!(h.call::<f64>("app.add", (1.5, 2)).unwrap(), 3.5);
    // Several results into a tuple; missing ones are nil; extra dropped.
    assert_eq!(
        h.call::<(i64, String)>("app.pair", ()).unwrap(),
        (1, "two".into())
    );
    assert_eq!(
        h.call::<(i64, Option<i64>)>("app.id", (5,)).unwrap(),
        (5, None)
    );
    assert_eq!(h.call::<i64>("app.pair", ()).unwrap(), 1);
    h.call::<()>("app.pair", ()).unwrap();
    // Nothing, nil and box.NULL are None.
    assert_eq!(h.call::<Option<i64>>("app.none", ()).unwrap(), None);
    assert_eq!(h.call::<Option<i64>>("app.null", ()).unwrap(), None);
    assert_eq!(
        h.call::<Option<i64>>("app.id", Option::<i64>::None)
            .unwrap(),
        None
    );
    // One non-tuple argument is one Lua value: a Vec is one table.
    let types: Vec<String> = h.call("app.typeof", vec![1, 2, 3]).unwrap();
    assert_eq!(types, ["table"]);
    let types: Vec<String> = h.call("app.typeof", (1, "x", (), true)).unwrap();
    assert_eq!(types, ["number", "string", "nil", "boolean"]);
    // Integers to 64 bits, both signs.
    for v in [
        i64::MIN,
        i64::MIN + 1,
        -1,
        0,
        1 << 53,
        (1 << 53) + 1,
        i64::MAX,
    ] {
        assert_eq!(h.call::<i64>("app.id", v).unwrap(), v, "{v}");
    }
    // Past i64::MAX: a uint64_t cdata on LuaJIT; Lua 5.4's integers are
    // signed, so its decoder makes a float (as the msgpack module does).
    #[cfg(not(feature = "lua54"))]
    assert_eq!(h.call::<u64>("app.id", u64::MAX).unwrap(), u64::MAX);
    #[cfg(feature = "lua54")]
    assert_eq!(h.call::<f64>("app.id", u64::MAX).unwrap(), u64::MAX as f64);
    // Structs as maps (Lua tables with field names), nested, with nil.
    let u = User {
        id: 7,
        name: "ann".into(),
        tags: vec!["a".into(), "b".into()],
        boss: Some(Box::new(User {
            id: 1,
            name: "bob".into(),
            tags: vec![],
            boss: None,
        })),
    };
    let back: User = h.call("app.id", &u).unwrap();
    assert_eq!(back, u);
    let name: String = h.eval("local u = ... return u.boss.name", &u).unwrap();
    assert_eq!(name, "bob");
    // Maps.
    let m: BTreeMap<String, i64> = [("a".into(), 1), ("b".into(), 2)].into();
    let back: BTreeMap<String, i64> = h.call("app.id", &m).unwrap();
    assert_eq!(back, m);
    let got: BTreeMap<String, i64> = h.eval("return {x = 1, y = 2}", ()).unwrap();
    assert_eq!(got, [("x".into(), 1), ("y".into(), 2)].into());
    // Binary strings: bytes in, a Lua string of those bytes, bytes out.
    let bin = serde_bytes::ByteBuf::from(vec![0u8, 255, 1, 128]);
    let len: i64 = h.eval("return #(...)", &bin).unwrap();
    assert_eq!(len, 4);
    let back: serde_bytes::ByteBuf = h.call("app.id", &bin).unwrap();
    assert_eq!(back, bin);
    let raw: serde_bytes::ByteBuf = h.call("app.bytes", ()).unwrap();
    assert_eq!(raw.as_slice(), b"\0\xff\x01");
    // The bytes path.
    assert_eq!(h.call_raw("app.add", &[0x92, 1, 2]).unwrap(), [0x91, 3]);
    rt.shutdown_timeout(Duration::from_secs(1));
}

#[test]
fn errors_have_kinds_and_fiber_ids() {
    let rt = runtime(1);
    let h = rt.handle();
    let e = h.call::<()>("app.fail", ()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Lua, "{e:?}");
    assert!(e.message().contains("no such user"), "{e}");
    assert!(e.fiber_id().is_some(), "{e:?}");
    let e = h.call::<()>("app.fail_table", ()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Lua);
    let v: BTreeMap<String, serde_json_like::V> = e.lua_value().expect("the raised table");
    assert_eq!(v["code"], serde_json_like::V::I(7));
    // A table without `__tostring` shows its fields, not `table: 0x...`.
    assert!(e.message().contains(r#""code": 7"#), "{e}");
    assert_eq!(
        h.call::<()>("app.nope", ()).unwrap_err().kind(),
        ErrorKind::Lua
    );
    assert_eq!(
        h.eval::<()>("return +", ()).unwrap_err().kind(),
        ErrorKind::Lua
    );
    // The results do not make the type asked for.
    let e = h.call::<i64>("app.pair", ()).map(drop);
    assert!(e.is_ok());
    let e = h.call::<String>("app.add", (1, 2)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Convert, "{e:?}");
    // A result with no MessagePack form, bad bytes, no such cord.
    assert_eq!(
        h.call::<()>("app.func", ()).unwrap_err().kind(),
        ErrorKind::Refused
    );
    assert_eq!(
        h.call_raw("app.add", &[0x01]).unwrap_err().kind(),
        ErrorKind::Refused
    );
    assert_eq!(
        h.call_on::<()>(5, "app.none", ()).unwrap_err().kind(),
        ErrorKind::Refused
    );
    // The call's fiber cancelled on its cord.
    let e = h.call::<()>("app.cancel_self", ()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Cancelled, "{e:?}");
    // A Rust function's error kinds reach Lua as Tarantool's error types.
    rt.register_fn("slow_op", |()| -> Result<(), Error> {
        Err(Error::new(ErrorKind::TimedOut, "took too long"))
    })
    .unwrap();
    let (ty, msg): (String, String) = h
        .eval("local ok, e = pcall(slow_op) return e.type, e.message", ())
        .unwrap();
    assert_eq!(ty, "TimedOut");
    assert_eq!(msg, "slow_op: took too long", "the host's message is kept");
    // And back: Lua code that raises the TimedOut error object (here the
    // Rust function's) gives ErrorKind::TimedOut.
    let e = h.eval::<()>("slow_op()", ()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TimedOut, "{e:?}");
    // A panic in a Rust function Lua called, not caught there: Panic.
    rt.register_fn("boom", |()| -> Result<(), Error> { panic!("rust boom") })
        .unwrap();
    let e = h.eval::<()>("boom()", ()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Panic, "{e:?}");
    assert!(e.message().contains("rust boom"), "{e}");
    // Stopped: the runtime went first.
    rt.shutdown_timeout(Duration::from_secs(1));
    assert_eq!(
        h.call::<()>("app.none", ()).unwrap_err().kind(),
        ErrorKind::Stopped
    );
    // Build errors, and a runtime without Lua.
    let e = Builder::new().memory_limit(1000).build().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Build, "{e:?}");
    let e = Builder::new()
        .exec("error('init failed')")
        .build()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Build);
    assert!(e.message().contains("init failed"), "{e}");
    let plain = Builder::new().lua(false).cords(2).build().unwrap();
    assert_eq!(
        plain.call::<()>("x", ()).unwrap_err().kind(),
        ErrorKind::Refused
    );
    assert_eq!(plain.spawn_on(1, || 6 * 7).join().unwrap(), 42);
}

/// Just enough of a dynamic value for the error table above.
mod serde_json_like {
    #[derive(Debug, PartialEq, serde::Deserialize)]
    #[serde(untagged)]
    pub enum V {
        I(i64),
        S(String),
    }
}

#[test]
fn futures_from_tokio_current_thread() {
    let rt = runtime(2);
    let h = rt.handle();
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let sum = tokio.block_on(async {
        // 4 tasks with 64 calls in flight each.
        let tasks: Vec<_> = (0..4i64)
            .map(|t| {
                let h = h.clone();
                tokio::spawn(async move {
                    let calls: Vec<_> = (0..64i64)
                        .map(|i| h.call_async::<i64>("app.add", (t * 64, i)))
                        .collect();
                    let mut sum = 0;
                    for c in calls {
                        sum += c.await.unwrap();
                    }
                    sum
                })
            })
            .collect();
        let mut sum = 0;
        for t in tasks {
            sum += t.await.unwrap();
        }
        sum
    });
    assert_eq!(sum, (0..256).sum::<i64>());
    rt.shutdown_timeout(Duration::from_secs(1));
}

/// The smallest executor: poll, park the thread until the waker unparks it.
fn block_on<F: Future>(fut: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut fut = std::pin::pin!(fut);
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park_timeout(Duration::from_millis(100));
    }
}

#[test]
fn futures_from_hand_made_executors() {
    let rt = runtime(1);
    let h = rt.handle();
    assert_eq!(block_on(h.call_async::<i64>("app.add", (2, 3))).unwrap(), 5);
    let e = block_on(h.eval_async::<()>("error('boom')", ())).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Lua);
    let all = futures::executor::block_on(async {
        let a = h.call_async::<i64>("app.add", (1, 1));
        let b = h.eval_async::<String>("return 'b'", ());
        (a.await.unwrap(), b.await.unwrap())
    });
    assert_eq!(all, (2, "b".to_string()));
    rt.shutdown_timeout(Duration::from_secs(1));
}

/// Waits (bounded) until `code` on cord 0 returns `want`.
fn wait_for(h: &Handle, code: &str, want: &str) {
    for _ in 0..2000 {
        if h.eval_on::<Option<String>>(0, code, ()).unwrap().as_deref() == Some(want) {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    panic!("{code} never gave {want}");
}

#[test]
fn dropping_the_future_cancels_the_fiber() {
    let rt = runtime(1);
    let h = rt.handle();
    let call = h.call_on_async::<()>(0, "app.slow", ());
    wait_for(&h, "return app.started and 'yes'", "yes");
    drop(call);
    wait_for(&h, "return app.state", "cancelled");
    rt.shutdown_timeout(Duration::from_secs(1));
}

#[test]
fn a_future_dropped_before_its_call_started_never_starts() {
    let rt = runtime(1);
    let h = rt.handle();
    // Hold cord 0's thread (a Rust closure that blocks it) so that the call
    // waits in its inbox while the future is dropped.
    let (started, wait) = std::sync::mpsc::channel();
    let (release, held) = std::sync::mpsc::channel::<()>();
    let blocker = rt.spawn_on(0, move || {
        started.send(()).unwrap();
        held.recv_timeout(Duration::from_secs(30)).unwrap();
    });
    wait.recv().unwrap();
    drop(h.call_on_async::<()>(0, "app.mark", ()));
    release.send(()).unwrap();
    blocker.join().unwrap();
    // A call sent after it runs after it (the inbox is in order).
    assert_eq!(
        h.call_on::<Option<String>>(0, "app.id", "after")
            .unwrap()
            .as_deref(),
        Some("after")
    );
    assert_eq!(
        h.eval_on::<Option<String>>(0, "return app.marked", ())
            .unwrap(),
        None
    );
    rt.shutdown_timeout(Duration::from_secs(1));
}

#[test]
fn lua_awaits_rust_async_fns() {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_time()
        .build()
        .unwrap();
    let tk = tokio.handle().clone();
    const N: usize = 8;
    let barrier = Arc::new(tokio::sync::Barrier::new(N));
    let waiting = Arc::new(AtomicUsize::new(0));
    let w = waiting.clone();
    let rt = Builder::new()
        .load_module("app", APP)
        // Each call parks its Lua fiber on a barrier all N must reach: it
        // opens only when N fibers of the one cord wait at once.
        .register_async_fn("meet", move |i: i64| {
            let (b, w) = (barrier.clone(), w.clone());
            async move {
                w.fetch_add(1, Ordering::SeqCst);
                b.wait().await;
                Ok(i * 10)
            }
        })
        // A tokio task awaited from Lua.
        .register_async_fn("later", move |(a, b): (i64, i64)| {
            let task = tk.spawn(async move {
                tokio::time::sleep(Duration::from_millis(1)).await;
                a + b
            });
            async move {
                task.await
                    .map_err(|e| Error::new(ErrorKind::Panic, e.to_string()))
            }
        })
        .build()
        .unwrap();
    let h = rt.handle();
    assert_eq!(h.eval::<i64>("return later(...)", (20, 22)).unwrap(), 42);
    let got = tokio.block_on(async {
        let calls: Vec<_> = (0..N as i64)
            .map(|i| h.eval_async::<i64>("return meet(...)", i))
            .collect();
        let all = async {
            let mut v = Vec::new();
            for c in calls {
                v.push(c.await.unwrap());
            }
            v
        };
        tokio::time::timeout(Duration::from_secs(60), all)
            .await
            .expect("the barrier opened")
    });
    assert_eq!(got, (0..N as i64).map(|i| i * 10).collect::<Vec<_>>());
    assert_eq!(waiting.load(Ordering::SeqCst), N);
    rt.shutdown_timeout(Duration::from_secs(1));
}

#[test]
fn one_cord_and_two() {
    let rt = runtime(2);
    let h = rt.handle();
    assert_eq!(h.cords(), 2);
    assert_eq!(h.call_on::<i64>(0, "app.cord", ()).unwrap(), 0);
    assert_eq!(h.call_on::<i64>(1, "app.cord", ()).unwrap(), 1);
    assert_eq!(
        block_on(h.eval_on_async::<i64>(1, "return CORD", ())).unwrap(),
        1
    );
    // From a fiber of cord 1, a call runs there, on the calling thread.
    let h2 = h.clone();
    let on = rt
        .spawn_on(1, move || {
            (0..10)
                .map(|_| h2.call::<i64>("app.cord", ()).unwrap())
                .collect::<Vec<_>>()
        })
        .join()
        .unwrap();
    assert_eq!(on, [1; 10]);
    // From Lua, through a registered function that calls back in.
    let h3 = h.clone();
    rt.register_fn("add_via_handle", move |(a, b): (i64, i64)| {
        h3.call::<i64>("app.add", (a, b))
    })
    .unwrap();
    for cord in 0..2 {
        let (sum, at): (i64, i64) = h
            .eval_on(cord, "return add_via_handle(40, 2), CORD", ())
            .unwrap();
        assert_eq!((sum, at), (42, cord as i64));
    }
    rt.shutdown_timeout(Duration::from_secs(1));
    let one = runtime(1);
    assert_eq!(one.handle().call::<i64>("app.cord", ()).unwrap(), 0);
}
