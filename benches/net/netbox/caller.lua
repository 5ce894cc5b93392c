-- The caller of the net.box benches, in Tarantool's API, the same script on
-- `tarantool` and `luafiber`:
--   caller.lua URI MODE [REQUESTS] [FIBERS]
-- MODE: call (`bench_func(1, 2, 3, 'foo', 'bar')`), eval (`return ...`),
-- ping, pairs (an async call of `bench_push3` and `future:pairs()` over its
-- 3 pushes and the result). FIBERS fibers (default 100) share one
-- connection. Prints one line:
--   MODE requests wall_s cpu_s krps cpu_us_per_request
-- with the process's CPU (user + system) from /proc/self/stat.
local net = require('net.box')
local fiber = require('fiber')

local uri, mode = arg[1], arg[2] or 'call'
local total = tonumber(arg[3]) or 200000
local nfibers = tonumber(arg[4]) or 100

local function cpu()
    local f = io.open('/proc/self/stat')
    local s = f:read('*a')
    f:close()
    -- Fields after the command name (which is in parentheses).
    local rest = s:match('%) (.*)$')
    local fields = {}
    for w in rest:gmatch('%S+') do fields[#fields + 1] = w end
    -- utime and stime are fields 14 and 15 of the line, 12 and 13 here.
    return (tonumber(fields[12]) + tonumber(fields[13])) / 100
end

local c = net.connect(uri)
assert(c.state == 'active', c.error)
local args = {1, 2, 3, 'foo', 'bar'}

local body
if mode == 'call' then
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

-- Warm up (the JIT, the buffers).
body(1000)

local per = math.floor(total / nfibers)
local done = 0
local cond = fiber.cond()
local t0, c0 = fiber.clock(), cpu()
for _ = 1, nfibers do
    fiber.create(function()
        body(per)
        done = done + 1
        if done == nfibers then cond:signal() end
    end)
end
while done < nfibers do cond:wait(1) end
local wall, used = fiber.clock() - t0, cpu() - c0
local n = per * nfibers
print(string.format('%s %d %.3f %.2f %.1f %.2f', mode, n, wall, used,
                    n / wall / 1000, used / n * 1e6))
c:close()
os.exit(0)
