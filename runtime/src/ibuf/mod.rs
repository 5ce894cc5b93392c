//! Byte buffers with a read and a write position (Tarantool's `struct ibuf`),
//! and the cord's stash of reusable ones (`cord_ibuf_take` / `cord_ibuf_put` /
//! `cord_ibuf_drop`).
//!
//! An [`Ibuf`] holds `capacity()` bytes. Bytes `rpos..wpos` are the unread
//! data, bytes `wpos..capacity` the room to write. Writers [`reserve`] room and
//! [`alloc`] (or [`advance`]) to move `wpos`; readers [`read`] or [`consume`]
//! to move `rpos`. Growth doubles the capacity, starting at the buffer's start
//! capacity, and keeps the unread bytes (moving them to offset 0).
//!
//! The stash is per thread (one per cord). Rules it keeps:
//!
//! 1. [`cord_ibuf_take`] hands out an empty buffer; buffers that come back
//!    keep their memory, so a take after warm-up allocates nothing.
//! 2. At most [`StashConfig::free_max`] free buffers keep memory, and none
//!    above [`StashConfig::keep_max`] bytes: the rest is freed on put.
//! 3. Master's `cord_buf.c` caches one buffer and deletes a buffer put
//!    while that one is there: the first buffer put into a stash with none
//!    cached is the cached one, taken first; the others (master's deleted
//!    ones, kept here so that nested takes allocate nothing) are taken only
//!    when no cached one is free. So the buffer a take gets is master's.
//! 4. A buffer taken inside a fiber goes back by itself when that fiber
//!    yields or ends (a switch hook of [`luafiber_fiber`]), so an error cannot
//!    leak it.
//! 5. A handle names one take: after the buffer came back, the handle is stale
//!    and every operation on it is refused ([`with_cord_ibuf`] gives `None`).
//! 6. Loan rule: [`with_cord_ibuf`] and [`with_cord_scratch`] lend the boxed
//!    buffer to a closure and mark the slot lent; nothing else reaches a lent
//!    buffer, and a put while it is lent (a yield inside the closure) is
//!    finished when the loan ends.
//!
//! ```
//! use luafiber_runtime::ibuf;
//!
//! let b = ibuf::cord_ibuf_take();
//! ibuf::with_cord_ibuf(b, |buf| buf.extend_from_slice(b"hello").unwrap()).unwrap();
//! assert_eq!(ibuf::with_cord_ibuf(b, |buf| buf.data().to_vec()), Some(b"hello".to_vec()));
//! ibuf::cord_ibuf_put(b);
//! let again = ibuf::cord_ibuf_take();
//! assert_eq!(ibuf::with_cord_ibuf(again, |buf| buf.used()), Some(0));
//! ibuf::cord_ibuf_put(again);
//! ```
//!
//! [`reserve`]: Ibuf::reserve
//! [`alloc`]: Ibuf::alloc
//! [`advance`]: Ibuf::advance
//! [`read`]: Ibuf::read
//! [`consume`]: Ibuf::consume

use std::alloc::{self, Layout};
use std::fmt;
use std::ptr::NonNull;

/// Start capacity of a user buffer (Tarantool's `buffer.READAHEAD`).
pub const READAHEAD: usize = 16320;

/// Start capacity of a cord buffer (Tarantool's `CORD_IBUF_START_CAPACITY`).
pub const CORD_IBUF_START_CAPACITY: usize = 16384;

/// A buffer could not grow: `requested` bytes of room were asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReserveError {
    /// The room asked for, in bytes.
    pub requested: usize,
}

impl fmt::Display for ReserveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Failed to allocate {} bytes in ibuf", self.requested)
    }
}

impl std::error::Error for ReserveError {}

/// Zeroed heap bytes (zeroed, so every byte handed out as `&mut [u8]` is
/// initialized; large blocks come zeroed from the OS at no cost).
struct Mem {
    ptr: NonNull<u8>,
    cap: usize,
}

// SAFETY: `Mem` owns its block exclusively, like a `Box<[u8]>`.
unsafe impl Send for Mem {}
// SAFETY: shared access only reads.
unsafe impl Sync for Mem {}

impl Mem {
    const EMPTY: Mem = Mem {
        ptr: NonNull::dangling(),
        cap: 0,
    };

    fn zeroed(cap: usize) -> Option<Mem> {
        if cap == 0 {
            return Some(Mem::EMPTY);
        }
        let layout = Layout::array::<u8>(cap).ok()?;
        // SAFETY: `layout` has a non-zero size.
        let ptr = NonNull::new(unsafe { alloc::alloc_zeroed(layout) })?;
        Some(Mem { ptr, cap })
    }

    #[inline]
    fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr` is valid for `cap` initialized bytes (or dangling
        // with `cap == 0`).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.cap) }
    }

    #[inline]
    fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`; `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.cap) }
    }
}

impl Drop for Mem {
    fn drop(&mut self) {
        if self.cap > 0 {
            // SAFETY: allocated in `zeroed` with this very layout.
            unsafe { alloc::dealloc(self.ptr.as_ptr(), Layout::array::<u8>(self.cap).unwrap()) };
        }
    }
}

/// A growable byte buffer with read and write positions (Tarantool's
/// `struct ibuf`). Positions are byte offsets from the start of its memory.
///
/// ```
/// use luafiber_runtime::ibuf::Ibuf;
///
/// let mut buf = Ibuf::new();
/// buf.alloc(3).copy_from_slice(b"abc");
/// assert_eq!(buf.used(), 3);
/// assert_eq!(buf.read(2), Some(&b"ab"[..]));
/// assert_eq!(buf.data(), b"c");
/// buf.reset();
/// assert!(buf.is_empty() && buf.capacity() >= 3);
/// ```
pub struct Ibuf {
    mem: Mem,
    rpos: usize,
    wpos: usize,
    start_capacity: usize,
    /// A cord buffer: its memory is counted in [`stats`].
    counted: bool,
}

impl Default for Ibuf {
    fn default() -> Self {
        Ibuf::new()
    }
}

impl fmt::Debug for Ibuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ibuf")
            .field("rpos", &self.rpos)
            .field("wpos", &self.wpos)
            .field("capacity", &self.capacity())
            .finish()
    }
}

impl Ibuf {
    /// An empty buffer with no memory yet; the first growth allocates
    /// [`READAHEAD`] bytes (or what is asked, doubled up from there).
    pub const fn new() -> Ibuf {
        Ibuf::with_start_capacity(READAHEAD)
    }

    /// An empty buffer with no memory yet whose first growth allocates at
    /// least `start` bytes.
    pub const fn with_start_capacity(start: usize) -> Ibuf {
        Ibuf {
            mem: Mem::EMPTY,
            rpos: 0,
            wpos: 0,
            start_capacity: start,
            counted: false,
        }
    }

    /// Bytes of memory held.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.mem.cap
    }

    /// Unread bytes (`wpos - rpos`; Tarantool's `ibuf_used`, Lua's `size()`).
    #[inline]
    pub fn used(&self) -> usize {
        self.wpos - self.rpos
    }

    /// Room after `wpos` (`capacity - wpos`).
    #[inline]
    pub fn unused(&self) -> usize {
        self.mem.cap - self.wpos
    }

    /// Whether no byte is unread.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.rpos == self.wpos
    }

    /// The read offset.
    pub fn rpos(&self) -> usize {
        self.rpos
    }

    /// The write offset.
    pub fn wpos(&self) -> usize {
        self.wpos
    }

    /// The first growth's minimum capacity.
    pub fn start_capacity(&self) -> usize {
        self.start_capacity
    }

    /// Address of the memory's first byte (dangling while `capacity()` is 0).
    /// It changes when the buffer grows or is recycled.
    pub fn as_ptr(&self) -> *const u8 {
        self.mem.ptr.as_ptr()
    }

    /// The unread bytes.
    #[inline]
    pub fn data(&self) -> &[u8] {
        &self.mem.as_slice()[self.rpos..self.wpos]
    }

    /// The unread bytes, writable.
    #[inline]
    pub fn data_mut(&mut self) -> &mut [u8] {
        let (r, w) = (self.rpos, self.wpos);
        &mut self.mem.as_mut_slice()[r..w]
    }

    /// The whole memory (for code that indexes it by offsets).
    pub fn memory(&self) -> &[u8] {
        self.mem.as_slice()
    }

    /// Makes room for `n` more bytes after `wpos` and returns all the room
    /// (at least `n` bytes); `wpos` does not move. Growth may move the unread
    /// bytes to offset 0.
    ///
    /// # Errors
    ///
    /// [`ReserveError`] when the memory cannot be had.
    #[inline]
    pub fn try_reserve(&mut self, n: usize) -> Result<&mut [u8], ReserveError> {
        if n > self.unused() {
            self.grow(n)?;
        }
        let w = self.wpos;
        Ok(&mut self.mem.as_mut_slice()[w..])
    }

    /// Like [`Ibuf::try_reserve`].
    ///
    /// # Panics
    ///
    /// Panics when the memory cannot be had.
    pub fn reserve(&mut self, n: usize) -> &mut [u8] {
        match self.try_reserve(n) {
            Ok(room) => room,
            Err(e) => panic!("{e}"),
        }
    }

    /// Reserves `n` bytes and moves `wpos` past them; returns them.
    ///
    /// # Errors
    ///
    /// [`ReserveError`] when the memory cannot be had.
    #[inline]
    pub fn try_alloc(&mut self, n: usize) -> Result<&mut [u8], ReserveError> {
        self.try_reserve(n)?;
        let w = self.wpos;
        self.wpos += n;
        Ok(&mut self.mem.as_mut_slice()[w..w + n])
    }

    /// Like [`Ibuf::try_alloc`].
    ///
    /// # Panics
    ///
    /// Panics when the memory cannot be had.
    pub fn alloc(&mut self, n: usize) -> &mut [u8] {
        match self.try_alloc(n) {
            Ok(room) => room,
            Err(e) => panic!("{e}"),
        }
    }

    /// Moves `wpos` by `n` bytes written into reserved room.
    ///
    /// # Panics
    ///
    /// Panics when `n > unused()`.
    #[inline]
    pub fn advance(&mut self, n: usize) {
        assert!(n <= self.unused(), "advance past the reserved room");
        self.wpos += n;
    }

    /// Appends `bytes` at `wpos`.
    ///
    /// # Errors
    ///
    /// [`ReserveError`] when the memory cannot be had.
    #[inline]
    pub fn extend_from_slice(&mut self, bytes: &[u8]) -> Result<(), ReserveError> {
        self.try_alloc(bytes.len())?.copy_from_slice(bytes);
        Ok(())
    }

    /// Returns the next `n` unread bytes and moves `rpos` past them, or
    /// `None` (moving nothing) when fewer are unread.
    pub fn read(&mut self, n: usize) -> Option<&[u8]> {
        if n > self.used() {
            return None;
        }
        let r = self.rpos;
        self.rpos += n;
        Some(&self.mem.as_slice()[r..r + n])
    }

    /// Moves `rpos` by `n`; `false` (moving nothing) when fewer are unread.
    pub fn consume(&mut self, n: usize) -> bool {
        self.read(n).is_some()
    }

    /// Sets the read offset; `false` (changing nothing) unless
    /// `off <= wpos`.
    pub fn set_rpos(&mut self, off: usize) -> bool {
        let ok = off <= self.wpos;
        if ok {
            self.rpos = off;
        }
        ok
    }

    /// Sets the write offset; `false` (changing nothing) unless
    /// `rpos <= off <= capacity`.
    pub fn set_wpos(&mut self, off: usize) -> bool {
        let ok = self.rpos <= off && off <= self.mem.cap;
        if ok {
            self.wpos = off;
        }
        ok
    }

    /// Keeps the first `n` unread bytes and drops the rest (moves `wpos`
    /// back).
    ///
    /// # Panics
    ///
    /// Panics when `n > used()`.
    #[inline]
    pub fn truncate(&mut self, n: usize) {
        assert!(n <= self.used(), "truncate past wpos");
        self.wpos = self.rpos + n;
    }

    /// Empties the buffer and keeps its memory (`ibuf_reset`).
    #[inline]
    pub fn reset(&mut self) {
        self.rpos = 0;
        self.wpos = 0;
    }

    /// Empties the buffer and frees its memory (`ibuf_reinit`).
    pub fn recycle(&mut self) {
        self.reset();
        let old = std::mem::replace(&mut self.mem, Mem::EMPTY);
        if self.counted && old.cap > 0 {
            count_memory(0, old.cap);
        }
    }

    /// Gets room for `n` bytes after the unread ones: moves them to offset 0
    /// when that leaves enough room and they fill at most half the memory,
    /// else doubles the capacity (from the start capacity) until they fit.
    #[cold]
    fn grow(&mut self, n: usize) -> Result<(), ReserveError> {
        let used = self.used();
        let cap = self.mem.cap;
        let need = used.checked_add(n).ok_or(ReserveError { requested: n })?;
        if need <= cap && used <= cap / 2 {
            let r = self.rpos;
            self.mem.as_mut_slice().copy_within(r..r + used, 0);
        } else {
            let mut new_cap = cap.max(self.start_capacity).max(1);
            while new_cap < need {
                new_cap = new_cap
                    .checked_mul(2)
                    .ok_or(ReserveError { requested: n })?;
            }
            let mut mem = Mem::zeroed(new_cap).ok_or(ReserveError { requested: n })?;
            mem.as_mut_slice()[..used].copy_from_slice(self.data());
            let old = std::mem::replace(&mut self.mem, mem);
            if self.counted {
                count_memory(new_cap, old.cap);
            }
        }
        self.rpos = 0;
        self.wpos = used;
        Ok(())
    }
}

impl Drop for Ibuf {
    fn drop(&mut self) {
        self.recycle();
    }
}

impl std::io::Write for Ibuf {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.write_all(buf).map(|()| buf.len())
    }

    #[inline]
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        if buf.len() <= self.unused() {
            let w = self.wpos;
            self.mem.as_mut_slice()[w..w + buf.len()].copy_from_slice(buf);
            self.wpos += buf.len();
            return Ok(());
        }
        self.extend_from_slice(buf)
            .map_err(|_| std::io::ErrorKind::OutOfMemory.into())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

mod stash;

use stash::count_memory;

pub use stash::{
    configure_stash, cord_ibuf_drop, cord_ibuf_put, cord_ibuf_take, stash_config, stats,
    with_cord_ibuf, with_cord_scratch, CordIbuf, StashConfig, Stats,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_alloc_read() {
        let mut b = Ibuf::with_start_capacity(8);
        assert_eq!(b.capacity(), 0);
        assert!(b.reserve(3).len() >= 3);
        assert_eq!((b.capacity(), b.used()), (8, 0));
        b.alloc(5).copy_from_slice(b"01234");
        assert_eq!(b.read(2), Some(&b"01"[..]));
        assert_eq!(b.read(4), None);
        assert_eq!((b.rpos(), b.wpos(), b.unused()), (2, 5, 3));
        // 3 unread + 5 more do not fit in 8 with the data kept at 2: grows.
        b.alloc(6).copy_from_slice(b"abcdef");
        assert_eq!(b.capacity(), 16);
        assert_eq!(b.data(), b"234abcdef");
        assert_eq!(b.rpos(), 0);
        assert!(b.consume(9));
        assert!(b.is_empty());
        b.recycle();
        assert_eq!(b.capacity(), 0);
    }

    #[test]
    fn compacts_instead_of_growing() {
        let mut b = Ibuf::with_start_capacity(16);
        b.alloc(12);
        b.consume(10);
        let cap = b.capacity();
        b.alloc(8);
        assert_eq!((b.capacity(), b.rpos(), b.used()), (cap, 0, 10));
    }

    #[test]
    fn huge_reserve_fails_cleanly() {
        let mut b = Ibuf::new();
        assert_eq!(b.try_reserve(usize::MAX).unwrap_err().requested, usize::MAX);
        assert!(b.try_reserve(isize::MAX as usize).is_err());
        assert_eq!(b.capacity(), 0);
    }

    #[test]
    fn io_write_appends() {
        use std::io::Write;
        let mut b = Ibuf::with_start_capacity(4);
        for _ in 0..100 {
            b.write_all(b"xyz").unwrap();
        }
        assert_eq!(b.used(), 300);
        assert!(b.data().chunks(3).all(|c| c == b"xyz"));
    }

    #[test]
    fn set_positions_are_checked() {
        let mut b = Ibuf::new();
        b.alloc(10);
        assert!(b.set_rpos(4));
        assert!(!b.set_rpos(11));
        assert!(!b.set_wpos(3));
        assert!(b.set_wpos(b.capacity()));
        assert!(!b.set_wpos(b.capacity() + 1));
    }
}
