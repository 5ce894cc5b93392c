//! Fiber churn leaves nothing behind: after 100k fibers are created and
//! finished, the scheduler's fiber count, the Lua heap and the process RSS
//! are back near where they started; after a burst of 20k fibers alive at
//! once, the stack pool gives the deep pages back.
//!
//! RSS is per process, so the tests of this file run one at a time. Memory
//! that malloc keeps after a peak (the Lua heap of 20k fibers, freed but
//! not given back by glibc) is the allocator's policy, not the runtime's:
//! the bounds are checked after `malloc_trim(0)`, and the untrimmed figures
//! are printed next to them.

use std::sync::Mutex;

use luafiber::fiber::{pool::KEEP_BYTES, stack};
use luafiber::LuaRuntime;

static SERIAL: Mutex<()> = Mutex::new(());

/// Resident set size of this process, in KiB.
fn rss_kib() -> i64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .expect("VmRSS in /proc/self/status");
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// RSS in KiB after malloc gave its free memory back to the kernel.
fn trimmed_rss_kib() -> i64 {
    // SAFETY: malloc_trim has no preconditions.
    unsafe { libc::malloc_trim(0) };
    rss_kib()
}

/// (count, resident KiB) of the mappings that look like a default fiber
/// stack: a `PROT_NONE` guard right below a read/write region of the
/// default usable size.
fn stack_mappings() -> (usize, i64) {
    let guard = stack::GUARD_SIZE as u64;
    let usable = stack::DEFAULT_STACK_SIZE as u64;
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let (mut count, mut rss, mut in_stack) = (0, 0, false);
    let mut prev_guard_end = None;
    for line in smaps.lines() {
        let mut fields = line.split_whitespace();
        let range = fields.next().unwrap_or("");
        let perms = fields.next().unwrap_or("");
        if let Some((a, b)) = range.split_once('-') {
            if let (Ok(a), Ok(b)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16)) {
                in_stack = prev_guard_end == Some(a) && b - a == usable && perms == "rw-p";
                count += usize::from(in_stack);
                prev_guard_end = (b - a == guard && perms == "---p").then_some(b);
                continue;
            }
        }
        if in_stack && line.starts_with("Rss:") {
            rss += line
                .split_whitespace()
                .nth(1)
                .unwrap()
                .parse::<i64>()
                .unwrap();
        }
    }
    (count, rss)
}

/// Waits until the stacks of an earlier test's thread are unmapped (its
/// thread-local scheduler is dropped after the test reports), so baselines
/// are not taken in the middle of that.
fn settle() {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while stack_mappings().0 > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Lua heap after two full collections, in KiB.
fn lua_kib(rt: &LuaRuntime) -> f64 {
    rt.lua()
        .load("collectgarbage(); collectgarbage(); return collectgarbage('count')")
        .eval()
        .unwrap()
}

fn run(rt: &LuaRuntime, code: &str) {
    if let Err(e) = rt.run_chunk(code, "churn") {
        panic!("{e}");
    }
}

/// 50k `fiber.create` + 50k `fiber.new`, a third of them yielding once, with
/// at most a few hundred alive at a time.
const CHURN: &str = r#"
local fiber = require('fiber')
local finished, sum = 0, 0
local function body(i, tag)
    if i % 3 == 0 then fiber.yield() end
    sum = sum + i
    finished = finished + 1
end
for i = 1, 50000 do
    fiber.create(body, i, 'create')
    fiber.new(body, i, 'new')
    if i % 100 == 0 then fiber.yield() end
end
while finished < 100000 do fiber.yield() end
assert(finished == 100000)
assert(sum == 50000 * 50001, sum)
"#;

#[test]
fn churn_of_100k_fibers_returns_to_baseline() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    settle();
    let rt = LuaRuntime::new().unwrap();
    let fibers0 = luafiber::fiber::stats().fibers;
    let lua0 = lua_kib(&rt);
    let rss0 = trimmed_rss_kib();

    run(&rt, CHURN);
    assert_eq!(luafiber::fiber::stats().fibers, fibers0);
    let lua1 = lua_kib(&rt);
    let rss1 = trimmed_rss_kib();

    for _ in 0..3 {
        run(&rt, CHURN);
        assert_eq!(luafiber::fiber::stats().fibers, fibers0);
    }
    let lua2 = lua_kib(&rt);
    let untrimmed = rss_kib();
    let rss2 = trimmed_rss_kib();
    eprintln!(
        "churn ({untrimmed} KiB before trim): Lua heap {lua0:.0} -> {lua1:.0} -> {lua2:.0} KiB; RSS {rss0} -> {rss1} -> {rss2} KiB; {:?}",
        luafiber::fiber::stats()
    );
    assert!(
        lua1 - lua0 < 1024.0,
        "Lua heap grew by {:.0} KiB after 100k fibers",
        lua1 - lua0
    );
    assert!(
        lua2 - lua0 < 1024.0,
        "Lua heap grew by {:.0} KiB after 400k fibers",
        lua2 - lua0
    );
    assert!(rss2 - rss0 < 64 * 1024, "RSS grew by {} KiB", rss2 - rss0);
    // Once the pools are warm, more churn costs no more memory.
    assert!(
        rss2 - rss1 < 8 * 1024,
        "RSS grew by {} KiB over 300k more fibers",
        rss2 - rss1
    );
}

/// 20k fibers alive at once, each having used some 30 KiB (LuaJIT) of its
/// machine stack through nested `gsub` callbacks; the main fiber measures
/// the peak, then wakes them all.
const BURST: &str = r#"
local fiber = require('fiber')
local N = 20000
local started, finished = 0, 0
local function deep(n)
    if n == 0 then return 'x' end
    return (('x'):gsub('x', function() return deep(n - 1) end))
end
local fibers = {}
for i = 1, N do
    fibers[i] = fiber.new(function()
        assert(deep(3) == 'x')
        started = started + 1
        fiber.sleep(1000)
        finished = finished + 1
    end)
end
while started < N do fiber.sleep(0.001) end
PEAK_KIB = rss_kib()
PEAK_FIBERS = fiber_count()
for i = 1, N do fibers[i]:wakeup() end
fibers = nil
while finished < N do fiber.sleep(0.001) end
"#;

#[test]
fn burst_of_20k_live_fibers_gives_memory_back() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    settle();
    let rt = LuaRuntime::new().unwrap();
    rt.register_fn("rss_kib", |_| Ok(vec![rss_kib().into()]))
        .unwrap();
    rt.register_fn("fiber_count", |_| {
        Ok(vec![(luafiber::fiber::stats().fibers as i64).into()])
    })
    .unwrap();
    let fibers0 = luafiber::fiber::stats().fibers;
    let rss0 = trimmed_rss_kib();

    run(&rt, BURST);
    assert_eq!(luafiber::fiber::stats().fibers, fibers0);
    let peak: i64 = rt.lua().globals().get("PEAK_KIB").unwrap();
    let peak_fibers: i64 = rt.lua().globals().get("PEAK_FIBERS").unwrap();
    assert!(
        peak_fibers > 20000,
        "{peak_fibers} fibers were alive at the peak"
    );
    let lua1 = lua_kib(&rt);
    let untrimmed1 = rss_kib();
    let rss1 = trimmed_rss_kib();
    let pooled = luafiber::fiber::stats().pooled_stacks;
    let (stacks, stack_rss) = stack_mappings();

    run(&rt, BURST);
    assert_eq!(luafiber::fiber::stats().fibers, fibers0);
    let lua2 = lua_kib(&rt);
    let untrimmed2 = rss_kib();
    let rss2 = trimmed_rss_kib();
    eprintln!(
        "burst: RSS {rss0} -> peak {peak} -> {rss1} ({untrimmed1} before trim) -> {rss2} \
         ({untrimmed2} before trim) KiB; Lua heap {lua1:.0} -> {lua2:.0} KiB; {pooled} pooled \
         stacks; {stacks} stack mappings holding {stack_rss} KiB"
    );
    let config = luafiber::fiber::config().stacks;
    assert!(
        pooled <= config.max,
        "{pooled} stacks pooled, more than the pool's bound"
    );
    assert!(stacks <= config.max + 1, "{stacks} stacks still mapped");
    // Pooled stacks past the hot ones keep only their top KEEP_BYTES; the
    // burst's fibers touched well under 64 KiB of stack each.
    let bound =
        (pooled.saturating_sub(config.hot) * KEEP_BYTES + config.hot * 64 * 1024) / 1024 + 1024;
    assert!(
        stack_rss <= bound as i64,
        "pooled stacks hold {stack_rss} KiB, more than {bound} KiB: deep pages were not released"
    );
    assert!(
        rss1 - rss0 < 64 * 1024,
        "RSS stayed {} KiB above its start after the burst",
        rss1 - rss0
    );
    assert!(
        rss2 - rss0 < 64 * 1024,
        "RSS stayed {} KiB above its start after two bursts",
        rss2 - rss0
    );
    assert!(
        rss2 - rss1 < 8 * 1024,
        "RSS grew by {} KiB over a second burst",
        rss2 - rss1
    );
    assert!(
        lua2 - lua1 < 1024.0,
        "Lua heap grew by {:.0} KiB over a second burst",
        lua2 - lua1
    );
}

#[test]
fn burst_without_pools_unmaps_every_stack() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    settle();
    let rt = LuaRuntime::builder()
        .stack_pool(0)
        .thread_pool(0)
        .build()
        .unwrap();
    rt.register_fn("rss_kib", |_| Ok(vec![rss_kib().into()]))
        .unwrap();
    rt.register_fn("fiber_count", |_| {
        Ok(vec![(luafiber::fiber::stats().fibers as i64).into()])
    })
    .unwrap();
    let lua0 = lua_kib(&rt);
    let rss0 = trimmed_rss_kib();
    let (stacks0, _) = stack_mappings();
    run(&rt, BURST);
    let lua1 = lua_kib(&rt);
    let (stacks1, _) = stack_mappings();
    run(&rt, BURST);
    let lua2 = lua_kib(&rt);
    let untrimmed = rss_kib();
    let rss1 = trimmed_rss_kib();
    eprintln!(
        "burst without pools: RSS {rss0} -> {rss1} ({untrimmed} before trim) KiB; \
         Lua heap {lua0:.0} -> {lua1:.0} -> {lua2:.0} KiB; stack mappings {stacks0} -> {stacks1}"
    );
    assert_eq!(luafiber::fiber::stats().pooled_stacks, 0);
    assert!(stacks1 <= stacks0, "{stacks1} stacks still mapped");
    // What stays is the registry's array part, sized for the 40k refs that
    // were live at the peak (a thread anchor and an object per fiber): 1 MiB
    // of TValues on Lua 5.4. It is reused, so a second burst adds nothing.
    assert!(
        lua1 - lua0 < 2048.0,
        "Lua heap grew by {:.0} KiB with no thread pool",
        lua1 - lua0
    );
    assert!(
        lua2 - lua1 < 256.0,
        "Lua heap grew by {:.0} KiB over a second burst with no thread pool",
        lua2 - lua1
    );
    assert!(
        rss1 - rss0 < 64 * 1024,
        "RSS stayed {} KiB above its start",
        rss1 - rss0
    );
}
