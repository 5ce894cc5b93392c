//! The Lua `pickle` module: Tarantool master's `src/lua/pickle.c`.
//!
//! - `pickle.pack(format, ...)`: the bytes of the values by `format`, one
//!   letter a value: `b`/`B` 8-bit, `s`/`S` 16-bit, `i`/`I` 32-bit,
//!   `l`/`L` 64-bit integers (host order, little-endian here), `n` 16-bit
//!   and `N` 32-bit big-endian, `q`/`Q` 64-bit byte-swapped, `d` double,
//!   `f` float, `a`/`A` a string as it is.
//! - `pickle.unpack(format, bytes)`: the values back (`b s n i N l q d f
//!   a A`; `a`/`A` take the rest); `l` and `q` give a number up to 2^53,
//!   a `uint64_t` above (LuaJIT; an integer on Lua 5.4).
//!
//! Errors are master's `IllegalParams` objects: "pickle.pack: argument
//! count does not match the format", "pickle.pack: expected 32-bit int",
//! "pickle.unpack('i'): got 4 bytes (expected: 8+)", "pickle.unpack('ii'):
//! too many bytes: unpacked 4, total 8", "expected string as 1 argument".
//!
//! An integer argument is what master's `luaL_tofield` takes as one: a
//! number with an integral value (or a Lua 5.4 integer), or a 64-bit
//! integer cdata; its low bytes are written.

use std::ffi::c_int;

use crate::capi::lua::{push_uint64, to_uint64};
use crate::raw::{lua_fn, LResult, Raise, Stack};

/// `lua_type` of a cdata (LuaJIT's `LUA_TCDATA`).
const LUA_TCDATA: c_int = 10;

lua_fn! {
    /// The `pickle` module's loader (`package.preload.pickle`).
    pub(crate) fn open(s: &mut Stack) {
        s.settop(0);
        s.ensure(4)?;
        let t = s.new_table(0, 2);
        s.set_funcs(t, &[(c"pack", pickle_pack), (c"unpack", pickle_unpack)]);
        Ok(1)
    }
}

/// `luaT_checklstring`: the string (or number, converted) at `idx`.
fn check_str(s: &mut Stack, idx: c_int) -> LResult<Vec<u8>> {
    s.coerce_str(idx)
        .map(<[u8]>::to_vec)
        .ok_or_else(|| Raise::illegal(format!("expected string as {idx} argument")))
}

/// The integer `luaL_tofield` reads at `idx` (its bits), or `None` for
/// anything that is not `MP_INT`/`MP_UINT`.
fn int_field(s: &mut Stack, idx: c_int) -> Option<u64> {
    match s.type_of(idx) {
        mlua::ffi::LUA_TNUMBER => {
            if cfg!(feature = "lua54") && s.is_integer(idx) {
                return s.to_integer(idx).map(|i| i as u64);
            }
            let n = s.to_number(idx)?;
            if n.fract() != 0.0 || !n.is_finite() {
                None
            } else if (-9.223_372_036_854_776e18..0.0).contains(&n) {
                Some(n as i64 as u64)
            } else if (0.0..1.844_674_407_370_955_2e19).contains(&n) {
                Some(n as u64)
            } else {
                None
            }
        }
        LUA_TCDATA => to_uint64(s, idx),
        _ => None,
    }
}

lua_fn! {
    /// `pickle.pack(format, ...)`.
    fn pickle_pack(s: &mut Stack) {
        let format = check_str(s, 1)?;
        let nargs = s.top();
        let mut out = Vec::new();
        for (i, &f) in (2..).zip(format.iter()) {
            if i > nargs {
                return Err(Raise::illegal("pickle.pack: argument count does not match the format"));
            }
            let int = |s: &mut Stack, bits: u32| {
                int_field(s, i).ok_or_else(|| Raise::illegal(format!("pickle.pack: expected {bits}-bit int")))
            };
            match f {
                b'B' | b'b' => out.push(int(s, 8)? as u8),
                b'S' | b's' => out.extend_from_slice(&(int(s, 16)? as u16).to_le_bytes()),
                b'n' => out.extend_from_slice(&(int(s, 16)? as u16).to_be_bytes()),
                b'I' | b'i' => out.extend_from_slice(&(int(s, 32)? as u32).to_le_bytes()),
                b'N' => out.extend_from_slice(&(int(s, 32)? as u32).to_be_bytes()),
                b'L' | b'l' => out.extend_from_slice(&int(s, 64)?.to_le_bytes()),
                b'Q' | b'q' => out.extend_from_slice(&int(s, 64)?.to_be_bytes()),
                b'd' => out.extend_from_slice(&s.to_number_coerced(i).unwrap_or(0.0).to_le_bytes()),
                b'f' => out.extend_from_slice(&(s.to_number_coerced(i).unwrap_or(0.0) as f32).to_le_bytes()),
                b'A' | b'a' => out.extend_from_slice(&check_str(s, i)?),
                other => {
                    return Err(Raise::illegal(format!(
                        "pickle.pack: unsupported pack format specifier '{}'",
                        char::from(other)
                    )));
                }
            }
        }
        s.push_bytes(&out);
        Ok(1)
    }
}

lua_fn! {
    /// `pickle.unpack(format, bytes)`.
    fn pickle_unpack(s: &mut Stack) {
        let format = check_str(s, 1)?;
        let data = check_str(s, 2)?;
        let base = s.top();
        let mut pos = 0usize;
        for &f in &format {
            let size = match f {
                b'b' => 1,
                b's' | b'n' => 2,
                b'i' | b'N' | b'f' => 4,
                b'l' | b'q' | b'd' => 8,
                b'a' | b'A' => data.len() - pos,
                other => {
                    return Err(Raise::illegal(format!(
                        "pickle.unpack: unsupported format specifier '{}'",
                        char::from(other)
                    )));
                }
            };
            if pos + size > data.len() {
                return Err(Raise::illegal(format!(
                    "pickle.unpack('{}'): got {} bytes (expected: {}+)",
                    char::from(f),
                    data.len(),
                    pos + size
                )));
            }
            let b = &data[pos..pos + size];
            s.ensure(2)?;
            match f {
                b'b' => s.push_number(f64::from(b[0])),
                b's' => s.push_number(f64::from(u16::from_le_bytes([b[0], b[1]]))),
                b'n' => s.push_number(f64::from(u16::from_be_bytes([b[0], b[1]]))),
                b'i' => s.push_number(f64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))),
                b'N' => s.push_number(f64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))),
                b'f' => s.push_number(f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))),
                b'l' => push_uint64(s, u64::from_le_bytes(b.try_into().unwrap_or_default()))?,
                b'q' => push_uint64(s, u64::from_be_bytes(b.try_into().unwrap_or_default()))?,
                b'd' => s.push_number(f64::from_le_bytes(b.try_into().unwrap_or_default())),
                _ => s.push_bytes(b),
            }
            pos += size;
        }
        if pos != data.len() {
            s.settop(base);
            return Err(Raise::illegal(format!(
                "pickle.unpack('{}'): too many bytes: unpacked {pos}, total {}",
                String::from_utf8_lossy(&format),
                data.len()
            )));
        }
        Ok(s.top() - base)
    }
}
