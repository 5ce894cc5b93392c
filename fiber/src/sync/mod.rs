//! Waiting between the fibers of one thread: [`cond::Cond`] and
//! [`channel::Channel`], both on an intrusive list of waiter records that
//! live in the waiting fibers' frames (state rule 5).

pub mod channel;
pub mod cond;
mod waitlist;

use crate::scheduler::Handle;

/// A waiter record's link, with its fiber's handle.
type Link = waitlist::Link<Handle>;
/// A FIFO of waiting fibers' records.
type WaitList = waitlist::WaitList<Handle>;
