-- http.client's chunked io object (`opts.chunked = true`): master's
-- io_methods `read`, `write` and `finish` (src/lua/httpc.lua, and
-- httpc_request_io_* of src/httpc.c) on a connection of its own.
--
-- The request body goes out as `io:write()` gives it: chunked
-- (`Transfer-Encoding: chunked`), or raw up to a `Content-Length` the
-- caller set; an empty write ends it. The response body is read as it
-- comes (`io:read()`, socket:read()'s rules); `io:finish()` ends the
-- request body, waits for the response and reads all of its body.
--
-- Called with `internal` and `conn`; returns `start`.
local internal, conn = ...

local fiber = require('fiber')

local deadline_left = conn.deadline_left
local IO_TIMEOUT_DEFAULT = 10
local IO_CHUNK_DEFAULT = 2147483647
-- The most bytes one read of the response body asks for.
local RECV = 65536

local send_methods = {POST = true, PUT = true, PATCH = true}

local function check_timeout(timeout)
    timeout = timeout or IO_TIMEOUT_DEFAULT
    if type(timeout) ~= 'number' then
        internal.illegal('io: timeout must be a number')
    elseif timeout < 0 then
        internal.illegal('io: timeout must be >= 0')
    end
    return timeout
end

-- Ends the request with `status` and `reason` (a failure) and drops the
-- connection.
local function fail(self, status, reason)
    local st = self._internal
    self.status, self.reason = status, reason
    st.send_closed, st.body_done = true, true
    st.body._eof = true
    if st.stream ~= nil then
        st.stream:close()
        st.stream = nil
    end
end

-- Reads the response head, if not yet read: true once it is there.
local function ensure_head(self, timeout)
    local st = self._internal
    if st.how ~= nil then return true end
    if st.stream == nil then return false end
    local deadline = fiber.clock() + timeout
    local status, reason, headers, minor = conn.read_head(st.stream, deadline)
    if status == nil then
        local e = tostring(reason):lower()
        if e:find('timed out') then return false, 'timeout' end
        fail(self, reason == conn.NOTHING and 444 or 595, reason)
        return false
    end
    local how, n = conn.framing(st.method, status, headers)
    if how == nil then
        fail(self, 595, n)
        return false
    end
    st.how, st.left, st.chunk_left = how, n, 0
    self.status, self.reason = status, reason
    self.proto = {1, minor}
    st.on_head(self, headers)
    return true
end

-- What a failed read of the connection gives the body's stream: nil and
-- the error for a timeout (the read may be tried again), else the end of
-- the body (the request failed: status 595).
local function broken(self, err)
    if tostring(err):lower():find('timed out') then return nil, err end
    fail(self, 595, err)
    return ''
end

-- The next piece of the response body: bytes, '' at its end, nil and an
-- error (the fill of the body's buffered stream).
local function body_fill(self, max, timeout)
    local st = self._internal
    local deadline = fiber.clock() + timeout
    local ok, why = ensure_head(self, timeout)
    if not ok then
        if why == 'timeout' then return nil, 'timed out' end
        return ''
    end
    local s = st.stream
    if st.body_done or s == nil then return '' end
    local how = st.how
    if how == 'none' or (how == 'length' and st.left == 0) then
        st.body_done = true
        return ''
    end
    if how == 'chunked' and st.chunk_left == 0 then
        local line = s:read({delimiter = '\r\n'}, deadline_left(deadline))
        if line == nil then return broken(self, s:error()) end
        local size = tonumber(line:match('^%s*(%x+)') or '', 16)
        if size == nil then
            fail(self, 595, 'Invalid chunk size')
            return ''
        end
        if size == 0 then
            repeat
                line = s:read({delimiter = '\r\n'}, deadline_left(deadline))
            until line == nil or line == '' or line == '\r\n'
            st.body_done = true
            return ''
        end
        st.chunk_left = size
    end
    local want = max
    if how == 'chunked' then want = math.min(want, st.chunk_left) end
    if how == 'length' then want = math.min(want, st.left) end
    local data, err = s:some(want, deadline_left(deadline))
    if data == nil then return broken(self, err) end
    if data == '' then
        st.body_done = true
        return ''
    end
    if how == 'length' then
        st.left = st.left - #data
    elseif how == 'chunked' then
        st.chunk_left = st.chunk_left - #data
        if st.chunk_left == 0 then s:read(2, deadline_left(deadline)) end
    end
    return data
end

-- Sends `data` as the request body allows; the bytes taken.
local function send(self, data, timeout)
    local st = self._internal
    if st.send_closed or st.stream == nil then return 0 end
    if st.content_length ~= nil then
        local room = st.content_length - st.sent
        if #data > room then data = data:sub(1, room) end
        if #data == 0 then return 0 end
    end
    local framed = data
    if st.content_length == nil then
        framed = ('%x\r\n'):format(#data) .. data .. '\r\n'
    end
    if st.stream:write(framed, timeout) == nil then
        local err = tostring(st.stream:error()):lower()
        if err:find('timed out') then internal.timed_out() end
        fail(self, 595, st.stream:error())
        return 0
    end
    st.sent = st.sent + #data
    if st.content_length ~= nil and st.sent >= st.content_length then
        st.send_closed = true
    end
    return #data
end

-- Ends the request body.
local function close_send(self, timeout)
    local st = self._internal
    if st.send_closed then return end
    st.send_closed = true
    if st.content_length == nil and st.stream ~= nil then
        if st.stream:write('0\r\n\r\n', timeout) == nil then
            fail(self, 595, st.stream:error())
        end
    end
end

local function io_write(self, data, timeout)
    timeout = check_timeout(timeout)
    if type(data) == 'number' then data = tostring(data) end
    if type(data) ~= 'string' then
        internal.illegal('io: data must be a string')
    end
    local st = self._internal
    if not st.send then
        internal.illegal('io: HTTP request method with no body to send')
    end
    if st.send_closed or st.stream == nil then return 0 end
    if #data == 0 then
        close_send(self, timeout)
        return 0
    end
    return send(self, data, timeout)
end

local function io_finish(self, timeout)
    timeout = check_timeout(timeout)
    local st = self._internal
    if st.finished then return end
    local deadline = fiber.clock() + timeout
    close_send(self, timeout)
    local ok, why = ensure_head(self, deadline_left(deadline))
    if not ok then
        if why == 'timeout' then fail(self, 408, 'Timeout was reached') end
        st.finished = true
        return
    end
    -- All of the body, kept for io:read().
    local body = st.body
    local parts = {body._buf}
    while not body._eof do
        local data, err = body_fill(self, RECV, deadline_left(deadline))
        if data == nil then
            if tostring(err):lower():find('timed out') then
                body._buf = table.concat(parts)
                fail(self, 408, 'Timeout was reached')
                st.finished = true
                return
            end
            break
        elseif data == '' then
            break
        end
        parts[#parts + 1] = data
    end
    body._buf, body._eof = table.concat(parts), true
    st.finished = true
    if st.stream ~= nil then
        st.stream:close()
        st.stream = nil
    end
end

local function io_read(self, opts, timeout)
    local chunk, delimiter
    if type(opts) == 'number' then
        chunk = opts
    elseif type(opts) == 'string' then
        chunk, delimiter = IO_CHUNK_DEFAULT, {opts}
    elseif type(opts) == 'table' then
        chunk = opts.chunk or IO_CHUNK_DEFAULT
        delimiter = opts.delimiter
        if type(delimiter) == 'string' then delimiter = {delimiter} end
    else
        error('Usage: io:read(delimiter|chunk|{delimiter = x, chunk = x}, timeout)')
    end
    if chunk < 0 then
        error('io:read(): chunk size can not be negative')
    end
    timeout = check_timeout(timeout)
    chunk = math.min(chunk, IO_CHUNK_DEFAULT)
    local data, err = self._internal.body:take(chunk, delimiter, timeout)
    if data == nil then
        if tostring(err):lower():find('timed out') then internal.timed_out() end
        return ''
    end
    return data
end

local io_mt = {__index = {read = io_read, write = io_write, finish = io_finish}}

-- The io object of a request: connects, sends the head and `body` (the
-- first part of the request body); for a method with no body, reads the
-- response head. `on_head(io, headers)` sets `io.headers` from the raw
-- headers. Raises master's errors (a bad scheme).
local function start(method, url, body, opts, on_head)
    local scheme, host, port, target = conn.split_url(url)
    local self = setmetatable({}, io_mt)
    local st = {method = method, send = send_methods[method] == true, sent = 0,
                on_head = on_head}
    st.body = conn.buffered(body_fill, self)
    self._internal = st
    if scheme == nil then
        fail(self, 595, host)
        return self
    end
    conn.check_scheme(scheme)
    local timeout = opts.timeout or conn.TIMEOUT_INFINITY
    local deadline = fiber.clock() + timeout
    local stream, status, reason = conn.connect(scheme, host, port, opts, deadline, true)
    if stream == nil then
        fail(self, status, reason)
        return self
    end
    st.stream = stream
    local extra = {}
    local cl = nil
    for k, v in pairs(opts.headers) do
        if k:lower() == 'content-length' then cl = tonumber(v) end
    end
    if st.send then
        st.content_length = cl
        if cl == nil then extra[1] = 'Transfer-Encoding: chunked' end
    else
        st.send_closed = true
    end
    local head = conn.request_head(method, scheme, host, port, target, opts.headers,
                                   nil, extra)
    if stream:write(head, deadline_left(deadline)) == nil then
        fail(self, 595, stream:error())
        return self
    end
    if st.send and body ~= nil and #body > 0 then
        send(self, body, deadline_left(deadline))
    end
    if not st.send then
        local ok, why = ensure_head(self, deadline_left(deadline))
        if not ok and why == 'timeout' then fail(self, 408, 'Timeout was reached') end
    end
    return self
end

return {start = start}
