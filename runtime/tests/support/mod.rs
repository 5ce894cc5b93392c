//! Helpers shared by the I/O tests.
pub mod sock;
