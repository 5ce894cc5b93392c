//! [`Value`]: a Lua value as Rust code sees it, and its conversion from and
//! to the Lua stack (raw accesses only: no metamethod runs, nothing
//! raises).

use std::ffi::c_int;

use mlua::ffi;

use crate::raw::{LResult, Raise, Stack};

/// A Lua value as a blocking Rust function sees it.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `nil` (also what functions, userdata and threads convert to).
    Nil,
    /// A boolean.
    Boolean(bool),
    /// An integer (Lua 5.4 integers; on LuaJIT, integral numbers that fit).
    Integer(i64),
    /// A float.
    Number(f64),
    /// A string, as bytes (Lua strings need not be UTF-8).
    String(Vec<u8>),
    /// A table: its array part `1..n` first, then the other pairs.
    Table(Vec<(Value, Value)>),
}

impl Value {
    /// The string as UTF-8 text, if it is a valid UTF-8 string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(b) => std::str::from_utf8(b).ok(),
            _ => None,
        }
    }

    /// The number as `f64`, integers included.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::Integer(i) => Some(i as f64),
            Value::Number(n) => Some(n),
            _ => None,
        }
    }

    /// The number as `i64` when it is integral.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::Integer(i) => Some(i),
            Value::Number(n) if n.fract() == 0.0 && n.abs() < 9.0e15 => Some(n as i64),
            _ => None,
        }
    }

    /// The boolean, if it is one.
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Value::Boolean(b) => Some(b),
            _ => None,
        }
    }

    /// The string's bytes, if it is a string.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Value::String(b) => Some(b),
            _ => None,
        }
    }

    /// Whether Lua would take it as false (`nil` or `false`).
    pub fn is_falsy(&self) -> bool {
        matches!(self, Value::Nil | Value::Boolean(false))
    }

    /// The values of a table that is a sequence (keys exactly `1..=n`, in
    /// any order), in key order; `None` for other tables and non-tables.
    pub fn as_array(&self) -> Option<Vec<&Value>> {
        let Value::Table(pairs) = self else {
            return None;
        };
        let mut out = vec![None; pairs.len()];
        for (k, v) in pairs {
            let i = k
                .as_i64()
                .filter(|&i| i >= 1 && i as usize <= pairs.len())?;
            let slot = &mut out[i as usize - 1];
            if slot.is_some() {
                return None;
            }
            *slot = Some(v);
        }
        out.into_iter().collect()
    }

    /// The value of a table's field `key` (compared as [`Value`]s: integer
    /// keys must be [`Value::Integer`]), if it is a table with that field.
    pub fn get(&self, key: impl Into<Value>) -> Option<&Value> {
        let Value::Table(pairs) = self else {
            return None;
        };
        let key = key.into();
        pairs.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }
}

impl std::fmt::Display for Value {
    /// Lua-like text: `nil`, `true`, `42`, `0.5`, `"text"` (invalid UTF-8
    /// shown lossily), `{1, 2, key = "v"}` style tables (`[k] = v` for keys
    /// that are not names).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Nil => f.write_str("nil"),
            Value::Boolean(b) => write!(f, "{b}"),
            Value::Integer(i) => write!(f, "{i}"),
            Value::Number(n) => write!(f, "{n}"),
            Value::String(b) => write!(f, "{:?}", String::from_utf8_lossy(b)),
            Value::Table(pairs) => {
                f.write_str("{")?;
                for (i, (k, v)) in pairs.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    match k {
                        Value::Integer(n) if *n == i as i64 + 1 => {}
                        Value::String(_) if k.as_str().is_some_and(is_name) => {
                            write!(f, "{} = ", k.as_str().unwrap_or_default())?
                        }
                        _ => write!(f, "[{k}] = ")?,
                    }
                    write!(f, "{v}")?;
                }
                f.write_str("}")
            }
        }
    }
}

/// Whether `s` is a Lua name (usable as `t.s`).
fn is_name(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && c.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

impl From<&[u8]> for Value {
    /// A Lua string with these bytes.
    fn from(b: &[u8]) -> Value {
        Value::String(b.to_vec())
    }
}
impl From<Vec<u8>> for Value {
    /// A Lua string with these bytes.
    fn from(b: Vec<u8>) -> Value {
        Value::String(b)
    }
}
impl From<Vec<Value>> for Value {
    /// A table with the values as its array part `1..=n` (a `Nil` leaves a
    /// hole).
    fn from(items: Vec<Value>) -> Value {
        Value::Table(
            items
                .into_iter()
                .enumerate()
                .map(|(i, v)| (Value::Integer(i as i64 + 1), v))
                .collect(),
        )
    }
}
impl From<Vec<(Value, Value)>> for Value {
    /// A table with these pairs (pairs with a `Nil` key or value are left
    /// out when pushed).
    fn from(pairs: Vec<(Value, Value)>) -> Value {
        Value::Table(pairs)
    }
}
impl<T: Into<Value>> From<Option<T>> for Value {
    /// `None` is `Nil`.
    fn from(v: Option<T>) -> Value {
        v.map_or(Value::Nil, Into::into)
    }
}
impl From<()> for Value {
    /// `Nil`.
    fn from((): ()) -> Value {
        Value::Nil
    }
}
impl From<i32> for Value {
    fn from(i: i32) -> Value {
        Value::Integer(i.into())
    }
}
impl From<u32> for Value {
    fn from(i: u32) -> Value {
        Value::Integer(i.into())
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::String(s.as_bytes().to_vec())
    }
}
impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::String(s.into_bytes())
    }
}
impl From<i64> for Value {
    fn from(i: i64) -> Value {
        Value::Integer(i)
    }
}
impl From<f64> for Value {
    fn from(n: f64) -> Value {
        Value::Number(n)
    }
}
impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Boolean(b)
    }
}

/// Deepest table nesting converted; deeper tables are an error.
const MAX_DEPTH: usize = 64;

/// Reads the value at `idx` (an absolute index).
///
/// # Errors
///
/// `IllegalParams` for tables nested deeper than 64.
pub(crate) fn read(s: &mut Stack, idx: c_int, depth: usize) -> LResult<Value> {
    Ok(match s.type_of(idx) {
        ffi::LUA_TBOOLEAN => Value::Boolean(s.to_bool(idx)),
        ffi::LUA_TNUMBER => match s.to_integer(idx).filter(|_| s.is_integer(idx)) {
            Some(i) => Value::Integer(i),
            None => Value::Number(s.to_number(idx).unwrap_or_default()),
        },
        ffi::LUA_TSTRING => Value::String(s.to_str(idx).unwrap_or_default().to_vec()),
        ffi::LUA_TTABLE => {
            if depth >= MAX_DEPTH {
                return Err(Raise::illegal("table nesting too deep to convert"));
            }
            let mut pairs = Vec::new();
            s.push_nil();
            while s.next_checked(idx)? {
                let top = s.top();
                let k = read(s, top - 1, depth + 1);
                let v = read(s, top, depth + 1);
                s.pop(1);
                match (k, v) {
                    (Ok(k), Ok(v)) => pairs.push((k, v)),
                    (Err(e), _) | (_, Err(e)) => {
                        s.pop(1);
                        return Err(e);
                    }
                }
            }
            Value::Table(pairs)
        }
        _ => Value::Nil,
    })
}

/// Pushes `v`.
///
/// # Errors
///
/// `IllegalParams` for tables nested deeper than 64 (the cap of [`read`]),
/// or when the Lua stack has no room; nothing is left pushed then.
pub(crate) fn push(s: &mut Stack, v: &Value) -> LResult<()> {
    let top = s.top();
    push_at(s, v, 0).inspect_err(|_| s.settop(top))
}

fn push_at(s: &mut Stack, v: &Value, depth: usize) -> LResult<()> {
    s.ensure(1)?;
    match v {
        Value::Nil => s.push_nil(),
        Value::Boolean(b) => s.push_bool(*b),
        Value::Integer(i) => s.push_int(*i),
        Value::Number(n) => s.push_number(*n),
        Value::String(b) => s.push_bytes(b),
        Value::Table(pairs) => {
            if depth >= MAX_DEPTH {
                return Err(Raise::illegal("table nesting too deep to convert"));
            }
            // The table, a key and a value.
            s.ensure(3)?;
            let size = c_int::try_from(pairs.len()).unwrap_or(c_int::MAX);
            let t = s.new_table(0, size);
            for (k, v) in pairs {
                push_at(s, k, depth + 1)?;
                push_at(s, v, depth + 1)?;
                // A nil (or NaN) key: the pair is left out.
                let _ = s.rawset(t);
            }
        }
    }
    Ok(())
}

/// Drops `values` without recursion: a [`Value`] nested deeper than a
/// fiber's stack allows (its own drop recurses once per level) is taken
/// apart level by level. For values the bridge owns and drops (a call's
/// arguments, a registered function's results).
pub(crate) fn drop_flat(values: Vec<Value>) {
    let mut work = values;
    while let Some(v) = work.pop() {
        if let Value::Table(pairs) = v {
            for (k, v) in pairs {
                work.push(k);
                work.push(v);
            }
        }
    }
}
