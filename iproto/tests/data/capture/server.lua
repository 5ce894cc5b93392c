-- A real Tarantool 2.6 server for raw_client.py: the functions and users
-- whose answers are recorded. Usage: tarantool server.lua PORT WORKDIR
local port, dir = arg[1], arg[2]
box.cfg{listen = '127.0.0.1:' .. port, work_dir = dir, log = dir .. '/tt.log',
        wal_mode = 'none', checkpoint_count = 1}
function echo(...) return ... end
function multi() return 1, nil, 'x' end
function echo16(...) return ... end
function fail() error('boom') end
function fail_custom()
    box.error(box.error.new({type = 'MyError', reason = 'custom reason'}))
end
function push3()
    for i = 1, 3 do box.session.push('msg' .. i) end
    return 'done'
end
box.schema.user.create('alice', {password = 'secret'})
box.schema.user.grant('alice', 'execute', 'universe')
box.schema.func.create('echo')
box.schema.user.grant('guest', 'execute', 'function', 'echo')
