//! Shutting several cords down: fibers blocked on every cord are
//! cancelled, work not yet started is cancelled, and a fiber that never
//! ends is abandoned at the timeout (its join gives a cancel, no joiner
//! waits for ever).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use luafiber_runtime::{cord, fiber, sleep, spawn, Cond, GetError, Runtime};

const LONG: Duration = Duration::from_secs(60);

#[test]
fn shutdown_with_fibers_blocked_on_every_cord() {
    const CORDS: usize = 4;
    let stopped = Arc::new(AtomicUsize::new(0));
    let s = stopped.clone();
    let rt = Runtime::builder()
        .stack_size(64 * 1024)
        .cords(CORDS)
        .on_cord_stop(move |_| {
            s.fetch_add(1, Ordering::Relaxed);
        })
        .build()
        .unwrap();
    let ch = cord::Channel::<u8>::new(0);
    let (tx, blocked) = mpsc::channel();
    let mut readers = Vec::new();
    let mut sleepers = Vec::new();
    let mut cond_waiters = Vec::new();
    for c in 0..CORDS {
        let (rx, t) = (ch.clone(), tx.clone());
        readers.push(rt.spawn_on(c, move || {
            t.send(()).unwrap();
            rx.get(None)
        }));
        let t = tx.clone();
        sleepers.push(rt.spawn_on(c, move || {
            t.send(()).unwrap();
            sleep(Duration::from_secs(3600))
        }));
        let t = tx.clone();
        cond_waiters.push(rt.spawn_on(c, move || {
            // A local fiber waiting on a local cond, joined by the task.
            let cond = std::rc::Rc::new(Cond::new());
            let c2 = cond.clone();
            let h = spawn(move || c2.wait(None).map_err(|e| e.to_string()));
            t.send(()).unwrap();
            h.join().unwrap()
        }));
    }
    for _ in 0..3 * CORDS {
        blocked.recv_timeout(LONG).unwrap();
    }
    rt.shutdown_timeout(LONG);
    for h in readers {
        assert_eq!(h.join().unwrap(), Err(GetError::Cancelled));
    }
    for h in sleepers {
        assert!(h.join().unwrap().unwrap_err().is_cancelled());
    }
    for h in cond_waiters {
        assert!(h.join().unwrap().is_err(), "the cond wait was cancelled");
    }
    assert_eq!(stopped.load(Ordering::Relaxed), CORDS);
}

#[test]
fn work_not_yet_started_is_cancelled() {
    let rt = Runtime::builder().cords(1).build().unwrap();
    let (release, blocked) = mpsc::channel::<()>();
    let (started_tx, started) = mpsc::channel::<()>();
    let blocker = rt.spawn_on(0, move || {
        started_tx.send(()).unwrap();
        // Blocks the cord's thread until the shutdown began.
        let _ = blocked.recv_timeout(LONG);
    });
    started.recv_timeout(LONG).unwrap();
    let queued: Vec<_> = (0..10).map(|i| rt.spawn(move || i)).collect();
    let targeted: Vec<_> = (0..10).map(|i| rt.spawn_on(0, move || i)).collect();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        drop(release);
    });
    rt.shutdown_timeout(LONG);
    t.join().unwrap();
    blocker.join().unwrap();
    for h in queued.into_iter().chain(targeted) {
        assert!(h.join().unwrap_err().is_cancelled());
    }
}

#[test]
fn a_fiber_that_never_ends_is_abandoned_at_the_timeout() {
    let rt = Runtime::builder().cords(2).build().unwrap();
    let (tx, started) = mpsc::channel();
    let tx2 = tx.clone();
    // Ignores cancels: `block` is no cancellation point, and the loop
    // blocks again after each wakeup.
    let stubborn = rt.spawn_on(0, move || {
        tx.send(()).unwrap();
        for _ in 0..1_000 {
            let _ = fiber::block(Some(Duration::from_secs(3600)));
        }
    });
    let t = tx2;
    let fine = rt.spawn_on(1, move || {
        t.send(()).unwrap();
        sleep(Duration::from_secs(3600))
    });
    started.recv_timeout(LONG).unwrap();
    started.recv_timeout(LONG).unwrap();
    rt.shutdown_timeout(Duration::from_millis(50));
    assert!(stubborn.join().unwrap_err().is_cancelled());
    assert!(fine.join().unwrap().unwrap_err().is_cancelled());
}

#[test]
fn dropping_the_runtime_shuts_it_down() {
    let stopped = Arc::new(AtomicUsize::new(0));
    let s = stopped.clone();
    let rt = Runtime::builder()
        .cords(2)
        .on_cord_stop(move |_| {
            s.fetch_add(1, Ordering::Relaxed);
        })
        .build()
        .unwrap();
    let (tx, started) = mpsc::channel();
    let h = rt.spawn(move || {
        tx.send(()).unwrap();
        sleep(Duration::from_secs(3600))
    });
    started.recv_timeout(LONG).unwrap();
    drop(rt);
    assert!(h.join().unwrap().unwrap_err().is_cancelled());
    assert_eq!(stopped.load(Ordering::Relaxed), 2);
}
