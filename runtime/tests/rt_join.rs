//! Joining fibers: values, timeouts, joining from inside and outside fibers,
//! and handles dropped without a join.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use luafiber_runtime::{fiber, sleep, spawn, spawn_now, task, yield_now, Channel, Runtime};

#[test]
fn join_returns_value_outside_fiber() {
    let _rt = Runtime::new();
    let h = spawn(|| String::from("hi"));
    assert!(!h.is_finished());
    assert_eq!(h.join().unwrap(), "hi");
    assert_eq!(fiber::stats().fibers, 0);
}

#[test]
fn join_inside_fiber_waits_for_sleeper() {
    let rt = Runtime::new();
    let got = rt.block_on(|| {
        let h = spawn(|| {
            sleep(Duration::from_millis(5)).unwrap();
            7u8
        });
        let start = Instant::now();
        let v = h.join().unwrap();
        (v, start.elapsed())
    });
    assert_eq!(got.0, 7);
    assert!(got.1 >= Duration::from_millis(5));
    assert_eq!(fiber::stats().fibers, 0);
}

#[test]
fn join_after_finish_does_not_wait() {
    let rt = Runtime::new();
    rt.block_on(|| {
        let h = spawn_now(|| 3);
        assert!(h.is_finished());
        assert_eq!(h.join().unwrap(), 3);
    });
}

#[test]
fn join_timeout_inside_fiber_keeps_handle() {
    let rt = Runtime::new();
    rt.block_on(|| {
        let mut h = spawn(|| {
            sleep(Duration::from_millis(20)).unwrap();
            "late"
        });
        let e = h.join_timeout(Duration::from_millis(1)).unwrap_err();
        assert!(e.is_timeout());
        assert!(!e.is_cancelled() && !e.is_panic());
        assert_eq!(e.fiber_id(), h.id());
        assert_eq!(h.join_timeout(Duration::from_secs(5)).unwrap(), "late");
    });
    assert_eq!(fiber::stats().fibers, 0);
}

#[test]
fn join_timeout_outside_fiber() {
    let _rt = Runtime::new();
    // The fiber waits for a value only this test gives, after the timeout:
    // the join cannot have waited for the fiber, whatever the clock did.
    let ch = Channel::new(0);
    let rx = ch.clone();
    let mut h = spawn(move || rx.get(None).unwrap());
    let start = Instant::now();
    assert!(h
        .join_timeout(Duration::from_millis(5))
        .unwrap_err()
        .is_timeout());
    let waited = start.elapsed();
    assert!(waited >= Duration::from_millis(5), "{waited:?}");
    assert!(!h.is_finished(), "the fiber still waits");
    assert!(ch.try_put(1).is_ok(), "handed to the waiting fiber");
    assert_eq!(h.join().unwrap(), 1);
    assert_eq!(fiber::stats().fibers, 0);
}

#[test]
#[should_panic(expected = "joined after it gave its result")]
fn join_after_result_panics() {
    let _rt = Runtime::new();
    let mut h = spawn(|| 1);
    assert_eq!(h.join_timeout(Duration::from_secs(1)).unwrap(), 1);
    let _ = h.join_timeout(Duration::from_secs(1));
}

#[test]
fn dropped_handle_detaches_running_fiber() {
    let rt = Runtime::new();
    let ran = Rc::new(Cell::new(false));
    let r = ran.clone();
    let h = spawn(move || {
        yield_now().unwrap();
        r.set(true);
    });
    let id = h.id();
    drop(h);
    assert!(!fiber::is_joinable(id).unwrap());
    rt.run();
    assert!(ran.get());
    assert!(!fiber::exists(id));
    assert_eq!(fiber::stats().fibers, 0);
}

#[test]
fn dropped_handle_of_ended_fiber_frees_slot() {
    let rt = Runtime::new();
    let h = spawn(|| 5);
    rt.run();
    assert!(h.is_finished());
    assert!(fiber::exists(h.id()));
    drop(h);
    assert_eq!(fiber::stats().fibers, 0);
}

#[test]
fn block_on_returns_and_leaves_others() {
    let rt = Runtime::new();
    let slow = Rc::new(Cell::new(false));
    let s = slow.clone();
    let v = rt.block_on(move || {
        drop(spawn(move || {
            sleep(Duration::from_millis(10)).unwrap();
            s.set(true);
        }));
        11
    });
    assert_eq!(v, 11);
    assert!(!slow.get());
    rt.run();
    assert!(slow.get());
}

#[test]
#[should_panic(expected = "can never end")]
fn block_on_deadlock_panics() {
    let rt = Runtime::new();
    rt.block_on(|| {
        let ch = luafiber_runtime::Channel::<u8>::new(0);
        ch.get(None).unwrap();
    });
}

#[test]
fn builder_names_and_sizes() {
    let rt = luafiber_runtime::Builder::new()
        .stack_size(100 * 1024)
        .stack_pool_size(4)
        .build();
    assert_eq!(rt.stack_size(), 100 * 1024);
    let h = task::Builder::new()
        .name("named")
        .stack_size(256 * 1024)
        .spawn(|| {
            let me = luafiber_runtime::current().unwrap();
            (fiber::name(me).unwrap(), fiber::stack_size(me).unwrap())
        })
        .unwrap();
    assert_eq!(h.join().unwrap(), (b"named".to_vec(), 256 * 1024));
    let h = spawn(|| fiber::stack_size(luafiber_runtime::current().unwrap()).unwrap());
    assert_eq!(h.join().unwrap(), 100 * 1024);
}

#[test]
#[should_panic(expected = "fibers exist")]
fn builder_refuses_change_with_live_fibers() {
    let _rt = Runtime::new();
    let _h = spawn(|| ());
    let _ = luafiber_runtime::Builder::new()
        .stack_size(64 * 1024)
        .build();
}
