-- The `yaml` module (docs/lua/yaml.md): Tarantool master's lyaml.cc walk
-- of a value (dump_node, find_references, the serializer's reference
-- table and luaL_checkfield rules) into a flat list of events that
-- internal.emit hands to libyaml; decoding is internal.decode's.
local internal = ...
local msgpack = require('msgpack')

local classify, emit, decode = internal.classify, internal.emit, internal.decode
local NULL, array_mt, map_mt = msgpack.NULL, msgpack.array_mt, msgpack.map_mt
local getmetatable = debug.getmetatable
local floor, huge = math.floor, math.huge

-- The serializer's options (src/lua/serializer.c OPTIONS) and defaults.
local OPTIONS = {
    encode_max_depth = 128, encode_deep_as_nil = false,
    encode_invalid_numbers = true, encode_invalid_as_nil = false,
    encode_use_tostring = false, encode_load_metatables = true,
    encode_sparse_convert = true, encode_sparse_ratio = 2,
    encode_sparse_safe = 10, encode_number_precision = 14,
    decode_invalid_numbers = true, decode_save_metatables = true,
    decode_max_depth = 128,
}

-- Event kinds (mod.rs) and scalar styles.
local EV_SCALAR, EV_SEQ, EV_SEQ_END, EV_MAP, EV_MAP_END, EV_ALIAS = 1, 2, 3, 4, 5, 6
local ANY, PLAIN, SINGLE, LITERAL = 0, 1, 2, 4

local ENCODE_USAGE = 'Usage: encode(object, {tag_prefix = <string>, ' ..
    'tag_handle = <string>})'

-- The largest positive integer key (luaL_arrlen).
local function arrlen(t)
    local max = 0
    for k in next, t do
        if type(k) == 'number' and k > max and floor(k) == k then max = k end
    end
    return max
end

-- lua_field_inspect_table: kind ('array' or 'map'), value, size, compact.
local function inspect_table(v, cfg, tofield)
    if cfg.encode_load_metatables then
        local mt = getmetatable(v)
        local ser = type(mt) == 'table' and rawget(mt, '__serialize') or nil
        if type(ser) == 'function' then
            local ok, r = pcall(ser, v)
            if not ok then error(r, 0) end
            return tofield(r, cfg)
        elseif type(ser) == 'string' then
            if ser == 'array' or ser == 'seq' or ser == 'sequence' then
                return 'array', v, arrlen(v), ser == 'seq'
            elseif ser == 'map' or ser == 'mapping' then
                return 'map', v, nil, ser == 'map'
            end
            error('invalid __serialize value', 0)
        elseif ser ~= nil then
            error('invalid __serialize value', 0)
        end
    end
    local size, max = 0, 0
    for k in next, v do
        size = size + 1
        if type(k) ~= 'number' or (k ~= size and (k < 1 or floor(k) ~= k)) then
            return 'map', v
        end
        if k > max then max = k end
    end
    local ratio = cfg.encode_sparse_ratio
    if ratio > 0 and max > size * ratio and max > cfg.encode_sparse_safe then
        if not cfg.encode_sparse_convert then
            error('excessively sparse array', 0)
        end
        return 'map', v
    end
    return 'array', v, max
end

-- luaL_tofield: kind, the value (replaced by a __serialize result), and
-- what the kind carries.
local function tofield(v, cfg)
    local kind, a = classify(v)
    if kind == 'double' and (a ~= a or a == huge or a == -huge) and
            not cfg.encode_invalid_numbers then
        if cfg.encode_invalid_as_nil then return 'nil', v end
        error('number must not be NaN or Inf', 0)
    elseif kind == 'table' then
        return inspect_table(v, cfg, tofield)
    end
    return kind, v, a
end

local function unknown(kind)
    return kind == 'udata' or kind == 'cdata' or kind == 'unknown'
end

local function get_serialize(v) return v.__serialize end

-- luaL_checkfield: luaL_tofield, then luaL_convertfield for what has no
-- YAML form of its own.
local function checkfield(v, cfg)
    local kind, v2, a, b = tofield(v, cfg)
    if not unknown(kind) then return kind, v2, a, b end
    if cfg.encode_load_metatables and (kind == 'udata' or kind == 'cdata') then
        local ok, ser = pcall(get_serialize, v)
        if ok and ser ~= nil then
            if type(ser) ~= 'function' then
                error('invalid __serialize value', 0)
            end
            local ok2, r = pcall(ser, v)
            if not ok2 then error(r, 0) end
            v = r
            kind, v2, a, b = tofield(r, cfg)
        end
    end
    if unknown(kind) and cfg.encode_use_tostring then
        v = tostring(v)
        kind, v2, a, b = tofield(v, cfg)
    end
    if not unknown(kind) then return kind, v2, a, b end
    if cfg.encode_invalid_as_nil then return 'nil', v end
    local t = type(v)
    error(("unsupported Lua type '%s'"):format(
        t == 'cdata' and 'cdata' or t), 0)
end

-- luaT_reftable_new: original object -> its __serialize result, for every
-- object met (so that objects serialized to the same table alias).
local function reftable_new(obj, cfg)
    local reftable, visited = {}, {}
    local function walk(v)
        local t = type(v)
        if t ~= 'table' and t ~= 'cdata' and t ~= 'userdata' then return end
        if visited[v] ~= nil then return end
        visited[v] = true
        if reftable[v] ~= nil then return end
        local _, sv = checkfield(v, cfg)
        if not rawequal(sv, v) and sv ~= nil then reftable[v] = sv end
        if sv ~= nil and reftable[sv] ~= nil then return end
        if type(sv) == 'table' then
            for k, val in next, sv do
                walk(val)
                walk(k)
            end
        end
    end
    walk(obj)
    return reftable
end

local function format_double(d, precision)
    if d ~= d then return 'nan' end
    if d == huge then return 'inf' end
    if d == -huge then return '-inf' end
    if precision < 1 or precision > 14 then precision = 14 end
    return string.format('%.' .. precision .. 'g', d)
end

local function encode_value(obj, cfg, handle, prefix)
    local ev, n = {}, 0
    local anchors, anchor_number = {}, 0
    local flow = 0
    local reftable = reftable_new(obj, cfg)

    local function push(kind, a, b)
        local i = n * 4
        ev[i + 1], ev[i + 2], ev[i + 3], ev[i + 4] = kind, a or false, b or false, false
        n = n + 1
    end

    local function serialized(v)
        if v == nil then return v end
        local r = reftable[v]
        if r ~= nil then return r end
        return v
    end

    -- find_references: false for a table met once, true for one met more.
    local function find_references(v)
        v = serialized(v)
        if type(v) ~= 'table' then return end
        local cur = anchors[v]
        if cur == nil then
            anchors[v] = false
        else
            if cur == false then anchors[v] = true end
            return
        end
        for k, val in next, v do
            find_references(val)
            find_references(k)
        end
    end

    -- get_yaml_anchor: the anchor to give a table, nil, or '' after an
    -- alias was emitted.
    local function get_anchor(v)
        if type(v) ~= 'table' then return nil end
        local a = anchors[v]
        if not a then return nil end
        if a == true then
            local name = tostring(anchor_number)
            anchor_number = anchor_number + 1
            anchors[v] = name
            return name
        end
        push(EV_ALIAS, a)
        return ''
    end

    local dump_node
    local function dump_collection(open, close, v, kind, size, compact, anchor)
        push(open, anchor, compact)
        if compact then flow = flow + 1 end
        if kind == 'array' then
            for i = 1, size do dump_node(rawget(v, i)) end
        else
            for k, val in next, v do
                dump_node(k)
                dump_node(val)
            end
        end
        if compact then flow = flow - 1 end
        push(close)
    end

    dump_node = function(v)
        v = serialized(v)
        local anchor = get_anchor(v)
        if anchor == '' then return end
        local kind, v2, a, b = checkfield(v, cfg)
        if kind == 'array' then
            return dump_collection(EV_SEQ, EV_SEQ_END, v2, kind, a, b or flow > 0, anchor)
        elseif kind == 'map' then
            return dump_collection(EV_MAP, EV_MAP_END, v2, kind, a, b or flow > 0, anchor)
        elseif kind == 'str' then
            local style = ANY
            if a then
                style = SINGLE
            elseif flow > 0 then
                style = SINGLE
            elseif v2:find('\n', 1, true) then
                style = LITERAL
            end
            return push(EV_SCALAR, v2, style)
        elseif kind == 'int' or kind == 'ext' then
            return push(EV_SCALAR, a, PLAIN)
        elseif kind == 'double' then
            return push(EV_SCALAR, format_double(a, cfg.encode_number_precision), PLAIN)
        elseif kind == 'bool' then
            return push(EV_SCALAR, a and 'true' or 'false', PLAIN)
        end
        return push(EV_SCALAR, 'null', PLAIN)
    end

    find_references(obj)
    dump_node(obj)
    return emit(ev, n, handle, prefix)
end

local new_serializer

local function make(cfg)
    local m = {NULL = NULL, array_mt = array_mt, map_mt = map_mt}

    m.encode = function(...)
        if select('#', ...) == 0 then error(ENCODE_USAGE, 0) end
        local obj, opts = ...
        local prefix, handle
        if opts ~= nil then
            if type(opts) ~= 'table' then error(ENCODE_USAGE, 0) end
            prefix, handle = opts.tag_prefix, opts.tag_handle
            if prefix ~= nil and type(prefix) ~= 'string' and type(prefix) ~= 'number' or
                    handle ~= nil and type(handle) ~= 'string' and type(handle) ~= 'number' or
                    (prefix == nil) ~= (handle == nil) then
                error(ENCODE_USAGE, 0)
            end
            prefix = prefix and tostring(prefix)
            handle = handle and tostring(handle)
        end
        return encode_value(obj, cfg, handle, prefix)
    end

    m.decode = function(text, opts)
        return decode(text, opts, cfg.decode_save_metatables,
            cfg.decode_invalid_numbers, array_mt, map_mt, NULL)
    end

    m.new = function() return new_serializer() end

    local cfg_table = {}
    for k, v in pairs(cfg) do cfg_table[k] = v end
    m.cfg = setmetatable(cfg_table, {__call = function(self, opts)
        if type(opts) ~= 'table' then
            error('Usage: yaml.cfg({option = value, ...})', 0)
        end
        local new = {}
        for name, default in pairs(OPTIONS) do
            local v = rawget(opts, name)
            if v ~= nil then
                local ok
                if type(default) == 'boolean' then
                    ok = type(v) == 'boolean'
                else
                    ok = type(v) == 'number' and v >= 0 and floor(v) == v and v < 2^32
                end
                if not ok then
                    error('yaml.cfg: bad value for ' .. name, 0)
                end
                new[name] = v
            end
        end
        for name, v in pairs(new) do
            cfg[name] = v
            rawset(self, name, v)
        end
    end})
    return m
end

new_serializer = function()
    local cfg = {}
    for k, v in pairs(OPTIONS) do cfg[k] = v end
    return make(cfg)
end

return new_serializer()
