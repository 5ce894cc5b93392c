//! An intrusive FIFO of blocked fibers' waiter records (state rule 5), for
//! [`Cond`](crate::Cond) and [`Channel`](crate::Channel).
//!
//! A record lives in the frame of the fiber that waits and starts with a
//! [`Link`]; the list holds raw pointers to those links. Linking, unlinking
//! and popping are a few pointer writes, with no allocation and no search:
//! a waiter that gives up (timeout, cancel) unlinks itself in place.

use std::cell::Cell;
use std::ptr;

/// The list's part of a waiter record: the fiber (its handle `H`) and its
/// neighbours.
pub(crate) struct Link<H> {
    /// Set when the record is linked.
    fiber: Cell<Option<H>>,
    /// The neighbours while linked (null at the ends).
    prev: Cell<*const Link<H>>,
    next: Cell<*const Link<H>>,
}

impl<H: Copy> Link<H> {
    pub const fn new() -> Link<H> {
        Link {
            fiber: Cell::new(None),
            prev: Cell::new(ptr::null()),
            next: Cell::new(ptr::null()),
        }
    }
}

/// A FIFO of linked records: `head` has waited longest. Generic over the
/// handle kept with each record (a fiber's, for the scheduler), so it
/// imports nothing of the scheduler.
pub(crate) struct WaitList<H> {
    head: Cell<*const Link<H>>,
    tail: Cell<*const Link<H>>,
}

impl<H: Copy> WaitList<H> {
    pub const fn new() -> WaitList<H> {
        WaitList {
            head: Cell::new(ptr::null()),
            tail: Cell::new(ptr::null()),
        }
    }

    /// Links `l`, the record of `fiber`, at the back. The record must stay
    /// where it is until it is unlinked or popped (state rule 5).
    #[inline(always)]
    pub fn push_back(&self, l: &Link<H>, fiber: H) {
        l.fiber.set(Some(fiber));
        let tail = self.tail.replace(l);
        l.prev.set(tail);
        l.next.set(ptr::null());
        if tail.is_null() {
            self.head.set(l);
        } else {
            // SAFETY: state rule 5: a linked record is valid.
            unsafe { (*tail).next.set(l) };
        }
    }

    /// Unlinks `l`, which is linked in this list.
    #[inline(always)]
    pub fn unlink(&self, l: &Link<H>) {
        let (prev, next) = (l.prev.get(), l.next.get());
        // SAFETY: state rule 5: the neighbours of a linked record are
        // linked, so valid.
        unsafe {
            match prev.is_null() {
                true => self.head.set(next),
                false => (*prev).next.set(next),
            }
            match next.is_null() {
                true => self.tail.set(prev),
                false => (*next).prev.set(prev),
            }
        }
    }

    /// Unlinks the record that has waited longest and returns its fiber
    /// with the record, which stays valid only while that fiber lives and
    /// has not run since (state rule 5).
    #[inline(always)]
    pub fn pop_front(&self) -> Option<(H, *const Link<H>)> {
        let l = self.head.get();
        // SAFETY: state rule 5: a linked record is valid.
        let l_ref = unsafe { l.as_ref()? };
        self.unlink(l_ref);
        let fiber = l_ref.fiber.get().expect("a linked record has its fiber");
        Some((fiber, l))
    }

    /// How many records are linked: a walk of the list (only reports
    /// need it).
    pub fn len(&self) -> usize {
        let mut n = 0;
        let mut l = self.head.get();
        while !l.is_null() {
            n += 1;
            // SAFETY: state rule 5: a linked record is valid.
            l = unsafe { (*l).next.get() };
        }
        n
    }

    pub fn is_empty(&self) -> bool {
        self.head.get().is_null()
    }
}

#[cfg(test)]
mod tests {
    use super::{Link, WaitList};

    #[test]
    fn records_leave_in_wait_order_and_unlink_from_anywhere() {
        let list = WaitList::new();
        let links: Vec<Link<u32>> = (0..5).map(|_| Link::new()).collect();
        assert!(list.is_empty());
        for (i, l) in links.iter().enumerate() {
            list.push_back(l, i as u32);
        }
        assert_eq!(list.len(), 5);
        // From the middle, the tail and the head.
        list.unlink(&links[2]);
        list.unlink(&links[4]);
        list.unlink(&links[0]);
        assert_eq!(list.len(), 2);
        // Linked again at the back, after the others.
        list.push_back(&links[0], 0);
        let mut order = Vec::new();
        while let Some((fiber, l)) = list.pop_front() {
            assert!(std::ptr::eq(l, &links[fiber as usize]));
            order.push(fiber);
        }
        assert_eq!(order, [1, 3, 0]);
        assert!(list.is_empty());
        assert_eq!(list.len(), 0);
    }

    #[test]
    fn the_only_record_leaves_an_empty_list() {
        let list = WaitList::new();
        let l = Link::new();
        list.push_back(&l, 7u32);
        list.unlink(&l);
        assert!(list.is_empty());
        assert!(list.pop_front().is_none());
        list.push_back(&l, 8);
        assert_eq!(list.pop_front().map(|(f, _)| f), Some(8));
        assert!(list.is_empty());
    }
}
