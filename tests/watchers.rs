//! Watchers (issue 26): `box.broadcast`, `box.watch`, `box.watch_once`
//! locally; the server's ID, WATCH, UNWATCH, EVENT and WATCH_ONCE, byte
//! by byte over a socket; net.box's `conn:watch` and `conn:watch_once`
//! against luafiber's own server. Expectations from Tarantool master's
//! `src/box/watcher.c`, `src/box/lua/watcher.c`, `src/box/session.c`
//! (`session_watch`), `src/box/iproto.cc` and `src/box/lua/net_box.lua`.
//! Runs on the engine the tests are built for (LuaJIT or Lua 5.4).

#[path = "support/luafiber_e.rs"]
mod luafiber_e;

use luafiber_e::luafiber_e;

/// `retry(fn)`: calls fn until it returns true (at most 5 s);
/// `raises(msg, f, ...)`: f raises an error whose message is msg.
const PRELUDE: &str = r#"
local fiber = require('fiber')
local function retry(f)
    for _ = 1, 500 do
        if f() then return end
        fiber.sleep(0.01)
    end
    error('condition never held', 2)
end
local function raises(msg, f, ...)
    local ok, e = pcall(f, ...)
    assert(not ok, msg .. ': expected an error')
    local got = type(e) == 'table' and e.message or tostring(e)
    assert(got == msg, ('got %q, want %q'):format(got, msg))
end
"#;

fn run_ok(code: &str) {
    let (status, stdout, stderr) =
        luafiber_e(&format!("{PRELUDE}\n{code}\nprint('done') os.exit(0)"));
    assert_eq!(status, 0, "{stdout}\n{stderr}");
    assert!(stdout.ends_with("done\n"), "{stdout}\n{stderr}");
}

#[test]
fn box_watch_runs_at_once_on_each_change_and_reruns_with_the_latest() {
    run_ok(
        r#"
        -- before box.cfg{}, as master's (they are not guarded)
        local seen = {}
        local w = box.watch('k', function(key, value)
            seen[#seen + 1] = {key, value}
        end)
        assert(tostring(w) == 'box.watcher')
        retry(function() return #seen == 1 end)
        assert(seen[1][1] == 'k' and seen[1][2] == nil)
        box.broadcast('k', {1, 2})
        retry(function() return #seen == 2 end)
        assert(seen[2][2][2] == 2)
        assert(box.watch_once('k')[1] == 1)
        -- several changes while idle: one run with the last value
        box.broadcast('k', 'a')
        box.broadcast('k', 'b')
        retry(function() return #seen >= 3 end)
        fiber.sleep(0.05)
        assert(seen[#seen][2] == 'b')
        -- a change while the function runs: it runs again after
        local ch, runs, last = fiber.channel(), 0, nil
        local w2 = box.watch('slow', function(_, v)
            runs = runs + 1
            last = v
            if runs == 1 then ch:get() end
        end)
        retry(function() return runs == 1 end)
        box.broadcast('slow', 7)
        ch:put(true)
        retry(function() return runs == 2 end)
        assert(last == 7)
        w2:unregister()
        w:unregister()
        box.broadcast('k', 'c')
        fiber.sleep(0.05)
        assert(seen[#seen][2] == 'b')
        raises('Watcher is already unregistered', w.unregister, w)
        -- a failing function is logged, not raised
        box.watch('bad', function() error('boom') end)
        fiber.sleep(0.05)
        -- checks
        raises("System event can't be override", box.broadcast, 'box.id', 1)
        raises('Usage: box.broadcast(key[, value])', box.broadcast)
        raises('Usage: box.watch(key, function)', box.watch, 'k')
        raises('Usage: box.watch_once(key)', box.watch_once)
        assert(box.watch_once('nothing') == nil)
        box.broadcast('k')
        assert(box.watch_once('k') == nil)
        "#,
    );
}

#[test]
fn server_answers_id_and_sends_events_only_after_an_ack() {
    // Raw IPROTO over a socket: ID's reply, WATCH -> EVENT at once, no
    // EVENT for a change until the WATCH that acknowledges, UNWATCH,
    // WATCH_ONCE (master's session_watch, iproto_send_event).
    run_ok(
        r#"
        local socket = require('socket')
        local msgpack = require('msgpack')
        box.cfg{listen = '127.0.0.1:0'}
        local host, port = box.info.listen:match('^(.*):(%d+)$')
        local s = socket.tcp_connect(host, tonumber(port))
        local greeting = s:read(128)
        assert(greeting:match('^Tarantool 2%.10%.0 %(Binary%)'), greeting)
        local function send(header, body)
            local p = msgpack.encode(header) .. msgpack.encode(body)
            s:write(msgpack.encode(#p) .. p)
        end
        local buf = ''
        local function recv(timeout)
            while true do
                if #buf >= 5 then
                    local len, pos = msgpack.decode(buf)
                    if #buf >= pos - 1 + len then
                        local h, p2 = msgpack.decode(buf, pos)
                        local b = {}
                        if p2 < pos + len then b = msgpack.decode(buf, p2) end
                        buf = buf:sub(pos + len)
                        return h, b
                    end
                end
                local chunk = s:sysread(4096) -- nil: nothing yet
                assert(chunk ~= '', 'the server closed the connection')
                if chunk == nil then
                    if not s:readable(timeout or 5) then return nil end
                else
                    buf = buf .. chunk
                end
            end
        end
        send({[0] = 73, [1] = 1}, {[0x54] = 6, [0x55] = {0, 1, 2, 3, 6}})
        local h, b = recv()
        assert(h[0] == 0 and h[1] == 1)
        assert(b[0x54] == 6 and b[0x5b] == 'chap-sha1')
        table.sort(b[0x55])
        assert(#b[0x55] == 2 and b[0x55][1] == 3 and b[0x55][2] == 6)
        box.broadcast('key', 'v1')
        send({[0] = 74, [1] = 5}, {[0x57] = 'key'})
        h, b = recv()
        assert(h[0] == 76 and h[1] == 5 and h[5] == nil)
        assert(b[0x57] == 'key' and b[0x58] == 'v1')
        box.broadcast('key', 'v2')
        assert(recv(0.1) == nil, 'no EVENT before the ack')
        send({[0] = 74, [1] = 6}, {[0x57] = 'key'})
        h, b = recv()
        assert(h[0] == 76 and h[1] == 6 and b[0x58] == 'v2')
        -- acked now: the next change comes at once
        send({[0] = 74, [1] = 7}, {[0x57] = 'key'})
        assert(recv(0.1) == nil, 'an ack of an unchanged value sends nothing')
        box.broadcast('key')
        h, b = recv()
        assert(h[0] == 76 and b[0x57] == 'key' and b[0x58] == nil)
        -- WATCH_ONCE: a SELECT-like reply
        box.broadcast('once', {1, 2})
        send({[0] = 77, [1] = 8}, {[0x57] = 'once'})
        h, b = recv()
        assert(h[0] == 0 and h[1] == 8 and b[0x30][1][2] == 2)
        send({[0] = 77, [1] = 9}, {[0x57] = 'none'})
        h, b = recv()
        assert(h[1] == 9 and #b[0x30] == 0)
        -- UNWATCH: no more events
        send({[0] = 74, [1] = 10}, {[0x57] = 'key'})
        send({[0] = 75, [1] = 0}, {[0x57] = 'key'})
        send({[0] = 64, [1] = 11}, {})
        h = recv()
        assert(h[1] == 11, 'the PING reply, no EVENT')
        box.broadcast('key', 'v3')
        assert(recv(0.1) == nil, 'unwatched')
        -- a WATCH without a key: an error reply, the connection lives
        send({[0] = 74, [1] = 12}, {[0x58] = 1})
        h, b = recv()
        assert(h[0] == 0x8000 + 69 and h[1] == 12, tostring(h[0])) -- MISSING_REQUEST_FIELD
        s:close()
        "#,
    );
}

#[test]
fn net_box_watch_and_watch_once_against_luafibers_server() {
    // master's test/box-luatest/net_box_watcher_test.lua, the parts that
    // need no error injection or streams.
    run_ok(
        r#"
        local net = require('net.box')
        local msgpack = require('msgpack')
        box.cfg{listen = '127.0.0.1:0'}
        local c = net.connect(box.info.listen)
        assert(c.peer_protocol_version == 6)
        local f = c.peer_protocol_features
        assert(f.watchers and f.watch_once and not f.streams and
               not f.transactions and not f.error_extension)
        raises('key must be a string', c.watch, c, 1, function() end)
        raises('func must be a function', c.watch, c, 'a', 1)
        raises("unexpected option 'foo'", c.watch_once, c, 'a', {foo = 1})
        local count, key, value = 0
        local w = c:watch('foo', function(k, v)
            count, key, value = count + 1, k, v
        end)
        assert(tostring(w) == 'net.box.watcher')
        retry(function() return count == 1 end)
        assert(key == 'foo' and value == nil)
        box.broadcast('foo', {x = 1})
        retry(function() return count == 2 end)
        assert(value.x == 1)
        -- two watchers of one key share one subscription
        local count2 = 0
        local w2 = c:watch('foo', function() count2 = count2 + 1 end)
        retry(function() return count2 == 1 end)
        box.broadcast('foo', 5)
        retry(function() return count == 3 and count2 == 2 end)
        assert(value == 5)
        w:unregister()
        raises('Watcher is already unregistered', w.unregister, w)
        box.broadcast('foo', 6)
        retry(function() return count2 == 3 end)
        fiber.sleep(0.02)
        assert(count == 3)
        w2:unregister()
        -- watch_once, sync, async and raw
        assert(c:watch_once('foo') == 6)
        assert(c:watch_once('nothing') == nil)
        box.broadcast('foo', {1, 2, 3})
        local fut = c:watch_once('foo', {is_async = true})
        assert(fut:wait_result(10)[3] == 3)
        local o = c:watch_once('foo', {return_raw = true})
        assert(msgpack.is_object(o) and o:decode()[2] == 2)
        -- a closed connection's watchers stay quiet
        local n = 0
        c:watch('bar', function() n = n + 1 end)
        retry(function() return n == 1 end)
        c:close()
        box.broadcast('bar', 1)
        fiber.sleep(0.02)
        assert(n == 1)
        "#,
    );
}

#[test]
fn net_box_watchers_subscribe_again_after_a_reconnect() {
    run_ok(
        r#"
        local net = require('net.box')
        box.cfg{listen = '127.0.0.1:0'}
        local uri = box.info.listen
        local c = net.connect(uri, {reconnect_after = 0.05})
        local seen = {}
        c:watch('k', function(_, v) seen[#seen + 1] = v == nil and 'nil' or v end)
        retry(function() return #seen == 1 end)
        -- the server stops listening and drops the connection
        box.internal.server_drain(true)
        retry(function() return c.state ~= 'active' end)
        box.broadcast('k', 'while away')
        box.internal.cfg_listen(uri)
        retry(function() return c.state == 'active' end)
        retry(function() return seen[#seen] == 'while away' end)
        box.broadcast('k', 'back')
        retry(function() return seen[#seen] == 'back' end)
        c:close()
        "#,
    );
}

#[test]
fn a_shutting_down_server_broadcasts_box_shutdown_first() {
    // master's iproto_shutdown: the box.shutdown event turns true before
    // the server stops listening (net.box clients then close).
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let mut server = Command::new(env!("CARGO_BIN_EXE_luafiber"))
        .arg("-e")
        .arg(
            "box.cfg{listen = '127.0.0.1:0'} \
             print('LISTEN ' .. box.info.listen) io.stdout:flush() \
             require('fiber').sleep(60)",
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let uri = line.trim().strip_prefix("LISTEN ").unwrap().to_string();
    let pid = server.id().to_string();
    let code = r#"
        local net = require('net.box')
        local c = net.connect(os.getenv('URI'))
        local values = {}
        c:watch('box.shutdown', function(_, v) values[#values + 1] = tostring(v) end)
        retry(function() return #values == 1 end)
        os.execute('kill -TERM ' .. os.getenv('SERVER_PID'))
        retry(function() return values[#values] == 'true' end)
        assert(values[1] == 'nil')
        c:close()
    "#;
    let out = Command::new(env!("CARGO_BIN_EXE_luafiber"))
        .arg("-e")
        .arg(format!("{PRELUDE}\n{code}\nprint('done') os.exit(0)"))
        .env("URI", &uri)
        .env("SERVER_PID", &pid)
        .output()
        .unwrap();
    let _ = server.kill();
    let _ = server.wait();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.ends_with("done\n"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
