//! A fiber's record: its status and flags, each with when it is set and
//! cleared, and its name (bytes, as Tarantool keeps them: not necessarily
//! UTF-8).

use std::borrow::Cow;

use corosensei::{Coroutine, Yielder};

use crate::context::Running;
use crate::stack::FiberStack;

/// Longest fiber name, in bytes (Tarantool's `FIBER_NAME_MAX` less the NUL).
pub const MAX_NAME_LEN: usize = 255;

/// The coroutine type of every fiber: resumed with its flags; yields, when
/// it made its resumer current again itself (state rule 6), that resumer's
/// flags.
pub(crate) type Coro = Coroutine<Resume, Option<Resume>, (), FiberStack>;

/// A fiber's yielder (state rule 2).
pub(crate) type FiberYielder = Yielder<Resume, Option<Resume>>;

/// What a fiber is resumed with: its slot's flags, read by the resumer in
/// the borrow that switches to it, so the fiber needs no borrow of its own
/// to learn why it woke.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Resume {
    /// The slot's `timed_out`.
    pub timed_out: bool,
    /// The slot's `cancelled`.
    pub cancelled: bool,
}

/// Where a fiber is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// In the ready queue. Set by a wakeup or a yield; cleared when switched to.
    Ready,
    /// The current fiber. Set on switch-in; cleared on switch-out.
    Running,
    /// Waiting for a wakeup or a timer. Set by the fiber before it blocks.
    Suspended,
    /// Waiting for a fiber it started with `spawn_now` to yield or end: it
    /// is resumed by that return, never by a wakeup (state rule 3).
    Calling,
    /// The function has returned. A joinable fiber stays in this state, with
    /// its slot, until it is joined.
    Dead,
}

impl Status {
    /// The name Tarantool's `fiber.status()` gives: "running", "suspended"
    /// or "dead".
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Dead => "dead",
            Status::Ready | Status::Suspended | Status::Calling => "suspended",
        }
    }
}

/// One fiber's slot in the scheduler's `Slots`.
///
/// Laid out for the switch (`repr(C)`; the assertions below keep it so): in
/// its entry, which starts on a cache line, the first line holds the id,
/// the status and flags, the resumer, the switch count, the yielder and the
/// running record's embedder word and fiber word (what switching and the
/// bridge's C functions read and write); the coroutine (whose stack pointer
/// and stack top `resume` reads) fills the third line. A switch touches two
/// lines of the slot, wherever the rest of the fiber's state lies.
#[repr(C)]
pub(crate) struct Slot {
    pub status: Status,
    /// Set by `cancel`, never cleared (the flag is sticky).
    pub cancelled: bool,
    /// Set and cleared by `set_joinable`; read when the function returns.
    pub joinable: bool,
    /// Set when a timer made the fiber ready; cleared when it blocks again.
    pub timed_out: bool,
    /// Who resumed the fiber while it runs: the fiber that called
    /// `spawn_now`, or `None` for the scheduler loop.
    pub resumer: Option<Handle>,
    /// Context switches into this fiber.
    pub csw: u64,
    /// State rule 2.
    pub yielder: *const FiberYielder,
    /// The fiber's id (also the generation tag of handles to this slot),
    /// what the stack overflow handler reports, and the embedder's word
    /// (`ext`; the Lua bridge keeps its index there): the thread-local
    /// record of the running fiber points here (state rule 7).
    pub running: Running,
    /// State rule 4.
    pub wait: u64,
    /// State rule 1. `None` once the fiber has ended.
    pub coro: Option<Coro>,
    /// The fiber blocked in `join` on this one, if any.
    pub joiner: Option<Handle>,
    pub name: Cow<'static, [u8]>,
}

// The layout the doc of `Slot` describes, with the entry's 8-byte id in
// front (`Slots`' entries are cache-line aligned).
const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(size_of::<Option<Slot>>() == size_of::<Slot>());
    assert!(8 + offset_of!(Slot, running) + offset_of!(Running, word) + 8 <= 64);
    assert!(8 + offset_of!(Slot, yielder) + 8 <= 64);
    assert!((8 + offset_of!(Slot, coro)) % 64 == 0);
    assert!(size_of::<Option<Coro>>() == 64);
};

/// A fiber's handle: its slot's entry, tagged with the fiber id (see
/// [`super::slots`]).
pub(crate) type Handle = super::slots::Handle<Slot>;

/// Cuts a name to at most [`MAX_NAME_LEN`] bytes (Tarantool's
/// `{truncate = true}`: by bytes, so a UTF-8 character may be cut).
pub fn truncate(name: &[u8]) -> &[u8] {
    &name[..name.len().min(MAX_NAME_LEN)]
}

/// A fiber name as text, for logs, `tracing` fields and error messages:
/// the bytes as they are where they are UTF-8, each other byte as `\xNN`,
/// so that no two names print the same (a lossy conversion would print
/// `"\xff"` and `"\xfe"` both as `U+FFFD`).
///
/// ```
/// use luafiber_fiber::DisplayName;
/// assert_eq!(DisplayName(b"\xff\xfeabc").to_string(), "\\xff\\xfeabc");
/// assert_eq!(DisplayName("né".as_bytes()).to_string(), "né");
/// ```
#[derive(Clone, Copy, Debug)]
pub struct DisplayName<'a>(pub &'a [u8]);

impl std::fmt::Display for DisplayName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for chunk in self.0.utf8_chunks() {
            f.write_str(chunk.valid())?;
            for b in chunk.invalid() {
                write!(f, "\\x{b:02x}")?;
            }
        }
        Ok(())
    }
}
