//! Why a stack could not be made, told apart by cause: the memory map limit,
//! a size past the address space, the kernel out of memory, or another
//! `mmap`/`mprotect` failure.

use std::fmt;
use std::io;

use super::GUARD_SIZE;

/// Why a stack could not be made.
#[derive(Debug)]
pub enum StackError {
    /// The process is at its limit of memory maps: another two-map stack
    /// would leave fewer than a reserve under `vm.max_map_count`, or the
    /// kernel refused a map (a stack's, or a new arena's) because the
    /// process has `vm.max_map_count` of them.
    MapLimit {
        /// The system's `vm.max_map_count`.
        max_map_count: usize,
        /// Stacks alive when creation was refused.
        live_stacks: usize,
    },
    /// The usable size asked for, rounded up to pages and with the guard
    /// added, does not fit in an address space (more than `isize::MAX`
    /// bytes).
    TooLarge {
        /// The usable size asked for, in bytes.
        size: usize,
    },
    /// The kernel had no memory or address space for the mapping (`mmap` or
    /// `mprotect` failed with `ENOMEM` while the process was below its map
    /// limit).
    OutOfMemory {
        /// Bytes of the mapping that failed, guard included.
        bytes: usize,
    },
    /// `mmap` or `mprotect` failed otherwise.
    Os(io::Error),
}

impl fmt::Display for StackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StackError::MapLimit {
                max_map_count,
                live_stacks,
            } => write!(
                f,
                "cannot allocate a fiber stack: the process is at its limit of memory maps, \
                 vm.max_map_count = {max_map_count} ({live_stacks} live fiber stacks, 2 maps \
                 each without stack arenas; raise it with `sysctl vm.max_map_count=N`)"
            ),
            StackError::TooLarge { size } => write!(
                f,
                "cannot allocate a fiber stack of {size} bytes: with its {GUARD_SIZE}-byte \
                 guard it is larger than an address space can hold"
            ),
            StackError::OutOfMemory { bytes } => write!(
                f,
                "cannot allocate a fiber stack: not enough memory or address space for a \
                 {bytes}-byte mapping (ENOMEM)"
            ),
            StackError::Os(e) => write!(f, "cannot allocate a fiber stack: {e}"),
        }
    }
}

impl std::error::Error for StackError {}
