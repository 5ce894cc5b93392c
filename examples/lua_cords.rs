//! Lua `call` throughput on 1 and 2 cords from 4 client threads, in one
//! run: each client keeps `WINDOW` calls in flight (`Handle::call_async`,
//! then a `block_on` of the oldest call's future), and every call runs a
//! Lua function on whichever cord is free first.
//!
//! ```text
//! cargo run --release --example lua_cords [CALLS_PER_CLIENT] [WORK] [ROUNDS]
//! ```
//!
//! `WORK` is the loop count of the called function (`bench.work(n)`: a sum
//! over `1..n`), so a call costs the Lua code plus luafiber's per-call path
//! (the typed arguments and results through serde and MessagePack, a
//! fiber, the injector, the reply, the waker). Each round runs 1 cord
//! then 2 cords; on a shared machine the median of the rounds' ratios is
//! the figure to read (the CPU and the load average are printed with it).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use futures::executor::block_on;
use luafiber::{Builder, Handle, Runtime};

const CLIENTS: usize = 4;
const WINDOW: usize = 64;

const MODULE: &str = r#"
return {
    work = function(n)
        local s = 0
        for i = 1, n do s = s + i % 7 end
        return s
    end,
}
"#;

/// One run's figures.
struct Figures {
    /// Calls per second.
    rate: f64,
    /// CPU time per call of the client threads and of the rest of the
    /// process (the cords), in microseconds.
    client_us: f64,
    cord_us: f64,
}

/// CPU time used so far by the calling thread (`RUSAGE_THREAD`) or the
/// whole process (`RUSAGE_SELF`), in seconds.
fn cpu_time(who: libc::c_int) -> f64 {
    // SAFETY: all-zero is a valid `rusage`; getrusage only writes it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid `who` and a pointer to a live `rusage`.
    unsafe { libc::getrusage(who, &mut ru) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    secs(ru.ru_utime) + secs(ru.ru_stime)
}

/// `CLIENTS` threads making `calls` calls each.
fn run(rt: &Runtime, calls: usize, work: u32) -> Figures {
    let cpu0 = cpu_time(libc::RUSAGE_SELF);
    let t = Instant::now();
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let h: Handle = rt.handle();
            std::thread::spawn(move || {
                let mut flight: VecDeque<luafiber::Call<i64>> = VecDeque::with_capacity(WINDOW);
                for _ in 0..calls {
                    if flight.len() == WINDOW {
                        block_on(flight.pop_front().unwrap()).unwrap();
                    }
                    flight.push_back(h.call_async::<i64>("bench.work", work));
                }
                for c in flight {
                    block_on(c).unwrap();
                }
                cpu_time(libc::RUSAGE_THREAD)
            })
        })
        .collect();
    let client_cpu: f64 = clients.into_iter().map(|c| c.join().unwrap()).sum();
    let elapsed = t.elapsed().as_secs_f64();
    let all_cpu = cpu_time(libc::RUSAGE_SELF) - cpu0;
    let n = (CLIENTS * calls) as f64;
    Figures {
        rate: n / elapsed,
        client_us: client_cpu / n * 1e6,
        cord_us: (all_cpu - client_cpu).max(0.0) / n * 1e6,
    }
}

/// The CPU's model name and count (Linux), for the figures' context.
fn cpu() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = info
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .and_then(|r| r.split(':').nth(1))
        })
        .map_or("unknown CPU", str::trim)
        .to_string();
    let n = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{model} x {n}")
}

/// The first three fields of `/proc/loadavg` (Linux).
fn loadavg() -> String {
    let s = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    s.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut argv = std::env::args().skip(1);
    let calls: usize = argv.next().map_or(Ok(50_000), |s| s.parse())?;
    let work: u32 = argv.next().map_or(Ok(100), |s| s.parse())?;
    let rounds: usize = argv.next().map_or(Ok(5), |s| s.parse())?;
    let one = Builder::new()
        .cords(1)
        .load_module("bench", MODULE)
        .build()?;
    let two = Builder::new()
        .cords(2)
        .load_module("bench", MODULE)
        .build()?;
    run(&one, calls / 10, work);
    run(&two, calls / 10, work);
    println!("{}, load average {}", cpu(), loadavg());
    println!("{CLIENTS} client threads, {WINDOW} calls in flight each, bench.work({work}):");
    let (mut best1, mut best2) = (0.0f64, 0.0f64);
    let mut ratios = Vec::new();
    for round in 1..=rounds.max(1) {
        let f1 = run(&one, calls, work);
        let f2 = run(&two, calls, work);
        let (r1, r2) = (f1.rate, f2.rate);
        best1 = best1.max(r1);
        best2 = best2.max(r2);
        ratios.push(r2 / r1);
        println!(
            "round {round}: 1 cord {r1:>9.0} calls/s, 2 cords {r2:>9.0} calls/s, ratio {:.2} \
             (CPU per call, cords + clients: {:.2} + {:.2} us, {:.2} + {:.2} us)",
            r2 / r1,
            f1.cord_us,
            f1.client_us,
            f2.cord_us,
            f2.client_us
        );
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "best: 1 cord {best1:.0} calls/s, 2 cords {best2:.0} calls/s, ratio {:.2}; \
         median ratio {:.2}; load average {}",
        best2 / best1,
        ratios[ratios.len() / 2],
        loadavg()
    );
    for rt in [one, two] {
        rt.shutdown_timeout(Duration::from_secs(1));
    }
    Ok(())
}
