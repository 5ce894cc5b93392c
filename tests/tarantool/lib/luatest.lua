-- A `luatest` module for running Tarantool's own luatest tests
-- (test/app-luatest/*_test.lua) on luafiber: the part of luatest's API
-- those tests use (groups with params and hooks, the assertions, skip_if,
-- helpers.matrix), written here. luatest_run.lua loads a test file and runs
-- its groups; each test is recorded like a tap assertion (lib/tap.lua):
-- "ok<TAB>group/test" or "not ok<TAB>group/test" in LUAFIBER_TAP_LOG.
--
-- `luatest.server` (a separate Tarantool instance in luatest) is
-- luatest_server.lua: it runs `exec` functions in this process.

local t = {groups = {}}

local unpack = table.unpack or unpack

-- A failed assertion: a table so that the runner tells it from an error.
local Failure = {}
Failure.__index = Failure
Failure.__tostring = function(f) return f.message end

local function fail(msg, level)
    error(setmetatable({message = msg}, Failure), (level or 1) + 2)
end

-- A skip: raised by skip_if.
local Skip = {}

local function show(v, seen)
    if type(v) ~= 'table' then
        return type(v) == 'string' and string.format('%q', v) or tostring(v)
    end
    seen = seen or {}
    if seen[v] then return '<cycle>' end
    seen[v] = true
    local parts = {}
    for k, x in pairs(v) do
        parts[#parts + 1] = '[' .. show(k, seen) .. '] = ' .. show(x, seen)
    end
    table.sort(parts)
    return '{' .. table.concat(parts, ', ') .. '}'
end

-- Deep equality, as luatest's `assert_equals` (tables compared by content,
-- other values with ==; a value with __eq compares with it).
local function equals(a, b, seen)
    if a == b then return true end
    if type(a) ~= 'table' or type(b) ~= 'table' then return false end
    seen = seen or {}
    if seen[a] == b then return true end
    seen[a] = b
    for k, v in pairs(a) do
        if not equals(v, b[k], seen) then return false end
    end
    for k in pairs(b) do
        if a[k] == nil then return false end
    end
    return true
end

-- Whether `actual` has every key of `expected` with an equal value.
local function covers(actual, expected)
    if type(actual) ~= 'table' then return false end
    for k, v in pairs(expected) do
        if not equals(actual[k], v) then return false end
    end
    return true
end

function t.assert(v, msg, ...)
    if not v then fail(msg and tostring(msg) or 'expected a truthy value, got ' .. show(v)) end
    return v, msg, ...
end

function t.assert_not(v, msg)
    if v then fail(msg or 'expected a falsy value, got ' .. show(v)) end
end

function t.assert_equals(a, b, msg)
    if not equals(a, b) then
        fail((msg and msg .. ': ' or '') .. 'expected ' .. show(b) .. ', got ' .. show(a))
    end
end

function t.assert_not_equals(a, b, msg)
    if equals(a, b) then fail(msg or 'expected not ' .. show(b)) end
end

function t.assert_is(a, b, msg)
    if a ~= b then fail(msg or 'expected ' .. show(b) .. ' (same object), got ' .. show(a)) end
end

function t.assert_nil(v, msg)
    if v ~= nil then fail(msg or 'expected nil, got ' .. show(v)) end
end

function t.assert_not_nil(v, msg)
    if v == nil then fail(msg or 'expected a value, got nil') end
end

function t.assert_almost_equals(a, b, delta, msg)
    if type(a) ~= 'number' or math.abs(a - b) > delta then
        fail(msg or string.format('expected %s +- %s, got %s', show(b), show(delta), show(a)))
    end
end

function t.assert_gt(a, b, msg)
    if not (a > b) then fail(msg or show(a) .. ' is not > ' .. show(b)) end
end

function t.assert_ge(a, b, msg)
    if not (a >= b) then fail(msg or show(a) .. ' is not >= ' .. show(b)) end
end

function t.assert_lt(a, b, msg)
    if not (a < b) then fail(msg or show(a) .. ' is not < ' .. show(b)) end
end

function t.assert_le(a, b, msg)
    if not (a <= b) then fail(msg or show(a) .. ' is not <= ' .. show(b)) end
end

function t.assert_type(v, ty, msg)
    if type(v) ~= ty then fail(msg or 'expected a ' .. ty .. ', got ' .. type(v)) end
end

function t.assert_str_contains(s, part, msg)
    if type(s) ~= 'string' or not s:find(part, 1, true) then
        fail(msg or show(s) .. ' does not contain ' .. show(part))
    end
end

function t.assert_covers(actual, expected, msg)
    if not covers(actual, expected) then
        fail(msg or show(actual) .. ' does not cover ' .. show(expected))
    end
end

-- The message of an error value, as luatest takes it (tostring of an
-- error object).
local function message(err)
    if type(err) == 'table' and getmetatable(err) == Failure then
        return err.message
    end
    return tostring(err)
end

local function raise_of(fn, ...)
    local ok, err = pcall(fn, ...)
    if ok then fail('expected an error, none was raised', 2) end
    return err
end

function t.assert_error(fn, ...)
    raise_of(fn, ...)
end

function t.assert_error_msg_equals(expected, fn, ...)
    local err = raise_of(fn, ...)
    -- luatest strips the "file:line: " of a string error.
    local msg = message(err)
    if type(err) == 'string' then msg = msg:gsub('^[^:]*:%d+: ', '') end
    if msg ~= expected then
        fail('expected error ' .. show(expected) .. ', got ' .. show(msg))
    end
end

function t.assert_error_msg_content_equals(expected, fn, ...)
    local msg = message(raise_of(fn, ...)):gsub('^.-:%d+: ', '')
    if msg ~= expected then
        fail('expected error ' .. show(expected) .. ', got ' .. show(msg))
    end
end

function t.assert_error_msg_contains(part, fn, ...)
    local msg = message(raise_of(fn, ...))
    if not msg:find(part, 1, true) then
        fail('error ' .. show(msg) .. ' does not contain ' .. show(part))
    end
end

function t.assert_error_covers(expected, fn, ...)
    local err = raise_of(fn, ...)
    local fields = err
    if type(err) == 'table' and type(err.unpack) == 'function' then
        fields = err:unpack()
    end
    if not covers(fields, expected) then
        fail('error ' .. show(fields) .. ' does not cover ' .. show(expected))
    end
end

function t.skip_if(cond, msg)
    if cond then error(setmetatable({message = msg}, Skip), 2) end
end

function t.skip(msg)
    error(setmetatable({message = msg}, Skip), 2)
end

t.helpers = {}

-- All combinations of the values of `params` (luatest's helpers.matrix).
function t.helpers.matrix(params)
    local keys = {}
    for k in pairs(params) do keys[#keys + 1] = k end
    table.sort(keys)
    local out = {{}}
    for _, k in ipairs(keys) do
        local next_out = {}
        for _, base in ipairs(out) do
            for _, v in ipairs(params[k]) do
                local c = {}
                for bk, bv in pairs(base) do c[bk] = bv end
                c[k] = v
                next_out[#next_out + 1] = c
            end
        end
        out = next_out
    end
    return out
end

-- A group: tests are its `test_*` fields; hooks as luatest's.
function t.group(name, params)
    local g = {name = name or 'group', params_list = params, hooks = {
        before_all = {}, after_all = {}, before_each = {}, after_each = {},
        before_test = {}, after_test = {},
    }}
    for _, h in ipairs({'before_all', 'after_all', 'before_each', 'after_each'}) do
        g[h] = function(fn) table.insert(g.hooks[h], fn) end
    end
    for _, h in ipairs({'before_test', 'after_test'}) do
        g[h] = function(test, fn) table.insert(g.hooks[h], {test, fn}) end
    end
    table.insert(t.groups, g)
    return g
end

t.Failure, t.Skip, t.show, t.message = Failure, Skip, show, message
t.unpack = unpack

return t
