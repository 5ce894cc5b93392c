//! The timer heap: deadlines of blocked fibers, earliest first.
//!
//! Entries are never removed early: a wakeup bumps the fiber's wait token and
//! the entry is dropped when it reaches the top (state rule 4).

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

pub(crate) struct Timers {
    heap: BinaryHeap<Reverse<Timer>>,
    seq: u64,
}

impl Timers {
    pub const fn new() -> Timers {
        Timers {
            heap: BinaryHeap::new(),
            seq: 0,
        }
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
