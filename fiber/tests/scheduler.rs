//! The scheduler: creation order, sleep, join, cancel, wakeup, ids, timers
//! under load, and fiber churn.
//!
//! Every test runs its fibers with `fiber::run()` on its own test thread,
//! which has its own scheduler.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use luafiber_fiber::{self as fiber, Builder, Error, FiberId};

type Log = Rc<RefCell<Vec<String>>>;

fn push(log: &Log, s: impl Into<String>) {
    log.borrow_mut().push(s.into());
}

fn entries(log: &Log) -> Vec<String> {
    log.borrow().clone()
}

fn spawn(f: impl FnOnce() + 'static) -> FiberId {
    Builder::new().spawn_ready(f).unwrap()
}

fn joinable(f: impl FnOnce() + 'static) -> FiberId {
    Builder::new().joinable(true).spawn_ready(f).unwrap()
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A fiber that sleeps 10 ms, then sets `stop`, among busy fibers that
/// call [`Sleeper::round`] once a round. It counts the rounds run once the
/// sleeper's deadline has surely passed: a loop that polls its timers
/// between batches wakes the sleeper within a batch of it (64 switches),
/// however slow or loaded the machine, so the count stays small; a loop
/// that starved the timer would count on (until [`Sleeper::round`] gives
/// up at `GIVE_UP` and sets `stop` itself, so the test ends and fails).
struct Sleeper {
    stop: Rc<Cell<bool>>,
    /// How long the sleeper slept, once it woke.
    woke: Rc<Cell<Option<Duration>>>,
    /// Set just before the sleeper blocks.
    blocking: Rc<Cell<bool>>,
    /// A time at or after the sleeper's deadline: read by the first round
    /// after the sleeper blocked, plus its 10 ms.
    due: Cell<Option<Instant>>,
    /// Rounds run at or after `due`.
    late: Cell<u32>,
}

const GIVE_UP: u32 = 100_000;

impl Sleeper {
    /// The record; the sleeper is spawned by [`Sleeper::start`].
    fn new(stop: Rc<Cell<bool>>) -> Rc<Sleeper> {
        Rc::new(Sleeper {
            stop,
            woke: Rc::default(),
            blocking: Rc::default(),
            due: Cell::new(None),
            late: Cell::new(0),
        })
    }

    /// Spawns the sleeper (ready, after the fibers spawned before).
    fn start(&self) {
        let (stop, woke, blocking) = (self.stop.clone(), self.woke.clone(), self.blocking.clone());
        spawn(move || {
            let start = Instant::now();
            blocking.set(true);
            fiber::sleep(ms(10)).unwrap();
            woke.set(Some(start.elapsed()));
            stop.set(true);
        });
    }

    /// Called by a busy fiber once a round.
    fn round(&self) {
        if !self.blocking.get() {
            return;
        }
        let now = Instant::now();
        let due = self.due.get().unwrap_or(now + ms(10));
        self.due.set(Some(due));
        if now >= due {
            self.late.set(self.late.get() + 1);
            if self.late.get() >= GIVE_UP {
                self.stop.set(true);
            }
        }
    }

    /// The sleeper woke after its 10 ms, within a batch or two of rounds
    /// of its deadline.
    fn assert_woke_in_time(&self) {
        let woke = self.woke.get().expect("the sleeper woke");
        assert!(woke >= ms(10));
        assert!(
            self.late.get() <= 3 * 64,
            "{} rounds ran after the sleeper was due",
            self.late.get()
        );
    }
}

#[test]
fn create_runs_the_child_at_once_and_its_yield_returns_to_the_creator() {
    let log = Log::default();
    let l = log.clone();
    spawn(move || {
        push(&l, "parent start");
        let other = l.clone();
        spawn(move || push(&other, "other"));
        let child = l.clone();
        Builder::new()
            .spawn_now(move || {
                push(&child, "child start");
                fiber::yield_now().unwrap();
                push(&child, "child end");
            })
            .unwrap();
        push(&l, "parent after create");
        fiber::yield_now().unwrap();
        push(&l, "parent end");
    });
    fiber::run();
    assert_eq!(
        entries(&log),
        [
            "parent start",
            "child start",
            "parent after create",
            "other",
            "child end",
            "parent end"
        ]
    );
}

#[test]
fn create_outside_a_fiber_runs_the_child_before_returning() {
    let ran = Rc::new(Cell::new(false));
    let r = ran.clone();
    let id = Builder::new().spawn_now(move || r.set(true)).unwrap();
    assert!(ran.get());
    assert!(!fiber::exists(id));
    assert_eq!(fiber::current(), None);
}

#[test]
fn new_fibers_queue_in_fifo_order_and_run_when_the_creator_yields() {
    let log = Log::default();
    let l = log.clone();
    spawn(move || {
        for name in ["a", "b", "c"] {
            let l = l.clone();
            spawn(move || push(&l, name));
        }
        push(&l, "parent");
        fiber::yield_now().unwrap();
        push(&l, "parent again");
    });
    fiber::run();
    assert_eq!(entries(&log), ["parent", "a", "b", "c", "parent again"]);
}

/// Runs one fiber per name, each logging `{name}{round}` and yielding, for
/// `rounds` rounds; returns the log.
fn take_turns(names: &[String], rounds: usize) -> Vec<String> {
    let log = Log::default();
    for name in names {
        let (l, name) = (log.clone(), name.clone());
        spawn(move || {
            for round in 0..rounds {
                push(&l, format!("{name}{round}"));
                fiber::yield_now().unwrap();
            }
        });
    }
    fiber::run();
    entries(&log)
}

#[test]
fn ready_fibers_take_turns_in_fifo_order() {
    let names = ["x", "y", "z"].map(String::from);
    assert_eq!(
        take_turns(&names, 3),
        ["x0", "y0", "z0", "x1", "y1", "z1", "x2", "y2", "z2"]
    );
}

/// With more ready fibers than the switch prefetches for (32), the order
/// is that of a few.
#[test]
fn many_ready_fibers_take_turns_in_fifo_order() {
    let names: Vec<String> = (0..100).map(|i| format!("{i}.")).collect();
    let want: Vec<String> = (0..3)
        .flat_map(|round| names.iter().map(move |n| format!("{n}{round}")))
        .collect();
    assert_eq!(take_turns(&names, 3), want);
}

#[test]
fn sleepers_wake_in_deadline_order() {
    let log = Log::default();
    let start = Instant::now();
    for (name, delay) in [("30", 30), ("10", 10), ("20", 20), ("0", 0)] {
        let l = log.clone();
        spawn(move || {
            fiber::sleep(ms(delay)).unwrap();
            assert!(start.elapsed() >= ms(delay));
            push(&l, name);
        });
    }
    fiber::run();
    assert_eq!(entries(&log), ["0", "10", "20", "30"]);
}

#[test]
fn join_waits_for_the_end_and_returns_the_ext_word() {
    let done = Rc::new(Cell::new(false));
    let d = done.clone();
    let target = Builder::new()
        .joinable(true)
        .ext(42)
        .spawn_ready(move || {
            fiber::sleep(ms(5)).unwrap();
            d.set(true);
        })
        .unwrap();
    let joined = Rc::new(Cell::new(false));
    let j = joined.clone();
    spawn(move || {
        assert_eq!(fiber::join(target, None).unwrap(), 42);
        assert!(done.get());
        // A fiber can be joined once.
        assert!(matches!(fiber::join(target, None), Err(Error::Dead(id)) if id == target));
        j.set(true);
    });
    fiber::run();
    assert!(joined.get());
    assert!(!fiber::exists(target));
    assert_eq!(fiber::stats().fibers, 0);
}

#[test]
fn an_ended_joinable_fiber_stays_until_joined() {
    let target = Builder::new()
        .joinable(true)
        .ext(7)
        .spawn_ready(|| {})
        .unwrap();
    fiber::run();
    assert!(fiber::exists(target));
    assert_eq!(fiber::status(target), Some(fiber::Status::Dead));
    assert_eq!(fiber::stats().fibers, 1);
    // Joining an ended fiber needs no fiber.
    assert_eq!(fiber::join(target, None).unwrap(), 7);
    assert!(!fiber::exists(target));
    assert_eq!(fiber::stats().fibers, 0);
}

#[test]
fn join_outside_a_fiber_on_a_live_fiber_fails() {
    let target = joinable(|| fiber::sleep(ms(1)).unwrap());
    assert!(matches!(fiber::join(target, None), Err(Error::NotInFiber)));
    fiber::run();
    fiber::join(target, None).unwrap();
}

#[test]
fn join_times_out_and_the_fiber_stays_joinable() {
    let target = joinable(|| fiber::sleep(ms(200)).unwrap());
    let ok = Rc::new(Cell::new(false));
    let o = ok.clone();
    spawn(move || {
        let start = Instant::now();
        assert!(matches!(
            fiber::join(target, Some(ms(5))),
            Err(Error::TimedOut)
        ));
        assert!(start.elapsed() >= ms(5));
        // The join gave up, not the target ended: it still sleeps.
        assert_eq!(fiber::status(target), Some(fiber::Status::Suspended));
        assert!(matches!(
            fiber::join(target, Some(Duration::ZERO)),
            Err(Error::TimedOut)
        ));
        assert!(fiber::is_joinable(target).unwrap());
        fiber::join(target, Some(Duration::from_secs(10))).unwrap();
        o.set(true);
    });
    fiber::run();
    assert!(ok.get());
    assert_eq!(fiber::stats().fibers, 0);
}

#[test]
fn join_errors_self_concurrent_and_not_joinable() {
    let ok = Rc::new(Cell::new(0));
    let o = ok.clone();
    joinable(move || {
        let me = fiber::current().unwrap();
        assert!(matches!(fiber::join(me, None), Err(Error::JoinSelf)));
        o.set(o.get() + 1);
    });
    let target = joinable(|| fiber::sleep(ms(20)).unwrap());
    let o = ok.clone();
    spawn(move || {
        fiber::join(target, None).unwrap();
        o.set(o.get() + 1);
    });
    let o = ok.clone();
    spawn(move || {
        assert!(matches!(
            fiber::join(target, None),
            Err(Error::JoinedConcurrently(id)) if id == target
        ));
        o.set(o.get() + 1);
    });
    let detached = spawn(|| fiber::sleep(ms(1)).unwrap());
    let o = ok.clone();
    spawn(move || {
        assert!(matches!(
            fiber::join(detached, None),
            Err(Error::NotJoinable(id)) if id == detached
        ));
        o.set(o.get() + 1);
    });
    fiber::run();
    assert_eq!(ok.get(), 4);
    // The self-joiner is still there, ended, waiting for a join.
    assert_eq!(fiber::stats().fibers, 1);
    for id in fiber::all() {
        fiber::join(id, None).unwrap();
    }
    assert_eq!(fiber::stats().fibers, 0);
}

#[test]
fn join_is_not_a_cancellation_point() {
    let target = joinable(|| fiber::sleep(ms(20)).unwrap());
    let joined = Rc::new(Cell::new(false));
    let j = joined.clone();
    let joiner = spawn(move || {
        fiber::join(target, None).unwrap();
        assert!(matches!(fiber::testcancel(), Err(Error::Cancelled)));
        j.set(true);
    });
    spawn(move || fiber::cancel(joiner).unwrap());
    fiber::run();
    assert!(joined.get());
}

#[test]
fn cancel_interrupts_a_sleep_and_the_flag_is_sticky() {
    let seen = Rc::new(Cell::new(false));
    let s = seen.clone();
    let sleeper = spawn(move || {
        // Cancelled, not timed out (that would be `Ok`).
        assert!(matches!(
            fiber::sleep(Duration::from_secs(10)),
            Err(Error::Cancelled)
        ));
        assert!(matches!(fiber::testcancel(), Err(Error::Cancelled)));
        assert!(matches!(fiber::yield_now(), Err(Error::Cancelled)));
        assert!(matches!(fiber::sleep(ms(1)), Err(Error::Cancelled)));
        assert!(matches!(
            fiber::block_cancellable(None),
            Err(Error::Cancelled)
        ));
        s.set(true);
    });
    spawn(move || fiber::cancel(sleeper).unwrap());
    fiber::run();
    assert!(seen.get());
}

#[test]
fn cancel_before_start_does_not_stop_code_without_cancellation_points() {
    let steps = Rc::new(Cell::new(0));
    let s = steps.clone();
    let id = joinable(move || {
        s.set(1);
        assert!(fiber::testcancel().is_err());
        s.set(2);
    });
    fiber::cancel(id).unwrap();
    fiber::run();
    assert_eq!(steps.get(), 2);
    // Cancelling an ended joinable fiber is a no-op; it can still be joined.
    fiber::cancel(id).unwrap();
    fiber::join(id, None).unwrap();
    // It is gone now.
    assert!(matches!(fiber::cancel(id), Err(Error::Dead(d)) if d == id));
}

#[test]
fn cancel_of_self_only_sets_the_flag() {
    let ok = Rc::new(Cell::new(false));
    let o = ok.clone();
    spawn(move || {
        fiber::cancel(fiber::current().unwrap()).unwrap();
        assert!(matches!(fiber::testcancel(), Err(Error::Cancelled)));
        o.set(true);
    });
    fiber::run();
    assert!(ok.get());
}

#[test]
fn block_is_not_a_cancellation_point() {
    let ok = Rc::new(Cell::new(false));
    let o = ok.clone();
    let id = spawn(move || {
        // Woken by the cancel, not timed out, no error.
        assert!(!fiber::block(None).unwrap());
        assert!(fiber::testcancel().is_err());
        o.set(true);
    });
    spawn(move || fiber::cancel(id).unwrap());
    fiber::run();
    assert!(ok.get());
}

#[test]
fn wakeup_of_self_is_a_no_op() {
    let ok = Rc::new(Cell::new(false));
    let o = ok.clone();
    spawn(move || {
        fiber::wakeup(fiber::current().unwrap()).unwrap();
        let start = Instant::now();
        fiber::sleep(ms(20)).unwrap();
        assert!(start.elapsed() >= ms(20));
        o.set(true);
    });
    fiber::run();
    assert!(ok.get());
}

#[test]
fn wakeup_ends_a_sleep_early_without_error() {
    // The sleeper ends before a timer armed after the wakeup fires, so the
    // wakeup ended its 10 s sleep, not its timer.
    let log = Log::default();
    let l = log.clone();
    let sleeper = spawn(move || {
        fiber::sleep(Duration::from_secs(10)).unwrap();
        push(&l, "sleeper woke");
    });
    let l = log.clone();
    spawn(move || {
        fiber::sleep(ms(1)).unwrap();
        fiber::wakeup(sleeper).unwrap();
        push(&l, "wakeup");
        let l = l.clone();
        spawn(move || {
            fiber::sleep(ms(1)).unwrap();
            push(&l, "a later timer");
        });
    });
    fiber::run();
    assert_eq!(entries(&log), ["wakeup", "sleeper woke", "a later timer"]);
}

#[test]
fn wakeup_uncancelled_wakes_only_a_fiber_not_cancelled() {
    // A pool's waiting fiber: woken when not cancelled, left to its cancel
    // (which woke it already) when it is; a dead one is an error.
    let log = Log::default();
    let l = log.clone();
    let waiter = move |name: &'static str| {
        let l = l.clone();
        move || {
            let r = fiber::block_cancellable(None);
            push(
                &l,
                format!("{name} {}", if r.is_ok() { "woken" } else { "cancelled" }),
            );
        }
    };
    let a = spawn(waiter("a"));
    let b = spawn(waiter("b"));
    spawn(move || {
        fiber::yield_now().unwrap();
        assert!(matches!(fiber::wakeup_uncancelled(a), Ok(true)));
        fiber::cancel(b).unwrap();
        assert!(matches!(fiber::wakeup_uncancelled(b), Ok(false)));
    });
    fiber::run();
    assert_eq!(entries(&log), ["a woken", "b cancelled"]);
    assert!(matches!(fiber::wakeup_uncancelled(a), Err(Error::Dead(_))));
}

#[test]
fn resume_now_runs_a_waiting_fiber_at_once() {
    // A pool's waiting fiber handed work from outside any fiber: it runs
    // before `resume_now` returns, its timer stale; a ready, a cancelled or
    // a running one is refused, a dead one is an error.
    let log = Log::default();
    let l = log.clone();
    let waiter = Builder::new()
        .spawn_now(move || {
            for _ in 0..2 {
                let timed_out = fiber::block(Some(Duration::from_millis(5))).unwrap();
                push(&l, format!("ran, timed out: {timed_out}"));
            }
        })
        .unwrap();
    assert!(matches!(fiber::resume_now(waiter), Ok(true)));
    assert_eq!(entries(&log), ["ran, timed out: false"]);
    // Waiting again: a wakeup makes it ready, and a ready one is refused.
    fiber::wakeup(waiter).unwrap();
    assert!(matches!(fiber::resume_now(waiter), Ok(false)));
    fiber::run();
    assert_eq!(entries(&log).len(), 2);
    assert!(matches!(fiber::resume_now(waiter), Err(Error::Dead(_))));
    let cancelled = Builder::new()
        .spawn_now(|| drop(fiber::block(None)))
        .unwrap();
    fiber::cancel(cancelled).unwrap();
    assert!(matches!(fiber::resume_now(cancelled), Ok(false)));
    let inner = Rc::new(Cell::new(None));
    let i = inner.clone();
    let me = spawn(move || {
        i.set(Some(fiber::resume_now(fiber::current().unwrap())));
    });
    fiber::run();
    assert!(matches!(inner.take(), Some(Ok(false))));
    assert!(!fiber::exists(me));
}

#[test]
fn resume_now_from_a_fiber_runs_the_waiting_one_then_goes_on() {
    // As Tarantool's fiber_pool_cb hands a message to a pool fiber with
    // fiber_call: the caller goes on once the resumed fiber yields, each
    // time, and a resumed fiber that blocks is woken later as usual.
    let log = Log::default();
    let l = log.clone();
    let worker = Builder::new()
        .spawn_now(move || {
            for i in 0..3 {
                fiber::block(None).unwrap();
                push(&l, format!("job {i}"));
            }
            fiber::sleep(Duration::from_millis(1)).unwrap();
            push(&l, "slept");
        })
        .unwrap();
    let l = log.clone();
    spawn(move || {
        for i in 0..3 {
            push(&l, format!("hand {i}"));
            assert!(matches!(fiber::resume_now(worker), Ok(true)));
        }
        push(&l, "caller goes on");
    });
    fiber::run();
    assert_eq!(
        entries(&log),
        [
            "hand 0",
            "job 0",
            "hand 1",
            "job 1",
            "hand 2",
            "job 2",
            "caller goes on",
            "slept"
        ]
    );
}

#[test]
fn resume_now_refuses_a_fiber_running_the_batch_under_the_caller() {
    // State rule 6: `hub` blocks while the loop resumed it and runs the
    // batch (here `inner`) from its own stack: it is suspended, yet its
    // stack is under `inner`'s caller chain, so it is not resumed from
    // there; a wakeup makes it go on once the batch comes to it.
    let got = Rc::new(Cell::new(None));
    let hub = Builder::new()
        .spawn_ready(|| drop(fiber::block(None)))
        .unwrap();
    let g = got.clone();
    let inner = Builder::new()
        .spawn_ready(move || {
            g.set(Some(fiber::resume_now(hub)));
            fiber::wakeup(hub).unwrap();
        })
        .unwrap();
    fiber::run();
    assert!(matches!(got.take(), Some(Ok(false))));
    assert!(!fiber::exists(hub) && !fiber::exists(inner));
}

#[test]
fn wakeup_of_a_ready_fiber_does_not_run_it_twice() {
    let runs = Rc::new(Cell::new(0));
    let r = runs.clone();
    let id = spawn(move || r.set(r.get() + 1));
    fiber::wakeup(id).unwrap();
    fiber::wakeup(id).unwrap();
    fiber::run();
    assert_eq!(runs.get(), 1);
}

#[test]
fn wakeup_of_a_dead_fiber_fails() {
    let id = spawn(|| {});
    fiber::run();
    assert!(matches!(fiber::wakeup(id), Err(Error::Dead(d)) if d == id));
    assert_eq!(fiber::Error::Dead(id).to_string(), "the fiber is dead");
    assert!(matches!(
        fiber::wakeup(FiberId(1 << 60)),
        Err(Error::Dead(_))
    ));
}

#[test]
fn ids_start_at_101_and_grow() {
    // A fresh thread has a fresh scheduler.
    std::thread::spawn(|| {
        assert_eq!(fiber::FIRST_FID, 101);
        let first = spawn(|| {});
        assert_eq!(first, FiberId(101));
        let second = Builder::new().spawn_now(|| {}).unwrap();
        assert_eq!(second, FiberId(102));
        fiber::run();
        let mut last = second;
        for _ in 0..10 {
            let id = spawn(|| {});
            assert!(id > last, "{id} after {last}");
            last = id;
            fiber::run();
        }
        let inside = Rc::new(Cell::new(None));
        let i = inside.clone();
        let id = spawn(move || i.set(fiber::current()));
        fiber::run();
        assert_eq!(inside.get(), Some(id));
        assert_eq!(fiber::current(), None);
    })
    .join()
    .unwrap();
}

#[test]
fn a_thread_ends_with_fibers_left_and_a_late_scheduler_access() {
    // Made before any fiber, so its destructor runs after the scheduler's
    // (thread-locals are destroyed in reverse order of registration): it
    // finds an empty scheduler, not a dropped one.
    struct Late;
    impl Drop for Late {
        fn drop(&mut self) {
            assert_eq!(fiber::current(), None);
            assert!(fiber::wakeup(FiberId(101)).is_err());
        }
    }
    thread_local! {
        static LATE: Late = const { Late };
    }
    std::thread::spawn(|| {
        LATE.with(|_| ());
        // one fiber blocked forever, one ended, one never run
        spawn(|| {
            fiber::block(None).unwrap();
        });
        spawn(|| {});
        fiber::run();
        spawn(|| unreachable!("never run"));
    })
    .join()
    .unwrap();
}

#[test]
fn timers_are_not_starved_by_busy_yielders() {
    let stop = Rc::new(Cell::new(false));
    let spins = Rc::new(Cell::new(0u64));
    let sleeper = Sleeper::new(stop.clone());
    for _ in 0..4 {
        let (stop, spins, sleeper) = (stop.clone(), spins.clone(), sleeper.clone());
        spawn(move || {
            while !stop.get() {
                spins.set(spins.get() + 1);
                sleeper.round();
                fiber::yield_now().unwrap();
            }
        });
    }
    sleeper.start();
    fiber::run();
    sleeper.assert_woke_in_time();
    assert!(spins.get() > 4);
}

#[test]
fn a_lone_yielder_counts_its_switches_and_lets_timers_fire() {
    // One busy fiber and a sleeper: while the sleeper sleeps, the busy
    // fiber's yields find nothing else ready (the switch to itself), and the
    // loop still gets its turn at the end of each batch.
    let stop = Rc::new(Cell::new(false));
    let sleeper = Sleeper::new(stop.clone());
    let yields = Rc::new(Cell::new(0u64));
    let (s, y, sl) = (stop.clone(), yields.clone(), sleeper.clone());
    let busy = joinable(move || {
        while !s.get() {
            sl.round();
            fiber::yield_now().unwrap();
            y.set(y.get() + 1);
        }
    });
    sleeper.start();
    let csw = Rc::new(Cell::new(None));
    let c = csw.clone();
    spawn(move || {
        // Wait (by the sleeper's own stop) for the busy fiber to be done,
        // then read its switch count before the join frees it.
        while fiber::status(busy) != Some(fiber::Status::Dead) {
            fiber::sleep(ms(1)).unwrap();
        }
        c.set(Some(fiber::csw(busy).unwrap()));
        fiber::join(busy, None).unwrap();
    });
    fiber::run();
    sleeper.assert_woke_in_time();
    // Every yield is a switch out; the loop's first switch into it is one
    // more, and so is the switch it ends by.
    let csw = csw.get().expect("the joiner read the count");
    assert!(
        csw >= yields.get() && csw <= yields.get() + 2,
        "csw {csw}, yields {}",
        yields.get()
    );
}

#[test]
fn current_flags_and_join_state_read_the_slot() {
    assert_eq!(fiber::current_flags(), None);
    let done = Rc::new(Cell::new(false));
    let d = done.clone();
    spawn(move || {
        let me = fiber::current().unwrap();
        let flags = fiber::current_flags().unwrap();
        assert_eq!(flags.id, me);
        assert!(!flags.joinable && !flags.cancelled);
        fiber::set_joinable(me, true).unwrap();
        fiber::cancel(me).unwrap();
        let flags = fiber::current_flags().unwrap();
        assert!(flags.joinable && flags.cancelled);
        assert!(matches!(fiber::join_state(me), Err(Error::JoinSelf)));
        fiber::set_joinable(me, false).unwrap();

        let detached = spawn(|| ());
        assert!(matches!(
            fiber::join_state(detached),
            Err(Error::NotJoinable(_))
        ));
        let child = joinable(|| fiber::yield_now().unwrap());
        assert_eq!(fiber::join_state(child).unwrap(), Some(false));
        assert_eq!(fiber::join_state(FiberId(u64::MAX)).unwrap(), None);
        while fiber::status(child) != Some(fiber::Status::Dead) {
            let _ = fiber::yield_now();
        }
        assert_eq!(fiber::join_state(child).unwrap(), Some(true));
        fiber::join(child, None).unwrap();
        assert_eq!(fiber::join_state(child).unwrap(), None);
        d.set(true);
    });
    fiber::run();
    assert!(done.get());
}

#[test]
fn a_hundred_thousand_fibers_come_and_go() {
    const TOTAL: usize = 100_000;
    let finished = Rc::new(Cell::new(0usize));
    let f = finished.clone();
    spawn(move || {
        for i in 0..TOTAL {
            let f = f.clone();
            let body = move || {
                fiber::yield_now().unwrap();
                f.set(f.get() + 1);
            };
            if i % 2 == 0 {
                spawn(body);
            } else {
                Builder::new().spawn_now(body).unwrap();
            }
            // Lets the fibers end, so a few hundred live at once.
            if i % 256 == 255 {
                fiber::yield_now().unwrap();
            }
        }
    });
    fiber::run();
    assert_eq!(finished.get(), TOTAL);
    let stats = fiber::stats();
    assert_eq!(stats.fibers, 0);
    assert_eq!(stats.ready, 0);
    assert!(fiber::all().is_empty());
}

#[test]
fn a_joiner_that_gave_up_is_not_woken_when_the_target_ends() {
    let target = joinable(|| fiber::sleep(ms(20)).unwrap());
    let gave_up = Rc::new(Cell::new(false));
    let g = gave_up.clone();
    let joiner = spawn(move || {
        assert!(matches!(
            fiber::join(target, None),
            Err(Error::NotJoinable(id)) if id == target
        ));
        g.set(true);
    });
    spawn(move || {
        fiber::set_joinable(target, false).unwrap();
        fiber::wakeup(joiner).unwrap();
    });
    fiber::run();
    assert!(gave_up.get());
    assert!(!fiber::exists(target));
    assert_eq!(fiber::stats().fibers, 0);
}

#[test]
fn an_empty_fiber_does_not_touch_its_stack_deeply() {
    let mut s = fiber::FiberStack::new(512 * 1024).unwrap();
    assert!(!s.touched_below(16 * 1024));
    s.release_deep_pages(16 * 1024);
    assert!(!s.touched_below(16 * 1024));
}

#[test]
fn a_joiner_refused_as_not_joinable_does_not_block_a_later_join() {
    use std::cell::RefCell;
    use std::rc::Rc;
    let log = Rc::new(RefCell::new(Vec::new()));
    let target = fiber::Builder::new()
        .joinable(true)
        .spawn_ready(|| fiber::sleep(std::time::Duration::from_millis(20)).unwrap())
        .unwrap();
    let l1 = log.clone();
    let first = fiber::Builder::new()
        .spawn_ready(move || {
            let r = fiber::join(target, None);
            l1.borrow_mut().push(format!(
                "first: {}",
                r.map(|_| "ok".to_string())
                    .unwrap_or_else(|e| e.to_string())
            ));
        })
        .unwrap();
    let l2 = log.clone();
    fiber::Builder::new()
        .spawn_ready(move || {
            fiber::yield_now().unwrap();
            fiber::set_joinable(target, false).unwrap();
            fiber::wakeup(first).unwrap();
            fiber::yield_now().unwrap();
            fiber::set_joinable(target, true).unwrap();
            let r = fiber::join(target, None);
            l2.borrow_mut().push(format!(
                "second: {}",
                r.map(|_| "ok".to_string())
                    .unwrap_or_else(|e| e.to_string())
            ));
        })
        .unwrap();
    fiber::run();
    let log = log.borrow();
    assert!(
        log.contains(&"first: the fiber is not joinable".to_string()),
        "{log:?}"
    );
    assert!(log.contains(&"second: ok".to_string()), "{log:?}");
}

/// Uses about `kib` KiB of the stack, then runs `f` there.
#[inline(never)]
fn deep(kib: usize, f: &mut dyn FnMut()) {
    let pad = std::hint::black_box([0u8; 1024]);
    if kib > 1 {
        deep(kib - 1, f);
    } else {
        f();
    }
    std::hint::black_box(&pad);
}

/// Recurses until less than `below` bytes of stack are left, then runs `f`.
#[inline(never)]
fn down_to(below: usize, f: &mut dyn FnMut()) {
    let pad = std::hint::black_box([0u8; 256]);
    if fiber::stack_left().unwrap() >= below {
        down_to(below, f);
    } else {
        f();
    }
    std::hint::black_box(&pad);
}

/// `stack_room`'s margin is a quarter of a small stack: a 64 KiB margin
/// does not refuse everything on a 16 KiB stack, and still stops before the
/// guard; outside fibers there is always room.
#[test]
fn stack_room_asks_a_quarter_of_small_stacks() {
    assert!(fiber::stack_room(usize::MAX, 4));
    let seen = Rc::new(RefCell::new(Vec::new()));
    let s = seen.clone();
    Builder::new()
        .stack_size(fiber::stack::MIN_STACK_SIZE)
        .spawn_ready(move || {
            s.borrow_mut().push(fiber::stack_room(64 * 1024, 4));
            down_to(4 * 1024 - 512, &mut || {
                s.borrow_mut().push(fiber::stack_room(64 * 1024, 4))
            });
        })
        .unwrap();
    fiber::run();
    assert_eq!(*seen.borrow(), [true, false]);
}

/// A fiber on the smallest stack spawns past several slot chunks from 8 KiB
/// deep: a new chunk of slots (12 KiB) is made on the heap, not first on
/// the spawning fiber's stack (which faulted in its guard).
#[test]
fn a_fiber_on_a_small_stack_spawns_past_slot_chunks() {
    let done = Rc::new(Cell::new(0));
    let d = done.clone();
    Builder::new()
        .stack_size(fiber::stack::MIN_STACK_SIZE)
        .spawn_ready(move || {
            deep(8, &mut || {
                for _ in 0..200 {
                    let d = d.clone();
                    Builder::new()
                        .stack_size(fiber::stack::MIN_STACK_SIZE)
                        .spawn_ready(move || d.set(d.get() + 1))
                        .unwrap();
                }
            });
        })
        .unwrap();
    fiber::run();
    assert_eq!(done.get(), 200);
}

#[test]
fn a_running_fiber_spawns_past_many_slot_chunks_and_resumes_in_place() {
    let done = Rc::new(Cell::new(0));
    let d = done.clone();
    fiber::Builder::new()
        .spawn_ready(move || {
            // Each spawn_now runs its child at once, which adds slots while
            // this fiber's coroutine is being resumed.
            for _ in 0..300 {
                let d = d.clone();
                fiber::Builder::new()
                    .spawn_now(move || {
                        fiber::yield_now().unwrap();
                        d.set(d.get() + 1);
                    })
                    .unwrap();
            }
            fiber::yield_now().unwrap();
            d.set(d.get() + 1);
        })
        .unwrap();
    fiber::run();
    assert_eq!(done.get(), 301);
    assert_eq!(fiber::stats().fibers, 0);
}

#[test]
fn fibers_that_wake_each_other_take_turns_and_leave_room_for_timers() {
    // A ring of three: each wakes the next and blocks, so the one the loop
    // resumed runs the others from its own stack (state rule 6).
    let ids = Rc::new(RefCell::new(Vec::new()));
    let log = Log::default();
    let stop = Rc::new(Cell::new(false));
    let seen_blocked = Rc::new(Cell::new(0u32));
    let sleeper = Sleeper::new(stop.clone());
    for i in 0..3 {
        let (ring, log, stop, seen, sleeper) = (
            ids.clone(),
            log.clone(),
            stop.clone(),
            seen_blocked.clone(),
            sleeper.clone(),
        );
        let id = spawn(move || {
            let mut round = 0;
            while !stop.get() {
                sleeper.round();
                if round < 2 {
                    push(&log, format!("{i}:{round}"));
                }
                round += 1;
                let (prev, next) = {
                    let ring = ring.borrow();
                    (ring[(i + 2) % 3], ring[(i + 1) % 3])
                };
                if round > 1 && fiber::status(prev) == Some(fiber::Status::Suspended) {
                    seen.set(seen.get() + 1);
                }
                let _ = fiber::wakeup(next);
                fiber::block(None).unwrap();
            }
        });
        ids.borrow_mut().push(id);
    }
    sleeper.start();
    fiber::run();
    assert_eq!(entries(&log), ["0:0", "1:0", "2:0", "0:1", "1:1", "2:1"]);
    sleeper.assert_woke_in_time();
    assert!(
        seen_blocked.get() > 3,
        "a blocked fiber reports itself suspended"
    );
}

#[test]
fn a_fiber_run_from_a_blocked_fibers_stack_can_end_and_is_joined() {
    let log = Log::default();
    let l = log.clone();
    let target = Rc::new(Cell::new(None));
    let t = target.clone();
    // The joiner blocks first, so it runs the target from its stack; the
    // target yields once (back to the joiner, which resumes it again) and
    // ends there.
    spawn(move || {
        let id = t.get().unwrap();
        push(&l, "join");
        let ext = fiber::join(id, None).unwrap();
        push(&l, format!("joined {ext}"));
    });
    let l = log.clone();
    let id = Builder::new()
        .joinable(true)
        .ext(7)
        .spawn_ready(move || {
            push(&l, "target");
            fiber::yield_now().unwrap();
            push(&l, "target ends");
        })
        .unwrap();
    target.set(Some(id));
    fiber::run();
    assert_eq!(entries(&log), ["join", "target", "target ends", "joined 7"]);
    assert!(!fiber::exists(id));
    assert_eq!(fiber::stats().fibers, 0);
}

/// Issue 13, item 7: a fiber that ended and waits for its join takes a
/// wakeup (a no-op), a rename and `set_joinable(true)` until the join;
/// `set_joinable(false)` frees it.
#[test]
fn an_ended_joinable_fiber_takes_wakeup_rename_and_set_joinable() {
    let id = joinable(|| {});
    fiber::run();
    assert_eq!(fiber::status(id), Some(fiber::Status::Dead));
    fiber::wakeup(id).unwrap();
    fiber::set_name(id, b"renamed").unwrap();
    assert_eq!(fiber::name(id).unwrap(), b"renamed");
    fiber::set_joinable(id, true).unwrap();
    fiber::join(id, None).unwrap();
    assert!(matches!(fiber::wakeup(id), Err(Error::Dead(_))));
    let id = joinable(|| {});
    fiber::run();
    fiber::set_joinable(id, false).unwrap();
    assert!(!fiber::exists(id));
    assert!(matches!(fiber::join(id, None), Err(Error::Dead(_))));
}

#[test]
fn a_noted_wait_is_ended_by_its_note_only() {
    // `block_noted` hands out its wait: `resume_parked` runs the fiber at
    // once, `wakeup_parked` makes it ready, and a note of an earlier wait
    // (the fiber woken or cancelled since, or gone) ends nothing.
    let log = Log::default();
    let noted = Rc::new(Cell::new(None));
    let (l, n) = (log.clone(), noted.clone());
    let waiter = Builder::new()
        .spawn_now(move || {
            for _ in 0..3 {
                let r = fiber::block_noted(|p| n.set(Some(p)));
                push(&l, format!("woke: {}", r.is_ok()));
            }
        })
        .unwrap();
    let first = noted.get().unwrap();
    assert_eq!(first.fiber(), waiter);
    assert!(fiber::resume_parked(first));
    assert_eq!(entries(&log), ["woke: true"]);
    // The first wait is over: its note is stale now.
    assert!(!fiber::resume_parked(first));
    assert!(!fiber::wakeup_parked(first));
    let second = noted.get().unwrap();
    assert_ne!(first, second);
    assert!(fiber::wakeup_parked(second));
    // Ready, not run; a ready fiber is not resumed either.
    assert_eq!(entries(&log).len(), 1);
    assert!(!fiber::resume_parked(second));
    fiber::run();
    assert_eq!(entries(&log), ["woke: true", "woke: true"]);
    // A plain wakeup ends a noted wait too, and makes its note stale.
    let third = noted.get().unwrap();
    fiber::wakeup(waiter).unwrap();
    fiber::run();
    assert!(!fiber::resume_parked(third));
    assert_eq!(entries(&log).len(), 3);
    assert!(!fiber::exists(waiter));
    // A cancel ends it with the error, and its note is refused.
    let noted2 = Rc::new(Cell::new(None));
    let (l, n) = (log.clone(), noted2.clone());
    let cancelled = Builder::new()
        .spawn_now(move || {
            let r = fiber::block_noted(|p| n.set(Some(p)));
            push(
                &l,
                format!("cancelled: {}", matches!(r, Err(Error::Cancelled))),
            );
        })
        .unwrap();
    fiber::cancel(cancelled).unwrap();
    assert!(!fiber::resume_parked(noted2.get().unwrap()));
    fiber::run();
    assert_eq!(entries(&log).last().unwrap(), "cancelled: true");
}
