//! Master's msgpack API on both engines: what LuaJIT gives as cdata, and
//! what Lua 5.4 (no FFI) gives instead (docs/lua/msgpack.md, "Differences from
//! Tarantool"). Tarantool's own tests of the same (tests/tarantool) run on
//! LuaJIT only: they are LuaJIT code.

use crate::LuaRuntime;

fn run(code: &str) {
    let rt = LuaRuntime::new().expect("a runtime");
    if let Err(e) = rt.run_chunk(code, "test") {
        panic!("{e}");
    }
}

#[test]
fn big_integers_are_cdata_on_luajit_and_integers_on_lua54() {
    run(r#"
        local msgpack = require('msgpack')
        local function rt(v) return (msgpack.decode(msgpack.encode(v))) end
        assert(rt(99999999999999) == 99999999999999)
        assert(type(rt(99999999999999)) == 'number')
        if jit then
            local big = rt(100000000000000)
            assert(type(big) == 'cdata' and tostring(big) == '100000000000000ULL', tostring(big))
            assert(tostring(rt(-100000000000000)) == '-100000000000000LL')
            -- LuaJIT literals: compiled only here (Lua 5.4 cannot parse them)
            assert(load([[
                local msgpack, rt = ...
                assert(tostring(rt(18446744073709551615ULL)) == '18446744073709551615ULL')
                -- and back to the same bytes
                local s = msgpack.encode(9223372036854775807LL)
                assert(msgpack.encode((msgpack.decode(s))) == s)
            ]]))(msgpack, rt)
        else
            assert(math.type(rt(100000000000000)) == 'integer')
            assert(rt(math.maxinteger) == math.maxinteger)
            assert(rt(math.mininteger) == math.mininteger)
            -- past i64: a float
            local u = msgpack.decode('\xcf\xff\xff\xff\xff\xff\xff\xff\xff')
            assert(math.type(u) == 'float' and u == 2^64)
        end
    "#);
}

#[test]
fn errors_are_tarantools() {
    run(r#"
        local msgpack = require('msgpack')
        local function err(f, ...)
            local ok, e = pcall(f, ...)
            assert(not ok)
            return e
        end
        assert(err(msgpack.decode, '\x93\x01') .type == 'ClientError')
        assert(tostring(err(msgpack.decode, '\x93\x01')) == 'Invalid MsgPack - truncated input')
        assert(tostring(err(msgpack.decode, '\xc1')) == 'Invalid MsgPack - illegal code')
        assert(tostring(err(msgpack.decode, '\xd4\xfe\x00')) == 'Unsupported MsgPack extension type: -2')
        assert(err(msgpack.decode, 'x', 0) == 'msgpack.decode: offset is out of bounds')
        assert(err(msgpack.decode, 5) == "msgpack.decode: a Lua string or 'char *' expected")
        assert(err(msgpack.decode, 'x', 'y') == "bad argument #2 to 'decode' (number expected, got string)")
        assert(err(msgpack.encode) == 'msgpack.encode: a Lua object expected')
        assert(err(msgpack.object) == 'msgpack.object: a Lua object expected')
    "#);
}

#[test]
fn pointers_headers_and_ibuf_decode() {
    // On Lua 5.4 an ibuf's pointers are light userdata, and the same
    // functions take them (bounded by the ibuf they point into).
    run(r#"
        local msgpack, buffer = require('msgpack'), require('buffer')
        local buf = buffer.ibuf()
        msgpack.encode({1, 2, 3}, buf)
        msgpack.encode({a = 1}, buf)
        local n, p = msgpack.decode_array_header(buf.rpos, buf:size())
        assert(n == 3)
        local v, p2 = msgpack.decode(buf.rpos, buf:size())
        assert(v[3] == 3)
        local after, m = msgpack.ibuf_decode(p2)
        assert(m.a == 1 and after == buf.wpos)
        assert(msgpack.decode_unchecked(p2).a == 1)
        local k = msgpack.decode_map_header(p2, 1)
        assert(k == 1)
        if not jit then
            assert(type(p) == 'userdata' and type(after) == 'userdata')
        end
        local ok, e = pcall(msgpack.decode, buf.rpos, -1)
        assert(not ok and e == "msgpack.decode: size can't be negative", tostring(e))
        if jit then
            local null = require('ffi').cast('char *', 0)
            assert(not pcall(msgpack.decode, null, 1))
            assert(not pcall(msgpack.decode_unchecked, null))
            assert(not pcall(msgpack.object_from_raw, null, 1))
            assert(not pcall(msgpack.decode_array_header, null, 1))
        end
    "#);
}

#[test]
fn new_serializers_objects_and_msgpackffi() {
    run(r#"
        local msgpack = require('msgpack')
        local s = msgpack.new()
        s.cfg{decode_save_metatables = false}
        assert(getmetatable(s.decode(s.encode({1}))) == nil)
        assert(getmetatable(msgpack.decode(msgpack.encode({1}))) == msgpack.array_mt)
        assert(s.cfg.decode_save_metatables == false and msgpack.cfg.decode_save_metatables)
        -- objects decode with their serializer's options of the moment
        local o = s.object({10, {20, 30}, x = 5})
        assert(tostring(o) == 'msgpack.object' and msgpack.is_object(o))
        assert(o.x == 5 and o:get('x') == 5 and o:decode().x == 5)
        local it = msgpack.object({10, {20, 30}, 40}):iterator()
        assert(tostring(it) == 'msgpack.iterator')
        assert(it:decode_array_header() == 3 and it:decode() == 10)
        local taken = it:take()
        assert(taken:decode()[2] == 30)
        assert(it:decode() == 40)
        assert(select(2, pcall(it.decode, it)) == 'iteration ended')
        assert(msgpack.decode(msgpack.encode({taken}))[1][1] == 20)
        local ta = msgpack.object({1, 2, 3}):iterator()
        ta:decode_array_header()
        assert(#ta:take_array(2):decode() == 2)
        local ok, e = pcall(msgpack.object_from_raw, '\x91\x01\x01')
        assert(not ok and tostring(e) == 'Invalid MsgPack - junk after input')
        -- msgpackffi: the same encoder and decoder
        local mf = require('msgpackffi')
        assert(mf.encode({1, 'a'}) == msgpack.encode({1, 'a'}))
        local v, pos = mf.decode(mf.encode({7}) .. 'x')
        assert(v[1] == 7 and pos == 3)
        local ok2, e2 = pcall(mf.decode, 'ab', 3)
        assert(not ok2 and e2:find('offset = 3 is out of bounds %[1..2%]'), e2)
        assert(mf.cfg == nil and mf.NULL == msgpack.NULL)
    "#);
}
