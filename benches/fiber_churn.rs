//! Fiber churn: Lua-born creation under each pool and new-thread setting,
//! and the peers' shapes (tokio/smol: `spawn_many`, `ping_pong`,
//! `chained_spawn`), with a pure-Rust switch baseline.
//!
//! ```text
//! benches/bench.sh --bench fiber_churn                              # LuaJIT
//! benches/bench.sh --bench fiber_churn --no-default-features --features lua54
//! ```
//!
//! `benches/bench.sh` is `cargo bench` with `--cfg luafiber_bench` (in a
//! target dir of its own), which the `newthread_*` variants need: they pick
//! how a Lua thread is made, a knob the product does not offer. A plain
//! `cargo bench` runs the rest.
//!
//! One `LuaRuntime` per OS thread: each bench builds its runtime on the bench
//! thread and drops it (every fiber finished) before the next one is built.
//! Each Lua bench is driven by `iter_custom`, so a whole batch of operations
//! runs in one Lua loop and criterion divides by the batch size.
//!
//! `FIBER_CHURN_CLOCK=cpu` times this thread's CPU time (user + system)
//! instead of wall time: steadier on a shared, loaded machine.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use luafiber::mlua::Function;
#[cfg(luafiber_bench)]
use luafiber::NewThread;
use luafiber::{fiber, LuaRuntime, RuntimeBuilder};

/// Fibers per `spawn_many` round.
const SPAWN_MANY: u64 = 1000;
/// Fibers per `chained_spawn` chain.
const CHAIN_DEPTH: u64 = 1000;

/// Loaded once per runtime: the Lua side of every bench, in the global
/// `bench`. Each function runs a whole batch of `n` operations.
const SETUP: &str = r#"
local fiber = require('fiber')
local create, new, yield, sleep = fiber.create, fiber.new, fiber.yield, fiber.sleep
local bench = {}

-- lua_born_create: fiber.create runs the empty child at once to its end.
local empty = function() end
function bench.create(n)
    for _ = 1, n do create(empty) end
end

-- spawn_many: `width` fibers on the ready queue, then yield until all ran.
local done = 0
local function child() done = done + 1 end
function bench.spawn_many(rounds, width)
    for _ = 1, rounds do
        done = 0
        for _ = 1, width do new(child) end
        while done < width do yield() end
    end
end

-- ping_pong: two fibers alternating fiber.yield(); n yields in total.
local function worker(k) for _ = 1, k do yield() end end
function bench.pingpong(n)
    local half = math.floor(n / 2)
    local a = new(worker, n - half); a:set_joinable(true)
    local b = new(worker, half); b:set_joinable(true)
    a:join(); b:join()
end

-- chained_spawn: each fiber spawns the next (fiber.new); the last wakes
-- the waiting driver, which sleeps meanwhile (no switch to it per link).
local chain_done = false
local function link(d, waiter)
    if d == 0 then chain_done = true; waiter:wakeup() else new(link, d - 1, waiter) end
end
function bench.chained(rounds, depth)
    local me = fiber.self()
    for _ = 1, rounds do
        chain_done = false
        new(link, depth - 1, me)
        while not chain_done do sleep(3600) end
    end
end

-- A check that fiber.create called from outside any fiber (an mlua call on
-- the main thread) really runs its child.
function bench.count_creates(n)
    local c = 0
    local f = function() c = c + 1 end
    for _ = 1, n do create(f) end
    return c
end

return bench
"#;

/// A start time: wall clock, or this thread's CPU clock.
#[derive(Clone, Copy)]
enum Stamp {
    Wall(Instant),
    Cpu(Duration),
}

fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; this clock always exists on Linux.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

impl Stamp {
    fn now() -> Stamp {
        static CPU: OnceLock<bool> = OnceLock::new();
        if *CPU.get_or_init(|| std::env::var("FIBER_CHURN_CLOCK").is_ok_and(|v| v == "cpu")) {
            Stamp::Cpu(thread_cpu_time())
        } else {
            Stamp::Wall(Instant::now())
        }
    }

    fn elapsed(self) -> Duration {
        match self {
            Stamp::Wall(t) => t.elapsed(),
            Stamp::Cpu(t) => thread_cpu_time().saturating_sub(t),
        }
    }
}

fn runtime(b: RuntimeBuilder) -> LuaRuntime {
    let rt = b.build().expect("a LuaRuntime on the bench thread");
    let bench: luafiber::mlua::Table = rt
        .lua()
        .load(SETUP)
        .set_name("=fiber_churn")
        .eval()
        .expect("setup");
    rt.lua()
        .globals()
        .set("bench", bench)
        .expect("global bench");
    rt
}

/// Runs `code` (with `N` set to the batch size) as a fiber until idle, and
/// times it.
fn time_chunk(rt: &LuaRuntime, code: &str, n: u64) -> Duration {
    rt.lua().globals().set("N", n).expect("global N");
    let t = Stamp::now();
    rt.run_chunk(code, "bench").expect("bench chunk");
    t.elapsed()
}

fn group<'a>(
    c: &'a mut Criterion,
    name: &str,
) -> BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut g = c.benchmark_group(name);
    g.sample_size(20)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1));
    g
}

/// `lua_born_create/<variant>`: one `fiber.create(function() end)` per op,
/// from a Lua loop called through mlua (outside any fiber: the child runs at
/// once from the main context), timed per batch.
fn lua_born_create(c: &mut Criterion) {
    #[cfg_attr(not(luafiber_bench), allow(unused_mut))]
    let mut variants: Vec<(&str, RuntimeBuilder)> = vec![
        ("pools_on", LuaRuntime::builder()),
        ("no_stack_pool", LuaRuntime::builder().stack_pool(0)),
        (
            "no_pools",
            LuaRuntime::builder().stack_pool(0).thread_pool(0),
        ),
    ];
    #[cfg(luafiber_bench)]
    variants.extend([
        (
            "newthread_cached_ref",
            LuaRuntime::builder()
                .thread_pool(0)
                .new_thread(NewThread::CachedRef),
        ),
        (
            "newthread_push_per_call",
            LuaRuntime::builder()
                .thread_pool(0)
                .new_thread(NewThread::PushPerCall),
        ),
    ]);
    #[cfg(all(luafiber_bench, feature = "luajit"))]
    variants.push((
        "newthread_cpcall",
        LuaRuntime::builder()
            .thread_pool(0)
            .new_thread(NewThread::Cpcall),
    ));

    let mut g = group(c, "lua_born_create");
    g.throughput(Throughput::Elements(1));
    for (name, builder) in variants {
        let rt = runtime(builder);
        let bench: luafiber::mlua::Table = rt.lua().globals().get("bench").expect("bench");
        let count: Function = bench.get("count_creates").expect("count_creates");
        assert_eq!(
            count.call::<u64>(100u64).expect("count_creates"),
            100,
            "fiber.create from main ran its children"
        );
        let create: Function = bench.get("create").expect("bench.create");
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let t = Stamp::now();
                create.call::<()>(iters).expect("bench.create");
                t.elapsed()
            })
        });
        assert!(!fiber::has_pending(), "every fiber finished");
        drop((create, count, bench));
        drop(rt);
    }
    g.finish();
}

/// `lua_born_create/in_fiber`: the same loop run by a fiber (`run_chunk`),
/// the creator being a fiber as in a real script.
fn lua_born_create_in_fiber(c: &mut Criterion) {
    let mut g = group(c, "lua_born_create");
    g.throughput(Throughput::Elements(1));
    let rt = runtime(LuaRuntime::builder());
    g.bench_function("pools_on_in_fiber", |b| {
        b.iter_custom(|iters| time_chunk(&rt, "bench.create(N)", iters))
    });
    g.finish();
    drop(rt);
}

/// `spawn_many/lua`: 1000 `fiber.new` then yield until all ran; per fiber.
fn spawn_many(c: &mut Criterion) {
    let mut g = group(c, "spawn_many");
    g.throughput(Throughput::Elements(SPAWN_MANY));
    let rt = runtime(LuaRuntime::builder());
    let code = format!("bench.spawn_many(N, {SPAWN_MANY})");
    g.bench_function("lua", |b| {
        b.iter_custom(|iters| time_chunk(&rt, &code, iters))
    });
    g.finish();
    drop(rt);
}

/// `ping_pong/yield_pingpong`: two Lua fibers alternating `fiber.yield()`;
/// `ping_pong/rust_yield_now`: the same with Rust fibers and no Lua.
fn ping_pong(c: &mut Criterion) {
    let mut g = group(c, "ping_pong");
    g.throughput(Throughput::Elements(1));
    let rt = runtime(LuaRuntime::builder());
    g.bench_function("yield_pingpong", |b| {
        b.iter_custom(|iters| time_chunk(&rt, "bench.pingpong(N)", iters))
    });
    drop(rt);

    assert!(fiber::configure(fiber::Config::default()), "no fibers left");
    g.bench_function("rust_yield_now", |b| {
        b.iter_custom(|iters| {
            let half = iters / 2;
            for k in [iters - half, half] {
                fiber::Builder::new()
                    .spawn_ready(move || {
                        for _ in 0..k {
                            fiber::yield_now().expect("yield");
                        }
                    })
                    .expect("spawn");
            }
            let t = Stamp::now();
            fiber::run();
            t.elapsed()
        })
    });
    g.finish();
}

/// `chained_spawn/lua`: a fiber spawns a fiber that spawns ... 1000 deep;
/// per fiber.
fn chained_spawn(c: &mut Criterion) {
    let mut g = group(c, "chained_spawn");
    g.throughput(Throughput::Elements(CHAIN_DEPTH));
    let rt = runtime(LuaRuntime::builder());
    let code = format!("bench.chained(N, {CHAIN_DEPTH})");
    g.bench_function("lua", |b| {
        b.iter_custom(|iters| time_chunk(&rt, &code, iters))
    });
    g.finish();
    drop(rt);
}

/// `rust_baseline/spawn_now`: creating an empty Rust fiber that runs at once
/// to its end (no Lua), next to `lua_born_create`.
fn rust_baseline(c: &mut Criterion) {
    assert!(fiber::configure(fiber::Config::default()), "no fibers left");
    let mut g = group(c, "rust_baseline");
    g.throughput(Throughput::Elements(1));
    g.bench_function("spawn_now", |b| {
        b.iter_custom(|iters| {
            let t = Stamp::now();
            // The driver is a fiber, as a Lua creator would be.
            fiber::Builder::new()
                .spawn_ready(move || {
                    for _ in 0..iters {
                        fiber::Builder::new().spawn_now(|| {}).expect("spawn");
                    }
                })
                .expect("spawn");
            fiber::run();
            t.elapsed()
        })
    });
    g.finish();
}

criterion_group!(
    benches,
    lua_born_create,
    lua_born_create_in_fiber,
    spawn_many,
    ping_pong,
    chained_spawn,
    rust_baseline
);
criterion_main!(benches);
