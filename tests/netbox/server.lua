-- A Tarantool 2.6 server for luafiber's net.box tests: listens on the port
-- given as arg[1] (0: any free one; the port is printed as "PORT n"), or on
-- the Unix socket arg[1] names as `unix/:PATH` (printed as is), in the
-- working directory given as arg[2] (a fresh temporary one).
-- Functions first: a client may connect as soon as box.cfg listens.
function echo(...) return ... end
function multi() return 1, 'two', {3} end
function fail() error('boom') end
function fail_code() box.error(box.error.PROC_LUA, 'custom') end
function push3()
    for i = 1, 3 do box.session.push('msg' .. i) end
    return 'done'
end
function sleep(t) require('fiber').sleep(t) return 'slept' end
function bench_func(...) return {...} end

local unix = arg[1] and arg[1]:sub(1, 6) == 'unix/:' and arg[1]
local port = tonumber(arg[1]) or 0
local dir = arg[2] or '.'
box.cfg{listen = unix or '127.0.0.1:' .. port, work_dir = dir, log_level = 2,
        memtx_memory = 64 * 1024 * 1024}
box.once('netbox_test', function()
    box.schema.user.create('tester', {password = 'secret'})
    box.schema.user.grant('tester', 'read,write,execute,create,drop',
                          'universe')
    box.schema.user.grant('guest', 'read,write,execute', 'universe')
    local s = box.schema.space.create('test', {format = {
        {name = 'id', type = 'unsigned'},
        {name = 'name', type = 'string'},
        {name = 'n', type = 'unsigned', is_nullable = true},
    }})
    s:create_index('primary', {parts = {1, 'unsigned'}})
    s:create_index('name', {parts = {2, 'string'}, unique = false})
end)
box.space.test:truncate()

local listen = box.info.listen or box.cfg.listen
local p = tonumber(tostring(listen):match(':(%d+)$'))
if unix then
    p = unix
elseif p == nil or p == 0 then
    -- 2.6 has no box.info.listen: find the port of the listening socket.
    p = port
end
io.stdout:write('PORT ' .. tostring(p) .. '\n')
io.stdout:flush()
