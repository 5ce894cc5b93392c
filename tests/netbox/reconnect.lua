-- A reconnect with reconnect_after: the test harness kills the server
-- after "READY" and starts it again after "DOWN" (tests/netbox.rs).
local net = require('net.box')
local fiber = require('fiber')

local function say(s)
    io.stdout:write(s .. '\n')
    io.stdout:flush()
end

local c = net.connect(arg[1], {reconnect_after = 0.05})
assert(c.state == 'active', c.error)
assert(c:call('echo', {1}) == 1)
local events = {}
c:on_disconnect(function() table.insert(events, 'disconnect') end)
c:on_connect(function() table.insert(events, 'connect') end)
say('READY')
for _ = 1, 2000 do
    if c.state == 'error_reconnect' then break end
    fiber.sleep(0.01)
end
assert(c.state == 'error_reconnect', c.state)
local ok, e = pcall(c.call, c, 'echo', {1}, {timeout = 0.01})
assert(not ok and e.code ~= nil, tostring(e))
assert(not c:is_connected())
say('DOWN')
assert(c:wait_connected(30), c.state)
assert(c:call('echo', {2}) == 2)
assert(events[1] == 'disconnect' and events[2] == 'connect',
       table.concat(events, ','))
c:close()
say('ok')
os.exit(0)
