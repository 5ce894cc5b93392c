-- cancel_cond_waiters: 20 rounds of N fibers (default 1,000) waiting on one
-- cond, all cancelled; each round waits until the last one has ended.
-- Each fiber ends by the FiberIsCancelled error its cond:wait() raises (as
-- Tarantool master raises it; on Tarantool 2.6 the wait returns and
-- fiber.testcancel() raises it), which nothing catches or prints. Only the
-- cancels and the fibers' ends are timed, not their creation. One line per
-- round (compare.sh takes the median of them all); ops = fibers cancelled.
local dir = (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "."
package.path = dir .. "/?.lua;" .. package.path
local B = require("benchlib")
local fiber = B.require_fiber('cancel_cond_waiters')
local n = B.getn(1000)
local ROUNDS = 20

local function waiter(cond)
    while true do cond:wait(); fiber.testcancel() end
end

for _ = 1, ROUNDS do
    B.measure('cancel_cond_waiters', n, function(k)
        local cond, fibers = fiber.cond(), {}
        for i = 1, k do fibers[i] = fiber.new(waiter, cond) end
        -- every fiber runs until its first wait
        fiber.sleep(0)
        return function()
            for i = 1, k do fibers[i]:cancel() end
            -- woken in cancel order, so the last to end is the last cancelled
            local last = fibers[k]
            while last:status() ~= 'dead' do fiber.sleep(0) end
            return k
        end
    end, {prepare = true})
end
B.finish()
