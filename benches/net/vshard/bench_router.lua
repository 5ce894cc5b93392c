-- The vshard benchmark's router (run.sh runs it on each interpreter in
-- turn, against the same storages): vshard.router.cfg with
-- box_cfg_mode = 'manual', bootstrap if the cluster is not, then FIBERS
-- fibers doing callrw of the storages' kv_get_or_put over KEYS keys.
--   VSHARD_PATH=... VSHARD_PORTS=... INTERP bench_router.lua REQUESTS [FIBERS]
-- Prints one line: `result requests=N seconds=S cpu=C heap_kb_per_1000=H`:
-- S the measured run's wall time, C the process's user+system CPU seconds
-- over it (/proc/self/stat, all threads; CLK_TCK from the environment,
-- default 100), H the Lua heap allocated per 1,000 requests in a second,
-- counted run of REQUESTS/10 with the collector stopped.
local here = debug.getinfo(1, 'S').source:match('^@(.*/)') or './'
local fiber = require('fiber')
local clock = require('clock')
local cluster = dofile(here .. '../../../tests/vshard/cluster.lua')
local router = require('vshard.router')

local REQUESTS = tonumber(arg[1]) or 100000
local FIBERS = tonumber(arg[2]) or 100
local KEYS = 10000
local CLK_TCK = tonumber(os.getenv('CLK_TCK') or 100)

local function cpu_seconds()
    local f = assert(io.open('/proc/self/stat'))
    local stat = f:read('*a')
    f:close()
    -- Fields after the command name (which may hold spaces): state is
    -- field 3, utime 14 and stime 15.
    local rest = stat:match('%) (.*)$')
    local fields = {}
    for x in rest:gmatch('%S+') do
        fields[#fields + 1] = x
    end
    return (tonumber(fields[12]) + tonumber(fields[13])) / CLK_TCK
end

local cfg = cluster.cfg
cfg.box_cfg_mode = 'manual'
cfg.replication_connect_quorum = nil
router.cfg(cfg)
local deadline = clock.monotonic() + 60
while not router.bootstrap({timeout = 5, if_not_bootstrapped = true}) do
    assert(clock.monotonic() < deadline, 'bootstrap: no answer within 60 s')
    fiber.sleep(0.2)
end
while router.info().bucket.available_rw ~= cfg.bucket_count do
    assert(clock.monotonic() < deadline, 'discovery: not within 60 s')
    router.discovery_wakeup()
    fiber.sleep(0.05)
end

local bucket = {}
for id = 1, KEYS do
    bucket[id] = router.bucket_id_strcrc32(id)
end
local opts = {timeout = 10}

-- n requests on FIBERS fibers; returns the wall seconds.
local function run(n)
    local left, done, errors = n, 0, 0
    local finished = fiber.cond()
    local function worker(seed)
        local id = seed
        while left > 0 do
            left = left - 1
            id = id % KEYS + 1
            local res, err = router.callrw(bucket[id], 'kv_get_or_put',
                                           {id, bucket[id], 'v'}, opts)
            if res == nil then
                errors = errors + 1
                if errors == 1 then
                    io.stderr:write('callrw failed: ', tostring(err), '\n')
                end
            end
            done = done + 1
            if done == n then
                finished:signal()
            end
        end
    end
    local t = clock.monotonic()
    for i = 1, FIBERS do
        fiber.create(worker, i * 97)
    end
    while done < n do
        finished:wait(1)
        assert(clock.monotonic() - t < 600, 'the run took over 600 s')
    end
    assert(errors == 0, errors .. ' requests failed')
    return clock.monotonic() - t
end

run(math.min(REQUESTS, 20000)) -- warm-up: connections, JIT, caches
collectgarbage('collect')
local cpu0 = cpu_seconds()
local seconds = run(REQUESTS)
local cpu = cpu_seconds() - cpu0

collectgarbage('collect')
collectgarbage('stop')
local counted = math.max(1000, math.floor(REQUESTS / 10))
local kb0 = collectgarbage('count')
run(counted)
local heap = (collectgarbage('count') - kb0) / (counted / 1000)
collectgarbage('restart')

io.stdout:write(('result requests=%d seconds=%.3f cpu=%.2f ' ..
                 'heap_kb_per_1000=%.1f\n'):format(REQUESTS, seconds, cpu,
                                                   heap))
io.stdout:flush()
os.exit(0)
