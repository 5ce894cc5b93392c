-- What Tarantool's tests of `log` and `json` touch outside those modules,
-- for running them on luafiber unchanged (run.sh loads this before each
-- test). Each part is a known difference, not a luafiber feature:
--
-- 1. luafiber's modules raise error objects (tostring gives Tarantool's
--    message) where Tarantool raises strings: the string functions the
--    tests call on an error (`string.find(err, ...)`) take its message.
-- 2. (none: luafiber has Tarantool's string extensions.)
-- 3. `box`: luafiber's own (docs/lua/box.md); only where a build has no
--    `box` global, a stand-in: what `box.cfg` does with the log options
--    (it hands them to `log.cfg`, as Tarantool's box.cfg does), `box.NULL`
--    and `box.info.pid`.
-- 4. `box.tuple.new` (msgpack tests only pass one where a wrong argument
--    is wanted): a cdata of an unrelated type. luafiber has no tuples.
-- 5. `fun` (luafun): `map` over a table's keys and `totable`, as the
--    msgpack luatest builds its parameters, and `iter(t):length()`, as the
--    popen test counts its cases; `console`: a module whose
--    completion handler raises (luafiber's console has none).
-- 6. Lua 5.4: Lua 5.1's global `unpack` (the tests call it).
-- 7. On LuaJIT, what Tarantool declares to the FFI or adds to `os` and
--    the tests call: `ffi.C.getuid` and `os.setenv` (Tarantool's
--    `src/lua/env.lua`, through the FFI here). luafiber has neither.
-- 8. `require('compat')` (this file) gives Tarantool's `compat` options
--    the tests set: each is `{current = ..., default = ...}`; assigning a
--    mode records it and changes nothing (luafiber has master's new
--    behaviours only).
-- 10. `errno()` right after an FFI call: Tarantool's is `ffi.errno()`;
--    luafiber's is the copy its own modules set when they fail
--    (docs/lua/errno.md). The popen test reads `errno()` after
--    `ffi.C.kill`: on LuaJIT, `errno()` gives `ffi.errno()` while luafiber's
--    copy is 0.

unpack = unpack or table.unpack

local function is_error_object(v)
    local mt = type(v) == 'table' and getmetatable(v)
    return mt and mt.__tostring ~= nil and rawget(v, 'type') ~= nil
        and rawget(v, 'message') ~= nil
end

for _, name in ipairs{'find', 'match', 'gmatch', 'gsub', 'sub', 'len',
                      'lower', 'upper', 'byte', 'rep', 'reverse'} do
    local f = string[name]
    string[name] = function(s, ...)
        if is_error_object(s) then
            s = tostring(s)
        end
        return f(s, ...)
    end
end

local BOX2LOG = {
    log = 'log', log_level = 'level', log_format = 'format',
    log_nonblock = 'nonblock', log_modules = 'modules',
}

local ok, msgpack = pcall(require, 'msgpack')
local ffi_ok, ffi = pcall(require, 'ffi')
local function tuple_new()
    return ffi_ok and ffi.new('int[1]') or newproxy and newproxy() or {}
end
if type(rawget(_G, 'box')) == 'table' then
    rawset(box, 'tuple', {new = tuple_new})
else
box = {
    NULL = ok and msgpack.NULL or nil,
    info = setmetatable({}, {__index = function(_, k)
        if k == 'pid' then return require('log').pid() end
    end}),
    tuple = {
        new = function()
            return ffi_ok and ffi.new('int[1]') or newproxy and newproxy() or {}
        end,
    },
    cfg = setmetatable({}, {
        __call = function(_, cfg)
            local log_cfg = {}
            for k, v in pairs(cfg) do
                if BOX2LOG[k] ~= nil then
                    log_cfg[BOX2LOG[k]] = v
                end
            end
            local log = require('log')
            local ok, err = pcall(log.cfg, log_cfg)
            if not ok then
                -- box.cfg names its own options
                error(tostring(err):gsub("option '(%w+)'", function(o)
                    for b, l in pairs(BOX2LOG) do
                        if l == o then return "option '" .. b .. "'" end
                    end
                    return "option '" .. o .. "'"
                end), 2)
            end
        end,
        __index = function(_, k)
            if BOX2LOG[k] ~= nil then
                return require('log').cfg[BOX2LOG[k]]
            end
        end,
    }),
}
end

if ffi_ok then
    pcall(ffi.cdef, [[
        unsigned int getuid(void);
        int setenv(const char *name, const char *value, int overwrite);
        int unsetenv(const char *name);
    ]])
    os.setenv = os.setenv or function(name, value)
        if value == nil then
            ffi.C.unsetenv(name)
        else
            ffi.C.setenv(name, tostring(value), 1)
        end
    end
end

package.preload.fun = function()
    return {
        map = function(f, t)
            local keys = {}
            for k in pairs(t) do keys[#keys + 1] = k end
            table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
            local out = {}
            for _, k in ipairs(keys) do out[#out + 1] = f(k, t[k]) end
            return out
        end,
        totable = function(t) return t end,
        -- chain(a, b):tomap(): the pairs of both tables in one map.
        chain = function(...)
            local parts = {...}
            return {tomap = function()
                local out = {}
                for _, t in ipairs(parts) do
                    for k, v in pairs(t) do out[k] = v end
                end
                return out
            end}
        end,
        iter = function(t)
            return {length = function()
                local n = 0
                for _ in pairs(t) do n = n + 1 end
                return n
            end}
        end,
    }
end

-- `checks` (the argument checker Tarantool bundles): the tests call it
-- only to check their own helpers' arguments, so it checks nothing here.
package.preload.checks = function()
    return function() end
end

package.preload.console = function()
    return {
        completion_handler = function()
            error('luafiber has no console completion')
        end,
    }
end

if ffi_ok then
    local errno_mt = getmetatable(require('errno'))
    local call = errno_mt.__call
    errno_mt.__call = function(self, ...)
        local e = call(self, ...)
        if select('#', ...) == 0 and e == 0 then
            return ffi.errno()
        end
        return e
    end
end

local options = {
    fiber_channel_close_mode = {current = 'default', default = 'new'},
    fiber_slice_default = {current = 'default', default = 'new'},
}
return setmetatable({}, {
    __index = options,
    __newindex = function(_, k, v)
        options[k] = options[k] or {default = 'new'}
        options[k].current = v
    end,
})
