-- hello.lua: fibers that sleep, yield, join and get cancelled.
--   cargo run --release -- examples/hello.lua [N]
local fiber = require('fiber')
local n = tonumber(arg[1]) or 3

print(('main fiber: %s (id %d)'):format(fiber.name(), fiber.id()))

-- fiber.create runs the child at once, until its first yield.
local workers = {}
for i = 1, n do
    local f = fiber.create(function(k)
        fiber.name('worker-' .. k)
        fiber.sleep(0.01 * k)               -- other fibers run meanwhile
        return k * k
    end, i)
    f:set_joinable(true)
    workers[i] = f
end

-- Yields work anywhere, even inside table.sort's comparator.
local t = {5, 3, 1, 4, 2}
table.sort(t, function(a, b) fiber.yield(); return a < b end)
print('sorted while yielding: ' .. table.concat(t, ' '))

for i, f in ipairs(workers) do
    local ok, square = f:join()
    print(('worker %d -> %s %s'):format(i, tostring(ok), tostring(square)))
end

-- Cancel is a flag plus a wakeup, seen by the sleeper as an error.
local sleeper = fiber.new(function() fiber.sleep(3600) end)
sleeper:set_joinable(true)
fiber.yield()
sleeper:cancel()
local ok, err = sleeper:join()
print('cancelled sleeper: ' .. tostring(ok) .. ', ' .. tostring(err))
