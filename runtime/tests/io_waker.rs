//! Waking a cord from other threads, and blocking calls on the pool whose
//! results come back through the waker.

use std::cell::Cell;
use std::io::ErrorKind;
use std::rc::Rc;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use luafiber_runtime::{io, spawn, yield_now, Runtime};

#[test]
fn a_wake_from_another_thread_wakes_every_waiting_fiber() {
    let rt = Runtime::new();
    let waker = io::waker().unwrap();
    let waiters: Vec<_> = (0..3)
        .map(|_| spawn(|| io::wait_woken(None).unwrap()))
        .collect();
    let barrier = Arc::new(Barrier::new(2));
    let b = barrier.clone();
    let t = std::thread::spawn(move || {
        b.wait();
        waker.wake();
    });
    // The waiters run (and park) first, in FIFO order; then this fiber
    // lets the thread go, which wakes them.
    spawn(move || barrier.wait());
    rt.run();
    t.join().unwrap();
    for w in waiters {
        assert!(w.join().unwrap());
    }
}

#[test]
fn a_wake_with_no_waiter_is_kept_for_the_next() {
    let rt = Runtime::new();
    let waker = io::waker().unwrap();
    // Several wakes before anyone waits count as one.
    std::thread::spawn(move || {
        for _ in 0..5 {
            waker.wake();
        }
    })
    .join()
    .unwrap();
    let (first, second) = rt.block_on(|| {
        // Let the loop take the wake while no fiber waits.
        luafiber_runtime::sleep(Duration::from_millis(1)).unwrap();
        let first = io::wait_woken(Some(Duration::from_secs(5))).unwrap();
        let second = io::wait_woken(Some(Duration::from_millis(5))).unwrap();
        (first, second)
    });
    assert_eq!((first, second), (true, false));
}

#[test]
fn a_waker_is_send_and_sync() {
    fn check<T: Send + Sync + Clone + 'static>() {}
    check::<io::CordWaker>();
}

#[test]
fn a_wake_waiter_can_be_cancelled() {
    let rt = Runtime::new();
    let h = spawn(|| io::wait_woken(None));
    let id = h.id();
    spawn(move || luafiber_runtime::fiber::cancel(id).unwrap());
    rt.run();
    assert!(io::is_cancelled(&h.join().unwrap().unwrap_err()));
}

#[test]
fn blocking_jobs_run_off_the_cord_while_fibers_go_on() {
    let rt = Runtime::new();
    let ticks = Rc::new(Cell::new(0u32));
    let done = Rc::new(Cell::new(0u32));
    let jobs: Vec<_> = (0..4u64)
        .map(|i| {
            let done = done.clone();
            spawn(move || {
                let v = io::run_blocking(
                    move || {
                        std::thread::sleep(Duration::from_millis(20));
                        i * 10
                    },
                    None,
                )
                .unwrap();
                done.set(done.get() + 1);
                v
            })
        })
        .collect();
    let (t, d) = (ticks.clone(), done.clone());
    let ticker = spawn(move || {
        while d.get() < 4 && t.get() < 1_000_000 {
            t.set(t.get() + 1);
            yield_now().unwrap();
        }
    });
    rt.run();
    ticker.join().unwrap();
    let got: Vec<u64> = jobs.into_iter().map(|j| j.join().unwrap()).collect();
    assert_eq!(got, [0, 10, 20, 30]);
    // The cord kept switching while the jobs slept.
    assert!(ticks.get() > 4);
}

#[test]
fn a_blocking_job_times_out_or_panics_in_its_caller() {
    let rt = Runtime::new();
    let kind = rt.block_on(|| {
        io::run_blocking(
            || std::thread::sleep(Duration::from_millis(50)),
            Some(Duration::from_millis(1)),
        )
        .unwrap_err()
        .kind()
    });
    assert_eq!(kind, ErrorKind::TimedOut);
    let h = spawn(|| io::run_blocking(|| -> u32 { panic!("in the pool") }, None));
    rt.run();
    let e = h.join().unwrap_err();
    assert_eq!(e.panic_message(), Some("in the pool"));
}

#[test]
fn getaddrinfo_reports_a_bad_name() {
    let rt = Runtime::new();
    let e = rt.block_on(|| {
        let hints = io::Hints {
            flags: libc::AI_NUMERICHOST,
            ..Default::default()
        };
        io::getaddrinfo(Some("not an address"), Some("80"), hints, None).unwrap_err()
    });
    let gai = e.get_ref().unwrap().downcast_ref::<io::GaiError>().unwrap();
    assert_eq!(gai.code, libc::EAI_NONAME);
    assert!(!gai.message.is_empty());
}
