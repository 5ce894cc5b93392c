//! The uuid values of a Lua state ([`ValueType`] of [`TtUuid`]) and the C
//! functions `uuid.lua` builds the module from.
//!
//! Per-cord state: the value type, made when the module is first loaded
//! and cleared for a new Lua state (`reset`).

use std::cell::Cell;
use std::cmp::Ordering;
use std::ffi::c_int;

use super::value::{TtUuid, UUID_LEN};
use crate::modules::ctype::{Slot, ValueType};
use crate::raw::context::Part;
use crate::raw::{lua_fn, LResult, Reg, Stack};

/// Per-cord state of `uuid` (a part of the cord context): this cord's
/// uuid type, once `uuid` was loaded.
#[derive(Default)]
pub(crate) struct UuidType(Cell<Option<ValueType<TtUuid>>>);

/// This cord's uuid type.
pub(crate) static SLOT: Slot<TtUuid> = Slot::in_context(
    || UuidType::try_with(|t| t.0.get()).flatten(),
    |v| {
        UuidType::try_with(|t| t.0.set(v));
    },
    "uuid",
);

/// The uuid at `idx`, if the value there is one.
pub(crate) fn get(s: &mut Stack, idx: c_int) -> Option<TtUuid> {
    SLOT.value_at(s, idx)
}

/// Pushes a new uuid value holding `v`.
///
/// # Errors
///
/// Out of memory, or the module was not loaded.
pub(crate) fn push(s: &mut Stack, v: TtUuid) -> LResult<()> {
    SLOT.push(s, v)
}

/// The functions `uuid.lua` is given (its `internal` table).
pub(super) const INTERNAL: &[Reg] = &[
    (c"new", uuid_new),
    (c"str", uuid_str),
    (c"bin", uuid_bin),
    (c"frombin", uuid_frombin),
    (c"fromstr", uuid_fromstr),
    (c"is_uuid", uuid_is_uuid),
    (c"isnil", uuid_isnil),
    (c"eq", uuid_eq),
    (c"cmp", uuid_cmp),
    (c"field", uuid_field),
];

lua_fn! {
    /// `new()`: a new random uuid (Tarantool's `uuid.new`).
    fn uuid_new(s: &mut Stack) {
        push(s, TtUuid::new_v4())?;
        Ok(1)
    }
}

lua_fn! {
    /// `str(u)`: its text form, or nil for a value that is no uuid.
    fn uuid_str(s: &mut Stack) {
        match get(s, 1) {
            Some(u) => s.push_bytes(&u.text()),
            None => s.push_nil(),
        }
        Ok(1)
    }
}

lua_fn! {
    /// `bin(u, swap)`: its 16 bytes in host order, or network order when
    /// `swap`; nil for a value that is no uuid.
    fn uuid_bin(s: &mut Stack) {
        match get(s, 1) {
            Some(u) if s.to_bool(2) => s.push_bytes(&u.bswap().host_bytes()),
            Some(u) => s.push_bytes(&u.host_bytes()),
            None => s.push_nil(),
        }
        Ok(1)
    }
}

lua_fn! {
    /// `frombin(b, swap)`: the uuid of 16 bytes in host order (network
    /// order when `swap`); nil for a string of another length.
    fn uuid_frombin(s: &mut Stack) {
        let bytes: Option<[u8; UUID_LEN]> = s.to_str(1).and_then(|b| b.try_into().ok());
        match bytes {
            Some(b) => {
                let u = TtUuid::from_host_bytes(b);
                push(s, if s.to_bool(2) { u.bswap() } else { u })?;
            }
            None => s.push_nil(),
        }
        Ok(1)
    }
}

lua_fn! {
    /// `fromstr(text)`: the uuid of its text form, or nil.
    fn uuid_fromstr(s: &mut Stack) {
        match s.to_str(1).and_then(TtUuid::parse) {
            Some(u) => push(s, u)?,
            None => s.push_nil(),
        }
        Ok(1)
    }
}

lua_fn! {
    /// `is_uuid(v)`: whether `v` is a uuid.
    fn uuid_is_uuid(s: &mut Stack) {
        let is = get(s, 1).is_some();
        s.push_bool(is);
        Ok(1)
    }
}

lua_fn! {
    /// `isnil(u)`: whether every byte of the uuid is zero.
    fn uuid_isnil(s: &mut Stack) {
        let nil = get(s, 1).is_some_and(|u| u.is_nil());
        s.push_bool(nil);
        Ok(1)
    }
}

/// The uuid at `idx`: a uuid, or the uuid a string there reads as.
fn coerce(s: &mut Stack, idx: c_int) -> Option<TtUuid> {
    get(s, idx).or_else(|| s.to_str(idx).and_then(TtUuid::parse))
}

lua_fn! {
    /// `__eq(a, b)`: a uuid equals a uuid with the same bytes, or a string
    /// that reads as one (Tarantool's `uuid_eq`); anything else is not
    /// equal.
    fn uuid_eq(s: &mut Stack) {
        let (a, b) = match (get(s, 1), get(s, 2)) {
            (Some(a), Some(b)) => (Some(a), Some(b)),
            (Some(a), None) => (Some(a), s.to_str(2).and_then(TtUuid::parse)),
            (None, Some(b)) => (s.to_str(1).and_then(TtUuid::parse), Some(b)),
            (None, None) => (None, None),
        };
        s.push_bool(a.is_some() && a == b);
        Ok(1)
    }
}

lua_fn! {
    /// `cmp(a, b)`: -1, 0 or 1 as `a` orders before, as or after `b`, each
    /// a uuid or its text; nil and the index of an argument that is
    /// neither.
    fn uuid_cmp(s: &mut Stack) {
        let Some(a) = coerce(s, 1) else {
            s.push_nil();
            s.push_int(1);
            return Ok(2);
        };
        let Some(b) = coerce(s, 2) else {
            s.push_nil();
            s.push_int(2);
            return Ok(2);
        };
        s.push_int(match a.compare(&b) {
            Ordering::Less => -1,
            Ordering::Equal => 0,
            Ordering::Greater => 1,
        });
        Ok(1)
    }
}

lua_fn! {
    /// `field(u, name)`: the `struct tt_uuid` field `name` of a userdata
    /// uuid (`node` is a table indexed from 0, as the C array); nil for
    /// another name.
    fn uuid_field(s: &mut Stack) {
        let Some(u) = get(s, 1) else {
            s.push_nil();
            return Ok(1);
        };
        let n = match s.to_str(2).unwrap_or_default() {
            b"time_low" => u.time_low.into(),
            b"time_mid" => u.time_mid.into(),
            b"time_hi_and_version" => u.time_hi_and_version.into(),
            b"clock_seq_hi_and_reserved" => u.clock_seq_hi_and_reserved.into(),
            b"clock_seq_low" => u.clock_seq_low.into(),
            b"node" => {
                let t = s.new_table(0, 6);
                for (i, b) in u.node.iter().enumerate() {
                    s.push_int((*b).into());
                    s.rawseti(t, i as i64);
                }
                return Ok(1);
            }
            _ => {
                s.push_nil();
                return Ok(1);
            }
        };
        s.push_int(n);
        Ok(1)
    }
}
