-- msgpackffi: Tarantool's `msgpackffi` module (src/lua/msgpackffi.lua) over
-- luafiber's msgpack encoder and decoder (README "msgpack" lists what
-- differs). The chunk gets the msgpack module and returns the module table.
local msgpack = ...
local ok, ffi = pcall(require, 'ffi')
if not ok then ffi = nil end

-- A serializer of its own: msgpackffi ignores msgpack.cfg except for the
-- depth options, which it reads at each call (gh-4434).
local ser = msgpack.new()
local depth, deep_as_nil = ser.cfg.encode_max_depth, ser.cfg.encode_deep_as_nil
local ser_cfg, ser_encode, ser_decode = ser.cfg, ser.encode, ser.decode_unchecked
local cfg = msgpack.cfg

local encode_ext_cdata = {}
local has_ext = false

local function on_encode(ctype_or_udataname, callback)
    if type(ctype_or_udataname) ~= 'cdata' or type(callback) ~= 'function' then
        error("Usage: on_encode(ffi.typeof('mytype'), function(buf, obj)")
    end
    local ctypeid = tonumber(ffi.typeof(ctype_or_udataname))
    local prev = encode_ext_cdata[ctypeid]
    encode_ext_cdata[ctypeid] = callback
    has_ext = true
    return prev
end

local function encode(obj)
    local d, n = cfg.encode_max_depth, cfg.encode_deep_as_nil
    if d ~= depth or n ~= deep_as_nil then
        ser_cfg{encode_max_depth = d, encode_deep_as_nil = n}
        depth, deep_as_nil = d, n
    end
    if has_ext and type(obj) == 'cdata' then
        local f = encode_ext_cdata[tonumber(ffi.typeof(obj))]
        if f ~= nil then
            local buf = require('buffer').ibuf()
            f(buf, obj)
            return ffi.string(buf.rpos, buf:size())
        end
    end
    return ser_encode(obj)
end

local function check_offset(offset, len)
    if offset == nil then
        return 1
    end
    local o = tonumber(offset)
    if o == nil or o < 1 or o > len then
        error(string.format('offset = %d is out of bounds [1..%d]',
            o or 0, len))
    end
    return o
end

local char_ptr_t = ffi and ffi.typeof('const char *')

local function decode_unchecked(str, offset)
    if type(str) == 'string' then
        offset = check_offset(offset, #str)
        return ser_decode(str, offset)
    elseif ffi ~= nil and ffi.istype(char_ptr_t, str) then
        local r, p = ser_decode(str)
        return r, ffi.cast(ffi.typeof(str), p)
    elseif type(str) == 'userdata' then
        return ser_decode(str)
    else
        error('msgpackffi.decode_unchecked(str, offset) -> res, new_offset | ' ..
              'msgpackffi.decode_unchecked([const] char *buf) -> res, new_buf')
    end
end

return {
    NULL = msgpack.NULL,
    array_mt = msgpack.array_mt,
    map_mt = msgpack.map_mt,
    encode = encode,
    on_encode = on_encode,
    decode_unchecked = decode_unchecked,
    decode = decode_unchecked, -- just for tests
    internal = {},
}
