-- The vshard cluster test's router side, run by the router interpreter under
-- test (tarantool or luafiber) with the storages of cluster.lua already up:
--   VSHARD_PATH=... VSHARD_PORTS=... VSHARD_DIR=DIR INTERP router_test.lua
-- It walks the router API step by step and prints one line per step to
-- stdout, `step NAME MS DETAILS`. To kill or restart a storage it prints
-- `@@kill NAME` or `@@start NAME` and waits for the driver's DIR/ack.N (N
-- counts the commands from 1). Every wait is bounded; any failure raises,
-- and the script ends with `done` and exit code 0.
local here = debug.getinfo(1, 'S').source:match('^@(.*/)') or './'
local dir = assert(os.getenv('VSHARD_DIR'), 'VSHARD_DIR is unset')
local fiber = require('fiber')
local clock = require('clock')
local json = require('json')
local cluster = dofile(here .. 'cluster.lua')

local function emit(line)
    io.stdout:write(line, '\n')
    io.stdout:flush()
end

local function fail(fmt, ...)
    error(fmt:format(...), 2)
end

-- A readable form of an error or a value for the step lines.
local function show(v)
    if type(v) == 'table' then
        local ok, s = pcall(json.encode, v)
        if ok then
            return s
        end
    end
    return tostring(v)
end

local function step(name, fn)
    local t = clock.monotonic()
    local detail = fn()
    emit(('step %s %.1f %s'):format(name, (clock.monotonic() - t) * 1000,
                                     detail or ''))
end

-- Calls fn() every `interval` seconds until it returns a true value or
-- `timeout` seconds passed (then fails, naming `what` and fn's last answer).
-- Returns how many calls it took, then fn's second and third values.
local function wait_until(what, timeout, fn, interval)
    local deadline = clock.monotonic() + timeout
    local tries = 0
    while true do
        tries = tries + 1
        local ok, a, b = fn()
        if ok then
            return tries, a, b
        end
        if clock.monotonic() > deadline then
            fail('%s: not within %s s (%d tries, last: %s, %s)', what, timeout,
                 tries, show(ok), show(a))
        end
        fiber.sleep(interval or 0.05)
    end
end

local commands = 0
local function command(cmd, name)
    commands = commands + 1
    local ack = ('%s/ack.%d'):format(dir, commands)
    emit(('@@%s %s'):format(cmd, name))
    wait_until('the driver\'s ' .. ack, 60, function()
        local f = io.open(ack)
        if f then
            f:close()
        end
        return f ~= nil
    end)
end

local vshard = require('vshard.router')
local router = vshard
local N = 200
local rs1, rs2 = cluster.replicasets[1], cluster.replicasets[2]
local bucket_of = {}

step('cfg', function()
    local cfg = cluster.cfg
    cfg.box_cfg_mode = 'manual'
    cfg.replication_connect_quorum = nil
    router.cfg(cfg)
    return 'box_cfg_mode=manual'
end)

step('bootstrap', function()
    local tries = wait_until('bootstrap', 30, function()
        return router.bootstrap({timeout = 5, if_not_bootstrapped = true})
    end, 0.2)
    return ('tries=%d'):format(tries)
end)

step('bucket_count', function()
    local n = router.bucket_count()
    if n ~= cluster.cfg.bucket_count then
        fail('bucket_count() = %s, want %s', n, cluster.cfg.bucket_count)
    end
    return tostring(n)
end)

step('discovery_wakeup', function()
    local tries = wait_until('discovery of every bucket', 30, function()
        router.discovery_wakeup()
        local info = router.info()
        return info.bucket.available_rw == cluster.cfg.bucket_count,
               info.bucket
    end, 0.1)
    return ('all %d buckets known, tries=%d'):format(cluster.cfg.bucket_count,
                                                      tries)
end)

step('callrw', function()
    for id = 1, N do
        local b = router.bucket_id_strcrc32(id)
        bucket_of[id] = b
        local res, err = router.callrw(b, 'kv_put', {id, b, 'v' .. id},
                                       {timeout = 5})
        if type(res) ~= 'table' or res[1] ~= id or res[3] ~= 'v' .. id then
            fail('callrw kv_put(%d): %s %s', id, show(res), show(err))
        end
    end
    return ('%d puts'):format(N)
end)

-- Reads of every id through `call`; a replica may lag behind its master
-- for a moment, so each read waits (bounded) for the value.
local function read_all(call)
    local retries = 0
    for id = 1, N do
        local tries = wait_until(call .. ' kv_get(' .. id .. ')', 10, function()
            local res, err = router[call](bucket_of[id], 'kv_get', {id},
                                          {timeout = 5})
            return res == 'v' .. id, err or res
        end, 0.01)
        retries = retries + tries - 1
    end
    return ('%d gets, %d retried'):format(N, retries)
end

step('callro', function() return read_all('callro') end)
step('callbro', function() return read_all('callbro') end)
step('callre', function()
    local detail = read_all('callre')
    -- callre prefers a replica: the 'b' instances answer.
    for _, id in ipairs({1, 2, 3}) do
        local who, err = router.callre(bucket_of[id], 'whoami', {},
                                       {timeout = 5})
        if type(who) ~= 'table' or not who.ro or who.name:sub(-1) ~= 'b' then
            fail('callre whoami: %s %s', show(who), show(err))
        end
    end
    return detail .. ', answered by replicas'
end)

step('route', function()
    local seen = {}
    for id = 1, N do
        local rs, err = router.route(bucket_of[id])
        if rs == nil then
            fail('route(%d): %s', bucket_of[id], show(err))
        end
        local rid = rs.uuid or rs.id
        if rid ~= rs1 and rid ~= rs2 then
            fail('route(%d) -> unknown replica set %s', bucket_of[id], rid)
        end
        seen[rid] = (seen[rid] or 0) + 1
    end
    if not seen[rs1] or not seen[rs2] then
        fail('route: all ids in one replica set: %s', show(seen))
    end
    return ('rs1=%d rs2=%d ids'):format(seen[rs1], seen[rs2])
end)

step('routeall', function()
    local n = 0
    for id, rs in pairs(router.routeall()) do
        if id ~= rs1 and id ~= rs2 then
            fail('routeall: unknown replica set %s', id)
        end
        local master = rs.master
        if master == nil or not master.uri:find(':' ..
                cluster.port[id == rs1 and 's1a' or 's2a'] .. '$') then
            fail('routeall: %s has master %s', id, master and master.uri)
        end
        n = n + 1
    end
    if n ~= 2 then
        fail('routeall: %d replica sets', n)
    end
    return '2 replica sets, masters as configured'
end)

step('info', function()
    local info = router.info()
    local n = 0
    for _, rs in pairs(info.replicasets) do
        n = n + 1
        if rs.master == nil or rs.master.status ~= 'available' then
            fail('info: replica set master %s', show(rs.master))
        end
    end
    if n ~= 2 or info.bucket.available_rw ~= cluster.cfg.bucket_count then
        fail('info: %s', show(info))
    end
    return ('status=%s alerts=%d available_rw=%d'):format(
        info.status, #info.alerts, info.bucket.available_rw)
end)

step('map_callrw', function()
    local res, err = router.map_callrw('kv_count', {}, {timeout = 10})
    if res == nil then
        fail('map_callrw: %s', show(err))
    end
    local sum, n = 0, 0
    for _, r in pairs(res) do
        sum = sum + r[1]
        n = n + 1
    end
    if sum ~= N or n ~= 2 then
        fail('map_callrw kv_count: %s', show(res))
    end
    return ('%d replica sets, %d tuples'):format(n, sum)
end)

-- Failover: the master of replica set 1 dies.
local id1, id2
for id = 1, N do
    local rs = router.route(bucket_of[id])
    local rid = rs.uuid or rs.id
    if rid == rs1 then id1 = id1 or id else id2 = id2 or id end
end
local b1, b2 = bucket_of[id1], bucket_of[id2]

step('kill_master', function()
    command('kill', 's1a')
    return 's1a killed by the driver'
end)

step('callro_after_kill', function()
    local tries = wait_until('callro through the replica', 30, function()
        local res, err = router.callro(b1, 'kv_get', {id1}, {timeout = 1})
        return res == 'v' .. id1, err
    end, 0.05)
    for i = 1, 20 do
        local res, err = router.callro(b1, 'kv_get', {id1}, {timeout = 1})
        if res ~= 'v' .. id1 then
            fail('callro %d after the replica answered: %s %s', i, show(res),
                 show(err))
        end
    end
    local who = router.callro(b1, 'whoami', {}, {timeout = 1})
    if type(who) ~= 'table' or who.name ~= 's1b' then
        fail('callro whoami: %s', show(who))
    end
    return ('tries=%d, then 20 reads in a row, answered by %s'):format(
        tries, who.name)
end)

step('callrw_fails', function()
    local seen = {}
    for i = 1, 5 do
        local res, err = router.callrw(b1, 'kv_put', {id1, b1, 'lost' .. i},
                                       {timeout = 0.5})
        if res ~= nil or type(err) ~= 'table' or err.type == nil or
           err.message == nil then
            fail('callrw with the master down: %s %s', show(res), show(err))
        end
        local key = ('%s/%s/%s'):format(err.type, tostring(err.name),
                                        tostring(err.code))
        seen[key] = (seen[key] or 0) + 1
    end
    local res, err = router.callrw(b2, 'kv_put', {id2, b2, 'w' .. id2},
                                   {timeout = 5})
    if type(res) ~= 'table' or res[3] ~= 'w' .. id2 then
        fail('callrw on the live replica set: %s %s', show(res), show(err))
    end
    local kinds = {}
    for k, n in pairs(seen) do
        table.insert(kinds, ('%s x%d'):format(k, n))
    end
    table.sort(kinds)
    return 'errors ' .. table.concat(kinds, ', ') ..
           '; the other replica set writes'
end)

step('restart_master', function()
    command('start', 's1a')
    return 's1a ready again'
end)

step('callrw_recovers', function()
    local tries = wait_until('callrw after the master came back', 60,
                             function()
        local res, err = router.callrw(b1, 'kv_put', {id1, b1, 'back'},
                                       {timeout = 1})
        return type(res) == 'table' and res[3] == 'back', err
    end, 0.1)
    local res, err = router.callrw(b1, 'kv_get', {id1}, {timeout = 5})
    if res ~= 'back' then
        fail('callrw kv_get after recovery: %s %s', show(res), show(err))
    end
    return ('tries=%d'):format(tries)
end)

step('info_after', function()
    local tries, info = wait_until('info shows both masters', 30, function()
        local info = router.info()
        for _, rs in pairs(info.replicasets) do
            if rs.master == nil or rs.master.status ~= 'available' then
                return false, rs.master
            end
        end
        return true, info
    end, 0.1)
    return ('tries=%d status=%s'):format(tries, info and info.status)
end)

emit('done')
os.exit(0)
