//! Walking UTF-8 as ICU's macros do (`U8_NEXT`, `U8_FWD_N`, `U8_BACK_N`,
//! `U8_APPEND_UNSAFE`), on bytes that may be ill-formed: an ill-formed
//! sequence is skipped as one unit, its maximal subpart (Unicode's rule,
//! ICU's), so positions and counts match Tarantool's.

/// The range a byte after lead `lead` must be in, for the first trail
/// byte (the others are `0x80..=0xBF`); `None` for a byte that leads
/// nothing (ASCII, a trail byte, `C0`, `C1`, `F5..FF`).
fn first_trail(lead: u8) -> Option<(u8, u8, usize)> {
    // (low, high, trail bytes needed)
    Some(match lead {
        0xC2..=0xDF => (0x80, 0xBF, 1),
        0xE0 => (0xA0, 0xBF, 2),
        0xE1..=0xEC | 0xEE..=0xEF => (0x80, 0xBF, 2),
        0xED => (0x80, 0x9F, 2),
        0xF0 => (0x90, 0xBF, 3),
        0xF1..=0xF3 => (0x80, 0xBF, 3),
        0xF4 => (0x80, 0x8F, 3),
        _ => return None,
    })
}

/// Whether `b` is a trail byte.
#[inline]
fn is_trail(b: u8) -> bool {
    b & 0xC0 == 0x80
}

/// `U8_NEXT`: the code point at byte `i` and the index after it; `None`
/// (ICU's `U_SENTINEL`) for an ill-formed sequence, the index then after
/// its maximal subpart (at least one byte).
pub(super) fn next(s: &[u8], i: usize) -> (usize, Option<u32>) {
    let lead = s[i];
    if lead < 0x80 {
        return (i + 1, Some(u32::from(lead)));
    }
    let Some((lo, hi, n)) = first_trail(lead) else {
        return (i + 1, None);
    };
    let mut c = u32::from(lead) & (0x3F >> n);
    let mut j = i + 1;
    for k in 0..n {
        let Some(&b) = s.get(j) else {
            return (j, None);
        };
        let ok = if k == 0 {
            (lo..=hi).contains(&b)
        } else {
            is_trail(b)
        };
        if !ok {
            return (j, None);
        }
        c = (c << 6) | u32::from(b & 0x3F);
        j += 1;
    }
    (j, Some(c))
}

/// `U8_FWD_N`: the index `n` code points after `i` (or the end).
pub(super) fn forward(s: &[u8], mut i: usize, n: i64) -> usize {
    let mut n = n;
    while n > 0 && i < s.len() {
        i = next(s, i).0;
        n -= 1;
    }
    i
}

/// `U8_BACK_1` (the safe one): the start of the code point (or of the
/// ill-formed unit) that ends at `i`, not below `start`.
fn back1(s: &[u8], start: usize, i: usize) -> usize {
    let i = i - 1;
    if !is_trail(s[i]) {
        return i;
    }
    // A lead byte up to 3 bytes back whose sequence covers `i`.
    for k in 1..=3 {
        if i < start + k {
            break;
        }
        let j = i - k;
        let b = s[j];
        if is_trail(b) {
            continue;
        }
        if first_trail(b).is_some() && next(s, j).0 > i {
            return j;
        }
        break;
    }
    i
}

/// `U8_BACK_N`: the index `n` code points before `i`, not below `start`.
pub(super) fn back(s: &[u8], start: usize, mut i: usize, n: i64) -> usize {
    let mut n = n;
    while n > 0 && i > start {
        i = back1(s, start, i);
        n -= 1;
    }
    i
}

/// `U8_APPEND_UNSAFE`: appends `c` in UTF-8's shape, unchecked (a
/// surrogate is written as 3 bytes; above `0x10FFFF` the top bits are
/// lost), as Tarantool's `utf8.char` does.
pub(super) fn append(out: &mut Vec<u8>, c: u32) {
    if c < 0x80 {
        out.push(c as u8);
    } else if c < 0x800 {
        out.extend_from_slice(&[(c >> 6) as u8 | 0xC0, (c & 0x3F) as u8 | 0x80]);
    } else if c < 0x10000 {
        out.extend_from_slice(&[
            (c >> 12) as u8 | 0xE0,
            ((c >> 6) & 0x3F) as u8 | 0x80,
            (c & 0x3F) as u8 | 0x80,
        ]);
    } else {
        out.extend_from_slice(&[
            (c >> 18) as u8 | 0xF0,
            ((c >> 12) & 0x3F) as u8 | 0x80,
            ((c >> 6) & 0x3F) as u8 | 0x80,
            (c & 0x3F) as u8 | 0x80,
        ]);
    }
}

/// Master's `utf8_sub`: the byte range of code points `start_pos..end_pos`
/// (`start_pos` 0-based when not negative, `end_pos` 1-based; negative
/// ones count from the end).
pub(super) fn sub(s: &[u8], start_pos: i64, end_pos: i64) -> (usize, usize) {
    let len = s.len();
    let (start_offset, end_offset);
    if start_pos >= 0 {
        start_offset = forward(s, 0, start_pos);
        end_offset = if end_pos >= 0 {
            forward(s, start_offset, end_pos - start_pos)
        } else {
            back(s, 0, len, -(end_pos + 1))
        };
    } else {
        let (from, n);
        if end_pos < 0 {
            end_offset = back(s, 0, len, -(end_pos + 1));
            from = end_offset;
            n = end_pos - start_pos + 1;
        } else {
            end_offset = forward(s, 0, end_pos);
            n = -start_pos;
            from = len;
        }
        start_offset = back(s, 0, from, n);
    }
    (start_offset, end_offset.max(start_offset))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_skips_maximal_subparts() {
        assert_eq!(next(b"a\xF4", 1), (2, None));
        assert_eq!(next("ё".as_bytes(), 0), (2, Some(0x451)));
        assert_eq!(next(b"\xE0\x80", 0), (1, None));
        assert_eq!(next(b"\xF0\x90\x80", 0), (3, None));
    }

    #[test]
    fn sub_matches_tarantool() {
        let s = b"12345678";
        let cut = |i: i64, j: i64| {
            let i = if i > 0 { i - 1 } else { i };
            let (a, b) = sub(s, i, j);
            String::from_utf8(s[a..b].to_vec()).unwrap()
        };
        assert_eq!(cut(3, 7), "34567");
        assert_eq!(cut(7, 3), "");
        assert_eq!(cut(-6, 5), "345");
        assert_eq!(cut(-4, -2), "567");
        assert_eq!(cut(-400, -2), "1234567");
        assert_eq!(cut(5, -4), "5");
        assert_eq!(cut(-1, 8), "8");
    }

    #[test]
    fn append_writes_any_code() {
        let mut v = Vec::new();
        for c in [0x41, 0x451, 0x52FA, 0x1F383] {
            append(&mut v, c);
        }
        assert_eq!(String::from_utf8(v).unwrap(), "Aё勺🎃");
    }
}
