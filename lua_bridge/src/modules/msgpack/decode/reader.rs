//! MsgPack items read one head at a time, bounds-checked, and the check of
//! a whole value (Tarantool's `mp_check`).

use rmp::Marker;

use crate::raw::error::ErrorKind;
use crate::raw::Raise;

/// What is wrong with the input: small and `Copy`, so the hot path returns
/// it in registers; made a [`Raise`] only on the way out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bad {
    /// The input ends inside a value.
    Truncated,
    /// The byte `0xc1`.
    Illegal,
    /// Bytes after the value (`mp_check_exact`).
    Junk,
}

impl Bad {
    /// Tarantool's error for it: `ClientError` `ER_INVALID_MSGPACK`.
    #[cold]
    pub(crate) fn raise(self) -> Raise {
        let what = match self {
            Bad::Truncated => "truncated input",
            Bad::Illegal => "illegal code",
            Bad::Junk => "junk after input",
        };
        Raise::Error(ErrorKind::ClientError, format!("Invalid MsgPack - {what}"))
    }
}

/// The head of one MsgPack item.
#[derive(Clone, Copy)]
pub(crate) enum Head<'a> {
    Nil,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    /// A string or binary.
    Str(&'a [u8]),
    Array(u32),
    Map(u32),
    /// An extension: its type and body.
    Ext(i8, &'a [u8]),
}

/// A bounds-checked reader.
pub(crate) struct Reader<'a> {
    pub data: &'a [u8],
    pub pos: usize,
}

impl<'a> Reader<'a> {
    #[inline(always)]
    fn take(&mut self, n: usize) -> Result<&'a [u8], Bad> {
        match self.data.get(self.pos..).and_then(|rest| rest.get(..n)) {
            Some(s) => {
                self.pos += n;
                Ok(s)
            }
            None => Err(Bad::Truncated),
        }
    }

    #[inline(always)]
    fn array<const N: usize>(&mut self) -> Result<[u8; N], Bad> {
        Ok(self.take(N)?.try_into().expect("N bytes"))
    }

    #[inline(always)]
    fn len(&mut self, width: usize) -> Result<u32, Bad> {
        Ok(match width {
            1 => u32::from(self.array::<1>()?[0]),
            2 => u32::from(u16::from_be_bytes(self.array()?)),
            _ => u32::from_be_bytes(self.array()?),
        })
    }

    /// The bytes not read yet.
    pub(crate) fn left(&self) -> usize {
        self.data.len() - self.pos
    }

    #[inline(always)]
    fn ext(&mut self, len: usize) -> Result<Head<'a>, Bad> {
        let t = self.array::<1>()?[0] as i8;
        Ok(Head::Ext(t, self.take(len)?))
    }

    /// Reads one item's head (a scalar whole, a container's count).
    #[inline(always)]
    pub(crate) fn head(&mut self) -> Result<Head<'a>, Bad> {
        let m = Marker::from_u8(self.array::<1>()?[0]);
        Ok(match m {
            Marker::FixPos(v) => Head::Int(i64::from(v)),
            Marker::FixNeg(v) => Head::Int(i64::from(v)),
            Marker::Null => Head::Nil,
            Marker::True => Head::Bool(true),
            Marker::False => Head::Bool(false),
            Marker::U8 => Head::Int(i64::from(self.array::<1>()?[0])),
            Marker::U16 => Head::Int(i64::from(u16::from_be_bytes(self.array()?))),
            Marker::U32 => Head::Int(i64::from(u32::from_be_bytes(self.array()?))),
            Marker::U64 => Head::Uint(u64::from_be_bytes(self.array()?)),
            Marker::I8 => Head::Int(i64::from(i8::from_be_bytes(self.array()?))),
            Marker::I16 => Head::Int(i64::from(i16::from_be_bytes(self.array()?))),
            Marker::I32 => Head::Int(i64::from(i32::from_be_bytes(self.array()?))),
            Marker::I64 => Head::Int(i64::from_be_bytes(self.array()?)),
            Marker::F32 => Head::Float(f64::from(f32::from_be_bytes(self.array()?))),
            Marker::F64 => Head::Float(f64::from_be_bytes(self.array()?)),
            Marker::FixStr(n) => Head::Str(self.take(usize::from(n))?),
            Marker::Str8 | Marker::Bin8 => {
                let n = self.len(1)?;
                Head::Str(self.take(n as usize)?)
            }
            Marker::Str16 | Marker::Bin16 => {
                let n = self.len(2)?;
                Head::Str(self.take(n as usize)?)
            }
            Marker::Str32 | Marker::Bin32 => {
                let n = self.len(4)?;
                Head::Str(self.take(n as usize)?)
            }
            Marker::FixArray(n) => Head::Array(u32::from(n)),
            Marker::Array16 => Head::Array(self.len(2)?),
            Marker::Array32 => Head::Array(self.len(4)?),
            Marker::FixMap(n) => Head::Map(u32::from(n)),
            Marker::Map16 => Head::Map(self.len(2)?),
            Marker::Map32 => Head::Map(self.len(4)?),
            Marker::FixExt1 => self.ext(1)?,
            Marker::FixExt2 => self.ext(2)?,
            Marker::FixExt4 => self.ext(4)?,
            Marker::FixExt8 => self.ext(8)?,
            Marker::FixExt16 => self.ext(16)?,
            Marker::Ext8 => {
                let n = self.len(1)?;
                self.ext(n as usize)?
            }
            Marker::Ext16 => {
                let n = self.len(2)?;
                self.ext(n as usize)?
            }
            Marker::Ext32 => {
                let n = self.len(4)?;
                self.ext(n as usize)?
            }
            Marker::Reserved => return Err(Bad::Illegal),
        })
    }

    /// Checks a container's count against the bytes left (each element
    /// takes at least one byte): a bad count is truncated input.
    #[inline(always)]
    pub(crate) fn check_count(&self, n: u32, per: usize) -> Result<(), Bad> {
        if (n as usize).saturating_mul(per) > self.left() {
            return Err(Bad::Truncated);
        }
        Ok(())
    }

    /// Skips one whole value (`mp_next`), checked: it walks the items with
    /// a count of those still due, so it needs no stack whatever the
    /// nesting.
    pub(crate) fn skip(&mut self) -> Result<(), Bad> {
        let mut due: u64 = 1;
        while due > 0 {
            due -= 1;
            match self.head()? {
                Head::Array(n) => {
                    self.check_count(n, 1)?;
                    due += u64::from(n);
                }
                Head::Map(n) => {
                    self.check_count(n, 2)?;
                    due += 2 * u64::from(n);
                }
                _ => {}
            }
            if due > self.left() as u64 {
                return Err(Bad::Truncated);
            }
        }
        Ok(())
    }
}

/// The length of the one MsgPack value at the start of `data` (Tarantool's
/// `mp_check`).
pub(crate) fn check(data: &[u8]) -> Result<usize, Bad> {
    let mut r = Reader { data, pos: 0 };
    r.skip()?;
    Ok(r.pos)
}

/// [`check`] of a value that must take all of `data` (`mp_check_exact`).
pub(crate) fn check_exact(data: &[u8]) -> Result<(), Bad> {
    match check(data)? {
        n if n == data.len() => Ok(()),
        _ => Err(Bad::Junk),
    }
}
