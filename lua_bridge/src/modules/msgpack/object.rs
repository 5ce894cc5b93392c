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

use std::ffi::{c_int, c_void};

use luafiber_runtime::ibuf;
use mlua::ffi;

use super::decode::reader::{self, Head, Reader};
use super::decode::Decoder;
use super::decode_fns::{check_integer, to_ptr};
use super::{encode, settle, state, State};
use crate::raw::error::{type_name, ErrorKind};
use crate::raw::{lua_fn, LResult, Raise, Stack};

/// An object: its bytes (its own, or a range of its source's).
pub(super) struct Obj {
    /// The bytes it owns (none for a `take()`n one), read through `ptr`.
    _own: Box<[u8]>,
    ptr: *const u8,
    len: usize,
    /// The serializer's state userdata.
    state_ref: c_int,
    /// The source object, for a `take()`n one.
    src_ref: c_int,
    /// The decoded table, once `get` ran.
    decoded_ref: c_int,
}

/// An iterator over an object's bytes.
pub(super) struct Iter {
    obj: *const Obj,
    obj_ref: c_int,
    pos: usize,
}

impl Obj {
    /// An object that owns nothing and refers to nothing (what a collected
    /// one holds after its `__gc`).
    fn spent() -> Obj {
        Obj {
            _own: Box::new([]),
            ptr: std::ptr::NonNull::dangling().as_ptr(),
            len: 0,
            state_ref: ffi::LUA_NOREF,
            src_ref: ffi::LUA_NOREF,
            decoded_ref: ffi::LUA_NOREF,
        }
    }

    fn bytes<'a>(&self) -> &'a [u8] {
        // SAFETY: `ptr..ptr + len` is in `own`, or in the source object's
        // `own`, which its ref pins (module doc); callers keep the object
        // alive (on the stack) while they read.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Iter {
    /// The source object.
    fn obj<'a>(&self) -> &'a Obj {
        // SAFETY: `obj` is the userdata block of the object that `obj_ref`
        // pins (`obj_iterator`), so it lives while the iterator does.
        unsafe { &*self.obj }
    }
}

/// Makes the object and iterator metatables (at setup); returns their refs
/// and addresses.
pub(super) fn init(s: &mut Stack) -> [(c_int, *const c_void); 2] {
    let mut out = [(ffi::LUA_NOREF, std::ptr::null()); 2];
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
    for (i, fns) in [obj, iter].into_iter().enumerate() {
        let mt = s.new_table(0, fns.len() as c_int + 1);
        s.set_funcs(mt, fns);
        if i == 1 {
            s.push_value(mt);
            s.set_field(mt, c"__index");
        }
        out[i] = (0, s.to_pointer(mt));
        out[i].0 = s.make_ref();
    }
    out
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

/// The object at `idx`, if the value there is one; the caller keeps it at
/// `idx` while it uses the reference.
fn try_obj_at<'a>(s: &mut Stack, idx: c_int) -> Option<&'a mut Obj> {
    let p = s.udata_with_mt(idx, state_of_mt(s).0)?.cast::<Obj>();
    // SAFETY: a userdata with the object metatable is an `Obj` block
    // (`push_obj` is the only maker), alive while it stays on the stack.
    Some(unsafe { &mut *p })
}

/// The object at `idx` (the caller keeps it there), or `luaL_checkudata`'s
/// error.
fn obj_at<'a>(s: &mut Stack, idx: c_int) -> LResult<&'a mut Obj> {
    try_obj_at(s, idx).ok_or_else(|| bad_self(s, idx, OBJ))
}

/// The bytes of the msgpack.object at `idx`, if it is one; they live while
/// the object is on the stack.
pub(super) fn bytes_of<'a>(s: &mut Stack, idx: c_int) -> Option<&'a [u8]> {
    try_obj_at(s, idx).map(|o| o.bytes())
}

/// The iterator at 1 (the caller keeps it there), or `luaL_checkudata`'s
/// error.
fn iter_at<'a>(s: &mut Stack) -> LResult<&'a mut Iter> {
    let Some(p) = s.udata_with_mt(1, state_of_mt(s).1) else {
        return Err(bad_self(s, 1, ITER));
    };
    // SAFETY: a userdata with the iterator metatable is an `Iter` block
    // (`obj_iterator` is the only maker), alive while it stays at 1.
    Ok(unsafe { &mut *p.cast::<Iter>() })
}

thread_local! {
    /// This thread's object and iterator metatable addresses (set by
    /// `make_state`, fixed for the state's life).
    static MTS: std::cell::Cell<(*const c_void, *const c_void)> =
        const { std::cell::Cell::new((std::ptr::null(), std::ptr::null())) };
}

/// Remembers the metatables' addresses for the methods (which have no
/// upvalue).
pub(super) fn set_mts(obj: *const c_void, iter: *const c_void) {
    MTS.with(|m| m.set((obj, iter)));
}

fn state_of_mt(_s: &Stack) -> (*const c_void, *const c_void) {
    MTS.with(std::cell::Cell::get)
}

/// Pushes a new object of `bytes` (its own copy) or of the range
/// `ptr..ptr+len` of the source object whose ref is `src_ref`; its
/// serializer is the state userdata at `st_idx`.
fn push_obj(
    s: &mut Stack,
    st: &State,
    st_idx: c_int,
    own: Box<[u8]>,
    range: Option<(*const u8, usize, c_int)>,
) {
    let (ptr, len, src_ref) = match range {
        Some(r) => r,
        None => (own.as_ptr(), own.len(), ffi::LUA_NOREF),
    };
    s.push_value(st_idx);
    let state_ref = s.make_ref();
    let obj = Obj {
        _own: own,
        ptr,
        len,
        state_ref,
        src_ref,
        decoded_ref: ffi::LUA_NOREF,
    };
    s.push_userdata_with(obj, st.x.obj_mt);
}

/// The state of the serializer whose state userdata registry ref is `r`.
fn state_by_ref(s: &mut Stack, r: c_int) -> State {
    s.push_ref(r);
    let p = s.to_userdata(-1).cast::<State>();
    // SAFETY: the ref holds a state userdata (`push_obj`), pinned by it.
    let st = unsafe { p.read() };
    s.pop(1);
    st
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
        let bytes = ibuf::with_cord_scratch(|out| -> LResult<Box<[u8]>> {
            encode::Encoder::new(&st, out, 2).encode(s, 1)?;
            Ok(out.data().into())
        })
        .map_err(|e| settle(s, 2, e))?;
        s.settop(0);
        s.push_value(crate::raw::Stack::upvalue(1));
        push_obj(s, &st, 1, bytes, None);
        Ok(1)
    }
}

lua_fn! {
    /// `msgpack.object_from_raw(s)` / `(ptr, size)`: checked to hold one
    /// value exactly.
    pub(super) fn mp_object_from_raw(s: &mut Stack) {
        let st = state(s);
        let bytes: Box<[u8]> = if s.type_of(1) == ffi::LUA_TSTRING {
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
        push_obj(s, &st, 1, bytes, None);
        Ok(1)
    }
}

lua_fn! {
    /// `msgpack.is_object(v)`.
    pub(super) fn mp_is_object(s: &mut Stack) {
        let yes = s.udata_with_mt(1, state_of_mt(s).0).is_some();
        s.push_bool(yes);
        Ok(1)
    }
}

lua_fn! {
    /// `__gc` of an object.
    fn obj_gc(s: &mut Stack) {
        // The collector calls `__gc` once; the block keeps a spent object
        // (its metatable taken away as well, so nothing reads it again).
        let obj = std::mem::replace(obj_at(s, 1)?, Obj::spent());
        s.push_nil();
        s.set_metatable(1);
        for r in [obj.state_ref, obj.src_ref, obj.decoded_ref] {
            s.unref(r);
        }
        drop(obj);
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
        let st = state_by_ref(s, obj.state_ref);
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
    if obj.decoded_ref == ffi::LUA_NOREF {
        let st = state_by_ref(s, obj.state_ref);
        decode_bytes(s, &st, obj.bytes())?;
        obj.decoded_ref = s.make_ref();
    }
    s.push_ref(obj.decoded_ref);
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
        let st = state_by_ref(s, obj.state_ref);
        let obj: *const Obj = obj;
        s.settop(1);
        let obj_ref = s.make_ref();
        s.push_userdata_with(Iter { obj, obj_ref, pos: 0 }, st.x.iter_mt);
        Ok(1)
    }
}

/// The iterator at 1 and its source's bytes from the cursor on, checked
/// to have something left.
fn iter_rest<'a>(s: &mut Stack) -> LResult<(&'a mut Iter, &'a [u8])> {
    let it = iter_at(s)?;
    let bytes = it.obj().bytes();
    let pos = it.pos;
    if pos >= bytes.len() {
        return Err(Raise::Message("iteration ended".into()));
    }
    Ok((it, &bytes[pos..]))
}

/// The shared body of the iterator's header decoders.
fn iter_header(s: &mut Stack, map: bool) -> LResult<c_int> {
    let (it, rest) = iter_rest(s)?;
    let mut r = Reader { data: rest, pos: 0 };
    let n = match r.head() {
        Ok(Head::Map(n)) if map => n,
        Ok(Head::Array(n)) if !map => n,
        _ => return Err(Raise::Message("unexpected msgpack type".into())),
    };
    it.pos += r.pos;
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
        let (it, rest) = iter_rest(s)?;
        let st = state_by_ref(s, it.obj().state_ref);
        let n = value_len(rest)?;
        decode_bytes(s, &st, &rest[..n])?;
        it.pos += n;
        Ok(1)
    }
}

lua_fn! {
    /// `it:skip()`.
    fn iter_skip(s: &mut Stack) {
        let (it, rest) = iter_rest(s)?;
        it.pos += value_len(rest)?;
        Ok(0)
    }
}

lua_fn! {
    /// `it:take()`: the value at the cursor as an object sharing the
    /// source's bytes (and pinning the source).
    fn iter_take(s: &mut Stack) {
        let (it, rest) = iter_rest(s)?;
        let n = value_len(rest)?;
        it.pos += n;
        let state_ref = it.obj().state_ref;
        let st = state_by_ref(s, state_ref);
        s.push_ref(it.obj_ref);
        let src_ref = s.make_ref();
        s.push_ref(state_ref);
        let st_idx = s.top();
        push_obj(s, &st, st_idx, Box::new([]), Some((rest.as_ptr(), n, src_ref)));
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
        let obj = it.obj();
        let bytes = obj.bytes();
        let mut end = it.pos;
        for _ in 0..count {
            if end >= bytes.len() {
                return Err(Raise::Message("iteration ended".into()));
            }
            end += value_len(&bytes[end..])?;
        }
        let mut own = Vec::with_capacity(end - it.pos + 5);
        rmp::encode::write_array_len(&mut own, count as u32)
            .map_err(|e| Raise::Error(ErrorKind::OutOfMemory, e.to_string()))?;
        own.extend_from_slice(&bytes[it.pos..end]);
        it.pos = end;
        let st = state_by_ref(s, obj.state_ref);
        s.push_ref(obj.state_ref);
        let st_idx = s.top();
        push_obj(s, &st, st_idx, own.into_boxed_slice(), None);
        Ok(1)
    }
}

lua_fn! {
    /// `__gc` of an iterator.
    fn iter_gc(s: &mut Stack) {
        // The collector calls `__gc` once; the metatable is taken away so
        // nothing reads the iterator again.
        let r = iter_at(s)?.obj_ref;
        s.push_nil();
        s.set_metatable(1);
        s.unref(r);
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
