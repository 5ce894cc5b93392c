//! The MessagePack this protocol needs, read in place and written into an
//! [`Ibuf`]: a [`Reader`] over a byte slice that hands out sub-slices (no
//! copy), checks every length against the bytes left, and skips values
//! without recursion (so a deeply nested packet cannot overflow the stack);
//! and the few writes the encoders use, each the shortest form, as
//! Tarantool's `msgpuck` writes them.
//!
//! Hand-written rather than `rmp`'s: this is the protocol's hot path, and a
//! reader that returns slices of its input and an `Option` for "malformed
//! or truncated" keeps every decoder free of copies and panics.

use luafiber_runtime::ibuf::{Ibuf, ReserveError};

/// The type of a MessagePack value, from its first byte (`mp_typeof`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Type {
    /// `nil`.
    Nil,
    /// `true` or `false`.
    Bool,
    /// A non-negative integer (`MP_UINT`).
    Uint,
    /// A negative integer (`MP_INT`).
    Int,
    /// A 32-bit float.
    Float,
    /// A 64-bit float.
    Double,
    /// A string (any bytes).
    Str,
    /// Binary data.
    Bin,
    /// An array.
    Array,
    /// A map.
    Map,
    /// An extension value (decimal, uuid, MP_ERROR, ...).
    Ext,
}

/// The type a value starting with `marker` has; `None` for 0xc1, which
/// MessagePack never uses.
#[inline]
pub fn type_of(marker: u8) -> Option<Type> {
    Some(match marker {
        0x00..=0x7f | 0xcc..=0xcf => Type::Uint,
        0xe0..=0xff | 0xd0..=0xd3 => Type::Int,
        0x80..=0x8f | 0xde | 0xdf => Type::Map,
        0x90..=0x9f | 0xdc | 0xdd => Type::Array,
        0xa0..=0xbf | 0xd9..=0xdb => Type::Str,
        0xc0 => Type::Nil,
        0xc2 | 0xc3 => Type::Bool,
        0xc4..=0xc6 => Type::Bin,
        0xc7..=0xc9 | 0xd4..=0xd8 => Type::Ext,
        0xca => Type::Float,
        0xcb => Type::Double,
        0xc1 => return None,
    })
}

/// A cursor over MessagePack bytes. Every read returns `None` when the
/// next value is of another type or is cut short; after a `None` the
/// position is unspecified (the caller gives up on the packet).
#[derive(Clone, Copy, Debug)]
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `data`.
    #[inline]
    pub fn new(data: &'a [u8]) -> Reader<'a> {
        Reader { data, pos: 0 }
    }

    /// Bytes read so far.
    #[inline]
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// The bytes not read yet.
    #[inline]
    pub fn rest(&self) -> &'a [u8] {
        &self.data[self.pos..]
    }

    /// Whether every byte was read.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.pos >= self.data.len()
    }

    /// The type of the next value, without reading it.
    #[inline]
    pub fn peek(&self) -> Option<Type> {
        self.data.get(self.pos).copied().and_then(type_of)
    }

    #[inline]
    fn byte(&mut self) -> Option<u8> {
        let b = *self.data.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    #[inline]
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.data.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }

    #[inline]
    fn be(&mut self, n: usize) -> Option<u64> {
        Some(
            self.take(n)?
                .iter()
                .fold(0u64, |acc, &b| (acc << 8) | u64::from(b)),
        )
    }

    /// A non-negative integer (`MP_UINT` only, as Tarantool's keys and ids).
    /// A one-byte one (every header key, most types and schema versions)
    /// is read in place, a wider one out of line.
    #[inline(always)]
    pub fn uint(&mut self) -> Option<u64> {
        match self.data.get(self.pos) {
            Some(&m) if m < 0x80 => {
                self.pos += 1;
                Some(u64::from(m))
            }
            _ => self.uint_wide(),
        }
    }

    /// [`Reader::uint`] of a value that is not a positive fixint.
    #[inline(never)]
    fn uint_wide(&mut self) -> Option<u64> {
        match self.byte()? {
            m @ 0x00..=0x7f => Some(u64::from(m)),
            0xcc => self.be(1),
            0xcd => self.be(2),
            0xce => self.be(4),
            0xcf => self.be(8),
            _ => None,
        }
    }

    /// A non-negative integer that fits in `u32`.
    #[inline]
    pub fn uint32(&mut self) -> Option<u32> {
        u32::try_from(self.uint()?).ok()
    }

    /// Any integer (`MP_UINT` or `MP_INT`) that fits in `i64`.
    pub fn int(&mut self) -> Option<i64> {
        match *self.data.get(self.pos)? {
            0xe0..=0xff => Some(i64::from(self.byte()? as i8)),
            0xd0 => {
                self.pos += 1;
                Some(i64::from(self.be(1)? as u8 as i8))
            }
            0xd1 => {
                self.pos += 1;
                Some(i64::from(self.be(2)? as u16 as i16))
            }
            0xd2 => {
                self.pos += 1;
                Some(i64::from(self.be(4)? as u32 as i32))
            }
            0xd3 => {
                self.pos += 1;
                Some(self.be(8)? as i64)
            }
            _ => i64::try_from(self.uint()?).ok(),
        }
    }

    /// A string's bytes (not checked for UTF-8: Tarantool's strings are
    /// bytes, and net.box sends a scramble as a string).
    #[inline]
    pub fn str(&mut self) -> Option<&'a [u8]> {
        let n = match self.byte()? {
            m @ 0xa0..=0xbf => usize::from(m & 0x1f),
            0xd9 => self.be(1)? as usize,
            0xda => self.be(2)? as usize,
            0xdb => self.be(4)? as usize,
            _ => return None,
        };
        self.take(n)
    }

    /// A string's or a binary value's bytes.
    pub fn str_or_bin(&mut self) -> Option<&'a [u8]> {
        let n = match *self.data.get(self.pos)? {
            0xc4 => 1,
            0xc5 => 2,
            0xc6 => 4,
            _ => return self.str(),
        };
        self.pos += 1;
        let len = self.be(n)? as usize;
        self.take(len)
    }

    /// An array's length (its items follow).
    #[inline]
    pub fn array(&mut self) -> Option<u32> {
        match self.byte()? {
            m @ 0x90..=0x9f => Some(u32::from(m & 0x0f)),
            0xdc => Some(self.be(2)? as u32),
            0xdd => Some(self.be(4)? as u32),
            _ => None,
        }
    }

    /// A map's number of pairs (its keys and values follow).
    #[inline]
    pub fn map(&mut self) -> Option<u32> {
        match self.byte()? {
            m @ 0x80..=0x8f => Some(u32::from(m & 0x0f)),
            0xde => Some(self.be(2)? as u32),
            0xdf => Some(self.be(4)? as u32),
            _ => None,
        }
    }

    /// Skips one whole value (`mp_check` + `mp_next`): `None` when it is
    /// malformed or cut short. Runs in time linear in the bytes it reads
    /// and without recursion.
    pub fn skip(&mut self) -> Option<()> {
        // Values still to read; each needs at least one byte, so more
        // pending values than bytes left is a truncated packet at once.
        let mut pending: usize = 1;
        while pending > 0 {
            pending -= 1;
            let m = self.byte()?;
            let (items, len): (usize, usize) = match m {
                0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => (0, 0),
                0x80..=0x8f => (usize::from(m & 0x0f) * 2, 0),
                0x90..=0x9f => (usize::from(m & 0x0f), 0),
                0xa0..=0xbf => (0, usize::from(m & 0x1f)),
                0xc1 => return None,
                0xc4 | 0xd9 => (0, self.be(1)? as usize),
                0xc5 | 0xda => (0, self.be(2)? as usize),
                0xc6 | 0xdb => (0, self.be(4)? as usize),
                0xc7 => (0, self.be(1)? as usize + 1),
                0xc8 => (0, self.be(2)? as usize + 1),
                0xc9 => (0, self.be(4)? as usize + 1),
                0xca => (0, 4),
                0xcb => (0, 8),
                0xcc | 0xd0 => (0, 1),
                0xcd | 0xd1 => (0, 2),
                0xce | 0xd2 => (0, 4),
                0xcf | 0xd3 => (0, 8),
                0xd4 => (0, 2),
                0xd5 => (0, 3),
                0xd6 => (0, 5),
                0xd7 => (0, 9),
                0xd8 => (0, 17),
                0xdc => (self.be(2)? as usize, 0),
                0xdd => (self.be(4)? as usize, 0),
                0xde => (self.be(2)? as usize * 2, 0),
                0xdf => (self.be(4)? as usize * 2, 0),
            };
            self.take(len)?;
            pending = pending.checked_add(items)?;
            if pending > self.data.len() - self.pos {
                return None;
            }
        }
        Some(())
    }

    /// The bytes of one whole value, checked as [`Reader::skip`] does.
    #[inline]
    pub fn value(&mut self) -> Option<&'a [u8]> {
        let start = self.pos;
        self.skip()?;
        Some(&self.data[start..self.pos])
    }
}

/// Whether `data` is exactly one well-formed value.
pub fn is_one_value(data: &[u8]) -> bool {
    let mut r = Reader::new(data);
    r.skip().is_some() && r.is_empty()
}

/// Appends `bytes` to `buf`.
#[inline]
pub fn write_raw(buf: &mut Ibuf, bytes: &[u8]) -> Result<(), ReserveError> {
    buf.extend_from_slice(bytes)
}

/// Appends the shortest encoding of a non-negative integer.
#[inline]
pub fn write_uint(buf: &mut Ibuf, v: u64) -> Result<(), ReserveError> {
    let mut tmp = [0u8; 9];
    let n = if v < 0x80 {
        tmp[0] = v as u8;
        1
    } else if v <= 0xff {
        tmp[0] = 0xcc;
        tmp[1] = v as u8;
        2
    } else if v <= 0xffff {
        tmp[0] = 0xcd;
        tmp[1..3].copy_from_slice(&(v as u16).to_be_bytes());
        3
    } else if v <= 0xffff_ffff {
        tmp[0] = 0xce;
        tmp[1..5].copy_from_slice(&(v as u32).to_be_bytes());
        5
    } else {
        tmp[0] = 0xcf;
        tmp[1..9].copy_from_slice(&v.to_be_bytes());
        9
    };
    buf.extend_from_slice(&tmp[..n])
}

fn write_len(
    buf: &mut Ibuf,
    n: u32,
    fix: u8,
    fix_max: u32,
    m8: Option<u8>,
    m16: u8,
    m32: u8,
) -> Result<(), ReserveError> {
    let mut tmp = [0u8; 5];
    let k = if n <= fix_max {
        tmp[0] = fix | n as u8;
        1
    } else if let (Some(m8), true) = (m8, n <= 0xff) {
        tmp[0] = m8;
        tmp[1] = n as u8;
        2
    } else if n <= 0xffff {
        tmp[0] = m16;
        tmp[1..3].copy_from_slice(&(n as u16).to_be_bytes());
        3
    } else {
        tmp[0] = m32;
        tmp[1..5].copy_from_slice(&n.to_be_bytes());
        5
    };
    buf.extend_from_slice(&tmp[..k])
}

/// Appends an array header of `n` items.
#[inline]
pub fn write_array(buf: &mut Ibuf, n: u32) -> Result<(), ReserveError> {
    write_len(buf, n, 0x90, 15, None, 0xdc, 0xdd)
}

/// Appends a map header of `n` pairs.
#[inline]
pub fn write_map(buf: &mut Ibuf, n: u32) -> Result<(), ReserveError> {
    write_len(buf, n, 0x80, 15, None, 0xde, 0xdf)
}

/// Appends a string of `s`'s bytes (any bytes).
///
/// # Panics
///
/// Panics when `s` is 4 GiB or longer (MessagePack cannot say so).
#[inline]
pub fn write_str(buf: &mut Ibuf, s: &[u8]) -> Result<(), ReserveError> {
    let n = u32::try_from(s.len()).expect("a MessagePack string under 4 GiB");
    write_len(buf, n, 0xa0, 31, Some(0xd9), 0xda, 0xdb)?;
    buf.extend_from_slice(s)
}

/// Appends binary data.
///
/// # Panics
///
/// Panics when `s` is 4 GiB or longer.
#[inline]
pub fn write_bin(buf: &mut Ibuf, s: &[u8]) -> Result<(), ReserveError> {
    let n = u32::try_from(s.len()).expect("MessagePack binary data under 4 GiB");
    let mut tmp = [0u8; 5];
    let k = if n <= 0xff {
        tmp[0] = 0xc4;
        tmp[1] = n as u8;
        2
    } else if n <= 0xffff {
        tmp[0] = 0xc5;
        tmp[1..3].copy_from_slice(&(n as u16).to_be_bytes());
        3
    } else {
        tmp[0] = 0xc6;
        tmp[1..5].copy_from_slice(&n.to_be_bytes());
        5
    };
    buf.extend_from_slice(&tmp[..k])?;
    buf.extend_from_slice(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(f: impl FnOnce(&mut Ibuf) -> Result<(), ReserveError>) -> Vec<u8> {
        let mut b = Ibuf::new();
        f(&mut b).unwrap();
        b.data().to_vec()
    }

    #[test]
    fn writes_agree_with_rmp() {
        for v in [
            0u64,
            1,
            127,
            128,
            255,
            256,
            65535,
            65536,
            u32::MAX as u64,
            u64::MAX,
        ] {
            let mut want = Vec::new();
            rmp::encode::write_uint(&mut want, v).unwrap();
            assert_eq!(written(|b| write_uint(b, v)), want, "{v}");
            let got = written(|b| write_uint(b, v));
            assert_eq!(Reader::new(&got).uint(), Some(v));
        }
        for n in [0u32, 15, 16, 31, 32, 255, 256, 65535, 65536] {
            let mut want = Vec::new();
            rmp::encode::write_array_len(&mut want, n).unwrap();
            assert_eq!(written(|b| write_array(b, n)), want);
            want.clear();
            rmp::encode::write_map_len(&mut want, n).unwrap();
            assert_eq!(written(|b| write_map(b, n)), want);
            let s = vec![b'x'; n as usize];
            want.clear();
            rmp::encode::write_str(&mut want, std::str::from_utf8(&s).unwrap()).unwrap();
            assert_eq!(written(|b| write_str(b, &s)), want);
            want.clear();
            rmp::encode::write_bin(&mut want, &s).unwrap();
            assert_eq!(written(|b| write_bin(b, &s)), want);
            let got = written(|b| write_bin(b, &s));
            assert_eq!(Reader::new(&got).str_or_bin(), Some(&s[..]));
        }
    }

    #[test]
    fn skip_checks_lengths_and_nesting() {
        assert!(is_one_value(&[0x92, 0x01, 0xa1, b'x']));
        assert!(!is_one_value(&[0x92, 0x01]));
        assert!(!is_one_value(&[0xdd, 0xff, 0xff, 0xff, 0xff]));
        assert!(!is_one_value(&[0xc1]));
        assert!(!is_one_value(&[0x01, 0x02]));
        // Deep nesting costs no stack.
        let mut deep = vec![0x91u8; 1_000_000];
        deep.push(0xc0);
        assert!(is_one_value(&deep));
        deep.pop();
        assert!(!is_one_value(&deep));
    }

    #[test]
    fn ints_of_every_width() {
        for v in [
            -1i64,
            -32,
            -33,
            -128,
            -129,
            -32768,
            -32769,
            i32::MIN as i64,
            i64::MIN,
            0,
            5,
            i64::MAX,
        ] {
            let mut b = Vec::new();
            rmp::encode::write_sint(&mut b, v).unwrap();
            assert_eq!(Reader::new(&b).int(), Some(v), "{v}");
        }
    }
}
