-- The Lua half of luafiber's `uri` module (see mod.rs): Tarantool master's
-- src/lua/uri.lua and the table forms of its src/lua/uri.c, over the C
-- functions of mod.rs (`parse` and `parse_many` of strings, `escape`,
-- `unescape`, `error`). Run once per state by the module's loader.
local internal = ...

local has_ffi, ffi = pcall(require, 'ffi')
if not has_ffi then
    ffi = nil
end

local type, pairs, ipairs, next, tostring = type, pairs, ipairs, next, tostring
local rawget, setmetatable, getmetatable = rawget, setmetatable, getmetatable
local concat, insert = table.concat, table.insert
local strchar = string.char

local INCORRECT_URI = 'Incorrect URI: expected host:service or /unix.socket'
local INVALID_TABLE = 'Invalid URI table: expected ' ..
    '{uri = string, params = table} or {string, params = table}'
local DEFAULTS_SINGLE = 'Default URI parameters are not allowed for single URI'
local new_error = internal.error

-- `uri.unreserved(chars)`: which bytes escape leaves as they are, the bytes
-- that match the pattern class "[chars]". On LuaJIT an `unsigned char[256]`
-- as master gives; on Lua 5.4 a table holding the same 256 bytes.
local unreserved_mt = {}

local function unreserved(str)
    if type(str) ~= 'string' then
        error('Usage: uri.unreserved(str)')
    end
    local pattern = '^[' .. str .. ']$'
    local bytes = {}
    for i = 0, 255 do
        bytes[i + 1] = strchar(i):match(pattern) and '\1' or '\0'
    end
    bytes = concat(bytes)
    if ffi ~= nil then
        local t = ffi.new('unsigned char[256]')
        ffi.copy(t, bytes, 256)
        return t
    end
    return setmetatable({bytes = bytes}, unreserved_mt)
end

local function is_unreserved(v)
    if ffi ~= nil then
        return type(v) == 'cdata'
    end
    return type(v) == 'table' and getmetatable(v) == unreserved_mt
end

local function unreserved_bytes(v)
    if ffi ~= nil then
        return ffi.string(v, 256)
    end
    return v.bytes
end

local ALPHA = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'
local ALNUM = ALPHA .. '0123456789'
local SUB_DELIMS = "!$&'()*+,;="

local RFC3986 = {unreserved = unreserved(ALNUM .. '%-._~'), plus = false}
local PATH = {
    unreserved = unreserved(ALNUM .. '%-._~' .. SUB_DELIMS .. '/:@'),
    plus = false,
}
local PATH_PART = {
    unreserved = unreserved(ALNUM .. '%-._~' .. SUB_DELIMS .. ':@'),
    plus = false,
}
local QUERY = {
    unreserved = unreserved(ALNUM .. '%-._~' .. SUB_DELIMS .. '/?'),
    plus = false,
}
local QUERY_PART = {
    unreserved = unreserved(ALNUM .. '%-._~' .. "!$'()*+,;" .. '/?'),
    plus = false,
}
local FRAGMENT = {
    unreserved = unreserved(ALNUM .. '%-._~' .. SUB_DELIMS .. '/?'),
    plus = false,
}
local FORM_URLENCODED = {
    unreserved = unreserved(ALNUM .. '%-._' .. '*'),
    plus = true,
}

local function build_opts(opts)
    if opts and type(opts) ~= 'table' then
        error('opts must be a table')
    end
    local options = {
        unreserved = (opts and opts.unreserved) or RFC3986.unreserved,
        plus = (opts and opts.plus) or RFC3986.plus,
    }
    if not is_unreserved(options.unreserved) then
        error('use uri.unreserved for building opts.unreserved')
    end
    if type(options.plus) ~= 'boolean' then
        error('opts.plus must be a boolean')
    end
    return options
end

local function escape(buf, opts)
    if type(buf) ~= 'string' then
        error('Usage: uri.escape(string, [opts])')
    end
    local options = build_opts(opts)
    return internal.escape(buf, unreserved_bytes(options.unreserved),
                           options.plus)
end

local function unescape(buf, opts)
    if type(buf) ~= 'string' then
        error('Usage: uri.unescape(string, [opts])')
    end
    local options = build_opts(opts)
    return internal.unescape(buf, options.plus)
end

-- A URI is worked on in the shape mod.rs's `parse` gives (table.rs): its
-- `params` an array of `{name, values}` in master's order. These are
-- master's uri_param_count, uri_remove_param and uri_add_param over it.
local function find_param(u, name)
    local params = u.params
    if params ~= nil then
        for i = 1, #params do
            if params[i][1] == name then
                return i, params[i][2]
            end
        end
    end
end

local function param_count(u, name)
    local _, values = find_param(u, name)
    return values and #values or 0
end

local function add_param(u, name, value)
    local _, values = find_param(u, name)
    if values == nil then
        values = {}
        u.params = u.params or {}
        u.params[#u.params + 1] = {name, values}
    end
    if value ~= nil then
        values[#values + 1] = value
    end
end

local function remove_param(u, name)
    local i = find_param(u, name)
    if i ~= nil then
        table.remove(u.params, i)
    end
end

-- The order of the names of each `params` table `parse` made (weak keys),
-- which `format` follows: master's `format` goes over `params` with
-- `pairs`, whose order on this engine is the hash order (randomised per
-- process on LuaJIT), so the order is kept here instead.
local param_order = setmetatable({}, {__mode = 'k'})

-- The shape master's `parse` returns: `params` a `name -> values` table,
-- absent when empty.
local function finish(u)
    local list = u.params
    u.params = nil
    if list ~= nil and #list > 0 then
        local params, order = {}, {}
        for i = 1, #list do
            params[list[i][1]] = list[i][2]
            order[i] = list[i][1]
        end
        u.params = params
        param_order[params] = order
    end
    return u
end

local function key_before(a, b)
    local ta, tb = type(a), type(b)
    if ta ~= tb then
        return ta < tb
    elseif ta == 'string' or ta == 'number' then
        return a < b
    end
    return tostring(a) < tostring(b)
end

-- The keys of `t` in a fixed order: those of `order` first (the ones
-- still in `t`), then the others sorted (strings by bytes). Where master
-- goes over a table with `pairs`, this goes in this order, so that the
-- result does not change from run to run.
local function ordered_keys(t, order)
    local keys, seen = {}, {}
    if order ~= nil then
        for _, k in ipairs(order) do
            if t[k] ~= nil and not seen[k] then
                keys[#keys + 1] = k
                seen[k] = true
            end
        end
    end
    local rest = {}
    for k in pairs(t) do
        if not seen[k] then
            rest[#rest + 1] = k
        end
    end
    table.sort(rest, key_before)
    for _, k in ipairs(rest) do
        keys[#keys + 1] = k
    end
    return keys
end

-- Master's uri_add_param_from_lua: one `name = value` of a params table.
local function add_param_from_lua(u, name, value, overwrite)
    if type(name) ~= 'string' then
        return new_error('Incorrect type for URI parameter name: ' ..
                         'should be a string')
    end
    if overwrite then
        remove_param(u, name)
    elseif param_count(u, name) ~= 0 then
        return
    end
    local vt = type(value)
    if vt == 'string' or vt == 'number' then
        add_param(u, name, tostring(value))
    elseif vt == 'table' then
        for i = 1, #value do
            local v = value[i]
            if type(v) ~= 'string' and type(v) ~= 'number' then
                return new_error('Incorrect type for URI parameter value: ' ..
                                 'should be string or number')
            end
            add_param(u, name, tostring(v))
        end
    else
        return new_error('Incorrect type for URI parameter value: ' ..
                         'should be string, number or table')
    end
end

local function add_params_from_lua(u, params, overwrite)
    if params == nil then
        return
    end
    if type(params) ~= 'table' then
        return new_error('Incorrect type for URI parameters: ' ..
                         'should be a table')
    end
    for _, name in ipairs(ordered_keys(params)) do
        local err = add_param_from_lua(u, name, params[name], overwrite)
        if err ~= nil then
            return err
        end
    end
end

local function parse_string(str)
    local u = internal.parse(str)
    if u == nil then
        return nil, new_error(INCORRECT_URI)
    end
    return u
end

-- Master's uri_create_from_lua_table: `{str, ...}` or `{uri = str, ...}`,
-- with `login`, `password` and `params`.
local function uri_from_table(t)
    local size = #t
    if size + (rawget(t, 'uri') ~= nil and 1 or 0) ~= 1 then
        return nil, new_error(INVALID_TABLE)
    end
    if rawget(t, 'default_params') ~= nil then
        return nil, new_error(DEFAULTS_SINGLE)
    end
    local str
    if size == 1 then
        str = rawget(t, 1)
    else
        str = rawget(t, 'uri')
    end
    if type(str) ~= 'string' and type(str) ~= 'number' then
        return nil, new_error('Incorrect type for URI in nested table: ' ..
                              'should be string, number')
    end
    local u, err = parse_string(tostring(str))
    if u == nil then
        return nil, err
    end
    local login, password = t.login, t.password
    if type(login) == 'string' then
        if type(password) == 'string' or password == nil then
            u.login, u.password = login, password
        else
            return nil, new_error('Invalid URI table: expected type for ' ..
                                  'password is string')
        end
    elseif login ~= nil then
        return nil, new_error('Invalid URI table: expected type for ' ..
                              'login is string')
    elseif rawget(t, 'password') ~= nil then
        return nil, new_error('Invalid URI table: login required if ' ..
                              'password is set')
    end
    err = add_params_from_lua(u, rawget(t, 'params'), true)
    if err ~= nil then
        return nil, err
    end
    return u
end

-- Master's luaT_uri_create: a string, a number, a table or nil.
local function uri_create(v)
    local vt = type(v)
    if vt == 'string' or vt == 'number' then
        return parse_string(tostring(v))
    elseif vt == 'table' then
        return uri_from_table(v)
    elseif vt == 'nil' then
        return {}
    end
    return nil, new_error('Incorrect type for URI: should be string, ' ..
                          'number or table')
end

-- Master's uri_set_create_from_lua_table.
local function uri_set_from_table(t)
    local size = #t
    if rawget(t, 'uri') ~= nil or (size == 1 and type(rawget(t, 1)) ~= 'table') then
        local u, err = uri_create(t)
        if u == nil then
            return nil, err
        end
        return {u}
    elseif size == 0 then
        return {}
    end
    local set = {}
    for i = 1, size do
        local u, err = uri_create(rawget(t, i))
        if u == nil then
            return nil, err
        end
        set[i] = u
    end
    if rawget(t, 'params') ~= nil then
        return nil, new_error('URI parameters are not allowed for ' ..
                              'multiple URIs')
    end
    if rawget(t, 'login') ~= nil then
        return nil, new_error('URI login is not allowed for multiple URIs')
    end
    if rawget(t, 'password') ~= nil then
        return nil, new_error('URI password is not allowed for ' ..
                              'multiple URIs')
    end
    local defaults = rawget(t, 'default_params')
    if defaults ~= nil then
        for _, u in ipairs(set) do
            local err = add_params_from_lua(u, defaults, false)
            if err ~= nil then
                return nil, err
            end
        end
    end
    return set
end

local function parse(str)
    if str == nil then
        error('Usage: uri.parse(string|table)')
    end
    local u, err = uri_create(str)
    if u == nil then
        return nil, err
    end
    return finish(u)
end

local function parse_many(str)
    if str == nil then
        error('Usage: uri.parse_many(string|table)')
    end
    local vt = type(str)
    if vt == 'string' or vt == 'number' then
        local set = internal.parse_many(tostring(str))
        if set == nil then
            return nil, new_error(INCORRECT_URI)
        end
        for i = 1, #set do
            finish(set[i])
        end
        return set
    elseif vt == 'table' then
        local set, err = uri_set_from_table(str)
        if set == nil then
            return nil, err
        end
        for i = 1, #set do
            finish(set[i])
        end
        return set
    end
    return nil, new_error('Incorrect type for URI: should be string, ' ..
                          'number or table')
end

local function part(v, name)
    if v == nil or type(v) == 'string' then
        return v
    elseif type(v) == 'number' then
        return tostring(v)
    end
    error(('uri.format: %s must be a string'):format(name))
end

-- Master's uri_format over a table shaped as `parse` gives: the IPv6 host
-- in brackets (when `ipv6` is set and `ipv4` is not), the password and the
-- `ssl_*` parameters only when `write_password` is true. Parameters come
-- in the order `parse` found them, then sorted by name (master: `pairs`
-- order).
local function format(uri, write_password)
    local buf = {}
    local scheme, login = part(uri.scheme, 'scheme'), part(uri.login, 'login')
    local host, service = part(uri.host, 'host'), part(uri.service, 'service')
    if scheme ~= nil then
        buf[#buf + 1] = scheme .. '://'
    end
    if login ~= nil then
        buf[#buf + 1] = login
        local password = part(uri.password, 'password')
        if password ~= nil and write_password then
            buf[#buf + 1] = ':' .. password
        end
        buf[#buf + 1] = '@'
    end
    if host ~= nil then
        if uri.ipv4 == nil and uri.ipv6 ~= nil then
            buf[#buf + 1] = '[' .. host .. ']'
        else
            buf[#buf + 1] = host
        end
    end
    if service ~= nil then
        buf[#buf + 1] = host ~= nil and ':' .. service or service
    end
    buf[#buf + 1] = part(uri.path, 'path')
    local params = uri.params
    if params ~= nil and next(params) ~= nil then
        buf[#buf + 1] = '?'
        local first = true
        for _, key in ipairs(ordered_keys(params, param_order[params])) do
            local param = params[key]
            local name = part(key, 'a parameter name')
            if write_password or name:sub(1, 4) ~= 'ssl_' then
                local pairs_out = {}
                if type(param) == 'table' then
                    for j = 1, #param do
                        pairs_out[j] = name .. '=' ..
                            part(param[j], 'a parameter value')
                    end
                elseif param ~= nil then
                    pairs_out[1] = name .. '=' .. part(param, 'a parameter value')
                end
                if #pairs_out == 0 then
                    pairs_out[1] = name
                end
                if not first then
                    buf[#buf + 1] = '&'
                end
                buf[#buf + 1] = concat(pairs_out, '&')
                first = false
            end
        end
    end
    local fragment = part(uri.fragment, 'fragment')
    if fragment ~= nil then
        buf[#buf + 1] = '#' .. fragment
    end
    return concat(buf)
end

local function encode_kv(key, values, res, escape_opts)
    local val = values
    if type(val) ~= 'table' then
        val = {val}
    end
    local key_escaped = escape(tostring(key), escape_opts)
    if next(val) == nil then
        insert(res, key_escaped)
    end
    for _, k in ipairs(ordered_keys(val)) do
        insert(res, key_escaped .. '=' .. escape(tostring(val[k]), escape_opts))
    end
end

-- A table as a query string, keys and values escaped; keys sorted
-- (numbers first), where master's order is `pairs`'.
local function params(opts, escape_opts)
    if opts == nil then
        return ''
    end
    if type(opts) ~= 'table' then
        error('Usage: uri.params(table[, escape_opts])')
    end
    local res = {}
    for _, key in ipairs(ordered_keys(opts)) do
        if type(key) ~= 'string' and type(key) ~= 'number' then
            error("uri.params: keys must have a type 'string' or 'number'")
        end
        encode_kv(key, opts[key], res, escape_opts)
    end
    return concat(res, '&')
end

local function values(...)
    return {...}
end

return {
    parse_many = parse_many,
    parse = parse,
    format = format,
    values = values,
    _internal = {
        params = params,
        encode_kv = encode_kv,
    },
    escape = escape,
    unescape = unescape,
    unreserved = unreserved,

    RFC3986 = RFC3986,
    PATH = PATH,
    PATH_PART = PATH_PART,
    QUERY = QUERY,
    QUERY_PART = QUERY_PART,
    FRAGMENT = FRAGMENT,
    FORM_URLENCODED = FORM_URLENCODED,
}
