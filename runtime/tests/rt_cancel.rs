//! Cancelling fibers through their handles.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use luafiber_runtime::{fiber, sleep, spawn, testcancel, yield_now, Channel, GetError, Runtime};

#[test]
fn cancel_before_start_skips_function() {
    let rt = Runtime::new();
    let ran = Rc::new(Cell::new(false));
    let r = ran.clone();
    let h = spawn(move || r.set(true));
    h.cancel();
    let id = h.id();
    let e = rt.block_on(move || h.join().unwrap_err());
    assert!(e.is_cancelled());
    assert_eq!(e.fiber_id(), id);
    assert_eq!(e.to_string(), format!("fiber {id} was cancelled"));
    assert!(!ran.get());
}

#[test]
fn cancel_wakes_sleeper() {
    let rt = Runtime::new();
    rt.block_on(|| {
        let h = spawn(|| sleep(Duration::from_secs(3600)));
        yield_now().unwrap();
        h.cancel();
        // The join returns because the cancel woke the sleeper (its hour is
        // far from over); the sleep reports the cancel.
        let e = h.join().unwrap().unwrap_err();
        assert!(e.is_cancelled());
    });
}

#[test]
fn cancel_blocked_channel_reader() {
    let rt = Runtime::new();
    rt.block_on(|| {
        let ch = Channel::<u32>::new(0);
        let rx = ch.clone();
        let h = spawn(move || rx.get(None));
        yield_now().unwrap();
        h.cancel();
        assert_eq!(h.join().unwrap(), Err(GetError::Cancelled));
    });
}

#[test]
fn busy_loop_sees_cancel_at_testcancel() {
    let rt = Runtime::new();
    rt.block_on(|| {
        let h = spawn(|| {
            let mut n = 0u64;
            loop {
                n += 1;
                if testcancel().is_err() {
                    return n;
                }
                if n % 100 == 0 {
                    // A yield that is not a cancellation check here: the
                    // error is ignored, the loop checks with `testcancel`.
                    let _ = yield_now();
                }
            }
        });
        yield_now().unwrap();
        h.cancel();
        assert!(h.join().unwrap() >= 100);
    });
}

#[test]
fn cancel_after_end_is_noop() {
    let _rt = Runtime::new();
    let h = spawn(|| 9);
    fiber::run();
    h.cancel();
    assert_eq!(h.join().unwrap(), 9);
}

#[test]
fn cancelled_joiner_keeps_waiting() {
    let rt = Runtime::new();
    rt.block_on(|| {
        let target = spawn(|| {
            sleep(Duration::from_millis(5)).unwrap();
            1
        });
        let joiner = spawn(move || target.join().unwrap());
        yield_now().unwrap();
        joiner.cancel();
        assert_eq!(joiner.join().unwrap(), 1);
    });
}
