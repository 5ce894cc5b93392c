//! A FIFO of waiters keyed by a growing ticket: push at the back, pop at the
//! front, and remove by ticket (a binary search) for a waiter that gives up.
//! Cheaper than a `BTreeMap` on the hot path, where waiters are popped by
//! whoever wakes them and the remove finds nothing.

use std::collections::VecDeque;

#[derive(Debug)]
pub(crate) struct TicketQueue<V> {
    items: VecDeque<(u64, V)>,
}

impl<V> Default for TicketQueue<V> {
    fn default() -> Self {
        TicketQueue {
            items: VecDeque::new(),
        }
    }
}

impl<V> TicketQueue<V> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends `v`; `ticket` must be greater than every ticket queued.
    pub fn insert(&mut self, ticket: u64, v: V) {
        debug_assert!(self.items.back().is_none_or(|(t, _)| *t < ticket));
        self.items.push_back((ticket, v));
    }

    pub fn pop_first(&mut self) -> Option<(u64, V)> {
        self.items.pop_front()
    }

    pub fn remove(&mut self, ticket: &u64) -> Option<V> {
        let i = self.items.binary_search_by_key(ticket, |(t, _)| *t).ok()?;
        self.items.remove(i).map(|(_, v)| v)
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn into_values(self) -> impl Iterator<Item = V> {
        self.items.into_iter().map(|(_, v)| v)
    }
}
