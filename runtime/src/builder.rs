//! [`Builder`]: the settings of this thread's fiber runtime.

use luafiber_fiber::{self as fiber, stack};

use crate::runtime::Runtime;

/// Settings for a [`Runtime`]: the default fiber stack size and the stack
/// pool's size (tokio's `runtime::Builder`).
///
/// # Examples
///
/// ```
/// use luafiber_runtime::Builder;
///
/// let rt = Builder::new()
///     .stack_size(128 * 1024)
///     .stack_pool_size(16)
///     .build();
/// assert_eq!(rt.stack_size(), 128 * 1024);
/// assert_eq!(rt.block_on(|| 1 + 1), 2);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Builder {
    stack_size: Option<usize>,
    stack_pool_size: Option<usize>,
}

impl Builder {
    /// This thread's current settings (at first: 512 KiB stacks, a pool of
    /// 16384 stacks, the first 1024 of them keeping their pages).
    pub fn new() -> Builder {
        Builder::default()
    }

    /// The usable stack size of every fiber, in bytes, unless the fiber asks
    /// for its own ([`task::Builder::stack_size`](crate::task::Builder::stack_size)).
    /// Rounded up to whole pages and to at least 16 KiB; each stack also
    /// has a 64 KiB guard. Default 512 KiB (Tarantool's).
    pub fn stack_size(mut self, bytes: usize) -> Builder {
        self.stack_size = Some(bytes);
        self
    }

    /// How many stacks of ended fibers are kept for reuse (a pooled stack
    /// is about 50 times cheaper than a fresh one); 0 switches the pool off.
    /// Default 16384; the first 1024 pooled keep their pages, the rest give
    /// them back once the thread has no fiber ready.
    pub fn stack_pool_size(mut self, stacks: usize) -> Builder {
        self.stack_pool_size = Some(stacks);
        self
    }

    /// A builder of a runtime of `n` cords (OS threads, each with its own
    /// scheduler and event loop; see [`cord`](crate::cord)), whose fibers
    /// get this builder's stack settings (on top of the defaults, not of
    /// this thread's settings).
    ///
    /// # Examples
    ///
    /// ```
    /// use luafiber_runtime::Runtime;
    ///
    /// let rt = Runtime::builder().stack_size(64 * 1024).cords(2).build().unwrap();
    /// assert_eq!(rt.cords(), 2);
    /// assert_eq!(rt.spawn(|| 1 + 1).join().unwrap(), 2);
    /// ```
    pub fn cords(self, n: usize) -> crate::cord::Builder {
        let mut config = fiber::Config::default();
        self.apply(&mut config);
        crate::cord::Builder::new(n, config)
    }

    fn apply(&self, config: &mut fiber::Config) {
        if let Some(bytes) = self.stack_size {
            config.stacks.stack_size = stack::usable_size(bytes);
        }
        if let Some(n) = self.stack_pool_size {
            config.stacks.max = n;
        }
    }

    /// Applies the settings to this thread's scheduler and returns the
    /// runtime.
    ///
    /// # Panics
    ///
    /// When the settings differ from the scheduler's and fibers already
    /// exist on this thread (the settings can change only while there are
    /// none).
    pub fn build(self) -> Runtime {
        let mut want = fiber::config();
        self.apply(&mut want);
        let have = fiber::config().stacks;
        let same = have.stack_size == want.stacks.stack_size && have.max == want.stacks.max;
        if !same && !fiber::configure(want) {
            panic!("Builder::build: fibers exist on this thread, so its settings cannot change");
        }
        Runtime::new_configured()
    }
}
