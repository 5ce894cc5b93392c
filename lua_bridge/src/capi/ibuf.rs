//! `struct ibuf` as Tarantool's C code sees it (`small/ibuf.h`: pointers
//! `buf <= rpos <= wpos <= epos`, which C modules read and move
//! themselves), its functions (`ibuf_create`, `ibuf_destroy`,
//! `ibuf_reinit`, `ibuf_reserve_slow`, `box_ibuf_*`), and the cord's stash
//! of them (`cord_ibuf_take` / `cord_ibuf_put` / `cord_ibuf_drop`).
//!
//! The runtime's [`luafiber_runtime::ibuf::Ibuf`] keeps offsets, not
//! pointers, so C cannot share it: these buffers are their own, and their
//! stash keeps the rules of the runtime's
//! (a take hands out an empty buffer; a put keeps the memory, up to
//! [`StashConfig`] limits; a buffer taken in a fiber comes back by itself
//! when the fiber yields or ends, as in Tarantool).
//!
//! A buffer's memory is a block of the Rust allocator (`buf..epos`, made
//! by [`CIbuf::reserve`] alone): C moves `rpos` and `wpos` within it, but
//! never `buf` nor `epos`, nor frees it (Tarantool's contract: its memory
//! is a slab's). Cited as "ibuf rule".

use std::cell::{Cell, RefCell};
use std::ffi::{c_char, c_void};
use std::mem::MaybeUninit;

use luafiber_fiber::{self as fiber, FiberId};
use luafiber_runtime::ibuf::{stash_config, StashConfig, CORD_IBUF_START_CAPACITY};

use super::{diag, guard};
use crate::raw::context::Part;
use crate::raw::error::ErrorKind;

/// Tarantool's `struct ibuf` (`box_ibuf_t`), field for field.
#[repr(C)]
pub struct CIbuf {
    /// Tarantool's slab cache; unused here (NULL).
    pub slabc: *mut c_void,
    /// Start of the memory (NULL when there is none).
    pub buf: *mut c_char,
    /// Start of the unread data.
    pub rpos: *mut c_char,
    /// End of the unread data, start of the room to write.
    pub wpos: *mut c_char,
    /// End of the memory.
    pub epos: *mut c_char,
    /// The capacity of the first growth, in bytes.
    pub start_capacity: usize,
}

impl CIbuf {
    const fn empty(start_capacity: usize) -> CIbuf {
        let null = std::ptr::null_mut();
        CIbuf {
            slabc: null as *mut c_void,
            buf: null,
            rpos: null,
            wpos: null,
            epos: null,
            start_capacity,
        }
    }

    fn capacity(&self) -> usize {
        self.epos as usize - self.buf as usize
    }

    /// Takes the memory out as the block it is (none when `buf` is NULL),
    /// leaving the buffer without memory.
    fn take_block(&mut self) -> Option<Block> {
        if self.buf.is_null() {
            return None;
        }
        let block = std::ptr::slice_from_raw_parts_mut(self.buf.cast(), self.capacity());
        self.buf = std::ptr::null_mut();
        self.rpos = std::ptr::null_mut();
        self.wpos = std::ptr::null_mut();
        self.epos = std::ptr::null_mut();
        // SAFETY: `buf..epos` is a block from `Box::into_raw` in `reserve`,
        // of that length (ibuf rule); the pointers to it are cleared, so it
        // is taken once.
        Some(unsafe { Box::from_raw(block) })
    }

    fn free_memory(&mut self) {
        drop(self.take_block());
    }

    /// Makes room for `size` bytes at `wpos`, keeping the unread data;
    /// `None` when memory cannot be had.
    ///
    /// # Panics
    ///
    /// Panics when C broke `buf <= rpos <= wpos <= epos`.
    fn reserve(&mut self, size: usize) -> Option<*mut c_char> {
        if self.epos as usize - self.wpos as usize >= size {
            return Some(self.wpos);
        }
        let start = self.rpos as usize - self.buf as usize;
        let used = self.wpos as usize - self.rpos as usize;
        let cap = self.capacity();
        let need = used.checked_add(size)?;
        let block = if used <= cap / 2 && need <= cap {
            let mut block = self.take_block()?;
            block.copy_within(start..start + used, 0);
            block
        } else {
            let mut new_cap = self.start_capacity.max(cap).max(1);
            while new_cap < need {
                new_cap = new_cap.checked_mul(2)?;
            }
            let mut block = alloc(new_cap)?;
            if let Some(old) = self.take_block() {
                block[..used].copy_from_slice(&old[start..start + used]);
            }
            block
        };
        let cap = block.len();
        let buf = Box::into_raw(block).cast::<c_char>();
        self.buf = buf;
        self.rpos = buf;
        self.wpos = buf.wrapping_add(used);
        self.epos = buf.wrapping_add(cap);
        Some(self.wpos)
    }
}

/// A buffer's memory (ibuf rule).
type Block = Box<[MaybeUninit<u8>]>;

/// A new block of `n` bytes; `None` when the allocator has none.
fn alloc(n: usize) -> Option<Block> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).ok()?;
    v.resize(n, MaybeUninit::uninit());
    Some(v.into_boxed_slice())
}

capi! {
    /// `ibuf_create(ibuf, slabc, start_capacity)`: an empty buffer with no
    /// memory yet.
    ///
    /// # Safety
    ///
    /// `ibuf` is NULL or points to writable room for a `struct ibuf`.
    fn ibuf_create(
        ibuf: *mut MaybeUninit<CIbuf> => Option<&mut MaybeUninit<CIbuf>>,
        slabc: *mut c_void,
        start_capacity: usize,
    ) {
        if let Some(ibuf) = ibuf {
            ibuf.write(CIbuf {
                slabc,
                ..CIbuf::empty(start_capacity)
            });
        }
    }
}

capi! {
    /// `ibuf_destroy(ibuf)`: frees the buffer's memory.
    ///
    /// # Safety
    ///
    /// `ibuf` is NULL or was set up by [`ibuf_create`] (or taken from the
    /// cord), and only C code uses it.
    fn ibuf_destroy(ibuf: *mut CIbuf => Option<&mut CIbuf>) {
        if let Some(b) = ibuf {
            b.free_memory();
        }
    }
}

capi! {
    /// `ibuf_reinit(ibuf)`: frees the memory, keeping the buffer usable.
    ///
    /// # Safety
    ///
    /// As [`ibuf_destroy`].
    fn ibuf_reinit(ibuf: *mut CIbuf => Option<&mut CIbuf>) {
        if let Some(b) = ibuf {
            b.free_memory();
        }
    }
}

capi! {
    /// `ibuf_reserve_slow(ibuf, size)`: room for `size` bytes at `wpos`
    /// (the unread data may move); returns `wpos`, or NULL (with an
    /// `OutOfMemory` error in the diagnostics).
    ///
    /// # Safety
    ///
    /// As [`ibuf_destroy`], with `buf <= rpos <= wpos <= epos`.
    fn ibuf_reserve_slow(ibuf: *mut CIbuf => Option<&mut CIbuf>, size: usize) -> *mut c_void {
        reserve(ibuf, size)
    }
}

capi! {
    /// `box_ibuf_reserve(ibuf, size)`: as [`ibuf_reserve_slow`].
    ///
    /// # Safety
    ///
    /// As [`ibuf_reserve_slow`].
    fn box_ibuf_reserve(ibuf: *mut CIbuf => Option<&mut CIbuf>, size: usize) -> *mut c_void {
        reserve(ibuf, size)
    }
}

/// [`ibuf_reserve_slow`].
fn reserve(ibuf: Option<&mut CIbuf>, size: usize) -> *mut c_void {
    let Some(b) = ibuf else {
        return std::ptr::null_mut();
    };
    match guard("ibuf_reserve", None, || b.reserve(size)) {
        Some(p) => p.cast(),
        None => {
            diag::set(
                ErrorKind::OutOfMemory,
                format!("Failed to allocate {size} bytes in ibuf"),
            );
            std::ptr::null_mut()
        }
    }
}

/// A place C is told where one of a buffer's pointers is.
type Out<'a> = Option<&'a mut *mut *mut c_char>;

capi! {
    /// `box_ibuf_read_range(ibuf, &rpos, &wpos)`: the addresses of the
    /// buffer's `rpos` and `wpos` fields.
    ///
    /// # Safety
    ///
    /// As [`ibuf_destroy`]; the out-pointers are NULL or writable.
    fn box_ibuf_read_range(
        ibuf: *mut CIbuf => Option<&mut CIbuf>,
        rpos: *mut *mut *mut c_char => Out,
        wpos: *mut *mut *mut c_char => Out,
    ) {
        if let (Some(b), Some(rpos), Some(wpos)) = (ibuf, rpos, wpos) {
            *rpos = &raw mut b.rpos;
            *wpos = &raw mut b.wpos;
        }
    }
}

capi! {
    /// `box_ibuf_write_range(ibuf, &wpos, &end)`: the addresses of the
    /// buffer's `wpos` and `epos` fields.
    ///
    /// # Safety
    ///
    /// As [`box_ibuf_read_range`].
    fn box_ibuf_write_range(
        ibuf: *mut CIbuf => Option<&mut CIbuf>,
        wpos: *mut *mut *mut c_char => Out,
        end: *mut *mut *mut c_char => Out,
    ) {
        if let (Some(b), Some(wpos), Some(end)) = (ibuf, wpos, end) {
            *wpos = &raw mut b.wpos;
            *end = &raw mut b.epos;
        }
    }
}

/// The cord's C buffers: free ones, and taken ones with the fiber that took
/// them (`None`: outside any fiber, never given back by itself).
#[derive(Default)]
// Boxed: C holds the buffers' addresses while they move between the lists.
#[allow(clippy::vec_box)]
struct Stash {
    free: Vec<Box<CIbuf>>,
    taken: Vec<(Box<CIbuf>, Option<FiberId>)>,
    hooked: bool,
    /// Whether the last of `free` is the cached buffer (see `put`).
    cached: bool,
}

impl Stash {
    /// Gives back taken buffer number `i`: emptied, its memory kept within
    /// the limits of `config`. The first one put while none is cached is
    /// the cached one, taken first (master's `cord_buf_put` keeps one and
    /// deletes the others: here they are kept under it, up to `free_max`
    /// free buffers, and freed whole beyond).
    fn put(&mut self, i: usize, config: StashConfig) {
        let (mut b, _) = self.taken.swap_remove(i);
        b.rpos = b.buf;
        b.wpos = b.buf;
        if b.capacity() > config.keep_max {
            b.free_memory();
        }
        if !self.cached {
            self.cached = true;
            self.free.push(b);
        } else if self.free.len() < config.free_max {
            let under = self.free.len() - 1;
            self.free.insert(under, b);
        } else {
            b.free_memory();
        }
    }
}

/// Per-cord state of the C API's buffers (a part of the cord context):
/// the stash, and the switch hook that was there before ours. Dropping it
/// (with its runtime) takes our hook off the scheduler.
#[derive(Default)]
pub(crate) struct CordStash {
    stash: RefCell<Stash>,
    prev_hook: Cell<Option<fn()>>,
}

impl Drop for CordStash {
    fn drop(&mut self) {
        if !self.stash.get_mut().hooked {
            return;
        }
        let ours: fn() = switch_hook;
        match fiber::set_switch_hook(self.prev_hook.get()) {
            Some(h) if h as usize == ours as usize => {}
            // Another hook went on top of ours: it stays (ours, called
            // later with no context, does nothing).
            other => {
                fiber::set_switch_hook(other);
            }
        }
    }
}

/// `cord_ibuf_take()`: an empty buffer of the cord (one that came back
/// keeps its memory). Inside a fiber it comes back by itself when the fiber
/// yields or ends.
#[no_mangle]
pub extern "C" fn cord_ibuf_take() -> *mut CIbuf {
    guard("cord_ibuf_take", std::ptr::null_mut(), || {
        let owner = fiber::current();
        CordStash::with(|c| {
            let mut s = c.stash.borrow_mut();
            if !s.hooked {
                s.hooked = true;
                c.prev_hook.set(fiber::set_switch_hook(Some(switch_hook)));
            }
            s.cached = false;
            let mut b = s.free.pop().unwrap_or_else(|| {
                let start = stash_config().start_capacity.max(CORD_IBUF_START_CAPACITY);
                Box::new(CIbuf::empty(start))
            });
            let p = &raw mut *b;
            s.taken.push((b, owner));
            p
        })
    })
}

/// Gives back the taken buffer `ibuf`, freeing its memory first when
/// `drop_memory`; a buffer not taken (given back already) is left alone.
fn give_back(ibuf: *mut CIbuf, drop_memory: bool) {
    CordStash::with(|c| {
        let mut s = c.stash.borrow_mut();
        if let Some(i) = s.taken.iter().position(|(b, _)| std::ptr::eq(&**b, ibuf)) {
            if drop_memory {
                s.taken[i].0.free_memory();
            }
            s.put(i, stash_config());
        }
    });
}

/// `cord_ibuf_put(ibuf)`: gives a taken buffer back, emptied, keeping its
/// memory.
#[no_mangle]
pub extern "C" fn cord_ibuf_put(ibuf: *mut CIbuf) {
    guard("cord_ibuf_put", (), || give_back(ibuf, false));
}

/// `cord_ibuf_drop(ibuf)`: frees a taken buffer's memory and gives it back.
#[no_mangle]
pub extern "C" fn cord_ibuf_drop(ibuf: *mut CIbuf) {
    guard("cord_ibuf_drop", (), || give_back(ibuf, true));
}

/// Gives back what the current fiber took, then runs the hook installed
/// before.
fn switch_hook() {
    let me = fiber::current();
    let prev = CordStash::try_with(|c| {
        let Some(me) = me else {
            return c.prev_hook.get();
        };
        if let Ok(mut s) = c.stash.try_borrow_mut() {
            let config = stash_config();
            let mut i = 0;
            while i < s.taken.len() {
                match s.taken[i].1 == Some(me) {
                    true => s.put(i, config),
                    false => i += 1,
                }
            }
        }
        c.prev_hook.get()
    })
    .flatten();
    if let Some(prev) = prev {
        prev();
    }
}

impl Drop for Stash {
    fn drop(&mut self) {
        for b in &mut self.free {
            b.free_memory();
        }
        for (b, _) in &mut self.taken {
            b.free_memory();
        }
    }
}
