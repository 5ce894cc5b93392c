-- A vshard storage of the test cluster (cluster.lua), run by Tarantool:
--   VSHARD_PATH=... VSHARD_PORTS=p1,p2,p3,p4 tarantool storage.lua NAME DIR
-- NAME is one of cluster.names, DIR its working directory (created; an
-- absolute path: it also holds DIR/tarantool.pid). When
-- vshard.storage.cfg has returned and, on a master, the schema exists, it
-- writes DIR/ready (removed first). Its data: space `kv` {id, bucket_id,
-- value} sharded by bucket_id, and the functions below, which routers call
-- through vshard.storage.call.
local name, dir = arg[1], arg[2]
assert(name and dir, 'usage: storage.lua NAME DIR')
local here = debug.getinfo(1, 'S').source:match('^@(.*/)') or './'
local fio = require('fio')
local fiber = require('fiber')
local cluster = dofile(here .. 'cluster.lua')

fio.mkdir(dir)
fio.unlink(dir .. '/ready')
local cfg = cluster.cfg
cfg.work_dir = dir
cfg.listen = '127.0.0.1:' .. cluster.port[name]
cfg.memtx_memory = 64 * 1024 * 1024
cfg.checkpoint_interval = 0
cfg.pid_file = dir .. '/tarantool.pid'
-- Global: routers and the other storages call 'vshard.storage.*' by name.
vshard = require('vshard')
vshard.storage.cfg(cfg, cluster.uuid[name])

if not box.info.ro then
    local kv = box.schema.space.create('kv', {if_not_exists = true})
    kv:format({{'id', 'unsigned'}, {'bucket_id', 'unsigned'},
               {'value', 'any'}})
    kv:create_index('pk', {parts = {'id'}, if_not_exists = true})
    kv:create_index('bucket_id', {parts = {'bucket_id'}, unique = false,
                                  if_not_exists = true})
end

-- Writes (callrw): the stored tuple as {id, bucket_id, value}.
function kv_put(id, bucket_id, value)
    return box.space.kv:replace({id, bucket_id, value}):totable()
end

-- Reads: the value stored under id, or nil.
function kv_get(id)
    local t = box.space.kv:get(id)
    return t and t[3]
end

-- The benchmark's request: the value under id, stored first if missing.
function kv_get_or_put(id, bucket_id, value)
    local t = box.space.kv:get(id)
    if t == nil then
        t = box.space.kv:replace({id, bucket_id, value})
    end
    return t[3]
end

-- How many tuples this storage holds (map_callrw sums them).
function kv_count()
    return box.space.kv:count()
end

-- Which instance answered, and whether it is read-only.
function whoami()
    return {name = name, ro = box.info.ro}
end

local f = io.open(dir .. '/ready', 'w')
f:write(tostring(fiber.time()))
f:close()
print(('storage %s ready on port %d'):format(name, cluster.port[name]))
