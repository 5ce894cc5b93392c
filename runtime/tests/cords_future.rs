//! Rust futures awaited in fibers: woken from another thread, timed out,
//! cancelled (the future dropped on its own cord), a stale wake after the
//! wait ended, and on a plain thread.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use luafiber_runtime::{
    block_on_future, block_on_future_timeout, cord, sleep, spawn, yield_now, Runtime,
};

const LONG: Duration = Duration::from_secs(60);

/// A one-shot value that any thread can send: the future side keeps the
/// waker it was last polled with, and says where it was dropped.
#[derive(Default)]
struct Shot {
    value: Option<u32>,
    waker: Option<Waker>,
    polls: usize,
    dropped_on: Option<ThreadId>,
}

#[derive(Clone, Default)]
struct Oneshot(Arc<Mutex<Shot>>);

impl Oneshot {
    fn send(&self, v: u32) {
        let waker = {
            let mut s = self.0.lock().unwrap();
            s.value = Some(v);
            s.waker.clone()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }

    fn waker(&self) -> Option<Waker> {
        self.0.lock().unwrap().waker.clone()
    }

    fn recv(&self) -> Recv {
        Recv(self.clone())
    }
}

struct Recv(Oneshot);

impl Future for Recv {
    type Output = u32;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u32> {
        let mut s = (self.0).0.lock().unwrap();
        s.polls += 1;
        match s.value.take() {
            Some(v) => Poll::Ready(v),
            None => {
                s.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

impl Drop for Recv {
    fn drop(&mut self) {
        (self.0).0.lock().unwrap().dropped_on = Some(std::thread::current().id());
    }
}

/// Waits (a bounded number of looks) until the future has been polled.
fn wait_polled(shot: &Oneshot) {
    for _ in 0..100_000 {
        if shot.waker().is_some() {
            return;
        }
        std::thread::sleep(Duration::from_micros(50));
    }
    panic!("the future was never polled");
}

#[test]
fn a_fiber_is_woken_from_another_thread() {
    let rt = cords(2);
    let shot = Oneshot::default();
    let rx = shot.clone();
    let h = rt.spawn_on(1, move || block_on_future(rx.recv()));
    wait_polled(&shot);
    let tx = shot.clone();
    std::thread::spawn(move || tx.send(42)).join().unwrap();
    assert_eq!(h.join().unwrap().unwrap(), 42);
    assert_eq!(shot.0.lock().unwrap().polls, 2);
    rt.shutdown_timeout(LONG);
}

#[test]
fn the_waiting_fiber_parks_alone() {
    let rt = Runtime::new();
    let shot = Oneshot::default();
    let (rx, tx) = (shot.clone(), shot.clone());
    let ticks = Arc::new(AtomicUsize::new(0));
    let (t, t2) = (ticks.clone(), ticks.clone());
    let v = rt.block_on(move || {
        let ticker = spawn(move || {
            for i in 1..=1_000_000 {
                t.store(i, Ordering::Relaxed);
                if yield_now().is_err() {
                    break;
                }
            }
        });
        // Sends once the other fiber has run a while.
        let sender = std::thread::spawn(move || {
            for _ in 0..100_000 {
                if t2.load(Ordering::Relaxed) >= 100 {
                    break;
                }
                std::thread::sleep(Duration::from_micros(50));
            }
            tx.send(7);
        });
        let v = block_on_future(rx.recv()).unwrap();
        ticker.cancel();
        ticker.join().unwrap();
        sender.join().unwrap();
        v
    });
    assert_eq!(v, 7);
    assert!(
        ticks.load(Ordering::Relaxed) >= 100,
        "the other fiber ran meanwhile"
    );
}

#[test]
fn a_timeout_drops_the_future() {
    let rt = Runtime::new();
    let shot = Oneshot::default();
    let rx = shot.clone();
    let r = rt.block_on(move || {
        let start = Instant::now();
        let r = block_on_future_timeout(rx.recv(), Duration::from_millis(5));
        (r, start.elapsed())
    });
    assert!(r.0.unwrap_err().is_timeout());
    assert!(r.1 >= Duration::from_millis(5));
    assert_eq!(
        shot.0.lock().unwrap().dropped_on,
        Some(std::thread::current().id())
    );
}

#[test]
fn a_cancel_drops_the_future_on_its_cord() {
    let rt = cords(2);
    let shot = Oneshot::default();
    let rx = shot.clone();
    let h = rt.spawn_on(1, move || {
        let me = std::thread::current().id();
        (me, block_on_future(rx.recv()))
    });
    wait_polled(&shot);
    h.cancel();
    let (cord_thread, r) = h.join().unwrap();
    assert!(r.unwrap_err().is_cancelled());
    assert_eq!(shot.0.lock().unwrap().dropped_on, Some(cord_thread));
    assert_ne!(cord_thread, std::thread::current().id());
    rt.shutdown_timeout(LONG);
}

#[test]
fn a_stale_wake_after_the_wait_is_ignored() {
    let rt = cords(1);
    let shot = Oneshot::default();
    let rx = shot.clone();
    let (sleeping_tx, sleeping) = mpsc::channel();
    let (woke_tx, woke) = mpsc::channel::<()>();
    let h = rt.spawn_on(0, move || {
        let v = block_on_future(rx.recv()).unwrap();
        // The waker the future was polled with outlives the wait.
        sleeping_tx.send(()).unwrap();
        let start = Instant::now();
        let slept = sleep(Duration::from_millis(50));
        let _ = woke.recv_timeout(LONG);
        (v, slept, start.elapsed())
    });
    wait_polled(&shot);
    let stale = shot.waker().unwrap();
    shot.send(1);
    sleeping.recv_timeout(LONG).unwrap();
    // Woken again, from another thread, while the fiber sleeps.
    for _ in 0..10 {
        stale.wake_by_ref();
    }
    let t = std::thread::spawn(move || stale.wake());
    t.join().unwrap();
    drop(woke_tx);
    let (v, slept, took) = h.join().unwrap();
    assert_eq!(v, 1);
    assert!(slept.is_ok());
    assert!(
        took >= Duration::from_millis(50),
        "the sleep was not cut short"
    );
    rt.shutdown_timeout(LONG);
}

#[test]
fn on_a_plain_thread_it_blocks_the_thread() {
    let shot = Oneshot::default();
    let tx = shot.clone();
    let polled = Arc::new(AtomicBool::new(false));
    let p = polled.clone();
    let t = std::thread::spawn(move || {
        for _ in 0..100_000 {
            if p.load(Ordering::Relaxed) && tx.waker().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_micros(50));
        }
        tx.send(5);
    });
    polled.store(true, Ordering::Relaxed);
    assert_eq!(block_on_future(shot.recv()).unwrap(), 5);
    t.join().unwrap();
}

#[test]
fn many_fibers_of_several_cords_await_one_thread() {
    let rt = cords(2);
    let shots: Vec<Oneshot> = (0..50).map(|_| Oneshot::default()).collect();
    let hs: Vec<_> = shots
        .iter()
        .map(|s| {
            let rx = s.clone();
            rt.spawn(move || block_on_future(rx.recv()).unwrap())
        })
        .collect();
    for s in &shots {
        wait_polled(s);
    }
    let senders = shots.clone();
    std::thread::spawn(move || {
        for (i, s) in senders.iter().enumerate() {
            s.send(i as u32);
        }
    })
    .join()
    .unwrap();
    let got: Vec<u32> = hs.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(got, (0..50).collect::<Vec<_>>());
    rt.shutdown_timeout(LONG);
}

fn cords(n: usize) -> cord::Runtime {
    Runtime::builder()
        .stack_size(64 * 1024)
        .cords(n)
        .build()
        .unwrap()
}
