//! Heap allocations of a local call that does not wait
//! (`Handle::call_local`'s direct path), counted by a counting global
//! allocator over many calls on the polling thread: a bound that keeps
//! per-call allocations from creeping back. Both engines.

use std::alloc::{GlobalAlloc, Layout, System};
use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, Waker};

use luafiber::Builder;

/// Counts the allocations of the whole process.
struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call goes to `System` unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations per call of `app.add` through `call_local`, each polled
/// once (it is ready then), after a warm-up.
fn allocs_per_call(h: &luafiber::Handle) -> f64 {
    let cx = &mut Context::from_waker(Waker::noop());
    let mut run = |i: i64| {
        let mut call = pin!(h.call_local::<i64>("app.add", (i, 1)));
        match call.as_mut().poll(cx) {
            Poll::Ready(r) => assert_eq!(r.unwrap(), i + 1),
            Poll::Pending => panic!("a call that does not wait is ready at once"),
        }
    };
    for i in 0..1000 {
        run(i);
    }
    const N: u64 = 10_000;
    let before = ALLOCS.load(Ordering::Relaxed);
    for i in 0..N as i64 {
        run(i);
    }
    (ALLOCS.load(Ordering::Relaxed) - before) as f64 / N as f64
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
