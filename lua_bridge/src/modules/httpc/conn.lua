-- http.client's connections: URLs, streams (a plain socket, or a TLS
-- session over one), the per-client pool of kept connections, request
-- heads, and one exchange of a request and its response.
--
-- Called with `internal` (mod.rs: `parse_head`, `tls_connect`,
-- `illegal`, `timed_out`); returns the table of functions that
-- httpc.lua and io.lua share.
local internal = ...

local socket = require('socket')
local fiber = require('fiber')
local errno = require('errno')

local parse_head = internal.parse_head
local tls_connect = internal.tls_connect

local M = {}

-- curl's default: no limit (about 100 years).
M.TIMEOUT_INFINITY = 100 * 365 * 86400
-- curl's message for a connection closed before a response.
M.NOTHING = 'Server returned nothing (no headers, no data)'
-- Master's limit of one request header line ("name: value"), in bytes.
M.MAX_HEADER_LEN = 8192
-- The most bytes one fill of a buffered stream asks for.
local RECV = 65536

local function deadline_left(deadline)
    local left = deadline - fiber.clock()
    return left > 0 and left or 0
end
M.deadline_left = deadline_left

-- scheme, host, port, target ('/path?query') of an absolute URL; nil and
-- curl's message when it is not one.
function M.split_url(url)
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

-- Raises master's error for a scheme other than http and https.
function M.check_scheme(scheme)
    if scheme ~= 'http' and scheme ~= 'https' then
        error(('Unsupported protocol: %s'):format(scheme))
    end
end

-- {{{ Buffered streams: the answer rules of socket:read() (master's
-- check_limit and check_delimiter) over `self._fill(ctx, max, timeout)`,
-- which gives bytes, '' at the end, or nil and an error.

local buffered = {}
local buffered_mt = {__index = buffered}

-- A buffered stream over `fill(ctx, ...)`.
function M.buffered(fill, ctx)
    return setmetatable({_buf = '', _eof = false, _fill = fill, _ctx = ctx}, buffered_mt)
end

-- The length of the answer in `buf` for `limit` and `delims`, if any.
local function answer_len(buf, limit, delims)
    if delims == nil then
        return #buf >= limit and limit or nil
    end
    if limit == 0 then return 0 end
    if #buf == 0 then return nil end
    local shortest
    for _, d in ipairs(delims) do
        local at = buf:find(d, 1, true)
        if at ~= nil then
            local len = at + #d - 1
            if shortest == nil or len < shortest then shortest = len end
        end
    end
    if shortest ~= nil and shortest <= limit then return shortest end
    if limit <= #buf then return limit end
    return nil
end

-- Up to `limit` bytes, or up to the first of `delims` (a list, or nil);
-- at the end of the stream what there is; nil and the error on failure
-- or timeout (the buffered bytes stay).
function buffered:take(limit, delims, timeout)
    local deadline = fiber.clock() + timeout
    local buf = self._buf
    while true do
        local n = answer_len(buf, limit, delims)
        if n ~= nil then
            self._buf = buf:sub(n + 1)
            return buf:sub(1, n)
        end
        if self._eof then
            self._buf = ''
            return buf
        end
        -- A count: gather the pieces, join once.
        local parts, have = {buf}, #buf
        repeat
            local want = delims == nil and math.min(RECV, limit - have) or RECV
            local data, err = self._fill(self._ctx, want, deadline_left(deadline))
            if data == nil then
                self._buf, self._err = table.concat(parts), err
                return nil, err
            elseif data == '' then
                self._eof = true
            else
                parts[#parts + 1] = data
                have = have + #data
            end
        until delims ~= nil or self._eof or have >= limit
        buf = table.concat(parts)
    end
end

-- What is buffered, or what one fill gives: at most `max` bytes, '' at
-- the end, nil and the error.
function buffered:some(max, timeout)
    local buf = self._buf
    if #buf > 0 then
        self._buf = buf:sub(max + 1)
        return buf:sub(1, max)
    end
    if self._eof then return '' end
    local data, err = self._fill(self._ctx, max, timeout)
    if data == nil then
        self._err = err
    elseif data == '' then
        self._eof = true
    end
    return data, err
end

-- socket:read()'s arguments: a count, or {delimiter =, chunk =}.
function buffered:read(opts, timeout)
    if type(opts) == 'number' then
        return self:take(opts, nil, timeout)
    end
    local d = opts.delimiter
    return self:take(opts.chunk or 2147483647, d and {d}, timeout)
end

function buffered:error()
    return self._err
end

-- A TLS session's stream.
local function tls_fill(ctx, max, timeout)
    return ctx.session:recv(max, timeout)
end

local tls_stream = setmetatable({}, {__index = buffered})
local tls_stream_mt = {__index = tls_stream}

function tls_stream:write(data, timeout)
    local n, err = self._ctx.session:send(data, timeout)
    if n == nil then self._err = err end
    return n
end

function tls_stream:close()
    self._ctx.session:close()
    self._ctx.sock:close()
end

-- A plain socket as a buffered stream whose fill gives what the socket
-- has (the io object reads its body as it comes).
local function plain_fill(sock, max, timeout)
    local deadline = fiber.clock() + timeout
    while true do
        local data = sock:sysread(max)
        if data ~= nil then return data end
        local e = sock:errno()
        if e ~= errno.EAGAIN and e ~= errno.EWOULDBLOCK and e ~= errno.EINTR then
            return nil, sock:error()
        end
        if not sock:readable(deadline_left(deadline)) then
            return nil, sock:error() or 'timed out'
        end
    end
end

local plain_stream = setmetatable({}, {__index = buffered})
local plain_stream_mt = {__index = plain_stream}

function plain_stream:write(data, timeout)
    local n = self._ctx:write(data, timeout)
    if n == nil then self._err = self._ctx:error() end
    return n
end

function plain_stream:close()
    self._ctx:close()
end

-- }}}

-- {{{ Connecting

-- The TLS options of `opts`, as a pool key's part (a connection made
-- with one set of them serves only requests with the same).
local function tls_key(opts)
    return ('%s|%s|%s|%s|%s|%s'):format(opts.verify_peer == nil or not not opts.verify_peer,
        opts.verify_host == nil or not not opts.verify_host, opts.ca_file or '',
        opts.ca_path or '', opts.ssl_cert or '', opts.ssl_key or '')
end

-- The pool key of a request.
function M.pool_key(scheme, host, port, opts)
    local key = scheme .. '://' .. host .. ':' .. port
    if scheme == 'https' then key = key .. '|' .. tls_key(opts) end
    return key
end

-- A new connection: a stream (the socket itself for http, or a TLS
-- stream; the buffered kind for both when `buffered_plain`), or nil,
-- status and reason (595, 408, 495) of a failure. Raises master's
-- errors (an unusable CA file or client certificate, a broken
-- handshake).
function M.connect(scheme, host, port, opts, deadline, buffered_plain)
    local s, err = socket.tcp_connect(host, port, deadline_left(deadline))
    if s == nil then
        if deadline_left(deadline) == 0 or tostring(err):lower():find('timed out') then
            return nil, 408, 'Timeout was reached'
        end
        return nil, 595, "Couldn't connect to server"
    end
    s:setsockopt('SOL_SOCKET', 'SO_KEEPALIVE', true)
    s:nonblock(true)
    if scheme == 'https' then
        local session, status, reason = tls_connect(s, host, opts, deadline_left(deadline))
        if session == nil then
            s:close()
            if status == 0 then error(reason) end
            return nil, status, reason
        end
        return setmetatable({_buf = '', _eof = false, _fill = tls_fill,
                             _ctx = {session = session, sock = s}}, tls_stream_mt)
    end
    if buffered_plain then
        return setmetatable({_buf = '', _eof = false, _fill = plain_fill, _ctx = s},
                            plain_stream_mt)
    end
    return s
end

-- }}}

-- {{{ The pool: per client, idle connections by key (a list of streams
-- and a list of the times each may be taken until: when it was put back
-- plus the `keepalive_idle` the server was told). A kept connection
-- stays open until it is taken again, found past its time, or collected
-- with its client: a peer waiting for its next request (a server fiber
-- of the same script) waits as long.

-- An idle connection to `key` from the pool (one that idled past its
-- time is closed), or nil.
function M.take_idle(self, key)
    local idle = self._pool[key]
    if idle == nil then return nil end
    local streams, untils = idle[1], idle[2]
    local n = #streams
    while n > 0 do
        local stream, until_ = streams[n], untils[n]
        streams[n], untils[n] = nil, nil
        n = n - 1
        self._idle = self._idle - 1
        if fiber.clock() < until_ then
            return stream
        end
        M.drop(self, stream)
    end
    return nil
end

-- Puts `stream` back for `idle` seconds, or closes it past
-- max_connections.
function M.put_idle(self, key, stream, idle)
    local limit = self._max_connections
    if limit >= 0 and self._idle >= limit then
        M.drop(self, stream)
        return
    end
    local lists = self._pool[key]
    if lists == nil then
        lists = {{}, {}}
        self._pool[key] = lists
    end
    local n = #lists[1] + 1
    lists[1][n], lists[2][n] = stream, fiber.clock() + idle
    self._idle = self._idle + 1
end

function M.drop(self, stream)
    stream:close()
    self._stat.sockets_deleted = self._stat.sockets_deleted + 1
end

-- }}}

-- The request head. As master's httpc.c: `Accept: */*` and `Connection:
-- close` unless the caller sets them; `Connection: Keep-Alive` and
-- `Keep-Alive: timeout=IDLE` with `keepalive_idle` and
-- `keepalive_interval` both above 0. `extra` lines (a list, or nil)
-- follow the caller's unless it set them.
function M.request_head(method, scheme, host, port, target, headers, keepalive, extra)
    local lines = {method .. ' ' .. target .. ' HTTP/1.1'}
    local have = {}
    for k, v in pairs(headers) do
        have[k:lower()] = true
        lines[#lines + 1] = k .. ': ' .. tostring(v)
    end
    if extra ~= nil then
        for _, line in ipairs(extra) do
            local name = line:match('^([^:]*)'):lower()
            if not have[name] then
                have[name] = true
                lines[#lines + 1] = line
            end
        end
    end
    if not have['connection'] then
        lines[#lines + 1] = keepalive and 'Connection: Keep-Alive' or 'Connection: close'
    end
    if keepalive and not have['keep-alive'] then
        lines[#lines + 1] = 'Keep-Alive: timeout=' .. math.floor(keepalive)
    end
    if not have['host'] then
        local h = host:find(':', 1, true) and '[' .. host .. ']' or host
        if port ~= (scheme == 'https' and 443 or 80) then h = h .. ':' .. port end
        lines[#lines + 1] = 'Host: ' .. h
    end
    if not have['accept'] then
        lines[#lines + 1] = 'Accept: */*'
    end
    lines[#lines + 1] = '\r\n'
    return table.concat(lines, '\r\n')
end

-- Reads a response head from `s`: status, reason (master's: "Ok" for
-- 1xx-3xx, "Unknown" otherwise, not the server's phrase), headers,
-- minor version; interim 1xx responses (100 Continue) are passed over.
-- nil and an error on failure.
function M.read_head(s, deadline)
    while true do
        local raw = s:read({delimiter = '\r\n\r\n'}, deadline_left(deadline))
        if raw == nil or raw == '' then
            return nil, s:error() or M.NOTHING
        end
        local status, reason, headers, minor = parse_head(raw)
        if not status then
            return nil, reason or 'Invalid HTTP response'
        end
        if status >= 200 or status == 101 then
            reason = (status >= 100 and status < 400) and 'Ok' or 'Unknown'
            return status, reason, headers, minor
        end
    end
end

-- How the body of a response comes: 'none', 'chunked', 'length' (and
-- the length) or 'eof'; nil and an error for a bad Content-Length.
function M.framing(method, status, headers)
    local te = headers['transfer-encoding']
    local cl = headers['content-length']
    if type(cl) == 'table' then cl = cl[1] end
    if method == 'HEAD' or status == 204 or status == 304 or status < 200 then
        return 'none'
    elseif type(te) == 'string' and te:lower():find('chunked', 1, true) then
        return 'chunked'
    elseif cl ~= nil then
        local n = tonumber(cl)
        if n == nil or n < 0 then return nil, 'Invalid Content-Length' end
        return 'length', n
    end
    return 'eof'
end

-- Whether the connection may be kept after a response with `headers`.
function M.may_keep(minor, headers)
    local keep = minor == 1
    local conn = headers['connection']
    if type(conn) == 'string' then
        conn = conn:lower()
        if conn:find('close', 1, true) then keep = false end
        if conn:find('keep-alive', 1, true) then keep = true end
    end
    return keep
end

return M
