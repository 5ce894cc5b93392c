//! A socket's read-ahead buffer: what `s:read()` took from the fd and has
//! not given to Lua yet (Tarantool's `self.rbuf`, an ibuf).
//!
//! `s:read()` reads as much as the fd has (up to the buffer's room, at
//! least `min(limit - buffered, READAHEAD)`), then answers from here, so a
//! reply that is already buffered costs no syscall. A delimiter search
//! remembers how far it looked ([`Memo`]): bytes that arrive later are
//! searched alone (plus the delimiter's length less one before them), never
//! the whole buffer again.

use memchr::memmem;

/// What one read asks of the fd at most, as Tarantool's
/// `buffer.READAHEAD`.
pub(crate) const READAHEAD: usize = 16320;

/// The smallest capacity the buffer takes when it first needs memory.
const MIN_CAPACITY: usize = 16384;

/// The longest delimiter whose search is remembered.
const MEMO_MAX: usize = 16;

/// How far a search for one delimiter looked without finding it.
#[derive(Default)]
struct Memo {
    delim: [u8; MEMO_MAX],
    /// The delimiter's length; 0: no memo.
    len: u8,
    /// An index into the buffer: `rpos..scanned` holds no whole delimiter.
    scanned: usize,
}

/// A read-ahead buffer: `mem[rpos..wpos]` is buffered data.
#[derive(Default)]
pub(crate) struct ReadBuf {
    /// Its whole length is usable (zeroed once when grown).
    mem: Vec<u8>,
    rpos: usize,
    wpos: usize,
    memo: Memo,
}

impl ReadBuf {
    /// Buffered bytes.
    pub fn len(&self) -> usize {
        self.wpos - self.rpos
    }

    /// The buffered bytes.
    pub fn data(&self) -> &[u8] {
        &self.mem[self.rpos..self.wpos]
    }

    /// Drops the first `n` buffered bytes (all of them when fewer).
    pub fn consume(&mut self, n: usize) {
        self.rpos += n.min(self.len());
        if self.rpos == self.wpos {
            self.rpos = 0;
            self.wpos = 0;
        }
        self.memo.scanned = self.memo.scanned.clamp(self.rpos, self.wpos);
    }

    /// Room for at least `n` more bytes after the buffered ones: the free
    /// tail, moved or grown as needed. What a read may fill; then
    /// [`commit`](ReadBuf::commit) what it wrote.
    pub fn reserve(&mut self, n: usize) -> &mut [u8] {
        if self.mem.len() - self.wpos < n {
            self.make_room(n);
        }
        &mut self.mem[self.wpos..]
    }

    #[cold]
    fn make_room(&mut self, n: usize) {
        let used = self.len();
        let need = used + n;
        if self.rpos > 0 && need <= self.mem.len() {
            // Move the buffered bytes to the front.
            self.mem.copy_within(self.rpos..self.wpos, 0);
        } else {
            let cap = need.max(MIN_CAPACITY).max(self.mem.len() * 2);
            let mut mem = vec![0; cap];
            mem[..used].copy_from_slice(self.data());
            self.mem = mem;
        }
        self.memo.scanned -= self.rpos.min(self.memo.scanned);
        self.rpos = 0;
        self.wpos = used;
    }

    /// Counts `n` bytes a read wrote into [`reserve`](ReadBuf::reserve)'s
    /// room.
    pub fn commit(&mut self, n: usize) {
        debug_assert!(self.wpos + n <= self.mem.len());
        self.wpos += n;
    }

    /// Tarantool's `check_limit`: `limit` when that many bytes are here.
    pub fn check_limit(&self, limit: usize) -> Option<usize> {
        (self.len() >= limit).then_some(limit)
    }

    /// Tarantool's `check_delimiter` for one delimiter: the length of the
    /// answer, up to and with the first `delim`, or `limit` bytes when the
    /// delimiter ends past them (or is not here but `limit` bytes are);
    /// `None` when more must be read. 0 for a zero `limit`.
    pub fn check_delimiter(&mut self, delim: &[u8], limit: usize) -> Option<usize> {
        if limit == 0 {
            return Some(0);
        }
        if self.len() == 0 {
            return None;
        }
        let found = self.find(delim);
        self.answer(found, limit)
    }

    /// [`check_delimiter`](ReadBuf::check_delimiter) for several
    /// delimiters: the one that ends first wins. Not remembered.
    pub fn check_delimiters<D: AsRef<[u8]>>(
        &mut self,
        delims: &[D],
        limit: usize,
    ) -> Option<usize> {
        if limit == 0 {
            return Some(0);
        }
        if self.len() == 0 {
            return None;
        }
        let found = delims
            .iter()
            .filter_map(|d| {
                let d = d.as_ref();
                memmem::find(self.data(), d).map(|i| i + d.len())
            })
            .min();
        self.answer(found, limit)
    }

    fn answer(&self, found: Option<usize>, limit: usize) -> Option<usize> {
        match found {
            Some(end) if end <= limit => Some(end),
            _ if limit <= self.len() => Some(limit),
            _ => None,
        }
    }

    /// Where the first `delim` in the buffer ends (an offset from `rpos`),
    /// searching only what the memo has not seen.
    fn find(&mut self, delim: &[u8]) -> Option<usize> {
        let m = delim.len();
        if m == 0 {
            return Some(0);
        }
        let memo = &mut self.memo;
        let same = usize::from(memo.len) == m && memo.delim[..m] == *delim;
        let start = match same {
            true => memo
                .scanned
                .saturating_sub(m - 1)
                .clamp(self.rpos, self.wpos),
            false => self.rpos,
        };
        match memmem::find(&self.mem[start..self.wpos], delim) {
            Some(i) => {
                memo.scanned = self.rpos;
                Some(start + i + m - self.rpos)
            }
            None => {
                if m <= MEMO_MAX {
                    memo.delim[..m].copy_from_slice(delim);
                    memo.len = m as u8;
                    memo.scanned = self.wpos;
                }
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fill(b: &mut ReadBuf, s: &[u8]) {
        b.reserve(s.len())[..s.len()].copy_from_slice(s);
        b.commit(s.len());
    }

    #[test]
    fn delimiter_found_across_two_arrivals() {
        let mut b = ReadBuf::default();
        fill(&mut b, b"GET / HTTP/1.1\r\nHost: x\r\n\r");
        assert_eq!(b.check_delimiter(b"\r\n\r\n", usize::MAX), None);
        fill(&mut b, b"\nGET");
        let n = b.check_delimiter(b"\r\n\r\n", usize::MAX).unwrap();
        assert_eq!(&b.data()[..n], b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        b.consume(n);
        assert_eq!(b.data(), b"GET");
        assert_eq!(b.check_delimiter(b"\r\n\r\n", usize::MAX), None);
    }

    #[test]
    fn the_memo_starts_just_before_the_new_bytes() {
        let mut b = ReadBuf::default();
        fill(&mut b, b"aaaa\r");
        assert_eq!(b.check_delimiter(b"\r\n", 100), None);
        assert_eq!(b.memo.scanned, 5);
        fill(&mut b, b"\nb");
        assert_eq!(b.check_delimiter(b"\r\n", 100), Some(6));
        // Another delimiter searches from the start.
        fill(&mut b, b"x");
        assert_eq!(b.check_delimiter(b"a\r", 100), Some(5));
    }

    #[test]
    fn limit_cuts_the_answer() {
        let mut b = ReadBuf::default();
        fill(&mut b, b"abcdef\n");
        assert_eq!(b.check_delimiter(b"\n", 3), Some(3));
        assert_eq!(b.check_delimiter(b"\n", 0), Some(0));
        assert_eq!(b.check_delimiter(b"zz", 100), None);
        assert_eq!(b.check_delimiter(b"zz", 7), Some(7));
        assert_eq!(b.check_limit(8), None);
        assert_eq!(b.check_limit(7), Some(7));
    }

    #[test]
    fn several_delimiters_the_first_to_end_wins() {
        let mut b = ReadBuf::default();
        fill(&mut b, b"ab\r\ncd\n");
        assert_eq!(
            b.check_delimiters(&[b"\n".as_slice(), b"b\r"], 100),
            Some(3)
        );
        assert_eq!(b.check_delimiters(&[b"x".as_slice()], 100), None);
    }

    #[test]
    fn room_is_made_by_moving_then_by_growing() {
        let mut b = ReadBuf::default();
        fill(&mut b, &[1; 10]);
        let cap = b.mem.len();
        assert_eq!(cap, MIN_CAPACITY);
        b.consume(4);
        fill(&mut b, &vec![2; cap - 10]);
        b.reserve(4);
        assert_eq!(b.mem.len(), cap, "moved, not grown");
        assert_eq!(b.len(), cap - 4);
        assert_eq!(&b.data()[..6], &[1; 6]);
        b.reserve(cap);
        assert!(b.mem.len() >= 2 * cap - 4);
        assert_eq!(b.data()[cap - 5], 2);
        b.consume(usize::MAX);
        assert_eq!((b.rpos, b.wpos), (0, 0));
    }
}
