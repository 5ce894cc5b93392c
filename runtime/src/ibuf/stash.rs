//! The cord's stash of reusable buffers (rules in the parent module's
//! doc): `cord_ibuf_take` / `cord_ibuf_put` / `cord_ibuf_drop`, the loans
//! of `with_cord_ibuf` and `with_cord_scratch`, and the switch hook that
//! takes back what a fiber held.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;

use luafiber_fiber::{self as fiber, FiberId};

use super::{Ibuf, CORD_IBUF_START_CAPACITY};

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
pub(super) fn count_memory(new: usize, old: usize) {
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
