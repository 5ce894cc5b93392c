//! Dropping a `LuaRuntime` ends its Lua fibers before its Lua state closes:
//! they are cancelled and run to their end, and what a cancel cannot end is
//! abandoned, never run again. The scheduler, Rust fibers and a new runtime
//! then go on without them.

use std::cell::RefCell;
use std::rc::Rc;

use luafiber::runtime::Runtime;
use luafiber::{LuaRuntime, LuaRuntimeError as Error, Value};

#[path = "../fiber/tests/support/child.rs"]
mod child;

/// A runtime with `note(s)`, which records `s`.
fn noting() -> (LuaRuntime, Rc<RefCell<Vec<String>>>) {
    let rt = LuaRuntime::new().unwrap();
    let notes = Rc::new(RefCell::new(Vec::new()));
    let n = notes.clone();
    rt.register_fn("note", move |args| {
        n.borrow_mut()
            .push(args[0].as_str().unwrap_or("?").to_owned());
        Ok(vec![])
    })
    .unwrap();
    (rt, notes)
}

/// Issue 13, item 1: the scheduler ran a dropped runtime's suspended
/// fibers on the freed Lua state (a double free on every run).
#[test]
fn drop_runtime_with_suspended_fiber() {
    let (rt, notes) = noting();
    rt.eval(
        "local f = require('fiber') \
         f.create(function() f.sleep(0.001) print(string.rep('x', 10)) end) \
         f.create(function() \
             local ok, err = pcall(f.sleep, 10) \
             note(tostring(err)) \
             f.sleep(10) \
             note('not reached') \
         end) \
         f.new(function() note('never started') end)",
        vec![],
    )
    .unwrap();
    drop(rt);
    assert_eq!(luafiber::fiber::stats().fibers, 0);
    Runtime::new().run();
    // The fiber not yet started ran first (it was ready already), up to
    // its end; the sleeper saw its cancel, caught it, and ended at the next
    // cancellation point.
    assert_eq!(*notes.borrow(), ["never started", "fiber is cancelled"]);
    // A new runtime on the same thread works.
    let rt = LuaRuntime::new().unwrap();
    assert_eq!(
        rt.eval("return 1 + 1", vec![]).unwrap(),
        [Value::Integer(2)]
    );
}

/// Issue 13, item 1: fibers a cancel cannot end (blocked again in a Rust
/// function, in a join, or ended and not joined) are abandoned; a Rust
/// fiber waiting for one of them learns that the runtime is gone.
#[test]
fn drop_runtime_abandons_what_a_cancel_cannot_end() {
    let (rt, notes) = noting();
    rt.register_fn("stuck", |_| {
        // Not a cancellation point: a cancel wakes it, and it blocks again.
        for _ in 0..1000 {
            let _ = luafiber::fiber::block(None);
        }
        Ok(vec![])
    })
    .unwrap();
    rt.eval(
        "local f = require('fiber') \
         local s = f.create(function() stuck() note('unstuck') end) \
         s:set_joinable(true) \
         f.create(function() s:join() note('joined') end) \
         local done = f.new(function() end) \
         done:set_joinable(true) \
         DONE = done",
        vec![],
    )
    .unwrap();
    rt.run();
    let handle = rt.handle();
    let outcome = Rc::new(RefCell::new(None));
    let o = outcome.clone();
    luafiber::spawn(move || {
        *o.borrow_mut() = Some(handle.eval("stuck()", vec![]));
    });
    rt.run();
    assert!(luafiber::fiber::stats().fibers >= 5);
    drop(rt);
    Runtime::new().run();
    assert!(notes.borrow().is_empty(), "{:?}", notes.borrow());
    assert!(matches!(
        outcome.borrow_mut().take(),
        Some(Err(Error::NoRuntime))
    ));
    assert_eq!(luafiber::fiber::stats().fibers, 0);
}

/// Issue 13, item 1: dropped inside one of its own Lua fibers, the runtime
/// cannot end that fiber, so its state stays with the thread: the fiber
/// goes on (cancelled) on a live state.
#[test]
fn drop_runtime_inside_its_own_fiber_keeps_the_state() {
    let (rt, notes) = noting();
    let slot: Rc<RefCell<Option<LuaRuntime>>> = Rc::new(RefCell::new(None));
    let s = slot.clone();
    rt.register_fn("drop_runtime", move |_| {
        drop(s.borrow_mut().take());
        Ok(vec![])
    })
    .unwrap();
    let handle = rt.handle();
    *slot.borrow_mut() = Some(rt);
    handle
        .eval(
            "local f = require('fiber') \
             f.create(function() f.sleep(10) note('not reached') end) \
             drop_runtime() \
             note(string.rep('y', 3)) \
             local ok, err = pcall(f.yield) \
             note(tostring(err))",
            vec![],
        )
        .unwrap();
    assert_eq!(*notes.borrow(), ["yyy", "fiber is cancelled"]);
    assert!(matches!(LuaRuntime::new(), Err(Error::AlreadyRunning)));
}

/// Issue 30, item 5: a runtime's per-cord state (its cord context) goes
/// with it, so a new runtime on the same thread starts clean: the cord's
/// default max slice, `fiber.top`'s accounting and its scheduler hooks,
/// the Lua errno.
#[test]
fn a_new_runtime_on_the_same_thread_starts_clean() {
    let fresh = "local f = require('fiber') \
                 local i = f.info()[f.id()] \
                 return string.format('%g', i.max_slice.err), (pcall(f.top)), require('errno')()";
    let rt = LuaRuntime::new().unwrap();
    let before = rt.eval(fresh, vec![]).unwrap();
    assert_eq!(
        before,
        [Value::from("1"), Value::Boolean(false), Value::Integer(0)]
    );
    rt.eval(
        "local f = require('fiber') \
         f.set_max_slice(7) \
         f.top_enable() \
         require('errno')(5) \
         return string.format('%g', f.info()[f.id()].max_slice.err), (pcall(f.top)), require('errno')()",
        vec![],
    )
    .map(|v| {
        assert_eq!(
            v,
            [Value::from("7"), Value::Boolean(true), Value::Integer(5)]
        )
    })
    .unwrap();
    drop(rt);
    for _ in 0..2 {
        let rt = LuaRuntime::new().unwrap();
        assert_eq!(rt.eval(fresh, vec![]).unwrap(), before);
    }
}

/// The `tracing` events `f` emits on this thread, as text (message and
/// fields).
fn warnings_of(f: impl FnOnce()) -> Vec<String> {
    use std::sync::{Arc, Mutex};
    use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
    struct Text(String);
    impl tracing::field::Visit for Text {
        fn record_debug(&mut self, field: &tracing::field::Field, v: &dyn std::fmt::Debug) {
            self.0.push_str(&format!("{}={v:?} ", field.name()));
        }
    }
    struct Collect(Arc<Mutex<Vec<String>>>);
    impl<S: tracing::Subscriber> Layer<S> for Collect {
        fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
            let mut t = Text(String::new());
            event.record(&mut t);
            self.0.lock().unwrap().push(t.0);
        }
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    let subscriber = tracing_subscriber::registry().with(Collect(seen.clone()));
    tracing::subscriber::with_default(subscriber, f);
    let v = seen.lock().unwrap().clone();
    v
}

/// Issue 29, item 2: dropping a runtime whose fibers catch their cancel in
/// a loop (`while true do pcall(fiber.sleep, 1) end`, the usual worker
/// shape) never returned (100% CPU). Now the drop ends after a bounded
/// number of rounds, lets a fiber's cleanup that yields a few times finish,
/// abandons the loops and reports them; the thread goes on.
#[test]
fn drop_with_fibers_that_catch_their_cancel_ends_and_reports_them() {
    child::isolated(
        "drop_with_fibers_that_catch_their_cancel_ends_and_reports_them",
        || {
            let (rt, notes) = noting();
            let ids = rt
                .eval(
                    "local f = require('fiber') \
                     local ids = {} \
                     for i = 1, 3 do \
                         local w = f.create(function() \
                             while true do pcall(f.sleep, 1) end \
                         end) \
                         w:name('worker' .. i) \
                         ids[i] = w:id() \
                     end \
                     f.create(function() \
                         pcall(f.sleep, 10) \
                         note('cleanup') \
                         for _ = 1, 5 do pcall(f.yield) end \
                         note('clean end') \
                     end) \
                     return ids",
                    vec![],
                )
                .unwrap();
            let warnings = warnings_of(|| drop(rt));
            assert_eq!(*notes.borrow(), ["cleanup", "clean end"]);
            assert_eq!(luafiber::fiber::stats().fibers, 0);
            let all = warnings.join("\n");
            assert!(all.contains("abandoned=3"), "{all}");
            let Some(Value::Table(ids)) = ids.first() else {
                panic!("ids: {ids:?}")
            };
            for (i, (_, id)) in ids.iter().enumerate() {
                let want = format!(
                    "fiber {id} (worker{}): still running after its cancel",
                    i + 1
                );
                assert!(all.contains(&want), "{want} in {all}");
            }
            // The thread goes on: another runtime, the scheduler.
            let rt = LuaRuntime::new().unwrap();
            assert_eq!(
                rt.eval("return 40 + 2", vec![]).unwrap(),
                [Value::Integer(42)]
            );
            drop(rt);
            Runtime::new().run();
        },
    );
}

/// Issue 29, item 2, inside a fiber: a runtime dropped by a Rust fiber
/// yields to its Lua fibers a bounded number of times, then abandons those
/// that caught their cancel.
#[test]
fn drop_inside_a_rust_fiber_with_fibers_that_catch_their_cancel_ends() {
    child::isolated(
        "drop_inside_a_rust_fiber_with_fibers_that_catch_their_cancel_ends",
        || {
            let rt = LuaRuntime::new().unwrap();
            rt.eval(
                "local f = require('fiber') \
                 f.create(function() while true do pcall(f.sleep, 1) end end)",
                vec![],
            )
            .unwrap();
            let slot = Rc::new(RefCell::new(Some(rt)));
            let s = slot.clone();
            luafiber::fiber::Builder::new()
                .spawn_ready(move || drop(s.borrow_mut().take()))
                .unwrap();
            Runtime::new().run();
            assert!(slot.borrow().is_none());
            assert_eq!(luafiber::fiber::stats().fibers, 0);
        },
    );
}
