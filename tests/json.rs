//! The `json` module: Tarantool's bytes for each value, the serializer
//! options shared with msgpack, cjson's error messages as error objects,
//! and `__serialize` functions that yield.

use luafiber::LuaRuntime;

fn run(code: &str) {
    let rt = LuaRuntime::new().unwrap();
    if let Err(e) = rt.run_chunk(code, "json") {
        panic!("{e}");
    }
}

#[test]
fn encodes_as_tarantool_does() {
    // Each expected text is what Tarantool 2.6 gives for the same value.
    run(r#"
        local json = require('json')
        local cases = {
            {{1, 2, 3}, '[1,2,3]'},
            {{a = 1}, '{"a":1}'},
            {{}, '[]'},
            {{1, nil, 3}, '[1,null,3]'},
            {{[20] = 2}, '{"20":2}'}, {{[1] = 1, [3] = 3}, '[1,null,3]'},
            {setmetatable({}, {__serialize = 'map'}), '{}'},
            {setmetatable({1, 2, x = 1}, {__serialize = 'seq'}), '[1,2]'},
            {setmetatable({}, {__serialize = function() return {5, 6} end}), '[5,6]'},
            {'a"b\\c\n\1/', '"a\\"b\\\\c\\n\\u0001/"'},
            {0.1, '0.1'}, {1e15, '1000000000000000'}, {-2^63, '-9223372036854775808'},
            {2^64, '1.844674407371e+19'}, {1/0, 'inf'}, {-1/0, '-inf'}, {0/0, 'nan'},
            {json.NULL, 'null'}, {true, 'true'},
            {{a = {b = {c = {}}}}, '{"a":{"b":{"c":[]}}}'},
        }
        for i, c in ipairs(cases) do
            local got = json.encode(c[1])
            assert(got == c[2], ('case %d: %s, want %s'):format(i, got, c[2]))
        end
        assert(json.encode({b = 2, a = 1, c = 3}, {encode_key_order = {'a', 'b', 'c'}})
            == '{"a":1,"b":2,"c":3}')
        assert(json.encode({0.12345}, {encode_number_precision = 3}) == '[0.123]')
        assert(json.cfg.encode_number_precision == 14)
    "#);
}

#[test]
fn decodes_as_tarantool_does() {
    run(r#"
        local json = require('json')
        local t = json.decode('{"a":[1,2,{"b":null}],"c":"x\\u0041\\n\\ud83d\\ude00","d":1.5e3,"e":-7}')
        assert(t.a[2] == 2 and t.a[3].b == json.NULL and t.d == 1500 and t.e == -7)
        assert(t.c == 'xA\n\240\159\152\128', t.c)
        assert(getmetatable(t).__serialize == 'map' and getmetatable(t.a).__serialize == 'seq')
        assert(getmetatable(t) == require('msgpack').map_mt)
        assert(json.decode('[]')[1] == nil and json.decode(' "s" ') == 's' and json.decode('12') == 12)
        assert(json.decode('inf') == 1/0)
        assert(not pcall(json.decode, 'inf', {decode_invalid_numbers = false}))
        assert(json.cfg.decode_invalid_numbers == true)
    "#);
}

#[test]
fn errors_are_error_objects_with_cjsons_messages() {
    run(r#"
        local json = require('json')
        local cases = {
            {'a{"hello": \n"world"}', "Expected value but found invalid token on line 1 at character 1 here ' >> a{\"hello'"},
            {'{"hello": \n"world"a}', "Expected comma or '}' but found invalid token on line 2 at character 8 here '\"world\" >> a}'"},
            {'{1: "world"}', "Expected object key string but found int on line 1 at character 2 here '{ >> 1: \"worl'"},
            {'[1, 2', "Expected comma or ']' but found end on line 1 at character 6 here '[1, 2 >> '"},
            {'"abc', "Expected value but found unexpected end of string on line 1 at character 5 here '\"abc >> '"},
        }
        for _, c in ipairs(cases) do
            local ok, err = pcall(json.decode, c[1])
            assert(not ok and type(err) == 'table' and err.type == 'DecodeError', tostring(err))
            assert(tostring(err) == c[2], tostring(err))
        end
        local ok, err = pcall(json.decode, '{"a": {"b": 1}}', {decode_max_depth = 1})
        assert(tostring(err) == "Found too many nested data structures (2) on line 1 at character 7 here '{\"a\":  >> {\"b\": 1}'", tostring(err))
        ok, err = pcall(json.encode, {[{}] = 1})
        assert(err.type == 'IllegalParams' and tostring(err) == 'table key must be a number or string')
        ok, err = pcall(json.encode, {1/0}, {encode_invalid_numbers = false})
        assert(tostring(err) == 'number must not be NaN or Inf')
        ok, err = pcall(json.encode, function() end)
        assert(tostring(err) == "unsupported Lua type 'function'")
        ok, err = pcall(json.encode)
        assert(tostring(err) == "bad argument #1 to 'encode' (expected 1 or 2 arguments)")
        local t = {} t[1] = t
        ok, err = pcall(json.encode, t)
        assert(tostring(err) == 'Too high nest level', tostring(err))
    "#);
}

#[test]
fn new_serializers_have_their_own_options() {
    run(r#"
        local json = require('json')
        local j = json.new()
        j.cfg{encode_invalid_numbers = false, encode_key_order = {'z'}}
        assert(not pcall(j.encode, 1/0) and json.encode(1/0) == 'inf')
        assert(j.encode({a = 1, z = 2}) == '{"z":2,"a":1}')
        assert(j.cfg.encode_key_order[1] == 'z' and json.cfg.encode_key_order == nil)
        assert(not pcall(json.cfg, {encode_max_depth = 'deep'}))
    "#);
}

#[test]
fn msgpack_and_json_agree_on_arrays_and_maps() {
    // One serializer rule (modules/serializer) for both encoders.
    run(r#"
        local json, msgpack = require('json'), require('msgpack')
        local tables = {
            {}, {1, 2}, {[1] = 1, [3] = 3}, {[1] = 1, [30] = 30}, {a = 1}, {1, a = 1},
            setmetatable({a = 1}, {__serialize = 'seq'}), setmetatable({1}, {__serialize = 'map'}),
            {[2] = 2, [3] = 3, [4] = 4},
        }
        for i, t in ipairs(tables) do
            local j = json.encode(t):sub(1, 1) == '['
            local m = msgpack.encode(t):byte(1)
            local m_array = (m >= 0x90 and m <= 0x9f) or m == 0xdc or m == 0xdd
            assert(j == m_array, 'table ' .. i)
        end
        json.cfg{encode_sparse_convert = false}
        assert(not pcall(json.encode, {[1] = 1, [30] = 30}))
        json.cfg{encode_sparse_convert = true}
    "#);
}

#[test]
fn a_serialize_function_may_yield() {
    run(r#"
        local fiber, json = require('fiber'), require('json')
        local ticks = 0
        local ticker = fiber.new(function() for _ = 1, 1e7 do ticks = ticks + 1 fiber.yield() end end)
        local slow = setmetatable({}, {__serialize = function() fiber.sleep(0) return 'slept' end})
        assert(json.encode({slow, slow}) == '["slept","slept"]')
        assert(ticks >= 2, ticks)
        ticker:cancel()
    "#);
}

#[test]
fn userdata_serialize_is_looked_up_as_master_does() {
    // Master's `lua_field_inspect_ucdata`: `value.__serialize`, through
    // `__index`, for json and msgpack alike (Tarantool 2.6 gives the same).
    run(r#"
        local json, msgpack = require('json'), require('msgpack')
        if newproxy == nil then return end -- Lua 5.4 has no newproxy
        local ud = newproxy(true)
        getmetatable(ud).__index = {__serialize = function() return {1, 2} end}
        assert(json.encode(ud) == '[1,2]', json.encode(ud))
        assert(json.encode({ud}) == '[[1,2]]')
        assert(msgpack.encode(ud) == msgpack.encode({1, 2}))
        local plain = newproxy(true)
        local ok, err = pcall(json.encode, plain)
        assert(not ok and tostring(err):find("unsupported Lua type 'userdata'"), tostring(err))
    "#);
}
