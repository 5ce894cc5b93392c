//! The Lua `http.client` module on both engines, against a server of the
//! same script on loopback (`socket.tcp_server`): keep-alive reuse (and a
//! kept connection the server closed, one that idled past its time),
//! bodies by length, chunked and to the end of the stream, redirects,
//! master's statuses for timeouts and refused connections, the request
//! header limit, the chunked io object (on Lua 5.4 too, where master's
//! http_client_test.lua does not run).

#[path = "support/lua_run.rs"]
mod lua_run;

const PRELUDE: &str = r#"
local http = require('http.client')
local socket = require('socket')
local fiber = require('fiber')
-- Answers by the request's path: /len, /chunked, /eof, /redirect, /slow,
-- /once (then closes without a word), /echo (a chunked request body sent
-- back), anything else 404. Counts the
-- connections it accepted; each one waits at most 5 s for its next
-- request.
local accepted = 0
local function answer(path)
    if path == '/len' then
        return 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nSet-Cookie: a=1; Path=/\r\n\r\nhello'
    elseif path == '/chunked' then
        return 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n' ..
               '3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n'
    elseif path == '/redirect' then
        return 'HTTP/1.1 302 Found\r\nLocation: /len\r\nContent-Length: 0\r\n\r\n'
    elseif path == '/slow' then
        fiber.sleep(1)
    end
    return 'HTTP/1.1 404 Not Found\r\nContent-Length: 4\r\n\r\nnope'
end
local server = socket.tcp_server('127.0.0.1', 0, function(s)
    accepted = accepted + 1
    while true do
        local head = s:read({delimiter = '\r\n\r\n'}, 5)
        if head == nil or head == '' then return end
        local path = head:match('^%u+ (%S+)')
        if path == '/eof' then
            s:write('HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nto the end')
            return
        elseif path == '/once' then
            s:write(answer('/len'))
            return
        elseif path == '/echo' then
            -- A chunked request body, sent back by length.
            local parts = {}
            while true do
                local line = s:read({delimiter = '\r\n'}, 5)
                local size = tonumber(line and line:match('^%x+') or '', 16)
                if size == nil then return end
                if size == 0 then
                    s:read({delimiter = '\r\n'}, 5)
                    break
                end
                parts[#parts + 1] = s:read(size + 2, 5):sub(1, size)
            end
            local body = table.concat(parts)
            s:write(('HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s'):format(#body, body))
            return
        end
        if s:write(answer(path)) == nil then return end
    end
end)
local port = server:name().port
local base = ('http://127.0.0.1:%d'):format(port)
local keep = {keepalive_idle = 30, keepalive_interval = 30, timeout = 5}
"#;

fn run(code: &str) {
    lua_run::run_lua("lua_httpc", &[PRELUDE, code, "server:close()"]);
}

#[test]
fn bodies_by_length_chunked_and_to_the_end() {
    run(r#"
        local c = http.new()
        local r = c:get(base .. '/len', keep)
        eq(r.status, 200, 'status')
        eq(r.reason, 'Ok', 'reason as master')
        eq(r.body, 'hello', 'body by length')
        eq(r.cookies.a[1], '1', 'cookie')
        eq(c:get(base .. '/chunked', keep).body, 'abcde', 'chunked body')
        eq(c:get(base .. '/eof', keep).body, 'to the end', 'body to the end')
        r = c:get(base .. '/none', keep)
        eq(r.status, 404, '404')
        eq(r.reason, 'Unknown', 'reason of a 404')
        eq(c:get(base .. '/redirect', keep).body, 'hello', 'redirect followed')
        eq(c:get(base .. '/redirect', {follow_location = false}).status, 302, 'not followed')
    "#);
}

#[test]
fn timeouts_and_refused_connections_give_masters_statuses() {
    run(r#"
        local c = http.new()
        local r = c:get(base .. '/slow', {timeout = 0.05})
        eq(r.status, 408, 'timeout status')
        eq(r.reason, 'Timeout was reached', 'timeout reason')
        local s = socket('AF_INET', 'SOCK_STREAM', 'tcp')
        s:bind('127.0.0.1', 0)
        local free = s:name().port
        s:close()
        r = c:get(('http://127.0.0.1:%d/'):format(free), {timeout = 1})
        eq(r.status, 595, 'refused status')
        eq(r.reason, "Couldn't connect to server", 'refused reason')
        local ok, err = pcall(c.get, c, 'htp://x/')
        eq(ok, false, 'bad scheme')
        assert(tostring(err):find('Unsupported protocol'), 'its error')
    "#);
}

#[test]
fn keep_alive_reuses_one_connection() {
    run(r#"
        local c = http.new()
        for i = 1, 3 do
            eq(c:get(base .. '/len', keep).body, 'hello', 'kept request ' .. i)
        end
        eq(accepted, 1, 'three requests on one connection')
        eq(c:stat().sockets_added, 1, 'one socket added')
        -- Without keepalive_* the kept connection serves once more and is
        -- closed (Connection: close).
        eq(c:get(base .. '/len', {timeout = 5}).body, 'hello', 'not kept')
        eq(accepted, 1, 'the kept connection')
        eq(c:get(base .. '/len', {timeout = 5}).body, 'hello', 'not kept again')
        eq(accepted, 2, 'a new connection')
        -- The server closes a kept connection without a word: the next
        -- request goes once more on a new one.
        eq(c:get(base .. '/once', keep).body, 'hello', 'once')
        eq(c:get(base .. '/len', keep).body, 'hello', 'after the server closed')
        eq(accepted, 4, 'a new connection after the closed one')
        -- A connection idle past keepalive_idle is not taken again.
        local short = {keepalive_idle = 0.05, keepalive_interval = 1, timeout = 5}
        eq(c:get(base .. '/len', short).body, 'hello', 'short keep-alive')
        fiber.sleep(0.1)
        eq(c:get(base .. '/len', short).body, 'hello', 'after the idle time')
        eq(accepted, 5, 'a new connection after the idle time')
        -- Dropping the client closes its kept connections (their
        -- sockets' __gc): the server's fibers see the end at once.
        c = nil
        collectgarbage()
        collectgarbage()
    "#);
}

#[test]
fn request_headers_over_8_kib_are_refused() {
    run(r#"
        local c = http.new()
        local name = 'large'
        local ok, err = pcall(c.get, c, base .. '/len',
                              {headers = {[name] = string.rep('x', 8192 - #name - 1)}})
        eq(ok, false, 'an 8193-byte header line')
        eq(tostring(err), 'header is too large', 'its error')
        eq(err.type, 'IllegalParams', 'its type')
        local r = c:get(base .. '/len', {headers = {[name] = string.rep('x', 8192 - #name - 2)}})
        eq(r.status, 200, 'an 8192-byte header line')
    "#);
}

#[test]
fn chunked_io_object() {
    run(r#"
        local c = http.new()
        -- POST: the body as it is written, the response after finish.
        local io = c:post(base .. '/echo', 'one ', {chunked = true, timeout = 5})
        eq(io:write('two '), 4, 'a chunk')
        eq(io:write('three'), 5, 'another')
        local ok, err = pcall(io.read, io, 1, 0.05)
        eq(ok, false, 'no response before the body ends')
        eq(err.type, 'TimedOut', 'a read times out')
        io:finish()
        eq(io.status, 200, 'status after finish')
        eq(io.reason, 'Ok', 'reason after finish')
        eq(io:read(100), 'one two three', 'the body sent back')
        eq(io:read(100), '', 'its end')
        eq(io:write('more'), 0, 'a write after finish')
        ok, err = pcall(io.finish, io, -1)
        eq(tostring(err), 'io: timeout must be >= 0', 'a negative timeout')
        -- GET: the head at once, a chunked body as it comes.
        io = c:get(base .. '/chunked', {chunked = true, timeout = 5})
        eq(io.status, 200, 'GET status at once')
        eq(io.headers['transfer-encoding'], 'chunked', 'GET headers at once')
        eq(io:read('c'), 'abc', 'read to a delimiter')
        eq(io:read({chunk = 10}), 'de', 'read to the end')
        eq(io:read(10), '', 'nothing after the end')
        ok, err = pcall(io.write, io, 'x')
        eq(err.type, 'IllegalParams', 'GET has no body to write')
        eq(tostring(err), 'io: HTTP request method with no body to send', 'its message')
        io:finish()
        -- A server that is not there.
        local s = socket('AF_INET', 'SOCK_STREAM', 'tcp')
        s:bind('127.0.0.1', 0)
        local free = s:name().port
        s:close()
        io = c:get(('http://127.0.0.1:%d/'):format(free), {chunked = true, timeout = 5})
        eq(io.status, 595, 'refused')
        eq(io:read(10), '', 'nothing to read')
        c = nil
        collectgarbage()
    "#);
}
