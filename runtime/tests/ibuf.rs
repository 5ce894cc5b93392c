//! The cord's buffer stash: reuse without allocation, the bounded free list,
//! and buffers given back when their fiber yields or ends.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use luafiber_runtime::fiber;
use luafiber_runtime::ibuf::{self, CordIbuf, StashConfig};

fn fill(b: CordIbuf, n: usize) {
    ibuf::with_cord_ibuf(b, |buf| {
        buf.alloc(n);
    })
    .expect("a live take");
}

#[test]
fn steady_state_take_put_allocates_nothing() {
    // Warm up: a nested take of depth 3 that writes into each buffer.
    for _ in 0..3 {
        let (a, b, c) = (
            ibuf::cord_ibuf_take(),
            ibuf::cord_ibuf_take(),
            ibuf::cord_ibuf_take(),
        );
        for x in [a, b, c] {
            fill(x, 1000);
        }
        for x in [c, b, a] {
            assert!(ibuf::cord_ibuf_put(x));
        }
    }
    let before = ibuf::stats();
    for _ in 0..100_000 {
        let a = ibuf::cord_ibuf_take();
        let b = ibuf::cord_ibuf_take();
        fill(a, 100);
        fill(b, 1000);
        ibuf::cord_ibuf_put(b);
        ibuf::cord_ibuf_put(a);
    }
    let after = ibuf::stats();
    assert_eq!(
        after.allocations, before.allocations,
        "{before:?} -> {after:?}"
    );
    assert_eq!(after.takes - before.takes, 200_000);
    assert_eq!(after.puts - before.puts, 200_000);
    assert_eq!(after.bytes_held, before.bytes_held);
    assert_eq!(after.taken, 0);
}

#[test]
fn put_keeps_memory_and_take_is_lifo() {
    let a = ibuf::cord_ibuf_take();
    fill(a, 100_000);
    let cap = ibuf::with_cord_ibuf(a, |b| b.capacity()).unwrap();
    ibuf::cord_ibuf_put(a);
    let b = ibuf::cord_ibuf_take();
    assert_eq!(b.slot(), a.slot());
    assert_eq!(
        ibuf::with_cord_ibuf(b, |b| (b.used(), b.capacity())),
        Some((0, cap))
    );
    ibuf::cord_ibuf_put(b);
}

#[test]
fn stale_handles_are_refused() {
    let a = ibuf::cord_ibuf_take();
    assert!(ibuf::cord_ibuf_put(a));
    assert!(!ibuf::cord_ibuf_put(a), "a second put of the same take");
    assert!(ibuf::with_cord_ibuf(a, |_| ()).is_none());
    let b = ibuf::cord_ibuf_take();
    assert!(
        ibuf::with_cord_ibuf(a, |_| ()).is_none(),
        "an old take of the same slot"
    );
    assert!(!ibuf::cord_ibuf_drop(a));
    assert!(ibuf::with_cord_ibuf(b, |_| ()).is_some());
    ibuf::cord_ibuf_put(b);
}

#[test]
fn drop_frees_and_big_buffers_are_trimmed() {
    let a = ibuf::cord_ibuf_take();
    fill(a, 300_000);
    let held = ibuf::stats().bytes_held;
    assert!(ibuf::cord_ibuf_drop(a));
    assert!(ibuf::stats().bytes_held <= held - 300_000);
    let b = ibuf::cord_ibuf_take();
    assert_eq!(ibuf::with_cord_ibuf(b, |b| b.capacity()), Some(0));
    // Above keep_max: freed on put.
    fill(b, StashConfig::default().keep_max + 1);
    ibuf::cord_ibuf_put(b);
    let c = ibuf::cord_ibuf_take();
    assert_eq!(ibuf::with_cord_ibuf(c, |b| b.capacity()), Some(0));
    ibuf::cord_ibuf_put(c);
}

#[test]
fn free_list_is_bounded() {
    let free_max = ibuf::stash_config().free_max;
    let takes: Vec<_> = (0..free_max + 3).map(|_| ibuf::cord_ibuf_take()).collect();
    for &t in &takes {
        fill(t, 10);
    }
    for &t in takes.iter().rev() {
        ibuf::cord_ibuf_put(t);
    }
    let with_memory: usize = takes
        .iter()
        .map(|_| ibuf::cord_ibuf_take())
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| {
            let cap = ibuf::with_cord_ibuf(t, |b| b.capacity()).unwrap();
            ibuf::cord_ibuf_put(t);
            usize::from(cap > 0)
        })
        .sum();
    assert!(
        with_memory <= free_max,
        "{with_memory} free buffers kept memory"
    );
}

#[test]
fn nested_lending_is_refused_not_aliased() {
    let a = ibuf::cord_ibuf_take();
    let inner = ibuf::with_cord_ibuf(a, |_| ibuf::with_cord_ibuf(a, |_| ()));
    assert_eq!(inner, Some(None));
    ibuf::cord_ibuf_put(a);
}

#[test]
fn given_back_when_the_fiber_yields() {
    let taken = Rc::new(Cell::new(None));
    let t = taken.clone();
    let f = fiber::Builder::new()
        .spawn_now(move || {
            let b = ibuf::cord_ibuf_take();
            fill(b, 10);
            t.set(Some(b));
            fiber::sleep(Duration::from_millis(1)).unwrap();
            // Back in the stash since the yield: this take is stale.
            assert!(ibuf::with_cord_ibuf(b, |_| ()).is_none());
            assert!(!ibuf::cord_ibuf_put(b));
        })
        .unwrap();
    let b = taken.get().expect("the fiber took a buffer");
    assert!(fiber::exists(f));
    assert!(
        ibuf::with_cord_ibuf(b, |_| ()).is_none(),
        "still lent out after the yield"
    );
    let again = ibuf::cord_ibuf_take();
    assert_eq!(again.slot(), b.slot());
    assert_eq!(ibuf::with_cord_ibuf(again, |b| b.used()), Some(0));
    ibuf::cord_ibuf_put(again);
    fiber::run();
    assert!(ibuf::stats().auto_puts >= 1);
}

#[test]
fn given_back_when_the_fiber_ends() {
    let before = ibuf::stats();
    fiber::Builder::new()
        .spawn_now(|| {
            let b = ibuf::cord_ibuf_take();
            fill(b, 7);
        })
        .unwrap();
    let after = ibuf::stats();
    assert_eq!(after.taken, before.taken);
    assert_eq!(after.auto_puts, before.auto_puts + 1);
}

#[test]
fn yield_while_lent_gives_back_after_the_loan() {
    let f = fiber::Builder::new()
        .spawn_now(|| {
            let b = ibuf::cord_ibuf_take();
            ibuf::with_cord_ibuf(b, |buf| {
                buf.alloc(5);
                fiber::yield_now().unwrap();
                // Still ours while lent, though given back at the yield.
                assert_eq!(buf.used(), 5);
            })
            .unwrap();
            assert!(ibuf::with_cord_ibuf(b, |_| ()).is_none());
        })
        .unwrap();
    // While the fiber is away, a take cannot get the lent buffer.
    let other = ibuf::cord_ibuf_take();
    assert_eq!(ibuf::with_cord_ibuf(other, |b| b.used()), Some(0));
    ibuf::cord_ibuf_put(other);
    fiber::run();
    assert!(!fiber::exists(f));
    assert_eq!(ibuf::stats().taken, 0);
}

#[test]
fn outside_fibers_nothing_is_given_back_by_itself() {
    let b = ibuf::cord_ibuf_take();
    fiber::Builder::new()
        .spawn_now(|| fiber::yield_now().unwrap())
        .unwrap();
    fiber::run();
    assert!(ibuf::with_cord_ibuf(b, |_| ()).is_some());
    ibuf::cord_ibuf_put(b);
}

#[test]
fn chains_the_previous_switch_hook() {
    thread_local!(static HITS: Cell<u32> = const { Cell::new(0) });
    fn mine() {
        HITS.with(|h| h.set(h.get() + 1));
    }
    fiber::set_switch_hook(Some(mine));
    // The stash installs its hook at the first take and calls `mine`.
    let b = ibuf::cord_ibuf_take();
    ibuf::cord_ibuf_put(b);
    fiber::Builder::new()
        .spawn_now(|| fiber::yield_now().unwrap())
        .unwrap();
    fiber::run();
    assert_eq!(
        HITS.with(Cell::get),
        2,
        "once at the yield, once at the end"
    );
}

#[test]
fn given_back_by_a_fiber_that_runs_others_and_by_the_fibers_it_runs() {
    // The first fiber blocks on a cond, so it runs the second from its own
    // stack (the scheduler's hub); each one's buffer comes back when it
    // blocks, before the other runs, and the nested `spawn_now` of the
    // second gives its own back when it yields.
    let cond = Rc::new(fiber::Cond::new());
    let taken = Rc::new(Cell::new(None));
    let (c, t) = (cond.clone(), taken.clone());
    fiber::Builder::new()
        .spawn_ready(move || {
            let b = ibuf::cord_ibuf_take();
            fill(b, 3);
            t.set(Some(b));
            c.wait(None).unwrap();
            assert!(
                ibuf::with_cord_ibuf(b, |_| ()).is_none(),
                "given back at the wait"
            );
            let mine = t.get().unwrap();
            assert_ne!(mine, b);
            assert!(
                ibuf::with_cord_ibuf(mine, |_| ()).is_none(),
                "the second's too"
            );
        })
        .unwrap();
    let (c, t) = (cond.clone(), taken.clone());
    fiber::Builder::new()
        .spawn_ready(move || {
            let first = t.get().expect("the first fiber took a buffer");
            assert!(ibuf::with_cord_ibuf(first, |_| ()).is_none());
            let b = ibuf::cord_ibuf_take();
            fill(b, 4);
            t.set(Some(b));
            let nested = fiber::Builder::new()
                .spawn_now(|| {
                    let n = ibuf::cord_ibuf_take();
                    fill(n, 5);
                    fiber::yield_now().unwrap();
                    assert!(ibuf::with_cord_ibuf(n, |_| ()).is_none());
                })
                .unwrap();
            // Still ours: the nested fiber's yield gave back only its own.
            assert_eq!(ibuf::with_cord_ibuf(b, |b| b.used()), Some(4));
            c.signal();
            fiber::yield_now().unwrap();
            assert!(!fiber::exists(nested));
        })
        .unwrap();
    fiber::run();
    assert_eq!(ibuf::stats().taken, 0);
}
