-- A `luatest` module for running Tarantool's own luatest tests
-- (test/app-luatest) on luafiber, written here: `t.group()` (with
-- parameterised groups), `before_all/after_all/before_each/after_each`,
-- `t.skip`/`t.skip_if`, and the assertions those tests use.
--
-- Each test function is one recorded assertion, named "GROUP.TEST" (as
-- luatest names it), in the file of LUAFIBER_TAP_LOG ("ok<TAB>name" or
-- "not ok<TAB>name", as lib/tap.lua writes): run.sh reads it. After the
-- chunk returns, the runner (run.sh) calls `require('luatest').run()`.

local ffi_ok, ffi = pcall(require, 'ffi')

-- What luatest's own ffi_io.lua declares (the popen test closes a pipe's
-- fds with ffi.C.close).
if ffi_ok then
    if not pcall(function() return ffi.C.close end) then
        pcall(ffi.cdef, 'int close(int fildes);')
    end
end

-- A box error object: a cdata in Tarantool, a table with a metatable
-- here (docs/lua/box.md); assert_type(err, 'cdata') takes one as a cdata.
local function is_error_object(v)
    local mt = type(v) == 'table' and getmetatable(v)
    return mt and mt.__tostring ~= nil and type(v.type) == 'string'
        and v.message ~= nil or false
end

local t = {}
local groups = {}

local log_path = os.getenv('LUAFIBER_TAP_LOG')
local log_file = log_path and io.open(log_path, 'a')

local function record(passed, name, err)
    io.write(passed and 'ok' or 'not ok', ' - ', name, '\n')
    if not passed then
        io.write('#   ', tostring(err):gsub('\n', '\n#   '), '\n')
    end
    if log_file ~= nil then
        log_file:write(passed and 'ok' or 'not ok', '\t', name:gsub('[\t\n]', ' '), '\n')
        log_file:flush()
    end
end

-- Assertion failures are tables, so the runner tells them from errors.
local Failure = {}
Failure.__index = Failure
Failure.__tostring = function(f) return f.message end

local function fail(msg, level)
    error(setmetatable({message = msg}, Failure), (level or 1) + 1)
end

local SKIP = {}

function t.skip(msg)
    error({[SKIP] = true, message = msg}, 2)
end

function t.skip_if(cond, msg)
    if cond then t.skip(msg) end
end

function t.fail(msg)
    fail(msg, 2)
end

function t.fail_if(cond, msg)
    if cond then fail(msg, 2) end
end

-- `t.tarantool.skip_if_not_debug()`: luafiber has no debug build's error
-- injection (box.error.injection), so such a test skips.
t.tarantool = {
    skip_if_not_debug = function()
        t.skip('luafiber has no error injection (a debug build\'s)')
    end,
}

local function show(v)
    if type(v) == 'string' then return string.format('%q', v) end
    if type(v) ~= 'table' then return tostring(v) end
    local parts = {}
    for k, x in pairs(v) do
        parts[#parts + 1] = '[' .. show(k) .. '] = ' .. show(x)
        if #parts > 20 then parts[#parts + 1] = '...' break end
    end
    return '{' .. table.concat(parts, ', ') .. '}'
end

local function is_cdata_num(v)
    return ffi_ok and type(v) == 'cdata' and (ffi.istype('int64_t', v)
        or ffi.istype('uint64_t', v))
end

-- luatest's deep comparison: tables by contents (metatables ignored),
-- numbers and 64-bit cdata by value.
local function equals(a, b, seen)
    if a == b then return true end
    if type(a) == 'number' and is_cdata_num(b) or is_cdata_num(a) and type(b) == 'number' then
        return a == b
    end
    if type(a) ~= 'table' or type(b) ~= 'table' then
        return type(a) == 'number' and type(b) == 'number' and a ~= a and b ~= b
    end
    seen = seen or {}
    if seen[a] == b then return true end
    seen[a] = b
    for k, v in pairs(a) do
        if not equals(v, rawget(b, k), seen) then return false end
    end
    for k in pairs(b) do
        if rawget(a, k) == nil then return false end
    end
    return true
end
t.equals = equals

function t.assert(v, msg)
    if not v then fail(msg or ('expected a truthy value, got ' .. show(v)), 2) end
    return v
end
t.assert_not = function(v, msg)
    if v then fail(msg or ('expected a falsy value, got ' .. show(v)), 2) end
end
function t.assert_equals(got, expected, msg)
    if not equals(got, expected) then
        fail((msg and msg .. ': ' or '') .. 'expected: ' .. show(expected) ..
             ', actual: ' .. show(got), 2)
    end
end
function t.assert_not_equals(got, expected, msg)
    if equals(got, expected) then
        fail((msg and msg .. ': ' or '') .. 'did not expect ' .. show(got), 2)
    end
end
function t.assert_is(got, expected, msg)
    if got ~= expected then
        fail((msg or '') .. ' expected identical ' .. show(expected) .. ', got ' .. show(got), 2)
    end
end
function t.assert_is_not(got, unexpected, msg)
    if rawequal(got, unexpected) then
        fail((msg or '') .. ' expected not identical to ' .. show(unexpected), 2)
    end
end
function t.assert_type(v, ty, msg)
    if type(v) ~= ty and not (ty == 'cdata' and is_error_object(v)) then
        fail((msg or '') .. ' expected type ' .. ty .. ', got ' .. type(v), 2)
    end
end
function t.assert_nil(v, msg)
    if v ~= nil then fail((msg or '') .. ' expected nil, got ' .. show(v), 2) end
end
function t.assert_not_nil(v, msg)
    if v == nil then fail(msg or 'expected non-nil', 2) end
end
function t.assert_str_contains(s, sub, regexp)
    if type(s) ~= 'string' or not s:find(sub, 1, not regexp) then
        fail(show(s) .. ' does not contain ' .. show(sub), 2)
    end
end
function t.assert_str_matches(s, pattern)
    if type(s) ~= 'string' or not s:match('^' .. pattern .. '$') then
        fail(show(s) .. ' does not match ' .. show(pattern), 2)
    end
end
function t.assert_items_equals(a, b)
    local function count(x)
        local c = {}
        for _, v in pairs(x) do c[#c + 1] = v end
        return c
    end
    local ca, cb = count(a), count(b)
    if #ca ~= #cb then fail('item counts differ: ' .. show(a) .. ' vs ' .. show(b), 2) end
    local used = {}
    for _, v in ipairs(ca) do
        local found = false
        for j, w in ipairs(cb) do
            if not used[j] and equals(v, w) then used[j], found = true, true break end
        end
        if not found then fail('items differ: ' .. show(a) .. ' vs ' .. show(b), 2) end
    end
end

-- The message of an error, as luatest reads it: a string loses the
-- "file:line: " position Lua added; an error object gives its message.
local function message_of(err)
    if type(err) == 'string' then
        return (err:gsub('^[^:\n]*:%d+: ', ''))
    end
    if type(err) == 'table' and rawget(err, 'message') ~= nil then
        return tostring(rawget(err, 'message'))
    end
    return tostring(err)
end

local function call_for_error(fn, ...)
    local ok, err = pcall(fn, ...)
    if ok then fail('expected an error, none was raised', 3) end
    if getmetatable(err) == Failure then error(err, 0) end
    return err
end

function t.assert_error(fn, ...)
    call_for_error(fn, ...)
end
function t.assert_error_msg_equals(msg, fn, ...)
    local got = message_of(call_for_error(fn, ...))
    if got ~= msg then fail('error message: expected ' .. show(msg) .. ', got ' .. show(got), 2) end
end
function t.assert_error_msg_content_equals(msg, fn, ...)
    local err = call_for_error(fn, ...)
    local got = message_of(err)
    if got ~= msg then
        fail('error message: expected ' .. show(msg) .. ', got ' .. show(got), 2)
    end
end
function t.assert_error_msg_contains(sub, fn, ...)
    local got = message_of(call_for_error(fn, ...))
    if not got:find(sub, 1, true) then
        fail('error message ' .. show(got) .. ' does not contain ' .. show(sub), 2)
    end
end
function t.assert_error_msg_matches(pattern, fn, ...)
    -- luatest matches the whole message, its position included; a pattern
    -- without one matches the message alone.
    local err = call_for_error(fn, ...)
    local got = message_of(err)
    local whole = type(err) == 'string' and err or got
    if not whole:match('^' .. pattern .. '$') and not got:match('^' .. pattern .. '$') then
        fail('error message ' .. show(got) .. ' does not match ' .. show(pattern), 2)
    end
end
function t.assert_error_covers(expected, fn, ...)
    local err = call_for_error(fn, ...)
    local u = type(err) == 'table' and err or {message = message_of(err)}
    if type(err) == 'table' and type(err.unpack) == 'function' then
        u = err:unpack()
    end
    for k, v in pairs(expected) do
        if not equals(u[k], v) then
            fail('error field ' .. tostring(k) .. ': expected ' .. show(v) .. ', got ' .. show(u[k]), 2)
        end
    end
end
function t.assert_covers(actual, expected, msg)
    for k, v in pairs(expected) do
        if not equals(actual[k], v) then
            fail((msg or '') .. ' field ' .. tostring(k) .. ': expected ' .. show(v) ..
                 ', got ' .. show(actual[k]), 2)
        end
    end
end
t.assert_le = function(a, b) if not (a <= b) then fail(show(a) .. ' > ' .. show(b), 2) end end
t.assert_lt = function(a, b) if not (a < b) then fail(show(a) .. ' >= ' .. show(b), 2) end end
t.assert_ge = function(a, b) if not (a >= b) then fail(show(a) .. ' < ' .. show(b), 2) end end
t.assert_gt = function(a, b) if not (a > b) then fail(show(a) .. ' <= ' .. show(b), 2) end end
t.assert_almost_equals = function(a, b, margin)
    if math.abs(a - b) > margin then fail(show(a) .. ' is not within ' .. margin .. ' of ' .. show(b), 2) end
end

-- Parameterised groups: every combination of the values, each a group
-- named "NAME.k1:v1.k2:v2" (keys in order), as luatest does.
local function combinations(params)
    local keys = {}
    for k in pairs(params) do keys[#keys + 1] = k end
    table.sort(keys)
    local out = {{}}
    for _, k in ipairs(keys) do
        local next_out = {}
        -- luatest goes over the values with `pairs`: a nil in the list
        -- (`{nil, 'http'}`) is no value; here in index order.
        local idx = {}
        for i in pairs(params[k]) do idx[#idx + 1] = i end
        table.sort(idx)
        for _, c in ipairs(out) do
            for _, i in ipairs(idx) do
                local v = params[k][i]
                local d = {}
                for kk, vv in pairs(c) do d[kk] = vv end
                d[k] = v
                next_out[#next_out + 1] = d
            end
        end
        out = next_out
    end
    return out, keys
end

-- `t.helpers.matrix(params)`: the parameter matrix, which t.group expands.
-- `t.helpers.retrying(opts, fn, ...)`: calls `fn` until it does not
-- raise, every `opts.delay` seconds (0.1) for at most `opts.timeout` (5);
-- then raises its last error. A skip goes through at once.
t.helpers = {
    matrix = function(params) return params end,
    retrying = function(opts, fn, ...)
        local clock, fiber = require('clock'), require('fiber')
        local deadline = clock.monotonic() + (opts.timeout or 5)
        while true do
            local res = (function(...)
                return {n = select('#', ...), ...}
            end)(pcall(fn, ...))
            local e = res[2]
            if res[1] or (type(e) == 'table' and e[SKIP]) or
               clock.monotonic() > deadline then
                if not res[1] then error(e, 0) end
                return unpack(res, 2, res.n)
            end
            fiber.sleep(opts.delay or 0.1)
        end
    end,
}

local HOOKS = {before_all = true, after_all = true, before_each = true,
               after_each = true, before_test = true, after_test = true}

function t.group(name, params)
    name = name or (arg and arg[0] or 'group'):match('([^/]*)_test%.lua$') or 'group'
    local g = {name = name, hooks = {}, order = {}, params = params}
    local function add(kind, a, b)
        g.hooks[kind] = g.hooks[kind] or {}
        if type(a) == 'function' then
            table.insert(g.hooks[kind], {fn = a})
        else
            table.insert(g.hooks[kind], {test = a, fn = b})
        end
    end
    local registrars = {}
    for h in pairs(HOOKS) do
        registrars[h] = function(a, b) add(h, a, b) end
    end
    setmetatable(g, {
        __index = registrars,
        __newindex = function(self, k, v)
            if HOOKS[k] and type(v) == 'function' then
                -- `g.before_each = function(cg) ... end`, the old style
                add(k, v)
                return
            end
            if type(k) == 'string' and k:match('^test') and type(v) == 'function' then
                table.insert(self.order, k)
            end
            rawset(self, k, v)
        end,
    })
    table.insert(groups, g)
    return g
end

local function run_hooks(g, kind, test_name, cg)
    for _, h in ipairs(g.hooks[kind] or {}) do
        if h.test == nil or h.test == test_name then h.fn(cg) end
    end
end

local function run_group(g, cg, label)
    local ok, err = pcall(run_hooks, g, 'before_all', nil, cg)
    for _, name in ipairs(g.order) do
        local full = label .. '.' .. name
        if not ok then
            record(false, full, 'before_all failed: ' .. tostring(err))
        else
            local passed, e = pcall(function()
                run_hooks(g, 'before_each', nil, cg)
                run_hooks(g, 'before_test', name, cg)
                local tok, terr = pcall(g[name], cg)
                run_hooks(g, 'after_test', name, cg)
                run_hooks(g, 'after_each', nil, cg)
                if not tok then error(terr, 0) end
            end)
            if not passed and type(e) == 'table' and e[SKIP] then
                record(true, full .. ' # skip', nil)
            else
                record(passed, full, e)
            end
        end
    end
    pcall(run_hooks, g, 'after_all', nil, cg)
end

-- A parameter's value in a test's name: a function by the order it first
-- appears (its address changes from run to run).
local fn_ids, fn_count = {}, 0
local function param_name(v)
    if type(v) ~= 'function' then return tostring(v) end
    if fn_ids[v] == nil then
        fn_count = fn_count + 1
        fn_ids[v] = fn_count
    end
    return 'function' .. fn_ids[v]
end

-- Runs every group defined so far (run.sh calls it after the test file).
function t.run()
    for _, g in ipairs(groups) do
        if g.params == nil then
            run_group(g, g, g.name)
        else
            local combos, keys
            if g.params[1] ~= nil then
                -- A list of parameter sets, as luatest also takes.
                combos, keys = g.params, {}
                local seen = {}
                for _, c in ipairs(combos) do
                    for k in pairs(c) do
                        if not seen[k] then seen[k] = true; keys[#keys + 1] = k end
                    end
                end
                table.sort(keys)
            else
                combos, keys = combinations(g.params)
            end
            for _, c in ipairs(combos) do
                local parts = {g.name}
                for _, k in ipairs(keys) do parts[#parts + 1] = k .. ':' .. param_name(c[k]) end
                local cg = setmetatable({params = c, name = table.concat(parts, '.')},
                                        {__index = g})
                run_group(g, cg, cg.name)
            end
        end
    end
end

return t
