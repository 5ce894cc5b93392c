//! A bounded pool of fiber stacks of one size.
//!
//! A pooled stack is about 50 times cheaper than a fresh `mmap`, `mprotect`,
//! page faults and `munmap`. The pool holds at most `max` stacks. A stack
//! whose fiber went deeper than [`KEEP_BYTES`] gives the pages below that
//! back to the kernel (`madvise(MADV_DONTNEED)`) as it is pooled. The first
//! `hot` stacks keep their top pages; those pooled beyond the `hot`
//! watermark give theirs back at the next [`StackPool::trim`], which the
//! scheduler calls when no fiber is ready. So a burst of many fibers does not
//! keep their memory once the thread goes idle, while fibers created again
//! at once (rounds of many short fibers) reuse stacks without a page fault.

use crate::stack::{FiberStack, StackError};

/// Bytes at the top of a stack that stay resident when a stack is released
/// into the pool past its watermark.
pub const KEEP_BYTES: usize = 16 * 1024;

/// Sizes of the stack pool.
#[derive(Clone, Copy, Debug)]
pub struct StackPoolConfig {
    /// Usable size of every pooled stack, in bytes.
    pub stack_size: usize,
    /// Most stacks kept; 0 switches the pool off (every fiber maps a fresh
    /// stack and unmaps it at its end).
    pub max: usize,
    /// Stacks kept with their top pages; stacks pooled beyond this count
    /// give all their pages back when the thread next has no fiber ready
    /// ([`StackPool::trim`]).
    pub hot: usize,
}

impl Default for StackPoolConfig {
    fn default() -> Self {
        StackPoolConfig {
            stack_size: crate::stack::DEFAULT_STACK_SIZE,
            max: 16 * 1024,
            hot: 1024,
        }
    }
}

/// The pool; one per scheduler (per thread).
pub struct StackPool {
    config: StackPoolConfig,
    /// Each stack with whether its top pages may still be resident past the
    /// watermark (given back by `trim`).
    free: Vec<(FiberStack, bool)>,
    /// Some stack past the watermark was pooled since the last `trim`.
    untrimmed: bool,
}

impl StackPool {
    /// An empty pool.
    pub fn new(mut config: StackPoolConfig) -> StackPool {
        config.stack_size = crate::stack::usable_size(config.stack_size);
        StackPool {
            config,
            free: Vec::new(),
            untrimmed: false,
        }
    }

    /// The pool's configuration.
    pub fn config(&self) -> StackPoolConfig {
        self.config
    }

    /// Stacks held now.
    pub fn len(&self) -> usize {
        self.free.len()
    }

    /// Whether the pool holds no stack.
    pub fn is_empty(&self) -> bool {
        self.free.is_empty()
    }

    /// A stack of `size` usable bytes (`None`: the pool's size): a pooled one
    /// when the size matches, else a fresh one.
    ///
    /// # Errors
    ///
    /// As [`FiberStack::new`].
    #[inline]
    pub fn take(&mut self, size: Option<usize>) -> Result<FiberStack, StackError> {
        match size {
            Some(size) if crate::stack::usable_size(size) != self.config.stack_size => {
                FiberStack::new(size)
            }
            _ => match self.free.pop() {
                Some((stack, _)) => Ok(stack),
                None => FiberStack::new(self.config.stack_size),
            },
        }
    }

    /// Takes a stack back; unmaps it when the pool is full or the size is not
    /// the pool's.
    #[inline]
    pub fn put(&mut self, mut stack: FiberStack) {
        if stack.size() != self.config.stack_size || self.free.len() >= self.config.max {
            return;
        }
        if stack.touched_below(KEEP_BYTES) {
            stack.release_deep_pages(KEEP_BYTES);
        }
        let past_watermark = self.free.len() >= self.config.hot;
        self.untrimmed |= past_watermark;
        self.free.push((stack, past_watermark));
    }

    /// Gives back every page of the stacks pooled past the `hot` watermark
    /// since the last trim.
    pub fn trim(&mut self) {
        if !std::mem::take(&mut self.untrimmed) {
            return;
        }
        for (stack, resident) in self.free.iter_mut().skip(self.config.hot) {
            if std::mem::take(resident) {
                stack.release_deep_pages(0);
            }
        }
    }

    /// Unmaps every pooled stack.
    pub fn clear(&mut self) {
        self.free.clear();
    }
}
