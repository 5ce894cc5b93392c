//! The caller-made syscalls' side of `Fd`: `is_ready`, `clear_ready`,
//! `drained` and `park`. A short read marks a stream socket drained, so the
//! next read parks without a syscall; bytes that arrive later wake it, even
//! when the loop polled them while the reader was busy; a hang-up an event
//! already reported keeps the fd ready, so the end of stream is read.

mod support;

use std::os::fd::{AsRawFd, BorrowedFd};
use std::time::Duration;

use luafiber_runtime::io::{Fd, Interest};
use luafiber_runtime::{spawn, yield_now, Runtime};
use support::sock::{pair, write};

/// One `read(2)`: the bytes, or `None` for `EAGAIN`.
fn read_once(fd: &Fd, buf: &mut [u8]) -> Option<usize> {
    fd.with(|fd: BorrowedFd<'_>| {
        // SAFETY: `buf` is valid for writes of its length.
        match unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) } {
            -1 => Err(std::io::Error::last_os_error()),
            n => Ok(n as usize),
        }
    })
    .ok()
}

/// Reads as the `socket` module does: park when known not ready, else read
/// and mark a short read drained.
fn read_like_lua(fd: &Fd, buf: &mut [u8]) -> usize {
    for _ in 0..100 {
        if !fd.is_ready(Interest::READABLE) {
            fd.park(Interest::READABLE, Some(Duration::from_secs(10)))
                .unwrap();
        }
        match read_once(fd, buf) {
            Some(n) => {
                if n < buf.len() {
                    fd.drained(Interest::READABLE);
                }
                return n;
            }
            None => fd.clear_ready(Interest::READABLE),
        }
    }
    panic!("no bytes after 100 tries");
}

#[test]
fn a_new_fd_is_ready_and_a_short_read_drains_it() {
    let rt = Runtime::new();
    let (a, b) = pair();
    rt.block_on(move || {
        assert!(
            a.is_ready(Interest::READABLE),
            "nothing is known of a new fd"
        );
        write(&b, b"abc", None).unwrap();
        let mut buf = [0; 16];
        assert_eq!(read_like_lua(&a, &mut buf), 3);
        assert!(!a.is_ready(Interest::READABLE), "a short read drains");
        assert_eq!(
            a.park(Interest::READABLE, Some(Duration::ZERO))
                .unwrap_err()
                .kind(),
            std::io::ErrorKind::TimedOut,
            "a zero-timeout park of a drained fd"
        );
        // Bytes written while the reader is parked wake it.
        let w = spawn(move || {
            yield_now().unwrap();
            write(&b, b"de", None).unwrap();
            b
        });
        assert_eq!(read_like_lua(&a, &mut buf), 2);
        assert_eq!(&buf[..2], b"de");
        drop(w.join().unwrap());
    });
}

#[test]
fn bytes_polled_while_the_reader_was_busy_wake_its_next_read() {
    let rt = Runtime::new();
    let (a, b) = pair();
    rt.block_on(move || {
        // A fiber waiting on another fd: the loop polls between batches
        // only while some fiber waits on an fd.
        let (c, d) = pair();
        let waiter = spawn(move || c.wait(Interest::READABLE, Some(Duration::from_secs(10))));
        let mut buf = [0; 16];
        for round in 0..20u8 {
            write(&b, &[round], None).unwrap();
            assert_eq!(read_like_lua(&a, &mut buf), 1);
            // The bytes come while the reader runs other fibers: the loop
            // polls their event before the reader reads again.
            write(&b, &[round, round], None).unwrap();
            for _ in 0..3 {
                yield_now().unwrap();
            }
            assert!(
                a.is_ready(Interest::READABLE),
                "round {round}: the event set it"
            );
            assert_eq!(read_like_lua(&a, &mut buf), 2);
        }
        write(&d, b"x", None).unwrap();
        waiter.join().unwrap().unwrap();
    });
}

#[test]
fn a_hang_up_seen_by_an_event_keeps_the_fd_ready() {
    let rt = Runtime::new();
    let (a, b) = pair();
    rt.block_on(move || {
        let mut buf = [0; 1];
        write(&b, b"xyz", None).unwrap();
        drop(b);
        // Wait for the event, which says both: bytes and the end.
        a.clear_ready(Interest::READABLE);
        a.park(Interest::READABLE, Some(Duration::from_secs(10)))
            .unwrap();
        // A one-byte read is not short; call drained() all the same, as
        // after a short read, to check the hang-up rule.
        for want in [b'x', b'y', b'z'] {
            assert_eq!(read_like_lua(&a, &mut buf), 1);
            assert_eq!(buf[0], want);
            a.drained(Interest::READABLE);
            assert!(a.is_ready(Interest::READABLE), "a hang-up keeps it ready");
        }
        assert_eq!(read_like_lua(&a, &mut buf), 0, "then the end of stream");
    });
}
