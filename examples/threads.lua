-- threads.lua: Tarantool's experimental.threads on luafiber's cords: a
-- group of 2 threads (each an OS thread with its own Lua state), functions
-- exported there by eval, and 200 fibers calling them at once.
--   cargo run --release -- examples/threads.lua
local fiber = require('fiber')
local clock = require('clock')
local threads = require('experimental.threads')

threads.cfg({groups = {{name = 'workers', size = 2}}})
local info = threads.info()
print(('this thread: group %s, thread %d; groups: %s'):format(
    info.group_name, info.thread_id,
    table.concat((function()
        local t = {}
        for _, g in ipairs(info.groups) do
            table.insert(t, g.name .. '=' .. g.size)
        end
        return t
    end)(), ', ')))

-- The workers' functions, defined there: `eval` runs a chunk on every
-- thread of the group (target 'all', the default).
local defined = threads.eval('workers', [[
    local fiber = require('fiber')
    local threads = require('experimental.threads')
    local id = threads.info().thread_id
    threads.export('square', function(x) return x * x, id end)
    threads.export('slow_echo', function(x, seconds)
        fiber.sleep(seconds)            -- parks this call's fiber only
        return x, id
    end)
    threads.export('whoami', function()
        return threads.info().group_name, id
    end)
    return id
]])
print(('exported on threads %d and %d'):format(defined[1][1], defined[2][1]))

-- Runs `n` fibers at once, each doing `body(i)`; returns the seconds taken.
local function at_once(n, body)
    local t0 = clock.monotonic()
    local left = n
    local all_done = fiber.cond()
    for i = 1, n do
        fiber.create(function()
            body(i)
            left = left - 1
            if left == 0 then
                all_done:signal()
            end
        end)
    end
    if left > 0 then
        all_done:wait()
    end
    return clock.monotonic() - t0
end

-- target = 'any': whichever thread is free first.
local served = {0, 0}
local t = at_once(200, function(i)
    local r = threads.call('workers', 'square', {i}, {target = 'any'})
    assert(#r == 1, 'one answer for target any')
    local square, id = r[1][1], r[1][2]
    assert(square == i * i, ('square(%d) = %s'):format(i, tostring(square)))
    served[id] = served[id] + 1
end)
print(("target 'any': 200 calls right in %.3f s (thread 1 took %d, thread 2 %d)"):format(
    t, served[1], served[2]))

-- target = 'all': every thread answers, in thread order.
t = at_once(200, function(i)
    local r = threads.call('workers', 'square', {i}, {target = 'all'})
    assert(#r == 2, 'two answers for target all')
    for id = 1, 2 do
        assert(r[id][1] == i * i and r[id][2] == id)
    end
end)
print(("target 'all': 200 calls right (400 answers) in %.3f s"):format(t))

-- target = N: that thread only.
t = at_once(200, function(i)
    local n = i % 2 + 1
    local r = threads.call('workers', 'whoami', {}, {target = n})
    assert(#r == 1 and r[1][1] == 'workers' and r[1][2] == n)
end)
print(("target N: 200 calls right, each on the thread it named, in %.3f s"):format(t))

-- 200 calls that each wait 50 ms, all at once: they overlap (each worker
-- runs its calls on fibers of its own), so the whole takes about 50 ms,
-- not the 10 s they would take one after another.
local DELAY, N = 0.05, 200
t = at_once(N, function(i)
    local r = threads.call('workers', 'slow_echo', {i, DELAY}, {target = 'any'})
    assert(r[1][1] == i)
end)
print(('%d overlapping %d ms calls: %.3f s (serial: %.1f s, %.0fx faster)'):format(
    N, DELAY * 1000, t, N * DELAY, N * DELAY / t))
assert(t < N * DELAY / 2, 'the calls overlap')

-- Errors come back to the caller.
local ok, err = pcall(threads.call, 'workers', 'no_such_function')
print('unknown function: ' .. tostring(err))
ok, err = pcall(threads.call, 'workers', 'square', {print})
print('a function as an argument: ' .. tostring(err))
ok, err = pcall(threads.eval, 'workers', [[error('boom')]], {}, {target = 2})
print('an error on thread 2: ' .. tostring(err))
print('all answers checked')
