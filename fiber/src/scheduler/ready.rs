//! The scheduler's ready queue: a FIFO ring of `Copy` values.

/// A FIFO of `Copy` values in a ring whose capacity is a power of two: a
/// push or a pop is a masked index and a store or a load (the scheduler's
/// ready queue, on every wakeup and switch).
pub(crate) struct Ring<T: Copy> {
    /// `buf.len()` is 0 or a power of two; the values are at `head..head +
    /// len`, modulo the length.
    buf: Vec<std::mem::MaybeUninit<T>>,
    head: usize,
    len: usize,
}

impl<T: Copy> Ring<T> {
    pub const fn new() -> Ring<T> {
        Ring {
            buf: Vec::new(),
            head: 0,
            len: 0,
        }
    }

    #[inline(always)]
    pub fn push_back(&mut self, v: T) {
        if self.len == self.buf.len() {
            self.grow();
        }
        let mask = self.buf.len() - 1;
        self.buf[(self.head + self.len) & mask] = std::mem::MaybeUninit::new(v);
        self.len += 1;
    }

    #[inline(always)]
    pub fn pop_front(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        // SAFETY: `head` is within `head..head + len`, written by a push.
        let v = unsafe { self.buf[self.head].assume_init() };
        self.head = (self.head + 1) & (self.buf.len() - 1);
        self.len -= 1;
        Some(v)
    }

    #[inline(always)]
    pub fn front(&self) -> Option<T> {
        // SAFETY: as in `pop_front`.
        (self.len > 0).then(|| unsafe { self.buf[self.head].assume_init() })
    }

    /// The value `i` places from the front, if there are that many.
    #[inline(always)]
    pub fn get(&self, i: usize) -> Option<T> {
        // SAFETY: as in `pop_front`: `head + i` is within `head..head + len`.
        (i < self.len)
            .then(|| unsafe { self.buf[(self.head + i) & (self.buf.len() - 1)].assume_init() })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Doubles the capacity (at least 16), keeping the order.
    #[cold]
    fn grow(&mut self) {
        let cap = (self.buf.len() * 2).max(16);
        let mut buf = Vec::with_capacity(cap);
        let mask = self.buf.len().wrapping_sub(1);
        for i in 0..self.len {
            buf.push(self.buf[(self.head + i) & mask]);
        }
        buf.resize(cap, std::mem::MaybeUninit::uninit());
        self.buf = buf;
        self.head = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::Ring;

    #[test]
    fn ring_keeps_fifo_order_across_growth_and_wrap() {
        let mut r = Ring::new();
        let mut next_in = 0;
        let mut next_out = 0;
        // Pushes run ahead of pops by a growing margin, so the ring wraps
        // and grows while it holds values at both ends of its buffer.
        for round in 0..200 {
            for _ in 0..(round % 7 + 2) {
                r.push_back(next_in);
                next_in += 1;
            }
            for _ in 0..(round % 5 + 1) {
                if let Some(v) = r.pop_front() {
                    assert_eq!(v, next_out);
                    next_out += 1;
                }
            }
            assert_eq!(r.len(), next_in - next_out);
            for i in 0..r.len() {
                assert_eq!(r.get(i), Some(next_out + i));
            }
            assert_eq!(r.get(r.len()), None);
        }
        while let Some(v) = r.pop_front() {
            assert_eq!(v, next_out);
            next_out += 1;
        }
        assert_eq!(next_out, next_in);
        assert!(r.is_empty());
    }
}
