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
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::fmt;
use std::ptr::NonNull;

use luafiber_fiber::{self as fiber, FiberId};

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

/// Settings of this thread's stash; see [`configure_stash`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StashConfig {
    /// Capacity of a new cord buffer's first growth, in bytes (16384).
    pub start_capacity: usize,
    /// Most free buffers that keep their memory (4).
    pub free_max: usize,
    /// Most bytes a free buffer keeps; a bigger one is freed on put (1 MiB).
    pub keep_max: usize,
}

impl StashConfig {
    const DEFAULT: StashConfig = StashConfig {
        start_capacity: CORD_IBUF_START_CAPACITY,
        free_max: 4,
        keep_max: 1 << 20,
    };
}

impl Default for StashConfig {
    fn default() -> Self {
        StashConfig::DEFAULT
    }
}

/// Counters of this thread's stash; see [`stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Buffers handed out: by [`cord_ibuf_take`] and [`with_cord_scratch`].
    pub takes: u64,
    /// Buffers given back: by [`cord_ibuf_put`], [`cord_ibuf_drop`], the end
    /// of [`with_cord_scratch`], or a fiber's yield or end.
    pub puts: u64,
    /// Of `puts`, those made by a fiber's yield or end.
    pub auto_puts: u64,
    /// Memory blocks allocated for cord buffers (first use and growth).
    pub allocations: u64,
    /// Memory blocks of cord buffers freed (growth, drop, trimming on put).
    pub frees: u64,
    /// Bytes of memory the cord buffers hold, taken or free.
    pub bytes_held: usize,
    /// Buffers out now.
    pub taken: usize,
    /// Free buffers now.
    pub free: usize,
}

/// One take of a cord buffer: the slot and the take's generation (rule 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CordIbuf {
    slot: u32,
    gen: u32,
}

impl CordIbuf {
    /// The buffer's slot: the same for every take of the same buffer (the
    /// Lua bridge keeps one Lua object per slot).
    pub fn slot(self) -> usize {
        self.slot as usize
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Owner {
    Free,
    /// Taken by this fiber (`None`: outside any fiber, never given back by
    /// itself).
    Taken(Option<FiberId>),
    /// Lent to [`with_cord_scratch`], which gives it back itself.
    Scoped,
}

/// One buffer of the stash. The buffer is boxed so its address stays put
/// while the slot table grows: a loan hands out that address.
struct Slot {
    buf: Box<Ibuf>,
    owner: Owner,
    gen: u32,
    /// The buffer is lent to a closure (`with_cord_ibuf`,
    /// `with_cord_scratch`): nobody else may touch it (loan rule).
    lent: bool,
}

struct Stash {
    slots: Vec<Slot>,
    /// Free slots, taken from the back: the cached one (rule 3) there
    /// when there is one, the others under it, last put first (LIFO keeps
    /// the warm buffer in use).
    free: VecDeque<u32>,
    /// Whether the back of `free` is the cached slot (rule 3).
    cached: bool,
    /// Slots taken by a fiber: the switch hook has work only when non-zero.
    taken_in_fibers: usize,
    config: StashConfig,
    hooked: bool,
    takes: u64,
    puts: u64,
    auto_puts: u64,
}

/// Memory counters, kept apart from the stash because buffers update them
/// as they grow, wherever they are.
struct MemCounters {
    allocations: Cell<u64>,
    frees: Cell<u64>,
    bytes_held: Cell<usize>,
}

thread_local! {
    static STASH: RefCell<Stash> = const { RefCell::new(Stash {
        slots: Vec::new(),
        free: VecDeque::new(),
        cached: false,
        taken_in_fibers: 0,
        config: StashConfig::DEFAULT,
        hooked: false,
        takes: 0,
        puts: 0,
        auto_puts: 0,
    }) };
    static MEM: MemCounters = const { MemCounters {
        allocations: Cell::new(0),
        frees: Cell::new(0),
        bytes_held: Cell::new(0),
    } };
    static PREV_HOOK: Cell<Option<fn()>> = const { Cell::new(None) };
}

/// Counts a cord buffer's new block of `new` bytes replacing one of `old`
/// bytes (0: none).
fn count_memory(new: usize, old: usize) {
    MEM.with(|m| {
        if new > 0 {
            m.allocations.set(m.allocations.get() + 1);
        }
        if old > 0 {
            m.frees.set(m.frees.get() + 1);
        }
        m.bytes_held.set(m.bytes_held.get() + new - old);
    });
}

fn with_stash<R>(f: impl FnOnce(&mut Stash) -> R) -> R {
    STASH.with(|s| f(&mut s.borrow_mut()))
}

/// Replaces this thread's stash settings (they apply from the next put and
/// the next new buffer on).
pub fn configure_stash(config: StashConfig) {
    with_stash(|s| s.config = config);
}

/// This thread's stash settings.
pub fn stash_config() -> StashConfig {
    with_stash(|s| s.config)
}

/// The counters of this thread's stash.
pub fn stats() -> Stats {
    let (takes, puts, auto_puts, taken, free) = with_stash(|s| {
        (
            s.takes,
            s.puts,
            s.auto_puts,
            s.slots.len() - s.free.len(),
            s.free.len(),
        )
    });
    MEM.with(|m| Stats {
        takes,
        puts,
        auto_puts,
        allocations: m.allocations.get(),
        frees: m.frees.get(),
        bytes_held: m.bytes_held.get(),
        taken,
        free,
    })
}

/// Takes an empty buffer from this thread's stash (Tarantool's
/// `cord_ibuf_take`): a free one with its memory kept when there is one (rule
/// 1). Inside a fiber, the buffer comes back by itself when the fiber yields
/// or ends (rule 3).
pub fn cord_ibuf_take() -> CordIbuf {
    let fiber = fiber::current();
    with_stash(|s| {
        if !s.hooked {
            s.hooked = true;
            PREV_HOOK.with(|p| p.set(fiber::set_switch_hook(Some(switch_hook))));
        }
        let slot = s.pop_free();
        let sl = &mut s.slots[slot as usize];
        sl.gen = sl.gen.wrapping_add(1);
        sl.owner = Owner::Taken(fiber);
        let gen = sl.gen;
        if fiber.is_some() {
            s.taken_in_fibers += 1;
        }
        s.takes += 1;
        CordIbuf { slot, gen }
    })
}

/// Gives a taken buffer back (Tarantool's `cord_ibuf_put`): it is emptied and
/// keeps its memory, unless rule 2 frees it. Returns `false` (doing nothing)
/// when `b` is stale: already given back.
pub fn cord_ibuf_put(b: CordIbuf) -> bool {
    with_stash(|s| s.put(b.slot, Some(b.gen), false))
}

/// Frees a taken buffer's memory and gives it back (Tarantool's
/// `cord_ibuf_drop`). Returns `false` (doing nothing) when `b` is stale.
pub fn cord_ibuf_drop(b: CordIbuf) -> bool {
    with_stash(|s| {
        let Some(sl) = s.slots.get_mut(b.slot as usize) else {
            return false;
        };
        if sl.gen != b.gen || !matches!(sl.owner, Owner::Taken(_)) {
            return false;
        }
        if !sl.lent {
            sl.buf.recycle();
        }
        s.put(b.slot, Some(b.gen), false)
    })
}

/// Ends a loan of slot `slot` (even on unwind): when the slot was given
/// back meanwhile (its fiber yielded), the put is finished now.
struct Loan {
    slot: u32,
}

impl Drop for Loan {
    fn drop(&mut self) {
        with_stash(|s| {
            let sl = &mut s.slots[self.slot as usize];
            sl.lent = false;
            match sl.owner {
                Owner::Free => s.refile(self.slot),
                Owner::Scoped => {
                    sl.owner = Owner::Free;
                    s.puts += 1;
                    s.refile(self.slot);
                }
                Owner::Taken(_) => {}
            }
        });
    }
}

/// Runs `f` on the buffer of take `b`; `None` when `b` is stale (rule 4) or
/// the buffer is already lent to an outer `with_cord_ibuf`. The stash is not
/// borrowed while `f` runs, so `f` may take other buffers. If the fiber
/// yields inside `f`, the buffer goes back once `f` returns.
pub fn with_cord_ibuf<R>(b: CordIbuf, f: impl FnOnce(&mut Ibuf) -> R) -> Option<R> {
    let buf = with_stash(|s| {
        let sl = s.slots.get_mut(b.slot as usize)?;
        if sl.gen != b.gen || sl.lent || !matches!(sl.owner, Owner::Taken(_)) {
            return None;
        }
        sl.lent = true;
        Some(&raw mut *sl.buf)
    })?;
    let _loan = Loan { slot: b.slot };
    // SAFETY: the loan rule: while `lent` is set nothing else reaches this
    // boxed buffer, and the box is neither freed nor moved (slots are never
    // removed; the `Box` keeps its heap address when `slots` grows).
    Some(f(unsafe { &mut *buf }))
}

/// Takes a cord buffer for the time `f` runs and gives it back after,
/// emptied (take + put in one go: the fast path of encoders). The buffer is
/// not given back by a yield inside `f`: it is lent until `f` returns.
///
/// ```
/// use luafiber_runtime::ibuf;
///
/// let n = ibuf::with_cord_scratch(|buf| {
///     buf.extend_from_slice(b"scratch").unwrap();
///     buf.used()
/// });
/// assert_eq!(n, 7);
/// ```
pub fn with_cord_scratch<R>(f: impl FnOnce(&mut Ibuf) -> R) -> R {
    let (slot, buf) = with_stash(|s| {
        let slot = s.pop_free();
        let sl = &mut s.slots[slot as usize];
        sl.gen = sl.gen.wrapping_add(1);
        sl.owner = Owner::Scoped;
        sl.lent = true;
        s.takes += 1;
        (slot, &raw mut *sl.buf)
    });
    let _loan = Loan { slot };
    // SAFETY: the loan rule, as in `with_cord_ibuf`.
    f(unsafe { &mut *buf })
}

impl Stash {
    /// A free slot (a new one when none is free).
    #[inline]
    fn pop_free(&mut self) -> u32 {
        match self.free.pop_back() {
            Some(i) => {
                self.cached = false;
                i
            }
            None => self.new_slot(),
        }
    }

    #[cold]
    fn new_slot(&mut self) -> u32 {
        let mut buf = Box::new(Ibuf::with_start_capacity(self.config.start_capacity));
        buf.counted = true;
        self.slots.push(Slot {
            buf,
            owner: Owner::Free,
            gen: 0,
            lent: false,
        });
        (self.slots.len() - 1) as u32
    }

    /// Gives slot `i` back (checking the generation unless `gen` is `None`);
    /// `false` when it is stale or not taken.
    fn put(&mut self, i: u32, gen: Option<u32>, auto: bool) -> bool {
        let Some(sl) = self.slots.get_mut(i as usize) else {
            return false;
        };
        let Owner::Taken(fiber) = sl.owner else {
            return false;
        };
        if gen.is_some_and(|g| g != sl.gen) {
            return false;
        }
        if fiber.is_some() {
            self.taken_in_fibers -= 1;
        }
        sl.owner = Owner::Free;
        self.puts += 1;
        self.auto_puts += u64::from(auto);
        if !sl.lent {
            self.refile(i);
        }
        true
    }

    /// Empties a free slot's buffer, applies rule 2, and files the slot in
    /// the free list.
    #[inline]
    fn refile(&mut self, i: u32) {
        let keep = self.free.len() < self.config.free_max;
        let buf = &mut self.slots[i as usize].buf;
        buf.reset();
        if !keep || buf.capacity() > self.config.keep_max {
            buf.recycle();
        }
        if !self.cached {
            self.cached = true;
            self.free.push_back(i);
        } else if keep {
            // Under the cached one.
            self.free.insert(self.free.len() - 1, i);
        } else {
            self.free.push_front(i);
        }
    }
}

/// Gives back what the current fiber took (rule 3), then runs the hook that
/// was installed before.
fn switch_hook() {
    let pending = STASH.with(|s| {
        s.try_borrow()
            .map(|s| s.taken_in_fibers > 0)
            .unwrap_or(false)
    });
    if pending {
        if let Some(me) = fiber::current() {
            with_stash(|s| {
                for i in 0..s.slots.len() {
                    if s.slots[i].owner == Owner::Taken(Some(me)) {
                        s.put(i as u32, None, true);
                    }
                }
            });
        }
    }
    if let Some(prev) = PREV_HOOK.with(Cell::get) {
        prev();
    }
}

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
