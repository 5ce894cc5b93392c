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
    /// The pooled stacks, the most recently pooled last.
    free: Vec<FiberStack>,
    /// The stacks at `hot..trimmed` have given their pages back (`trim`)
    /// and not been taken since; those from `trimmed` up may have resident
    /// pages. Kept as a bound, not as a flag beside each stack: a flag's
    /// byte stored next to a stack made its move into the pool a store
    /// the next load of it could not be forwarded from.
    trimmed: usize,
}

impl StackPool {
    /// An empty pool.
    pub fn new(mut config: StackPoolConfig) -> StackPool {
        config.stack_size = crate::stack::usable_size(config.stack_size);
        StackPool {
            config,
            free: Vec::new(),
            trimmed: 0,
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
                Some(stack) => {
                    self.trimmed = self.trimmed.min(self.free.len());
                    Ok(stack)
                }
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
        self.free.push(stack);
    }

    /// Gives back every page of the stacks pooled past the `hot` watermark
    /// since the last trim.
    pub fn trim(&mut self) {
        let from = self.trimmed.max(self.config.hot);
        for stack in self.free.iter_mut().skip(from) {
            stack.release_deep_pages(0);
        }
        self.trimmed = self.trimmed.max(self.free.len());
    }

    /// Unmaps every pooled stack.
    pub fn clear(&mut self) {
        self.free.clear();
        self.trimmed = 0;
    }
}

#[cfg(test)]
mod tests {
    use corosensei::stack::Stack;

    use super::{StackPool, StackPoolConfig};
    use crate::stack::FiberStack;

    /// Writes a mark just below the stack's top.
    fn mark(s: &FiberStack) {
        // SAFETY: the top 8 bytes below `base()` are the stack's own, and
        // no coroutine runs on it.
        unsafe { ((s.base().get() - 8) as *mut u64).write(0xfeed) };
    }

    /// Whether the mark is still there (a released page reads as zeros).
    fn marked(s: &FiberStack) -> bool {
        // SAFETY: as in `mark`.
        unsafe { ((s.base().get() - 8) as *const u64).read() == 0xfeed }
    }

    #[test]
    fn trim_gives_back_the_pages_of_the_stacks_past_hot_once() {
        let mut pool = StackPool::new(StackPoolConfig {
            hot: 2,
            ..StackPoolConfig::default()
        });
        let stacks: Vec<_> = (0..4).map(|_| pool.take(None).unwrap()).collect();
        for s in stacks {
            mark(&s);
            pool.put(s);
        }
        pool.trim();
        let marks: Vec<bool> = pool.free.iter().map(marked).collect();
        assert_eq!(marks, [true, true, false, false]);
        // Taken and pooled again: only that one is trimmed again.
        let s = pool.take(None).unwrap();
        mark(&s);
        pool.put(s);
        assert!(marked(&pool.free[3]));
        pool.trim();
        assert!(!marked(&pool.free[3]));
        // Below `hot` nothing is trimmed.
        let (a, b, c) = (
            pool.take(None).unwrap(),
            pool.take(None).unwrap(),
            pool.take(None).unwrap(),
        );
        mark(&b);
        pool.put(b);
        pool.put(c);
        pool.put(a);
        pool.trim();
        assert!(marked(&pool.free[1]), "the stack at index 1 is below hot");
    }
}
