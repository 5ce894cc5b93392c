-- http.client's requests (not the chunked io object): one exchange on a
-- kept or new connection, redirects, master's statuses for failures and
-- the client's counters.
--
-- Called with `internal` and `conn` (conn.lua's functions); returns
-- `driver_request` and `count`.
local _, conn = ...

local fiber = require('fiber')

local deadline_left = conn.deadline_left
local NOTHING = conn.NOTHING
local MAX_REDIRECTS = 20

-- A response that did not come (master's curl errors): status 595, 408
-- or 495, reason the message.
local function failure(status, reason)
    return {status = status, reason = reason, headers = {}}
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
    local status, reason, headers, minor = conn.read_head(s, deadline)
    if status == nil then
        return nil, false, reason
    end
    local keep = conn.may_keep(minor, headers)
    local resp = {status = status, headers = headers, proto = {1, minor}, reason = reason}
    local how, n = conn.framing(method, status, headers)
    if how == nil then
        return nil, false, n
    elseif how == 'none' then
        resp.body = ''
    elseif how == 'chunked' then
        local b, err = read_chunked(s, deadline)
        if b == nil then return nil, false, err end
        resp.body = b
    elseif how == 'length' then
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

-- The response of a failed exchange.
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
    local scheme, host, port, target = conn.split_url(url)
    if scheme == nil then
        return failure(595, host)
    end
    conn.check_scheme(scheme)
    local deadline = fiber.clock() + (opts.timeout or conn.TIMEOUT_INFINITY)
    local idle, interval = tonumber(opts.keepalive_idle), tonumber(opts.keepalive_interval)
    local keepalive = idle and interval and idle > 0 and interval > 0 and idle or nil
    local extra
    if body ~= nil then
        -- curl's type of a body given as bytes.
        extra = {'Content-Length: ' .. #body,
                 'Content-Type: application/x-www-form-urlencoded'}
    end
    local head = conn.request_head(method, scheme, host, port, target, opts.headers,
                                   keepalive, extra)
    local key = conn.pool_key(scheme, host, port, opts)
    -- A kept connection the server closed meanwhile fails at once: the
    -- request then goes once more on a new one (curl does the same).
    local s = conn.take_idle(self, key)
    local reused = s ~= nil
    while true do
        if s == nil then
            local status, reason
            s, status, reason = conn.connect(scheme, host, port, opts, deadline)
            if s == nil then return failure(status, reason) end
            self._stat.sockets_added = self._stat.sockets_added + 1
        end
        local resp, keep, xerr = exchange(s, method, head, body, deadline)
        if resp ~= nil then
            -- A connection asked to close is not kept.
            if keep and keepalive then
                conn.put_idle(self, key, s, keepalive)
            else
                conn.drop(self, s)
            end
            return resp
        end
        conn.drop(self, s)
        if not reused or deadline_left(deadline) == 0 then
            return failed(xerr, deadline)
        end
        s, reused = nil, false
    end
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

-- Counts a finished request in the client's stat.
local function count(self, status)
    if status == 200 then
        self._stat.http_200_responses = self._stat.http_200_responses + 1
    else
        self._stat.http_other_responses = self._stat.http_other_responses + 1
    end
    if status >= 400 then
        self._stat.failed_requests = self._stat.failed_requests + 1
    end
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
    count(self, resp.status)
    return resp
end

return {driver_request = driver_request, count = count}
