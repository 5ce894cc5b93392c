//! The library's value types (`uuid`, ...): their API as Tarantool
//! master's, their Lua form on each engine (cdata on LuaJIT, userdata on
//! Lua 5.4), and their MsgPack extensions and text through `msgpack`,
//! `json` and a second Lua state.

use luafiber::LuaRuntime;

fn run(code: &str) {
    let rt = LuaRuntime::new().unwrap();
    if let Err(e) = rt.run_chunk(code, "value_types") {
        panic!("{e}");
    }
}

#[test]
fn uuid_api() {
    run(r#"
        local uuid = require('uuid')
        local want = jit and 'cdata' or 'userdata'
        local u = uuid.fromstr('adf9d02e-0756-11e4-b5cf-525400123456')
        assert(type(u) == want, type(u))
        assert(u:str() == 'adf9d02e-0756-11e4-b5cf-525400123456' and tostring(u) == u:str())
        assert(u.time_low == 0xadf9d02e and u.time_mid == 0x0756 and u.node[5] == 0x56)
        assert(u:bin('b') == '\xad\xf9\xd0\x2e\x07\x56\x11\xe4\xb5\xcf\x52\x54\x00\x12\x34\x56')
        assert(uuid.frombin(u:bin()) == u and uuid.frombin(u:bin('n'), 'n') == u)
        assert(uuid.fromstr('ADF9D02E-0756-11E4-B5CF-525400123456') == u)
        assert(uuid.fromstr('adf9d02e075611e4b5cf525400123456') == nil)
        assert(uuid.NULL:isnil() and not u:isnil() and uuid.is_uuid(uuid.NULL))
        assert(uuid.NULL:str() == '00000000-0000-0000-0000-000000000000')
        local n = uuid.new()
        assert(math.floor(n.time_hi_and_version / 4096) == 4)
        assert(n ~= uuid() and #uuid.str() == 36 and #uuid.bin() == 16)
        assert(uuid.NULL < u and u > uuid.NULL and u <= u)
        assert(uuid.NULL < 'adf9d02e-0756-11e4-b5cf-525400123456')
        local ok, err = pcall(function() return u < 1 end)
        assert(not ok and err:find('incorrect value to convert to uuid as 2 argument'), err)
        ok, err = pcall(uuid.fromstr)
        assert(not ok and err:find('builtin/uuid.lua:%d+: fromstr%(str%)'), err)
        ok, err = pcall(u.bin, u, 'x')
        assert(not ok and err:find('invalid byteorder'), err)
        assert(not uuid.is_uuid('adf9d02e-0756-11e4-b5cf-525400123456'))
    "#);
}

#[test]
fn uuid_in_msgpack_and_json() {
    run(r#"
        local uuid, msgpack, json = require('uuid'), require('msgpack'), require('json')
        local u = uuid.fromstr('adf9d02e-0756-11e4-b5cf-525400123456')
        local mp = msgpack.encode(u)
        assert(mp == '\xd8\x02' .. u:bin('b'))
        local back = msgpack.decode(mp)
        assert(uuid.is_uuid(back) and back == u)
        -- In tables, in the fast path on LuaJIT and the C API path.
        local t = msgpack.decode(msgpack.encode({u, {k = u}, uuid.NULL}))
        assert(t[1] == u and t[2].k == u and t[3]:isnil())
        assert(msgpack.encode(setmetatable({u}, {__serialize = 'map'})) == '\x81\x01' .. mp)
        assert(json.encode({u}) == '["adf9d02e-0756-11e4-b5cf-525400123456"]')
        -- A body of the wrong size.
        local ok, err = pcall(msgpack.decode, '\xd7\x02\0\0\0\0\0\0\0\0')
        assert(not ok and tostring(err):find('invalid extension'), tostring(err))
    "#);
}

#[test]
fn uuid_decoded_before_the_module_is_required() {
    // The decoder loads the module; each Lua state has its own type.
    for _ in 0..2 {
        run(r#"
            local msgpack = require('msgpack')
            local u = msgpack.decode('\xd8\x02' .. string.rep('\x11', 16))
            assert(tostring(u) == '11111111-1111-1111-1111-111111111111')
            assert(require('uuid').is_uuid(u))
        "#);
    }
}

#[test]
fn decimal_api() {
    run(r#"
        local decimal = require('decimal')
        local want = jit and 'cdata' or 'userdata'
        local a, b = decimal.new('10'), decimal.new('0.1')
        assert(type(a) == want, type(a))
        assert(tostring(a * b) == '1.0' and tostring(a / b) == '1.0E+2')
        assert(tostring(b ^ a) == '1E-10' and tostring(-a) == '-10')
        assert(tostring(a + 1) == '11' and tostring(2 - b) == '1.9')
        assert(tostring(decimal.new('172.51') % 13.27) == '0.00')
        assert(a > b and b <= a and a == decimal.new('10.0') and a ~= b)
        assert(not (a == nil))
        assert(tostring(decimal.sqrt(decimal.new(5))):sub(1, 12) == '2.2360679774')
        assert(#tostring(decimal.sqrt(2)) == 77)
        assert(tostring(decimal.new(2^64)) == '1.84467440737096E+19')
        assert(decimal.precision(decimal.new('0.001')) == 3 and decimal.scale(b) == 1)
        assert(tostring(decimal.round(decimal.new('1.555'), 2)) == '1.56')
        assert(tostring(decimal.rescale(decimal.new('1e5'), 2)) == '100000.00')
        assert(tostring(decimal.trim(decimal.new('1.500'))) == '1.5')
        assert(decimal.is_decimal(a) and not decimal.is_decimal(10))
        local ok, err = pcall(function() return a < nil end)
        assert(not ok and err:find('attempt to compare decimal with nil'), err)
        ok, err = pcall(decimal.ln, 0)
        assert(not ok and err == 'decimal operation failed', err)
        ok, err = pcall(decimal.new, {})
        assert(not ok and err:find('expected decimal, number or string as 1 argument'), err)
        ok, err = pcall(decimal.new, '1x')
        assert(not ok and err:find('incorrect value to convert to decimal as 1 argument'), err)
        ok, err = pcall(decimal.scale, 1)
        assert(not ok and err:find('expected cdata as 1 argument'), err)
        if jit then
            local big = load('return -123456789123456789LL')()
            assert(tostring(decimal.new(big)) == '-123456789123456789')
        else
            assert(tostring(decimal.new(123456789123456789)) == '123456789123456789')
        end
    "#);
}

#[test]
fn decimal_in_msgpack_and_json() {
    run(r#"
        local decimal, msgpack, json = require('decimal'), require('msgpack'), require('json')
        local d = decimal.new('12.5')
        assert(msgpack.encode(d) == '\xc7\x03\x01\x01\x12\x5c')
        for _, s in ipairs({'1e37', '1e-38', '-1', '0.1234567', '123.4567'}) do
            local x = decimal.new(s)
            local y = msgpack.decode(msgpack.encode({x}))[1]
            assert(decimal.is_decimal(y) and y == x and tostring(y) == tostring(x), s)
        end
        assert(json.encode({d}) == '["12.5"]')
        local ok, err = pcall(msgpack.decode, '\xc7\x04\x01\xc0\xc0\xc0\xc0')
        assert(not ok and tostring(err):find('invalid extension'), tostring(err))
    "#);
}
