-- The Lua half of luafiber's `crypto` module (see mod.rs): Tarantool
-- master's src/lua/crypto.lua, its objects and error messages kept, over
-- the C functions of md.rs and cipher.rs instead of OpenSSL through the
-- FFI (so it serves LuaJIT and Lua 5.4 alike). Run once per Lua state by
-- the module's loader with the table of internal C functions; returns the
-- module table.
--
-- Where master tail-calls `return error(msg)`, this calls `error(msg, 2)`:
-- the same position on LuaJIT (a tail call leaves the caller's caller at
-- level 1) and on Lua 5.4 (which keeps the Lua frame under a tail-called C
-- function, so a tail call would add this file's position).
local internal = ...

local md_new, hmac_new_ctx, ctx_update, ctx_result, ctx_init =
    internal.md_new, internal.hmac_new, internal.update, internal.result,
    internal.init
local oneshot_digest, oneshot_hmac = internal.digest, internal.hmac
local stream_new, stream_begin, stream_append, stream_commit =
    internal.stream_new, internal.stream_begin, internal.stream_append,
    internal.stream_commit

-- name -> index of md.rs's `Algo` (what OpenSSL's
-- EVP_get_digestbyname finds in master).
local digests = {}
for i, name in ipairs(internal.digest_names) do
    digests[name] = i
end

local digest_mt = {}

local function digest_new(digest)
    local self = setmetatable({
        ctx = md_new(digest),
        digest = digest,
        initialized = false,
    }, digest_mt)
    self:init()
    return self
end

local function digest_init(self)
    if self.ctx == nil then
        error('Digest context isn\'t usable', 2)
    end
    ctx_init(self.ctx)
    self.initialized = true
end

local function digest_update(self, input)
    if not self.initialized then
        error('Digest not initialized', 2)
    end
    ctx_update(self.ctx, input)
end

local function digest_final(self)
    if not self.initialized then
        error('Digest not initialized', 2)
    end
    self.initialized = false
    return ctx_result(self.ctx)
end

local function digest_free(self)
    self.ctx = nil
    self.initialized = false
end

digest_mt = {
    __index = {
          init = digest_init,
          update = digest_update,
          result = digest_final,
          free = digest_free
    }
}

local hmacs = digests

local hmac_mt = {}

local function hmac_new(class, digest, key)
    if key == nil then
        error('Key should be specified for HMAC operations', 2)
    end
    local self = setmetatable({
        ctx = hmac_new_ctx(digest, key),
        class = class,
        digest = digest,
        initialized = false,
    }, hmac_mt)
    self:init(key)
    return self
end

local function hmac_init(self, key)
    if self.ctx == nil then
        error('HMAC context isn\'t usable', 2)
    end
    ctx_init(self.ctx, key)
    self.initialized = true
end

local function hmac_update(self, input)
    if not self.initialized then
        error('HMAC not initialized', 2)
    end
    ctx_update(self.ctx, input)
end

local function hmac_final(self)
    if not self.initialized then
        error('HMAC not initialized', 2)
    end
    self.initialized = false
    return ctx_result(self.ctx)
end

local function hmac_free(self)
    self.ctx = nil
    self.initialized = false
end

hmac_mt = {
    __index = {
          init = hmac_init,
          update = hmac_update,
          result = hmac_final,
          free = hmac_free
    }
}

local crypto_stream_mt = {}

local function crypto_stream_new(algo, mode, key, iv, direction)
    local self = setmetatable({
        ctx = stream_new(algo, mode, direction),
        is_initialized = false,
    }, crypto_stream_mt)
    self:init(key, iv)
    return self
end

local function crypto_stream_begin(self, key, iv)
    local ctx = self.ctx
    if not ctx then
        error('Cipher context isn\'t usable', 2)
    end
    self.key = key or self.key
    self.iv = iv or self.iv
    if self.key and self.iv then
        stream_begin(ctx, self.key, self.iv)
        self.is_initialized = true
    end
end

local function crypto_stream_append(self, input)
    if not self.is_initialized then
        error('Cipher not initialized', 2)
    end
    if type(input) ~= 'string' then
        error("Usage: cipher:update(string)")
    end
    return stream_append(self.ctx, input)
end

local function crypto_stream_commit(self)
    if not self.is_initialized then
        error('Cipher not initialized', 2)
    end
    local res = stream_commit(self.ctx)
    self.is_initialized = false
    return res
end

local function crypto_stream_free(self)
    self.ctx = nil
    self.key = nil
    self.iv = nil
    self.is_initialized = false
end

crypto_stream_mt = {
    __index = {
          init = crypto_stream_begin,
          update = crypto_stream_append,
          result = crypto_stream_commit,
          free = crypto_stream_free
    }
}

local digest_api = {}
for class, digest in pairs(digests) do
    digest_api[class] = setmetatable({
        new = function () return digest_new(digest) end
    }, {
        __call = function (self, str)
            if type(str) ~= 'string' then
                error("Usage: digest."..class.."(string)")
            end
            return oneshot_digest(digest, str)
        end
    })
end

digest_api = setmetatable(digest_api,
    {__index = function(self, digest)
        error('Digest method "' .. digest .. '" is not supported', 2)
    end })

local hmac_api = {}
for class, digest in pairs(hmacs) do
    hmac_api[class] = setmetatable({
        new = function (key) return hmac_new(class, digest, key) end
    }, {
        __call = function (self, key, str)
            if type(str) ~= 'string' then
                error("Usage: hmac."..class.."(key, string)")
            end
            if key == nil then
                -- Not a tail call: the message carries this position, as
                -- master's (raised in hmac_new, called from here).
                error('Key should be specified for HMAC operations')
            end
            return oneshot_hmac(digest, key, str)
        end
    })
    hmac_api[class .. '_hex'] = function (key, str)
        if type(str) ~= 'string' then
            error("Usage: hmac."..class.."_hex(key, string)")
        end
        return string.hex(hmac_api[class](key, str))
    end
end

hmac_api = setmetatable(hmac_api,
    {__index = function(self, digest)
        error('HMAC method "' .. digest .. '" is not supported', 2)
    end })

-- The values of master's enum crypto_algo, crypto_mode and
-- crypto_direction.
local crypto_algos = {
    none = 0,
    aes128 = 1,
    aes192 = 2,
    aes256 = 3,
    des = 4,
}
local crypto_modes = {
    ecb = 0,
    cbc = 1,
    cfb = 2,
    ofb = 3,
}
local crypto_dirs = {
    encrypt = 1,
    decrypt = 0,
}

local algo_api_mt = {
    __index = function(self, mode)
        error('Cipher mode ' .. mode .. ' is not supported')
    end
}
local crypto_api_mt = {
    __index = function(self, cipher)
        error('Cipher method "' .. cipher .. '" is not supported', 2)
    end
}

local crypto_api = setmetatable({}, crypto_api_mt)
for algo_name, algo_value in pairs(crypto_algos) do
    local algo_api = setmetatable({}, algo_api_mt)
    crypto_api[algo_name] = algo_api
    for mode_name, mode_value in pairs(crypto_modes) do
        local mode_api = {}
        algo_api[mode_name] = mode_api
        for dir_name, dir_value in pairs(crypto_dirs) do
            mode_api[dir_name] = setmetatable({
                new = function(key, iv)
                    return crypto_stream_new(algo_value, mode_value, key, iv,
                                             dir_value)
                end
            }, {
                __call = function(self, str, key, iv)
                    local ctx = crypto_stream_new(algo_value, mode_value, key,
                                                  iv, dir_value)
                    local res = ctx:update(str)
                    res = res .. ctx:result()
                    ctx:free()
                    return res
                end
            })
        end
    end
end

local public_methods = {
    digest = digest_api,
    hmac   = hmac_api,
    cipher = crypto_api,
}

local module_mt = {
    __serialize = function(self)
        return public_methods
    end,
    __index = public_methods
}

return setmetatable({
    cipher_algo = crypto_algos,
    cipher_mode = crypto_modes,
}, module_mt)
