//! The running context's thread-locals: a pointer to the running fiber's
//! record, the switch count, and the word of code outside fibers.
//!
//! The record ([`Running`]) lives in the fiber's slot; the scheduler points
//! the thread-local at it on every switch (one store, state rule 7), so the
//! hot paths that ask "which fiber runs" ([`current_ext`], [`fiber_word`],
//! [`crate::stack_left`]) and the stack overflow handler read it with one
//! thread-local load, no borrow of the scheduler, no lock and no
//! allocation.
//!
//! Every thread-local here is `const`-initialised and has no destructor,
//! so an access is a plain thread-local address: no lazy-initialisation
//! check and no destructor-state check on the switch path.

use std::cell::Cell;

/// What the overflow handler (and [`current_ext`]) needs to know about a
/// fiber while it runs, and its [`fiber_word`]; kept in its slot (the
/// words every C function of the bridge reads first, next to the slot's
/// switch fields: `repr(C)`).
#[repr(C)]
pub(crate) struct Running {
    /// The embedder's word.
    pub ext: usize,
    /// The fiber's [`fiber_word`].
    pub word: Cell<usize>,
    /// Guard start and end addresses.
    pub guard: (usize, usize),
    /// Usable stack bytes above the guard.
    pub stack_size: usize,
    pub fid: u64,
    /// The name's bytes (kept in step with the slot's name by `set_name`).
    pub name: (*const u8, usize),
}

thread_local! {
    /// The running fiber's record, or null outside fibers (state rule 7).
    static RUNNING: Cell<*const Running> = const { Cell::new(std::ptr::null()) };
    /// [`fiber_word`] outside fibers.
    static FIBER_WORD: Cell<usize> = const { Cell::new(0) };
    /// [`switch_count`], or 0 outside any fiber.
    static EPOCH: Cell<u64> = const { Cell::new(0) };
}

/// Sets a thread-local cell with a plain store (`LocalKey::set` goes
/// through an out-of-line lazy-initialisation path, even for `const` ones).
#[inline(always)]
fn tls_set<T: Copy + 'static>(key: &'static std::thread::LocalKey<Cell<T>>, value: T) {
    key.with(|c| c.set(value));
}

/// Reads a thread-local cell with a plain load (see [`tls_set`]).
#[inline(always)]
fn tls_get<T: Copy + 'static>(key: &'static std::thread::LocalKey<Cell<T>>) -> T {
    key.with(Cell::get)
}

/// Records the fiber switched to (null: none). The record must stay where
/// it is, unchanged but for its name, until another is set (state rule 7).
#[inline(always)]
pub(crate) fn set_running(r: *const Running) {
    RUNNING.with(|c| c.set(r));
}

/// The running fiber's record, if any.
#[inline(always)]
pub(crate) fn running() -> Option<&'static Running> {
    // SAFETY: state rule 7: a record set stays valid until it is replaced;
    // the reference is used at once by the callers.
    unsafe { RUNNING.with(Cell::get).as_ref() }
}

/// Calls `f` with the running fiber's id and name, read from its record
/// without the scheduler (so it works anywhere, scheduler code included:
/// a `tracing` layer sees events the scheduler emits); `None` outside
/// fibers.
pub fn with_running<R>(f: impl FnOnce(u64, &[u8]) -> R) -> Option<R> {
    let r = running()?;
    // SAFETY: the record's name points at the slot's name bytes, kept in
    // step by `set_name` (state rule 7) and alive while the fiber runs (this call).
    let name = unsafe { std::slice::from_raw_parts(r.name.0, r.name.1) };
    Some(f(r.fid, name))
}

/// Counts a switch in `switches` and publishes the count as
/// [`switch_count`] when the thread goes on in a fiber (`in_fiber`), 0 when
/// it leaves them.
#[inline(always)]
pub(crate) fn count_switch(switches: &mut u64, in_fiber: bool) {
    *switches += 1;
    tls_set(&EPOCH, if in_fiber { *switches } else { 0 });
}

/// A word of the running context (a fiber, or the thread outside fibers)
/// that the scheduler keeps per fiber: each fiber starts with 0, and the
/// value survives its switches (it lives in the fiber's record, so a switch
/// costs nothing for it). The Lua bridge counts its C function frames in
/// it.
#[inline]
pub fn fiber_word() -> usize {
    match running() {
        Some(r) => r.word.get(),
        None => tls_get(&FIBER_WORD),
    }
}

/// Sets the running context's [`fiber_word`].
#[inline]
pub fn set_fiber_word(word: usize) {
    match running() {
        Some(r) => r.word.set(word),
        None => tls_set(&FIBER_WORD, word),
    }
}

/// The embedder's word ([`ext`](crate::ext)) of the current fiber, or
/// `None` outside any fiber: a thread-local read and a load from the
/// fiber's record, for hot paths that map the running fiber to their own
/// record.
#[inline]
pub fn current_ext() -> Option<usize> {
    running().map(|r| r.ext)
}

/// Switches into and out of fibers so far on this thread, or `None` outside
/// any fiber: while it stays the same, the current fiber has not yielded
/// (Tarantool's cached event-loop time is kept on this). One thread-local
/// read.
#[inline]
pub fn switch_count() -> Option<u64> {
    let epoch = tls_get(&EPOCH);
    (epoch != 0).then_some(epoch)
}
