//! Heap allocations of a local call (`Handle::call_local`'s direct path),
//! one that does not wait and one whose fiber waits, counted by a counting
//! global allocator over many calls on the polling thread (its own count:
//! the tests of this file run at once, each on a thread of its own): a
//! bound that keeps per-call allocations from creeping back. Both engines.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use luafiber::Builder;

/// Counts the allocations of each thread.
struct Counting;

thread_local! {
    /// This thread's allocations so far (no destructor: counted up to the
    /// thread's last allocation).
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

/// Counts one allocation of this thread.
fn count() {
    let _ = ALLOCS.try_with(|n| n.set(n.get() + 1));
}

// SAFETY: every call goes to `System` unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: the caller's contract, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations per run of `run` (given the run's number), after a
/// warm-up.
fn per_call(mut run: impl FnMut(i64)) -> f64 {
    for i in 0..1000 {
        run(i);
    }
    const N: u64 = 10_000;
    let before = ALLOCS.with(Cell::get);
    for i in 0..N as i64 {
        run(i);
    }
    (ALLOCS.with(Cell::get) - before) as f64 / N as f64
}

/// Allocations per call of `app.add` through `call_local`, each polled
/// once (it is ready then), after a warm-up.
fn allocs_per_call(h: &luafiber::Handle) -> f64 {
    let cx = &mut Context::from_waker(Waker::noop());
    let run = |i: i64| {
        let mut call = pin!(h.call_local::<i64>("app.add", (i, 1)));
        match call.as_mut().poll(cx) {
            Poll::Ready(r) => assert_eq!(r.unwrap(), i + 1),
            Poll::Pending => panic!("a call that does not wait is ready at once"),
        }
    };
    per_call(run)
}

#[test]
fn a_call_that_does_not_wait_allocates_little() {
    let rt = Builder::new()
        .load_module("app", "return { add = function(a, b) return a + b end }")
        .build()
        .unwrap();
    let per_call = allocs_per_call(&rt.handle());
    eprintln!("allocations per call_local: {per_call:.2}");
    // None: the fiber, its Lua thread and stack are pooled, the name's
    // pieces cached, the answer written into the future.
    assert!(per_call <= 0.05, "{per_call} allocations per call");
}

const GATED: &str = r#"
local fiber = require('fiber')
local gate = fiber.cond()
return {
    wait = function(a) gate:wait() return a + 1 end,
    open = function() gate:broadcast() end,
}
"#;

/// Allocations per call of `app.wait` through `call_local`: polled once
/// (its fiber waits on a cond), the cond opened by a call of `app.open`
/// (whose poll drives the waiting fiber to its end), polled again (ready).
fn allocs_per_waiting_call(h: &luafiber::Handle) -> f64 {
    let cx = &mut Context::from_waker(Waker::noop());
    let run = |i: i64| {
        let mut call = pin!(h.call_local::<i64>("app.wait", (i,)));
        assert!(call.as_mut().poll(cx).is_pending(), "the call waits");
        let mut open = pin!(h.call_local::<()>("app.open", ()));
        assert!(open.as_mut().poll(cx).is_ready(), "open does not wait");
        match call.as_mut().poll(cx) {
            Poll::Ready(r) => assert_eq!(r.unwrap(), i + 1),
            Poll::Pending => panic!("an ended call is ready at its next poll"),
        }
    };
    per_call(run)
}

#[test]
fn a_call_that_waits_allocates_little() {
    let rt = Builder::new().load_module("app", GATED).build().unwrap();
    let per_call = allocs_per_waiting_call(&rt.handle());
    eprintln!("allocations per waiting call_local: {per_call:.2}");
    // None either: the results wait on the call's fiber's stack for the
    // future's next poll (no shared slot, no MessagePack bytes).
    assert!(per_call <= 0.05, "{per_call} allocations per waiting call");
}
