//! A full `collectgarbage()` between fiber switches never collects what a
//! live fiber needs: its Lua thread, its function, the function's upvalues,
//! its arguments, its storage, and the results or error a finished joinable
//! fiber keeps for its join. The scheduler is the only thing referencing
//! them; weak tables show whether the collector kept them.

use luafiber::LuaRuntime;

fn run(rt: &LuaRuntime, code: &str) {
    let before = luafiber::fiber::stats().fibers;
    if let Err(e) = rt.run_chunk(code, "gc_anchor") {
        panic!("{e}");
    }
    assert_eq!(luafiber::fiber::stats().fibers, before, "every fiber ended");
}

/// Starts `N` sleepers (half `fiber.create`, half `fiber.new`) referenced by
/// the scheduler alone, while a GC fiber runs a full collection whenever it
/// gets the CPU; checks each sleeper's data after every wakeup and that each
/// completes exactly once.
const SLEEPERS: &str = r#"
local fiber = require('fiber')
local N = 600
local ROUNDS = 6
local done, completed, failures = {}, 0, {}
local stop, collections = false, 0
-- Weak keys: an entry disappears once the collector frees the key.
local alive = setmetatable({}, {__mode = 'k'})

local gc = fiber.new(function()
    while not stop do
        collectgarbage('collect')
        collections = collections + 1
        fiber.yield()
    end
end)

local function spawn(i)
    local up = {i = i, s = string.rep('u', 64) .. i}
    local payload = {i = i, list = {}}
    for k = 1, 10 do payload.list[k] = {k * i} end
    local function body(arg, s, n)
        local c0 = collections
        alive[coroutine.running()] = true
        fiber.self().storage.mine = {i = i}
        for round = 1, ROUNDS do
            fiber.sleep(0.001 * ((i + round) % 4))
            if collectgarbage('count') < 0 then error('unreachable') end
            local ok = up.i == i and up.s == string.rep('u', 64) .. i
                and arg.i == i and #arg.list == 10 and arg.list[10][1] == 10 * i
                and s == 'arg' .. i and n == i * 0.5
                and fiber.self().storage.mine.i == i
            if not ok then failures[#failures + 1] = ('fiber %d round %d: data damaged'):format(i, round) end
        end
        if collections - c0 < 3 then
            failures[#failures + 1] = ('fiber %d lived through only %d collections'):format(i, collections - c0)
        end
        done[i] = (done[i] or 0) + 1
        completed = completed + 1
    end
    alive[body] = true
    alive[up] = true
    alive[payload] = true
    if i % 2 == 0 then
        fiber.create(body, payload, 'arg' .. i, i * 0.5)
    else
        fiber.new(body, payload, 'arg' .. i, i * 0.5)
    end
end

for i = 1, N do
    spawn(i)
    if i % 50 == 0 then collectgarbage('collect') end
end
collectgarbage('collect')
collectgarbage('collect')

-- Every fiber's function, upvalue and argument survives while it sleeps.
local function count_alive()
    local n = 0
    for _ in pairs(alive) do n = n + 1 end
    return n
end
local peak = 0
local deadline = fiber.clock() + 60
while completed < N and fiber.clock() < deadline do
    local n = count_alive()
    if n > peak then peak = n end
    fiber.sleep(0.001)
end
stop = true
assert(#failures == 0, failures[1])
assert(completed == N, ('%d of %d fibers completed'):format(completed, N))
for i = 1, N do
    assert(done[i] == 1, ('fiber %d completed %s times'):format(i, tostring(done[i])))
end
-- 3 objects per fiber before it runs, 4 once its thread registered itself.
assert(peak >= 3 * N, ('only %d of %d anchored objects were alive at once'):format(peak, 4 * N))
-- Finished fibers are no longer anchored.
fiber.sleep(0.01)
collectgarbage('collect')
collectgarbage('collect')
RESULT_LEFT = count_alive()
-- Pooled threads may stay; nothing of a finished fiber's stack may.
RESULT_LEFT_NON_THREADS = 0
for k in pairs(alive) do
    if type(k) ~= 'thread' then RESULT_LEFT_NON_THREADS = RESULT_LEFT_NON_THREADS + 1 end
end
"#;

#[test]
fn sleeping_fibers_survive_full_collections() {
    let rt = LuaRuntime::new().unwrap();
    run(&rt, SLEEPERS);
    // Recycled threads are reset: they keep nothing of their last fiber.
    let left: i64 = rt.lua().globals().get("RESULT_LEFT_NON_THREADS").unwrap();
    assert_eq!(left, 0, "pooled threads keep objects of finished fibers");
}

#[test]
fn sleeping_fibers_survive_full_collections_without_thread_pool() {
    let rt = LuaRuntime::builder().thread_pool(0).build().unwrap();
    run(&rt, SLEEPERS);
    // With no pool, a finished fiber's thread is garbage like anything else.
    let left: i64 = rt.lua().globals().get("RESULT_LEFT").unwrap();
    assert_eq!(left, 0, "objects of finished fibers are still alive");
}

#[test]
fn recycled_threads_start_clean_under_collections() {
    // Second and third waves run on threads recycled from the first: nothing
    // of an earlier fiber leaks into a later one, and anchoring still holds.
    let rt = LuaRuntime::new().unwrap();
    for _ in 0..3 {
        run(&rt, SLEEPERS);
    }
    run(
        &rt,
        r#"
        local fiber = require('fiber')
        local seen = {}
        for i = 1, 300 do
            fiber.create(function(...)
                local n = select('#', ...)
                collectgarbage('collect')
                fiber.yield()
                collectgarbage('collect')
                seen[i] = {n, ..., fiber.self().storage.mine}
            end, i, nil)
        end
        local deadline = fiber.clock() + 30
        while #seen < 300 and fiber.clock() < deadline do fiber.sleep(0.001) end
        for i = 1, 300 do
            assert(seen[i][1] == 2 and seen[i][2] == i and seen[i][3] == nil and seen[i][4] == nil,
                'fiber ' .. i .. ' saw leftovers')
        end
        "#,
    );
}

#[test]
fn queued_fibers_keep_function_and_arguments_until_they_run() {
    // fiber.new only queues: until the fiber first runs, its function and
    // arguments sit on its thread's stack alone.
    let rt = LuaRuntime::new().unwrap();
    run(
        &rt,
        r#"
        local fiber = require('fiber')
        local got = {}
        local weak = setmetatable({}, {__mode = 'v'})
        for i = 1, 2000 do
            local arg = {i = i, s = 'payload' .. i}
            local fn = function(a, b) got[i] = a.i + #a.s + b end
            weak[#weak + 1] = arg
            weak[#weak + 1] = fn
            fiber.new(fn, arg, i)
        end
        for _ = 1, 3 do collectgarbage('collect') end
        local n = 0
        for _ in pairs(weak) do n = n + 1 end
        assert(n == 4000, n .. ' of 4000 queued objects survived a full collection')
        fiber.yield()
        for i = 1, 2000 do
            assert(got[i] == i + #('payload' .. i) + i, 'fiber ' .. i .. ' ran with damaged arguments')
        end
        "#,
    );
}

#[test]
fn finished_joinable_fibers_keep_results_and_error_until_joined() {
    let rt = LuaRuntime::new().unwrap();
    run(
        &rt,
        r#"
        local fiber = require('fiber')
        local N = 500
        local weak = setmetatable({}, {__mode = 'v'})
        local fibers = {}
        for i = 1, N do
            local f = fiber.new(function()
                fiber.sleep(0.001)
                local t = {i = i, s = 'result' .. i}
                weak[i] = t
                if i % 3 == 0 then error(t) end
                return t, nil, 'tail' .. i
            end)
            f:set_joinable(true)
            fibers[i] = f
        end
        local stop = false
        fiber.new(function()
            while not stop do collectgarbage('collect'); fiber.yield() end
        end)
        local deadline = fiber.clock() + 30
        local function all_finished()
            for i = 1, N do
                if weak[i] == nil then return false end
            end
            return true
        end
        repeat fiber.sleep(0.001) until all_finished() or fiber.clock() > deadline
        for _ = 1, 3 do collectgarbage('collect') end
        for i = 1, N do
            assert(fibers[i]:status() == 'suspended', 'finished joinable fiber waits for its join')
            assert(weak[i] ~= nil, 'result of fiber ' .. i .. ' was collected before its join')
        end
        for i = 1, N do
            local r = {fibers[i]:join()}
            if i % 3 == 0 then
                assert(r[1] == false and rawequal(r[2], weak[i]), 'the very error table comes back')
            else
                assert(r[1] == true and rawequal(r[2], weak[i]) and r[3] == nil and r[4] == 'tail' .. i)
            end
            assert(r[2].i == i and r[2].s == 'result' .. i)
            fiber.yield()
        end
        stop = true
        "#,
    );
}
