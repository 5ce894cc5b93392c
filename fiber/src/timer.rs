//! The timer heap: deadlines of blocked fibers, earliest first.
//!
//! A wakeup does not look for its fiber's entry: it bumps the fiber's wait
//! token, and the stale entry is dropped when it reaches the top (state rule
//! 4), or earlier, when stale entries could outnumber live ones: every push
//! that finds the heap at its pruning mark drops them all (`retain`), and
//! the mark becomes twice what is left. So a loop of timed waits that are
//! woken early (`cond:wait(10)` signalled at once) keeps the heap near the
//! number of fibers that wait, in O(1) amortized per push.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::time::Instant;

use crate::state::Handle;

pub(crate) struct Timer {
    pub deadline: Instant,
    /// Insertion order: equal deadlines fire first in, first out.
    seq: u64,
    pub handle: Handle,
    pub token: u64,
}

impl PartialEq for Timer {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Timer {}
impl PartialOrd for Timer {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Timer {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.deadline, self.seq).cmp(&(other.deadline, other.seq))
    }
}

/// The least pruning mark: smaller heaps are never pruned.
const MIN_PRUNE_MARK: usize = 64;

pub(crate) struct Timers {
    heap: BinaryHeap<Reverse<Timer>>,
    seq: u64,
    /// The length at which the next push prunes first.
    prune_mark: usize,
}

impl Timers {
    pub const fn new() -> Timers {
        Timers {
            heap: BinaryHeap::new(),
            seq: 0,
            prune_mark: MIN_PRUNE_MARK,
        }
    }

    /// Whether the next push should [`Timers::prune`] first.
    #[inline]
    pub fn crowded(&self) -> bool {
        self.heap.len() >= self.prune_mark
    }

    /// Drops every entry for which `live` is false; the next pruning mark is
    /// twice what is left.
    pub fn prune(&mut self, live: impl FnMut(&Timer) -> bool) {
        let mut live = live;
        self.heap.retain(|t| live(&t.0));
        self.prune_mark = (2 * self.heap.len()).max(MIN_PRUNE_MARK);
    }

    pub fn push(&mut self, deadline: Instant, handle: Handle, token: u64) {
        self.seq += 1;
        self.heap.push(Reverse(Timer {
            deadline,
            seq: self.seq,
            handle,
            token,
        }));
    }

    pub fn peek(&self) -> Option<&Timer> {
        self.heap.peek().map(|r| &r.0)
    }

    pub fn pop(&mut self) -> Option<Timer> {
        self.heap.pop().map(|r| r.0)
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }
}
