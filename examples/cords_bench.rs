//! Figures for several cords, printed (the criterion bench
//! `benches/cords.rs` measures the same cases):
//!
//! - `call`: request/response round trips into the cords from 4 client
//!   threads (`spawn` of a small task and its join, 32 in flight per
//!   client), with 1 and with 2 cords in the same run, and their ratio;
//! - `ping_pong`: a value sent back and forth between fibers of two cords
//!   over two `cord::Channel`s;
//! - `spawn_many_remote`: 100 000 tasks spawned from a client thread, each
//!   counting down a latch (tokio's `spawn_many_remote`).
//!
//! Run with `cargo run --release --example cords_bench [seconds per case]`;
//! `cords_bench SECONDS ping_pong` runs only the ping-pong (with the
//! process CPU per round trip, from `getrusage`, and the process CPU over a
//! following second with both cords idle).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use luafiber::runtime::{cord, Runtime};

const CLIENTS: usize = 4;
/// The spins of a call with work: about a microsecond, as a small Lua
/// function would take.
const WORK_SPINS: u32 = 500;
const IN_FLIGHT: usize = 32;
fn in_flight() -> usize {
    std::env::var("IN_FLIGHT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(IN_FLIGHT)
}

/// The task of a call: a little work, as a small Lua function would do.
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

/// CPU seconds the cords' threads used, added up as each stops.
static CORD_CPU_NS: AtomicUsize = AtomicUsize::new(0);

fn thread_cpu_ns() -> usize {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec to write.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as usize * 1_000_000_000 + t.tv_nsec as usize
}

fn process_cpu_ns() -> usize {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec to write.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    t.tv_sec as usize * 1_000_000_000 + t.tv_nsec as usize
}

/// User + system CPU of the process so far, in seconds (`getrusage`).
fn rusage_cpu() -> f64 {
    // SAFETY: `getrusage` fills the zeroed struct it is given.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Ping-pong alone: round trips/s, the process CPU per round trip, and the
/// process CPU (in cores) over the second after, with both cords idle.
fn ping_pong_cpu(secs: f64) {
    let rt = rt(2);
    let cpu0 = rusage_cpu();
    let (n, took) = ping_pong_on(&rt, secs);
    let cpu = rusage_cpu() - cpu0;
    println!(
        "ping_pong between 2 cords: {:.0} round trips/s, process CPU {:.2} us per round trip ({:.2} cores)",
        n as f64 / took,
        cpu * 1e6 / n as f64,
        cpu / took
    );
    let idle0 = rusage_cpu();
    std::thread::sleep(Duration::from_secs(1));
    println!(
        "idle after it (2 cords, 1 s): process CPU {:.2} ms",
        (rusage_cpu() - idle0) * 1e3
    );
    rt.shutdown_timeout(Duration::from_secs(5));
}

fn rt(cords: usize) -> cord::Runtime {
    Runtime::builder()
        .stack_size(64 * 1024)
        .cords(cords)
        .on_cord_stop(|_| {
            CORD_CPU_NS.fetch_add(thread_cpu_ns(), Ordering::Relaxed);
        })
        .build()
        .expect("cords start")
}

/// Calls per second into `cords` cords from [`CLIENTS`] threads, for
/// about `secs`.
fn call(cords: usize, spins: u32, secs: f64) -> f64 {
    let rt = rt(cords);
    let handle = rt.handle().clone();
    let calls = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let until = start + Duration::from_secs_f64(secs);
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (handle, calls) = (handle.clone(), calls.clone());
            std::thread::spawn(move || {
                let mut n = 0;
                while Instant::now() < until {
                    let hs: Vec<_> = (0..in_flight() as u64)
                        .map(|i| handle.spawn(move || work(i, spins)))
                        .collect();
                    if std::env::var_os("REV").is_some() {
                        for h in hs.into_iter().rev() {
                            std::hint::black_box(h.join().unwrap());
                        }
                    } else {
                        for h in hs {
                            std::hint::black_box(h.join().unwrap());
                        }
                    }
                    n += in_flight();
                }
                calls.fetch_add(n, Ordering::Relaxed);
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    let rate = calls.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64();
    rt.shutdown_timeout(Duration::from_secs(5));
    rate
}

/// Calls per second into `cords` cords from [`CLIENTS`] threads that each
/// run their own scheduler with `in_flight()` fibers making calls, for about
/// `secs`.
fn call_fibers(cords: usize, spins: u32, secs: f64) -> f64 {
    let rt = rt(cords);
    let handle = rt.handle().clone();
    let calls = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let until = start + Duration::from_secs_f64(secs);
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (handle, calls) = (handle.clone(), calls.clone());
            std::thread::spawn(move || {
                let local = Runtime::builder().stack_size(64 * 1024).build();
                let n = local.block_on(move || {
                    let fibers: Vec<_> = (0..in_flight() as u64)
                        .map(|i| {
                            let handle = handle.clone();
                            luafiber::spawn(move || {
                                let mut n = 0;
                                while Instant::now() < until {
                                    let h = handle.spawn(move || work(i, spins));
                                    std::hint::black_box(h.join().unwrap());
                                    n += 1;
                                }
                                n
                            })
                        })
                        .collect();
                    fibers.into_iter().map(|f| f.join().unwrap()).sum::<usize>()
                });
                calls.fetch_add(n, Ordering::Relaxed);
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    let rate = calls.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64();
    rt.shutdown_timeout(Duration::from_secs(5));
    rate
}

/// Round trips per second between fibers of two cords.
fn ping_pong(secs: f64) -> f64 {
    let rt = rt(2);
    let (n, took) = ping_pong_on(&rt, secs);
    rt.shutdown_timeout(Duration::from_secs(5));
    n as f64 / took
}

/// Round trips between fibers of cords 0 and 1 of `rt` for about `secs`:
/// how many, and the seconds they took.
fn ping_pong_on(rt: &cord::Runtime, secs: f64) -> (u64, f64) {
    let (ping, pong) = (cord::Channel::<u64>::new(1), cord::Channel::<u64>::new(1));
    let (p2, q2) = (ping.clone(), pong.clone());
    let echo = rt.spawn_on(1, move || {
        while let Ok(v) = p2.get(None) {
            q2.put(v + 1, None).unwrap();
        }
    });
    let driver = rt.spawn_on(0, move || {
        let start = Instant::now();
        let until = start + Duration::from_secs_f64(secs);
        let mut n = 0u64;
        while n % 1024 != 0 || Instant::now() < until {
            ping.put(n, None).unwrap();
            assert_eq!(pong.get(None).unwrap(), n + 1);
            n += 1;
        }
        ping.close();
        (n, start.elapsed().as_secs_f64())
    });
    let done = driver.join().unwrap();
    echo.join().unwrap();
    done
}

/// Seconds to spawn 100 000 tasks from a client thread and see them all
/// end.
fn spawn_many_remote(cords: usize) -> f64 {
    const TASKS: usize = 100_000;
    let rt = rt(cords);
    let latch = Arc::new((Mutex::new(TASKS), Condvar::new()));
    let start = Instant::now();
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
    drop(l);
    let took = start.elapsed().as_secs_f64();
    rt.shutdown_timeout(Duration::from_secs(5));
    took
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// How much faster two threads compute than one, now (2.0 on an idle
/// 2-core machine).
fn compute_speedup() -> f64 {
    let spin = || {
        let t = Instant::now();
        for i in 0..20_000 {
            std::hint::black_box(work(i, WORK_SPINS));
        }
        t.elapsed().as_secs_f64()
    };
    let one = spin();
    let t = Instant::now();
    let other = std::thread::spawn(spin);
    spin();
    other.join().unwrap();
    2.0 * one / t.elapsed().as_secs_f64()
}

fn main() {
    let secs: f64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2.0);
    if std::env::args().nth(2).as_deref() == Some("ping_pong") {
        ping_pong_cpu(secs);
        return;
    }
    if let Some(cords) = std::env::args()
        .nth(2)
        .and_then(|s: String| s.parse::<usize>().ok())
    {
        let spins = std::env::args()
            .nth(3)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        for f in [call as fn(usize, u32, f64) -> f64, call_fibers] {
            CORD_CPU_NS.store(0, Ordering::Relaxed);
            let (cpu0, t0) = (process_cpu_ns(), Instant::now());
            let rate = f(cords, spins, secs);
            let (cpu, wall) = (process_cpu_ns() - cpu0, t0.elapsed().as_secs_f64());
            let calls = rate * wall;
            let cord_ns = CORD_CPU_NS.load(Ordering::Relaxed) as f64;
            println!("{cords} cords: {rate:.0}/s, cpu per call: cords {:.0} ns, others {:.0} ns; cpu used {:.2} cores", cord_ns / calls, (cpu as f64 - cord_ns) / calls, cpu as f64 / 1e9 / wall);
        }
        return;
    }
    if let Some(cords) = std::env::args().nth(2).and_then(|s| s.parse().ok()) {
        let spins = std::env::args()
            .nth(3)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        println!(
            "call, {cords} cords: threads {:.0}/s, fibers {:.0}/s",
            call(cords, spins, secs),
            call_fibers(cords, spins, secs)
        );
        return;
    }
    let t = thread_cpu_ns();
    for i in 0..10_000 {
        std::hint::black_box(work(i, WORK_SPINS));
    }
    let work_ns = (thread_cpu_ns() - t) as f64 / 1e4;
    println!("a call's work ({WORK_SPINS} spins) takes {work_ns:.0} ns of CPU here");
    // 1 and 2 cords in turns (A B A B ...), so a change in the machine's
    // load hits both; the median of the pairs' ratios is the scaling.
    // Beside it, the same for plain compute on 1 and 2 threads: what the
    // machine gives two threads at this moment.
    for spins in [0, WORK_SPINS] {
        let mut ratios = Vec::new();
        let mut compute = Vec::new();
        for _ in 0..5 {
            let one = call(1, spins, secs / 5.0);
            let two = call(2, spins, secs / 5.0);
            println!(
                "  call ({spins} spins): 1 cord {one:.0}/s, 2 cords {two:.0}/s, ratio {:.2}",
                two / one
            );
            ratios.push(two / one);
            compute.push(compute_speedup());
        }
        println!(
            "call (task of {spins} spins): median ratio 2 cords / 1 cord {:.2} \
             (plain compute, 2 threads / 1: {:.2})",
            median(&mut ratios),
            median(&mut compute)
        );
    }
    println!(
        "ping_pong between 2 cords: {:.0} round trips/s",
        ping_pong(secs)
    );
    for cords in [1, 2] {
        let took = spawn_many_remote(cords);
        println!(
            "spawn_many_remote (100k tasks, {cords} cord{}): {:.1} ms, {:.0} tasks/s",
            if cords == 1 { "" } else { "s" },
            took * 1e3,
            100_000.0 / took
        );
    }
}
