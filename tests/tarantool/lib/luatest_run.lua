-- Runs one luatest test file (Tarantool's test/app-luatest/*_test.lua) with
-- lib/luatest.lua: loads it, then runs every group's tests in name order
-- (each params combination of a parametrized group in turn), with the
-- hooks, in the script's main fiber renamed 'luatest' (as luatest's).
-- Each test is recorded in LUAFIBER_TAP_LOG as "ok<TAB>NAME" or "not
-- ok<TAB>NAME", NAME being "group/test" or "group.k=v,.../test"; a skipped
-- test (t.skip_if) is recorded as ok. Exit status 0 when all passed.
--   luafiber luatest_run.lua FILE

local t = require('luatest')
local fiber = require('fiber')

local file = assert(arg[1], 'usage: luatest_run.lua FILE')
local log_path = os.getenv('LUAFIBER_TAP_LOG')
local log_file = log_path and io.open(log_path, 'a')

pcall(function() fiber.self():name('luatest') end)
local chunk = assert(loadfile(file))
chunk()

local failed = 0

local function record(name, ok, why)
    io.write(ok and 'ok' or 'not ok', ' - ', name, why and (': ' .. why) or '', '\n')
    if log_file then
        log_file:write(ok and 'ok' or 'not ok', '\t', (name:gsub('[\t\n]', ' ')), '\n')
        log_file:flush()
    end
    if not ok then failed = failed + 1 end
end

-- Runs `fn(...)`; returns nil on success, else the reason (and whether it
-- is a skip).
local function run(fn, ...)
    local ok, err = xpcall(fn, function(e)
        if type(e) == 'table' and (getmetatable(e) == t.Failure or getmetatable(e) == t.Skip) then
            return e
        end
        return debug.traceback(tostring(e), 2)
    end, ...)
    if ok then return nil end
    if type(err) == 'table' and getmetatable(err) == t.Skip then
        return 'skipped: ' .. tostring(err.message), true
    end
    return t.message(err)
end

local function params_name(p)
    local keys = {}
    for k, v in pairs(p) do
        local s = type(v) == 'function' and 'fn' or tostring(v)
        keys[#keys + 1] = k .. '=' .. s
    end
    table.sort(keys)
    return table.concat(keys, ',')
end

local fn_ids, fn_count = {}, 0
for _, g in ipairs(t.groups) do
    local names = {}
    for k, v in pairs(g) do
        if type(k) == 'string' and k:match('^test') and type(v) == 'function' then
            names[#names + 1] = k
        end
    end
    table.sort(names)
    local combos = g.params_list or {false}
    for _, params in ipairs(combos) do
        local gname = g.name
        if params then
            -- A function in params is named by the order it first appears.
            local p = {}
            for k, v in pairs(params) do
                if type(v) == 'function' then
                    if fn_ids[v] == nil then
                        fn_count = fn_count + 1
                        fn_ids[v] = fn_count
                    end
                    p[k] = 'fn' .. fn_ids[v]
                else
                    p[k] = v
                end
            end
            gname = gname .. '.' .. params_name(p)
        end
        local cg = setmetatable({params = params or {}}, {__index = g})
        for _, h in ipairs(g.hooks.before_all) do run(h, cg) end
        for _, name in ipairs(names) do
            local why
            for _, h in ipairs(g.hooks.before_each) do why = why or run(h, cg) end
            for _, h in ipairs(g.hooks.before_test) do
                if h[1] == name then why = why or run(h[2], cg) end
            end
            local skipped
            if not why then why, skipped = run(g[name], cg) end
            for _, h in ipairs(g.hooks.after_test) do
                if h[1] == name then run(h[2], cg) end
            end
            for _, h in ipairs(g.hooks.after_each) do run(h, cg) end
            record(gname .. '/' .. name, why == nil or skipped, why)
        end
        for _, h in ipairs(g.hooks.after_all) do run(h, cg) end
    end
end

os.exit(failed == 0 and 0 or 1)
