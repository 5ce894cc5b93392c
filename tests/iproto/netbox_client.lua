-- Tarantool 2.6's net.box against luafiber's server (tests/iproto/server.lua):
--   tarantool netbox_client.lua HOST:PORT
-- Prints "ok NAME" per case, then "ok"; an assertion ends it with an error.
local net = require('net.box')
local fiber = require('fiber')
local buffer = require('buffer')
local msgpack = require('msgpack')

local addr = arg[1]
local function ok(name) print('ok ' .. name) io.stdout:flush() end

local c = net.connect(addr, {user = 'tester', password = 'secret'})
assert(c.state == 'active', tostring(c.error))

assert(c:ping())
ok('ping')

local a, b, d, e = c:call('many')
assert(a == 1 and b == nil and d == 'three' and e == nil, 'many')
local r = {c:call('echo', {1, 'two', {x = 3}})}
assert(#r == 3 and r[1] == 1 and r[2] == 'two' and r[3].x == 3, 'echo')
assert(select('#', c:call('nothing')) == 0, 'nothing')
ok('call several returns and nils')

assert(c:call('mod.sub.f', {1}) == 2, 'dotted path')
assert(c:call('mod.obj:m', {5}) == 15, 'method path')
ok('call paths')

local x, y = c:eval('local a, b = ... return a + b, "s"', {40, 2})
assert(x == 42 and y == 's', 'eval')
assert(c:eval('return 7') == 7)
ok('eval')

local t = c:call_16('echo', 1, 'a')
assert(#t == 2 and t[1][1] == 1 and t[2][1] == 'a', 'call_16 scalars')
t = c:call_16('table16')
assert(#t == 2 and t[1][1] == 1 and t[1][2] == 2 and t[2][1] == 3, 'call_16 table')
t = c:call_16('tuples16')
assert(#t == 2 and t[1][2] == 2 and t[2][1] == 3, 'call_16 tuples')
ok('call_16')

local okc, err = pcall(c.call, c, 'fail')
assert(not okc and tostring(err):find('boom'), tostring(err))
okc, err = pcall(c.call, c, 'fail_table')
assert(not okc and err.code == 77 and err.message == 'custom', tostring(err))
okc, err = pcall(c.eval, c, 'error("in eval")')
assert(not okc and tostring(err):find('in eval'), tostring(err))
okc, err = pcall(c.eval, c, 'return +')
assert(not okc, 'a syntax error')
ok('errors')

okc, err = pcall(c.call, c, 'no_such_function')
assert(not okc and err.code == 33, tostring(err))
assert(err.message == "Procedure 'no_such_function' is not defined", err.message)
okc, err = pcall(c.call, c, 'mod.nope.f')
assert(not okc and err.code == 33, tostring(err))
ok('unknown function')

local got = {}
local res = c:call('push3', {}, {on_push = function(ctx, m) table.insert(got, m) end})
assert(res == 'done' and table.concat(got, ',') == 'msg1,msg2,msg3', 'on_push')
ok('on_push')

local f = c:call('push3', {}, {is_async = true})
local seen = {}
for i, m in f:pairs() do seen[i] = m end
assert(#seen == 4 and seen[1] == 'msg1' and seen[3] == 'msg3', 'pairs')
assert(type(seen[4]) == 'table' and seen[4][1] == 'done', 'pairs result')
ok('future pairs')

f = c:call('sleepy', {0.01}, {is_async = true})
local wr = f:wait_result(10)
assert(wr[1] == 'slept', 'wait_result')
f = c:call('sleepy', {0.05}, {is_async = true})
f:discard()
local okd, derr = f:result()
assert(okd == nil and tostring(derr):find('discarded'), tostring(derr))
ok('wait_result and discard')

local ibuf = buffer.ibuf()
local len = c:call('echo', {7, 8}, {buffer = ibuf, skip_header = true})
assert(len > 0, 'buffer length')
local v = msgpack.decode_unchecked(ibuf.rpos)
assert(v[1] == 7 and v[2] == 8, 'buffer content')
ok('buffer and skip_header')

okc, err = pcall(c.call, c, 'sleepy', {1}, {timeout = 0.01})
assert(not okc and err.code == 78, tostring(err))
ok('timeout')

local id, user, sync = c:call('session')
assert(id > 1 and user == 'tester' and sync > 0, 'session')
assert(c:call('events_of', {id}) == ('connect %d guest;auth %d tester true'):format(id, id),
       c:call('events_of', {id}))
local p = c:call('peer')
assert(type(p) == 'string' and p:find('127.0.0.1:'), tostring(p))
ok('box.session')

-- Many fibers on one connection, replies in any order.
local done, bad = 0, 0
for i = 1, 50 do
    fiber.create(function()
        for j = 1, 20 do
            if c:call('echo', {i * 100 + j}) ~= i * 100 + j then bad = bad + 1 end
        end
        done = done + 1
    end)
end
local deadline = fiber.clock() + 30
while done < 50 and fiber.clock() < deadline do fiber.sleep(0.01) end
assert(done == 50 and bad == 0, 'concurrent calls')
ok('concurrent calls')

-- Auth: a wrong password and an unknown user alike are 47.
local badpw = net.connect(addr, {user = 'tester', password = 'wrong'})
assert(badpw.state == 'error', badpw.state)
assert(badpw.error:find('User not found or supplied credentials are invalid'), badpw.error)
local nobody = net.connect(addr, {user = 'nobody', password = 'x'})
assert(nobody.state == 'error' and nobody.error == badpw.error, nobody.error)
local adm = net.connect(addr, {user = 'admin', password = ''})
assert(adm.state == 'error', 'admin only over the console')
ok('auth good and bad')

-- on_disconnect ran in the closed session.
local badid = id + 1
deadline = fiber.clock() + 10
while not c:call('events_of', {badid}):find('disconnect') and fiber.clock() < deadline do
    fiber.sleep(0.01)
end
assert(c:call('events_of', {badid}) ==
       ('connect %d guest;auth %d tester false;disconnect %d'):format(badid, badid, badid),
       c:call('events_of', {badid}))
ok('session triggers')

-- guest: execute on `echo` only.
local g = net.connect(addr)
assert(g:ping())
assert(g:call('echo', {5}) == 5)
okc, err = pcall(g.call, g, 'many')
assert(not okc and err.code == 42, tostring(err))
assert(err.message == "Execute access to function 'many' is denied for user 'guest'", err.message)
okc, err = pcall(g.eval, g, 'return 1')
assert(not okc and err.code == 42, tostring(err))
assert(err.message == "Execute access to universe '' is denied for user 'guest'", err.message)
ok('a grant missing')

-- Nothing left running on the server (the timed-out sleepy(1) ends).
deadline = fiber.clock() + 10
while c:call('stats') > 1 and fiber.clock() < deadline do fiber.sleep(0.05) end
assert(c:call('stats') == 1, 'only this call runs')
c:close()
g:close()
assert(c.state == 'closed')
ok('close')
print('ok')
os.exit(0)
