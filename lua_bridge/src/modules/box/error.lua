-- box.error and box.NULL (box, not the server): master's
-- src/box/lua/error.cc (box.error: new, call, last, clear, set, is) over
-- the error objects every luafiber module raises (lua_bridge/src/raw/error.rs:
-- tables with the shared metatable; their methods unpack, raise, match,
-- set_prev and the fields trace, base_type live there).
-- Called with `box` and `box.internal`.
local box, internal = ...

local fiber = require('fiber')

-- The same NULL as msgpack.NULL and json.NULL (a NULL cdata on LuaJIT, a
-- light userdata on Lua 5.4).
box.NULL = require('msgpack').NULL

local error_mt = internal.error_mt()
local errcode = internal.errcode
local errfields = internal.errfields
local getinfo = debug.getinfo
local format = string.format
local select, type, rawget, rawset, setmetatable, getmetatable, pairs =
      select, type, rawget, rawset, setmetatable, getmetatable, pairs

local function is_error(v)
    return type(v) == 'table' and getmetatable(v) == error_mt
end

-- An IllegalParams error object located at `level` above the caller of the
-- public function that calls this (as luaT_error: the user's code).
local function illegal(message, level)
    local e = setmetatable({type = 'IllegalParams', message = message,
                            code = 1, name = 'ILLEGAL_PARAMS'}, error_mt)
    local info = getinfo((level or 1) + 2, 'Sl')
    if info ~= nil and info.currentline and info.currentline > 0 then
        e.file, e.line = info.short_src, info.currentline
    end
    return e
end

-- luaT_error_set_trace: `level` counts from the caller of the public
-- function, which called this from `depth` frames below.
local function set_trace(e, level, depth)
    rawset(e, 'file', nil)
    rawset(e, 'line', nil)
    if level > 0 then
        local info = getinfo(level + depth, 'Sl')
        if info ~= nil and info.currentline and info.currentline > 0 then
            rawset(e, 'file', info.short_src)
            rawset(e, 'line', info.currentline)
        end
    end
end

-- master's box_error_new: ILLEGAL_PARAMS makes an IllegalParams.
local function client_type(code)
    return code == 1 and 'IllegalParams' or 'ClientError'
end

local builtin = {
    type = true, message = true, trace = true, prev = true, base_type = true,
    code = true, reason = true, errno = true, custom_type = true,
    file = true, line = true,
}

-- luaT_error_create: the arguments of box.error.new(...) / box.error(...);
-- nil when they do not fit (the caller raises "bad arguments").
-- `depth` is how many frames below the user's code this runs.
local function create(depth, ...)
    local n = select('#', ...)
    local first = ...
    local t = type(first)
    local e
    local level = 1
    if n >= 1 and (t == 'number' or t == 'string') then
        local reason, shift
        local code, custom = 0, nil
        local fields
        if t == 'number' then
            code = first
            reason = errcode(code)
            fields = errfields(code)
            local level_arg = select(#fields + 2, ...)
            if n >= #fields + 2 and level_arg ~= nil then
                if type(level_arg) ~= 'number' then
                    return nil
                end
                level = level_arg
            end
            shift = 2
        else
            custom = first
            reason = select(2, ...)
            if type(reason) ~= 'string' then
                return nil
            end
            shift = 3
        end
        if n >= 2 then
            reason = format(reason, select(shift, ...))
        elseif reason:find('%', 1, true) then
            return nil
        end
        e = {type = custom or client_type(code), code = code, message = reason}
        if custom then
            e.base_type, e.custom_type = 'CustomError', custom
        else
            e.name = select(2, errcode(code)) or 'UNKNOWN'
        end
        if fields ~= nil then
            for i = 1, #fields do
                local name = fields[i]
                if i + 1 > n then
                    break
                end
                if name ~= '' then
                    e[name] = (select(i + 1, ...))
                end
            end
        end
    elseif n >= 1 and t == 'table' then
        if n > 2 then
            return nil
        end
        local level_arg = select(2, ...)
        if level_arg ~= nil then
            if type(level_arg) ~= 'number' then
                return nil
            end
            level = level_arg
        end
        local code = tonumber(rawget(first, 'code') or first.code) or 0
        local custom = first.type
        if custom ~= nil then
            custom = tostring(custom)
        end
        local reason = first[1]
        if type(reason) ~= 'string' and type(reason) ~= 'number' then
            reason = first.message
        end
        if type(reason) ~= 'string' and type(reason) ~= 'number' then
            reason = first.reason
        end
        if type(reason) ~= 'string' and type(reason) ~= 'number' then
            reason = custom == nil and errcode(code) or ''
        end
        local prev = first.prev
        if prev ~= nil and not is_error(prev) then
            error(illegal(format("Invalid argument 'prev' (error expected, " ..
                                 "got %s)", type(prev)), depth))
        end
        e = {type = custom or client_type(code), code = code,
             message = tostring(reason), prev = prev}
        for k, v in pairs(first) do
            if type(k) == 'string' and not builtin[k] then
                e[k] = v
            end
        end
        if custom ~= nil then
            e.base_type, e.custom_type = 'CustomError', custom
        else
            e.name = select(2, errcode(code)) or 'UNKNOWN'
        end
    else
        return nil
    end
    setmetatable(e, error_mt)
    set_trace(e, level, depth + 1)
    return e
end

-- The last error of each fiber (master's diag): keyed by the fiber's Lua
-- thread, with the fiber id, as threads are reused by later fibers.
local main_key = {}
local diag = setmetatable({}, {__mode = 'k'})

local fiber_keyed = internal.fiber_keyed
local function diag_set(e)
    local key = coroutine.running() or main_key
    if e == nil then
        diag[key] = nil
    else
        diag[key] = {fiber.id(), e}
        -- A pooled request fiber must not serve another request with it.
        fiber_keyed()
    end
end

local function diag_last()
    local slot = diag[coroutine.running() or main_key]
    if slot ~= nil and slot[1] == fiber.id() then
        return slot[2]
    end
    return nil
end

local methods = {}

--- box.error.new(code, ...) / (type, fmt, ...) / ({...} [, level]): a new
--- error object (master's luaT_error_new).
function methods.new(...)
    local e = create(2, ...)
    if e == nil then
        error(illegal('box.error.new(): bad arguments'))
    end
    return e
end

--- box.error.last(): this fiber's last error set by box.error or
--- box.error.set, or nil.
function methods.last(...)
    if select('#', ...) >= 1 then
        error(illegal('box.error.last(): bad arguments'))
    end
    return diag_last()
end

--- box.error.clear(): forgets this fiber's last error.
function methods.clear(...)
    if select('#', ...) >= 1 then
        error(illegal('box.error.clear(): bad arguments'))
    end
    diag_set(nil)
end

--- box.error.set(err): makes `err` this fiber's last error.
function methods.set(...)
    if select('#', ...) == 0 then
        error(illegal('Usage: box.error.set(error)'))
    end
    local e = ...
    if not is_error(e) then
        error(illegal(format('Invalid argument #1 (error expected, got %s)',
                             e == nil and 'nil' or type(e))))
    end
    diag_set(e)
end

--- box.error.is(v): whether `v` is an error object.
function methods.is(...)
    return select('#', ...) >= 1 and is_error((...))
end

-- box.error(...): raises (master's luaT_error_call).
local function call(_, ...)
    local n = select('#', ...)
    if n == 0 then
        local last = diag_last()
        if last ~= nil then
            error(last)
        end
        return
    end
    local e = ...
    if is_error(e) then
        if n > 2 then
            error(illegal('box.error(): bad arguments'))
        end
        local level = select(2, ...)
        if level ~= nil then
            if type(level) ~= 'number' then
                error(illegal('box.error(): bad arguments'))
            end
            set_trace(e, level, 2)
        end
    else
        e = create(2, ...)
        if e == nil then
            error(illegal('box.error(): bad arguments'))
        end
    end
    diag_set(e)
    error(e)
end

-- The codes (box.error.NAME) are filled in at the first read of a field
-- that is not a method, so a script that never reads one keeps the ~300
-- names out of its heap.
local codes_loaded = false
box.error = setmetatable({}, {
    __index = function(t, key)
        local m = methods[key]
        if m ~= nil then
            return m
        end
        if not codes_loaded then
            codes_loaded = true
            for name, code in pairs(internal.errcodes()) do
                rawset(t, name, code)
            end
            return rawget(t, key)
        end
        return nil
    end,
    __call = call,
})

-- Error objects made elsewhere in box (cfg.lua, misc.lua): a ClientError of
-- `code` with the format's arguments, located as box.error's level
-- `level` would locate it from the function that calls this (1: that
-- function's caller).
function internal.client_error(level, code, ...)
    local e = create(2, code, ...)
    set_trace(e, level, 3)
    return e
end
