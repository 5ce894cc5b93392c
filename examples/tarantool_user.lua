-- tarantool_user.lua: a producer/consumer pipeline as a Tarantool user writes it,
-- with fiber, fiber.channel, fiber.cond and clock. Runs unchanged and prints the
-- same lines on both:
--   tarantool examples/tarantool_user.lua
--   luafiber examples/tarantool_user.lua
local fiber = require('fiber')
local clock = require('clock')

local jobs = fiber.channel(4)
local results = fiber.channel(16)
local ready = fiber.cond()
local started = 0

-- workers: take a job, "work" (sleep), send back the square
local workers = {}
for w = 1, 3 do
    local f = fiber.new(function(id)
        fiber.name('worker-' .. id)
        started = started + 1
        ready:signal()
        while true do
            local job = jobs:get()
            if not job then break end         -- a stop mark
            fiber.sleep(0.001 * (job % 3))
            results:put({job = job, square = job * job, by = fiber.name()})
        end
        return id
    end, w)
    f:set_joinable(true)
    workers[w] = f
end

-- wait until every worker is up
while started < 3 do ready:wait(1) end
print('workers started: ' .. started)

local t0 = clock.monotonic()
fiber.create(function()
    for job = 1, 12 do jobs:put(job) end
    for _ = 1, 3 do jobs:put(false) end  -- one stop mark per worker
end)

local sum, got = 0, {}
for _ = 1, 12 do
    local r = results:get(5)
    sum = sum + r.square
    got[r.job] = true
end
local missing = 0
for job = 1, 12 do if not got[job] then missing = missing + 1 end end
print(('sum of squares: %d, missing: %d'):format(sum, missing))

for w = 1, 3 do
    local ok, id = workers[w]:join()
    print(('worker %d joined: %s'):format(id, tostring(ok)))
end

jobs:close()

-- timeouts and cancellation
print('get on an empty channel with timeout: ' .. tostring(results:get(0.01)))
print('cond wait with timeout: ' .. tostring(fiber.cond():wait(0.01)))
local sleeper = fiber.new(function() fiber.sleep(10) end)
sleeper:set_joinable(true)
fiber.yield()
sleeper:cancel()
local ok, err = sleeper:join()
print('cancelled sleeper joined: ' .. tostring(ok) .. ' ' .. tostring(err))
print('elapsed under a second: ' .. tostring(clock.monotonic() - t0 < 1))
print('channel after close: ' .. tostring(jobs:is_closed()) .. ' ' .. tostring(jobs:put(1)))
os.exit(0)
