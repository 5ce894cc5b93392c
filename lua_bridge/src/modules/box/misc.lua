-- box.info, box.once, box.ctl, box.schema's storage stubs, box.space and
-- the transaction functions (box, not the server). Master's
-- src/box/lua/info.c, schema.lua (box.once), ctl.c, trigger.c.
-- Called with `box` and `box.internal`.
local box, internal = ...

local fiber = require('fiber')
local clock = require('clock')

local started = clock.monotonic()

---------------------------------------------------------------------------
-- Storage: luafiber has none. What needs it raises ER_UNSUPPORTED:
-- "luafiber does not support storage (box.schema.space.create)".
---------------------------------------------------------------------------
local function needs_storage(what)
    return function()
        error(internal.client_error(1, box.error.UNSUPPORTED, 'luafiber',
                                    'storage (' .. what .. ')'))
    end
end
internal.needs_storage = needs_storage

box.space = {}
box.schema = box.schema or {}
local schema = box.schema
schema.space = schema.space or {}
schema.space.create = needs_storage('box.schema.space.create')
schema.create_space = needs_storage('box.schema.create_space')
schema.index = schema.index or {}
schema.index.create = needs_storage('box.schema.index.create')
schema.sequence = schema.sequence or {}
schema.sequence.create = needs_storage('box.schema.sequence.create')
schema.upgrade = needs_storage('box.schema.upgrade')
schema.downgrade = needs_storage('box.schema.downgrade')
--- box.schema.needs_upgrade(): false (no schema on disk to upgrade).
function schema.needs_upgrade() return false end
for _, name in ipairs({'begin', 'commit', 'rollback', 'atomic', 'savepoint',
                       'rollback_to_savepoint', 'snapshot', 'on_commit',
                       'on_rollback', 'execute', 'prepare', 'unprepare'}) do
    box[name] = needs_storage('box.' .. name)
end
--- box.is_in_txn(): false (no transaction can be open).
function box.is_in_txn() return false end
--- box.txn_id(): nil (no transaction).
function box.txn_id() return nil end

---------------------------------------------------------------------------
-- box.info (master's info.c): the fields that make sense without storage,
-- computed at each read. Shaped as 2.x's (cluster.uuid, no replicaset), as
-- `_TARANTOOL` names a 2.x version (tarantool.lua).
---------------------------------------------------------------------------
local instance_uuid
local function uuid()
    if instance_uuid == nil then
        instance_uuid = require('uuid').str()
    end
    return instance_uuid
end
internal.instance_uuid = function(v)
    if v ~= nil then instance_uuid = v end
    return uuid()
end

local info_fields = {
    version = function() return require('tarantool').version end,
    package = function() return require('tarantool').package end,
    pid = function() return internal.getpid() end,
    uptime = function()
        return math.floor(clock.monotonic() - started) + 1
    end,
    status = function()
        return internal.cfg_status and internal.cfg_status() or 'unconfigured'
    end,
    id = function()
        return internal.cfg_status and internal.cfg_status() == 'running'
               and 1 or nil
    end,
    uuid = function()
        return internal.cfg_status and internal.cfg_status() == 'running'
               and uuid() or nil
    end,
    ro = function()
        local cfg = type(box.cfg) == 'table' and box.cfg or nil
        return cfg ~= nil and cfg.read_only == true or false
    end,
    ro_reason = function()
        local cfg = type(box.cfg) == 'table' and box.cfg or nil
        if cfg ~= nil and cfg.read_only == true then
            return 'config'
        end
        return nil
    end,
    listen = function()
        local addr = internal.listen_addr or internal.listen_address
        if addr then
            return addr()
        end
        local cfg = type(box.cfg) == 'table' and box.cfg or nil
        return cfg ~= nil and cfg.listen or nil
    end,
    schema_version = function() return internal.schema_version() end,
    lsn = function() return 0 end,
    signature = function() return 0 end,
    vclock = function() return {} end,
    replication = function() return {} end,
    cluster = function()
        local running = internal.cfg_status and
                        internal.cfg_status() == 'running'
        return {uuid = running and uuid() or nil}
    end,
}

local function info_table()
    local t = {}
    for k, f in pairs(info_fields) do
        t[k] = f()
    end
    return t
end

--- box.info: `box.info.NAME` reads one field, `box.info()` gives them all.
box.info = setmetatable({}, {
    __index = function(_, key)
        local f = info_fields[key]
        if f ~= nil then
            return f()
        end
        return nil
    end,
    __call = function() return info_table() end,
    __serialize = function() return info_table() end,
})

---------------------------------------------------------------------------
-- box.once(key, fn, ...) (master's schema.lua): runs fn(...) once per key.
-- Master keeps the keys in the _schema space; luafiber keeps them in
-- memory, so it is once per process.
---------------------------------------------------------------------------
local once_done = {}
function box.once(key, func, ...)
    if type(key) ~= 'string' or type(func) ~= 'function' then
        error(internal.client_error(1, box.error.ILLEGAL_PARAMS,
                                    'Usage: box.once(key, func, ...)'))
    end
    if once_done[key] then
        return
    end
    once_done[key] = true
    return func(...)
end

---------------------------------------------------------------------------
-- box.ctl (master's ctl.c).
---------------------------------------------------------------------------
local ctl = box.ctl or {}
box.ctl = ctl

-- A trigger list (master's trigger.c, lbox_trigger_reset): list() gives
-- the triggers (newest first, the order they run in), set(new) adds,
-- set(nil, old) deletes, set(new, old) replaces.
local function trigger_list(name)
    local list = {}
    local function usage()
        error(internal.client_error(2, box.error.ILLEGAL_PARAMS,
                                    'trigger reset: incorrect arguments'))
    end
    local function find(f)
        for i, g in ipairs(list) do
            if g == f then return i end
        end
    end
    local function reset(...)
        local n = select('#', ...)
        local new, old = ...
        if n == 0 then
            local copy = {}
            for i, f in ipairs(list) do copy[i] = f end
            return copy
        end
        if (new ~= nil and type(new) ~= 'function' and
            not (type(new) == 'table' and getmetatable(new) and
                 getmetatable(new).__call)) or
           (old ~= nil and type(old) ~= 'function' and
            not (type(old) == 'table' and getmetatable(old) and
                 getmetatable(old).__call)) then
            usage()
        end
        if old ~= nil then
            local i = find(old)
            if i == nil then
                error(internal.client_error(1, box.error.ILLEGAL_PARAMS,
                                            'trigger reset: Trigger is not found'))
            end
            if new ~= nil then
                list[i] = new
            else
                table.remove(list, i)
            end
            return new
        end
        if new ~= nil then
            table.insert(list, 1, new)
        end
        return new
    end
    return reset, list, name
end

local on_shutdown, shutdown_list = trigger_list('box.ctl.on_shutdown')
--- box.ctl.on_shutdown([new [, old]]): triggers run when the process
--- ends (os.exit, the end of the script, and what the server's signal
--- handling calls: box.internal.run_on_shutdown()).
ctl.on_shutdown = on_shutdown

local on_shutdown_timeout = 3.0
--- box.ctl.set_on_shutdown_timeout(seconds): how long the triggers may
--- take together (3 by default).
function ctl.set_on_shutdown_timeout(...)
    if select('#', ...) ~= 1 then
        error(internal.client_error(1, box.error.ILLEGAL_PARAMS,
                                    'function expected one argument'))
    end
    local t = tonumber((...))
    if t == nil then
        error(internal.client_error(1, box.error.ILLEGAL_PARAMS,
                                    'function expected a number'))
    end
    if t <= 0 then
        error(internal.client_error(1, box.error.ILLEGAL_PARAMS,
                                    'on_shutdown timeout must be greater then zero'))
    end
    on_shutdown_timeout = t
end

local shutdown_ran = false
--- box.internal.run_on_shutdown(): runs the on_shutdown triggers once, each
--- in a fiber of its own, waiting at most the on_shutdown timeout for all;
--- errors are logged. Later calls do nothing.
function internal.run_on_shutdown()
    if shutdown_ran then
        return
    end
    shutdown_ran = true
    -- box.cfg{pid_file = ...}'s file goes (master's pidfile_remove).
    if internal.pid_file ~= nil then
        os.remove(internal.pid_file)
    end
    if #shutdown_list == 0 then
        return
    end
    local log = require('log')
    local done = fiber.channel(#shutdown_list)
    for _, f in ipairs(shutdown_list) do
        fiber.new(function()
            local ok, err = pcall(f)
            if not ok then
                log.error('on_shutdown trigger failed: %s', tostring(err))
            end
            done:put(true)
        end)
    end
    local deadline = clock.monotonic() + on_shutdown_timeout
    for _ = 1, #shutdown_list do
        local left = deadline - clock.monotonic()
        if left <= 0 or done:get(left) == nil then
            log.warn('on_shutdown triggers timed out')
            break
        end
    end
end

--- box.internal.shutdown(): what SIGTERM and SIGINT do (Tarantool's
--- on_shutdown_f and box_shutdown): the on_shutdown triggers, then the
--- box.shutdown event, then the server stops listening, lets the running requests finish and their
--- replies go out (at most the on_shutdown timeout), and closes the
--- connections. The caller then exits.
function internal.shutdown()
    pcall(internal.run_on_shutdown)
    -- Clients watching box.shutdown (master's net.box does) finish their
    -- requests and close (master's iproto_shutdown).
    pcall(internal.broadcast, 'box.shutdown', true)
    local deadline = clock.monotonic() + on_shutdown_timeout
    -- bounded: each round sleeps, the deadline ends it
    while internal.server_drain(false) > 0 do
        if clock.monotonic() >= deadline then
            require('log').warn('shutdown: requests still running after %s s: ' ..
                                'their connections are closed', on_shutdown_timeout)
            break
        end
        fiber.sleep(0.01)
    end
    internal.server_drain(true)
end

-- os.exit runs the triggers first, as Tarantool's does.
local exit = os.exit
os.exit = function(...)
    pcall(internal.run_on_shutdown)
    return exit(...)
end

ctl.on_schema_init = trigger_list('box.ctl.on_schema_init')
ctl.on_recovery_state = trigger_list('box.ctl.on_recovery_state')
ctl.on_election = trigger_list('box.ctl.on_election')
--- box.ctl.is_recovery_finished(): true (nothing to recover).
function ctl.is_recovery_finished() return true end

local function wait_mode(ro)
    return function(timeout)
        if timeout ~= nil and type(timeout) ~= 'number' then
            error(internal.client_error(1, box.error.ILLEGAL_PARAMS,
                                        'timeout must be a number'))
        end
        -- The mode changes only through box.cfg{read_only = ...}: wait
        -- (polling) until it is the one asked for, or the timeout.
        local deadline = clock.monotonic() + (timeout or math.huge)
        while box.info.ro ~= ro do
            if clock.monotonic() >= deadline then
                error(internal.client_error(1, box.error.TIMEOUT))
            end
            fiber.sleep(math.min(0.01, math.max(0, deadline - clock.monotonic())))
        end
    end
end
--- box.ctl.wait_rw([timeout]), box.ctl.wait_ro([timeout]).
ctl.wait_rw = wait_mode(false)
ctl.wait_ro = wait_mode(true)
ctl.promote = needs_storage('box.ctl.promote')
ctl.demote = needs_storage('box.ctl.demote')

--- dostring(code, ...): runs `code` with the arguments, returns what it
--- returns; code that does not compile is error 32 (master's global of
--- src/lua/init.lua, which Tarantool's tests call through net.box).
function _G.dostring(s, ...)
    local chunk, message = (loadstring or load)(s)
    if chunk == nil then
        error(box.error.new(box.error.PROC_LUA, message), 2)
    end
    return chunk(...)
end
