-- What the console prints: values as Tarantool's console prints them, a
-- YAML document of a list (`---`, `- value`, `...`), block style, flow
-- style for tables whose `__serialize` is 'seq' or 'map'. Strings are
-- quoted when YAML would read them as something else.

local ffi_ok, ffi = pcall(require, 'ffi')
local decimal_ok, decimal = pcall(require, 'decimal')
local uuid_ok, uuid = pcall(require, 'uuid')

local json_ok, json = pcall(require, 'json')
local NULL = json_ok and json.NULL or nil

-- Whether `v` is nil or NULL (box.NULL: a NULL cdata on LuaJIT, a NULL
-- light userdata on Lua 5.4). `==` on a cdata may run its type's __eq
-- (decimal's raises for a nil operand): only under pcall.
local function is_null(v)
    if type(v) ~= 'cdata' then
        return v == nil or rawequal(v, NULL)
    end
    local ok, null = pcall(function() return v == nil end)
    return ok and null
end

local RESERVED = {}
for _, w in ipairs{'null', 'true', 'false', 'yes', 'no', 'on', 'off', 'y', 'n'} do
    RESERVED[w] = true
    RESERVED[w:upper()] = true
    RESERVED[w:sub(1, 1):upper() .. w:sub(2)] = true
end
RESERVED['~'] = true

local ESCAPES = {
    ['\n'] = '\\n', ['\t'] = '\\t', ['\r'] = '\\r', ['"'] = '\\"',
    ['\\'] = '\\\\',
}

local function scalar_string(s)
    if s:find('[%c\127]') then
        return '"' .. s:gsub('[%c\127"\\]', function(c)
            return ESCAPES[c] or string.format('\\x%02x', c:byte())
        end) .. '"'
    end
    local quote = s == '' or RESERVED[s] or tonumber(s) ~= nil
        or s:find('^%s') or s:find('%s$')
        or s:find('^[,%[%]{}#&%*!|>\'"%%@`]')
        or s:find('^[-?:]%s') or s:find('^[-?:]$')
        or s:find(': ') or s:find(':$') or s:find(' #')
    if quote then
        return "'" .. s:gsub("'", "''") .. "'"
    end
    return s
end

local TWO_63 = 2^63

local function scalar_number(n)
    if n == math.floor(n) and n >= -TWO_63 and n < 2 * TWO_63 then
        return string.format('%.0f', n)
    end
    return string.format('%.14g', n)
end

-- A table's shape: 'seq' or 'map' and whether it is flow style; or the
-- value its __serialize function gives in its place.
local function shape(t)
    local mt = getmetatable(t)
    -- An error object shows as its message, as master's error_serialize.
    if type(mt) == 'table' and rawget(mt, '__tostring') ~= nil
            and rawget(t, 'type') ~= nil and rawget(t, 'message') ~= nil then
        return 'value', tostring(t)
    end
    local hint = type(mt) == 'table' and rawget(mt, '__serialize') or nil
    if type(hint) == 'function' then
        return 'value', hint(t)
    elseif hint == 'seq' or hint == 'sequence' or hint == 'array' then
        return 'seq', hint == 'seq'
    elseif hint == 'map' or hint == 'mapping' then
        return 'map', hint == 'map'
    end
    local n, max = 0, 0
    for k in pairs(t) do
        n = n + 1
        if type(k) ~= 'number' or k < 1 or k ~= math.floor(k) then
            return 'map', false
        end
        max = math.max(max, k)
    end
    if max > 2 * n and max > 10 then
        return 'map', false
    end
    return 'seq', false
end

local function seq_length(t)
    local max = 0
    for k in pairs(t) do
        if type(k) == 'number' and k > max and k == math.floor(k) then
            max = k
        end
    end
    return max
end

local scalar

-- The flow form of any value (one line).
local function flow(v, depth)
    if type(v) ~= 'table' then
        return scalar(v)
    end
    if depth > 32 then
        return scalar(tostring(v))
    end
    local kind, arg = shape(v)
    if kind == 'value' then
        return flow(arg, depth + 1)
    end
    local items = {}
    if kind == 'seq' then
        for i = 1, seq_length(v) do
            items[#items + 1] = flow(v[i], depth + 1)
        end
        return '[' .. table.concat(items, ', ') .. ']'
    end
    for k, x in pairs(v) do
        items[#items + 1] = flow(k, depth + 1) .. ': ' .. flow(x, depth + 1)
    end
    return '{' .. table.concat(items, ', ') .. '}'
end

function scalar(v)
    local t = type(v)
    if is_null(v) then
        return 'null'
    elseif decimal_ok and decimal.is_decimal(v) or uuid_ok and uuid.is_uuid(v) then
        -- A plain scalar, as Tarantool's encoder writes a decimal or a
        -- uuid (MsgPack extensions).
        return tostring(v)
    elseif t == 'boolean' then
        return tostring(v)
    elseif t == 'number' then
        return scalar_number(v)
    elseif t == 'string' then
        return scalar_string(v)
    elseif t == 'cdata' and ffi_ok then
        if ffi.istype('int64_t', v) or ffi.istype('uint64_t', v) then
            return (tostring(v):gsub('U?LL$', ''))
        elseif ffi.istype('bool', v) then
            return tostring(v == true)
        end
    elseif t == 'table' then
        return flow(v, 0)
    end
    return scalar_string(tostring(v))
end

-- `v` with its __serialize functions applied, its kind ('scalar', 'seq'
-- or 'map') and whether it is flow style.
local function resolve(v, depth)
    while type(v) == 'table' and depth <= 32 do
        local kind, arg = shape(v)
        if kind ~= 'value' then
            return v, kind, arg
        end
        v, depth = arg, depth + 1
    end
    return v, 'scalar', false
end

local block

-- Appends to `out` the lines of `v` at `indent` when it is a non-empty
-- block collection and returns true; else returns its inline form.
local function lines_or_inline(out, v, indent, depth, seq_indent)
    local x, kind, is_flow = resolve(v, depth)
    if kind == 'scalar' then
        -- An empty string is an empty plain scalar in block context, as
        -- libyaml writes it for Tarantool (`- `); flow style quotes it.
        return rawequal(x, '') and '' or scalar(x)
    end
    if is_flow or next(x) == nil or depth > 32 then
        return flow(x, depth)
    end
    block(out, x, kind, kind == 'seq' and seq_indent or indent, depth)
    return true
end

function block(out, t, kind, indent, depth)
    local pad = string.rep(' ', indent)
    if kind == 'seq' then
        for i = 1, seq_length(t) do
            local sub = {}
            local r = lines_or_inline(sub, t[i], indent + 2, depth + 1, indent + 2)
            if r == true then
                sub[1] = pad .. '- ' .. sub[1]:sub(indent + 3)
                for _, line in ipairs(sub) do
                    out[#out + 1] = line
                end
            else
                out[#out + 1] = pad .. '- ' .. r
            end
        end
        return
    end
    for k, v in pairs(t) do
        local key = pad .. scalar(k) .. ':'
        local sub = {}
        local r = lines_or_inline(sub, v, indent + 2, depth + 1, indent)
        if r == true then
            out[#out + 1] = key
            for _, line in ipairs(sub) do
                out[#out + 1] = line
            end
        else
            out[#out + 1] = key .. ' ' .. r
        end
    end
end

-- The document of the `n` values in `values`.
return function(values, n)
    local out = { '---' }
    for i = 1, n do
        local sub = {}
        local r = lines_or_inline(sub, values[i], 2, 0, 2)
        if r == true then
            sub[1] = '- ' .. sub[1]:sub(3)
            for _, line in ipairs(sub) do
                out[#out + 1] = line
            end
        else
            out[#out + 1] = '- ' .. r
        end
    end
    out[#out + 1] = '...'
    return table.concat(out, '\n') .. '\n'
end
