//! The cord's value slots: where a value put into a channel lives until a
//! reader takes it, reachable for the GC.
//!
//! Two value tables hold them: `VALS`, whose array part holds slots
//! `1..=FAST_SLOTS` (every one of them set from the start, to `false` when
//! free, so storing a value never allocates and no other key is ever stored
//! there), and `OVER`, a plain table for the slots above. `put`, `get` and
//! `__gc` of channels are C closures over both (upvalues 1 and 2).

use std::cell::RefCell;
use std::ffi::c_int;

use crate::raw::context::{Part, RegRef};
use crate::raw::Stack;

/// Slots of the value table `VALS`, all in its array part; slots above are
/// in `OVER`.
pub(super) const FAST_SLOTS: c_int = 1024;

/// The cord's free value slots (1-based): those of `VALS` (up to
/// [`FAST_SLOTS`]) and those of `OVER`.
struct Slots {
    fast: Vec<c_int>,
    over: Vec<c_int>,
    next: c_int,
}

impl Slots {
    /// A free slot of `VALS`, if any is left.
    fn take_fast(&mut self) -> Option<c_int> {
        if let Some(s) = self.fast.pop() {
            return Some(s);
        }
        (self.next <= FAST_SLOTS).then(|| {
            self.next += 1;
            self.next - 1
        })
    }

    /// A free slot, of `VALS` while one is left.
    fn take(&mut self) -> c_int {
        self.take_fast()
            .or_else(|| self.over.pop())
            .unwrap_or_else(|| {
                self.next += 1;
                self.next - 1
            })
    }

    fn give(&mut self, s: c_int) {
        if s <= FAST_SLOTS {
            self.fast.push(s);
        } else {
            self.over.push(s);
        }
    }
}

/// Runs `f` on this thread's free slots.
#[inline(always)]
fn with_slots<R>(f: impl FnOnce(&mut Slots) -> R) -> R {
    ValueSlots::with(|s| f(&mut s.slots.borrow_mut()))
}

/// Per-cord state of the value slots (a part of the cord context).
pub(crate) struct ValueSlots {
    slots: RefCell<Slots>,
    /// Registry ref of `VALS`.
    vals: RegRef,
    /// Registry ref of `OVER`.
    over: RegRef,
}

impl Default for ValueSlots {
    fn default() -> ValueSlots {
        ValueSlots {
            slots: RefCell::new(Slots {
                fast: Vec::new(),
                over: Vec::new(),
                next: 1,
            }),
            vals: RegRef::default(),
            over: RegRef::default(),
        }
    }
}

/// The pseudo-index of the value table that holds slot `s`: `put`, `get`
/// and `__gc` are C closures over `VALS` and `OVER`.
fn vals(s: c_int) -> c_int {
    Stack::upvalue(if s <= FAST_SLOTS { 1 } else { 2 })
}

/// Moves the value on top of `st` into a free slot; returns the slot.
///
/// # Panics
///
/// Panics when the running C function is no closure over the value tables,
/// or the stack is empty.
pub(super) fn store(st: &mut Stack) -> c_int {
    let s = with_slots(Slots::take);
    // A bridge C function's allocation does not fail (raw rule 3).
    st.rawseti(vals(s), s.into());
    s
}

/// Pushes the value at slot `s` (when `push`) and frees the slot.
///
/// # Panics
///
/// Panics when the running C function is no closure over the value tables.
pub(super) fn release(st: &mut Stack, s: c_int, push: bool) {
    if push {
        st.rawgeti(vals(s), s);
    }
    // Writing to a key that exists does not allocate.
    if s <= FAST_SLOTS {
        st.push_bool(false);
    } else {
        st.push_nil();
    }
    st.rawseti(vals(s), s.into());
    with_slots(|slots| slots.give(s));
}

/// A free slot of `VALS`, if any is left.
#[inline(always)]
pub(super) fn take_fast() -> Option<c_int> {
    with_slots(Slots::take_fast)
}

/// Frees slot `s` (its value was read and cleared, or never stored).
#[inline(always)]
pub(super) fn give(s: c_int) {
    with_slots(|slots| slots.give(s));
}

/// Makes `VALS` and `OVER`; once per state, at setup.
pub(super) fn init(st: &mut Stack) {
    let vals = st.new_table(FAST_SLOTS, 0);
    for s in 1..=FAST_SLOTS {
        st.push_bool(false);
        st.rawseti(vals, s.into());
    }
    let vals = st.make_ref();
    st.new_table(0, 0);
    let over = st.make_ref();
    ValueSlots::with(|t| {
        t.vals.set(vals);
        t.over.set(over);
    });
}

/// Pushes `VALS` and `OVER`, the upvalues of the closures over them.
pub(super) fn push_tables(st: &mut Stack) {
    let (vals, over) = ValueSlots::with(|t| (t.vals.get(), t.over.get()));
    st.push_ref(vals);
    st.push_ref(over);
}
