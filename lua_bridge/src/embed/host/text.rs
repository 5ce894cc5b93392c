//! The text of a Lua error value that has none of its own: a table raised
//! without `__tostring` (`error({code = 7})`) is shown as JSON-like text of
//! its MessagePack form (`{"code": 7}`), not `table: 0x...`.

use std::fmt::Write;

use rmp::decode::{self, RmpRead};
use rmp::Marker;

/// Nesting beyond this shows as `...`.
const MAX_DEPTH: u32 = 16;
/// Elements of one array or map beyond this show as `...`.
const MAX_ITEMS: u32 = 32;

/// The text of the MessagePack value `bytes`, or `None` when it is not
/// one well-formed value.
pub(super) fn render(mut bytes: &[u8]) -> Option<String> {
    let mut out = String::new();
    value(&mut bytes, &mut out, 0)?;
    Some(out)
}

fn value(r: &mut &[u8], out: &mut String, depth: u32) -> Option<()> {
    let marker = decode::read_marker(r).ok()?;
    match marker {
        Marker::Null => out.push_str("null"),
        Marker::True => out.push_str("true"),
        Marker::False => out.push_str("false"),
        Marker::FixPos(n) => write!(out, "{n}").ok()?,
        Marker::FixNeg(n) => write!(out, "{n}").ok()?,
        Marker::U8 => write!(out, "{}", r.read_data_u8().ok()?).ok()?,
        Marker::U16 => write!(out, "{}", r.read_data_u16().ok()?).ok()?,
        Marker::U32 => write!(out, "{}", r.read_data_u32().ok()?).ok()?,
        Marker::U64 => write!(out, "{}", r.read_data_u64().ok()?).ok()?,
        Marker::I8 => write!(out, "{}", r.read_data_i8().ok()?).ok()?,
        Marker::I16 => write!(out, "{}", r.read_data_i16().ok()?).ok()?,
        Marker::I32 => write!(out, "{}", r.read_data_i32().ok()?).ok()?,
        Marker::I64 => write!(out, "{}", r.read_data_i64().ok()?).ok()?,
        Marker::F32 => write!(out, "{}", r.read_data_f32().ok()?).ok()?,
        Marker::F64 => write!(out, "{}", r.read_data_f64().ok()?).ok()?,
        Marker::FixStr(n) => string(r, n as usize, out)?,
        Marker::Str8 | Marker::Bin8 => {
            let n = r.read_data_u8().ok()? as usize;
            string(r, n, out)?
        }
        Marker::Str16 | Marker::Bin16 => {
            let n = r.read_data_u16().ok()? as usize;
            string(r, n, out)?
        }
        Marker::Str32 | Marker::Bin32 => {
            let n = r.read_data_u32().ok()? as usize;
            string(r, n, out)?
        }
        Marker::FixArray(n) => items(r, u32::from(n), false, out, depth)?,
        Marker::Array16 => {
            let n = u32::from(r.read_data_u16().ok()?);
            items(r, n, false, out, depth)?
        }
        Marker::Array32 => {
            let n = r.read_data_u32().ok()?;
            items(r, n, false, out, depth)?
        }
        Marker::FixMap(n) => items(r, u32::from(n), true, out, depth)?,
        Marker::Map16 => {
            let n = u32::from(r.read_data_u16().ok()?);
            items(r, n, true, out, depth)?
        }
        Marker::Map32 => {
            let n = r.read_data_u32().ok()?;
            items(r, n, true, out, depth)?
        }
        // Extensions (decimal, uuid, ...) and the reserved marker.
        _ => return None,
    }
    Some(())
}

fn string(r: &mut &[u8], n: usize, out: &mut String) -> Option<()> {
    let bytes = r.get(..n)?;
    *r = &r[n..];
    write!(out, "{:?}", String::from_utf8_lossy(bytes)).ok()
}

/// An array (`[a, b]`) or a map (`{k: v}`) of `n` elements.
fn items(r: &mut &[u8], n: u32, map: bool, out: &mut String, depth: u32) -> Option<()> {
    if depth >= MAX_DEPTH {
        out.push_str("...");
        return skip_all(r, n, map);
    }
    out.push(if map { '{' } else { '[' });
    for i in 0..n {
        if i == MAX_ITEMS {
            out.push_str(", ...");
            skip_all(r, n - i, map)?;
            break;
        }
        if i > 0 {
            out.push_str(", ");
        }
        if map {
            value(r, out, depth + 1)?;
            out.push_str(": ");
        }
        value(r, out, depth + 1)?;
    }
    out.push(if map { '}' } else { ']' });
    Some(())
}

/// Reads past `n` elements (pairs for a map) without showing them.
fn skip_all(r: &mut &[u8], n: u32, map: bool) -> Option<()> {
    let mut sink = String::new();
    for _ in 0..u64::from(n) * if map { 2 } else { 1 } {
        sink.clear();
        value(r, &mut sink, 0)?;
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::render;

    #[test]
    fn tables_show_as_json_like_text() {
        let v = rmp_serde::to_vec_named(&std::collections::BTreeMap::from([("code", 7)])).unwrap();
        assert_eq!(render(&v).as_deref(), Some(r#"{"code": 7}"#));
        let v = rmp_serde::to_vec(&(1, "two", [true], Option::<u8>::None, -3)).unwrap();
        assert_eq!(
            render(&v).as_deref(),
            Some(r#"[1, "two", [true], null, -3]"#)
        );
        assert_eq!(render(&[0x92, 1]), None, "truncated");
        let long = rmp_serde::to_vec(&vec![0u8; 40]).unwrap();
        assert!(render(&long).unwrap().ends_with(", ...]"));
    }
}
