-- Human-readable sizes and durations in box.cfg (master's
-- src/box/lua/config/utils/units.lua and load_cfg.lua's
-- normalize_byte_size_option / normalize_duration_option): '256MiB',
-- '1.5GiB', '100ms', '2h'. Plain numeric strings stay strings (the type
-- check refuses them, as master keeps doing). Loaded by cfg.lua
-- (box.internal.load_chunk('units')); returns normalize(name, value, fail).

local byte_size_units = {
    B = 1, KIB = 1024, MIB = 1024 ^ 2, GIB = 1024 ^ 3, TIB = 1024 ^ 4,
    PIB = 1024 ^ 5,
}
local byte_size_names = 'B, KiB, MiB, GiB, TiB, PiB'
local duration_units = {
    ms = 0.001, s = 1, m = 60, h = 3600, d = 86400, w = 7 * 86400,
    M = 30 * 86400, y = 365 * 86400,
}
local duration_names = 'ms, s, m, h, d, w, M, y'

-- master's byte_size_cfg and duration_cfg
local byte_size_cfg = {}
for _, k in ipairs({
    'memtx_memory', 'memtx_min_tuple_size', 'memtx_max_tuple_size',
    'slab_alloc_granularity', 'vinyl_memory', 'vinyl_cache',
    'vinyl_max_tuple_size', 'vinyl_range_size', 'vinyl_page_size',
    'readahead', 'wal_max_size', 'checkpoint_wal_threshold',
    'wal_queue_max_size', 'replication_synchro_queue_max_size',
    'feedback_metrics_limit', 'sql_cache_size',
}) do byte_size_cfg[k] = true end
local duration_cfg = {}
for _, k in ipairs({
    'io_collect_interval', 'too_long_threshold', 'txn_timeout',
    'txn_synchro_timeout', 'vinyl_timeout', 'wal_dir_rescan_delay',
    'wal_cleanup_delay', 'wal_retention_period', 'checkpoint_interval',
    'replication_anon_ttl', 'replication_timeout',
    'replication_reconnect_timeout', 'replication_synchro_timeout',
    'replication_connect_timeout', 'replication_sync_timeout',
    'replication_sync_lag', 'election_timeout',
    'feedback_metrics_collect_interval', 'feedback_interval', 'auth_delay',
}) do duration_cfg[k] = true end

-- The number and the unit of `value`, or nil and a message (`what`: "byte
-- size" or "duration").
local function split(value, what)
    local number, unit = value:match('^([%-]?[%d%.]+)%s*([%a]*)$')
    if number == nil then
        return nil, ('Unable to parse a number from %q'):format(value)
    end
    local parsed = tonumber(number)
    if parsed == nil then
        return nil, ('Unable to parse a number from %q'):format(number)
    end
    if parsed < 0 then
        return nil, ('Expected a non-negative %s, got %s'):format(what, parsed)
    end
    return parsed, unit
end

-- units.parse_byte_size: bytes, or nil and a message
local function parse_byte_size(value)
    local parsed, unit = split(value, 'byte size')
    if parsed == nil then
        return nil, unit
    end
    local multiplier = 1
    if unit ~= '' then
        multiplier = byte_size_units[unit:upper()]
        if multiplier == nil then
            return nil, ('Unknown byte size suffix %q (use %s)')
                :format(unit:upper(), byte_size_names)
        end
    end
    if multiplier == 1 and parsed - math.floor(parsed) ~= 0 then
        return nil, ('Expected byte size without a fractional part, got %s')
            :format(parsed)
    end
    return math.floor(parsed * multiplier)
end

-- units.parse_duration: seconds, or nil and a message
local function parse_duration(value)
    local parsed, unit = split(value, 'duration')
    if parsed == nil or unit == '' then
        return parsed, unit
    end
    local multiplier = duration_units[unit]
    if multiplier == nil then
        return nil, ('Unknown duration suffix %q (use %s)')
            :format(unit, duration_names)
    end
    return parsed * multiplier
end

-- normalize(name, value, fail): a size or duration string of option
-- `name` as a number; other values unchanged; fail(name, message) for a
-- string that does not parse.
return function(name, value, fail)
    if type(value) ~= 'string' or value:match('^%s*[%+%-]?[%d%.]+%s*$') then
        return value
    end
    local parse = byte_size_cfg[name] and parse_byte_size or
                  duration_cfg[name] and parse_duration
    if not parse then
        return value
    end
    local parsed, err = parse(value)
    if parsed == nil then
        fail(name, err)
    end
    return parsed
end
