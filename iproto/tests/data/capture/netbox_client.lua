-- Tarantool 2.6's net.box against record_server.py: every request type a
-- client sends, in a fixed order (the capture script labels them by order).
-- Usage: tarantool netbox_client.lua PORT
local net = require('net.box')
local port = tonumber(arg[1])
local c = net.connect('127.0.0.1:' .. port, {user = 'alice', password = 'secret'})
assert(c.state == 'active', tostring(c.error))
c:ping()
c:call('echo', {1, 'two', nil, {a = 3}})
c:call_16('echo16', {1, 'a'})
c:eval('return ...', {7, 8})
pcall(c._request, c, 'select', nil, nil, 512, 0, 2, 10, 100, {1})
pcall(c._request, c, 'insert', nil, nil, 512, {1, 'a'})
pcall(c._request, c, 'replace', nil, nil, 512, {2, 'b'})
pcall(c._request, c, 'update', nil, nil, 512, 0, {1}, {{'=', 2, 'x'}})
pcall(c._request, c, 'upsert', nil, nil, 512, {3, 'c'}, {{'+', 1, 1}})
pcall(c._request, c, 'delete', nil, nil, 512, 0, {1})
c:close()
-- a second connection as guest (no user): no AUTH; then quit the server
local g = net.connect('127.0.0.1:' .. port)
g:call('vshard.storage.call', {})
pcall(g.eval, g, 'quit')
g:close()
os.exit(0)
