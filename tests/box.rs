//! `box` without storage (issue 25 item 4, issue 28 item 1): `box.NULL`,
//! `box.error`, `box.cfg`, `box.info`, `box.once`, `box.ctl.on_shutdown`,
//! the storage stubs, `require('tarantool')` and `_TARANTOOL`, as
//! Tarantool master has them (docs/lua/box.md). Runs on the engine the
//! tests are built for (LuaJIT or Lua 5.4).

#[path = "support/luafiber_e.rs"]
mod luafiber_e;

use luafiber::LuaRuntime;
use luafiber_e::luafiber_e;

fn run(code: &str) {
    let rt = LuaRuntime::new().unwrap();
    if let Err(e) = rt.run_chunk(code, "box_test") {
        panic!("{e}");
    }
}

/// Helpers every chunk below starts with.
const PRELUDE: &str = r#"
local function raises(message, f, ...)
    local ok, err = pcall(f, ...)
    assert(not ok, 'expected an error: ' .. message)
    assert(tostring(err) == message,
           ('error %q, want %q'):format(tostring(err), message))
    return err
end
"#;

#[test]
fn box_null_is_msgpack_and_json_null() {
    run(r#"
        assert(box == require('box'))
        assert(rawequal(box.NULL, require('msgpack').NULL))
        assert(rawequal(box.NULL, require('json').NULL))
        assert(box.NULL ~= nil or jit ~= nil)
        assert(not rawequal(box.NULL, nil))
    "#);
}

#[test]
fn box_error_makes_raises_and_remembers_error_objects() {
    run(&format!(
        "{PRELUDE}{}",
        r#"
        -- The codes, as fields.
        assert(box.error.NO_SUCH_USER == 45 and box.error.TIMEOUT == 78)
        assert(box.error.PROC_LUA == 32 and box.error.UNKNOWN == 0)
        assert(box.error.ACCESS_DENIED == 42 and box.error.NO_CONNECTION == 77)

        -- new(code, args...): a ClientError with the code's message and
        -- payload fields, located at the caller.
        local line = debug.getinfo(1, 'l').currentline + 1
        local e = box.error.new(box.error.NO_SUCH_USER, 'bob')
        assert(type(e) == 'table' and box.error.is(e))
        assert(e.type == 'ClientError' and e.base_type == 'ClientError')
        assert(e.code == 45 and e.message == "User 'bob' is not found")
        assert(e.user == 'bob')
        assert(tostring(e) == e.message and e .. '!' == e.message .. '!')
        assert(#e.trace == 1 and e.trace[1].line == line, tostring(e.trace[1].line))
        assert(e.trace[1].file:find('box_test', 1, true))
        local u = e:unpack()
        assert(getmetatable(u) == nil and u.code == 45 and u.user == 'bob')
        assert(u.type == 'ClientError' and u.message == e.message)
        assert(u.trace[1].line == line and u.file == nil and u.line == nil)
        assert(u.base_type == 'ClientError' and u.name == 'NO_SUCH_USER')
        assert(e:match("'(%a+)'") == 'bob')

        -- A code without arguments, an unknown code, a table.
        assert(box.error.new(box.error.TIMEOUT).message == 'Timeout exceeded')
        local unknown = box.error.new(100000)
        assert(unknown.code == 100000 and unknown.message == 'Unknown error')
        local t = box.error.new({code = 42, reason = 'hi', foo = 'bar'})
        assert(t.type == 'ClientError' and t.code == 42 and t.message == 'hi')
        assert(t.foo == 'bar' and t:unpack().foo == 'bar')
        assert(box.error.new({}).message == 'Unknown error')
        assert(box.error.new({code = box.error.TIMEOUT}).message == 'Timeout exceeded')

        -- Custom types.
        local c = box.error.new('MyError', 'x = %d', 5)
        assert(c.type == 'MyError' and c.base_type == 'CustomError')
        assert(c.message == 'x = 5' and c:unpack().base_type == 'CustomError')
        assert(c.custom_type == 'MyError')
        local ct = box.error.new({type = 'Other', reason = 'r', code = 7})
        assert(ct.type == 'Other' and ct.code == 7 and ct.message == 'r')

        -- Bad arguments.
        raises('box.error.new(): bad arguments', box.error.new)
        raises('box.error.new(): bad arguments', box.error.new, box.error.PROC_LUA)
        raises('box.error.new(): bad arguments', box.error.new, true)
        raises('box.error.new(): bad arguments', box.error.new, 'MyError')
        raises('box.error.new(): bad arguments', box.error.new, {}, 1, 2)
        raises("Invalid argument 'prev' (error expected, got number)",
               box.error.new, {reason = 'r', prev = 1})
        local bad = raises('box.error(): bad arguments', box.error, {}, 'x')
        assert(bad.type == 'IllegalParams')

        -- prev and set_prev.
        local a = box.error.new({reason = 'a'})
        local b = box.error.new({reason = 'b', prev = a})
        assert(rawequal(b.prev, a))
        raises('Cycles are not allowed', a.set_prev, a, b)
        raises('Usage: error1:set_prev(error2)', a.set_prev, a, 1)
        a:set_prev(nil)

        -- box.error(...) raises and sets box.error.last().
        box.error.clear()
        assert(box.error.last() == nil)
        assert(select('#', box.error()) == 0)
        local raised = raises('Timeout exceeded', box.error, box.error.TIMEOUT)
        assert(raised.code == 78 and rawequal(box.error.last(), raised))
        local ok, again = pcall(box.error)
        assert(not ok and rawequal(again, raised))
        local ok2, same = pcall(box.error, e)
        assert(not ok2 and rawequal(same, e) and rawequal(box.error.last(), e))
        local ok3, lvl = pcall(box.error, box.error.ILLEGAL_PARAMS, 'Usage: x', 1)
        assert(not ok3 and lvl.message == 'Usage: x' and lvl.code == 1)
        local ok4, r = pcall(e.raise, e)
        assert(not ok4 and rawequal(r, e))
        raises('box.error.last(): bad arguments', box.error.last, 1)
        raises('box.error.clear(): bad arguments', box.error.clear, 1)
        raises('Usage: box.error.set(error)', box.error.set)
        raises('Invalid argument #1 (error expected, got table)', box.error.set, {})
        box.error.set(a)
        assert(rawequal(box.error.last(), a))
        box.error.clear()
        assert(box.error.last() == nil)
        assert(box.error.is(a) and not box.error.is({}) and not box.error.is())

        -- The last error is per fiber.
        box.error.set(a)
        local fiber = require('fiber')
        local f = fiber.new(function()
            local mine = box.error.last()
            box.error.set(b)
            return mine
        end)
        f:set_joinable(true)
        local _, seen = f:join()
        assert(seen == nil and rawequal(box.error.last(), a))

        -- Errors of other modules are the same kind of object.
        local ok5, ferr = pcall(function() fiber.sleep('x') end)
        assert(not ok5 and box.error.is(ferr) and ferr.type == 'IllegalParams')
        assert(#ferr.trace == 1 and #ferr:unpack().trace == 1)
        "#
    ));
}

#[cfg(feature = "luajit")]
#[test]
fn struct_error_stays_declared_and_vshard_reads_tables() {
    // vshard's error.make: a cdata of `struct error` is unpacked, a table
    // kept; box.error objects take the table path with every field it reads.
    run(r#"
        local ffi = require('ffi')
        assert(ffi.istype('struct error', box.NULL) == false)
        local ok, e = pcall(box.error, box.error.new(box.error.TIMEOUT))
        assert(not ok and type(e) == 'table')
        assert(e.code == box.error.TIMEOUT and e.type == 'ClientError')
        assert(type(e.message) == 'string')
    "#);
}

#[test]
fn box_cfg_configures_once_then_changes_dynamic_options() {
    run(&format!(
        "{PRELUDE}{}",
        r#"
        assert(type(box.cfg) == 'function')
        assert(box.info.status == 'unconfigured')
        -- What needs box.cfg{} is hidden until then; the whitelist is not.
        raises('Please call box.cfg{} first', function() return box.space end)
        raises('Please call box.cfg{} first', function() return box.once end)
        assert(box.error and box.info and box.ctl and box.schema and box.NULL)

        -- Checks, before anything changes.
        raises("Incorrect value for option 'foo': unexpected option",
               box.cfg, {foo = 1})
        -- master's byte-size strings (units.lua): 'lots' does not parse
        raises("Incorrect value for option 'memtx_memory': Unable to parse a number from \"lots\"",
               box.cfg, {memtx_memory = 'lots'})
        raises("Incorrect value for option 'memtx_memory': should be of type number",
               box.cfg, {memtx_memory = '1024'})
        raises("Incorrect value for option 'listen': should be one of types string, number, table",
               box.cfg, {listen = true})
        raises("Incorrect value for option 'readahead': should be a finite number",
               box.cfg, {readahead = 1 / 0})
        local ok, err = pcall(box.cfg, 42)
        assert(not ok and tostring(err):find('Error: cfg should be a table', 1, true))
        if box.internal.cfg_listen == nil then
            local e = raises("Incorrect value for option 'listen': not available: " ..
                             'this build of luafiber has no IPROTO server',
                             box.cfg, {listen = 3301})
            assert(e.code == box.error.CFG)
        end
        assert(type(box.cfg) == 'function' and box.info.status == 'unconfigured')

        -- The first call: storage options accepted, defaults filled in.
        box.cfg{memtx_dir = '/nonexistent', wal_mode = 'none',
                memtx_memory = 1024 * 1024, log_level = 'info',
                readahead = 32768, instance_uuid = 'aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee'}
        assert(type(box.cfg) == 'table')
        assert(box.cfg.memtx_dir == '/nonexistent' and box.cfg.readahead == 32768)
        assert(box.cfg.net_msg_max == 768 and box.cfg.read_only == false)
        assert(box.cfg.listen == nil)
        assert(box.info.status == 'running' and box.info.id == 1)
        assert(box.info.uuid == 'aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee')
        assert(box.info.cluster.uuid == box.info.uuid)
        assert(type(box.space) == 'table' and next(box.space) == nil)

        -- Later calls: dynamic options change, the others raise.
        box.cfg{readahead = 65536, read_only = true}
        assert(box.cfg.readahead == 65536 and box.cfg.read_only == true)
        assert(box.info.ro == true and box.info.ro_reason == 'config')
        box.cfg{read_only = false}
        box.cfg()
        box.cfg{memtx_dir = '/nonexistent'}
        local e = raises("Can't set option 'memtx_dir' dynamically",
                         box.cfg, {memtx_dir = '/tmp'})
        assert(e.code == box.error.RELOAD_CFG)
        raises("Can't set option 'instance_uuid' dynamically",
               box.cfg, {instance_uuid = '11111111-2222-3333-4444-555555555555'})
        raises("Incorrect value for option 'foo': unexpected option", box.cfg, {foo = 1})
        -- box.NULL and '' reset to the default.
        box.cfg{readahead = box.NULL}
        assert(box.cfg.readahead == 16320)
        box.cfg{readahead = 200}
        box.cfg{readahead = ''}
        assert(box.cfg.readahead == 16320)
        -- The table is read-only.
        local okw, errw = pcall(function() box.cfg.readahead = 1 end)
        assert(not okw and errw:find('Use box.cfg{readahead = 1} for update', 1, true))
        local okx, errx = pcall(function() box.cfg.nonsense = 1 end)
        assert(not okx and errx:find('Attempt to modify a read-only table', 1, true))
        -- Log options reach the log module.
        box.cfg{log_level = 'verbose'}
        assert(require('log').cfg.level == 'verbose', tostring(require('log').cfg.level))
        box.cfg{log_level = 'info'}
        -- Deprecated names are translated.
        box.cfg{snap_dir = '/nonexistent'}
        "#
    ));
}

#[test]
fn box_cfg_calls_the_servers_listen_hook() {
    run(&format!(
        "{PRELUDE}{}",
        r#"
        local calls = {}
        box.internal.cfg_listen = function(v)
            if v == 'bad' then error('cannot listen on bad') end
            calls[#calls + 1] = v == nil and 'nil' or v
        end
        local net = {}
        box.internal.cfg_net = function(max, ra)
            net[#net + 1] = tostring(max) .. '/' .. tostring(ra)
        end
        box.internal.listen_addr = function() return calls[#calls] end
        box.cfg{net_msg_max = 100}
        box.cfg{readahead = 20000}
        box.cfg{readahead = 20000}
        assert(table.concat(net, ',') == '100/16320,nil/20000', table.concat(net, ','))
        box.internal.listen_addr = nil
        assert(#calls == 0, 'listen not set: no call')
        box.cfg{listen = 3301}
        box.cfg{listen = 'localhost:3302'}
        box.cfg{listen = 'localhost:3302'}
        local ok, err = pcall(box.cfg, {listen = 'bad'})
        assert(not ok and tostring(err):find('cannot listen on bad', 1, true))
        assert(box.cfg.listen == 'localhost:3302', tostring(box.cfg.listen))
        box.cfg{listen = box.NULL}
        assert(box.cfg.listen == nil and box.info.listen == nil)
        assert(table.concat(calls, ',') ==
               '3301,localhost:3302,localhost:3302,nil',
               table.concat(calls, ','))
        "#
    ));
}

#[test]
fn info_once_ctl_and_storage_stubs() {
    run(&format!(
        "{PRELUDE}{}",
        r#"
        local info = box.info
        assert(info.version == _TARANTOOL and type(info.pid) == 'number')
        assert(info.uptime >= 1 and info.schema_version == 1)
        assert(box.internal.schema_version() == 1)
        local all = box.info()
        assert(all.version == _TARANTOOL and all.status == 'unconfigured')
        assert(info.nonexistent == nil)
        box.cfg{}
        -- box.once: once per key and process.
        local n = 0
        box.once('k', function(x) n = n + x end, 2)
        box.once('k', function(x) n = n + x end, 3)
        assert(n == 2)
        raises('Usage: box.once(key, func, ...)', box.once, 1, print)
        raises('Usage: box.once(key, func, ...)', box.once, 'k')
        -- Storage: a coded error that says so.
        local e = raises('luafiber does not support storage (box.schema.space.create)',
                         box.schema.space.create, 'test')
        assert(e.code == box.error.UNSUPPORTED and e.type == 'ClientError')
        raises('luafiber does not support storage (box.begin)', box.begin)
        raises('luafiber does not support storage (box.commit)', box.commit)
        assert(box.is_in_txn() == false)
        -- box.ctl.on_shutdown: a trigger list.
        local f1, f2 = function() end, function() end
        assert(box.ctl.on_shutdown(f1) == f1)
        box.ctl.on_shutdown(f2)
        local list = box.ctl.on_shutdown()
        assert(#list == 2 and list[1] == f2 and list[2] == f1)
        box.ctl.on_shutdown(nil, f2)
        assert(#box.ctl.on_shutdown() == 1)
        box.ctl.on_shutdown(f2, f1)
        assert(box.ctl.on_shutdown()[1] == f2)
        raises('trigger reset: incorrect arguments', box.ctl.on_shutdown, 1)
        raises('trigger reset: Trigger is not found', box.ctl.on_shutdown, nil, f1)
        raises('on_shutdown timeout must be greater then zero',
               box.ctl.set_on_shutdown_timeout, 0)
        box.ctl.wait_rw(0.1)
        raises('Timeout exceeded', box.ctl.wait_ro, 0.01)
        assert(box.ctl.is_recovery_finished() == true)
        "#
    ));
}

#[test]
fn tarantool_module_and_version() {
    run(r#"
        local t = require('tarantool')
        assert(type(_TARANTOOL) == 'string' and t.version == _TARANTOOL)
        local major, minor = _TARANTOOL:match('^(%d+)%.(%d+)%.%d+')
        assert(tonumber(major) == 2 and tonumber(minor) >= 1)
        assert(t.package == 'Tarantool')
        assert(type(t.build) == 'table' and type(t.build.target) == 'string')
        assert(type(t.build.options) == 'string' and t.build.mod_format == 'so')
        assert(type(t.build.flags) == 'string' and t.build.asan == false)
        assert(type(t.luafiber) == 'string')
    "#);
}

#[test]
fn on_shutdown_triggers_run_at_exit() {
    let (status, stdout, stderr) = luafiber_e(
        "box.ctl.on_shutdown(function() require('fiber').sleep(0.001) print('first added') end)
         box.ctl.on_shutdown(function() print('second added') end)",
    );
    assert_eq!(status, 0, "{stderr}");
    assert!(
        stdout.contains("first added") && stdout.contains("second added"),
        "{stdout}"
    );
    let (status, stdout, stderr) =
        luafiber_e("box.ctl.on_shutdown(function() print('on exit') end) os.exit(3)");
    assert_eq!(status, 3, "{stderr}");
    assert_eq!(stdout.matches("on exit").count(), 1, "{stdout}");
}

#[test]
fn storage_options_are_logged_once() {
    let (status, _stdout, stderr) =
        luafiber_e("box.cfg{memtx_dir = '/tmp', wal_dir = '/tmp', readahead = 20000}");
    assert_eq!(status, 0, "{stderr}");
    assert_eq!(
        stderr.matches("luafiber has no storage").count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("memtx_dir, wal_dir"), "{stderr}");
    assert!(
        stderr.contains("set 'readahead' configuration option to 20000"),
        "{stderr}"
    );
}

#[test]
fn listen_takes_a_table_with_one_uri() {
    // Master's multi-listen form: `{uri}` and `{uri = uri}` with one URI
    // listen on it; several URIs fail box.cfg, which keeps the old value.
    let (status, stdout, stderr) = luafiber_e(
        r#"
        local net = require('net.box')
        local function serves()
            local c = net.connect(box.info.listen, {connect_timeout = 5})
            local ok = c:ping()
            c:close()
            return ok
        end
        box.cfg{listen = {'127.0.0.1:0'}}
        assert(box.info.listen:match('^127%.0%.0%.1:%d+$'), tostring(box.info.listen))
        assert(serves(), 'listening on {uri}')
        box.cfg{listen = {uri = '127.0.0.1:0'}}
        assert(box.info.listen:match('^127%.0%.0%.1:%d+$'), tostring(box.info.listen))
        assert(serves(), 'listening on {uri = uri}')
        local before = box.info.listen
        local ok, err = pcall(box.cfg, {listen = {'127.0.0.1:0', '127.0.0.1:0'}})
        assert(not ok and tostring(err):find(
            'listen: several URIs are not supported by luafiber', 1, true), tostring(err))
        assert(box.cfg.listen.uri == '127.0.0.1:0', 'the old value is kept')
        assert(box.info.listen == before and serves(), 'still listening')
        box.cfg{listen = {{uri = '127.0.0.1:0'}}}
        assert(serves(), 'listening on {{uri = uri}}')
        box.cfg{listen = {}}
        assert(box.info.listen == nil, tostring(box.info.listen))
        -- '*' is every interface, as in Tarantool
        box.cfg{listen = '*:0'}
        assert(box.info.listen:match('^0%.0%.0%.0:%d+$'), tostring(box.info.listen))
        local port = box.info.listen:match(':(%d+)$')
        local c = net.connect('127.0.0.1:' .. port, {connect_timeout = 5})
        assert(c:ping(), 'listening on *:port')
        c:close()
        print('listen ok')
        os.exit(0)
        "#,
    );
    assert_eq!(status, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("listen ok"), "{stdout}\n{stderr}");
}

#[test]
fn on_disconnect_runs_after_a_failed_on_connect() {
    // As master's `tx_process_disconnect`: the session was made, so its
    // on_disconnect triggers run once a failed on_connect closed it.
    let (status, stdout, stderr) = luafiber_e(
        r#"
        local fiber = require('fiber')
        box.cfg{listen = '127.0.0.1:0'}
        local events = {}
        box.session.on_connect(function()
            table.insert(events, 'connect ' .. box.session.id())
            error('no entry')
        end)
        box.session.on_disconnect(function()
            table.insert(events, 'disconnect ' .. box.session.id())
        end)
        local c = require('net.box').connect(box.info.listen, {connect_timeout = 5})
        assert(not c:is_connected(), 'refused')
        for _ = 1, 500 do
            if #events >= 2 then break end
            fiber.sleep(0.01)
        end
        c:close()
        local id = events[1] and events[1]:match('^connect (%d+)$')
        assert(id and events[2] == 'disconnect ' .. id, table.concat(events, ', '))
        print('on_disconnect ok')
        os.exit(0)
        "#,
    );
    assert_eq!(status, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("on_disconnect ok"), "{stdout}\n{stderr}");
}

#[test]
fn a_failed_on_connect_sends_the_greeting_and_its_error() {
    // As master's `tx_process_connect` and `net_send_greeting` (Tarantool
    // 2.6 too): the greeting, then the trigger's error as a reply with
    // sync 0, then the close.
    let (status, stdout, stderr) = luafiber_e(
        r#"
        local socket, msgpack = require('socket'), require('msgpack')
        box.cfg{listen = '127.0.0.1:0'}
        box.session.on_connect(function() error('no entry') end)
        local port = tonumber(box.info.listen:match(':(%d+)$'))
        local s = assert(socket.tcp_connect('127.0.0.1', port))
        local data = s:read(4096, 5)
        s:close()
        assert(data and #data > 128, 'greeting and reply: ' .. tostring(data and #data))
        assert(data:sub(1, 9) == 'Tarantool', data:sub(1, 64))
        local rest = data:sub(129)
        local size, pos = msgpack.decode(rest)
        assert(size == #rest - pos + 1, ('size %d of %d'):format(size, #rest - pos + 1))
        local header, body
        header, pos = msgpack.decode(rest, pos)
        body = msgpack.decode(rest, pos)
        assert(header[0x00] == 0x8000 + box.error.PROC_LUA, tostring(header[0x00]))
        assert(header[0x01] == 0, 'sync 0')
        assert(tostring(body[0x31]):find('no entry', 1, true), tostring(body[0x31]))
        assert(type(body[0x52]) == 'table', 'an MP_ERROR stack')
        -- net.box fails the handshake's requests when the peer closes
        -- (it waited for the schema's replies forever, against Tarantool
        -- 2.6 too): the connection ends in 'error' at once.
        local c = require('net.box').connect(box.info.listen, {wait_connected = 30})
        assert(c.state == 'error', tostring(c.state))
        -- (the reset when the server closed with the selects unread)
        assert(c.error == 'Peer closed' or c.error == 'Connection reset by peer',
               tostring(c.error))
        c:close()
        print('refused ok')
        os.exit(0)
        "#,
    );
    assert_eq!(status, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("refused ok"), "{stdout}\n{stderr}");
}

#[test]
fn an_error_object_serializes_as_its_message() {
    // Master's error_serialize: json, msgpack and an IPROTO reply give the
    // message of an error returned as a value (Tarantool 2.6 too); a raised
    // one keeps its code and type, and so does one crossing cords.
    let (status, stdout, stderr) = luafiber_e(
        r#"
        local json, msgpack = require('json'), require('msgpack')
        local e = box.error.new(box.error.PROC_LUA, 'as value')
        assert(json.encode(e) == '"as value"', json.encode(e))
        assert(msgpack.decode(msgpack.encode({e}))[1] == 'as value')
        box.cfg{listen = '127.0.0.1:0'}
        box.schema.user.grant('guest', 'execute', 'universe')
        local c = require('net.box').connect(box.info.listen, {connect_timeout = 5})
        local v = c:eval('return box.error.new(box.error.PROC_LUA, "as value")')
        assert(v == 'as value', json.encode(v))
        local ok, err = pcall(c.eval, c, 'box.error(box.error.PROC_LUA, "raised")')
        assert(not ok and err.code == 32 and err.type == 'ClientError', tostring(err))
        c:close()
        print('serialize ok')
        os.exit(0)
        "#,
    );
    assert_eq!(status, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("serialize ok"), "{stdout}\n{stderr}");
}

/// A `luafiber -e code` child with piped stdout, its lines read on a
/// thread (so waits are bounded).
fn spawn_e(code: &str) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_luafiber"))
        .arg("-e")
        .arg(code)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                return;
            }
        }
    });
    (child, rx)
}

/// Waits (bounded: 60 s) for the child to exit; its exit status.
fn wait_exit(child: &mut std::process::Child) -> Option<i32> {
    for _ in 0..600 {
        if let Some(st) = child.try_wait().unwrap() {
            return st.code();
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = child.kill();
    panic!("the child did not exit after the signal");
}

#[test]
fn sigterm_shuts_the_server_down_gracefully() {
    // Tarantool's signal_cb: the on_shutdown triggers run, the listener
    // closes (its socket file is removed), a request in flight is
    // answered, the connections close, stdio is flushed, status 0.
    use luafiber_iproto::{decode_header, encode, frame, kind, Frame, GREETING_SIZE};
    use std::io::{Read, Write};
    use std::time::Duration;
    let path = std::env::temp_dir().join(format!("luafiber-sigterm-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let script = format!(
        r#"
        local fiber = require('fiber')
        box.cfg{{listen = 'unix/:{}'}}
        box.schema.user.grant('guest', 'execute', 'universe')
        box.ctl.on_shutdown(function() print('trigger ran') end)
        function slow()
            print('slow started')
            fiber.sleep(0.3)
            print('slow done')
            return 'answered'
        end
        io.stdout:write('LISTEN\n')
        io.stdout:flush()
        "#,
        path.display()
    );
    let (mut child, lines) = spawn_e(&script);
    let first = lines.recv_timeout(Duration::from_secs(60));
    assert_eq!(first.as_deref(), Ok("LISTEN"));
    assert!(path.exists(), "the socket file is there while serving");
    let mut s = std::os::unix::net::UnixStream::connect(&path).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut g = [0u8; GREETING_SIZE];
    s.read_exact(&mut g).unwrap();
    let mut req = luafiber_runtime::ibuf::Ibuf::new();
    encode::encode_call(&mut req, 7, b"slow", &[0x90]).unwrap();
    s.write_all(req.data()).unwrap();
    // The request is read and running before the signal (a PING after
    // it is answered first: the CALL was taken).
    req.reset();
    encode::encode_ping(&mut req, 8).unwrap();
    s.write_all(req.data()).unwrap();
    let mut buf = Vec::new();
    let mut replies = Vec::new();
    let mut signalled = false;
    // bounded: each read waits at most 30 s, and two replies end it
    while replies.len() < 2 {
        if let Ok(Frame::Whole { header_at, end }) = frame(&buf, 1 << 20) {
            let (h, body) = decode_header(&buf[header_at..end]).unwrap();
            replies.push((h.kind, h.sync, body.to_vec()));
            buf.drain(..end);
            if !signalled {
                // SAFETY: kill(2) on our own child's pid.
                assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
                signalled = true;
            }
            continue;
        }
        let mut chunk = [0u8; 4096];
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    assert_eq!(replies.len(), 2, "{replies:?}");
    assert_eq!(
        (replies[0].0, replies[0].1),
        (kind::OK, 8),
        "the PING first"
    );
    assert_eq!(
        (replies[1].0, replies[1].1),
        (kind::OK, 7),
        "the CALL answered"
    );
    assert!(
        replies[1].2.windows(8).any(|w| w == b"answered"),
        "{:?}",
        replies[1].2
    );
    // Then the server closes the connection.
    let mut rest = [0u8; 16];
    assert_eq!(
        s.read(&mut rest).unwrap_or(0),
        0,
        "the connection is closed"
    );
    assert_eq!(wait_exit(&mut child), Some(0));
    let out: Vec<String> = lines.iter().collect();
    for want in ["slow started", "trigger ran", "slow done"] {
        assert!(out.iter().any(|l| l == want), "{want:?} not in {out:?}");
    }
    assert!(!path.exists(), "the socket file is removed");
}

#[test]
fn sigint_without_a_console_runs_the_triggers_and_exits() {
    // Only a sleeping fiber: the signal is seen at once, not after it.
    let (mut child, lines) = spawn_e(
        "box.ctl.on_shutdown(function() print('bye') end)
         io.stdout:write('START\\n') io.stdout:flush()
         require('fiber').sleep(3600)",
    );
    let first = lines.recv_timeout(std::time::Duration::from_secs(60));
    assert_eq!(first.as_deref(), Ok("START"));
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    assert_eq!(wait_exit(&mut child), Some(0));
    let out: Vec<String> = lines.iter().collect();
    assert_eq!(out, ["bye"]);
}

#[test]
fn short_string_arguments_arrive_whole_while_the_cache_turns_over() {
    // The decoder keeps the Lua strings of short arguments seen twice in a
    // row in their slot (msgpack/decode/short_strings.rs): repeated ones,
    // ever new ones that evict them, lengths 1 to 17 around its 16-byte
    // bound, all under a full collection per request, must arrive as sent.
    let (status, stdout, stderr) = luafiber_e(
        r#"
        box.cfg{listen = '127.0.0.1:0'}
        box.schema.user.grant('guest', 'execute', 'universe')
        function echo(...)
            collectgarbage('collect')
            return {...}
        end
        local c = require('net.box').connect(box.info.listen, {connect_timeout = 5})
        assert(c:is_connected(), tostring(c.error))
        for i = 1, 600 do
            local n = i % 17 + 1
            local new = ('x'):rep(n - 1) .. string.char(65 + i % 26)
            local fresh = 'n' .. i
            local args = {'foo', new, fresh, 'foo', ('0123456789abcdef'):sub(1, n), i}
            local got = c:call('echo', args)
            for k = 1, #args do
                assert(got[k] == args[k], ('%d: %s ~= %s'):format(i, tostring(got[k]), args[k]))
            end
        end
        c:close()
        print('short strings ok')
        os.exit(0)
        "#,
    );
    assert_eq!(status, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("short strings ok"), "{stdout}\n{stderr}");
}

#[test]
fn requests_that_do_not_yield_run_at_once_in_order_on_one_pooled_fiber() {
    // As Tarantool's tx fiber pool calls its fiber for each request
    // (fiber_pool_cb, fiber_call): a request runs as the reader hands it
    // over, so pipelined requests that do not yield run in arrival order,
    // each on the fiber the one before gave back to the pool; one that
    // yields leaves the reader to hand the next to another fiber.
    let (status, stdout, stderr) = luafiber_e(
        r#"
        local fiber = require('fiber')
        box.cfg{listen = '127.0.0.1:0'}
        box.schema.user.grant('guest', 'execute', 'universe')
        local seen = 0
        function who(i)
            seen = seen + 1
            return fiber.self():id(), seen, i
        end
        function nap()
            fiber.sleep(0.01)
            return fiber.self():id()
        end
        local c = require('net.box').connect(box.info.listen, {connect_timeout = 5})
        assert(c:is_connected(), tostring(c.error))
        c:call('who', {0})
        local futures = {}
        for i = 1, 50 do
            futures[i] = c:call('who', {i}, {is_async = true})
        end
        local first
        for i = 1, 50 do
            local id, n, got = (table.unpack or unpack)(futures[i]:wait_result(5))
            assert(got == i and n == i + 1, ('request %d ran as %d'):format(i, n))
            first = first or id
            assert(id == first, ('request %d on fiber %d, not %d'):format(i, id, first))
        end
        local napping = c:call('nap', {}, {is_async = true})
        local after = c:call('who', {51}, {is_async = true})
        local nap_id = napping:wait_result(5)[1]
        local who_id = after:wait_result(5)[1]
        assert(nap_id ~= who_id, 'a request that sleeps keeps its fiber')
        c:close()
        print('in order ok')
        os.exit(0)
        "#,
    );
    assert_eq!(status, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("in order ok"), "{stdout}\n{stderr}");
}

#[test]
fn pid_file_holds_the_pid_until_exit_and_refuses_a_live_ones() {
    // master's pidfile_open/pidfile_write/pidfile_remove (main.cc).
    let path = std::env::temp_dir().join(format!("luafiber-pid-{}.pid", std::process::id()));
    let p = path.display().to_string();
    let _ = std::fs::remove_file(&path);
    let (status, out, err) = luafiber_e(&format!(
        "box.cfg{{pid_file = '{p}', background = true}}
         local f = io.open('{p}') local pid = tonumber(f:read('*l')) f:close()
         assert(pid == require('log').pid(), tostring(pid)) print('ok')"
    ));
    assert_eq!((status, out.as_str()), (0, "ok\n"), "{err}");
    assert!(
        err.contains("W> background: luafiber does not detach"),
        "{err}"
    );
    assert!(!path.exists(), "the pid file stays after exit");

    // A file naming a live process (pid 1) is refused, and kept.
    std::fs::write(&path, "1\n").unwrap();
    let (status, _, err) = luafiber_e(&format!("box.cfg{{pid_file = '{p}'}}"));
    assert_ne!(status, 0);
    assert!(
        err.contains("the daemon is already running: PID 1"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "1\n");
    // A stale one (no such process) is taken over.
    std::fs::write(&path, "999999999\n").unwrap();
    let (status, _, err) = luafiber_e(&format!("box.cfg{{pid_file = '{p}'}}"));
    assert_eq!(status, 0, "{err}");
    assert!(!path.exists());
}
