-- http.client: Tarantool master's src/lua/httpc.lua API, with HTTP/1.1
-- spoken here over luafiber's `socket` module (and rustls for https)
-- instead of libcurl.
--
-- The header, cookie and body-coding functions are master's
-- (Copyright (C) 2016-2017 Tarantool AUTHORS, BSD-2-Clause).
--
-- Called with `internal` (mod.rs's C functions), `conn` (conn.lua),
-- `request` (request.lua) and `chunked_io` (io.lua); returns the module.
local internal, conn, request, chunked_io = ...

local json = require('json')
local msgpack = require('msgpack')

local default_content_type = 'application/json'

local encoders = {
    ['application/json'] = function(body, _content_type) return json.encode(body) end,
    ['application/yaml'] = function(body, _content_type) return require('yaml').encode(body) end,
    ['application/msgpack'] = function(body, _content_type) return msgpack.encode(body) end,
}

local decoders = {
    ['application/json'] = function(body, _content_type) return json.decode(body) end,
    ['application/yaml'] = function(body, _content_type) return require('yaml').decode(body) end,
    ['application/msgpack'] = function(body, _content_type) return msgpack.decode(body) end,
}

local function filter_out_private_fields(t)
    local res = {}
    for k, v in pairs(t) do
        if not k:startswith('_') then
            res[k] = v
        end
    end
    return res
end

local special_headers = {
    ["age"] = true, ["authorization"] = true, ["content-length"] = true,
    ["content-type"] = true, ["etag"] = true, ["expires"] = true,
    ["from"] = true, ["host"] = true, ["if-modified-since"] = true,
    ["if-unmodified-since"] = true, ["last-modified"] = true,
    ["location"] = true, ["max-forwards"] = true,
    ["proxy-authorization"] = true, ["referer"] = true,
    ["retry-after"] = true, ["user-agent"] = true,
}

local special_characters = {
    ['('] = true, [')'] = true, ['['] = true, [']'] = true, ['<'] = true,
    ['>'] = true, ['@'] = true, [','] = true, [';'] = true, [':'] = true,
    ['\\'] = true, ['\"'] = true, ['/'] = true, ['?'] = true, ['='] = true,
    ['{'] = true, ['}'] = true, [' '] = true, ['\t'] = true
}

local option_keys = {
    ["Expires"] = true, ["Max-Age"] = true, ["Domain"] = true,
    ["Path"] = true, ["Secure"] = true, ["HttpOnly"] = true,
    ["SameSite"] = true,
}

local function process_cookie(cookie, result)
    local vals = cookie:split(';')
    local val = vals[1]:split('=')
    if #val < 2 then
        return
    end
    val[1] = string.strip(val[1])
    for c in val[1]:gmatch('.') do
        if special_characters[c] then
            return
        end
    end
    local options = {}
    table.remove(vals, 1)
    for _, opt in pairs(vals) do
        local splitted = opt:split('=')
        splitted = string.strip(splitted[1])
        if option_keys[splitted] then
            table.insert(options, string.strip(opt))
        end
    end
    result[val[1]] = {string.strip(val[2]), options}
end

local function process_cookies(cookies)
    local result = {}
    if type(cookies) == 'string' then
        cookies = {cookies}
    end
    for _, val in pairs(cookies) do
        process_cookie(val, result)
    end
    return result
end

local function process_headers(headers)
    for header, value in pairs(headers) do
        if type(value) == 'table' then
            if special_headers[header] then
                headers[header] = value[1]
            else
                headers[header] = table.concat(value, ',')
            end
        end
    end
    return headers
end

local function extract_mime_type(content_type)
    if content_type == nil then
        return nil
    end
    if type(content_type) ~= "string" then
        error('content type must be a string')
    end
    return content_type:split(';', 1)[1]:strip()
end

local function string_lower(str)
    if type(str) == 'string' then
        str = str:lower()
    end
    return str
end

local function get_icase(t, key)
    key = string_lower(key)
    for k, v in pairs(t) do
        k = string_lower(k)
        if k == key then
            v = string_lower(v)
            return v
        end
    end
    return nil
end

local function encode_body(body, content_type, encoders_)
    local raw_body
    local body_type = type(body)
    local mime_type
    if body == nil then
        raw_body = ''
    elseif body_type == 'cdata' or body_type == 'userdata' or body_type == 'table' then
        mime_type = extract_mime_type(content_type)
        mime_type = string_lower(mime_type)
        local encoder = encoders_[mime_type]
        if encoder == nil then
            local msg = 'Unable to encode body: encode function is not found (%s)'
            error(msg:format(content_type))
        end
        local ok, res = pcall(encoder, body, content_type)
        if not ok then
            error(('Unable to encode body: %s'):format(res))
        end
        raw_body = res
    elseif body_type == 'number' or body_type == 'string' or body_type == 'boolean' then
        raw_body = tostring(body)
    else
        error(('Unsupported body type: %s'):format(body_type))
    end
    return raw_body
end

local default_decoder = function(raw_body, _content_type)
    return json.decode(raw_body)
end

local function decode_body(response)
    if response.body == nil then
        error('Unable to decode body: body is empty')
    end
    local headers = response.headers or {}
    local content_type = get_icase(headers, 'content-type')
    local mime_type = extract_mime_type(content_type)
    local decoder = default_decoder
    if mime_type ~= nil then
        mime_type = string_lower(mime_type)
        decoder = response._decoders[mime_type]
    end
    if decoder == nil then
        local msg = 'Unable to decode body: decode function is not found (%s)'
        error(msg:format(content_type))
    end
    if type(decoder) ~= 'function' then
        local msg = 'Unable to decode body: decode function is not a function (%s)'
        error(msg:format(content_type))
    end
    local ok, res = pcall(decoder, response.body, content_type)
    if not ok then
        error(('Unable to decode body: %s'):format(res))
    end
    return res
end

local function encode_url_params(params, http_method)
    local uri = require('uri')
    local opts = uri.FORM_URLENCODED
    if http_method == "GET" or http_method == "HEAD" or http_method == "DELETE" then
        opts = uri.QUERY_PART
    end
    local ok, res = pcall(uri._internal.params, params, opts)
    if not ok then
        error(res)
    end
    return res
end

-- The headers of a response as master gives them, and its cookies:
-- names over curl's max_header_name_length (32) cut to it, repeated
-- headers joined.
local function take_headers(headers, opts)
    local max_name = opts.max_header_name_length or 32
    local long = {}
    for name in pairs(headers) do
        if #name > max_name then long[#long + 1] = name end
    end
    for _, name in ipairs(long) do
        local v = headers[name]
        headers[name] = nil
        headers[name:sub(1, max_name)] = v
    end
    local cookies
    if headers['set-cookie'] ~= nil then
        cookies = process_cookies(headers['set-cookie'])
    end
    return process_headers(headers), cookies
end

local curl_mt

-- The responses' metatable (master makes one per response).
local response_mt = {
    __serialize = filter_out_private_fields,
    __index = {decode = decode_body},
}

local function http_new(opts)
    opts = opts or {}
    opts.max_connections = opts.max_connections or -1
    opts.max_total_connections = opts.max_total_connections or 0
    return setmetatable({
        _pool = {},
        _idle = 0,
        _max_connections = opts.max_connections,
        _stat = {active_requests = 0, sockets_added = 0, sockets_deleted = 0,
                 total_requests = 0, http_200_responses = 0,
                 http_other_responses = 0, failed_requests = 0},
        encoders = table.copy(encoders),
        decoders = table.copy(decoders),
    }, curl_mt)
end

local check_args_fmt = 'Use client:%s(...) instead of client.%s(...):'

local function check_args(self, method)
    if type(self) ~= 'table' then
        error(check_args_fmt:format(method, method), 2)
    end
end

curl_mt = {
    __index = {
        request = function(self, method, url, body, opts)
            if not method or not url then
                error('request(method, url[, body, [options]])')
            end
            method = method:upper()
            opts = opts or {}
            opts.headers = opts.headers or {}
            if type(opts.headers) ~= 'table' then
                error('opts.headers should be a table')
            end
            for k, v in pairs(opts.headers) do
                if type(v) ~= 'string' then
                    error('opts.headers values should be strings')
                elseif type(k) ~= 'string' then
                    error('opts.headers keys should be strings')
                elseif #k + 2 + #v > conn.MAX_HEADER_LEN then
                    -- Master's httpc_set_header: "name: value" over 8 KiB.
                    internal.illegal('header is too large')
                end
            end
            local cl = get_icase(opts.headers, 'content-length')
            if cl ~= nil and not tostring(cl):match('^%d+$') then
                error('Content-Length header value must be a non-negative integer')
            end
            local encoded_params
            if opts.params then
                encoded_params = encode_url_params(opts.params, method)
            end
            local url_with_params = url
            if encoded_params then
                if method == "GET" or method == "HEAD" or method == "DELETE" then
                    url_with_params = ("%s?%s"):format(url, encoded_params)
                elseif body then
                    error('use either body or http params')
                else
                    body = encoded_params
                end
            end
            if method == 'PATCH' or method == 'POST' or method == 'PUT' then
                local content_type = get_icase(opts.headers, 'content-type')
                if content_type == nil then
                    content_type = default_content_type
                    local body_type = type(body)
                    if body_type == 'cdata' or body_type == 'userdata' or
                       body_type == 'table' then
                        opts.headers['content-type'] = default_content_type
                    end
                end
                body = encode_body(body, content_type, self.encoders)
            end
            if opts.chunked then
                self._stat.total_requests = self._stat.total_requests + 1
                return chunked_io.start(method, url_with_params, body, opts, function(o, headers)
                    o.headers, o.cookies = take_headers(headers, opts)
                end)
            end
            local resp = request.driver_request(self, method, url_with_params, body, opts)
            if resp.headers then
                resp.headers, resp.cookies = take_headers(resp.headers, opts)
            end
            -- No body is nil, as master's driver gives it.
            if resp.body == '' then resp.body = nil end
            resp.url = url_with_params
            resp._decoders = self.decoders
            return setmetatable(resp, response_mt)
        end,
        get = function(self, url, options)
            check_args(self, 'get')
            return self:request('GET', url, nil, options)
        end,
        post = function(self, url, body, options)
            check_args(self, 'post')
            return self:request('POST', url, body, options)
        end,
        put = function(self, url, body, options)
            check_args(self, 'put')
            return self:request('PUT', url, body, options)
        end,
        patch = function(self, url, body, options)
            check_args(self, 'patch')
            return self:request('PATCH', url, body, options)
        end,
        options = function(self, url, options)
            check_args(self, 'options')
            return self:request('OPTIONS', url, nil, options)
        end,
        head = function(self, url, options)
            check_args(self, 'head')
            return self:request('HEAD', url, nil, options)
        end,
        delete = function(self, url, options)
            check_args(self, 'delete')
            return self:request('DELETE', url, nil, options)
        end,
        trace = function(self, url, options)
            check_args(self, 'trace')
            return self:request('TRACE', url, nil, options)
        end,
        connect = function(self, url, options)
            check_args(self, 'connect')
            return self:request('CONNECT', url, nil, options)
        end,
        stat = function(self)
            return table.copy(self._stat)
        end,
    },
}

local http_default = http_new()
local this_module = {
    new = http_new,
    encoders = table.copy(encoders),
    decoders = table.copy(decoders),
    _internal = {
        default_content_type = default_content_type,
        encode_body = encode_body,
        decode_body = decode_body,
        extract_mime_type = extract_mime_type,
        get_icase = get_icase,
    },
}

local function http_default_wrap(fname)
    return function(...) return http_default[fname](http_default, ...) end
end

for _, name in ipairs({'get', 'delete', 'trace', 'options', 'head',
                       'connect', 'post', 'put', 'patch', 'request'}) do
    this_module[name] = http_default_wrap(name)
end

return this_module
