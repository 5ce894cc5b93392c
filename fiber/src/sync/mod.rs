//! Waiting between the fibers of one thread: [`cond::Cond`] and
//! [`channel::Channel`], both on an intrusive list of waiter records that
//! live in the waiting fibers' frames (state rule 5).

pub mod channel;
pub mod cond;
mod waitlist;
