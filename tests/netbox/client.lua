-- luafiber's net.box against a Tarantool 2.6 server (tests/netbox/server.lua)
-- at arg[1] (host:port). Runs unchanged on `tarantool` (the reference).
-- Prints one line per failed check and "ok N" at the end when all passed.
local net = require('net.box')
local fiber = require('fiber')
local buffer = require('buffer')
local msgpack = require('msgpack')

local uri = arg[1]
local failed, count = 0, 0
local function check(name, cond, ...)
    count = count + 1
    if not cond then
        failed = failed + 1
        print('FAIL ' .. name, ...)
    end
end

local c = net.connect(uri)
check('connect', c.state == 'active', c.state, c.error)
check('is_connected', c:is_connected())
check('peer_version_id', c.peer_version_id >= 0x020600, c.peer_version_id)
check('peer_uuid', type(c.peer_uuid) == 'string' and #c.peer_uuid == 36)
check('schema_version', type(c.schema_version) == 'number')
check('ping', c:ping() == true)

-- call and eval, several returns
local a, b, t = c:call('multi')
check('call multi', a == 1 and b == 'two' and t[1] == 3)
check('call echo', select('#', c:call('echo', {1, 2, 3})) == 3)
check('call no returns', select('#', c:call('echo')) == 0)
check('eval', c:eval('return 1 + ...', {41}) == 42)
local x, y = c:eval('return ...', {'p', 'q'})
check('eval multi', x == 'p' and y == 'q')
check('call_16', c:call_16('echo', 1, 'a')[2][1] == 'a')

-- errors with codes
local ok, e = pcall(c.call, c, 'fail')
check('error raised', not ok and tostring(e):find('boom') ~= nil, e)
check('error code', e.code == 32, e.code)
ok, e = pcall(c.call, c, 'fail_code')
check('error custom', not ok and e.code == 32 and e.message == 'custom', e)
ok, e = pcall(c.call, c, 'no_such_function')
check('no such proc', not ok and e.code == 33, e.code)
ok, e = pcall(c.eval, c, 'error("x")')
check('eval error', not ok and e.code == 32)
ok, e = pcall(c.call, c, 'echo', 1)
check('call args must be a table', not ok)

-- pushes
local msgs = {}
local r = c:call('push3', {}, {on_push = function(ctx, m) table.insert(ctx, m) end,
                                on_push_ctx = msgs})
check('on_push', r == 'done' and #msgs == 3 and msgs[3] == 'msg3')
check('pushes ignored', c:call('push3') == 'done')
local f = c:call('push3', {}, {is_async = true})
local got = {}
for i, m in f:pairs() do got[i] = m end
check('pairs', #got == 4 and got[1] == 'msg1' and got[3] == 'msg3' and
      got[4][1] == 'done')
f = c:call('fail', {}, {is_async = true})
local last_k, last_v
for k, v in f:pairs() do last_k, last_v = k, v end
check('pairs error', last_k == msgpack.NULL and last_v.code == 32)
f = c:call('sleep', {10}, {is_async = true})
local n = 0
for k, v in f:pairs(0.05) do n = n + 1; last_k, last_v = k, v; break end
check('pairs timeout', n == 1 and last_k == msgpack.NULL and last_v.code == 78)
f:discard()
ok, e = pcall(c.call, c, 'push3', {}, {is_async = true, on_push = print})
check('async on_push refused', not ok)

-- futures
f = c:call('echo', {7, 8}, {is_async = true})
check('future not ready', f:is_ready() == false)
local res, err = f:result()
check('result not ready', res == nil and err.code == 32)
res = f:wait_result()
check('wait_result', res[1] == 7 and res[2] == 8)
check('is_ready', f:is_ready())
check('result', f:result()[2] == 8)
f = c:call('sleep', {0.2}, {is_async = true})
res, err = f:wait_result(0.01)
check('wait_result timeout', res == nil and err.code == 78)
check('wait_result after', f:wait_result(5)[1] == 'slept')
f = c:call('sleep', {0.1}, {is_async = true})
f:discard()
res, err = f:result()
check('discard', res == nil and err.message == 'Response is discarded')
f = c:eval('return 5', {}, {is_async = true})
check('eval async', f:wait_result()[1] == 5)
ok = pcall(f.wait_result, f, -1)
check('wait_result bad timeout', not ok)
-- many fibers on one connection
local done = 0
for i = 1, 50 do
    fiber.create(function()
        if c:call('echo', {i}) == i then done = done + 1 end
    end)
end
for _ = 1, 500 do
    if done == 50 then break end
    fiber.sleep(0.01)
end
check('50 fibers', done == 50, done)

-- buffer and skip_header
local ibuf = buffer.ibuf()
local len = c:call('echo', {7, 8}, {buffer = ibuf, skip_header = true})
check('buffer length', len == ibuf:size() and len > 0, len)
local decoded = msgpack.decode(ibuf.rpos, ibuf:size())
check('buffer skip_header', decoded[1] == 7 and decoded[2] == 8)
ibuf:recycle()
len = c:call('echo', {7}, {buffer = ibuf})
decoded = msgpack.decode(ibuf.rpos, ibuf:size())
check('buffer header', decoded[0x30][1] == 7)

-- timeouts
ok, e = pcall(c.call, c, 'sleep', {1}, {timeout = 0.05})
check('timeout', not ok and e.code == 78, e)
check('still works after a timeout', c:call('echo', {1}) == 1)

-- spaces
c:eval('box.space.test:truncate()')
local s = c.space.test
check('space', s ~= nil and s.id >= 512 and c.space[s.id] == s)
check('index', s.index.primary.id == 0 and s.index.name.id == 1 and
      s.index[1] == s.index.name)
check('index parts', s.index.name.parts[1].fieldno == 2 and
      s.index.name.unique == false)
check('replace', s:replace({1, 'a', 10})[2] == 'a')
check('insert', s:insert({2, 'b'})[2] == 'b')
ok, e = pcall(s.insert, s, {2, 'b'})
check('insert duplicate', not ok and e.code == 3, e)
check('select all', #s:select() == 2)
check('select key', s:select(1)[1][2] == 'a')
check('select iterator', #s:select(1, {iterator = 'GT'}) == 1)
check('select limit', #s:select({}, {limit = 1}) == 1)
check('secondary', s.index.name:select('b')[1][1] == 2)
check('get', s:get(1)[3] == 10)
check('get none', s:get(99) == nil)
check('update', s:update(1, {{'+', 3, 5}})[3] == 15)
check('index update', s.index.primary:update(1, {{'=', 2, 'z'}})[2] == 'z')
s:upsert({3, 'c', 1}, {{'+', 3, 1}})
s:upsert({3, 'c', 1}, {{'+', 3, 1}})
check('upsert', s:get(3)[3] == 2)
check('count', s:count() == 3)
check('min max', s.index.primary:min()[1] == 1 and
      s.index.primary:max()[1] == 3)
local ids = {}
for _, tuple in s:pairs() do ids[#ids + 1] = tuple[1] end
check('pairs over select', #ids == 3 and ids[3] == 3)
check('delete', s:delete(3)[2] == 'c')
check('delete none', s:delete(3) == nil)
f = s:select({}, {is_async = true})
check('async select', #f:wait_result() == 2)

-- triggers and close
local events = {}
local c2 = net.connect(uri, {wait_connected = false})
c2:on_connect(function() table.insert(events, 'connect') end)
c2:on_disconnect(function() table.insert(events, 'disconnect') end)
check('wait_connected', c2:wait_connected(10))
check('state', c2.state == 'active')
c2:close()
check('closed', c2.state == 'closed')
check('triggers', events[1] == 'connect' and events[2] == 'disconnect',
      table.concat(events, ','))
ok, e = pcall(c2.call, c2, 'echo', {1})
check('call on closed', not ok, e)
check('ping on closed', c2:ping() == false)

-- auth
local bad = net.connect('tester:wrong@' .. uri)
check('bad password', bad.state == 'error' and
      bad.error:find('Incorrect password') ~= nil, bad.state, bad.error)
ok, e = pcall(bad.call, bad, 'echo', {1})
check('call on failed', not ok)
local good = net.connect(uri, {user = 'tester', password = 'secret'})
check('good password', good.state == 'active' and good:call('echo', {5}) == 5,
      good.state, good.error)
good:close()
local refused = net.connect('127.0.0.1:1', {connect_timeout = 1})
check('refused', refused.state == 'error' and refused.error ~= nil)

c:close()
if failed == 0 then
    print('ok ' .. count)
end
os.exit(failed == 0 and 0 or 1)
