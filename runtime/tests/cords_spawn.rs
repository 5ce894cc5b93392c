//! Work given to several cords: `spawn` (any cord) and `spawn_on` (one
//! cord), joins from plain threads and from fibers, timeouts, cancels,
//! panics, the cords' start and stop code, and a cord blocked in a long
//! computation.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use luafiber_runtime::{cord, fiber, sleep, spawn, yield_now, Runtime};

const LONG: Duration = Duration::from_secs(60);

fn cords(n: usize) -> cord::Runtime {
    Runtime::builder()
        .stack_size(64 * 1024)
        .cords(n)
        .build()
        .unwrap()
}

#[test]
fn spawn_on_targets_the_right_cord() {
    let rt = cords(4);
    let hs: Vec<_> = (0..40)
        .map(|i| (i % 4, rt.spawn_on(i % 4, cord::current)))
        .collect();
    for (want, h) in hs {
        assert_eq!(h.join().unwrap(), Some(want));
    }
    let threads: HashSet<_> = (0..4)
        .map(|i| {
            rt.spawn_on(i, || std::thread::current().id())
                .join()
                .unwrap()
        })
        .collect();
    assert_eq!(threads.len(), 4, "each cord is its own thread");
    assert!(!threads.contains(&std::thread::current().id()));
    rt.shutdown_timeout(LONG);
}

#[test]
fn spawn_runs_every_task_once_on_some_cord() {
    let rt = cords(2);
    let ran = Arc::new(AtomicUsize::new(0));
    let hs: Vec<_> = (0..2000u64)
        .map(|i| {
            let ran = ran.clone();
            rt.spawn(move || {
                ran.fetch_add(1, Ordering::Relaxed);
                (i, cord::current().unwrap())
            })
        })
        .collect();
    let mut sum = 0;
    for h in hs {
        let (i, c) = h.join().unwrap();
        assert!(c < 2);
        sum += i;
    }
    assert_eq!(sum, 1999 * 2000 / 2);
    assert_eq!(ran.load(Ordering::Relaxed), 2000);
    rt.shutdown_timeout(LONG);
}

#[test]
fn handle_reports_its_cord_after_start() {
    let rt = cords(3);
    let h = rt.spawn_on(2, || 5);
    let (tx, rx) = mpsc::channel();
    let waiting = rt.spawn_on(1, move || rx.recv_timeout(LONG).unwrap());
    assert_eq!(h.join().unwrap(), 5);
    tx.send(7).unwrap();
    assert_eq!(waiting.join().unwrap(), 7);
    let h = rt.spawn_on(2, || ());
    while !h.is_finished() {
        std::thread::yield_now();
    }
    assert_eq!(h.cord(), Some(2));
    rt.shutdown_timeout(LONG);
}

#[test]
fn join_in_a_fiber_parks_only_that_fiber() {
    let rt = cords(1);
    let local = Runtime::new();
    let remote = rt.handle().clone();
    let (ticks, joined) = local.block_on(move || {
        let ticks = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (t, s) = (ticks.clone(), stop.clone());
        // A fiber of this thread that runs while the other one waits.
        let ticker = spawn(move || {
            for _ in 0..100_000 {
                if s.load(Ordering::Relaxed) {
                    break;
                }
                t.fetch_add(1, Ordering::Relaxed);
                yield_now().unwrap();
            }
        });
        let h = remote.spawn(|| {
            sleep(Duration::from_millis(20)).unwrap();
            "done"
        });
        let v = h.join().unwrap();
        stop.store(true, Ordering::Relaxed);
        ticker.join().unwrap();
        (ticks.load(Ordering::Relaxed), v)
    });
    assert_eq!(joined, "done");
    assert!(ticks > 0, "the other fiber ran while the join waited");
    rt.shutdown_timeout(LONG);
}

#[test]
fn join_from_a_fiber_of_another_cord() {
    let rt = cords(2);
    let handle = rt.handle().clone();
    let h = rt.spawn_on(0, move || {
        let inner = handle.spawn_on(1, || {
            sleep(Duration::from_millis(5)).unwrap();
            cord::current()
        });
        (cord::current(), inner.join().unwrap())
    });
    assert_eq!(h.join().unwrap(), (Some(0), Some(1)));
    rt.shutdown_timeout(LONG);
}

#[test]
fn handle_current_on_cords_only() {
    let rt = cords(2);
    assert!(cord::Handle::current().is_none());
    let h = rt.spawn_on(1, || {
        let handle = cord::Handle::current().expect("on a cord");
        let inner = handle.spawn_on(0, cord::current);
        (handle.cords(), inner.join().unwrap())
    });
    assert_eq!(h.join().unwrap(), (2, Some(0)));
    rt.shutdown_timeout(LONG);
}

#[test]
fn join_timeout_keeps_the_handle() {
    let rt = cords(1);
    let ch = cord::Channel::new(1);
    let rx = ch.clone();
    let mut h = rt.spawn(move || rx.get(None).unwrap());
    let err = h.join_timeout(Duration::from_millis(5)).unwrap_err();
    assert!(err.is_timeout());
    ch.put(9u8, None).unwrap();
    assert_eq!(h.join().unwrap(), 9);
    rt.shutdown_timeout(LONG);
}

#[test]
fn cancel_before_start_skips_the_closure() {
    let rt = cords(1);
    let (release, blocked) = mpsc::channel::<()>();
    let (started_tx, started) = mpsc::channel::<()>();
    // Blocks the cord's thread, so the next task cannot start yet.
    let blocker = rt.spawn_on(0, move || {
        started_tx.send(()).unwrap();
        blocked.recv_timeout(LONG).unwrap();
    });
    started.recv_timeout(LONG).unwrap();
    let ran = Arc::new(AtomicBool::new(false));
    let r = ran.clone();
    let h = rt.spawn_on(0, move || r.store(true, Ordering::Relaxed));
    h.cancel();
    release.send(()).unwrap();
    blocker.join().unwrap();
    assert!(h.join().unwrap_err().is_cancelled());
    assert!(!ran.load(Ordering::Relaxed));
    rt.shutdown_timeout(LONG);
}

#[test]
fn cancel_while_running_reaches_the_fiber_on_its_cord() {
    let rt = cords(2);
    let (tx, started) = mpsc::channel();
    let h = rt.spawn_on(1, move || {
        tx.send(()).unwrap();
        sleep(Duration::from_secs(3600))
    });
    started.recv_timeout(LONG).unwrap();
    h.cancel();
    let slept = h.join().unwrap();
    assert!(slept.unwrap_err().is_cancelled());
    rt.shutdown_timeout(LONG);
}

#[test]
fn a_panic_is_reported_by_its_join_and_the_cords_go_on() {
    let rt = cords(2);
    let h = rt.spawn_on(0, || -> u32 { panic!("boom on cord 0") });
    let err = h.join().unwrap_err();
    assert!(err.is_panic());
    assert_eq!(err.panic_message(), Some("boom on cord 0"));
    // Both cords go on, the one that panicked too.
    assert_eq!(rt.spawn_on(0, || 1).join().unwrap(), 1);
    assert_eq!(rt.spawn_on(1, || 2).join().unwrap(), 2);
    let hs: Vec<_> = (0..100)
        .map(|i| rt.spawn(move || if i % 10 == 0 { panic!("p{i}") } else { i }))
        .collect();
    let panics = hs.into_iter().map(|h| h.join()).filter(Result::is_err);
    assert_eq!(panics.count(), 10);
    rt.shutdown_timeout(LONG);
}

#[test]
fn start_and_stop_code_run_on_each_cord() {
    let started = Arc::new(AtomicUsize::new(0));
    let stopped = Arc::new(AtomicUsize::new(0));
    let (s1, s2) = (started.clone(), stopped.clone());
    let rt = Runtime::builder()
        .cords(3)
        .on_cord_start(move |i| {
            assert_eq!(cord::current(), Some(i));
            assert!(fiber::current().is_none());
            s1.fetch_add(1 << (8 * i), Ordering::Relaxed);
        })
        .on_cord_stop(move |i| {
            s2.fetch_add(1 << (8 * i), Ordering::Relaxed);
        })
        .build()
        .unwrap();
    assert_eq!(started.load(Ordering::Relaxed), 0x01_01_01);
    assert_eq!(stopped.load(Ordering::Relaxed), 0);
    rt.shutdown_timeout(LONG);
    assert_eq!(stopped.load(Ordering::Relaxed), 0x01_01_01);
}

#[test]
fn a_panic_in_start_code_fails_the_build() {
    let err = Runtime::builder()
        .cords(2)
        .on_cord_start(|i| {
            if i == 1 {
                panic!("no Lua state for you");
            }
        })
        .build()
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("cord 1") && msg.contains("no Lua state for you"),
        "{msg}"
    );
}

#[test]
fn a_blocked_cord_does_not_stop_the_others() {
    let rt = cords(2);
    let (release, blocked) = mpsc::channel::<()>();
    let (started_tx, started) = mpsc::channel::<()>();
    let spin = Arc::new(AtomicBool::new(true));
    let s = spin.clone();
    // A long computation that never yields: cord 0 takes no work meanwhile.
    let busy = rt.spawn_on(0, move || {
        started_tx.send(()).unwrap();
        let mut rounds = 0u64;
        while s.load(Ordering::Relaxed) && rounds < 50_000_000_000 {
            std::hint::spin_loop();
            rounds += 1;
        }
        drop(blocked);
        rounds
    });
    started.recv_timeout(LONG).unwrap();
    let hs: Vec<_> = (0..500).map(|_| rt.spawn(cord::current)).collect();
    for h in hs {
        assert_eq!(h.join().unwrap(), Some(1), "cord 1 ran it, cord 0 is busy");
    }
    assert!(!busy.is_finished());
    spin.store(false, Ordering::Relaxed);
    assert!(busy.join().unwrap() > 0);
    drop(release);
    rt.shutdown_timeout(LONG);
}

#[test]
fn work_given_after_the_shutdown_is_cancelled() {
    let rt = cords(2);
    let handle = rt.handle().clone();
    rt.shutdown_timeout(LONG);
    assert!(handle.spawn(|| 1).join().unwrap_err().is_cancelled());
    assert!(handle.spawn_on(1, || 1).join().unwrap_err().is_cancelled());
}

#[test]
#[should_panic(expected = "no cord 5")]
fn spawn_on_a_cord_that_is_not_there_panics() {
    let rt = cords(2);
    let _ = rt.spawn_on(5, || ());
}
