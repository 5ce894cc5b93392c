//! The Lua `uuid` module: Tarantool master's `src/lua/uuid.lua`.
//!
//! - `uuid.new()` / `uuid()`: a new random UUID (version 4, RFC 4122
//!   variant); `uuid.str()`, `uuid.bin([order])`: the same as text or
//!   bytes at once.
//! - `uuid.fromstr(text)`: the UUID of its 36-character text form, or nil;
//!   `uuid.frombin(bytes [, order])`: of its 16 bytes.
//! - `uuid.is_uuid(v)`, `uuid.NULL` (the nil UUID, `const`).
//! - A UUID's methods: `u:str()`, `u:bin([order])` (`order`: `'l'`, `'h'`,
//!   `'host'` or nil for host order, `'b'`, `'n'`, `'network'` for network
//!   order), `u:isnil()`; `tostring(u)`; `==` with a UUID or its text;
//!   `<`, `<=` with a UUID or its text (anything else raises "incorrect
//!   value to convert to uuid as N argument").
//!
//! A UUID is on LuaJIT a `struct tt_uuid` cdata, as in Tarantool (its
//! fields `time_low`, `time_mid`, `time_hi_and_version`,
//! `clock_seq_hi_and_reserved`, `clock_seq_low`, `node[0..5]` read as
//! there; `ffi.istype('struct tt_uuid', u)` holds), and on Lua 5.4 a
//! userdata whose fields read the same (`node` is a table indexed from 0).
//! `msgpack` encodes it as MsgPack extension 2 and decodes that back into
//! a UUID; `json` and `yaml` write its text.
//!
//! Generating, parsing and formatting are the `uuid` crate's ([`value`]).
//!
//! Differences from Tarantool:
//!
//! - `uuid.NULL` is a `const struct tt_uuid` value, not a reference to
//!   the C global `uuid_nil` (`msgpack.encode(uuid.NULL)` works here).
//! - The text form is read strictly (Tarantool's `sscanf` also takes a `+`
//!   or spaces in front of a group).
//! - On Lua 5.4 `u == 'text'` is false: Lua 5.4 calls `__eq` only for two
//!   userdata (`u:str() == 'text'` works on both).

pub(crate) mod object;
pub(crate) mod value;

pub(crate) use object::{get, push, SLOT};

use crate::modules::ctype::ValueType;
use crate::raw::{lua_fn, Raise};
use value::{TtUuid, C_DECL};

const CHUNK: &str = include_str!("uuid.lua");

lua_fn! {
    /// The `uuid` module's loader (`package.preload.uuid`): makes the
    /// uuid type of this Lua state and the module table.
    pub(crate) fn open(s: &mut Stack) {
        s.settop(0);
        s.ensure(10)?;
        let internal = s.new_table(0, object::INTERNAL.len() as i32);
        s.set_funcs(internal, object::INTERNAL);
        let mt = s.new_table(0, 8);
        s.load(CHUNK, c"@builtin/uuid.lua").map_err(|()| Raise::Top)?;
        s.push_value(internal);
        s.push_value(mt);
        s.pcall(2, 2).map_err(|()| Raise::Top)?;
        let (module, index) = (mt + 1, mt + 2);
        let t = ValueType::<TtUuid>::new(s, C_DECL, c"struct tt_uuid", mt)?;
        if !t.is_cdata() {
            // A userdata's fields come from `__index` (a cdata's from its
            // struct; the metatype is fixed once given).
            s.push_value(index);
            s.set_field(mt, c"__index");
        }
        SLOT.install(t);
        t.push_const(s, TtUuid::NIL)?;
        s.set_field(module, c"NULL");
        s.push_value(module);
        Ok(1)
    }
}
