//! Cost of the scheduler's hot paths, with no Lua: nanoseconds per fiber
//! yield, per cond item and per channel message, next to bare `corosensei`
//! (a plain resume and suspend) as the floor.
//!
//! Two fibers ping-pong in each case:
//!
//! - `bare`: two coroutines resumed in turn, no scheduler (ns per yield);
//! - `yield`: two fibers calling [`fiber::yield_now`] (ns per yield);
//! - `cond`: a one-slot handoff guarded by two [`fiber::Cond`]s (ns per item:
//!   two waits and two signals);
//! - `channel`: a message sent back and forth over two `Channel<u64>`s of
//!   size 0 (ns per message: one put and one get).
//!
//! Each case runs `ROUNDS` times (default 5) of `N` items (default 10^6)
//! and prints the best and median round: on a shared machine the best round
//! is the steadiest figure. Under `valgrind --tool=callgrind`, a small `N`
//! gives instructions per item, a figure no neighbour disturbs.
//!
//! ```text
//! cargo bench -p luafiber-fiber --bench pingpong_probe -- [case...]
//! ```
use luafiber_fiber::{self as fiber, Channel, Cond};
use std::cell::Cell;
use std::rc::Rc;
use std::time::Instant;

thread_local! {
    static N_ITEMS: u64 = std::env::var("N")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000);
}

fn n() -> u64 {
    N_ITEMS.with(|n| *n)
}

fn main() {
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    // `cargo bench` adds `--bench`: flags are not case names.
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    /// Name, unit, and the case: one round, in ns per unit.
    type Case = (&'static str, &'static str, fn() -> f64);
    let cases: [Case; 4] = [
        ("bare", "ns/yield", bare),
        ("yield", "ns/yield", yield_pingpong),
        ("cond", "ns/item", cond_pingpong),
        ("channel", "ns/msg", channel_pingpong),
    ];
    for (name, unit, case) in cases {
        if !only.is_empty() && !only.iter().any(|o| o == name) {
            continue;
        }
        let mut ns: Vec<f64> = (0..rounds.max(1)).map(|_| case()).collect();
        ns.sort_by(f64::total_cmp);
        println!(
            "{name:8} best {:6.1} median {:6.1} {unit}",
            ns[0],
            ns[ns.len() / 2]
        );
    }
}

/// Runs the scheduler until idle; returns the elapsed ns divided by `per`.
fn timed_run(per: u64) -> f64 {
    let t = Instant::now();
    fiber::run();
    t.elapsed().as_nanos() as f64 / per as f64
}

fn bare() -> f64 {
    let n = n();
    use corosensei::{Coroutine, CoroutineResult};
    let body = move |y: &corosensei::Yielder<(), ()>, ()| {
        for _ in 0..n {
            y.suspend(());
        }
    };
    let mut a = Coroutine::new(body);
    let mut b = Coroutine::new(body);
    let t = Instant::now();
    loop {
        let ra = a.resume(());
        let rb = b.resume(());
        if matches!(ra, CoroutineResult::Return(())) && matches!(rb, CoroutineResult::Return(())) {
            break;
        }
    }
    t.elapsed().as_nanos() as f64 / (2 * n) as f64
}

fn yield_pingpong() -> f64 {
    let n = n();
    for _ in 0..2 {
        fiber::Builder::new()
            .spawn_ready(move || {
                for _ in 0..n {
                    fiber::yield_now().unwrap();
                }
            })
            .unwrap();
    }
    timed_run(2 * n)
}

fn cond_pingpong() -> f64 {
    let n = n();
    let (to_b, to_a) = (Rc::new(Cond::new()), Rc::new(Cond::new()));
    let full = Rc::new(Cell::new(false));
    let (tb, ta, f) = (to_b.clone(), to_a.clone(), full.clone());
    fiber::Builder::new()
        .spawn_ready(move || {
            for _ in 0..n {
                while f.get() {
                    ta.wait(None).unwrap();
                }
                f.set(true);
                tb.signal();
            }
        })
        .unwrap();
    fiber::Builder::new()
        .spawn_ready(move || {
            for _ in 0..n {
                while !full.get() {
                    to_b.wait(None).unwrap();
                }
                full.set(false);
                to_a.signal();
            }
        })
        .unwrap();
    timed_run(n)
}

fn channel_pingpong() -> f64 {
    let n = n();
    let (ping, pong) = (Channel::<u64>::new(0), Channel::<u64>::new(0));
    let (ping2, pong2) = (ping.clone(), pong.clone());
    fiber::Builder::new()
        .spawn_ready(move || {
            for i in 0..n {
                ping.put(i, None).unwrap();
                assert_eq!(pong.get(None).unwrap(), i);
            }
        })
        .unwrap();
    fiber::Builder::new()
        .spawn_ready(move || {
            for _ in 0..n {
                let v = ping2.get(None).unwrap();
                pong2.put(v, None).unwrap();
            }
        })
        .unwrap();
    timed_run(2 * n)
}
