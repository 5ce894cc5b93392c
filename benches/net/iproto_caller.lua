-- The caller of the IPROTO server benches, in Tarantool's API (net.box),
-- the same script on `tarantool` and `luafiber`:
--   iproto_caller.lua URI MODE [REQUESTS] [FIBERS]
-- MODE: call (`bench_func(1, 2, 3, 'foo', 'bar')`), eval (`return ...`
-- with those arguments), ping, pairs (an async call of `bench_push3` read
-- with `future:pairs()` over its 3 pushes and the result), call1 (call
-- from one fiber: latency), heap (call, with the callee's collector
-- stopped: the callee's Lua heap growth per 1000 calls). FIBERS fibers
-- (default 100; call1: 1) share one connection. Prints one line:
--   MODE requests wall_s krps [heap_kb_per_1000]
-- (the callee's CPU is read from outside, by compare_iproto.sh).
local net = require('net.box')
local fiber = require('fiber')

local uri, mode = arg[1], arg[2] or 'call'
local total = tonumber(arg[3]) or 100000
local nfibers = tonumber(arg[4]) or (mode == 'call1' and 1 or 100)

local c = net.connect(uri)
assert(c.state == 'active', c.error)
local args = {1, 2, 3, 'foo', 'bar'}

local body
if mode == 'call' or mode == 'call1' or mode == 'heap' then
    body = function(n)
        for _ = 1, n do c:call('bench_func', args) end
    end
elseif mode == 'eval' then
    body = function(n)
        for _ = 1, n do c:eval('return ...', args) end
    end
elseif mode == 'ping' then
    body = function(n)
        for _ = 1, n do c:ping() end
    end
elseif mode == 'pairs' then
    local opts = {is_async = true}
    body = function(n)
        for _ = 1, n do
            local f = c:call('bench_push3', nil, opts)
            for _, _ in f:pairs() do end
        end
    end
else
    error('unknown mode ' .. tostring(mode))
end

-- Warm up (the JIT, the buffers, the pools on both sides).
body(2000)

local heap0
if mode == 'heap' then heap0 = c:call('bench_heap_start') end
local per = math.floor(total / nfibers)
local done = 0
local cond = fiber.cond()
local t0 = fiber.clock()
for _ = 1, nfibers do
    fiber.create(function()
        body(per)
        done = done + 1
        if done == nfibers then cond:signal() end
    end)
end
while done < nfibers do cond:wait(1) end
local wall = fiber.clock() - t0
local n = per * nfibers
local extra = ''
if mode == 'heap' then
    local heap1 = c:call('bench_heap_stop')
    extra = string.format(' %.1f', (heap1 - heap0) / n * 1000)
end
print(string.format('%s %d %.3f %.1f%s', mode, n, wall, n / wall / 1000, extra))
c:close()
os.exit(0)
