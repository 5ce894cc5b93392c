//! Many fibers: spawning, joining, and freeing their slots.

use std::cell::Cell;
use std::rc::Rc;

use luafiber_runtime::{fiber, spawn, yield_now, Runtime};

#[test]
fn spawn_many_from_fiber() {
    const N: u64 = 10_000;
    let rt = Runtime::new();
    let sum = rt.block_on(|| {
        let hs: Vec<_> = (0..N).map(|i| spawn(move || i)).collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
    });
    assert_eq!(sum, N * (N - 1) / 2);
    assert_eq!(fiber::stats().fibers, 0);
}

#[test]
fn spawn_many_from_main_detached() {
    const N: usize = 10_000;
    let rt = Runtime::new();
    let hits = Rc::new(Cell::new(0));
    for _ in 0..N {
        let hits = hits.clone();
        drop(spawn(move || {
            yield_now().unwrap();
            hits.set(hits.get() + 1);
        }));
    }
    rt.run();
    assert_eq!(hits.get(), N);
    assert_eq!(fiber::stats().fibers, 0);
}

#[test]
fn chained_spawn() {
    fn chain(left: u32) -> u32 {
        if left == 0 {
            return 0;
        }
        1 + spawn(move || chain(left - 1)).join().unwrap()
    }
    let rt = Runtime::new();
    assert_eq!(rt.block_on(|| chain(500)), 500);
    assert_eq!(fiber::stats().fibers, 0);
}

#[test]
fn ids_grow() {
    let _rt = Runtime::new();
    let a = spawn(|| ());
    let b = spawn(|| ());
    assert!(b.id() > a.id());
    assert!(a.id().0 > 100);
}
