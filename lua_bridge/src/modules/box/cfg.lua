-- box.cfg (box, not the server): master's src/box/lua/load_cfg.lua without
-- storage. Loaded at the first box.cfg call (or the first read of
-- box.internal.template_cfg / default_cfg) by cfg_guard.lua, which hides
-- the members of box that need box.cfg{} until then; called with `box`,
-- `box.internal` and the guard's state (status, hidden members); returns
-- the function box.cfg calls.
--
-- Contract with the IPROTO server: whenever `listen` is set at the first
-- box.cfg{} or changed later, box.cfg calls box.internal.cfg_listen(value)
-- (a URI string, a port number, a table of them, or nil for "stop
-- listening") when it exists; an error it raises fails that box.cfg call
-- (and a later change is rolled back to the old value). Without it
-- `listen` raises "not available". Any other dynamic option X is handed to
-- box.internal.cfg_set_X(value) when that exists, after it is stored.
-- net_msg_max and readahead go to box.internal.cfg_net(net_msg_max,
-- readahead) when it exists (at the first call when given, later when
-- changed). box.info.listen asks box.internal.listen_addr() when the
-- server defines it (the bound address), else reads box.cfg.listen.
local box, internal, state = ...

local fiber = require('fiber')
local log = require('log')
local json = require('json')

local function cfg_error(option, details)
    error(internal.client_error(3, box.error.CFG, option, details))
end

-- Option types, as master's template_cfg (enterprise-only options left
-- out, as a community build leaves them out).
local template_cfg = {
    listen = 'string, number, table',
    memtx_memory = 'number', strip_core = 'boolean',
    memtx_min_tuple_size = 'number', memtx_max_tuple_size = 'number',
    slab_alloc_granularity = 'number', slab_alloc_factor = 'number',
    app_threads = 'number', iproto_threads = 'number',
    memtx_allocator = 'string', work_dir = 'string', memtx_dir = 'string',
    wal_dir = 'string', vinyl_dir = 'string', vinyl_memory = 'number',
    vinyl_cache = 'number', vinyl_max_tuple_size = 'number',
    vinyl_read_threads = 'number', vinyl_write_threads = 'number',
    vinyl_timeout = 'number', vinyl_defer_deletes = 'boolean',
    vinyl_run_count_per_level = 'number', vinyl_run_size_ratio = 'number',
    vinyl_range_size = 'number', vinyl_page_size = 'number',
    vinyl_bloom_fpr = 'number',
    log = 'string', log_nonblock = 'boolean', log_level = 'number, string',
    log_modules = 'table', log_format = 'string',
    auth_type = 'string',
    feedback_enabled = 'boolean', feedback_crashinfo = 'boolean',
    feedback_host = 'string', feedback_interval = 'number',
    feedback_send_metrics = 'boolean',
    feedback_metrics_collect_interval = 'number',
    feedback_metrics_limit = 'number',
    io_collect_interval = 'number', readahead = 'number',
    snap_io_rate_limit = 'number', too_long_threshold = 'number',
    wal_mode = 'string', wal_max_size = 'number',
    wal_dir_rescan_delay = 'number', wal_cleanup_delay = 'number',
    force_recovery = 'boolean', replication = 'string, number, table',
    instance_uuid = 'string', instance_name = 'string',
    replicaset_uuid = 'string', replicaset_name = 'string',
    cluster_name = 'string', custom_proc_title = 'string',
    pid_file = 'string', background = 'boolean', username = 'string',
    coredump = 'boolean', checkpoint_interval = 'number',
    checkpoint_wal_threshold = 'number', wal_queue_max_size = 'number',
    checkpoint_count = 'number', read_only = 'boolean, string',
    hot_standby = 'boolean', memtx_use_mvcc_engine = 'boolean',
    txn_isolation = 'string, number', worker_pool_threads = 'number',
    election_mode = 'string', election_timeout = 'number',
    election_fencing_mode = 'string', replication_timeout = 'number',
    replication_reconnect_timeout = 'number',
    replication_sync_lag = 'number', replication_sync_timeout = 'number',
    replication_synchro_quorum = 'string, number',
    replication_synchro_timeout = 'number',
    replication_synchro_queue_max_size = 'number',
    replication_linearizable_quorum = 'string, number',
    replication_connect_timeout = 'number',
    replication_connect_quorum = 'number',
    replication_skip_conflict = 'boolean', replication_anon = 'boolean',
    replication_anon_ttl = 'number', replication_threads = 'number',
    bootstrap_strategy = 'string', bootstrap_leader = 'string, number',
    net_msg_max = 'number', sql_cache_size = 'number',
    txn_timeout = 'number', txn_synchro_timeout = 'number',
    memtx_sort_threads = 'number', memtx_use_sort_data = 'boolean',
    metrics = 'table',
}

local log_cfg = log.cfg
local default_cfg = {
    memtx_memory = 256 * 1024 * 1024, strip_core = true,
    memtx_min_tuple_size = 16, memtx_max_tuple_size = 1024 * 1024,
    slab_alloc_granularity = 8, slab_alloc_factor = 1.05, app_threads = 0,
    iproto_threads = 1, memtx_allocator = 'small', memtx_dir = '.',
    wal_dir = '.', vinyl_dir = '.', vinyl_memory = 128 * 1024 * 1024,
    vinyl_cache = 128 * 1024 * 1024, vinyl_max_tuple_size = 1024 * 1024,
    vinyl_read_threads = 1, vinyl_write_threads = 4, vinyl_timeout = 60,
    vinyl_defer_deletes = false, vinyl_run_count_per_level = 2,
    vinyl_run_size_ratio = 3.5, vinyl_page_size = 8 * 1024,
    vinyl_bloom_fpr = 0.05,
    log = log_cfg.log, log_nonblock = log_cfg.nonblock,
    log_level = log_cfg.level, log_modules = log_cfg.modules,
    log_format = log_cfg.format,
    auth_type = 'chap-sha1',
    feedback_enabled = true, feedback_crashinfo = true,
    feedback_host = 'https://feedback.tarantool.io', feedback_interval = 3600,
    feedback_send_metrics = true, feedback_metrics_collect_interval = 60,
    feedback_metrics_limit = 1024 * 1024,
    readahead = 16320, too_long_threshold = 0.5, wal_mode = 'write',
    wal_max_size = 256 * 1024 * 1024, wal_dir_rescan_delay = 2,
    wal_queue_max_size = 16 * 1024 * 1024, force_recovery = false,
    background = false, coredump = false, read_only = false,
    hot_standby = false, memtx_use_mvcc_engine = false,
    checkpoint_interval = 3600, checkpoint_wal_threshold = 1e18,
    checkpoint_count = 2, worker_pool_threads = 4, election_mode = 'off',
    election_timeout = 5, election_fencing_mode = 'soft',
    replication_timeout = 1, replication_sync_lag = 10,
    replication_sync_timeout = 0, replication_synchro_quorum = 'N / 2 + 1',
    replication_synchro_timeout = 5,
    replication_synchro_queue_max_size = 16 * 1024 * 1024,
    replication_linearizable_quorum = 'N - Q + 1',
    replication_connect_timeout = 30, replication_skip_conflict = false,
    replication_anon = false, replication_anon_ttl = 60 * 60,
    replication_threads = 1, bootstrap_strategy = 'auto',
    net_msg_max = 768, sql_cache_size = 5 * 1024 * 1024,
    txn_timeout = 365 * 100 * 86400, txn_synchro_timeout = 5,
    txn_isolation = 'best-effort', memtx_use_sort_data = false,
    metrics = {include = 'all', exclude = {}, labels = {}},
}

-- Options that may change after the first box.cfg{} (master's dynamic_cfg
-- and dynamic_cfg_modules); any other raises ER_RELOAD_CFG when changed.
local dynamic = {}
for _, k in ipairs({
    'listen', 'log', 'log_level', 'log_modules', 'log_format', 'log_nonblock',
    'replication', 'io_collect_interval', 'readahead', 'too_long_threshold',
    'snap_io_rate_limit', 'read_only', 'memtx_memory', 'memtx_use_sort_data',
    'memtx_max_tuple_size', 'vinyl_memory', 'vinyl_max_tuple_size',
    'vinyl_cache', 'vinyl_timeout', 'vinyl_defer_deletes', 'checkpoint_count',
    'checkpoint_interval', 'checkpoint_wal_threshold', 'wal_queue_max_size',
    'worker_pool_threads', 'wal_dir_rescan_delay', 'wal_cleanup_delay',
    'custom_proc_title', 'force_recovery', 'election_mode',
    'election_timeout', 'election_fencing_mode', 'replication_timeout',
    'replication_reconnect_timeout', 'replication_connect_timeout',
    'replication_connect_quorum', 'replication_sync_lag',
    'replication_sync_timeout', 'replication_synchro_quorum',
    'replication_synchro_timeout', 'replication_synchro_queue_max_size',
    'replication_linearizable_quorum', 'replication_skip_conflict',
    'replication_anon', 'replication_anon_ttl', 'bootstrap_strategy',
    'bootstrap_leader', 'instance_uuid', 'instance_name', 'replicaset_uuid',
    'replicaset_name', 'cluster_name', 'net_msg_max', 'sql_cache_size',
    'txn_timeout', 'txn_synchro_timeout', 'txn_isolation', 'auth_type',
    'feedback_enabled', 'feedback_crashinfo', 'feedback_host',
    'feedback_interval', 'feedback_send_metrics',
    'feedback_metrics_collect_interval', 'feedback_metrics_limit', 'metrics',
}) do
    dynamic[k] = true
end

local log_options = {
    log = 'log', log_level = 'level', log_modules = 'modules',
    log_format = 'format', log_nonblock = 'nonblock',
}

-- What luafiber accepts and ignores: it has no storage, replication or
-- elections.
local function is_storage_option(k)
    return k:find('^memtx_') or k:find('^vinyl_') or k:find('^wal_') or
           k:find('^checkpoint_') or k:find('^slab_') or
           k:find('^replication') or k:find('^bootstrap_') or
           k:find('^election_') or k:find('^txn_') or k:find('^sql_') or
           k == 'snap_io_rate_limit' or k == 'force_recovery' or
           k == 'hot_standby' or k == 'work_dir' or k == 'replicaset_uuid' or
           k == 'replicaset_name' or k == 'cluster_name'
end

-- Deprecated names (master's translate_cfg, the one-to-one ones).
local translate_cfg = {
    snapshot_count = 'checkpoint_count',
    snapshot_period = 'checkpoint_interval',
    slab_alloc_minimal = 'memtx_min_tuple_size',
    slab_alloc_maximal = 'memtx_max_tuple_size',
    snap_dir = 'memtx_dir',
    logger = 'log',
    logger_nonblock = 'log_nonblock',
    replication_source = 'replication',
}

local function upgrade_cfg(cfg)
    local result = {}
    for k, v in pairs(cfg) do
        local new_key = translate_cfg[k]
        local new_val = v
        if k == 'slab_alloc_arena' then
            new_key = 'memtx_memory'
            new_val = type(v) == 'number' and math.floor(v * 1024 ^ 3) or v
        end
        if new_key ~= nil then
            log.warn('Deprecated option %s, please use %s instead', k, new_key)
            if cfg[new_key] ~= nil and cfg[new_key] ~= new_val then
                cfg_error(k, 'can not override a value for a deprecated option')
            end
            result[new_key] = new_val
        else
            result[k] = v
        end
    end
    return result
end

-- '256MiB', '100ms' as numbers (master's byte_size_cfg, duration_cfg)
local normalize_units = internal.load_chunk('units')()

local function check_type(name, value)
    local template = template_cfg[name]
    if not template:find(',') then
        if type(value) ~= template then
            cfg_error(name, 'should be of type ' .. template)
        end
    else
        local types = ',' .. template:gsub(' ', '') .. ','
        if not types:find(',' .. type(value) .. ',', 1, true) then
            cfg_error(name, 'should be one of types ' .. template)
        end
    end
    if type(value) == 'number' and
       not (value == value and value > -math.huge and value < math.huge) then
        cfg_error(name, 'should be a finite number')
    end
end

-- TT_<OPTION> environment variables (master's get_option_from_env), for
-- the options a first box.cfg{} leaves out.
local function env_value(option)
    local ty = template_cfg[option]
    local var = 'TT_' .. option:upper()
    local raw = os.getenv(var)
    if raw == nil or raw == '' then
        return nil
    end
    local fmt = 'Environment variable %s has incorrect value for option ' ..
                '"%s": should be %s'
    if ty:find('table') and (raw:sub(1, 1) == '{' or raw:sub(1, 1) == '[') then
        return json.decode(raw)
    end
    if ty:find('table') and raw:find(',') then
        local res = {}
        for v in raw:gmatch('[^,]+') do
            res[#res + 1] = tonumber(v) or v
        end
        return res
    end
    if ty:find('boolean') then
        if raw:lower() == 'false' then return false end
        if raw:lower() == 'true' then return true end
        if ty:find('string') then return raw end
        error(fmt:format(var, option, '"true" or "false"'))
    end
    if ty == 'number' then
        local n = tonumber(raw)
        if n == nil then
            error(fmt:format(var, option, 'convertible to a number'))
        end
        return n
    end
    if ty:find('number') then
        return tonumber(raw) or raw
    end
    return raw
end

-- prepare_cfg: checks `cfg` (after upgrade), resets "" and box.NULL to the
-- default, fills the omitted options from `old`.
local function prepare_cfg(cfg, old)
    local new = {}
    for k, v in pairs(cfg) do
        if template_cfg[k] == nil then
            cfg_error(k, 'unexpected option')
        elseif v == '' or v == nil or rawequal(v, box.NULL) then
            -- box.NULL (== nil on LuaJIT, a light userdata on Lua 5.4)
            v = default_cfg[k]
        else
            v = normalize_units(k, v, cfg_error)
            check_type(k, v)
        end
        if k == 'replication' and v ~= nil and type(v) ~= 'table' then
            v = {v}
        elseif (k == 'instance_name' or k == 'replicaset_name' or
                k == 'cluster_name') and type(v) == 'string' then
            v = v:lower()
        end
        new[k] = v
    end
    for k, v in pairs(old) do
        if cfg[k] == nil and not cfg[k] then
            new[k] = v
        end
    end
    return new
end

-- Checks what the modules below would refuse, before anything changes.
local function check_cfg(cfg, keys)
    if keys.listen and cfg.listen ~= nil and internal.cfg_listen == nil then
        cfg_error('listen', 'not available: this build of luafiber has no ' ..
                  'IPROTO server')
    end
    -- master's box_check_readahead and iproto_set_msg_max
    if keys.readahead and cfg.readahead ~= nil and
       (cfg.readahead < 128 or cfg.readahead > 2147483647) then
        cfg_error('readahead', 'specified value is out of bounds')
    end
    if keys.net_msg_max and cfg.net_msg_max ~= nil and cfg.net_msg_max < 2 then
        cfg_error('net_msg_max', 'minimal value is 2')
    end
    if keys.read_only and type(cfg.read_only) == 'string' then
        cfg_error('read_only', 'should be of type boolean')
    end
end

local function apply_log(cfg, keys)
    local any = false
    local new = {}
    for option, name in pairs(log_options) do
        if keys[option] then
            any = true
            new[name] = cfg[option]
        end
    end
    if any then
        -- log's own errors name box's options (log_level, ...), as
        -- master's log.box_api.cfg raises them.
        log_cfg(new)
    end
end

local function apply_listen(value)
    if internal.cfg_listen == nil then
        if value == nil then
            return
        end
        cfg_error('listen', 'not available: this build of luafiber has no ' ..
                  'IPROTO server')
    end
    internal.cfg_listen(value)
end

-- master's pidfile_open and pidfile_write (main.cc), without the lock: a
-- file holding the id of a live process other than this one is refused;
-- the file is written with this process's id and removed at exit
-- (box.internal.run_on_shutdown).
local function apply_pid_file(path)
    path = require('fio').abspath(path)
    local pid = log.pid()
    local f = io.open(path, 'r')
    if f ~= nil then
        local other = tonumber(f:read('*l') or '')
        f:close()
        local proc = other and io.open(('/proc/%d/stat'):format(other), 'r')
        if proc then
            proc:close()
            if other ~= pid then
                error(('the daemon is already running: PID %d'):format(other), 0)
            end
        end
    end
    local err
    f, err = io.open(path, 'w')
    if f == nil then
        error(("failed to create pid file '%s': %s"):format(path, tostring(err)), 0)
    end
    f:write(pid, '\n')
    f:close()
    internal.pid_file = path
end

local function log_storage(keys)
    local ignored = {}
    for k in pairs(keys) do
        if is_storage_option(k) then
            ignored[#ignored + 1] = k
        end
    end
    if #ignored > 0 then
        table.sort(ignored)
        log.info('luafiber has no storage: box.cfg options %s are accepted ' ..
                 'and ignored', table.concat(ignored, ', '))
    end
end

local function log_set(key, value)
    local ok, text = pcall(json.encode, value)
    log.info("set '%s' configuration option to %s", key,
             ok and text or tostring(value))
end

local raw_cfg

local function same(a, b)
    if type(a) == 'table' and type(b) == 'table' then
        return table.equals(a, b)
    end
    return a == b
end

-- The value of option `k` now (the log module's for the log options).
local function current(k)
    local name = log_options[k]
    if name ~= nil then
        return log_cfg[name]
    end
    return raw_cfg[k]
end

-- A later box.cfg{...}: changes the dynamic options.
local function reload_cfg(cfg)
    if cfg == nil then
        cfg = {}
    elseif type(cfg) ~= 'table' then
        error('Error: cfg should be a table')
    end
    cfg = upgrade_cfg(cfg)
    local new = prepare_cfg(cfg, {})
    local keys = {}
    for k in pairs(cfg) do
        if not dynamic[k] then
            if not same(current(k), new[k]) then
                error(internal.client_error(3, box.error.RELOAD_CFG, k))
            end
        elseif not same(current(k), new[k]) then
            keys[k] = true
        end
    end
    check_cfg(new, keys)
    if keys.instance_uuid and new.instance_uuid ~= nil and
       new.instance_uuid ~= internal.instance_uuid() then
        error(internal.client_error(3, box.error.RELOAD_CFG, 'instance_uuid'))
    end
    if keys.listen then
        local old = raw_cfg.listen
        raw_cfg.listen = new.listen
        local ok, err = pcall(apply_listen, new.listen)
        if not ok then
            raw_cfg.listen = old
            pcall(apply_listen, old)
            error(err)
        end
        log_set('listen', new.listen)
    end
    local log_keys = {}
    for k in pairs(keys) do
        if log_options[k] then
            log_keys[k] = true
        end
    end
    if next(log_keys) then
        apply_log(new, log_keys)
    end
    if internal.cfg_net and (keys.net_msg_max or keys.readahead) then
        internal.cfg_net(new.net_msg_max, new.readahead)
    end
    for k in pairs(keys) do
        if k ~= 'listen' then
            raw_cfg[k] = new[k]
            local set = internal['cfg_set_' .. k]
            if set ~= nil then
                set(new[k])
            end
            log_set(k, new[k])
        end
    end
    log_storage(keys)
end

local load_cfg

-- The first box.cfg{...}: checks everything, applies listen and log, then
-- makes box.cfg the table of the options.
local function first_cfg(cfg)
    if cfg == nil then
        cfg = {}
    elseif type(cfg) ~= 'table' then
        error('Error: cfg should be a table')
    end
    cfg = upgrade_cfg(cfg)
    local given = {}
    for k in pairs(cfg) do
        given[k] = true
    end
    for option in pairs(template_cfg) do
        if cfg[option] == nil then
            local v = env_value(option)
            if v ~= nil then
                cfg[option] = v
                given[option] = true
            end
        end
    end
    local new = prepare_cfg(cfg, default_cfg)
    check_cfg(new, given)
    state.status = 'loading'
    if new.instance_uuid ~= nil then
        internal.instance_uuid(new.instance_uuid)
    end
    local ok, err = pcall(function()
        if new.pid_file ~= nil then
            apply_pid_file(new.pid_file)
        end
        apply_log(new, given)
        if new.background then
            log.warn("background: luafiber does not detach from its terminal " ..
                     "and runs in the foreground (run it under a service manager)")
        end
        if internal.cfg_net and (given.net_msg_max or given.readahead) then
            internal.cfg_net(new.net_msg_max, new.readahead)
        end
        if new.listen ~= nil then
            apply_listen(new.listen)
        end
    end)
    if not ok then
        state.status = 'unconfigured'
        error(err)
    end
    raw_cfg = new
    for k, v in pairs(state.hidden) do
        box[k] = v
    end
    state.hidden = {}
    setmetatable(box, nil)
    box.cfg = setmetatable({}, {
        __name = 'box_cfg',
        -- The log options read the log module's (log.cfg{} changes them
        -- too, as master's update_cfg does).
        __index = function(_, key)
            local name = log_options[key]
            if name ~= nil then
                return log_cfg[name]
            end
            return raw_cfg[key]
        end,
        __newindex = function(_, key, value)
            if template_cfg[key] ~= nil then
                local t = type(value)
                local v = '<...>'
                if t == 'boolean' or t == 'nil' or t == 'number' or
                   t == 'string' then
                    v = tostring(value)
                end
                error(('Use box.cfg{%s = %s} for update'):format(key, v))
            end
            error('Attempt to modify a read-only table')
        end,
        __call = function(_, ...)
            return load_cfg(...)
        end,
        __serialize = function()
            local t = {}
            for k, v in pairs(raw_cfg) do t[k] = v end
            for option, name in pairs(log_options) do t[option] = log_cfg[name] end
            return t
        end,
    })
    state.status = 'running'
    for k in pairs(given) do
        if not same(new[k], default_cfg[k]) then
            log_set(k, new[k])
        end
    end
    log_storage(given)
end

-- box.cfg calls are serialised (master's `locked`).
local lock = fiber.channel(1)
load_cfg = function(...)
    lock:put(true)
    local ok, err
    if raw_cfg == nil then
        ok, err = pcall(first_cfg, ...)
    else
        ok, err = pcall(reload_cfg, ...)
    end
    lock:get()
    if not ok then
        error(err, 0)
    end
end

internal.template_cfg = template_cfg
internal.default_cfg = default_cfg

return load_cfg
