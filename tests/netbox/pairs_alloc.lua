-- Lua heap bytes one `future:pairs()` loop allocates beyond the messages it
-- returns, with the collector stopped: the same script on `tarantool` and
-- `luafiber`. arg[1]: URI of a server with arg[2] (default `push3`: 3
-- pushes, then 'done'). Prints "pairs_bytes N" (per loop over completed
-- futures, the least of 5 rounds of 1000) and "live_bytes N" (per request
-- for the whole async call + pairs loop).
local net = require('net.box')
local c = net.connect(arg[1])
assert(c.state == 'active', c.error)
local fname = arg[2] or 'push3'
local N = 1000
local opts = {is_async = true}
local futures = {}
local count = collectgarbage

local function start()
    for i = 1, N do futures[i] = c:call(fname, nil, opts) end
    for i = 1, N do futures[i]:wait_result() end
end

-- The messages: what result() decodes (the final DATA table); the pushes
-- are strings that exist already.
local function results()
    for i = 1, N do local _ = futures[i]:result() end
end

local function loops()
    for i = 1, N do for _, _ in futures[i]:pairs() do end end
end

local function measure(f)
    local before = count('count')
    f()
    return count('count') - before
end

-- Warm up (the JIT compiles these very functions).
for _ = 1, 3 do start(); results(); loops() end
local best = math.huge
for _ = 1, 5 do
    start()
    collectgarbage('collect')
    collectgarbage('stop')
    local kb = measure(loops) - measure(results)
    collectgarbage('restart')
    best = math.min(best, kb)
end
print(string.format('pairs_bytes %d', math.floor(best * 1024 / N + 0.5)))
collectgarbage('collect')
collectgarbage('stop')
local kb = measure(function()
    for _ = 1, N do
        local f = c:call(fname, nil, opts)
        for _, _ in f:pairs() do end
    end
end)
print(string.format('live_bytes %d', math.floor(kb * 1024 / N + 0.5)))
collectgarbage('restart')
c:close()
os.exit(0)
