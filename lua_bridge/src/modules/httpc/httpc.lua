-- http.client: Tarantool master's src/lua/httpc.lua API, with HTTP/1.1
-- spoken here over luafiber's `socket` module instead of libcurl.
--
-- The header, cookie and body-coding functions are master's
-- (Copyright (C) 2016-2017 Tarantool AUTHORS, BSD-2-Clause).
--
-- Called with `internal` (`parse_head`, the httparse-based head parser of
-- lua_bridge/src/modules/httpc/mod.rs); returns the module.
local internal = ...

local socket = require('socket')
local fiber = require('fiber')
local json = require('json')
local msgpack = require('msgpack')

local parse_head = internal.parse_head

local IO_TIMEOUT_DEFAULT = 10
-- curl's default: no limit (about 100 years).
local TIMEOUT_INFINITY = 100 * 365 * 86400
local MAX_REDIRECTS = 20
-- curl's message for a connection closed before a response.
local NOTHING = 'Server returned nothing (no headers, no data)'

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

-- {{{ The connection pool and the protocol

-- scheme, host, port, target ('/path?query') of an absolute URL; nil and
-- curl's message when it is not one.
local function split_url(url)
    local scheme, rest = url:match('^(%a[%w+.-]*)://(.*)$')
    if scheme == nil then
        scheme, rest = 'http', url
    end
    scheme = scheme:lower()
    local authority, target = rest:match('^([^/?#]*)(.*)$')
    target = target:gsub('#.*$', '')
    if target == '' then
        target = '/'
    elseif target:sub(1, 1) == '?' then
        target = '/' .. target
    end
    authority = authority:gsub('^.*@', '')
    local host, port = authority:match('^%[(.*)%]:?(%d*)$')
    if host == nil then
        host, port = authority:match('^([^:]*):?(%d*)$')
    end
    if host == nil or host == '' then
        return nil, 'URL using bad/illegal format or missing URL'
    end
    if port == '' then
        port = scheme == 'https' and 443 or 80
    end
    return scheme, host, tonumber(port), target
end

-- A response that did not come (master's curl errors): status 595 or
-- 408, reason the message.
local function failure(status, reason)
    return {status = status, reason = reason, headers = {}}
end

local function deadline_left(deadline)
    local left = deadline - fiber.clock()
    return left > 0 and left or 0
end

-- An idle connection to `key` from the pool, or a new one.
local function take_conn(self, key, host, port, deadline)
    local idle = self._pool[key]
    if idle ~= nil and #idle > 0 then
        -- One the server closed meanwhile fails at once: the request
        -- then goes once more on a new connection (do_request).
        local s = table.remove(idle)
        self._idle = self._idle - 1
        return s, true
    end
    local s, err = socket.tcp_connect(host, port, deadline_left(deadline))
    if s == nil then
        return nil, false, err
    end
    s:setsockopt('SOL_SOCKET', 'SO_KEEPALIVE', true)
    s:nonblock(true)
    self._stat.sockets_added = self._stat.sockets_added + 1
    return s, false
end

local function put_conn(self, key, s)
    local limit = self._max_connections
    if limit >= 0 and self._idle >= limit then
        s:close()
        self._stat.sockets_deleted = self._stat.sockets_deleted + 1
        return
    end
    local idle = self._pool[key]
    if idle == nil then
        idle = {}
        self._pool[key] = idle
    end
    idle[#idle + 1] = s
    self._idle = self._idle + 1
end

local function drop_conn(self, s)
    s:close()
    self._stat.sockets_deleted = self._stat.sockets_deleted + 1
end

-- The request head. As master's httpc.c: `Accept: */*` and `Connection:
-- close` unless the caller sets them; `Connection: Keep-Alive` and
-- `Keep-Alive: timeout=IDLE` with `keepalive_idle` and
-- `keepalive_interval` both above 0.
local function request_head(method, host, port, target, headers, body, keepalive)
    local lines = {method .. ' ' .. target .. ' HTTP/1.1'}
    local have = {}
    for k, v in pairs(headers) do
        have[k:lower()] = true
        lines[#lines + 1] = k .. ': ' .. tostring(v)
    end
    if not have['connection'] then
        lines[#lines + 1] = keepalive and 'Connection: Keep-Alive' or 'Connection: close'
    end
    if keepalive and not have['keep-alive'] then
        lines[#lines + 1] = 'Keep-Alive: timeout=' .. math.floor(keepalive)
    end
    if not have['host'] then
        local h = host:find(':', 1, true) and '[' .. host .. ']' or host
        if port ~= 80 then h = h .. ':' .. port end
        lines[#lines + 1] = 'Host: ' .. h
    end
    if not have['accept'] then
        lines[#lines + 1] = 'Accept: */*'
    end
    if body ~= nil and not have['content-length'] then
        lines[#lines + 1] = 'Content-Length: ' .. #body
    end
    -- curl's type of a body given as bytes.
    if body ~= nil and not have['content-type'] then
        lines[#lines + 1] = 'Content-Type: application/x-www-form-urlencoded'
    end
    lines[#lines + 1] = '\r\n'
    return table.concat(lines, '\r\n')
end

-- Reads a chunked body; nil and an error on failure.
local function read_chunked(s, deadline)
    local parts = {}
    while true do
        local line = s:read({delimiter = '\r\n'}, deadline_left(deadline))
        if line == nil or line == '' then return nil, s:error() end
        local size = tonumber(line:match('^%s*(%x+)'), 16)
        if size == nil then return nil, 'Invalid chunk size' end
        if size == 0 then
            -- Trailers, up to the empty line.
            repeat
                line = s:read({delimiter = '\r\n'}, deadline_left(deadline))
                if line == nil or line == '' then return nil, s:error() end
            until line == '\r\n'
            return table.concat(parts)
        end
        local data = s:read(size + 2, deadline_left(deadline))
        if data == nil or #data < size + 2 then return nil, s:error() end
        parts[#parts + 1] = data:sub(1, size)
    end
end

-- One exchange on `s`: the response, whether `s` may be kept, or nil and
-- an error.
local function exchange(s, method, head, body, deadline)
    local msg = body ~= nil and body ~= '' and head .. body or head
    if s:write(msg, deadline_left(deadline)) == nil then
        return nil, false, s:error()
    end
    local raw = s:read({delimiter = '\r\n\r\n'}, deadline_left(deadline))
    if raw == nil or raw == '' then
        return nil, false, s:error() or NOTHING
    end
    local status, reason, headers, minor = parse_head(raw)
    if not status then
        return nil, false, reason or 'Invalid HTTP response'
    end
    local keep = minor == 1
    local conn = headers['connection']
    if type(conn) == 'string' then
        conn = conn:lower()
        if conn:find('close', 1, true) then keep = false end
        if conn:find('keep-alive', 1, true) then keep = true end
    end
    -- Master's reason: "Ok" for 1xx-3xx, "Unknown" otherwise (not the
    -- server's phrase).
    local resp = {status = status, headers = headers, proto = {1, minor},
                  reason = (status >= 100 and status < 400) and 'Ok' or 'Unknown'}
    local te = headers['transfer-encoding']
    local cl = headers['content-length']
    if type(cl) == 'table' then cl = cl[1] end
    if method == 'HEAD' or status == 204 or status == 304 or
       (status >= 100 and status < 200) then
        resp.body = ''
    elseif type(te) == 'string' and te:lower():find('chunked', 1, true) then
        local b, err = read_chunked(s, deadline)
        if b == nil then return nil, false, err end
        resp.body = b
    elseif cl ~= nil then
        local n = tonumber(cl)
        if n == nil or n < 0 then return nil, false, 'Invalid Content-Length' end
        local b = n > 0 and s:read(n, deadline_left(deadline)) or ''
        if b == nil or #b < n then return nil, false, s:error() or 'Transferred a partial file' end
        resp.body = b
    else
        -- To the end of the stream.
        local parts = {}
        while true do
            local b = s:read({chunk = 65536}, deadline_left(deadline))
            if b == nil then return nil, false, s:error() end
            if b == '' then break end
            parts[#parts + 1] = b
        end
        resp.body = table.concat(parts)
        keep = false
    end
    return resp, keep
end

-- The message and status of a failed exchange.
local function failed(err, deadline)
    local e = tostring(err):lower()
    if deadline_left(deadline) == 0 or e:find('timed out') or e:find('cancel') then
        return failure(408, 'Timeout was reached')
    elseif err == NOTHING or err == nil then
        return failure(444, NOTHING)
    end
    return failure(595, tostring(err))
end

local function do_request(self, method, url, body, opts)
    local scheme, host, port, target = split_url(url)
    if scheme == nil then
        return failure(595, host)
    end
    if scheme == 'https' then
        error('Unsupported protocol: https (luafiber\'s http.client has no TLS yet)')
    elseif scheme ~= 'http' then
        error(('Unsupported protocol: %s'):format(scheme))
    end
    local deadline = fiber.clock() + (opts.timeout or TIMEOUT_INFINITY)
    local idle, interval = tonumber(opts.keepalive_idle), tonumber(opts.keepalive_interval)
    local keepalive = idle and interval and idle > 0 and interval > 0 and idle or nil
    local head = request_head(method, host, port, target, opts.headers, body, keepalive)
    local key = host .. ':' .. port
    for _ = 1, 2 do
        local s, reused, err = take_conn(self, key, host, port, deadline)
        if s == nil then
            if deadline_left(deadline) == 0 then return failed(err, deadline) end
            return failure(595, "Couldn't connect to server")
        end
        local resp, keep, xerr = exchange(s, method, head, body, deadline)
        if resp ~= nil then
            -- A connection asked to close is not kept.
            if keep and keepalive then
                put_conn(self, key, s)
            else
                drop_conn(self, s)
            end
            return resp
        end
        drop_conn(self, s)
        -- A kept connection the server closed under us: once more on a
        -- new one.
        if not reused then
            return failed(xerr, deadline)
        end
    end
    return failure(444, NOTHING)
end

local redirect_codes = {[301] = true, [302] = true, [303] = true, [307] = true, [308] = true}

-- A Location relative to `url`, made absolute.
local function resolve(url, location)
    if location:find('^%a[%w+.-]*://') then return location end
    local base = url:match('^(%a[%w+.-]*://[^/?#]*)') or ''
    if location:sub(1, 1) == '/' then return base .. location end
    local dir = url:match('^(%a[%w+.-]*://[^?#]*/)') or (base .. '/')
    return dir .. location
end

local function driver_request(self, method, url, body, opts)
    self._stat.active_requests = self._stat.active_requests + 1
    self._stat.total_requests = self._stat.total_requests + 1
    local follow = opts.follow_location ~= false
    local resp
    for _ = 0, MAX_REDIRECTS do
        local ok, res = pcall(do_request, self, method, url, body, opts)
        if not ok then
            -- A cancel of the fiber (or another error raised by a socket
            -- call): master's curl wait ends with a timeout then. The
            -- socket it used is dropped (the GC closes it).
            if not (type(res) == 'table' and res.type == 'FiberIsCancelled') then
                self._stat.active_requests = self._stat.active_requests - 1
                error(res, 0)
            end
            res = failure(408, 'Timeout was reached')
        end
        resp = res
        local location = resp.headers and resp.headers['location']
        if not (follow and redirect_codes[resp.status] and type(location) == 'string') then
            break
        end
        url = resolve(url, location)
        if resp.status == 303 or ((resp.status == 301 or resp.status == 302)
                                  and method == 'POST') then
            method, body = 'GET', nil
        end
    end
    self._stat.active_requests = self._stat.active_requests - 1
    if resp.status == 200 then
        self._stat.http_200_responses = self._stat.http_200_responses + 1
    else
        self._stat.http_other_responses = self._stat.http_other_responses + 1
    end
    if resp.status >= 400 then
        self._stat.failed_requests = self._stat.failed_requests + 1
    end
    return resp
end

-- }}}

-- {{{ The chunked io object: the request body written piece by piece,
-- the response body read piece by piece.

local function io_write(self, data, timeout)
    local s = self._internal.s
    if s == nil then error('io:write(): the request is finished') end
    timeout = timeout or IO_TIMEOUT_DEFAULT
    if #data == 0 then return 0 end
    local n = s:write(('%x\r\n'):format(#data) .. data .. '\r\n', timeout)
    return n and #data or nil
end

local function io_finish(self, timeout)
    local st = self._internal
    if st.resp ~= nil then return end
    timeout = timeout or IO_TIMEOUT_DEFAULT
    local deadline = fiber.clock() + timeout
    local s = st.s
    s:write('0\r\n\r\n', timeout)
    local raw = s:read({delimiter = '\r\n\r\n'}, deadline_left(deadline))
    local status, reason, headers = nil, 'Server returned nothing', {}
    if raw ~= nil and raw ~= '' then
        status, reason, headers = parse_head(raw)
    end
    st.resp = {status = status or 595, reason = reason, headers = headers or {}}
    self.status, self.reason = st.resp.status, st.resp.reason
    self.headers = process_headers(st.resp.headers)
end

local function io_read(self, opts, timeout)
    local st = self._internal
    if st.resp == nil then io_finish(self, timeout) end
    timeout = timeout or IO_TIMEOUT_DEFAULT
    local s = st.s
    if type(opts) == 'number' then
        if opts < 0 then error('io:read(): chunk size can not be negative') end
        return s:read(opts, timeout)
    elseif type(opts) == 'string' then
        return s:read({delimiter = opts}, timeout)
    elseif type(opts) == 'table' then
        return s:read(opts, timeout)
    end
    error('Usage: io:read(delimiter|chunk|{delimiter = x, chunk = x}, timeout)')
end

local function start_chunked(self, method, url, opts)
    local scheme, host, port, target = split_url(url)
    if scheme ~= 'http' then
        error('http.client: chunked io needs an http:// URL')
    end
    local headers = table.copy(opts.headers)
    headers['Transfer-Encoding'] = 'chunked'
    headers['Connection'] = 'close'
    local timeout = opts.timeout or IO_TIMEOUT_DEFAULT
    local s, err = socket.tcp_connect(host, port, timeout)
    if s == nil then
        error(('http.client: cannot connect: %s'):format(err))
    end
    s:write(request_head(method, host, port, target, headers, nil, nil), timeout)
    return {_internal = {s = s}}
end

-- }}}

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
                local io = start_chunked(self, method, url_with_params, opts)
                return setmetatable(io, {
                    __index = {read = io_read, write = io_write, finish = io_finish},
                })
            end
            local resp = driver_request(self, method, url_with_params, body, opts)
            if resp.headers then
                -- curl's max_header_name_length (32): longer names are
                -- cut to it.
                local max_name = opts.max_header_name_length or 32
                local long = {}
                for name in pairs(resp.headers) do
                    if #name > max_name then long[#long + 1] = name end
                end
                for _, name in ipairs(long) do
                    local v = resp.headers[name]
                    resp.headers[name] = nil
                    resp.headers[name:sub(1, max_name)] = v
                end
                if resp.headers['set-cookie'] ~= nil then
                    resp.cookies = process_cookies(resp.headers['set-cookie'])
                end
                resp.headers = process_headers(resp.headers)
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
