//! [`push_args`] and [`read_results`] against the MessagePack path they
//! stand for: the same Lua values (a deep compare in Lua: types, number
//! subtypes, metatables, cdata types), the same Rust values, the same
//! `visit_*` calls, the same error kinds; and the bench of both.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasherDefault;

/// A hash map with a fixed hasher: two filled in the same order print
/// alike.
type HMap<K, V> = HashMap<K, V, BuildHasherDefault<DefaultHasher>>;
use std::ffi::{c_int, CString};
use std::fmt::{self, Debug};

use serde::de::{DeserializeOwned, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::*;
use crate::embed::handle::main_stack;
use crate::LuaRuntime;

/// `__deq(a, b, path)`: raises unless `a` and `b` are the same Lua value,
/// deeply: types, number subtypes and zero signs, metatables (the same
/// table), cdata types and values; tables key by key.
const DEQ: &str = r#"
local has_ffi, ffi = pcall(require, 'ffi')
local function num_same(a, b)
    if math.type and math.type(a) ~= math.type(b) then return false end
    if a ~= a then return b ~= b end
    return a == b and (a ~= 0 or 1 / a == 1 / b)
end
local function deq(a, b, path)
    if type(a) ~= type(b) then
        error(path .. ': ' .. type(a) .. ' vs ' .. type(b), 0)
    end
    local t = type(a)
    if t == 'number' then
        if not num_same(a, b) then error(path .. ': ' .. tostring(a) .. ' vs ' .. tostring(b), 0) end
    elseif t == 'cdata' then
        if ffi.typeof(a) ~= ffi.typeof(b) or tostring(a) ~= tostring(b) then
            error(path .. ': ' .. tostring(a) .. ' vs ' .. tostring(b), 0)
        end
    elseif t == 'table' then
        if getmetatable(a) ~= getmetatable(b) then error(path .. ': metatables differ', 0) end
        local n = 0
        for k, v in next, a do
            n = n + 1
            local w = rawget(b, k)
            if w == nil and type(k) == 'cdata' then
                -- A 64-bit integer key: another cdata of the same value.
                for k2, v2 in next, b do
                    if type(k2) == 'cdata' and ffi.typeof(k2) == ffi.typeof(k)
                        and tostring(k2) == tostring(k) then
                        w = v2
                    end
                end
            end
            deq(v, w, path .. '.' .. tostring(k))
        end
        for _ in next, b do n = n - 1 end
        if n ~= 0 then error(path .. ': key counts differ', 0) end
    elseif not rawequal(a, b) then
        error(path .. ': ' .. tostring(a) .. ' vs ' .. tostring(b), 0)
    end
end
__deq = deq
local NULL = require('msgpack').NULL
local function has_cdata(v)
    if type(v) == 'cdata' then return not rawequal(v, NULL) end
    if type(v) == 'table' then
        for k, x in next, v do
            if has_cdata(k) or has_cdata(x) then return true end
        end
    end
    return false
end
__has_cdata = has_cdata
"#;

/// A runtime and its main Lua state, with `__deq`.
struct Lua {
    _rt: LuaRuntime,
    l: *mut ffi::lua_State,
}

fn lua() -> Lua {
    let rt = LuaRuntime::builder().build().expect("a runtime");
    rt.lua().load(DEQ).exec().unwrap();
    let l = main_stack().unwrap().as_ptr();
    Lua { _rt: rt, l }
}

impl Lua {
    /// A handle on the main state for one operation (serde rule 3's).
    fn stack(&self) -> crate::raw::Outside<'_> {
        // SAFETY: the test's thread owns the runtime; no Lua code runs on
        // its main state while a handle lives.
        unsafe { Stack::outside(self.l) }
    }

    fn top(&self) -> c_int {
        self.stack().top()
    }

    fn settop(&self, top: c_int) {
        self.stack().settop(top);
    }

    /// Runs `code` and leaves its results on the stack; their count.
    fn eval(&self, code: &str) -> c_int {
        let top = self.top();
        let code = CString::new(format!("local msgpack = require('msgpack') {code}")).unwrap();
        // SAFETY: the main state of this thread, room for the chunk; its
        // errors land in `lua_pcall`.
        unsafe {
            assert!(ffi::lua_checkstack(self.l, 20) != 0);
            assert_eq!(ffi::luaL_loadstring(self.l, code.as_ptr()), 0);
            if ffi::lua_pcall(self.l, 0, ffi::LUA_MULTRET, 0) != 0 {
                panic!("{code:?}: {}", self.stack().describe(-1));
            }
        }
        self.top() - top
    }

    /// Raises (panics) unless the values at `a` and `b` are the same.
    fn deq(&self, a: c_int, b: c_int, what: &str) {
        let top = self.top();
        // SAFETY: as in `eval`; `a` and `b` are on the stack.
        unsafe {
            assert!(ffi::lua_checkstack(self.l, 4) != 0);
            ffi::lua_getglobal(self.l, c"__deq".as_ptr());
            ffi::lua_pushvalue(self.l, a);
            ffi::lua_pushvalue(self.l, b);
            self.stack().push_str(what);
            if ffi::lua_pcall(self.l, 3, 0, 0) != 0 {
                panic!("{what}: {}", self.stack().describe(-1));
            }
        }
        self.settop(top);
    }

    /// Whether the value at `idx` holds cdata other than `msgpack.NULL`
    /// (which the reader leaves to the MessagePack path).
    fn has_cdata(&self, idx: c_int) -> bool {
        let top = self.top();
        // SAFETY: as in `eval`; `idx` is on the stack.
        let yes = unsafe {
            assert!(ffi::lua_checkstack(self.l, 4) != 0);
            ffi::lua_getglobal(self.l, c"__has_cdata".as_ptr());
            ffi::lua_pushvalue(self.l, idx);
            assert_eq!(ffi::lua_pcall(self.l, 1, 1, 0), 0);
            ffi::lua_toboolean(self.l, -1) != 0
        };
        self.settop(top);
        yes
    }

    /// The MessagePack path's push: `cords_unpack` of `args::encode`.
    fn push_msgpack<A: Serialize + ?Sized>(&self, v: &A) -> Result<c_int, String> {
        let bytes = args::encode(v).map_err(|e| e.to_string())?;
        let top = self.top();
        let r = port::push_array(&mut self.stack(), &bytes, "decode");
        if r.is_err() {
            self.settop(top);
        }
        r.map_err(|e| format!("{e:?}"))
    }

    fn push_direct<A: Serialize + ?Sized>(&self, v: &A) -> Result<c_int, Error> {
        // SAFETY: the main state, no Lua code running.
        unsafe { push_args(self.l, v) }
    }

    fn read_direct<R: DeserializeOwned>(&self, first: c_int, n: c_int) -> Result<R, Error> {
        // SAFETY: as in `push_direct`; the values are on the stack.
        unsafe { read_results(self.l, first, n) }
    }

    /// The reader alone: `Err(Leave)` where it leaves the values to the
    /// MessagePack path; with the encoder's in-place tables when
    /// `in_place` (and the engine has them).
    fn read_native<R: DeserializeOwned>(
        &self,
        first: c_int,
        n: c_int,
        in_place: bool,
    ) -> Result<R, Leave> {
        let top = self.top();
        let mut out = self.stack();
        let mut r = Reader::new(&mut out, Config::default());
        if !in_place {
            r = r.without_in_place();
        }
        let v = r.results::<R>(first, n);
        drop(out);
        self.settop(top);
        v
    }

    fn read_msgpack<R: DeserializeOwned>(&self, first: c_int, n: c_int) -> Result<R, Error> {
        via_msgpack(&mut self.stack(), first, n)
    }
}

/// `v` pushed both ways gives the same values; read back as `A` both ways
/// it gives the same result; the stack is as it was.
fn check_push<A: Serialize + DeserializeOwned + Debug>(lua: &Lua, v: &A) {
    let base = lua.top();
    let direct = lua.push_direct(v);
    let mid = lua.top();
    let old = lua.push_msgpack(v);
    match (&direct, &old) {
        (Ok(n), Ok(m)) => {
            assert_eq!(n, m, "{v:?}: counts");
            assert_eq!(mid, base + n, "{v:?}: stack");
            for i in 1..=*n {
                lua.deq(base + i, mid + i, &format!("{v:?} #{i}"));
            }
            let native = !(1..=*n).any(|i| lua.has_cdata(base + i));
            check_read::<A>(lua, base + 1, *n, native);
        }
        (Err(e), Err(_)) => {
            assert_eq!(e.kind(), ErrorKind::Convert, "{v:?}: {e}");
            assert!(e.message().starts_with("arguments: "), "{e}");
            assert_eq!(mid, base, "{v:?}: the stack after an error");
        }
        _ => panic!("{v:?}: direct {direct:?}, MessagePack {old:?}"),
    }
    lua.settop(base);
}

/// `R` read from the `n` values at `first` both ways: the same value, or
/// errors of the same kind and message; the reader alone never succeeds
/// where MessagePack fails, and succeeds where it does (when `native`).
fn check_read<R: DeserializeOwned + Debug>(lua: &Lua, first: c_int, n: c_int, native: bool) {
    let top = lua.top();
    let old = lua.read_msgpack::<R>(first, n);
    assert_eq!(lua.top(), top);
    let direct = lua.read_direct::<R>(first, n);
    assert_eq!(lua.top(), top);
    let what = std::any::type_name::<R>();
    match (&old, &direct) {
        (Ok(a), Ok(b)) => assert_eq!(format!("{a:?}"), format!("{b:?}"), "{what}"),
        (Err(a), Err(b)) => {
            assert_eq!(a.kind(), b.kind(), "{what}");
            assert_eq!(a.message(), b.message(), "{what}");
        }
        _ => panic!("{what}: MessagePack {old:?}, direct {direct:?}"),
    }
    for in_place in [true, false] {
        let own = lua.read_native::<R>(first, n, in_place);
        assert_eq!(lua.top(), top);
        match (&old, &own) {
            (Ok(a), Ok(b)) => assert_eq!(format!("{a:?}"), format!("{b:?}"), "{what}"),
            (Ok(a), Err(_)) if native => panic!("{what}: {a:?} left to MessagePack"),
            (Err(e), Ok(b)) => panic!("{what}: {b:?} read, MessagePack fails: {e:?}"),
            _ => {}
        }
    }
}

/// Every `visit_*` call, as made: the exact form a deserializer gives
/// (compared through `Debug`, which dead-code analysis does not count).
#[allow(dead_code)]
#[derive(Debug)]
enum Any {
    Bool(bool),
    I8(i8),
    I16(i16),
    I32(i32),
    I64(i64),
    U8(u8),
    U16(u16),
    U32(u32),
    U64(u64),
    F32(f32),
    F64(f64),
    Str(String),
    Bytes(Vec<u8>),
    Unit,
    None,
    Some(Box<Any>),
    Seq(Vec<Any>),
    Map(Vec<(Any, Any)>),
}

struct AnyVisitor;

macro_rules! visit {
    ($($f:ident($t:ty) => $v:ident;)*) => {$(
        fn $f<E>(self, v: $t) -> Result<Any, E> {
            Ok(Any::$v(v.into()))
        }
    )*};
}

impl<'de> Visitor<'de> for AnyVisitor {
    type Value = Any;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("anything")
    }

    visit! {
        visit_bool(bool) => Bool; visit_i8(i8) => I8; visit_i16(i16) => I16;
        visit_i32(i32) => I32; visit_i64(i64) => I64; visit_u8(u8) => U8;
        visit_u16(u16) => U16; visit_u32(u32) => U32; visit_u64(u64) => U64;
        visit_f32(f32) => F32; visit_f64(f64) => F64; visit_str(&str) => Str;
        visit_bytes(&[u8]) => Bytes;
    }

    fn visit_unit<E>(self) -> Result<Any, E> {
        Ok(Any::Unit)
    }

    fn visit_none<E>(self) -> Result<Any, E> {
        Ok(Any::None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Any, D::Error> {
        Ok(Any::Some(Box::new(Any::deserialize(d)?)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Any, A::Error> {
        let mut v = Vec::new();
        while let Some(x) = a.next_element()? {
            v.push(x);
        }
        Ok(Any::Seq(v))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Any, A::Error> {
        let mut v = Vec::new();
        while let Some(x) = a.next_entry()? {
            v.push(x);
        }
        Ok(Any::Map(v))
    }
}

impl<'de> Deserialize<'de> for Any {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Any, D::Error> {
        d.deserialize_any(AnyVisitor)
    }
}

/// [`Any`] asked for as an option first.
#[allow(dead_code)]
#[derive(Debug)]
struct AnyOpt(Any);

impl<'de> Deserialize<'de> for AnyOpt {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<AnyOpt, D::Error> {
        d.deserialize_option(AnyVisitor).map(AnyOpt)
    }
}

/// A binary string (`serde_bytes`'s form, written here).
#[derive(Debug, PartialEq)]
struct Bin(Vec<u8>);

impl Serialize for Bin {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

impl<'de> Deserialize<'de> for Bin {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Bin, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Bin;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("bytes")
            }
            fn visit_bytes<E>(self, v: &[u8]) -> Result<Bin, E> {
                Ok(Bin(v.to_vec()))
            }
            fn visit_str<E>(self, v: &str) -> Result<Bin, E> {
                Ok(Bin(v.as_bytes().to_vec()))
            }
        }
        d.deserialize_bytes(V)
    }
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Point {
    x: i64,
    y: f64,
    name: String,
    tags: Vec<String>,
    parent: Option<Box<Point>>,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Ten {
    a: i64,
    b: i64,
    c: u32,
    d: f64,
    e: bool,
    f: String,
    g: Option<i64>,
    h: Vec<i64>,
    i: i8,
    j: String,
}

fn ten() -> Ten {
    Ten {
        a: 1,
        b: -200_000,
        c: 70_000,
        d: 2.5,
        e: true,
        f: "ten".into(),
        g: None,
        h: vec![1, 2, 3],
        i: -5,
        j: "a longer string of forty bytes or so....".into(),
    }
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Unit;

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Newtype(i64);

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Pair(i64, String);

#[derive(Debug, PartialEq, Serialize, Deserialize)]
enum E {
    A,
    B(i64),
    C(i64, String),
    D { x: i64, y: Option<String> },
}

#[test]
fn push_scalars() {
    let lua = lua();
    check_push(&lua, &());
    check_push(&lua, &7i64);
    check_push(&lua, &(7i64,));
    check_push(&lua, &true);
    check_push(&lua, &(false, true));
    for i in [
        0,
        1,
        -1,
        127,
        128,
        255,
        256,
        -32,
        -33,
        -128,
        -129,
        65_535,
        65_536,
        i64::from(u32::MAX),
        i64::from(u32::MAX) + 1,
        i64::from(i32::MIN),
        99_999_999_999_999,
        100_000_000_000_000,
        -99_999_999_999_999,
        -100_000_000_000_000,
        1 << 53,
        (1 << 53) + 1,
        i64::MIN,
        i64::MAX,
    ] {
        check_push(&lua, &i);
        check_push(&lua, &(i, i));
    }
    for u in [0u64, 1 << 63, u64::MAX, (1 << 63) - 1, 100_000_000_000_000] {
        check_push(&lua, &u);
    }
    check_push(&lua, &(1u8, 2u16, 3u32, -4i8));
    check_push(&lua, &(-4i16, -5i32));
    for f in [
        0.0,
        -0.0,
        0.5,
        -1.5,
        1e300,
        f64::MAX,
        f64::MIN_POSITIVE,
        3.0,
    ] {
        check_push(&lua, &f);
    }
    check_push(&lua, &(f64::INFINITY, f64::NEG_INFINITY));
    check_push(&lua, &1.25f32);
    check_push(&lua, &'x');
    check_push(&lua, &'é');
    check_push(&lua, &String::new());
    check_push(&lua, &"hello".to_string());
    check_push(&lua, &"with\0nul\0s".to_string());
    check_push(&lua, &(1, "two".to_string(), 3.5, None::<i64>, Some(4)));
    check_push(&lua, &None::<String>);
    check_push(&lua, &Some("s".to_string()));
    check_push(&lua, &Some(Some(5)));
    check_push(&lua, &(i128::MAX, u128::MAX));
}

#[test]
fn push_containers() {
    let lua = lua();
    check_push(&lua, &vec![1, 2, 3]);
    check_push(&lua, &Vec::<i64>::new());
    check_push(&lua, &vec![vec![1], vec![], vec![2, 3]]);
    check_push(&lua, &vec![None, Some(1), None]);
    check_push(&lua, &(vec![1u8, 2, 3], [4i64, 5, 6]));
    check_push(&lua, &vec![vec![vec![vec!["deep".to_string()]]]]);
    check_push(&lua, &(0..100).collect::<Vec<i64>>());
    let hm: HMap<String, i64> = [("a".to_string(), 1), ("b".to_string(), 2)]
        .into_iter()
        .collect();
    check_push(&lua, &hm);
    let bm: BTreeMap<i64, String> =
        [(1, "x".into()), (-5, "y".into()), (1 << 40, "z".into())].into();
    check_push(&lua, &bm);
    let big_keys: BTreeMap<i64, i64> = [(i64::MIN, 1), (i64::MAX, 2)].into();
    check_push(&lua, &(big_keys,));
    let float_keys: Vec<(f64, i64)> = vec![(1.5, 1), (2.0, 2)];
    check_push(&lua, &float_keys);
    let nested: BTreeMap<String, Vec<BTreeMap<String, Option<i64>>>> = [(
        "k".to_string(),
        vec![[("n".to_string(), None), ("s".to_string(), Some(1))].into()],
    )]
    .into();
    check_push(&lua, &nested);
    check_push(&lua, &(HashMap::<String, i64>::new(),));
    check_push(&lua, &Bin(b"bin\0ary\xff".to_vec()));
    check_push(&lua, &(Bin(vec![]), Bin(vec![0; 300])));
}

#[test]
fn push_structs_and_enums() {
    let lua = lua();
    let p = Point {
        x: 1,
        y: 2.5,
        name: "p".into(),
        tags: vec!["a".into(), "b".into()],
        parent: Some(Box::new(Point {
            x: -1,
            y: 0.0,
            name: String::new(),
            tags: vec![],
            parent: None,
        })),
    };
    check_push(&lua, &p);
    check_push(&lua, &(1, p));
    check_push(&lua, &ten());
    check_push(&lua, &Unit);
    check_push(&lua, &Newtype(5));
    check_push(&lua, &Pair(1, "x".into()));
    for e in [
        E::A,
        E::B(1),
        E::C(2, "c".into()),
        E::D { x: 3, y: None },
        E::D {
            x: 4,
            y: Some("y".into()),
        },
    ] {
        check_push(&lua, &e);
        check_push(&lua, &(7, e));
    }
    check_push(&lua, &vec![E::A, E::B(2)]);
}

/// A value whose `Serialize` fails half way.
struct Fails;

impl Serialize for Fails {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = s.serialize_seq(Some(2))?;
        seq.serialize_element(&1)?;
        Err(serde::ser::Error::custom("no second element"))
    }
}

/// A map whose key is NaN (a Lua table cannot hold it).
struct NanKey;

impl Serialize for NanKey {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(1))?;
        m.serialize_entry(&f64::NAN, &1)?;
        m.end()
    }
}

#[test]
fn push_errors_leave_the_stack() {
    let lua = lua();
    let base = lua.top();
    for e in [
        lua.push_direct(&(1, "x", Fails)).unwrap_err(),
        lua.push_direct(&(1, NanKey)).unwrap_err(),
        lua.push_direct(&vec![Fails]).unwrap_err(),
    ] {
        assert_eq!(e.kind(), ErrorKind::Convert);
        assert!(e.message().starts_with("arguments: "), "{e}");
        assert_eq!(lua.top(), base);
    }
    assert!(lua.push_msgpack(&(1, NanKey)).is_err());
    assert!(lua.push_msgpack(&(1, "x", Fails)).is_err());
    // Deep values are pushed as deep as MessagePack's.
    let mut deep = Nest::Leaf(0);
    for _ in 0..300 {
        deep = Nest::Deeper(vec![deep]);
    }
    let n = lua.push_direct(&deep).unwrap();
    assert_eq!(n, 1);
    let m = lua.push_msgpack(&deep).unwrap();
    lua.deq(base + 1, base + 1 + m, "300 levels");
    lua.settop(base);
}

/// A nest of one-element arrays.
#[derive(Serialize)]
#[serde(untagged)]
enum Nest {
    Leaf(i64),
    Deeper(Vec<Nest>),
}

/// Reads the values `code` returns as each of the types, checking both
/// ways agree; `native`: the reader reads them itself.
macro_rules! read_as {
    ($lua:expr, $code:expr, $native:expr; $($t:ty),* $(,)?) => {{
        let lua = &$lua;
        let base = lua.top();
        let n = lua.eval($code);
        $( check_read::<$t>(lua, base + 1, n, $native); )*
        lua.settop(base);
    }};
}

#[test]
fn read_typed_values_back() {
    let lua = lua();
    let base = lua.top();
    let n = lua
        .push_msgpack(&(ten(), E::C(1, "x".into()), vec![1, 2]))
        .unwrap();
    check_read::<(Ten, E, Vec<i64>)>(&lua, base + 1, n, true);
    check_read::<(Ten,)>(&lua, base + 1, n, true);
    check_read::<Ten>(&lua, base + 1, n, true);
    check_read::<(Any, Any, Any, Any)>(&lua, base + 1, n, true);
    check_read::<()>(&lua, base + 1, n, true);
    check_read::<(Ten, E, Vec<i64>, Option<i64>, Option<String>)>(&lua, base + 1, n, true);
    check_read::<(E, Ten)>(&lua, base + 1, n, true);
    check_read::<(i64, String)>(&lua, base + 1, n, true);
    check_read::<Vec<Any>>(&lua, base + 1, n, true);
    lua.settop(base);
}

#[test]
fn read_lua_scalars() {
    let lua = lua();
    let nums = "return 0, 1, -1, 127, 128, 255, 256, -32, -33, -128, -129, 65535, 65536, \
                4294967295, 4294967296, -2147483648, -2147483649, 2^53, -2^53, 0.5, -0.0, \
                1e20, 2^63, 2^64, -2^63, 1/0, -1/0, 0/0, 3.0";
    read_as!(lua, nums, true; Vec<Any>, (Any, Any, Any), Any, AnyOpt, i64, u8, i8, f64, f32,
        u64, i128, u128, Option<i64>, String, bool, ());
    for one in [
        "return 0",
        "return 200",
        "return -1",
        "return 2^63",
        "return -2^63",
        "return 0.5",
        "return 1e20",
        "return 70000",
        "return -70000",
    ] {
        read_as!(lua, one, true; Any, u8, u16, u32, u64, i8, i16, i32, i64, f32, f64,
            i128, u128, bool, Option<u8>, String, (), E);
    }
    read_as!(lua, "return true, false, nil", true; (Any, Any, Any, Any), (bool, bool), bool,
        Option<bool>, (bool, bool, Option<i64>, Option<i64>), Vec<Any>);
    read_as!(lua, "return 'x', '', 'with\\0nul', '\\255\\254', 'A'", true;
        (Any, Any, Any, Any, Any), String, (String, String, String), (char,), Bin,
        (String, String, String, Bin), E, (Unit,), Newtype);
    read_as!(lua, "return msgpack.NULL, msgpack.NULL", true; (Any, Any), Option<i64>, (),
        (Option<String>, Option<E>), Unit, AnyOpt);
    read_as!(lua, "return", true; (), Option<i64>, (Option<i64>, Option<i64>), Any, i64);
}

/// The fast path of one scalar (`scalar::one`) against the MessagePack
/// path, for the one value at `idx`: the same value where it reads one;
/// what it leaves, the reader and MessagePack give alike (`check_read`,
/// errors of the same kind and message). Whether it read the value.
fn check_scalar<R: DeserializeOwned + Debug>(lua: &Lua, idx: c_int) -> bool {
    let fast = super::scalar::one::<R>(&lua.stack(), idx);
    let old = lua.read_msgpack::<R>(idx, 1);
    let what = std::any::type_name::<R>();
    match (&fast, &old) {
        (Some(a), Ok(b)) => assert_eq!(format!("{a:?}"), format!("{b:?}"), "{what}"),
        (Some(a), Err(e)) => panic!("{what}: {a:?} read, MessagePack fails: {e:?}"),
        (None, _) => {}
    }
    check_read::<R>(lua, idx, 1, true);
    fast.is_some()
}

/// [`check_scalar`] of the value `code` returns as each type; which of
/// them the fast path read.
macro_rules! fast_as {
    ($lua:expr, $code:expr; $($t:ty),* $(,)?) => {{
        let lua = &$lua;
        let base = lua.top();
        assert_eq!(lua.eval($code), 1, "{}", $code);
        let read = vec![$( (stringify!($t), check_scalar::<$t>(lua, base + 1)) ),*];
        lua.settop(base);
        read
    }};
}

#[test]
fn one_scalar_fast_path_as_the_general_one() {
    let lua = lua();
    let edges = [
        "return math.mininteger or -2^63",
        "return math.maxinteger or 2^63 - 1024",
        "return -2^63",
        "return 2^63",
        "return 2^64 - 2048",
        "return 2^64",
        "return -0.0",
        "return 0/0",
        "return 1/0",
        "return math.tointeger and math.tointeger(2^53) + 1 or 2^53 + 1",
        "return 2^53 + 1",
        "return 0.5",
        "return 255",
        "return -129",
        "return 70000",
        "return 1e300",
        "return true",
        "return false",
        "return nil",
        "return msgpack.NULL",
        "return ''",
        "return 'A'",
        "return 'with\\0nul'",
        "return '\\255\\254'",
        "return 'caf\\195\\169'",
        "return '\\195'",
        "return {1}",
        "return print",
    ];
    for code in edges {
        fast_as!(lua, code; i64, u64, i32, i8, u8, u32, f64, f32, i128, u128, bool, String,
            Bin, char, Option<i64>, Option<String>, Option<bool>, Any, AnyOpt, Newtype, Unit,
            E, ());
    }
    // The fast path takes the usual answers (and leaves enums and
    // mismatches to the reader, and `msgpack.NULL` where it is a cdata).
    let taken = |code: &str| {
        let read = fast_as!(lua, code; i64, f64, String, bool, Option<i64>, Any, E);
        read.into_iter()
            .filter(|r| r.1)
            .map(|r| r.0)
            .collect::<Vec<_>>()
    };
    assert_eq!(taken("return 7"), ["i64", "f64", "Option<i64>", "Any"]);
    assert_eq!(taken("return 7.5"), ["f64", "Any"]);
    assert_eq!(taken("return 'x'"), ["String", "Any"]);
    assert_eq!(taken("return true"), ["bool", "Any"]);
    assert_eq!(taken("return nil"), ["Option<i64>", "Any"]);
    let null = taken("return msgpack.NULL");
    if cfg!(feature = "luajit") {
        assert!(null.is_empty(), "{null:?}");
    } else {
        // A null light userdata.
        assert_eq!(null, ["Option<i64>", "Any"]);
    }
    // A wrong type: MessagePack's error (checked alike above), a Convert.
    let base = lua.top();
    lua.eval("return 'x'");
    let e = lua.read_direct::<i64>(base + 1, 1).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Convert, "{e}");
    assert!(e.message().starts_with("results as i64: "), "{e}");
    lua.settop(base);
}

/// `v` pushed by the fast path of one scalar (`scalar::push`), when it
/// takes it, and by the pusher: the same Lua value (and `check_push`: the
/// same as the MessagePack path). Whether the fast path pushed it.
fn check_scalar_push<A: Serialize + DeserializeOwned + Debug>(lua: &Lua, v: &A) -> bool {
    let base = lua.top();
    let fast = super::scalar::push(&mut lua.stack(), v);
    assert_eq!(lua.top(), base + fast.unwrap_or(0), "{v:?}: the stack");
    if fast.is_some() {
        let mut out = lua.stack();
        let mut p = Pusher::new(&mut out, base + 1);
        p.one(v)
            .expect("the pusher pushes what the fast path pushed");
        drop(out);
        lua.deq(base + 1, base + 2, &format!("{v:?}"));
    }
    lua.settop(base);
    check_push(lua, v);
    fast.is_some()
}

#[test]
fn one_scalar_push_as_the_pusher() {
    let lua = lua();
    let luajit = cfg!(feature = "luajit");
    // Within ±(10^14 - 1) LuaJIT's decoder makes numbers, past it cdata
    // (the pusher's).
    for (i, fast) in [
        (0, true),
        (-1, true),
        (99_999_999_999_999, true),
        (-99_999_999_999_999, true),
        (100_000_000_000_000, !luajit),
        ((1 << 53) + 1, !luajit),
        (i64::MIN, !luajit),
        (i64::MAX, !luajit),
    ] {
        assert_eq!(check_scalar_push(&lua, &i), fast, "{i}");
    }
    for (u, fast) in [(5u64, true), (1 << 63, !luajit), (u64::MAX, !luajit)] {
        assert_eq!(check_scalar_push(&lua, &u), fast, "{u}");
    }
    for f in [
        0.0,
        -0.0,
        f64::NAN,
        f64::INFINITY,
        0.5,
        2f64.powi(53) + 2.0,
        -1e300,
    ] {
        assert!(check_scalar_push(&lua, &f), "{f}");
    }
    assert!(check_scalar_push(&lua, &1.5f32));
    assert!(check_scalar_push(&lua, &true));
    assert!(check_scalar_push(&lua, &'é'));
    assert!(check_scalar_push(&lua, &String::from("with\0nul")));
    assert!(check_scalar_push(&lua, &Bin(vec![0xff, 0xfe])));
    assert!(check_scalar_push(&lua, &Some(7u8)));
    assert!(check_scalar_push(&lua, &Newtype(-3)));
    // The pusher's: nil (`msgpack.NULL`), tables, tuples, variants, 16-byte
    // integers.
    assert!(!check_scalar_push(&lua, &None::<i64>));
    assert!(!check_scalar_push(&lua, &()));
    assert!(!check_scalar_push(&lua, &Unit));
    assert!(!check_scalar_push(&lua, &(1, 2)));
    assert!(!check_scalar_push(&lua, &vec![1]));
    assert!(!check_scalar_push(&lua, &E::A));
    assert!(!check_scalar_push(&lua, &i128::MAX));
    assert!(!check_scalar_push(&lua, &Some(())));
}

#[test]
fn read_lua_tables() {
    let lua = lua();
    read_as!(lua, "return {1, 2, 3}", true; Any, Vec<i64>, (i64, i64, i64), (i64, i64),
        [i64; 3], HMap<String, i64>, BTreeMap<i64, i64>, Pair, Unit, Point, ());
    read_as!(lua, "return {}", true; Any, Vec<i64>, HMap<String, i64>, Unit, Option<Vec<i64>>);
    read_as!(lua, "return setmetatable({}, msgpack.map_mt)", true; Any, Vec<i64>,
        HMap<String, i64>, Unit);
    read_as!(lua, "return setmetatable({}, {__serialize = 'map'}), \
                   setmetatable({[1] = 1, [3] = 3}, {__serialize = 'seq'}), \
                   setmetatable({x = 1, [2] = 2}, {__serialize = 'array'})", true;
        (Any, Any, Any), Vec<Any>);
    read_as!(lua, "return {a = 1, b = 'x', c = {1, 2}}", true; Any, BTreeMap<String, Any>,
        HMap<String, i64>, E, Ten);
    read_as!(lua, "return {x = 5, y = 2, name = 'n', tags = {'t'}, \
                   parent = {x = 1, y = 0.5, name = '', tags = {}}}", true;
        Point, Any, (Point, Option<Point>), BTreeMap<String, Any>);
    read_as!(lua, "return {x = 5, y = 2, name = 'n', tags = {}, parent = msgpack.NULL, extra = {1, {2}}}", true;
        Point, Any);
    read_as!(lua, "return {[1] = 'a', [2] = 'b', [20] = 'c'}, {[1] = 1, [3] = 3}, \
                   {[1] = 1, [11] = 11}, {[0] = 0, 1}, {1, 2, x = 3}, {[1.5] = 1}, \
                   {[-1] = 1}, {[2^53] = 1}", true;
        Vec<Any>, (Any, Any, Any, Any, Any, Any, Any, Any), (Vec<Option<String>>,));
    read_as!(lua, "return {A = msgpack.NULL}, 'A', {B = 7}, {C = {1, 'x'}}, \
                   {D = {x = 1, y = 'y'}}, {D = {1, 'y'}}, 1, {A = 1}, {B = 1, C = 2}, {'A'}", true;
        (E, E, E, E, E, E, E), (E,), Vec<Any>);
    for one in [
        "return {A = 1}",
        "return {B = 1, C = 2}",
        "return {'A'}",
        "return {A = {}}",
        "return {B = 'x'}",
        "return {C = {1}}",
        "return {D = 5}",
        "return 7",
        "return {[true] = 1}",
        "return {[{1}] = 2}",
    ] {
        read_as!(lua, one, true; E, Any, Option<E>);
    }
    read_as!(lua, "return {1, {2, {3, {4}}}}, {{}, {{}}}", true; Vec<Any>, (Any, Any), Vec<Vec<Any>>);
    read_as!(lua, "return {true, false}, {['k\\0'] = 1}, {[true] = 'yes'}", true;
        (Vec<bool>, HMap<String, i64>, Any), (Any, Any, Any), Vec<Any>);
}

#[test]
fn read_what_the_reader_leaves() {
    let lua = lua();
    // A `__serialize` function (run under `lua_pcall` by the encoder).
    read_as!(lua, "return setmetatable({1}, {__serialize = function(t) return {x = 1} end})", false;
        Any, HMap<String, i64>, Vec<i64>);
    read_as!(lua, "return setmetatable({}, {__serialize = function() error('boom') end})", false;
        Any, ());
    read_as!(lua, "return setmetatable({}, {__serialize = 'nonsense'}), 1", false; Any, i64, ());
    // Values with no MessagePack form: refused, even when dropped.
    read_as!(lua, "return print", false; Any, (), Option<i64>);
    read_as!(lua, "return 1, print", false; i64, (i64,), ());
    read_as!(lua, "return {1, print}", false; Vec<Any>, ());
    read_as!(lua, "return {x = 1, f = print}", false; Point, Any);
    read_as!(lua, "return coroutine.create(print)", false; Any);
    // Nested past the encoder's 128 levels: refused; 128 levels are read.
    read_as!(lua, "local t = {} for i = 1, 129 do t = {t} end return t", false; Any, ());
    read_as!(lua, "local t = {} for i = 1, 127 do t = {t} end return t", true; Any, ());
    // A type that does not fit: MessagePack's error, with its message.
    read_as!(lua, "return 'x', {1}", true; i64, (i64, i64), Vec<String>, (String, HMap<String, i64>));
    let base = lua.top();
    let n = lua.eval("return print");
    let e = lua.read_direct::<()>(base + 1, n).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Refused, "{e}");
    lua.settop(base);
    let n = lua.eval("return 'x'");
    let e = lua.read_direct::<i64>(base + 1, n).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Convert, "{e}");
    assert!(e.message().starts_with("results as i64: "), "{e}");
    lua.settop(base);
}

#[cfg(feature = "luajit")]
#[test]
fn read_cdata() {
    let lua = lua();
    read_as!(lua, "return 1LL, 2ULL, -3LL, 2^62 * 1LL", false; (Any, Any, Any, Any), (i64, u64, i64, i64));
    read_as!(lua, "local ffi = require('ffi') return ffi.new('double', 2), ffi.new('float', 0.5), \
                   ffi.cast('void *', 0)", false; (Any, Any, Any), (f64, f32, Option<i64>));
    read_as!(lua, "return {msgpack.NULL, 1}", true; Vec<Option<i64>>, Any);
}

#[test]
fn read_values_above_and_below() {
    let lua = lua();
    let base = lua.top();
    let n = lua.eval("return 'below', 1, {2}, 'above', 'more'");
    assert_eq!(n, 5);
    check_read::<(i64, Vec<i64>)>(&lua, base + 2, 2, true);
    check_read::<i64>(&lua, base + 2, 1, true);
    check_read::<()>(&lua, base + 2, 0, true);
    check_read::<Option<i64>>(&lua, base + 2, 0, true);
    assert_eq!(lua.top(), base + 5);
    lua.settop(base);
}

/// What the direct call path does with both: a Lua function called with
/// the pushed arguments, its results read.
#[test]
fn a_call_through_both() {
    let lua = lua();
    lua.eval(
        "function __sum(...) local s = 0 for _, v in ipairs({...}) do s = s + v end \
             return s, select('#', ...) end \
         function __point(p, n) return p.name, p.tags[2], \
             getmetatable(p) == msgpack.map_mt, getmetatable(p.tags) == msgpack.array_mt, \
             p.parent == msgpack.NULL, n == msgpack.NULL, {x = p.x * 2, y = p.y, name = 'q', tags = {}} end",
    );
    let call = |name: &std::ffi::CStr, args: &dyn Fn(&Lua) -> c_int| -> (c_int, c_int) {
        let base = lua.top();
        // SAFETY: the main state; room for the function; the arguments
        // above it; a pcall catches its errors.
        unsafe {
            assert!(ffi::lua_checkstack(lua.l, 4) != 0);
            ffi::lua_getglobal(lua.l, name.as_ptr());
            let n = args(&lua);
            assert_eq!(ffi::lua_pcall(lua.l, n, ffi::LUA_MULTRET, 0), 0);
        }
        (base + 1, lua.top() - base)
    };
    let (first, n) = call(c"__sum", &|lua| lua.push_direct(&(1, 2, 3.5)).unwrap());
    assert_eq!(lua.read_direct::<(f64, i64)>(first, n).unwrap(), (6.5, 3));
    assert_eq!(lua.read_direct::<f64>(first, n).unwrap(), 6.5);
    lua.settop(first - 1);
    let p = Point {
        x: 4,
        y: 0.5,
        name: "p".into(),
        tags: vec!["a".into(), "b".into()],
        parent: None,
    };
    let (first, n) = call(c"__point", &|lua| {
        lua.push_direct(&(&p, None::<i64>)).unwrap()
    });
    let got = lua
        .read_direct::<(String, String, bool, bool, bool, bool, Point)>(first, n)
        .unwrap();
    let q = Point {
        x: 8,
        y: 0.5,
        name: "q".into(),
        tags: vec![],
        parent: None,
    };
    assert_eq!(got, ("p".into(), "b".into(), true, true, true, true, q));
    lua.settop(first - 1);
}

/// Best of `rounds` of `iters` runs of `f`, in ns per run.
fn time(rounds: usize, iters: u32, mut f: impl FnMut()) -> f64 {
    (0..rounds)
        .map(|_| {
            let t = std::time::Instant::now();
            for _ in 0..iters {
                f();
            }
            t.elapsed().as_nanos() as f64 / f64::from(iters)
        })
        .fold(f64::INFINITY, f64::min)
}

/// One round trip of the bench: `args` pushed (through MessagePack when
/// `mp`), then read back as `R`.
fn round_trip<A: Serialize, R: DeserializeOwned>(lua: &Lua, mp: bool, args: &A) -> R {
    let base = lua.top();
    let n = if mp {
        lua.push_msgpack(args).unwrap()
    } else {
        lua.push_direct(args).unwrap()
    };
    let r = if mp {
        lua.read_msgpack::<R>(base + 1, n).unwrap()
    } else {
        lua.read_direct::<R>(base + 1, n).unwrap()
    };
    lua.settop(base);
    r
}

/// The bench of the module doc: arguments pushed and a result read back,
/// through MessagePack (`args::encode`, the port's decode, the port's
/// encode, `args::decode`) and directly, side by side, best of 5 rounds.
/// `cargo test --release -p luafiber-lua --lib lua_serde::tests::bench --
/// --ignored --nocapture`. For `valgrind --tool=callgrind`:
/// `LUA_SERDE_BENCH=i64_mp|i64_direct|ten_mp|ten_direct` runs that case
/// alone, `LUA_SERDE_ITERS` times (once, no rounds).
#[test]
#[ignore]
fn bench() {
    let lua = lua();
    let x = (12_345i64,);
    let s = ten();
    let only = std::env::var("LUA_SERDE_BENCH").ok();
    let iters: u32 = std::env::var("LUA_SERDE_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let case = |name: &str, mp: bool, ten: bool| -> f64 {
        let f = || {
            if ten {
                std::hint::black_box(round_trip::<Ten, Ten>(&lua, mp, std::hint::black_box(&s)));
            } else {
                std::hint::black_box(round_trip::<(i64,), i64>(
                    &lua,
                    mp,
                    std::hint::black_box(&x),
                ));
            }
        };
        match &only {
            Some(o) if o == name => time(1, iters, f),
            Some(_) => 0.0,
            None => time(5, iters, f),
        }
    };
    for _ in 0..if only.is_some() { 1 } else { 3 } {
        let a = case("i64_mp", true, false);
        let b = case("i64_direct", false, false);
        let c = case("ten_mp", true, true);
        let d = case("ten_direct", false, true);
        println!(
            "(i64,) -> i64: MessagePack {a:.0} ns, direct {b:.0} ns ({:.2}x); \
             10-field struct: MessagePack {c:.0} ns, direct {d:.0} ns ({:.2}x)",
            a / b,
            c / d
        );
    }
}
