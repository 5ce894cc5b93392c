//! `msgpack.object`: MsgPack kept undecoded in a userdata, decoded on
//! demand, and its iterators (Tarantool's `luamp_object`,
//! `luamp_iterator` of `src/lua/msgpack.c`).
//!
//! - `msgpack.object(v)`, `msgpack.object_from_raw(s | ptr, size)`,
//!   `msgpack.is_object(v)`;
//! - an object: `obj:decode()`, `obj:get(key)` (decodes once, keeps the
//!   table), `obj[key]` (a method name gives the method, else `get`),
//!   `obj:iterator()`, `tostring(obj) == "msgpack.object"`;
//! - an iterator: `decode_array_header()`, `decode_map_header()`,
//!   `decode()`, `take()` (an object sharing the source's bytes),
//!   `take_array(n)`, `skip()`, `tostring(it) == "msgpack.iterator"`.
//!
//! An object decodes with the options its serializer has at that time
//! (it holds a registry ref to the serializer's state); an iterator and a
//! `take()`n object pin their source object the same way. The bytes of an
//! object never change while it lives.

use std::cell::Cell;
use std::ffi::c_int;
use std::ops::Range;
use std::rc::Rc;

use luafiber_runtime::ibuf;
use mlua::ffi;

use super::decode::reader::{self, Head, Reader};
use super::decode::Decoder;
use super::decode_fns::{check_integer, to_ptr};
use super::{encode, settle, state, State};
use crate::raw::context::Part;
use crate::raw::error::{type_name, ErrorKind};
use crate::raw::{lua_fn, Kind, LResult, Raise, Stack};

/// An object: its bytes (its own, or a range of its source's, shared).
/// The userdata holds an `Rc` of it, so a method (and an iterator) works
/// on a handle of its own, whatever happens to the object meanwhile.
pub(super) struct Obj {
    /// The bytes: its own, or its source's, of which it uses `range`.
    buf: Rc<[u8]>,
    range: Range<usize>,
    /// The serializer's state userdata.
    state_ref: c_int,
    /// The source object, for a `take()`n one.
    src_ref: c_int,
    /// The decoded table, once `get` ran.
    decoded_ref: Cell<c_int>,
}

/// An iterator over an object's bytes.
pub(super) struct Iter {
    obj: Rc<Obj>,
    /// Pins the source object (so its state ref lives while this does).
    obj_ref: c_int,
    pos: Cell<usize>,
}

impl Obj {
    /// Its bytes.
    pub(super) fn bytes(&self) -> &[u8] {
        &self.buf[self.range.clone()]
    }
}

/// Per-cord state of `msgpack.object` (a part of the cord context): the
/// kinds of the cord's objects and iterators (made by `init`, fixed for
/// the state's life).
#[derive(Default)]
pub(crate) struct ObjectKinds {
    objs: Cell<Kind<Rc<Obj>>>,
    iters: Cell<Kind<Rc<Iter>>>,
}

/// The kind of objects.
fn objs() -> Kind<Rc<Obj>> {
    ObjectKinds::with(|k| k.objs.get())
}

/// The kind of iterators.
fn iters() -> Kind<Rc<Iter>> {
    ObjectKinds::with(|k| k.iters.get())
}

/// Makes the object and iterator metatables (at setup).
pub(super) fn init(s: &mut Stack) {
    let obj: &[crate::raw::Reg] = &[
        (c"__gc", obj_gc),
        (c"__tostring", obj_tostring),
        (c"__index", obj_index),
        (c"__autocomplete", obj_autocomplete),
        (c"decode", obj_decode),
        (c"iterator", obj_iterator),
        (c"get", obj_get),
    ];
    let iter: &[crate::raw::Reg] = &[
        (c"__gc", iter_gc),
        (c"__tostring", iter_tostring),
        (c"decode_array_header", iter_array_header),
        (c"decode_map_header", iter_map_header),
        (c"decode", iter_decode),
        (c"take", iter_take),
        (c"take_array", iter_take_array),
        (c"skip", iter_skip),
    ];
    let objs = Kind::new_empty(s, obj.len() as c_int + 1);
    objs.push_metatable(s);
    s.set_funcs(-1, obj);
    s.pop(1);
    let iters = Kind::new_empty(s, iter.len() as c_int + 1);
    iters.push_metatable(s);
    s.set_funcs(-1, iter);
    s.push_value(-1);
    s.set_field(-2, c"__index");
    s.pop(1);
    ObjectKinds::with(|k| {
        k.objs.set(objs);
        k.iters.set(iters);
    });
}

const OBJ: &str = "msgpack.object";
const ITER: &str = "msgpack.iterator";

/// Lua's `luaL_checkudata` message.
fn bad_self(s: &Stack, idx: c_int, what: &str) -> Raise {
    let got = type_name(s.type_of(idx)).to_string_lossy();
    let got = if s.type_of(idx) == ffi::LUA_TNONE {
        "no value".into()
    } else {
        got
    };
    Raise::Message(format!(
        "bad argument #{idx} to '?' ({what} expected, got {got})"
    ))
}

/// The object at `idx`, if the value there is one.
pub(super) fn try_obj_at(s: &mut Stack, idx: c_int) -> Option<Rc<Obj>> {
    objs().get(s, idx)
}

/// The object at `idx`, or `luaL_checkudata`'s error.
fn obj_at(s: &mut Stack, idx: c_int) -> LResult<Rc<Obj>> {
    try_obj_at(s, idx).ok_or_else(|| bad_self(s, idx, OBJ))
}

/// The iterator at 1, or `luaL_checkudata`'s error.
fn iter_at(s: &mut Stack) -> LResult<Rc<Iter>> {
    iters().get(s, 1).ok_or_else(|| bad_self(s, 1, ITER))
}

/// Pushes a new object of `buf` (all of it, or `range` of a source
/// object's, whose ref is `src_ref`); its serializer is the state
/// userdata at `st_idx`.
fn push_obj(s: &mut Stack, st_idx: c_int, buf: Rc<[u8]>, range: Option<(Range<usize>, c_int)>) {
    let (range, src_ref) = range.unwrap_or((0..buf.len(), ffi::LUA_NOREF));
    s.push_value(st_idx);
    let state_ref = s.make_ref();
    let obj = Obj {
        buf,
        range,
        state_ref,
        src_ref,
        decoded_ref: Cell::new(ffi::LUA_NOREF),
    };
    objs().push(s, Rc::new(obj));
}

/// The state of the serializer whose state userdata registry ref is `r`
/// (`None` when the ref holds none any more: a `__gc` called by hand).
fn state_by_ref(s: &mut Stack, r: c_int) -> LResult<State> {
    s.push_ref(r);
    let st = super::state_kind().get(s, -1);
    s.pop(1);
    st.ok_or_else(|| Raise::Message("msgpack.object: its serializer is gone".into()))
}

/// Decodes `data` with `st` and pushes the value.
fn decode_bytes(s: &mut Stack, st: &State, data: &[u8]) -> LResult<()> {
    let base = s.top();
    Decoder::new(st)
        .decode(s, data)
        .map(|_| ())
        .map_err(|e| settle(s, base, e))
}

lua_fn! {
    /// `msgpack.object(v)`.
    pub(super) fn mp_object(s: &mut Stack) {
        if s.top() != 1 {
            return Err(Raise::Message("msgpack.object: a Lua object expected".into()));
        }
        let st = state(s);
        s.push_ref(st.serialize_key);
        let bytes = ibuf::with_cord_scratch(|out| -> LResult<Rc<[u8]>> {
            encode::Encoder::new(&st, out, 2).encode(s, 1)?;
            Ok(out.data().into())
        })
        .map_err(|e| settle(s, 2, e))?;
        s.settop(0);
        s.push_value(crate::raw::Stack::upvalue(1));
        push_obj(s, 1, bytes, None);
        Ok(1)
    }
}

lua_fn! {
    /// `msgpack.object_from_raw(s)` / `(ptr, size)`: checked to hold one
    /// value exactly.
    pub(super) fn mp_object_from_raw(s: &mut Stack) {
        let st = state(s);
        let bytes: Rc<[u8]> = if s.type_of(1) == ffi::LUA_TSTRING {
            s.to_str(1).unwrap_or_default().into()
        } else if let Some(ptr) = to_ptr(s, &st, 1) {
            let n = check_integer(s, 2, "object_from_raw")?.max(0) as usize;
            if ptr.addr() == 0 {
                return Err(Raise::Message("msgpack.object_from_raw: the pointer is NULL".into()));
            }
            // SAFETY: the caller vouches for `n` bytes at the pointer
            // (Tarantool's contract); they are copied at once.
            unsafe { std::slice::from_raw_parts(ptr.addr() as *const u8, n) }.into()
        } else {
            return Err(Raise::Message(
                "msgpack.object_from_raw: a Lua string or 'char *' expected".into(),
            ));
        };
        reader::check_exact(&bytes).map_err(|b| b.raise())?;
        s.settop(0);
        s.push_value(crate::raw::Stack::upvalue(1));
        push_obj(s, 1, bytes, None);
        Ok(1)
    }
}

lua_fn! {
    /// `msgpack.is_object(v)`.
    pub(super) fn mp_is_object(s: &mut Stack) {
        let yes = try_obj_at(s, 1).is_some();
        s.push_bool(yes);
        Ok(1)
    }
}

lua_fn! {
    /// `__gc` of an object: its refs go (udata rule 2: a resurrected
    /// object is no object any more); its bytes go with the last handle.
    fn obj_gc(s: &mut Stack) {
        if let Some(obj) = objs().take(s, 1) {
            for r in [obj.state_ref, obj.src_ref, obj.decoded_ref.get()] {
                s.unref(r);
            }
        }
        Ok(0)
    }
}

lua_fn! {
    /// `tostring(obj)`.
    fn obj_tostring(s: &mut Stack) {
        s.push_str(OBJ);
        Ok(1)
    }
}

lua_fn! {
    /// `obj:decode()`.
    fn obj_decode(s: &mut Stack) {
        let obj = obj_at(s, 1)?;
        let st = state_by_ref(s, obj.state_ref)?;
        decode_bytes(s, &st, obj.bytes())?;
        Ok(1)
    }
}

/// `obj:get(key)` / `obj[key]` for non-methods.
fn get(s: &mut Stack) -> LResult<c_int> {
    let obj = obj_at(s, 1)?;
    if !matches!(obj.bytes().first(), Some(0x80..=0x9f | 0xdc..=0xdf)) {
        return Err(Raise::Message("not an array or map".into()));
    }
    s.settop(2);
    if obj.decoded_ref.get() == ffi::LUA_NOREF {
        let st = state_by_ref(s, obj.state_ref)?;
        decode_bytes(s, &st, obj.bytes())?;
        obj.decoded_ref.set(s.make_ref());
    }
    s.push_ref(obj.decoded_ref.get());
    if s.is_none_or_nil(2) || s.to_number(2).is_some_and(f64::is_nan) {
        s.push_nil();
        return Ok(1);
    }
    s.push_value(2);
    s.rawget(-2);
    Ok(1)
}

lua_fn! {
    /// `obj:get(key)`: `decode()[key]`, decoded once.
    fn obj_get(s: &mut Stack) {
        get(s)
    }
}

lua_fn! {
    /// `__index`: a method or metamethod by that name, else `obj:get(key)`.
    fn obj_index(s: &mut Stack) {
        obj_at(s, 1)?;
        if s.type_of(2) == ffi::LUA_TSTRING {
            s.settop(2);
            s.get_metatable(1);
            s.push_value(2);
            s.rawget(-2);
            if !s.is_none_or_nil(-1) {
                return Ok(1);
            }
            s.settop(2);
        }
        get(s)
    }
}

lua_fn! {
    /// `__autocomplete`: the metatable (its methods).
    fn obj_autocomplete(s: &mut Stack) {
        obj_at(s, 1)?;
        s.get_metatable(1);
        Ok(1)
    }
}

lua_fn! {
    /// `obj:iterator()`.
    fn obj_iterator(s: &mut Stack) {
        let obj = obj_at(s, 1)?;
        s.settop(1);
        let obj_ref = s.make_ref();
        let it = Iter { obj, obj_ref, pos: Cell::new(0) };
        iters().push(s, Rc::new(it));
        Ok(1)
    }
}

/// The iterator at 1 and where its cursor is, checked to have something
/// left.
fn iter_rest(s: &mut Stack) -> LResult<(Rc<Iter>, usize)> {
    let it = iter_at(s)?;
    let pos = it.pos.get();
    if pos >= it.obj.bytes().len() {
        return Err(Raise::Message("iteration ended".into()));
    }
    Ok((it, pos))
}

/// The shared body of the iterator's header decoders.
fn iter_header(s: &mut Stack, map: bool) -> LResult<c_int> {
    let (it, pos) = iter_rest(s)?;
    let mut r = Reader {
        data: &it.obj.bytes()[pos..],
        pos: 0,
    };
    let n = match r.head() {
        Ok(Head::Map(n)) if map => n,
        Ok(Head::Array(n)) if !map => n,
        _ => return Err(Raise::Message("unexpected msgpack type".into())),
    };
    it.pos.set(pos + r.pos);
    s.push_int(i64::from(n));
    Ok(1)
}

lua_fn! {
    /// `it:decode_array_header()`.
    fn iter_array_header(s: &mut Stack) {
        iter_header(s, false)
    }
}

lua_fn! {
    /// `it:decode_map_header()`.
    fn iter_map_header(s: &mut Stack) {
        iter_header(s, true)
    }
}

/// The length of the value at the start of `rest` (checked at creation).
fn value_len(rest: &[u8]) -> LResult<usize> {
    reader::check(rest).map_err(|b| b.raise())
}

lua_fn! {
    /// `it:decode()`: the value at the cursor; the cursor moves past it.
    fn iter_decode(s: &mut Stack) {
        let (it, pos) = iter_rest(s)?;
        let st = state_by_ref(s, it.obj.state_ref)?;
        let rest = &it.obj.bytes()[pos..];
        let n = value_len(rest)?;
        decode_bytes(s, &st, &rest[..n])?;
        it.pos.set(pos + n);
        Ok(1)
    }
}

lua_fn! {
    /// `it:skip()`.
    fn iter_skip(s: &mut Stack) {
        let (it, pos) = iter_rest(s)?;
        it.pos.set(pos + value_len(&it.obj.bytes()[pos..])?);
        Ok(0)
    }
}

lua_fn! {
    /// `it:take()`: the value at the cursor as an object sharing the
    /// source's bytes (and pinning the source).
    fn iter_take(s: &mut Stack) {
        let (it, pos) = iter_rest(s)?;
        let n = value_len(&it.obj.bytes()[pos..])?;
        it.pos.set(pos + n);
        let start = it.obj.range.start + pos;
        s.push_ref(it.obj_ref);
        let src_ref = s.make_ref();
        s.push_ref(it.obj.state_ref);
        let st_idx = s.top();
        push_obj(s, st_idx, it.obj.buf.clone(), Some((start..start + n, src_ref)));
        Ok(1)
    }
}

lua_fn! {
    /// `it:take_array(count)`: the next `count` values as a new object
    /// holding an array of them.
    fn iter_take_array(s: &mut Stack) {
        iter_at(s)?;
        if s.top() != 2 {
            return Err(Raise::Message("Usage: iter:take_array(count)".into()));
        }
        let count = check_integer(s, 2, "take_array")?;
        if count < 0 {
            return Err(Raise::Message("count must be >= 0".into()));
        }
        let it = iter_at(s)?;
        let bytes = it.obj.bytes();
        let pos = it.pos.get();
        let mut end = pos;
        for _ in 0..count {
            if end >= bytes.len() {
                return Err(Raise::Message("iteration ended".into()));
            }
            end += value_len(&bytes[end..])?;
        }
        let mut own = Vec::with_capacity(end - pos + 5);
        rmp::encode::write_array_len(&mut own, count as u32)
            .map_err(|e| Raise::Error(ErrorKind::OutOfMemory, e.to_string()))?;
        own.extend_from_slice(&bytes[pos..end]);
        it.pos.set(end);
        s.push_ref(it.obj.state_ref);
        let st_idx = s.top();
        push_obj(s, st_idx, own.into(), None);
        Ok(1)
    }
}

lua_fn! {
    /// `__gc` of an iterator: it unpins its source (udata rule 2: a
    /// resurrected iterator is no iterator any more).
    fn iter_gc(s: &mut Stack) {
        if let Some(it) = iters().take(s, 1) {
            s.unref(it.obj_ref);
        }
        Ok(0)
    }
}

lua_fn! {
    /// `tostring(it)`.
    fn iter_tostring(s: &mut Stack) {
        s.push_str(ITER);
        Ok(1)
    }
}
