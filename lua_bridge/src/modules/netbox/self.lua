-- net.box.self: a connection to this very instance, with no socket
-- (master's this_module.self in src/box/lua/net_box.lua): call and eval
-- run the function or the code in the calling fiber, as a CALL or EVAL
-- of the server would, with its errors as error objects; ping,
-- wait_connected and is_connected are true at once. Called by
-- net_box.lua with its check_remote_arg and net.box.lib's error maker;
-- returns the object.
--
-- Differences from master: no transaction to roll back on an error (no
-- storage); `self.space` is box.space (empty).

local check_remote_arg, lib_error = ...
local msgpack = require('msgpack')
local unpack = unpack or table.unpack
local loadstring = loadstring or load

local E_PROC_LUA, E_NO_SUCH_PROC = 32, 33

local function raise(code, msg)
    error(lib_error(code, msg), 3)
end

local function check_args(args, method)
    if args ~= nil and type(args) ~= 'table' then
        error(('Use remote:%s(%s, {arg1, arg2, ...}, opts) instead of ' ..
               'remote:%s(%s, arg1, arg2, ...)'):format(
              method, method == 'call' and 'func_name' or 'expression',
              method, method == 'call' and 'func_name' or 'expression'), 3)
    end
end

-- master's handle_eval_result: an error becomes ER_PROC_LUA with its
-- text; cdata results go through MessagePack, as over the wire.
local function handle_eval_result(status, ...)
    if not status then
        -- a box error too: its message, code ER_PROC_LUA
        raise(E_PROC_LUA, tostring((...)))
    end
    local n = select('#', ...)
    local results = {...}
    for i = 1, n do
        if type(results[i]) == 'cdata' then
            results[i] = msgpack.decode(msgpack.encode(results[i]))
        end
    end
    return unpack(results, 1, n)
end

-- box_lua_find (src/box/lua/call.c): `a.b.c`, `obj:method` from _G;
-- the function and the object of a method, or nil.
local function find(name)
    local head, rest = name:match('^([^.:]*)(.*)$')
    local v = _G[head]
    local obj
    while rest ~= '' do
        local t = type(v)
        if t ~= 'table' and t ~= 'userdata' then
            return nil
        end
        local delim, part, more = rest:match('^([.:])([^.:]*)(.*)$')
        if delim == nil then
            return nil
        end
        if delim == ':' then
            if more ~= '' then
                return nil
            end
            obj = v
        end
        v = v[part]
        rest = more
    end
    if type(v) ~= 'function' and type(v) ~= 'table' then
        return nil
    end
    return v, obj
end

local self = {
    ping = function() return true end,
    reload_schema = function() end,
    close = function() end,
    timeout = function(s) return s end,
    wait_connected = function() return true end,
    is_connected = function() return true end,
    call = function(remote, proc_name, args)
        check_remote_arg(remote, 'call')
        check_args(args, 'call')
        args = args or {}
        proc_name = tostring(proc_name)
        local proc, obj = find(proc_name)
        if proc == nil then
            raise(E_NO_SUCH_PROC, ("Procedure '%s' is not defined"):format(proc_name))
        end
        if obj ~= nil then
            return handle_eval_result(pcall(proc, obj, unpack(args)))
        end
        return handle_eval_result(pcall(proc, unpack(args)))
    end,
    eval = function(remote, expr, args)
        check_remote_arg(remote, 'eval')
        check_args(args, 'eval')
        args = args or {}
        if type(expr) == 'number' then expr = tostring(expr) end
        local proc, errmsg = loadstring(expr)
        if not proc then
            proc, errmsg = loadstring('return ' .. expr)
        end
        if not proc then
            raise(E_PROC_LUA, errmsg)
        end
        return handle_eval_result(pcall(proc, unpack(args)))
    end,
}

return setmetatable(self, {
    __index = function(_, key)
        if key == 'space' then
            return rawget(_G, 'box') and box.space
        end
        return nil
    end,
})
