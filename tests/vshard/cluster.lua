-- The vshard test cluster's configuration, shared by the storages
-- (storage.lua), the routers (router_test.lua, benches/net/vshard,
-- examples/vshard_router) and whoever starts them:
-- 2 replica sets x 2 storages on loopback.
--
--   local cluster = dofile('tests/vshard/cluster.lua')
--   cluster.cfg            vshard's sharding config (storage and router)
--   cluster.uuid['s1a']    an instance's uuid by its name
--   cluster.names          {'s1a', 's1b', 's2a', 's2b'} ('a' is the master)
--   cluster.replicaset     {s1a = uuid of replica set 1, ...}
--
-- Environment: VSHARD_PATH, a checkout of github.com/tarantool/vshard (put
-- on package.path here, so `require('vshard.router')` finds it);
-- VSHARD_PORTS, the four storages' ports in the order of `names`,
-- comma-separated (required: the caller picks free ports);
-- VSHARD_BUCKET_COUNT (default 100).
local vshard_path = assert(os.getenv('VSHARD_PATH'), 'VSHARD_PATH is unset')
package.path = vshard_path .. '/?.lua;' .. vshard_path .. '/?/init.lua;' ..
               package.path
local ports = {}
for p in (os.getenv('VSHARD_PORTS') or ''):gmatch('%d+') do
    table.insert(ports, tonumber(p))
end
assert(#ports == 4, 'VSHARD_PORTS must list 4 ports, got: ' ..
       tostring(os.getenv('VSHARD_PORTS')))

local names = {'s1a', 's1b', 's2a', 's2b'}
local uuid = {
    s1a = 'aaaaaaaa-0000-4000-8000-000000000011',
    s1b = 'aaaaaaaa-0000-4000-8000-000000000012',
    s2a = 'aaaaaaaa-0000-4000-8000-000000000021',
    s2b = 'aaaaaaaa-0000-4000-8000-000000000022',
}
local rs_uuid = {
    'bbbbbbbb-0000-4000-8000-000000000001',
    'bbbbbbbb-0000-4000-8000-000000000002',
}
local replicaset = {s1a = rs_uuid[1], s1b = rs_uuid[1],
                    s2a = rs_uuid[2], s2b = rs_uuid[2]}
local port = {}
local sharding = {}
for i, name in ipairs(names) do
    port[name] = ports[i]
    local rs = replicaset[name]
    sharding[rs] = sharding[rs] or {replicas = {}}
    sharding[rs].replicas[uuid[name]] = {
        uri = 'storage:storage@127.0.0.1:' .. ports[i],
        name = name,
        master = name:sub(-1) == 'a',
    }
end

return {
    names = names,
    uuid = uuid,
    port = port,
    replicaset = replicaset,
    replicasets = rs_uuid,
    cfg = {
        sharding = sharding,
        bucket_count = tonumber(os.getenv('VSHARD_BUCKET_COUNT') or 100),
        -- A storage starts alone, its replica may come later.
        replication_connect_quorum = 0,
    },
}
