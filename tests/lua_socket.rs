//! The Lua `socket` and `errno` modules, Tarantool master's semantics:
//! reads over the read-ahead buffer, timeouts, end of stream, a reset
//! peer, a cancel during a read, close by the GC, `tcp_server`'s fibers,
//! argument errors. Loopback only; every wait is bounded by a timeout far
//! longer than the test needs, so a bug fails instead of hanging.

use luafiber::LuaRuntime;

const PRELUDE: &str = r#"
local socket = require('socket')
local fiber = require('fiber')
local errno = require('errno')
local function eq(got, want, what)
    if got ~= want then
        error(('%s: got %s, want %s'):format(what, tostring(got), tostring(want)), 2)
    end
end
-- Sockets closed when the test ends, passed or failed (a server left
-- open would keep the test's scheduler waiting for ever).
local open_sockets = {}
local function track(...)
    for i = 1, select('#', ...) do
        local v = select(i, ...)
        if type(v) == 'userdata' then open_sockets[#open_sockets + 1] = v end
    end
    return ...
end
-- A connected TCP pair on loopback: the client and the server's side.
local function tcp_pair()
    local l = track(socket('AF_INET', 'SOCK_STREAM', 'tcp'))
    assert(l:bind('127.0.0.1', 0) and l:listen())
    local c = socket.tcp_connect('127.0.0.1', l:name().port, 10)
    assert(c, 'connect')
    assert(l:readable(10), 'a connection to accept')
    local a = l:accept()
    assert(a, 'accept')
    l:close()
    return track(c, a)
end
"#;

fn run(code: &str) {
    let rt = LuaRuntime::new().unwrap();
    let chunk = format!(
        "{PRELUDE}\nlocal ok, err = pcall(function()\n{code}\nend)\n\
         for _, s in ipairs(open_sockets) do\n\
             if not socket.internal.is_closed(s) then s:close() end\n\
         end\n\
         if not ok then error(err, 0) end"
    );
    if let Err(e) = rt.run_chunk(&chunk, "lua_socket") {
        panic!("{e}");
    }
}

#[test]
fn read_by_size_delimiter_and_chunk_keeps_the_delimiter() {
    run(r#"
        local a, b = track(socket.socketpair('AF_UNIX', 'SOCK_STREAM', 0))
        eq(a:write('one\ntwo\r\nthree\nfour'), 19, 'write')
        eq(b:read('\n', 10), 'one\n', 'delimited')
        eq(b:read({delimiter = {'\n', '\r\n'}}, 10), 'two\r\n', 'first delimiter to end')
        eq(b:read(2, 10), 'th', 'sized')
        eq(b:read({chunk = 2, delimiter = '\n'}, 10), 're', 'chunk before the delimiter')
        eq(b:read({line = '\n'}, 10), 'e\n', 'line is delimiter')
        eq(b:read(0, 10), '', 'zero bytes')
        eq(b:read({size = 4}, 10), 'four', 'size is chunk')
        eq(b:errno(), 0, 'no error')
        a:close(); b:close()
    "#);
}

#[test]
fn a_timeout_gives_nil_and_keeps_the_bytes() {
    run(r#"
        local a, b = track(socket.socketpair('AF_UNIX', 'SOCK_STREAM', 0))
        a:write('abc')
        eq(b:read('\n', 0.01), nil, 'no line yet')
        eq(b:errno(), errno.ETIMEDOUT, 'errno')
        eq(errno(), errno.ETIMEDOUT, 'errno()')
        eq(b:error(), errno.strerror(errno.ETIMEDOUT), 'error')
        eq(b:read(5, 0), nil, 'a zero timeout')
        a:write('def\n')
        eq(b:read('\n', 10), 'abcdef\n', 'kept bytes come first')
        eq(b:errno(), 0, 'cleared by a read that succeeds')
        a:close(); b:close()
    "#);
}

#[test]
fn end_of_stream_gives_the_rest_then_the_empty_string() {
    run(r#"
        local c, s = tcp_pair()
        c:write('partial')
        c:shutdown('W')
        eq(s:read('\n', 10), 'partial', 'the rest, without a delimiter')
        eq(s:read('\n', 10), '', 'then the empty string')
        eq(s:read(5, 10), '', 'again')
        -- Bytes and the end of stream that arrive together, read one by one.
        local c2, s2 = tcp_pair()
        c2:write('xyz')
        c2:close()
        assert(s2:readable(10))
        fiber.sleep(0.01)
        for _, want in ipairs({'x', 'y', 'z', ''}) do
            eq(s2:read(1, 10), want, 'byte by byte')
        end
        c:close(); s:close(); s2:close()
    "#);
}

#[test]
fn a_reset_peer_gives_an_error_not_a_hang() {
    run(r#"
        local c, s = tcp_pair()
        local r = fiber.new(function() return s:read('\n', 10) end)
        r:set_joinable(true)
        fiber.yield()
        -- SO_LINGER with a zero timeout: close sends a RST.
        assert(c:linger(true, 0))
        c:close()
        local ok, got = r:join()
        assert(ok, tostring(got))
        eq(got, nil, 'read after a reset')
        eq(s:errno(), errno.ECONNRESET, 'errno')
        eq(s:write('x'), nil, 'write after a reset')
        s:close()
    "#);
}

#[test]
fn a_cancel_during_a_read_raises_and_keeps_the_bytes() {
    run(r#"
        local a, b = track(socket.socketpair('AF_UNIX', 'SOCK_STREAM', 0))
        a:write('he')
        local r = fiber.new(function() return b:read('\n') end)
        r:set_joinable(true)
        fiber.yield()
        eq(r:status(), 'suspended', 'parked in read')
        r:cancel()
        local ok, err = r:join()
        eq(ok, false, 'the read raised')
        eq(err.type, 'FiberIsCancelled', 'error type')
        a:write('llo\n')
        eq(b:read('\n', 10), 'hello\n', 'the bytes stayed')
        a:close(); b:close()
    "#);
}

#[test]
fn a_close_from_another_fiber_wakes_the_reader() {
    run(r#"
        local a, b = track(socket.socketpair('AF_UNIX', 'SOCK_STREAM', 0))
        local r = fiber.new(function() return b:read('\n'), errno() end)
        r:set_joinable(true)
        fiber.yield()
        b:close()
        local ok, got, e = r:join()
        assert(ok, tostring(got))
        eq(got, nil, 'read of a closed socket')
        eq(e, errno.EBADF, 'errno')
        local ok2, err = pcall(b.read, b, 1)
        eq(ok2, false, 'a method of a closed socket raises')
        eq(err.message, 'attempt to use closed socket', 'message')
        a:close()
    "#);
}

#[test]
fn data_that_comes_while_the_reader_is_busy_is_read() {
    // A short read marks the socket drained; bytes that arrive while the
    // reader does something else (other fibers run, the loop polls) must
    // still wake its next read.
    run(r#"
        local c, s = tcp_pair()
        for i = 1, 50 do
            c:write('ping ' .. i .. '\n')
            eq(s:read('\n', 10), 'ping ' .. i .. '\n', 'line ' .. i)
            local w = fiber.create(function() c:write('late ' .. i .. '\n') end)
            for _ = 1, i % 3 do fiber.yield() end
            eq(s:read('\n', 10), 'late ' .. i .. '\n', 'late line ' .. i)
        end
        c:close(); s:close()
    "#);
}

#[test]
fn pipelined_requests_get_every_reply() {
    run(r#"
        local c, s = tcp_pair()
        local server = fiber.create(function()
            while true do
                local line = s:read('\n', 10)
                if line == nil or line == '' then break end
                s:write('+' .. line)
            end
        end)
        local batch = {}
        for i = 1, 16 do batch[i] = 'req' .. i .. '\n' end
        for round = 1, 20 do
            c:write(table.concat(batch))
            for i = 1, 16 do eq(c:read('\n', 10), '+req' .. i .. '\n', 'reply') end
        end
        -- Half a request after a whole one: the reply to the whole one
        -- comes before the rest is sent.
        c:write('a\nb')
        eq(c:read('\n', 10), '+a\n', 'reply before the rest')
        c:write('\n')
        eq(c:read('\n', 10), '+b\n', 'reply to the rest')
        c:close()
    "#);
}

#[test]
fn tcp_server_names_its_fibers_and_closes_each_connection() {
    run(r#"
        local names = {}
        local server = track(socket.tcp_server('127.0.0.1', 0, function(s, from)
            names[#names + 1] = fiber.name()
            eq(from.host, '127.0.0.1', 'from.host')
            eq(from.family, 'AF_INET', 'from.family')
            s:write('hi\n')
        end))
        assert(server, 'tcp_server')
        local port = server:name().port
        local named = track(socket.tcp_server('127.0.0.1', 0, {
            handler = function(s) names[#names + 1] = fiber.name() end,
            name = 'echo',
        }))
        -- As Tarantool: after the address asked for (port 0 here).
        local loops = 0
        for _, f in pairs(fiber.info()) do
            if f.name == 'server/127.0.0.1:0' or f.name == 'echo/127.0.0.1:0' then
                loops = loops + 1
            end
        end
        eq(loops, 2, 'accept loops named after the address')
        local c = track(socket.tcp_connect('127.0.0.1', port, 10))
        local cport = c:name().port
        eq(c:read('\n', 10), 'hi\n', 'the reply')
        eq(c:read('\n', 10), '', 'closed when the handler returned')
        eq(names[1], 'server/127.0.0.1:' .. cport, 'handler fiber name')
        local c2 = track(socket.tcp_connect('127.0.0.1', named:name().port, 10))
        eq(c2:read(1, 10), '', 'closed')
        eq(names[2], 'echo/127.0.0.1:' .. c2:name().port, 'named server')
        c:close(); c2:close()
        server:close(); named:close()
    "#);
}

#[test]
fn bad_arguments_raise_error_objects() {
    run(r#"
        local function raises(msg, f, ...)
            local ok, err = pcall(f, ...)
            eq(ok, false, msg .. ' raised')
            eq(type(err), 'table', msg .. ': an error object')
            eq(err.type, 'IllegalParams', msg .. ': type')
            eq(err.message, msg, 'message')
        end
        local a, b = track(socket.socketpair('AF_UNIX', 'SOCK_STREAM', 0))
        raises('Usage: socket:method()', a.read)
        raises('Usage: socket:method(), called with non-socket', a.read, {})
        raises('socket:read(): limit can not be negative', a.read, a, -1)
        local usage = 'Usage: s:read(delimiter|chunk|{delimiter = x, chunk = x}, timeout)'
        raises(usage, a.read, a, true)
        raises(usage, a.read, a, {chunk = 'x'})
        raises(usage, a.read, a, 1, 'soon')
        raises('Usage: s:write(octets[, timeout])', a.write, a, 5)
        raises("Usage: iowait(fd, 1 | 'r' | 2 | 'w' | 3 | 'rw' [, timeout])", socket.iowait, a:fd(), 'x')
        raises('Unknown socket option name: SO_NOPE', a.setsockopt, a, 'SOL_SOCKET', 'SO_NOPE', 1)
        raises('Socket option SO_TYPE is read only', a.setsockopt, a, 'SOL_SOCKET', 'SO_TYPE', 1)
        raises('fd must be a number', socket.from_fd, 'x')
        raises('Usage: socket.tcp_server(host, port, handler | opts)', socket.tcp_server, '127.0.0.1', 0, 5)
        a:close()
        raises('attempt to use closed socket', a.write, a, 'x')
        raises('attempt to use closed socket', a.close, a)
        b:close()
    "#);
}

#[test]
fn failures_return_nil_and_set_errno() {
    run(r#"
        eq(socket('AF_NOPE', 'SOCK_STREAM', 'tcp'), nil, 'bad domain')
        eq(errno(), errno.EINVAL, 'errno')
        eq(socket.socketpair('AF_UNIX', 'SOCK_STREAM', 'no-such-protocol'), nil, 'bad protocol')
        eq(errno(), errno.EPROTOTYPE, 'errno')
        -- A port nothing listens on: bind one, close it.
        local l = socket('AF_INET', 'SOCK_STREAM', 'tcp')
        assert(l:bind('127.0.0.1', 0))
        local port = l:name().port
        l:close()
        local s, err = socket.tcp_connect('127.0.0.1', port, 10)
        eq(s, nil, 'refused')
        eq(err, errno.strerror(errno.ECONNREFUSED), 'message')
        eq(errno(), errno.ECONNREFUSED, 'errno')
        local r, msg = socket.getaddrinfo('127.0.0.1', 'no-such-service-name')
        eq(r, nil, 'unknown service')
        assert(msg:match('^getaddrinfo: '), msg)
        local u = socket('AF_INET', 'SOCK_STREAM', 'tcp')
        eq(u:bind('not an address', 1), false, 'bind to a name')
        eq(u:errno(), errno.EINVAL, 'errno')
        eq(u:read(1, 10), nil, 'read of an unconnected socket')
        eq(u:errno(), errno.ENOTCONN, 'errno')
        u:close()
    "#);
}

#[test]
fn readiness_waits_and_iowait() {
    run(r#"
        local a, b = track(socket.socketpair('AF_UNIX', 'SOCK_STREAM', 0))
        eq(b:readable(0), false, 'nothing to read')
        eq(b:errno(), errno.ETIMEDOUT, 'errno')
        eq(b:writable(10), true, 'room to write')
        eq(b:wait(10), 'W', 'wait')
        eq(socket.iowait(b:fd(), 'R', 0), '', 'iowait timeout (string)')
        eq(socket.iowait(b:fd(), 1, 0), 0, 'iowait timeout (number)')
        local f = fiber.create(function() fiber.yield(); a:write('x') end)
        eq(socket.iowait(b:fd(), 'r', 10), 'R', 'iowait wakes on data')
        eq(b:wait(10), 'RW', 'both ways')
        eq(socket.iowait(b:fd(), 3, 10), 3, 'numeric mask')
        eq(b:sysread(), 'x', 'sysread')
        eq(b:sysread(), nil, 'sysread with nothing')
        eq(b:errno(), errno.EAGAIN, 'errno')
        eq(a:syswrite('yz'), 2, 'syswrite')
        eq(b:recv(1), 'y', 'recv')
        eq(a:send('!'), 1, 'send')
        eq(b:recv(10, 'MSG_PEEK'), 'z!', 'recv with a flag name')
        eq(b:recv(10, {'MSG_PEEK', 'MSG_DONTWAIT'}), 'z!', 'recv with a flag list')
        eq(b:recv(10, 'MSG_NOPE'), nil, 'an unknown flag')
        eq(b:errno(), errno.EINVAL, 'errno')
        eq(b:read(2, 10), 'z!', 'read after recv')
        eq(socket.iowait(nil, nil, 0.001), nil, 'iowait sleeps')
        a:close(); b:close()
    "#);
}

#[test]
fn options_names_and_udp() {
    run(r#"
        local s = socket('AF_INET', 'SOCK_DGRAM', 'udp')
        eq(s:getsockopt('SOL_SOCKET', 'SO_TYPE'), 2, 'SO_TYPE')
        eq(s:setsockopt('SOL_SOCKET', 'SO_REUSEADDR', true), true, 'setsockopt')
        eq(s:getsockopt('socket', 'SO_REUSEADDR'), 1, 'getsockopt')
        eq(s:nonblock(), true, 'non-blocking')
        eq(s:nonblock(false), false, 'set blocking')
        eq(s:nonblock(true), true, 'set non-blocking')
        assert(s:bind('127.0.0.1', 0))
        local name = s:name()
        eq(name.family, 'AF_INET', 'family')
        eq(name.type, 'SOCK_DGRAM', 'type')
        eq(name.protocol, 'udp', 'protocol')
        eq(tostring(name), '127.0.0.1:' .. name.port, 'tostring of a name')
        eq(tostring(s), 'fd ' .. s:fd() .. ', aka 127.0.0.1:' .. name.port, 'tostring')
        local t = socket('AF_INET', 'SOCK_DGRAM', 'udp')
        eq(t:sendto('127.0.0.1', name.port, 'datagram'), 8, 'sendto')
        assert(s:readable(10))
        eq(s:recv(), 'datagram', 'recv takes the whole datagram')
        t:sendto('127.0.0.1', name.port, 'two')
        assert(s:readable(10))
        local msg, from = s:recvfrom()
        eq(msg, 'two', 'recvfrom')
        eq(from.port, t:name().port, 'sender')
        local c = socket('AF_INET', 'SOCK_STREAM', 'tcp')
        eq(c:setsockopt('IPPROTO_TCP', 'TCP_NODELAY', 1), true, 'TCP option')
        eq(c:getsockopt('tcp', 'TCP_NODELAY'), 1, 'TCP option back')
        eq(select(1, c:linger()), false, 'linger off')
        s:close(); t:close(); c:close()
    "#);
}

#[test]
fn errno_module() {
    run(r#"
        eq(errno.EAGAIN, 11, 'EAGAIN')
        eq(errno.strerror(errno.ECONNREFUSED), 'Connection refused', 'strerror')
        errno(0)
        eq(errno(errno.EPIPE), 0, 'errno(n) gives the old value')
        eq(errno(), errno.EPIPE, 'and sets the new')
        eq(errno.strerror(), 'Broken pipe', 'strerror of errno()')
        local ok, err = pcall(function() errno.ENOPE = 1 end)
        eq(ok, false, 'new constants')
        eq(err.message, "Can't create new errno constants", 'message')
    "#);
}

/// The inode of what `fd` is open on, if it is open. The tests of this
/// file run in parallel threads, which may reuse a closed fd's number at
/// once: the inode tells a closed socket from a new one.
fn inode(fd: i32) -> Option<u64> {
    // SAFETY: `st` is valid for fstat to write.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        (libc::fstat(fd, &mut st) == 0).then_some(st.st_ino)
    }
}

/// Makes a socket pair kept in the global `keep`; gives its fds and their
/// inodes.
fn open_pair(rt: &LuaRuntime) -> Vec<(i32, u64)> {
    let fds = rt
        .eval(
            r#"
            local socket = require('socket')
            keep = {socket.socketpair('AF_UNIX', 'SOCK_STREAM', 0)}
            return keep[1]:fd(), keep[2]:fd()
        "#,
            vec![],
        )
        .unwrap();
    fds.iter()
        .map(|v| {
            let fd = v.as_i64().unwrap() as i32;
            (fd, inode(fd).expect("open"))
        })
        .collect()
}

fn assert_closed(fds: &[(i32, u64)]) {
    for &(fd, ino) in fds {
        assert_ne!(inode(fd), Some(ino), "fd {fd} is still open on its socket");
    }
}

#[test]
fn a_socket_collected_closes_its_fd() {
    let rt = LuaRuntime::new().unwrap();
    let fds = open_pair(&rt);
    rt.eval(
        "keep = nil; collectgarbage('collect'); collectgarbage('collect')",
        vec![],
    )
    .unwrap();
    assert_closed(&fds);
}

#[test]
fn a_runtime_dropped_with_sockets_open_closes_them() {
    let rt = LuaRuntime::new().unwrap();
    let fds = open_pair(&rt);
    drop(rt);
    assert_closed(&fds);
}

/// Issue 29, item 7: two fibers reading one socket, both parked when the
/// bytes of both their lines arrive in one event: the first to run reads
/// them all into the read-ahead buffer and takes its line; the second was
/// not woken for the line left there and timed out with it buffered. Now
/// each reader looks at the buffer again after every wake (as each waiter
/// of Tarantool's level-triggered loop does).
#[test]
fn a_second_reader_gets_what_the_first_left_in_the_buffer() {
    run(r#"
        for _, kind in ipairs({'unix', 'tcp'}) do
            local a, b
            if kind == 'unix' then
                a, b = track(socket.socketpair('AF_UNIX', 'SOCK_STREAM', 0))
            else
                a, b = tcp_pair()
            end
            local got = {}
            local readers = {}
            for i = 1, 3 do
                readers[i] = fiber.create(function() got[i] = a:read('\n', 10) end)
                readers[i]:set_joinable(true)
            end
            b:write('one\ntwo\nthree\n')
            for i = 1, 3 do readers[i]:join() end
            table.sort(got)
            eq(table.concat(got, ','), 'one\n,three\n,two\n', kind)
            a:close(); b:close()
        end
    "#);
}

#[test]
fn a_fiber_that_keeps_yielding_sees_a_reader_woken_within_a_few_yields() {
    // Tarantool turns its event loop at every yield; luafiber polls once
    // per batch, and keeps batches short (4 switches) while fibers wait on
    // the event loop, the first of them included.
    run(r#"
        local a, b = tcp_pair()
        local got
        fiber.create(function() got = b:read(1, 10) end)
        a:write('x')
        local yields = 0
        while got == nil and yields < 1000 do
            yields = yields + 1
            fiber.sleep(0)
        end
        eq(got, 'x', 'the reader got the byte')
        assert(yields <= 8, 'the reader ran after ' .. yields .. ' yields')
        -- Again, in a batch that began with the reader waiting.
        got = nil
        fiber.create(function() got = b:read(1, 10) end)
        fiber.sleep(0)
        a:write('y')
        yields = 0
        while got == nil and yields < 1000 do
            yields = yields + 1
            fiber.sleep(0)
        end
        eq(got, 'y', 'the reader got the second byte')
        assert(yields <= 8, 'the second reader ran after ' .. yields .. ' yields')
    "#);
}

#[test]
fn the_luasocket_emulation_serves_and_connects_as_masters() {
    // Master's "Lua Socket Emulation": socket.bind/connect/tcp with
    // receive patterns, send ranges, settimeout and setoption.
    run(r#"
        local srv = assert(socket.bind('127.0.0.1', 0))
        track(srv.sock)
        eq(tostring(srv):match('^tcp{server}: fd=%d+$') ~= nil, true, 'server tostring')
        local host, port, family = srv:getsockname()
        eq(host, '127.0.0.1', 'host'); eq(type(port), 'string', 'port type')
        eq(family, 'inet', 'family')
        srv:settimeout(10)
        local got = {}
        local f = fiber.new(function()
            local c = srv:accept()
            got.kind = tostring(c):match('^tcp{(%a+)}')
            got.line = c:receive('*l')
            got.num = c:receive(3, 'pre-')
            c:send('0123456789', 3, 5)
            c:send('bye\n')
            c:close()
        end)
        f:set_joinable(true)
        local c = assert(socket.connect(host, tonumber(port)))
        track(c.sock)
        c:settimeout(10)
        eq(c:send('hello\nabcrest'), 13, 'bytes sent')
        eq(c:receive('*l'), '234bye', 'a line without its newline')
        local r, e, partial = c:receive('*a')
        eq(r, nil, '*a at the end'); eq(e, 'closed', 'closed'); eq(partial, '', 'nothing left')
        assert(f:join())
        eq(got.kind, 'client', 'accepted kind'); eq(got.line, 'hello', 'line')
        eq(got.num, 'pre-abc', 'bytes with a prefix')
        c:close()
        local t = socket.tcp()
        track(t.sock)
        eq(tostring(t):match('^tcp{(%a+)}'), 'master', 'master tostring')
        eq(t:setoption('reuseaddr', true), 1, 'setoption')
        eq(t:bind('127.0.0.1', 0), 1, 'bind'); eq(t:listen(10), 1, 'listen')
        eq(tostring(t):match('^tcp{(%a+)}'), 'server', 'listen makes a server')
        local ok, err = pcall(t.setoption, t, 'bogus', 1)
        eq(ok, false, 'unknown option'); assert(err:find('Unknown socket option name: bogus'), err)
        ok, err = pcall(socket.connect)
        assert(not ok and err:find('Usage: luasocket.connect'), err)
        local m = socket.tcp()
        track(m.sock)
        m:settimeout(10)
        local r1, e1 = m:connect('127.0.0.1', 1)
        eq(r1, nil, 'refused'); eq(e1, 'Connection refused', 'refused message')
        -- s:bind(host) with no port binds a free one, as master's tostring(nil) does.
        local s = track(socket('AF_INET', 'SOCK_STREAM', 'tcp'))
        eq(s:bind('127.0.0.1'), true, 'bind without a port')
        assert(s:name().port > 0, 'a free port')
    "#);
}
