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

/// A waker that counts its wakes.
#[derive(Default)]
struct Count(AtomicUsize);

impl std::task::Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn a_lent_waker_is_polled_with_and_its_lender_resumes_the_fiber() {
    use luafiber_fiber as fiber;
    use luafiber_runtime::lend;
    // A fiber waiting for its first step, then awaiting a future.
    let shot = Oneshot::default();
    let got = Arc::new(Mutex::new(Vec::new()));
    let awaiter = |shot: Oneshot, got: Arc<Mutex<Vec<String>>>| {
        move || {
            let _ = fiber::block(None);
            let r = block_on_future(shot.recv());
            got.lock().unwrap().push(format!("{r:?}"));
        }
    };
    let id = fiber::Builder::new()
        .spawn_now(awaiter(shot.clone(), got.clone()))
        .unwrap();
    let (count, count2) = (Arc::new(Count::default()), Arc::new(Count::default()));
    let (lent, lent2) = (Waker::from(count.clone()), Waker::from(count2.clone()));
    // The lender's switch: the future is polled with the lent waker, and
    // the fiber parks on it.
    let (ran, parked) = lend(id, &lent, || fiber::resume_now(id));
    assert!(matches!(ran, Ok(true)));
    let parked = parked.expect("parked on the loan");
    assert!(shot.waker().unwrap().will_wake(&lent));
    // The future's wake goes to the lender, not to the fiber.
    shot.send(7);
    assert_eq!(count.0.load(Ordering::SeqCst), 1);
    assert!(!fiber::has_ready());
    // The lender resumes it, lending again: the future is ready.
    let (resumed, again) = lend(id, &lent2, || fiber::resume_parked(parked));
    assert!(resumed);
    assert!(again.is_none());
    assert_eq!(*got.lock().unwrap(), ["Ok(7)"]);
    assert!(!fiber::exists(id));

    // Woken by its note instead (its lender polled elsewhere): it polls
    // with a waker of its own, which a wake from another thread ends.
    let shot = Oneshot::default();
    let id = fiber::Builder::new()
        .spawn_now(awaiter(shot.clone(), got.clone()))
        .unwrap();
    let (_, parked) = lend(id, &lent, || fiber::resume_now(id));
    let parked = parked.expect("parked on the loan");
    assert!(fiber::wakeup_parked(parked));
    fiber::run_until(|| !fiber::has_ready());
    assert!(!shot.waker().unwrap().will_wake(&lent));
    let s = shot.clone();
    std::thread::spawn(move || s.send(8)).join().unwrap();
    luafiber_runtime::local::run_ready(16);
    assert_eq!(got.lock().unwrap().last().unwrap(), "Ok(8)");

    // A cancel ends a wait on the loan with the cancel.
    let shot = Oneshot::default();
    let id = fiber::Builder::new()
        .spawn_now(awaiter(shot.clone(), got.clone()))
        .unwrap();
    let (_, parked) = lend(id, &lent, || fiber::resume_now(id));
    fiber::cancel(id).unwrap();
    assert!(!fiber::resume_parked(parked.unwrap()));
    fiber::run_until(|| !fiber::has_ready());
    assert!(got.lock().unwrap().last().unwrap().contains("ancel"));
    assert_eq!(count2.0.load(Ordering::SeqCst), 0);
}
