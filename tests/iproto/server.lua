-- The luafiber server the interop tests call (tests/iproto_interop.rs):
--   luafiber server.lua [LISTEN [NET_MSG_MAX]]
-- Listens on LISTEN (default 127.0.0.1:0, a free port), prints
-- "LISTEN host:port" and serves until killed.
--   guest: execute on the function `echo` only (CALL of anything else and
--          EVAL are error 42);
--   tester (password 'secret'): the role super.
local fiber = require('fiber')

box.cfg{listen = arg[1] or '127.0.0.1:0', net_msg_max = tonumber(arg[2])}

box.schema.func.create('echo')
box.schema.user.grant('guest', 'execute', 'function', 'echo')
box.schema.user.create('tester', {password = 'secret'})
box.schema.user.grant('tester', 'super')

function echo(...) return ... end
function many() return 1, nil, 'three', nil end
function nothing() end
function fail() error('boom') end
function fail_table() error({code = 77, message = 'custom', type = 'MyError'}) end
function push3()
    for i = 1, 3 do box.session.push('msg' .. i) end
    return 'done'
end
function session() return box.session.id(), box.session.user(), box.session.sync() end
function peer() return box.session.peer() end
function sleepy(t) fiber.sleep(t) return 'slept' end
function table16() return {1, 2}, 3 end
function tuples16() return {{1, 2}, {3}} end
mod = {sub = {f = function(x) return x + 1 end}, obj = {k = 10}}
function mod.obj:m(x) return self.k + x end
function stats() return box.internal.server_stats().requests end

-- Session triggers: what each saw, read back by `events()`.
local events = {}
box.session.on_connect(function()
    table.insert(events, 'connect ' .. box.session.id() .. ' ' .. box.session.user())
end)
box.session.on_auth(function(user, ok)
    table.insert(events, 'auth ' .. box.session.id() .. ' ' .. user .. ' ' .. tostring(ok))
end)
box.session.on_disconnect(function()
    table.insert(events, 'disconnect ' .. box.session.id())
end)
function events_of(id)
    local mine = {}
    for _, e in ipairs(events) do
        if e:match(' ' .. id .. '[ $]') or e:match(' ' .. id .. '$') then
            table.insert(mine, e)
        end
    end
    return table.concat(mine, ';')
end

io.stdout:write('LISTEN ' .. box.internal.listen_addr() .. '\n')
io.stdout:flush()
