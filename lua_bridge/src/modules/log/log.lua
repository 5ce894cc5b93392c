-- The `log` module: Tarantool's `log` (src/lua/log.lua), written over the
-- bridge's C functions in `C` (modules/log/mod.rs): `C.say` hands a line to
-- `tracing`, `C.check` and `C.apply` check and apply the destination and
-- format, `C.rotate` reopens a log file, `C.pid` is the process id,
-- `C.raise` raises an IllegalParams error object.
local C = ...
local debug_getinfo = debug.getinfo
local unpack = unpack or table.unpack

local NULL = require('msgpack').NULL
local json = require('json').new()
json.cfg{
    encode_invalid_numbers = true,
    encode_load_metatables = true,
    encode_use_tostring = true,
    encode_invalid_as_nil = true,
}

local LEVELS = {
    fatal = 0, syserror = 1, error = 2, crit = 3,
    warn = 4, info = 5, verbose = 6, debug = 7,
}
local LEVEL_NAMES = 'fatal,syserror,error,crit,warn,info,verbose,debug'
local S_ERROR, S_WARN, S_INFO, S_VERBOSE, S_DEBUG = 2, 4, 5, 6, 7

-- Fields the JSON format writes itself: a table's own are dropped.
local SPECIAL = {
    'file', 'level', 'pid', 'line', 'cord_name', 'fiber_name', 'fiber_id',
    'error_msg',
}

local OPTION_TYPES = {
    log = 'string',
    nonblock = 'boolean',
    level = 'number, string',
    modules = 'table',
    format = 'string',
}

local default_cfg = { level = S_INFO, format = 'plain' }

-- The options as given (a level stays a name when given as one).
local log_cfg = { level = C.initial_level or S_INFO, format = 'plain' }
-- Per-module levels (log.new(name)), as numbers.
local module_levels = {}
local initialized = false

local function normalize(level)
    if type(level) == 'string' then
        return LEVELS[level]
    end
    return level
end

local function cfg_error(option, reason)
    C.raise(("Incorrect value for option '%s': %s"):format(option, reason))
end

local function check_type(option, value)
    local types = OPTION_TYPES[option]
    if value == nil or types:find(type(value), 1, true) then
        return
    end
    if types:find(',', 1, true) then
        cfg_error(option, 'should be one of types ' .. types)
    end
    cfg_error(option, 'should be of type ' .. types)
end

local function check_level(level, option)
    if type(level) == 'string' and LEVELS[level] == nil then
        cfg_error(option, 'expected ' .. LEVEL_NAMES)
    end
end

local function check_cfg(cfg)
    check_level(cfg.level, 'log_level')
    if cfg.modules ~= nil then
        for name, level in pairs(cfg.modules) do
            if type(name) ~= 'string' then
                cfg_error('module name', 'should be of type string')
            end
            check_type('level', level)
            check_level(level, 'log_modules.' .. name)
        end
    end
    if initialized then
        if log_cfg.log ~= cfg.log then
            C.raise("Can't set option 'log' dynamically")
        end
        if log_cfg.nonblock ~= cfg.nonblock then
            C.raise("Can't set option 'log_nonblock' dynamically")
        end
    end
    local err = C.check(cfg.log, cfg.format, cfg.nonblock)
    if err ~= nil then
        C.raise(err)
    end
end

local function say(name, level, fmt, ...)
    local threshold = name and module_levels[name] or normalize(log_cfg.level)
    if level > threshold then
        return
    end
    local kind = 'plain'
    local msg
    local argc = select('#', ...)
    if argc ~= 0 then
        local args = {...}
        for i = 1, argc do
            if type(args[i]) == 'table' then
                local mt = getmetatable(args[i])
                if mt == nil or mt.__tostring == nil then
                    args[i] = json.encode(args[i])
                end
            end
        end
        local ok
        ok, msg = pcall(string.format, fmt, unpack(args, 1, argc))
        if not ok then
            error(msg, 3)
        end
    elseif type(fmt) == 'table' and C.is_error(fmt) then
        -- An error object: its message, as master writes a box.error
        -- (a cdata) with tostring.
        msg = tostring(fmt)
    elseif type(fmt) == 'table' then
        msg = {}
        for k, v in pairs(fmt) do
            msg[k] = v
        end
        setmetatable(msg, getmetatable(fmt))
        if log_cfg.format == 'json' then
            local mt = getmetatable(msg)
            if mt and type(mt.__serialize) == 'function' then
                msg = mt.__serialize(msg)
                if type(msg) ~= 'table' then
                    msg = { message = tostring(msg) }
                end
            end
            for _, field in ipairs(SPECIAL) do
                msg[field] = nil
            end
            if next(msg) == nil then
                msg.message = ''
            end
            if msg.message == nil then
                msg.message = msg[1]
                msg[1] = nil
            end
            setmetatable(msg, json.map_mt)
            kind = 'json'
        end
        msg = json.encode(msg)
    else
        msg = tostring(fmt)
    end
    local frame = debug_getinfo(3, 'Sl')
    local line, file = 0, 'eval'
    if type(frame) == 'table' then
        line = frame.currentline or 0
        file = frame.short_src or frame.src or 'eval'
    end
    C.say(level, name, file, line, msg, kind)
end

local function say_closure(name, level)
    return function(fmt, ...)
        say(name, level, fmt, ...)
    end
end

local function set_level(level)
    -- No level is no number or string (master's check_cfg_option_type);
    -- the level is kept.
    if level == nil then
        cfg_error('level', 'should be one of types ' .. OPTION_TYPES.level)
    end
    check_type('level', level)
    check_level(level, 'log_level')
    log_cfg.level = level
    C.set_level(normalize(level))
    say(nil, S_DEBUG, 'log: level set to %s', level)
end

local function set_format(format)
    check_type('format', format)
    local cfg = {}
    for k, v in pairs(log_cfg) do
        cfg[k] = v
    end
    cfg.format = format
    check_cfg(cfg)
    C.apply(cfg.log, format)
    log_cfg.format = format
    say(nil, S_DEBUG, "log: format set to '%s'", format)
end

-- The options of `new` over the current ones: a NULL (box.NULL)
-- or an empty `log`/`format` is the default.
local function prepare(new)
    for k in pairs(new) do
        if OPTION_TYPES[k] == nil then
            cfg_error(tostring(k), 'unexpected option')
        end
    end
    local cfg = {}
    for k in pairs(OPTION_TYPES) do
        local v = rawget(new, k)
        if rawequal(v, nil) then
            cfg[k] = log_cfg[k]
        elseif v == nil or rawequal(v, NULL)
            or (v == '' and (k == 'log' or k == 'format')) then
            cfg[k] = default_cfg[k]
        else
            check_type(k, v)
            cfg[k] = v
        end
    end
    return cfg
end

local function configure(_, new)
    if type(new) ~= 'table' then
        C.raise('Usage: log.cfg({option = value, ...})')
    end
    local cfg = prepare(new)
    check_cfg(cfg)
    C.apply(cfg.log, cfg.format)
    module_levels = {}
    if cfg.modules ~= nil then
        for name, level in pairs(cfg.modules) do
            module_levels[name] = normalize(level)
        end
    end
    initialized = true
    for k in pairs(OPTION_TYPES) do
        log_cfg[k] = cfg[k]
    end
    C.set_level(normalize(log_cfg.level))
    say(nil, S_DEBUG, 'log.cfg({log=%s, level=%s, nonblock=%s, format=%s})',
        cfg.log, cfg.level, cfg.nonblock, cfg.format)
end

local log_main

local registry = {}

local function new(name)
    if type(name) ~= 'string' then
        C.raise('name should be a string')
    end
    if registry[name] ~= nil then
        return registry[name]
    end
    local l = {}
    for k, v in pairs(log_main) do
        l[k] = v
    end
    l.name = name
    l.error = say_closure(name, S_ERROR)
    l.warn = say_closure(name, S_WARN)
    l.info = say_closure(name, S_INFO)
    l.verbose = say_closure(name, S_VERBOSE)
    l.debug = say_closure(name, S_DEBUG)
    registry[name] = l
    return l
end

log_main = {
    error = say_closure(nil, S_ERROR),
    warn = say_closure(nil, S_WARN),
    info = say_closure(nil, S_INFO),
    verbose = say_closure(nil, S_VERBOSE),
    debug = say_closure(nil, S_DEBUG),
    new = new,
    rotate = C.rotate,
    pid = C.pid,
    level = set_level,
    log_format = set_format,
    cfg = setmetatable(log_cfg, { __call = configure }),
}

return log_main
