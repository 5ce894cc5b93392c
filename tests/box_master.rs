//! What a newcomer found `box` and the IPROTO server doing otherwise than
//! Tarantool master (issue 29, issue 25): option checks of
//! `box.schema.user`, the guest's password, `box.cfg`'s ranges and unit
//! strings, `box.session.push` outside a request and after the peer left,
//! error types of values a CALL cannot return, a name that is no function,
//! the error reply to a bad size prefix, `conn:eval(5)`, `net.box.self`,
//! the reply to malformed CALL arguments, the request fibers' pool,
//! `msgpack.cfg` on the server's replies and `net.box`'s requests, custom
//! error types through `net.box`, `box.session.storage`.
//! Each expectation was checked against master's source (named at each)
//! and, where 2.6 agrees, against a running Tarantool. Runs on the engine
//! the tests are built for (LuaJIT or Lua 5.4).

#[path = "support/luafiber_e.rs"]
mod luafiber_e;

use luafiber_e::luafiber_e;

/// `check(label, want_code, want_message, f, ...)`: f raises a box error
/// with that code and message.
const PRELUDE: &str = r#"
local function check(label, code, message, f, ...)
    local ok, e = pcall(f, ...)
    assert(not ok, label .. ': expected an error')
    assert(type(e) == 'table' and e.code == code and e.message == message,
           ('%s: got %s %s, want %s %s'):format(label, tostring(e.code),
            tostring(e.message or e), code, message))
    return e
end
"#;

/// A listening server in the chunk's own process, the guest let call
/// anything, and `net`.
const SERVER: &str = r#"
local net = require('net.box')
box.cfg{listen = '127.0.0.1:0'}
box.schema.user.grant('guest', 'execute', 'universe')
"#;

fn run_ok(code: &str) {
    let (status, stdout, stderr) = luafiber_e(&format!("{PRELUDE}\n{code}\nprint('done')"));
    assert_eq!(status, 0, "{stdout}\n{stderr}");
    assert!(stdout.ends_with("done\n"), "{stdout}\n{stderr}");
}

#[test]
fn schema_user_checks_its_options_and_names_as_master() {
    // master's schema.lua: check_param_table, identifier_check (alter.cc),
    // ER_GUEST_USER_PASSWORD in user_def_fill_auth_data.
    run_ok(
        r#"
        box.cfg{}
        check('typo', 1, "unexpected option 'pasword'",
              box.schema.user.create, 'u1', {pasword = 'x'})
        check('type', 1, "options parameter 'password' should be of type string",
              box.schema.user.create, 'u2', {password = 123})
        check('not a table', 1, 'options should be a table',
              box.schema.user.create, 'u3', 'x')
        check('empty name', 70,
              "Invalid identifier '' (expected printable symbols only or it is too long)",
              box.schema.user.create, '')
        check('role typo', 1, "unexpected option 'password'",
              box.schema.role.create, 'r1', {password = 'x'})
        check('drop typo', 1, "unexpected option 'if_exist'",
              box.schema.user.drop, 'nobody', {if_exist = true})
        assert(not box.schema.user.exists('u1') and not box.schema.user.exists('u2'))
        box.schema.user.create('u4', {password = 'x', if_not_exists = true})
        check('guest password', 96, 'Setting password for guest user has no effect',
              box.schema.user.passwd, 'guest', 'secret')
        box.schema.user.passwd('guest', '')
        "#,
    );
}

#[test]
fn box_cfg_checks_ranges_and_takes_unit_strings_as_master() {
    // master's box_check_readahead, iproto_set_msg_max, load_cfg.lua's
    // byte_size_cfg / duration_cfg (units.lua).
    run_ok(
        r#"
        box.cfg{readahead = '32KiB', too_long_threshold = '100ms'}
        assert(box.cfg.readahead == 32768, box.cfg.readahead)
        assert(box.cfg.too_long_threshold == 0.1, box.cfg.too_long_threshold)
        local bounds = "Incorrect value for option 'readahead': specified value is out of bounds"
        check('small', 59, bounds, box.cfg, {readahead = 1})
        check('big', 59, bounds, box.cfg, {readahead = 2^31})
        check('net_msg_max', 59, "Incorrect value for option 'net_msg_max': minimal value is 2",
              box.cfg, {net_msg_max = 1})
        check('numeric string', 59,
              "Incorrect value for option 'readahead': should be of type number",
              box.cfg, {readahead = '20000'})
        check('suffix', 59, "Incorrect value for option 'readahead': Unknown byte size " ..
              'suffix "XB" (use B, KiB, MiB, GiB, TiB, PiB)', box.cfg, {readahead = '3XB'})
        box.cfg{memtx_memory = '1GiB', readahead = 1024}
        assert(box.cfg.memtx_memory == 1024 ^ 3 and box.cfg.readahead == 1024)
        "#,
    );
}

#[test]
fn session_push_outside_a_request_returns_nil_and_the_error() {
    // master's lbox_session_push: luaT_push_nil_and_error.
    run_ok(
        r#"
        local ok, err = box.session.push(1)
        assert(ok == nil and err.code == 5, tostring(err))
        assert(err.message == "Session 'background' does not support push()")
        assert(box.error.last() == err)
        local bad = pcall(box.session.push, 1, 2)
        assert(not bad, 'two arguments: usage error')
        "#,
    );
}

#[test]
fn server_errors_match_master() {
    // A value a CALL cannot return: LuajitError (port_lua_dump); a name
    // that is a number: 33 (box_lua_find); eval of a number: its text
    // (netbox_encode_eval's lua_tolstring); a push after the peer left:
    // nil, 86; a bad size prefix: an error reply (sync 0), then the close
    // (iproto_connection_on_input).
    let ffi = if cfg!(feature = "lua54") {
        ""
    } else {
        "function retcdata() return require('ffi').new('int[1]') end"
    };
    run_ok(&format!(
        r#"
        local fiber = require('fiber')
        local net = require('net.box')
        box.cfg{{listen = '127.0.0.1:0'}}
        box.schema.user.grant('guest', 'execute', 'universe')
        function retfn() return function() end end
        {ffi}
        obj = {{v = 5}}
        local pushed = fiber.channel(1)
        function push_late()
            fiber.sleep(0.2)
            pushed:put({{box.session.push('late')}})
            return true
        end
        local c = net.connect(box.info.listen)
        local e = check('function', 32, "unsupported Lua type 'function'", c.call, c, 'retfn')
        assert(e.type == 'LuajitError', e.type)
        if retcdata then
            e = check('cdata', 32, "unsupported Lua type 'cdata'", c.call, c, 'retcdata')
            assert(e.type == 'LuajitError', e.type)
        end
        check('number', 33, "Procedure 'obj.v' is not defined", c.call, c, 'obj.v')
        e = check('eval 5', 32, "eval:1: unexpected symbol near '5'", c.eval, c, 5)
        assert(c:eval(nil) == nil)
        c:call('push_late', {{}}, {{is_async = true}})
        fiber.sleep(0.05)
        c:close()
        local r = pushed:get(10)
        assert(r[1] == nil and r[2].code == 86 and r[2].message == 'Session is closed',
               tostring(r[2]))
        local host, port = box.info.listen:match('^(.*):(%d+)$')
        local s = require('socket').tcp_connect(host, tonumber(port))
        assert(#s:read(128) == 128)
        s:write('\xc1 / HTTP/1.1\r\n\r\n')
        local reply = s:read({{chunk = 1000}}, 10)
        assert(reply:find('Invalid MsgPack - packet length', 1, true), reply)
        assert(s:read({{chunk = 1}}, 10) == '', 'then closed')
        s:close()
        print('done') os.exit(0)
        "#
    ));
}

#[test]
fn net_box_self_calls_this_instance_as_master() {
    // master's this_module.self (net_box.lua), compared with 2.6's.
    run_ok(
        r#"
        local s = require('net.box').self
        function f(a, b) return a + b, 'x' end
        function boxerr() box.error(box.error.NO_SUCH_USER, 'bob') end
        obj = {k = 10, v = 5}
        function obj:m(x) return self.k + x end
        local a, b = s:call('f', {1, 2})
        assert(a == 3 and b == 'x')
        assert(s:call('obj:m', {5}) == 15)
        check('missing', 33, "Procedure 'nope' is not defined", s.call, s, 'nope')
        check('number', 33, "Procedure 'obj.v' is not defined", s.call, s, 'obj.v')
        check('box error', 32, "User 'bob' is not found", s.call, s, 'boxerr')
        assert(s:eval('return 1 + ...', {2}) == 3)
        assert(s:eval('1 + 2') == 3 and s:eval(5) == 5)
        -- the engine's own compile error ('<eof>' quoted on LuaJIT only)
        local _, syntax = (loadstring or load)('return x y z')
        assert(syntax:find('[string "return x y z"]:1:', 1, true), syntax)
        check('syntax', 32, syntax, s.eval, s, 'x y z')
        check('dot', 32, 'Use remote:call(...) instead of remote.call(...):', s.call, 'f')
        assert(not pcall(s.call, s, 'f', 1, 2), 'args not in a table')
        assert(s:ping() and s:is_connected() and s:wait_connected())
        "#,
    );
}

#[test]
fn net_box_return_raw_gives_msgpack_objects() {
    // master's return_raw (net_box.c netbox_decode_table): the DATA array
    // as one msgpack.object, synchronous and through a future.
    run_ok(
        r#"
        local net = require('net.box')
        local msgpack = require('msgpack')
        box.cfg{listen = '127.0.0.1:0'}
        box.schema.user.grant('guest', 'execute', 'universe')
        function three() return 1, 'two', {3} end
        local c = net.connect(box.info.listen)
        local o = c:call('three', {}, {return_raw = true})
        assert(msgpack.is_object(o), tostring(o))
        local t = o:decode()
        assert(t[1] == 1 and t[2] == 'two' and t[3][1] == 3)
        local it = o:iterator()
        assert(it:decode_array_header() == 3 and it:decode() == 1)
        local e = c:eval('return ...', {5, 6}, {return_raw = true})
        assert(msgpack.is_object(e) and e:decode()[2] == 6)
        local f = c:call('three', {}, {return_raw = true, is_async = true})
        local r = f:wait_result(10)
        assert(msgpack.is_object(r) and r:decode()[2] == 'two')
        assert(c:call('three', {}, {return_raw = false}) == 1)
        c:close()
        print('done') os.exit(0)
        "#,
    );
}

#[test]
fn malformed_call_arguments_are_an_invalid_msgpack_reply() {
    // The arguments that end a CALL's body are checked as the fiber
    // decodes them; the replies stay those of a body checked first (2.6
    // and master: ER_INVALID_MSGPACK "packet body", before any access
    // check), and the connection goes on.
    run_ok(
        r#"
        local msgpack = require('msgpack')
        box.cfg{listen = '127.0.0.1:0'}
        function echo(...) return ... end
        local host, port = box.info.listen:match('^(.*):(%d+)$')
        local s = require('socket').tcp_connect(host, tonumber(port))
        assert(#s:read(128) == 128)
        -- CALL 'echo' with the argument bytes `args`; returns the reply's
        -- code (0 for OK), its body and the sync.
        local sync = 0
        local function call(args)
            sync = sync + 1
            local p = '\x82\x00\x0a\x01' .. string.char(sync) .. '\x82\x22\xa4echo\x21' .. args
            s:write('\xce' .. string.char(0, 0, 0, #p) .. p)
            local n = msgpack.decode(s:read(5, 10))
            local reply = s:read(n, 10)
            local h, at = msgpack.decode(reply)
            assert(h[1] == sync, 'the sync')
            return h[0] % 0x8000, at <= #reply and msgpack.decode(reply, at) or {}
        end
        local function bad(args, label)
            local code, body = call(args)
            assert(code == 20 and body[0x31] == 'Invalid MsgPack - packet body',
                   label .. ': ' .. code .. ' ' .. tostring(body[0x31]))
        end
        -- guest has no grant: the body is reported first
        bad('\x92\x01', 'truncated, no grant')
        local code = call('\x91\x01')
        assert(code == 42, 'no grant: ' .. code)
        box.schema.user.grant('guest', 'execute', 'universe')
        bad('\x92\x01', 'truncated')
        bad('\x91\x01\xc0', 'junk after')
        bad('\x92\x91\xa3ab', 'truncated inside a table')
        bad('\xdd\x00\x00\x00\x05\x01', 'count past the bytes')
        local code, body = call('\x93\x01\x92\xa1x\xc3\xcb\x3f\xf8\x00\x00\x00\x00\x00\x00')
        assert(code == 0, 'good: ' .. code)
        local d = body[0x30]
        assert(#d == 3 and d[1] == 1 and d[2][1] == 'x' and d[2][2] == true and d[3] == 1.5)
        -- An extension Lua has no value for is no malformed body.
        code, body = call('\x91\xd4\x7f\x00')
        assert(code == 32 and body[0x31]:find('extension'), code .. ' ' .. tostring(body[0x31]))
        s:close()
        print('done') os.exit(0)
        "#,
    );
}

#[test]
fn request_fibers_are_pooled_as_masters_with_fresh_state() {
    // As master's tx fiber pool (fiber_pool.c, 2.6 does the same): one
    // fiber serves request after request with its id, its fiber.storage
    // emptied between them (the on_stop trigger of lua/fiber.c), and one
    // that was cancelled ends (fiber_pool_f's loop). luafiber also gives
    // each request the name and last error of a fresh fiber (2.6 keeps
    // them: "renamed", and box.error.last() of the previous request).
    run_ok(
        r#"
        local fiber = require('fiber')
        local net = require('net.box')
        box.cfg{listen = '127.0.0.1:0'}
        box.schema.user.grant('guest', 'execute', 'universe')
        function state()
            local f = fiber.self()
            local seen = (next(f.storage) == nil and 'empty' or 'kept') .. ' ' ..
                         f:name() .. ' ' ..
                         (box.error.last() == nil and 'nolast' or 'last')
            f.storage.x = 1
            f:name('renamed')
            return seen, f:id()
        end
        function set_last()
            box.error.set(box.error.new(box.error.UNKNOWN))
            return fiber.id()
        end
        function cancel_self() fiber.self():cancel() fiber.testcancel() end
        function joinable() fiber.self():set_joinable(true) return fiber.id() end
        function slow(t) fiber.sleep(t) return fiber.id() end
        local c = net.connect(box.info.listen)
        local seen, id = c:call('state')
        assert(seen == 'empty iproto nolast', seen)
        for _ = 1, 3 do
            local seen2, id2 = c:call('state')
            assert(seen2 == 'empty iproto nolast', seen2)
            assert(id2 == id, 'one fiber serves request after request')
        end
        -- A spurious wakeup of a waiting request fiber is no request.
        fiber.wakeup(id)
        fiber.sleep(0.01)
        seen = c:call('state')
        assert(seen == 'empty iproto nolast', seen)
        -- The last error stays with its request.
        local kept = c:call('set_last')
        seen, id = c:call('state')
        assert(seen == 'empty iproto nolast', seen)
        assert(id ~= kept, 'a fiber with a last error serves no other request')
        -- A cancelled request: its error, then a fresh fiber.
        local ok, e = pcall(c.call, c, 'cancel_self')
        assert(not ok and tostring(e):find('cancel'), tostring(e))
        seen, id = c:call('state')
        assert(seen == 'empty iproto nolast', seen)
        -- One made joinable is not reused either.
        local j = c:call('joinable')
        seen, id = c:call('state')
        assert(seen == 'empty iproto nolast' and id ~= j, seen)
        -- A waiting request fiber that is cancelled leaves the pool.
        seen, id = c:call('state')
        fiber.find(id):cancel()
        local seen2, id2 = c:call('state')
        assert(seen2 == 'empty iproto nolast' and id2 ~= id, seen2)
        fiber.sleep(0.01)
        assert(fiber.find(id) == nil, 'it ended')
        -- A global name is looked up at each call: a redefinition is
        -- seen; a callable table, a name only __index of the globals
        -- gives, and a missing one answer as before.
        function version() return 1 end
        assert(c:call('version') == 1)
        assert(c:eval('function version() return 2 end return true'))
        assert(c:call('version') == 2)
        callable = setmetatable({}, {__call = function(_, x) return x * 2 end})
        assert(c:call('callable', {21}) == 42)
        setmetatable(_G, {__index = function(_, k)
            if k == 'lazy' then return function() return 'lazy' end end
        end})
        assert(c:call('lazy') == 'lazy')
        setmetatable(_G, nil)
        e = select(2, pcall(c.call, c, 'missing'))
        assert(e.code == 33 and e.message == "Procedure 'missing' is not defined", tostring(e))
        -- LuaJIT's setfenv(0, ...) on a request's thread stays with it.
        function fenv()
            if setfenv then setfenv(0, {}) end
            return fiber.id()
        end
        id = c:call('fenv')
        seen, id2 = c:call('state')
        assert(seen == 'empty iproto nolast' and id2 == id, seen)
        -- Requests that wait run on fibers of their own.
        local ids, done = {}, fiber.channel(10)
        for i = 1, 10 do
            fiber.create(function()
                ids[c:call('slow', {0.05})] = true
                done:put(true)
            end)
        end
        for _ = 1, 10 do assert(done:get(10)) end
        local n = 0
        for _ in pairs(ids) do n = n + 1 end
        assert(n == 10, n)
        assert(box.internal.server_stats().requests == 0)
        c:close()
        print('done') os.exit(0)
        "#,
    );
}

#[test]
fn msgpack_cfg_reaches_the_iproto_server_and_net_box_as_master() {
    // master's port_lua_dump (box/lua/call.c get_call_serializer) and
    // net_box.c encode and decode with luaL_msgpack_default, which
    // msgpack.cfg changes; the same on 2.6 (each line checked there).
    run_ok(&format!(
        "{SERVER}{}",
        r#"
        local msgpack = require('msgpack')
        function nan() return 0/0 end
        function fn() return print end
        function arr() return {1, 2} end
        function echo(...) return ... end
        function sparse() local t = {} t[1] = 1 t[20] = 2 return t end
        local c = net.connect(box.info.listen)
        local function fails(want, ...)
            local ok, e = pcall(...)
            assert(not ok and tostring(e) == want, tostring(e))
        end
        local r = c:call('nan')
        assert(r ~= r)
        fails("unsupported Lua type 'function'", c.call, c, 'fn')
        assert(getmetatable(c:call('arr')) ~= nil)
        assert(type(c:call('sparse')) == 'table')

        -- The server's replies.
        msgpack.cfg{encode_use_tostring = true}
        assert(tostring(c:call('fn')):match('^function'))
        -- net.box's request bodies.
        assert(tostring(c:call('echo', {print})):match('^function'))
        msgpack.cfg{encode_use_tostring = false}
        msgpack.cfg{encode_invalid_numbers = false}
        fails('number must not be NaN or Inf', c.call, c, 'nan')
        fails('number must not be NaN or Inf', c.eval, c, 'return 0/0')
        msgpack.cfg{encode_invalid_numbers = true}
        msgpack.cfg{encode_sparse_convert = false}
        fails('excessively sparse array', c.call, c, 'sparse')
        msgpack.cfg{encode_sparse_convert = true}
        msgpack.cfg{encode_invalid_as_nil = true}
        -- MsgPack nil: box.NULL (== nil on LuaJIT only).
        assert(c:call('fn') == box.NULL)
        msgpack.cfg{encode_invalid_as_nil = false}
        -- net.box's decode of the replies.
        msgpack.cfg{decode_save_metatables = false}
        assert(getmetatable(c:call('arr')) == nil)
        msgpack.cfg{decode_save_metatables = true}
        assert(getmetatable(c:call('arr')) ~= nil)

        -- A serializer of its own (msgpack.new()) changes nothing here.
        msgpack.new().cfg{encode_invalid_numbers = false}
        r = c:call('nan')
        assert(r ~= r)
        c:close()
        print('done') os.exit(0)
        "#
    ));
}

#[test]
fn net_box_keeps_custom_error_types_as_master() {
    // master's error_build (box/mp_error.cc): a CustomError takes the type
    // its payload's custom_type names, along the whole prev chain.
    run_ok(&format!(
        "{SERVER}{}",
        r#"
        function custom() box.error{type = 'MyError', reason = 'r'} end
        function chain()
            local outer = box.error.new{type = 'Outer', reason = 'o'}
            outer:set_prev(box.error.new{type = 'Inner', reason = 'i'})
            outer:raise()
        end
        function client() box.error(box.error.NO_SUCH_USER, 'bob') end
        local c = net.connect(box.info.listen)
        local ok, e = pcall(c.call, c, 'custom')
        assert(not ok and e.type == 'MyError' and e.custom_type == 'MyError', tostring(e.type))
        assert(e.base_type == 'CustomError' and e.message == 'r')
        ok, e = pcall(c.call, c, 'chain')
        assert(not ok and e.type == 'Outer' and e.message == 'o', tostring(e.type))
        assert(e.prev.type == 'Inner' and e.prev.message == 'i', tostring(e.prev.type))
        assert(e.prev.base_type == 'CustomError')
        ok, e = pcall(c.call, c, 'client')
        assert(not ok and e.type == 'ClientError' and e.code == 45, tostring(e.type))
        assert(e.base_type == 'ClientError' and e.custom_type == nil)
        c:close()
        print('done') os.exit(0)
        "#
    ));
}

#[test]
fn session_storage_is_per_session_and_goes_with_it_as_master() {
    // master's session.lua (box.session.storage, aggregate_storage) and
    // session_storage_cleanup when the session ends.
    run_ok(&format!(
        "{SERVER}{}",
        r#"
        local fiber = require('fiber')
        function put(v) box.session.storage.v = v return box.session.id() end
        function get() return box.session.storage.v end
        local a, b = net.connect(box.info.listen), net.connect(box.info.listen)
        local sid = a:call('put', {'one'})
        b:call('put', {'two'})
        assert(a:call('get') == 'one' and b:call('get') == 'two')
        assert(box.session.storage.v == nil)
        box.session.storage.v = 'here'
        assert(box.session.storage.v == 'here')
        assert(box.session.effective_user() == box.session.user())
        local all = getmetatable(box.session).aggregate_storage
        assert(all[sid].v == 'one')
        a:close()
        for _ = 1, 200 do
            if all[sid] == nil then break end
            fiber.sleep(0.01)
        end
        assert(all[sid] == nil, 'the closed session keeps its storage')
        assert(b:call('get') == 'two')
        b:close()
        print('done') os.exit(0)
        "#
    ));
}

#[test]
fn a_peer_that_is_no_tarantool_is_an_invalid_greeting_as_master() {
    // master's netbox_transport_connect: a short read of the greeting
    // (the peer closed) and a greeting that does not decode are both
    // "Invalid greeting".
    run_ok(
        r#"
        local socket, net = require('socket'), require('net.box')
        local replies = {'', 'HTTP/1.1 400 Bad Request\r\n\r\n', ('x'):rep(200)}
        local i = 0
        local server = socket.tcp_server('127.0.0.1', 0, function(s)
            i = i + 1
            s:write(replies[i])
            s:close()
        end)
        local port = server:name().port
        for n = 1, #replies do
            local c = net.connect(('127.0.0.1:%d'):format(port), {wait_connected = 10})
            assert(c.state == 'error' and c.error == 'Invalid greeting',
                   ('%d: %s %s'):format(n, tostring(c.state), tostring(c.error)))
            c:close()
        end
        server:close()
        print('done') os.exit(0)
        "#,
    );
}
