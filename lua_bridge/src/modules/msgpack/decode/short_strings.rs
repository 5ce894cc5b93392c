//! The Lua strings of short MessagePack strings seen again and again (the
//! arguments of IPROTO CALLs: `'foo'`, a space name, an operation), kept by
//! registry ref with their value words, so that pushing one is a word
//! written at the top instead of interning its bytes again (`lj_str_new`:
//! a hash, a walk of the string table's chain, a compare; some 140
//! instructions a string). LuaJIT only (the words are its tagged values).
//!
//! A small direct-mapped table: a string's slot is picked by a hash of its
//! bytes (at most [`LEN_MAX`]). A string is kept only on its second
//! sighting in a row in its slot (the first leaves its hash there), so a
//! peer sending ever new strings costs a hash and a compare per string,
//! not a ref each. Bounded: at most [`SLOTS`] strings anchored per cord.
//! The words stay valid while their refs anchor the strings (LuaJIT's
//! collector does not move objects).

use std::cell::RefCell;
use std::ffi::c_int;

use mlua::ffi;

use crate::luajit::fill::Fill;
use crate::luajit::obj::Word;
use crate::raw::context::Part;
use crate::raw::{api, Stack};

/// Strings kept at once.
const SLOTS: usize = 64;

/// Longer strings are interned each time.
const LEN_MAX: usize = 16;

/// One slot: the hash of the last string that missed there, and the string
/// kept there, if any.
#[derive(Clone, Copy, Default)]
struct Line {
    seen: u64,
    kept: Option<Kept>,
}

/// A kept string: its bytes as two words (zero-padded), its length, its
/// value word and the registry ref that anchors it.
#[derive(Clone, Copy)]
struct Kept {
    key: [u64; 2],
    len: u8,
    word: Word,
    r: c_int,
}

/// Per-cord state of the short-string cache (a part of the cord context):
/// its slots, made at the first string.
#[derive(Default)]
pub(crate) struct ShortStrings(RefCell<Vec<Line>>);

/// A string's bytes as the cache compares them.
#[derive(Clone, Copy)]
struct Key {
    key: [u64; 2],
    len: u8,
    hash: u64,
}

/// What [`ShortStrings::find`] found.
enum Found {
    /// The string's value word.
    Word(Word),
    /// Not kept; keep it ([`ShortStrings::keep`]) once it is pushed: its
    /// second miss in a row in its slot.
    Keep,
    /// Not kept, and not worth a ref yet.
    Miss,
}

/// The key of `b` (`1..=LEN_MAX` bytes).
#[inline(always)]
fn key(b: &[u8]) -> Key {
    let [lo, hi] = words(b);
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let hash = (lo ^ hi.rotate_left(29) ^ b.len() as u64).wrapping_mul(K);
    Key {
        key: [lo, hi],
        len: b.len() as u8,
        hash,
    }
}

/// The bytes of `b` (`1..=LEN_MAX` of them) as two little-endian words,
/// zero-padded: read with loads that overlap inside `b`, not copied into a
/// zeroed buffer first (a copy of a few bytes then a word's load of them
/// stalls on store forwarding: a third of the decode's CPU samples).
#[inline(always)]
fn words(b: &[u8]) -> [u64; 2] {
    let n = b.len();
    let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
    let u32_at = |i: usize| u64::from(u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes")));
    match n {
        // The bytes above the first 8 from a load of the last 8, shifted
        // down past the ones the first load has.
        9.. => [u64_at(0), u64_at(n - 8) >> ((16 - n) * 8)],
        8 => [u64_at(0), 0],
        4..=7 => [u32_at(0) | (u32_at(n - 4) << ((n - 4) * 8)), 0],
        _ => {
            let (first, mid, last) = (u64::from(b[0]), u64::from(b[n / 2]), u64::from(b[n - 1]));
            [first | (mid << (n / 2 * 8)) | (last << ((n - 1) * 8)), 0]
        }
    }
}

impl Key {
    /// Its slot.
    #[inline(always)]
    fn slot(&self) -> usize {
        (self.hash >> 58) as usize % SLOTS
    }
}

impl ShortStrings {
    /// Looks `k` up (and notes a miss).
    #[inline]
    fn find(&self, k: &Key) -> Found {
        let mut lines = self.0.borrow_mut();
        if lines.is_empty() {
            lines.resize(SLOTS, Line::default());
        }
        let line = &mut lines[k.slot()];
        match line.kept {
            Some(s) if s.len == k.len && s.key == k.key => Found::Word(s.word),
            _ if line.seen == k.hash => Found::Keep,
            _ => {
                line.seen = k.hash;
                Found::Miss
            }
        }
    }

    /// Keeps the string of `k`, whose value word is `word` and which `r`
    /// anchors; returns the ref of the string it replaced, for the caller
    /// to release.
    fn keep(&self, k: &Key, word: Word, r: c_int) -> c_int {
        let mut lines = self.0.borrow_mut();
        if lines.is_empty() {
            lines.resize(SLOTS, Line::default());
        }
        let old = lines[k.slot()].kept.replace(Kept {
            key: k.key,
            len: k.len,
            word,
            r,
        });
        old.map_or(ffi::LUA_NOREF, |s| s.r)
    }
}

/// Pushes the string `bytes` onto `s` (which has room for it and one more
/// value) when the cache can: from its kept word, or interned and kept on
/// its second miss in a row. `false` (nothing pushed) for a string the
/// cache does not take (empty, longer than [`LEN_MAX`]) or one not worth a
/// ref yet: the caller interns it.
#[inline]
pub(super) fn push(fill: Fill, s: &mut Stack, bytes: &[u8]) -> bool {
    if !(1..=LEN_MAX).contains(&bytes.len()) {
        return false;
    }
    let k = key(bytes);
    match ShortStrings::try_with(|st| st.find(&k)) {
        Some(Found::Word(w)) => {
            // SAFETY: room for one value (the caller's); `w` is the word of
            // a string its ref anchors (fill rule 4).
            unsafe {
                fill.push_word(s.as_ptr(), w);
                s.assume_pushed(1);
            }
            true
        }
        Some(Found::Keep) => {
            // SAFETY: room for this value and a copy of it (the caller's).
            let w = unsafe {
                api::push_bytes(s.as_ptr(), bytes);
                s.assume_pushed(1);
                fill.top_word(s.as_ptr())
            };
            s.push_value(-1);
            let r = s.make_ref();
            // Kept outside the part's borrow: a ref's allocation may run a
            // finalizer, which may decode.
            let old = ShortStrings::try_with(|st| st.keep(&k, w, r));
            s.unref(old.unwrap_or(r));
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_string_is_kept_on_its_second_miss_and_found_after() {
        let st = ShortStrings::default();
        let k = key(b"foo");
        assert!(matches!(st.find(&k), Found::Miss));
        assert!(matches!(st.find(&k), Found::Keep));
        assert_eq!(st.keep(&k, 42, 7), ffi::LUA_NOREF);
        assert!(matches!(st.find(&k), Found::Word(42)));
        // Same slot or not, another string is not this one.
        assert!(!matches!(st.find(&key(b"fo")), Found::Word(_)));
        assert!(!matches!(st.find(&key(b"foo\0")), Found::Word(_)));
    }

    #[test]
    fn words_are_the_bytes_zero_padded() {
        let all = b"0123456789abcdef";
        for n in 1..=LEN_MAX {
            let mut padded = [0u8; LEN_MAX];
            padded[..n].copy_from_slice(&all[..n]);
            let want = [
                u64::from_le_bytes(padded[..8].try_into().unwrap()),
                u64::from_le_bytes(padded[8..].try_into().unwrap()),
            ];
            assert_eq!(words(&all[..n]), want, "{n} bytes");
        }
    }

    #[test]
    fn sixteen_bytes_are_all_compared() {
        let st = ShortStrings::default();
        let a = key(b"0123456789abcdef");
        st.find(&a);
        st.find(&a);
        st.keep(&a, 1, 1);
        assert!(!matches!(
            st.find(&key(b"0123456789abcdeX")),
            Found::Word(_)
        ));
        assert!(matches!(st.find(&a), Found::Word(1)));
    }
}
