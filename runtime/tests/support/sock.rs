//! Socket helpers shared by the I/O tests: socketpairs wrapped in `Fd`s,
//! reads and writes through `Fd::io`, and the fd limit raised.

#![allow(dead_code)]

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use luafiber_runtime::io::{Fd, Interest};

/// A connected pair of stream sockets, registered with this cord.
pub fn pair() -> (Fd, Fd) {
    let (a, b) = UnixStream::pair().unwrap();
    (
        Fd::new(OwnedFd::from(a)).unwrap(),
        Fd::new(OwnedFd::from(b)).unwrap(),
    )
}

fn check(n: isize) -> io::Result<usize> {
    match n {
        -1 => Err(io::Error::last_os_error()),
        n => Ok(n as usize),
    }
}

fn raw_read(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for writes of its length.
    check(unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) })
}

fn raw_write(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for reads of its length.
    check(unsafe {
        libc::send(
            fd.as_raw_fd(),
            buf.as_ptr().cast(),
            buf.len(),
            libc::MSG_NOSIGNAL,
        )
    })
}

/// Reads what has arrived, parking until something has.
pub fn read(fd: &Fd, buf: &mut [u8], timeout: Option<Duration>) -> io::Result<usize> {
    fd.io(Interest::READABLE, timeout, |fd| raw_read(fd, buf))
}

/// Writes what fits, parking until something fits.
pub fn write(fd: &Fd, buf: &[u8], timeout: Option<Duration>) -> io::Result<usize> {
    fd.io(Interest::WRITABLE, timeout, |fd| raw_write(fd, buf))
}

/// Raises the soft fd limit to the hard one; returns the new soft limit.
pub fn raise_fd_limit() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a valid out-pointer, then the same struct back.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim), 0);
        lim.rlim_cur = lim.rlim_max;
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lim), 0);
    }
    lim.rlim_cur
}
