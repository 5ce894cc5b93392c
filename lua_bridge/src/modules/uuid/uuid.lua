-- The Lua half of luafiber's `uuid` module (see mod.rs): Tarantool
-- master's src/lua/uuid.lua API over the C functions of object.rs, for
-- LuaJIT (a uuid is a `struct tt_uuid` cdata) and Lua 5.4 (a userdata)
-- alike. Argument checks and their errors are here, so they carry this
-- chunk's position as Tarantool's do; the work is in C. Run once per Lua
-- state by the module's loader, which passes the internal functions and the
-- metatable to fill; returns the module table and the `__index` function
-- for userdata (their fields).
local internal, mt = ...

local new, tostr, tobin, frombin_raw = internal.new, internal.str,
    internal.bin, internal.frombin
local fromstr_raw, is_uuid, isnil_raw = internal.fromstr, internal.is_uuid,
    internal.isnil
local eq, cmp, field = internal.eq, internal.cmp, internal.field

local UUID_LEN = 16

local function need_bswap(order)
    if order == nil or order == 'l' or order == 'h' or order == 'host' then
        return false
    elseif order == 'b' or order == 'n' or order == 'network' then
        return true
    end
    error('invalid byteorder, valid is l, b, h, n')
end

local function uuid_str(u)
    if not is_uuid(u) then
        error('Usage: uuid:str()')
    end
    return tostr(u)
end

local function uuid_bin(u, order)
    if not is_uuid(u) then
        error('Usage: uuid:bin([byteorder])')
    end
    return tobin(u, need_bswap(order))
end

local function uuid_isnil(u)
    if not is_uuid(u) then
        error('Usage: uuid:isnil()')
    end
    return isnil_raw(u)
end

local function fromstr(str)
    if type(str) ~= 'string' then
        error('fromstr(str)')
    end
    return fromstr_raw(str)
end

local function frombin(bin, order)
    if type(bin) ~= 'string' or #bin ~= UUID_LEN then
        error('frombin(bin, [byteorder])')
    end
    return frombin_raw(bin, need_bswap(order))
end

-- cmp gives nil and the argument's index for a value that is neither a
-- uuid nor a uuid's text.
local function compare(a, b)
    local c, bad = cmp(a, b)
    if c == nil then
        error(('incorrect value to convert to uuid as %d argument'):format(bad),
              3)
    end
    return c
end

local methods = {
    isnil = uuid_isnil,
    bin = uuid_bin,
    str = uuid_str,
}

mt.__tostring = uuid_str
mt.__eq = eq
mt.__lt = function(a, b) return compare(a, b) < 0 end
mt.__le = function(a, b) return compare(a, b) <= 0 end
mt.__index = methods

local function index(u, key)
    local m = methods[key]
    if m ~= nil then
        return m
    end
    return field(u, key)
end

local module = setmetatable({
    new = new,
    fromstr = fromstr,
    frombin = frombin,
    bin = function(order) return uuid_bin(new(), order) end,
    str = function() return tostr(new()) end,
    is_uuid = is_uuid,
}, {
    __call = function() return new() end,
})

return module, index
