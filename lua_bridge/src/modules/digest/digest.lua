-- The Lua half of luafiber's `digest` module (see mod.rs): Tarantool
-- master's src/lua/digest.lua, its objects and error messages kept, over
-- the C functions of mod.rs instead of the FFI (so it serves LuaJIT and
-- Lua 5.4 alike). Run once per Lua state by the module's loader with the
-- table of internal C functions; returns the module table.
--
-- `raise(msg)` raises an IllegalParams error object (master's
-- `box.error(box.error.ILLEGAL_PARAMS, msg, 2)`); it is tail-called, so
-- the object is located at the caller's line.
local internal = ...

local crypto = require('crypto')
local raise = internal.raise
local crc32_update = internal.crc32_update
local murmur_once, murmur_process, murmur_result = internal.murmur,
    internal.murmur_process, internal.murmur_result
local guava, urandom = internal.guava, internal.urandom
local base64_encode, base64_decode = internal.base64_encode,
    internal.base64_decode
local xxh, xxh_new, xxh_update, xxh_result, xxh_reset, xxh_copy =
    internal.xxh, internal.xxh_new, internal.xxh_update, internal.xxh_result,
    internal.xxh_reset, internal.xxh_copy

-- @sa base64.rs
local BASE64_NOPAD = 1
local BASE64_NOWRAP = 2
local BASE64_URLSAFE = 7

local digest_shortcuts = {
    sha1    = 'SHA1',
    sha224  = 'SHA224',
    sha256  = 'SHA256',
    sha384  = 'SHA384',
    sha512  = 'SHA512',
    md5     = 'MD5',
    md4     = 'MD4',
}

-- Same as type(), but 'number' for a 64-bit integer cdata (master's
-- utils.param_type).
local function param_type(param)
    local t = type(param)
    if t == 'cdata' and tonumber(param) ~= nil then
        t = 'number'
    end
    return t
end

-- Master's utils.check_param, at the caller of the caller.
local function check_param(param, name, should_be_type)
    if param_type(param) ~= should_be_type then
        return raise(name .. " should be a " .. should_be_type)
    end
end

local PMurHash
local PMurHash_methods = {

    update = function(self, str)
        if type(str) ~= 'string' then
            return raise('Usage: murhash:update(string)')
        end
        self.h1, self.carry = murmur_process(self.h1, self.carry, str)
        self.total_length = self.total_length + string.len(str)
    end,

    result = function(self)
        return murmur_result(self.h1, self.carry, self.total_length)
    end,

    clear = function(self)
        self.h1 = self.default_seed
        self.total_length = 0
        self.carry = 0
    end,

    copy = function(self)
        local new_self = PMurHash.new()
        new_self.h1 = self.h1
        new_self.carry = self.carry
        new_self.total_length = self.total_length
        return new_self
    end
}

PMurHash = {
    default_seed = 13,

    new = function(opts)
        opts = opts or {}
        local self = setmetatable({}, { __index = PMurHash_methods })
        self.default_seed = (opts.seed or PMurHash.default_seed)
        self.h1 = self.default_seed
        self.carry = 0
        self.total_length = 0
        return self
    end
}

setmetatable(PMurHash, {
    __call = function(self, str)
        if type(str) ~= 'string' then
            return raise('Usage: digest.murhash(string)')
        end
        return murmur_once(PMurHash.default_seed, str)
    end
})

local CRC32
local CRC32_methods = {
    result = function(self)
        return self.value
    end,

    clear = function(self)
        self.value = CRC32.crc_begin
    end,

    copy = function(self)
        local new_self = CRC32.new()
        new_self.value = self.value
        return new_self
    end
}

CRC32 = {
    crc_begin = 4294967295,

    new = function()
        local self = setmetatable({}, { __index = CRC32_methods })
        self.value = CRC32.crc_begin
        return self
    end
}

local __crc32 = internal.crc32_init(CRC32)

CRC32_methods.update = __crc32.update

setmetatable(CRC32, {
    __call = __crc32.__call
})

local pbkdf2 = function(pass, salt, iters, digest_len)
    if type(pass) ~= 'string' or type(salt) ~= 'string' then
        return raise('Usage: digest.pbkdf2(pass, salt[,iters][,digest_len])')
    end
    if iters and type(iters) ~= 'number' then
        return raise('iters must be a number')
    end
    if digest_len and type(digest_len) ~= 'number' then
        return raise('digest_len must be a number')
    end
    iters = iters or 100000
    digest_len = digest_len or 128
    if digest_len > 128 then
        return raise('too big digest size')
    end
    return internal.pbkdf2(pass, salt, iters, digest_len)
end

local m = {
    base64_encode = function(bin, options)
        if type(bin) ~= 'string' or
           options ~= nil and type(options) ~= 'table' then
            return raise('Usage: digest.base64_encode(string[, table])')
        end
        local mask = 0
        if options ~= nil then
            if options.urlsafe then
                mask = BASE64_URLSAFE
            end
            -- The bits are a subset of BASE64_URLSAFE's: `+` is `bor`.
            if options.nopad and mask % 2 == 0 then
                mask = mask + BASE64_NOPAD
            end
            if options.nowrap and mask % 4 < 2 then
                mask = mask + BASE64_NOWRAP
            end
        end
        return base64_encode(bin, mask)
    end,

    base64_decode = function(str)
        if type(str) ~= 'string' then
            return raise('Usage: digest.base64_decode(string)')
        end
        return base64_decode(str)
    end,

    crc32 = CRC32,

    crc32_update = function(crc, str)
        if type(str) ~= 'string' then
            return raise('Usage: digest.crc32_update(string)')
        end
        return crc32_update(tonumber(crc), str)
    end,

    guava = function(state, buckets)
        check_param(state, 'state', 'number')
        check_param(buckets, 'buckets', 'number')
        return guava(state, buckets)
    end,

    urandom = function(n)
        if n == nil then
            return raise('Usage: digest.urandom(len)')
        end
        return urandom(n)
    end,

    murmur = PMurHash,

    pbkdf2 = pbkdf2,

    pbkdf2_hex = function(pass, salt, iters, digest_len)
        if type(pass) ~= 'string' or type(salt) ~= 'string' then
            return raise('Usage: digest.pbkdf2_hex(pass, salt)')
        end
        return string.hex(pbkdf2(pass, salt, iters, digest_len))
    end
}

for digest, _ in pairs(digest_shortcuts) do
    local d = crypto.digest[digest]
    m[digest] = function (str)
        return d(str)
    end
    m[digest .. '_hex'] = function (str)
        if type(str) ~= 'string' then
            return raise('Usage: digest.'..digest..'_hex(string)')
        end
        return string.hex(d(str))
    end
end

local aes256cbc = crypto.cipher.aes256.cbc
m['aes256cbc'] = {
    encrypt = function (str, key, iv)
        return aes256cbc.encrypt(str, key, iv)
    end,
    decrypt = function (str, key, iv)
        return aes256cbc.decrypt(str, key, iv)
    end
}

for _, var in ipairs({'32', '64'}) do
    local xxHash
    local bits = tonumber(var)

    local function update(self, str)
        if type(str) ~= 'string' then
            return raise(string.format("Usage: xxhash%s:update(string)", var))
        end
        xxh_update(self.value, str)
    end

    local function result(self)
        return xxh_result(self.value)
    end

    local function clear(self, seed)
        if seed == nil then
            seed = self.default_seed
        end
        xxh_reset(self.value, seed)
    end

    local function copy(self)
        local copy = xxHash.new()
        copy.value = xxh_copy(self.value)
        return copy
    end

    xxHash = {
        new = function(seed)
            local self = {
                update = update,
                result = result,
                clear = clear,
                copy = copy,
                value = xxh_new(bits, seed or 0),
                default_seed = seed or 0,
            }
            return self
        end,
    }

    setmetatable(xxHash, {
        __call = function(_, str, seed)
            if type(str) ~= 'string' then
                return raise(string.format(
                    'Usage: digest.xxhash%s(string[, unsigned number])', var))
            end
            if seed == nil then
                seed = 0
            end
            return xxh(bits, str, seed)
        end,
    })

    m['xxhash' .. var] = xxHash
end

return m
