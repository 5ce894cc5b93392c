-- Lua heap bytes one `future:pairs()` loop allocates beyond the messages it
-- returns, with the collector stopped: the same script on `tarantool` and
-- `luafiber`. arg[1]: URI of a server with `push3` (3 pushes, then
-- 'done'). Prints "pairs_bytes N" (per loop, over 1000 completed futures)
-- and "live_bytes N" (per request for the whole async call + pairs loop).
local net = require('net.box')
local c = net.connect(arg[1])
assert(c.state == 'active', c.error)
local fname = arg[2] or 'push3'
local N = 1000
local opts = {is_async = true}
local futures = {}
-- Warm up: the strings of the messages exist, the JIT has run.
for _ = 1, 2 do
    for i = 1, N do futures[i] = c:call(fname, nil, opts) end
    for i = 1, N do for _, _ in futures[i]:pairs() do end end
end
collectgarbage('collect')
collectgarbage('stop')
local count = collectgarbage
-- The messages: what result() decodes (the final DATA table) and the
-- pushes (strings that exist already).
local before = count('count')
for i = 1, N do local _ = futures[i]:result() end
local messages = count('count') - before
before = count('count')
for i = 1, N do for _, _ in futures[i]:pairs() do end end
local loops = count('count') - before
print(string.format('pairs_bytes %d', math.floor((loops - messages) * 1024 / N + 0.5)))
before = count('count')
for i = 1, N do
    local f = c:call(fname, nil, opts)
    for _, _ in f:pairs() do end
end
print(string.format('live_bytes %d', math.floor((count('count') - before) * 1024 / N + 0.5)))
collectgarbage('restart')
c:close()
os.exit(0)
