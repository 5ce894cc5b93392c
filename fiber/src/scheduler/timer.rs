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

/// One deadline: whose (`handle`, a fiber's for the scheduler) and for
/// which of its waits (`token`).
pub(crate) struct Timer<H> {
    pub deadline: Instant,
    /// Insertion order: equal deadlines fire first in, first out.
    seq: u64,
    pub handle: H,
    pub token: u64,
}

impl<H> PartialEq for Timer<H> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl<H> Eq for Timer<H> {}
impl<H> PartialOrd for Timer<H> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<H> Ord for Timer<H> {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.deadline, self.seq).cmp(&(other.deadline, other.seq))
    }
}

/// The least pruning mark: smaller heaps are never pruned.
const MIN_PRUNE_MARK: usize = 64;

/// The heap; a leaf, generic over the handle it keeps with each deadline.
pub(crate) struct Timers<H> {
    heap: BinaryHeap<Reverse<Timer<H>>>,
    seq: u64,
    /// The length at which the next push prunes first.
    prune_mark: usize,
}

impl<H> Timers<H> {
    pub const fn new() -> Timers<H> {
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
    pub fn prune(&mut self, live: impl FnMut(&Timer<H>) -> bool) {
        let mut live = live;
        self.heap.retain(|t| live(&t.0));
        self.prune_mark = (2 * self.heap.len()).max(MIN_PRUNE_MARK);
    }

    pub fn push(&mut self, deadline: Instant, handle: H, token: u64) {
        self.seq += 1;
        self.heap.push(Reverse(Timer {
            deadline,
            seq: self.seq,
            handle,
            token,
        }));
    }

    pub fn peek(&self) -> Option<&Timer<H>> {
        self.heap.peek().map(|r| &r.0)
    }

    pub fn pop(&mut self) -> Option<Timer<H>> {
        self.heap.pop().map(|r| r.0)
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }
}

#[cfg(test)]
mod tests {
    use super::Timers;
    use std::time::{Duration, Instant};

    #[test]
    fn timers_pop_earliest_first_and_equal_deadlines_in_push_order() {
        let now = Instant::now();
        let at = |ms| now + Duration::from_millis(ms);
        let mut t = Timers::new();
        for (ms, h) in [(30, 'c'), (10, 'a'), (20, 'b'), (10, 'x'), (20, 'y')] {
            t.push(at(ms), h, 0);
        }
        let order: Vec<char> = std::iter::from_fn(|| t.pop().map(|t| t.handle)).collect();
        assert_eq!(order, ['a', 'x', 'b', 'y', 'c']);
        assert_eq!(t.len(), 0);
        assert!(t.peek().is_none());
    }

    #[test]
    fn pruning_keeps_live_entries_and_doubles_the_mark() {
        let now = Instant::now();
        let mut t = Timers::new();
        let mut pushes = 0;
        while !t.crowded() {
            t.push(now, pushes, pushes as u64);
            pushes += 1;
        }
        assert_eq!(pushes, 64, "the least pruning mark");
        // Every third entry is live.
        t.prune(|e| e.token % 3 == 0);
        assert_eq!(t.len(), 22);
        assert!(!t.crowded(), "the mark is 64 again, not 44");
        for i in 0..42 {
            t.push(now, 100 + i, 1);
        }
        assert!(t.crowded());
        t.prune(|e| e.token != 1 || e.handle < 118);
        assert_eq!(t.len(), 40);
        for i in 0..40 {
            assert!(!t.crowded());
            t.push(now, 200 + i, 1);
        }
        assert!(t.crowded(), "the mark is twice what was left: 80");
        let mut seen = Vec::new();
        while let Some(e) = t.pop() {
            seen.push(e.handle);
        }
        // Equal deadlines: push order, pruning notwithstanding.
        let mut sorted = seen.clone();
        sorted.sort();
        assert_eq!(seen, sorted);
    }
}
