-- Tarantool's table extensions (master's src/lua/table.lua): `copy`,
-- `deepcopy`, `equals`, set into the global `table` at setup (see mod.rs).
-- Lua functions, so that a `__copy` or `__eq` metamethod may yield.
local t = ...

local type, pairs, getmetatable, setmetatable = type, pairs, getmetatable,
    setmetatable
local rawequal = rawequal

-- The `__copy` metamethod of `v`, if any.
local function copier(v)
    local mt = getmetatable(v)
    return mt, mt ~= nil and type(mt) == 'table' and mt.__copy or nil
end

-- `v` copied at every level: keys and values; a table met twice (a cycle
-- or a shared table) is copied once; metatables are shared, not copied; a
-- table whose metatable has `__copy` is what `__copy(v)` returns.
local function deepcopy(v, seen)
    if type(v) ~= 'table' then
        return v
    end
    local mt, copy_fn = copier(v)
    if copy_fn ~= nil then
        return copy_fn(v)
    end
    seen = seen or {}
    local done = seen[v]
    if done ~= nil then
        return done
    end
    local copy = {}
    seen[v] = copy
    for k, val in pairs(v) do
        copy[deepcopy(k, seen)] = deepcopy(val, seen)
    end
    if mt ~= nil then
        setmetatable(copy, mt)
    end
    return copy
end

-- `v`'s top level copied (values shared); `__copy` as in deepcopy.
local function copy(v)
    if type(v) ~= 'table' then
        return v
    end
    local mt, copy_fn = copier(v)
    if copy_fn ~= nil then
        return copy_fn(v)
    end
    local out = {}
    for k, val in pairs(v) do
        out[k] = val
    end
    if mt ~= nil then
        setmetatable(out, mt)
    end
    return out
end

-- Whether `a` and `b` hold equal values under the same keys, at every
-- level; a table with an `__eq` metamethod (either side) is compared with
-- `==`; values that are not tables, with `==` and by type.
local function equals(a, b)
    if type(a) ~= 'table' or type(b) ~= 'table' then
        return type(a) == type(b) and a == b
    end
    local ma, mb = getmetatable(a), getmetatable(b)
    local ea, eb = ma ~= nil and ma.__eq, mb ~= nil and mb.__eq
    if ea or eb then
        -- Lua 5.1's rule (LuaJIT's, so Tarantool's): `==` calls `__eq` only
        -- when both sides have the same one. Lua 5.4 would call either
        -- side's, so the rule is spelled out here for both engines.
        if rawequal(a, b) then
            return true
        end
        return rawequal(ea, eb) and a == b
    end
    for k, v in pairs(a) do
        if not equals(v, b[k]) then
            return false
        end
    end
    for k in pairs(b) do
        -- `type`: box.NULL (a cdata) is a value here, though `== nil`.
        if type(a[k]) == 'nil' then
            return false
        end
    end
    return true
end

t.copy = copy
t.deepcopy = function(v)
    return deepcopy(v, nil)
end
t.equals = equals
