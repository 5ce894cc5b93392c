//! Several cords (criterion; `examples/cords_bench.rs` prints the same
//! figures without it):
//!
//! - `call/{empty,1us}/{1,2}_cords`: request/response round trips into the
//!   cords from 4 client threads, each with 32 calls in flight (`spawn` of
//!   a task and its join); `empty` measures the machinery alone, `1us`
//!   gives each call about a microsecond of work, as a small Lua function
//!   would have. 1 and 2 cords run in the same bench run: their ratio is
//!   the scaling.
//! - `ping_pong`: a value sent back and forth between fibers of two cords
//!   over two `cord::Channel`s (one element per round trip).
//! - `spawn_many_remote`: 100 000 tasks spawned from a client thread, each
//!   counting down a latch (tokio's `spawn_many_remote`).
//!
//! `cargo bench --bench cords`.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use luafiber::runtime::{cord, Runtime};

const CLIENTS: u64 = 4;
const IN_FLIGHT: u64 = 32;

fn rt(cords: usize) -> cord::Runtime {
    Runtime::builder()
        .stack_size(64 * 1024)
        .cords(cords)
        .build()
        .expect("cords start")
}

/// A call's work: `spins` rounds of an LCG.
fn work(n: u64, spins: u32) -> u64 {
    let mut x = n;
    for _ in 0..spins {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        std::hint::black_box(x);
    }
    x
}

/// Runs `iters` calls from the client threads; returns the time taken.
fn calls(rt: &cord::Runtime, iters: u64, spins: u32) -> Duration {
    let rounds = iters.div_ceil(CLIENTS * IN_FLIGHT);
    let start = Instant::now();
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let handle = rt.handle().clone();
            std::thread::spawn(move || {
                for _ in 0..rounds {
                    let hs: Vec<_> = (0..IN_FLIGHT)
                        .map(|i| handle.spawn(move || work(i, spins)))
                        .collect();
                    for h in hs {
                        std::hint::black_box(h.join().unwrap());
                    }
                }
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    start
        .elapsed()
        .mul_f64(iters as f64 / (rounds * CLIENTS * IN_FLIGHT) as f64)
}

fn call(c: &mut Criterion) {
    let mut g = c.benchmark_group("call");
    g.throughput(Throughput::Elements(1));
    g.sample_size(20);
    g.measurement_time(Duration::from_secs(3));
    for (name, spins) in [("empty", 0), ("1us", 500)] {
        for cords in [1, 2] {
            let rt = rt(cords);
            g.bench_function(BenchmarkId::new(name, format!("{cords}_cords")), |b| {
                b.iter_custom(|iters| calls(&rt, iters, spins))
            });
            rt.shutdown_timeout(Duration::from_secs(5));
        }
    }
    g.finish();
}

fn ping_pong(c: &mut Criterion) {
    let rt = rt(2);
    c.bench_function("ping_pong", |b| {
        b.iter_custom(|iters| {
            let (ping, pong) = (cord::Channel::<u64>::new(1), cord::Channel::<u64>::new(1));
            let (p2, q2) = (ping.clone(), pong.clone());
            let echo = rt.spawn_on(1, move || {
                while let Ok(v) = p2.get(None) {
                    q2.put(v + 1, None).unwrap();
                }
            });
            let driver = rt.spawn_on(0, move || {
                let start = Instant::now();
                for n in 0..iters {
                    ping.put(n, None).unwrap();
                    assert_eq!(pong.get(None).unwrap(), n + 1);
                }
                let took = start.elapsed();
                ping.close();
                took
            });
            let took = driver.join().unwrap();
            echo.join().unwrap();
            took
        })
    });
    rt.shutdown_timeout(Duration::from_secs(5));
}

fn spawn_many_remote(c: &mut Criterion) {
    const TASKS: usize = 100_000;
    let mut g = c.benchmark_group("spawn_many_remote");
    g.sample_size(10);
    g.throughput(Throughput::Elements(TASKS as u64));
    for cords in [1, 2] {
        let rt = rt(cords);
        g.bench_function(format!("{cords}_cords"), |b| {
            b.iter(|| {
                let latch = Arc::new((Mutex::new(TASKS), Condvar::new()));
                for _ in 0..TASKS {
                    let latch = latch.clone();
                    drop(rt.spawn(move || {
                        let (left, cv) = &*latch;
                        let mut left = left.lock().unwrap();
                        *left -= 1;
                        if *left == 0 {
                            cv.notify_one();
                        }
                    }));
                }
                let (left, cv) = &*latch;
                let mut l = left.lock().unwrap();
                while *l > 0 {
                    l = cv.wait(l).unwrap();
                }
            })
        });
        rt.shutdown_timeout(Duration::from_secs(5));
    }
    g.finish();
}

criterion_group!(benches, call, ping_pong, spawn_many_remote);
criterion_main!(benches);
