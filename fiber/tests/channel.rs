//! `Channel`: many-to-many transfer without loss or duplication, FIFO order
//! of values and waiters, timeouts, graceful close, cancellation, and the
//! races between a hand-over and a timeout or a cancel.

use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::rc::Rc;
use std::time::{Duration, Instant};

use luafiber_fiber::{self as fiber, Builder, Channel, FiberId, GetError, PutError};

fn spawn(f: impl FnOnce() + 'static) -> FiberId {
    Builder::new().spawn_ready(f).unwrap()
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A small deterministic generator for timeouts and pauses.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Sends `per_producer` values from each of `producers` fibers to
/// `consumers` fibers; the last producer to finish closes the channel. With
/// `timeouts`, every put and get uses a short random timeout and retries.
/// Checks that every value arrives exactly once, and that each consumer gets
/// each producer's values in order (with one consumer: all of them, in
/// order).
fn many_to_many(
    size: usize,
    producers: usize,
    consumers: usize,
    per_producer: usize,
    timeouts: bool,
) {
    let ch = Channel::<(usize, usize)>::new(size);
    let received = Rc::new(RefCell::new(Vec::with_capacity(producers * per_producer)));
    let left = Rc::new(Cell::new(producers));
    let mut ids = Vec::new();
    for c in 0..consumers {
        let (ch, received) = (ch.clone(), received.clone());
        let mut rng = Rng(0x9E37_79B9 + c as u64);
        ids.push(move || loop {
            let timeout = timeouts.then(|| Duration::from_micros(rng.below(300)));
            match ch.get(timeout) {
                Ok(v) => received.borrow_mut().push((c, v)),
                Err(GetError::TimedOut) => assert!(timeouts),
                Err(GetError::Closed) => break,
                Err(e) => panic!("get: {e}"),
            }
        });
    }
    let mut bodies: Vec<Box<dyn FnOnce()>> = ids
        .into_iter()
        .map(|f| Box::new(f) as Box<dyn FnOnce()>)
        .collect();
    for p in 0..producers {
        let (ch, left) = (ch.clone(), left.clone());
        let mut rng = Rng(0x51ED_270B + p as u64);
        bodies.push(Box::new(move || {
            for i in 0..per_producer {
                let mut v = (p, i);
                loop {
                    let timeout = timeouts.then(|| Duration::from_micros(rng.below(300)));
                    match ch.put(v, timeout) {
                        Ok(()) => break,
                        Err(PutError::TimedOut(back)) => {
                            assert!(timeouts);
                            assert_eq!(back, (p, i));
                            v = back;
                        }
                        Err(e) => panic!("put: {e}"),
                    }
                }
                if rng.below(16) == 0 {
                    fiber::yield_now().unwrap();
                }
            }
            left.set(left.get() - 1);
            if left.get() == 0 {
                ch.close();
            }
        }));
    }
    // Interleave producers and consumers in the ready queue.
    let n = bodies.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| (i * 7919) % n);
    let mut bodies: Vec<Option<Box<dyn FnOnce()>>> = bodies.into_iter().map(Some).collect();
    for i in order {
        let body = bodies[i].take().unwrap();
        spawn(body);
    }
    fiber::run();

    let received = received.borrow();
    assert_eq!(received.len(), producers * per_producer);
    let unique: HashSet<_> = received.iter().map(|&(_, v)| v).collect();
    assert_eq!(unique.len(), received.len(), "a value arrived twice");
    let mut last = vec![vec![None; producers]; consumers];
    for &(c, (p, i)) in received.iter() {
        let prev = last[c][p].replace(i);
        assert!(
            prev < Some(i),
            "consumer {c} got {p}.{i} after {p}.{prev:?}"
        );
        if consumers == 1 {
            assert_eq!(prev.map_or(0, |n| n + 1), i, "producer {p} out of order");
        }
    }
    assert!(ch.is_closed());
    assert!(ch.is_empty());
    assert!(!ch.has_readers() && !ch.has_writers());
    assert_eq!(fiber::stats().fibers, 0);
}

#[test]
fn many_producers_and_consumers_over_a_rendezvous_channel() {
    many_to_many(0, 10, 10, 10_000, false);
}

#[test]
fn many_producers_and_consumers_over_a_buffered_channel() {
    many_to_many(7, 10, 10, 10_000, false);
}

#[test]
fn many_producers_and_one_consumer_keep_each_producers_order() {
    many_to_many(0, 10, 1, 2_000, false);
    many_to_many(3, 10, 1, 2_000, false);
    many_to_many(3, 10, 1, 1_000, true);
}

#[test]
fn many_producers_and_consumers_over_a_large_buffer() {
    many_to_many(1000, 4, 16, 25_000, false);
}

#[test]
fn many_producers_and_consumers_with_timeouts_on_both_sides() {
    many_to_many(0, 8, 8, 2_000, true);
    many_to_many(3, 8, 8, 2_000, true);
}

#[test]
fn values_come_out_in_fifo_order() {
    let ch = Channel::new(10);
    for i in 0..10 {
        ch.try_put(i).unwrap();
    }
    assert!(ch.is_full());
    assert_eq!(ch.count(), 10);
    assert_eq!(ch.size(), 10);
    assert!(matches!(ch.try_put(10), Err(PutError::TimedOut(10))));
    let got: Vec<i32> = (0..10).map(|_| ch.try_get().unwrap()).collect();
    assert_eq!(got, (0..10).collect::<Vec<_>>());
    assert!(ch.is_empty());
    assert_eq!(ch.try_get(), Err(GetError::TimedOut));
}

#[test]
fn blocked_readers_are_served_in_fifo_order() {
    let ch = Channel::new(0);
    let log = Rc::new(RefCell::new(Vec::new()));
    for r in 0..3 {
        let (ch, log) = (ch.clone(), log.clone());
        spawn(move || {
            let v = ch.get(None).unwrap();
            log.borrow_mut().push((r, v));
        });
    }
    let c = ch.clone();
    spawn(move || {
        assert!(c.has_readers());
        for v in ["a", "b", "c"] {
            c.put(v, None).unwrap();
        }
        assert!(!c.has_readers());
    });
    fiber::run();
    assert_eq!(*log.borrow(), [(0, "a"), (1, "b"), (2, "c")]);
}

#[test]
fn blocked_writers_are_served_in_fifo_order_behind_the_buffer() {
    let ch = Channel::new(1);
    ch.try_put(0).unwrap();
    let done = Rc::new(RefCell::new(Vec::new()));
    for w in 1..=3 {
        let (ch, done) = (ch.clone(), done.clone());
        spawn(move || {
            ch.put(w, None).unwrap();
            done.borrow_mut().push(w);
        });
    }
    let c = ch.clone();
    let got = Rc::new(RefCell::new(Vec::new()));
    let g = got.clone();
    spawn(move || {
        assert!(c.has_writers());
        assert_eq!(c.count(), 1);
        for _ in 0..4 {
            g.borrow_mut().push(c.get(None).unwrap());
        }
    });
    fiber::run();
    assert_eq!(*got.borrow(), [0, 1, 2, 3]);
    assert_eq!(*done.borrow(), [1, 2, 3]);
    assert!(!ch.has_writers());
}

#[test]
fn a_rendezvous_put_waits_for_a_reader() {
    let ch = Channel::new(0);
    assert!(ch.is_full() && ch.is_empty());
    assert!(matches!(ch.try_put(1), Err(PutError::TimedOut(1))));
    let log = Rc::new(RefCell::new(Vec::new()));
    let (c, l) = (ch.clone(), log.clone());
    spawn(move || {
        l.borrow_mut().push("put start");
        c.put(1, None).unwrap();
        l.borrow_mut().push("put done");
    });
    let (c, l) = (ch.clone(), log.clone());
    spawn(move || {
        fiber::sleep(ms(5)).unwrap();
        assert!(c.has_writers());
        assert_eq!(c.count(), 0);
        l.borrow_mut().push("get");
        assert_eq!(c.get(None).unwrap(), 1);
    });
    fiber::run();
    assert_eq!(*log.borrow(), ["put start", "get", "put done"]);
}

#[test]
fn get_and_put_time_out_and_give_the_value_back() {
    let ch = Channel::new(1);
    let c = ch.clone();
    let ok = Rc::new(Cell::new(false));
    let o = ok.clone();
    spawn(move || {
        let start = Instant::now();
        assert_eq!(c.get(Some(ms(10))), Err(GetError::TimedOut));
        assert!(start.elapsed() >= ms(10));
        assert!(!c.has_readers());

        c.put(String::from("kept"), None).unwrap();
        let start = Instant::now();
        match c.put(String::from("back"), Some(ms(10))) {
            Err(PutError::TimedOut(v)) => assert_eq!(v, "back"),
            other => panic!("{other:?}"),
        }
        assert!(start.elapsed() >= ms(10));
        assert!(!c.has_writers());
        assert_eq!(c.count(), 1);
        assert_eq!(c.get(Some(ms(10))).unwrap(), "kept");
        o.set(true);
    });
    fiber::run();
    assert!(ok.get());
}

#[test]
fn a_zero_timeout_tries_once_without_yielding() {
    let ch = Channel::new(0);
    let other_ran = Rc::new(Cell::new(false));
    let o = other_ran.clone();
    let c = ch.clone();
    let ok = Rc::new(Cell::new(false));
    let k = ok.clone();
    spawn(move || {
        spawn(move || o.set(true));
        assert_eq!(c.get(Some(Duration::ZERO)), Err(GetError::TimedOut));
        assert!(matches!(
            c.put(5, Some(Duration::ZERO)),
            Err(PutError::TimedOut(5))
        ));
        assert!(!other_ran.get());
        k.set(true);
    });
    fiber::run();
    assert!(ok.get());
}

#[test]
fn outside_a_fiber_only_non_blocking_operations_work() {
    let ch = Channel::new(1);
    assert_eq!(ch.get(None), Err(GetError::NotInFiber));
    assert_eq!(ch.get(Some(Duration::ZERO)), Err(GetError::TimedOut));
    ch.put(1, None).unwrap();
    assert!(matches!(ch.put(2, None), Err(PutError::NotInFiber(2))));
    assert!(matches!(
        ch.put(2, Some(ms(1))),
        Err(PutError::NotInFiber(2))
    ));
    assert_eq!(ch.get(None).unwrap(), 1);
    assert!(!ch.has_readers() && !ch.has_writers());
}

#[test]
fn close_keeps_buffered_values_readable() {
    let ch = Channel::new(3);
    ch.try_put(1).unwrap();
    ch.try_put(2).unwrap();
    ch.close();
    ch.close();
    assert!(ch.is_closed());
    assert!(matches!(ch.try_put(3), Err(PutError::Closed(3))));
    assert!(matches!(ch.put(3, None), Err(PutError::Closed(3))));
    assert_eq!(ch.count(), 2);
    assert_eq!(ch.get(None).unwrap(), 1);
    assert_eq!(ch.try_get().unwrap(), 2);
    assert_eq!(ch.get(None), Err(GetError::Closed));
    assert_eq!(ch.try_get(), Err(GetError::Closed));
    assert_eq!(ch.get(Some(Duration::ZERO)), Err(GetError::Closed));
}

#[test]
fn close_fails_blocked_writers_with_their_values() {
    for size in [0, 2] {
        let ch = Channel::new(size);
        for i in 0..size {
            ch.try_put(format!("buffered {i}")).unwrap();
        }
        let back = Rc::new(RefCell::new(Vec::new()));
        for w in 0..3 {
            let (ch, back) = (ch.clone(), back.clone());
            spawn(move || match ch.put(format!("blocked {w}"), None) {
                Err(PutError::Closed(v)) => back.borrow_mut().push(v),
                other => panic!("{other:?}"),
            });
        }
        let c = ch.clone();
        spawn(move || {
            assert!(c.has_writers());
            c.close();
            assert!(!c.has_writers());
        });
        fiber::run();
        assert_eq!(*back.borrow(), ["blocked 0", "blocked 1", "blocked 2"]);
        let drained: Vec<String> = std::iter::from_fn(|| ch.try_get().ok()).collect();
        let expected: Vec<String> = (0..size).map(|i| format!("buffered {i}")).collect();
        assert_eq!(drained, expected);
        assert_eq!(ch.try_get(), Err(GetError::Closed));
    }
}

#[test]
fn close_fails_blocked_readers() {
    let ch = Channel::<u8>::new(4);
    let closed = Rc::new(Cell::new(0));
    for _ in 0..3 {
        let (ch, closed) = (ch.clone(), closed.clone());
        spawn(move || {
            assert_eq!(ch.get(Some(Duration::from_secs(10))), Err(GetError::Closed));
            closed.set(closed.get() + 1);
        });
    }
    let c = ch.clone();
    spawn(move || {
        assert!(c.has_readers());
        c.close();
        assert!(!c.has_readers());
    });
    fiber::run();
    // Each got `Closed`, so none waited out its timeout.
    assert_eq!(closed.get(), 3);
}

#[test]
fn readers_drain_the_buffer_before_they_see_the_close() {
    let ch = Channel::new(2);
    let got = Rc::new(RefCell::new(Vec::new()));
    let (c, g) = (ch.clone(), got.clone());
    spawn(move || {
        c.put(1, None).unwrap();
        c.put(2, None).unwrap();
        c.close();
    });
    for _ in 0..3 {
        let (c, g) = (ch.clone(), g.clone());
        spawn(move || g.borrow_mut().push(c.get(None)));
    }
    fiber::run();
    assert_eq!(*got.borrow(), [Ok(1), Ok(2), Err(GetError::Closed)]);
}

#[test]
fn cancel_while_blocked_in_get() {
    let ch = Channel::<i32>::new(0);
    let c = ch.clone();
    let seen = Rc::new(Cell::new(false));
    let s = seen.clone();
    let reader = spawn(move || {
        assert_eq!(c.get(None), Err(GetError::Cancelled));
        assert!(!c.has_readers());
        s.set(true);
    });
    spawn(move || fiber::cancel(reader).unwrap());
    fiber::run();
    assert!(seen.get());
    assert!(matches!(ch.try_put(1), Err(PutError::TimedOut(1))));
}

#[test]
fn cancel_while_blocked_in_put_gives_the_value_back() {
    let ch = Channel::new(0);
    let c = ch.clone();
    let seen = Rc::new(Cell::new(false));
    let s = seen.clone();
    let writer = spawn(move || {
        match c.put(vec![1, 2, 3], None) {
            Err(PutError::Cancelled(v)) => assert_eq!(v, [1, 2, 3]),
            other => panic!("{other:?}"),
        }
        assert!(!c.has_writers());
        s.set(true);
    });
    spawn(move || fiber::cancel(writer).unwrap());
    fiber::run();
    assert!(seen.get());
    assert_eq!(ch.try_get(), Err(GetError::TimedOut));
}

#[test]
fn a_cancelled_fiber_fails_only_where_it_would_block() {
    let ch = Channel::new(1);
    let c = ch.clone();
    let ok = Rc::new(Cell::new(false));
    let o = ok.clone();
    spawn(move || {
        fiber::cancel(fiber::current().unwrap()).unwrap();
        // Room in the buffer, a value in the buffer: no wait, no error.
        c.put(1, None).unwrap();
        assert!(matches!(c.put(2, None), Err(PutError::Cancelled(2))));
        assert!(matches!(
            c.put(2, Some(Duration::ZERO)),
            Err(PutError::Cancelled(2))
        ));
        assert_eq!(c.get(None).unwrap(), 1);
        assert_eq!(c.get(None), Err(GetError::Cancelled));
        assert_eq!(c.get(Some(Duration::ZERO)), Err(GetError::Cancelled));
        // The non-blocking calls are never cancellation points.
        assert!(matches!(c.try_put(3), Ok(())));
        assert_eq!(c.try_get(), Ok(3));
        assert!(!c.has_readers() && !c.has_writers());
        o.set(true);
    });
    fiber::run();
    assert!(ok.get());
}

#[test]
fn no_value_is_lost_when_a_get_times_out_as_a_put_hands_over() {
    let ch = Channel::new(0);
    let c = ch.clone();
    let result = Rc::new(RefCell::new(None));
    let r = result.clone();
    spawn(move || *r.borrow_mut() = Some(c.get(Some(ms(5)))));
    let c = ch.clone();
    spawn(move || {
        // Hold the thread past the reader's deadline without yielding: its
        // timer fires in the same loop turn as this fiber's next run.
        std::thread::sleep(ms(20));
        fiber::yield_now().unwrap();
        // The reader timed out but has not run yet: it is still queued.
        assert!(c.has_readers());
        c.put(42, Some(Duration::ZERO)).unwrap();
    });
    fiber::run();
    assert_eq!(*result.borrow(), Some(Ok(42)));
    assert!(!ch.has_readers());
}

#[test]
fn no_value_is_duplicated_when_a_put_times_out_as_a_get_takes_it() {
    let ch = Channel::new(0);
    let c = ch.clone();
    let result = Rc::new(RefCell::new(None));
    let r = result.clone();
    spawn(move || *r.borrow_mut() = Some(c.put(7, Some(ms(5)))));
    let c = ch.clone();
    let got = Rc::new(RefCell::new(None));
    let g = got.clone();
    spawn(move || {
        std::thread::sleep(ms(20));
        fiber::yield_now().unwrap();
        assert!(c.has_writers());
        *g.borrow_mut() = Some(c.get(Some(Duration::ZERO)));
    });
    fiber::run();
    assert!(matches!(*result.borrow(), Some(Ok(()))));
    assert_eq!(*got.borrow(), Some(Ok(7)));
    assert_eq!(ch.try_get(), Err(GetError::TimedOut));
}

#[test]
fn a_value_handed_to_a_cancelled_reader_is_still_received() {
    let ch = Channel::new(0);
    let c = ch.clone();
    let result = Rc::new(RefCell::new(None));
    let r = result.clone();
    let reader = spawn(move || *r.borrow_mut() = Some(c.get(None)));
    let c = ch.clone();
    spawn(move || {
        fiber::cancel(reader).unwrap();
        c.try_put("mine").unwrap();
    });
    fiber::run();
    assert_eq!(*result.borrow(), Some(Ok("mine")));
}

#[test]
fn a_value_taken_from_a_cancelled_writer_counts_as_put() {
    let ch = Channel::new(0);
    let c = ch.clone();
    let result = Rc::new(RefCell::new(None));
    let r = result.clone();
    let writer = spawn(move || *r.borrow_mut() = Some(c.put(9, None)));
    let c = ch.clone();
    spawn(move || {
        fiber::cancel(writer).unwrap();
        assert_eq!(c.try_get(), Ok(9));
    });
    fiber::run();
    assert!(matches!(*result.borrow(), Some(Ok(()))));
}

#[test]
fn other_wakeups_do_not_end_a_wait() {
    let ch = Channel::new(0);
    let c = ch.clone();
    let result = Rc::new(RefCell::new(None));
    let r = result.clone();
    let reader = spawn(move || *r.borrow_mut() = Some(c.get(None)));
    let c = ch.clone();
    spawn(move || {
        for _ in 0..3 {
            fiber::wakeup(reader).unwrap();
            fiber::yield_now().unwrap();
            assert!(c.has_readers());
        }
        c.put(1, None).unwrap();
    });
    fiber::run();
    assert_eq!(*result.borrow(), Some(Ok(1)));
}

/// Counts its drops, so a lost or duplicated value shows.
struct Tracked {
    drops: Rc<Cell<usize>>,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.drops.set(self.drops.get() + 1);
    }
}

#[test]
fn every_value_is_dropped_exactly_once() {
    const N: usize = 3000;
    let drops = Rc::new(Cell::new(0));
    let received = Rc::new(Cell::new(0));
    let ch = Channel::new(5);
    for p in 0..3 {
        let (ch, drops) = (ch.clone(), drops.clone());
        spawn(move || {
            for i in 0..N / 3 {
                let v = Tracked {
                    drops: drops.clone(),
                };
                // Some writers are still blocked when the channel closes.
                let _ = ch.put(v, Some(Duration::from_micros(((p * 7 + i) % 50) as u64)));
            }
        });
    }
    for _ in 0..2 {
        let (ch, received) = (ch.clone(), received.clone());
        spawn(move || {
            while let Ok(v) = ch.get(Some(ms(1))) {
                received.set(received.get() + 1);
                drop(v);
                if received.get() == N / 2 {
                    ch.close();
                }
            }
        });
    }
    fiber::run();
    assert!(ch.is_closed());
    let buffered = ch.count();
    drop(ch);
    assert_eq!(
        drops.get(),
        N,
        "{} received, {buffered} left buffered",
        received.get()
    );
}

#[test]
fn handles_share_one_channel() {
    let a = Channel::new(2);
    let b = a.clone();
    a.try_put(1).unwrap();
    assert_eq!(b.count(), 1);
    assert_eq!(b.try_get(), Ok(1));
    b.close();
    assert!(a.is_closed());
    assert!(format!("{a:?}").contains("closed: true"));
}
