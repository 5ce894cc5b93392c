//! `Cond`: FIFO signal, broadcast, timeout, cancel, and signals that are
//! neither lost nor given to a fiber that stopped waiting.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use luafiber_fiber::{self as fiber, Builder, Cond, Error, FiberId};

type Log = Rc<RefCell<Vec<usize>>>;

fn spawn(f: impl FnOnce() + 'static) -> FiberId {
    Builder::new().spawn_ready(f).unwrap()
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Spawns `n` fibers that each wait on `cond` once with `timeout` and log
/// their index with the result.
fn waiters(
    cond: &Rc<Cond>,
    n: usize,
    timeout: Option<Duration>,
) -> Rc<RefCell<Vec<(usize, bool)>>> {
    let log = Rc::new(RefCell::new(Vec::new()));
    for i in 0..n {
        let (cond, log) = (cond.clone(), log.clone());
        spawn(move || {
            let signalled = cond.wait(timeout).unwrap();
            log.borrow_mut().push((i, signalled));
        });
    }
    log
}

#[test]
fn signal_wakes_one_waiter_at_a_time_in_fifo_order() {
    let cond = Rc::new(Cond::new());
    let log = waiters(&cond, 3, None);
    let c = cond.clone();
    let l = log.clone();
    spawn(move || {
        assert_eq!(c.waiters(), 3);
        for round in 0..3 {
            c.signal();
            fiber::sleep(ms(1)).unwrap();
            assert_eq!(l.borrow().len(), round + 1);
        }
    });
    fiber::run();
    assert_eq!(*log.borrow(), [(0, true), (1, true), (2, true)]);
    assert_eq!(cond.waiters(), 0);
}

#[test]
fn signals_in_a_row_wake_as_many_waiters() {
    let cond = Rc::new(Cond::new());
    let log = waiters(&cond, 4, None);
    let c = cond.clone();
    spawn(move || {
        c.signal();
        c.signal();
        c.signal();
    });
    fiber::run();
    assert_eq!(*log.borrow(), [(0, true), (1, true), (2, true)]);
    assert_eq!(cond.waiters(), 1);
    cond.signal();
    fiber::run();
    assert_eq!(log.borrow().len(), 4);
}

#[test]
fn broadcast_wakes_every_waiter_in_order() {
    let cond = Rc::new(Cond::new());
    let log = waiters(&cond, 5, None);
    let c = cond.clone();
    spawn(move || c.broadcast());
    fiber::run();
    assert_eq!(
        *log.borrow(),
        [(0, true), (1, true), (2, true), (3, true), (4, true)]
    );
    assert_eq!(cond.waiters(), 0);
}

#[test]
fn wait_times_out_and_leaves_the_queue() {
    let cond = Rc::new(Cond::new());
    let c = cond.clone();
    let ok = Rc::new(Cell::new(false));
    let o = ok.clone();
    spawn(move || {
        let start = Instant::now();
        assert!(!c.wait(Some(ms(10))).unwrap());
        assert!(start.elapsed() >= ms(10));
        assert_eq!(c.waiters(), 0);
        // A zero timeout yields once and times out.
        assert!(!c.wait(Some(Duration::ZERO)).unwrap());
        o.set(true);
    });
    fiber::run();
    assert!(ok.get());
}

#[test]
fn signal_with_no_waiters_is_not_kept() {
    let cond = Rc::new(Cond::new());
    cond.signal();
    cond.broadcast();
    let c = cond.clone();
    let ok = Rc::new(Cell::new(false));
    let o = ok.clone();
    spawn(move || {
        assert!(!c.wait(Some(ms(5))).unwrap());
        o.set(true);
    });
    fiber::run();
    assert!(ok.get());
}

#[test]
fn a_timed_out_waiter_does_not_swallow_a_later_signal() {
    let cond = Rc::new(Cond::new());
    let log: Log = Log::default();
    let (c, l) = (cond.clone(), log.clone());
    spawn(move || {
        assert!(!c.wait(Some(ms(5))).unwrap());
        l.borrow_mut().push(0);
    });
    let (c, l) = (cond.clone(), log.clone());
    spawn(move || {
        assert!(c.wait(None).unwrap());
        l.borrow_mut().push(1);
    });
    let c = cond.clone();
    spawn(move || {
        fiber::sleep(ms(20)).unwrap();
        assert_eq!(c.waiters(), 1);
        c.signal();
    });
    fiber::run();
    assert_eq!(*log.borrow(), [0, 1]);
}

#[test]
fn a_signal_that_comes_with_the_timeout_is_not_lost() {
    let cond = Rc::new(Cond::new());
    let result = Rc::new(Cell::new(None));
    let (c, r) = (cond.clone(), result.clone());
    spawn(move || r.set(Some(c.wait(Some(ms(5))).unwrap())));
    let c = cond.clone();
    spawn(move || {
        // Hold the thread past the waiter's deadline without yielding, so its
        // timer fires in the same loop turn as this fiber's next run.
        std::thread::sleep(ms(20));
        fiber::yield_now().unwrap();
        // The waiter is ready (timed out) but has not run: it is still queued.
        assert_eq!(c.waiters(), 1);
        c.signal();
    });
    fiber::run();
    assert_eq!(result.get(), Some(true));
}

#[test]
fn cancel_while_waiting_raises_and_leaves_the_queue() {
    let cond = Rc::new(Cond::new());
    let c = cond.clone();
    let seen = Rc::new(Cell::new(false));
    let s = seen.clone();
    let id = spawn(move || {
        assert!(matches!(c.wait(None), Err(Error::Cancelled)));
        assert_eq!(c.waiters(), 0);
        s.set(true);
    });
    spawn(move || fiber::cancel(id).unwrap());
    fiber::run();
    assert!(seen.get());
}

#[test]
fn a_cancelled_fiber_does_not_wait() {
    let cond = Rc::new(Cond::new());
    let c = cond.clone();
    let seen = Rc::new(Cell::new(false));
    let s = seen.clone();
    spawn(move || {
        fiber::cancel(fiber::current().unwrap()).unwrap();
        assert!(matches!(c.wait(None), Err(Error::Cancelled)));
        assert!(matches!(c.wait(Some(ms(1))), Err(Error::Cancelled)));
        assert_eq!(c.waiters(), 0);
        s.set(true);
    });
    fiber::run();
    assert!(seen.get());
}

#[test]
fn a_cancelled_waiter_passes_its_signal_on() {
    let cond = Rc::new(Cond::new());
    let (c, log) = (cond.clone(), Log::default());
    let l = log.clone();
    let first = spawn(move || {
        assert!(matches!(c.wait(None), Err(Error::Cancelled)));
        l.borrow_mut().push(0);
    });
    let (c, l) = (cond.clone(), log.clone());
    spawn(move || {
        assert!(c.wait(None).unwrap());
        l.borrow_mut().push(1);
    });
    let c = cond.clone();
    spawn(move || {
        // Cancel and signal before the first waiter runs again.
        fiber::cancel(first).unwrap();
        c.signal();
    });
    fiber::run();
    assert_eq!(*log.borrow(), [0, 1]);
    assert_eq!(cond.waiters(), 0);
}

#[test]
fn other_wakeups_do_not_end_a_wait() {
    let cond = Rc::new(Cond::new());
    let c = cond.clone();
    let result = Rc::new(Cell::new(None));
    let r = result.clone();
    let id = spawn(move || {
        let start = Instant::now();
        r.set(Some((c.wait(Some(ms(30))).unwrap(), start.elapsed())));
    });
    spawn(move || {
        for _ in 0..3 {
            fiber::wakeup(id).unwrap();
            fiber::sleep(ms(1)).unwrap();
        }
    });
    fiber::run();
    let (signalled, waited) = result.get().unwrap();
    assert!(!signalled);
    assert!(waited >= ms(30), "waited {waited:?}");
}

#[test]
fn wait_outside_a_fiber_fails() {
    let cond = Cond::new();
    assert!(matches!(cond.wait(None), Err(Error::NotInFiber)));
    assert_eq!(cond.waiters(), 0);
}

#[test]
fn many_waiters_and_signals() {
    const N: usize = 2000;
    let cond = Rc::new(Cond::new());
    let woken = Rc::new(Cell::new(0));
    for i in 0..N {
        let (c, w) = (cond.clone(), woken.clone());
        // Every third waiter gives up early; the others wait for a signal.
        let timeout = (i % 3 == 0).then(|| ms(1));
        spawn(move || {
            if c.wait(timeout).unwrap() {
                w.set(w.get() + 1);
            }
        });
    }
    let c = cond.clone();
    spawn(move || {
        fiber::sleep(ms(20)).unwrap();
        let waiting = c.waiters();
        assert_eq!(waiting, N - N.div_ceil(3));
        for _ in 0..waiting {
            c.signal();
        }
    });
    fiber::run();
    assert_eq!(woken.get(), N - N.div_ceil(3));
    assert_eq!(cond.waiters(), 0);
}

/// Timed waits that are signalled long before their deadline leave no pile
/// of stale timers: 100,000 ping-pong rounds of `wait(10 s)` keep the timer
/// heap small, and a fiber still waiting with a timeout times out on time.
#[test]
fn timed_waits_signalled_early_leave_few_timers() {
    let (ping, pong) = (Rc::new(Cond::new()), Rc::new(Cond::new()));
    let most = Rc::new(Cell::new(0));
    let late = Rc::new(Cell::new(None));
    {
        let late = late.clone();
        spawn(move || {
            let start = Instant::now();
            let signalled = Cond::new().wait(Some(ms(50))).unwrap();
            late.set(Some((signalled, start.elapsed())));
        });
    }
    let rounds = 100_000;
    let done = Rc::new(Cell::new(0));
    {
        let (ping, pong, most, done) = (ping.clone(), pong.clone(), most.clone(), done.clone());
        spawn(move || {
            for _ in 0..rounds {
                if ping.wait(Some(Duration::from_secs(10))).unwrap() {
                    done.set(done.get() + 1);
                }
                most.set(most.get().max(fiber::stats().timers));
                pong.signal();
            }
        });
    }
    {
        let done = done.clone();
        spawn(move || {
            for _ in 0..rounds {
                ping.signal();
                if pong.wait(Some(Duration::from_secs(10))).unwrap() {
                    done.set(done.get() + 1);
                }
            }
        });
    }
    fiber::run();
    assert_eq!(done.get(), 2 * rounds, "waits that timed out");
    assert!(most.get() <= 200, "{} timers at most", most.get());
    let (signalled, waited) = late.get().expect("the timed waiter ended");
    assert!(
        !signalled && waited >= ms(50),
        "{signalled} after {waited:?}"
    );
}

#[test]
fn wait_tarantool_ends_on_any_wakeup_and_a_cancelled_fiber_waits() {
    let cond = Rc::new(Cond::new());
    let log = Rc::new(RefCell::new(Vec::new()));
    let (c, l) = (cond.clone(), log.clone());
    let waiter = spawn(move || {
        // Woken by `wakeup`: the wait ends, true (master's spurious wakeup).
        let woken = c.wait_tarantool(None).unwrap();
        l.borrow_mut().push(woken);
        // Timed out: false.
        let woken = c.wait_tarantool(Some(ms(1))).unwrap();
        l.borrow_mut().push(woken);
        // Cancelled before the wait: it still waits, for the signal, then
        // fails.
        fiber::cancel(fiber::current().unwrap()).unwrap();
        let r = c.wait_tarantool(None);
        l.borrow_mut()
            .push(matches!(r, Err(fiber::Error::Cancelled)));
    });
    let (c, l) = (cond.clone(), log.clone());
    spawn(move || {
        fiber::yield_now().unwrap();
        fiber::wakeup(waiter).unwrap();
        // Until the waiter is in its third wait (bounded).
        for _ in 0..1000 {
            if l.borrow().len() == 2 && c.waiters() == 1 {
                break;
            }
            fiber::sleep(ms(1)).unwrap();
        }
        assert_eq!(c.waiters(), 1, "the cancelled fiber waits");
        c.signal();
    });
    fiber::run();
    assert_eq!(*log.borrow(), [true, false, true]);
}
