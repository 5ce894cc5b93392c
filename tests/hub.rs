//! Lua fibers under the hub (the fiber layer's state rule 6: a blocked fiber
//! runs the loop's batch from its own stack, and its children hand it back
//! the thread): random Lua programs of `fiber.create`, `fiber.new`,
//! `fiber.yield`, channel puts and gets (the wrappers' reserved-slot put and
//! slot-number get on LuaJIT), cond waits, wakeups, cancels, joins, closes
//! and errors, under `pcall` and not, run step for step as they do with the
//! hub off (a trace subscriber turns it off) and with hand-backs off (a
//! switch hook turns them off).
//!
//! Every wait with a timer has one that no run lasts, so the order of the
//! steps depends on the FIFO order alone: any difference between the logs is
//! a bug. Each run has a thread and a runtime of its own (fiber ids start at
//! 101 each time). `HUB_SEEDS=n` runs n programs instead of 120.
//!
//! Then `fiber.create` on the main thread after a run: it runs only the new
//! fiber, which yields back to it.

use luafiber::{fiber, LuaRuntime};

#[path = "../fiber/tests/support/quiet.rs"]
mod quiet;
use quiet::Quiet;

/// How a program is run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// With a trace subscriber: no hub, no hand-back.
    Traced,
    /// Plain: the hub and hand-backs.
    Hub,
    /// With a switch hook: the hub, no hand-back.
    Hooked,
}

/// One random program: `SEED` picks every step; the main chunk starts the
/// first fibers, then yields in rounds and cancels whatever is still alive
/// after each, so that every fiber ends. `LOG` gets a line per step.
const PROGRAM: &str = r#"
local fiber = require('fiber')
local log = {}
LOG = log
local NEVER, MAX_FIBERS, MAX_DEPTH = 3600, 40, 3

-- Park-Miller: exact in doubles and in integers, the same on both engines.
local function rng(seed)
    local x = seed % 2147483646 + 1
    return function(n)
        x = (x * 16807) % 2147483647
        return x % n
    end
end

local conds = {fiber.cond(), fiber.cond()}
local chans = {fiber.channel(0), fiber.channel(1), fiber.channel(3)}
local fibers, spawned = {}, 0

local function say(...)
    local parts = {tostring(fiber.id()) .. ':'}
    for i = 1, select('#', ...) do parts[#parts + 1] = tostring((select(i, ...))) end
    log[#log + 1] = table.concat(parts, ' ')
end

-- A value that says where it came from, and is a table (so a lost or
-- duplicated one shows).
local function value(n) return {tostring(fiber.id()) .. '.' .. n} end
local function show(v) return type(v) == 'table' and v[1] or tostring(v) end

local program

local function step(r, depth, n)
    local k, c, ch = r(28), r(2) + 1, r(3) + 1
    local timeout = r(2) == 0 and NEVER or nil
    local f = #fibers > 0 and fibers[r(#fibers) + 1] or nil
    if k < 4 then
        say('yield', pcall(fiber.yield))
    elseif k < 6 then
        say('wait', c, timeout)
        say('waited', c, pcall(conds[c].wait, conds[c], timeout))
    elseif k < 8 then
        say('signal', c)
        conds[c]:signal()
    elseif k < 9 then
        say('broadcast', c)
        conds[c]:broadcast()
    elseif k < 11 then
        local v = value(n)
        say('put', ch, v[1], timeout)
        if r(2) == 0 then
            say('put', ch, pcall(chans[ch].put, chans[ch], v, timeout))
        else
            say('put', ch, chans[ch]:put(v, timeout))
        end
    elseif k < 13 then
        say('get', ch, timeout)
        local ok, v = pcall(chans[ch].get, chans[ch], timeout)
        say('got', ch, ok, show(v))
    elseif k < 15 and depth < MAX_DEPTH and spawned < MAX_FIBERS then
        spawned = spawned + 1
        say('create')
        local child = fiber.create(program, r(1000000), depth + 1)
        say('created', child:id())
    elseif k < 17 and spawned < MAX_FIBERS then
        spawned = spawned + 1
        local child = fiber.new(program, r(1000000), 0)
        if r(2) == 0 then child:set_joinable(true) end
        say('new', child:id())
    elseif k < 18 and f then
        say('wakeup', f:id(), pcall(f.wakeup, f))
    elseif k < 19 and f and r(3) == 0 then
        say('cancel', f:id(), pcall(f.cancel, f))
    elseif k < 20 and f then
        say('join', f:id())
        say('joined', f:id(), pcall(f.join, f, timeout))
    elseif k < 21 and f then
        say('status', f:id(), f:status())
    elseif k < 22 then
        local v = value(n)
        say('try', ch, chans[ch]:put(v, 0), show(chans[ch]:get(0)))
    elseif k < 23 and r(4) == 0 then
        say('close', ch)
        chans[ch]:close()
    elseif k < 24 then
        say('sleep', pcall(fiber.sleep, 0))
    elseif k < 25 then
        say('pcall error', pcall(error, 'boom ' .. n))
    elseif k < 26 and r(6) == 0 then
        say('raise')
        error('raised ' .. n)
    elseif k < 27 then
        say('testcancel', pcall(fiber.testcancel))
    else
        -- a put that reserves its slot, then finds the channel closed or
        -- the fiber cancelled when it blocks
        local v = value(n)
        say('put blocking', ch, v[1])
        say('put blocking', ch, pcall(chans[ch].put, chans[ch], v))
    end
end

-- Fibers whose function has returned or raised.
local ended = {}

function program(seed, depth)
    local me = fiber.self()
    fibers[#fibers + 1] = me
    local r = rng(seed)
    local steps = 3 + r(10)
    say('start', depth, steps)
    local ok, err = pcall(function()
        for n = 1, steps do step(r, depth, n) end
    end)
    ended[me:id()] = true
    if not ok then
        say('raises', err)
        error(err)
    end
    say('end')
end

local r = rng(SEED)
for _ = 1, 8 do
    spawned = spawned + 1
    local f = fiber.new(program, r(1000000), 0)
    if r(2) == 0 then f:set_joinable(true) end
end
-- Rounds of yields, then every fiber still alive is cancelled (and made
-- not joinable, which ends the joins), until all have ended.
for round = 1, 1000 do
    for _ = 1, 50 do fiber.yield() end
    local live = {}
    for _, f in ipairs(fibers) do
        if not ended[f:id()] then live[#live + 1] = f end
    end
    if #live == 0 and round > 1 then break end
    for _, f in ipairs(live) do
        f:set_joinable(false)
        f:cancel()
    end
    say('round', round, 'cancelled', #live)
end
-- The ended joinable fibers not joined yet are joined now.
for _, f in ipairs(fibers) do
    assert(ended[f:id()], f:id())
    if f:status() ~= 'dead' then say('join at end', f:id(), f:join()) end
    assert(f:status() == 'dead', f:id())
end
"#;

/// Runs the program of `seed` in `mode` on a new thread; returns its log.
fn run_program(seed: u64, mode: Mode) -> Vec<String> {
    std::thread::spawn(move || {
        let rt = LuaRuntime::new().unwrap();
        let code = format!("SEED = {seed}\n{PROGRAM}");
        let r = match mode {
            Mode::Traced => tracing::subscriber::with_default(Quiet, || rt.run_chunk(&code, "hub")),
            Mode::Hub => rt.run_chunk(&code, "hub"),
            Mode::Hooked => {
                let prev = fiber::set_switch_hook(Some(hook));
                let r = rt.run_chunk(&code, "hub");
                fiber::set_switch_hook(prev);
                r
            }
        };
        if let Err(e) = r {
            panic!("seed {seed} in {mode:?}: {e}");
        }
        let log: Vec<String> = rt.lua().globals().get("LOG").unwrap();
        log
    })
    .join()
    .unwrap_or_else(|_| panic!("seed {seed} in {mode:?} panicked"))
}

fn hook() {
    assert!(fiber::current().is_some(), "the hook runs on a fiber");
}

/// The first line where two logs differ, with some context.
fn first_difference(a: &[String], b: &[String]) -> Option<String> {
    let i = (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i))?;
    let from = i.saturating_sub(8);
    let show = |l: &[String]| l[from.min(l.len())..(i + 3).min(l.len())].join("\n  ");
    Some(format!(
        "line {i}:\n expected\n  {}\n got\n  {}",
        show(a),
        show(b)
    ))
}

#[test]
fn random_lua_programs_run_the_same_with_and_without_the_hub() {
    let mut lines = 0;
    for seed in 0..std::env::var("HUB_SEEDS").map_or(120, |s| s.parse().unwrap()) {
        let want = run_program(seed, Mode::Traced);
        lines += want.len();
        for mode in [Mode::Hub, Mode::Hooked] {
            let got = run_program(seed, mode);
            if let Some(diff) = first_difference(&want, &got) {
                panic!("seed {seed}: {mode:?} differs from the traced run at {diff}");
            }
        }
    }
    assert!(lines > 5000, "only {lines} lines");
}

#[test]
fn fiber_create_on_the_main_thread_after_a_run_runs_no_other_fiber() {
    let rt = LuaRuntime::new().unwrap();
    // A run whose batch was not used up.
    rt.run_chunk("LOG = {}", "first").unwrap();
    let code = r#"
        local fiber = require('fiber')
        fiber.new(function() LOG[#LOG + 1] = 'queued' end)
        fiber.create(function()
            LOG[#LOG + 1] = 'created'
            fiber.yield()
            LOG[#LOG + 1] = 'created again'
        end)
        LOG[#LOG + 1] = 'back in the creator'
    "#;
    rt.lua().load(code).exec().unwrap();
    let log: Vec<String> = rt.lua().globals().get("LOG").unwrap();
    assert_eq!(log, ["created", "back in the creator"]);
    rt.run();
    let log: Vec<String> = rt.lua().globals().get("LOG").unwrap();
    assert_eq!(
        log,
        ["created", "back in the creator", "queued", "created again"]
    );
}
