//! A fiber parked on a socket wakes for data, a timeout, a cancel, a close
//! by another fiber and the peer's end; busy fibers do not starve it, and
//! it keeps the scheduler loop going.

mod support;

use std::cell::{Cell, RefCell};
use std::io::{ErrorKind, Write};
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::time::{Duration, Instant};

use luafiber_runtime::io::{self, Interest};
use luafiber_runtime::{fiber, spawn, yield_now, Runtime};
use support::sock::{pair, read, write};

type Log = Rc<RefCell<Vec<String>>>;

fn log() -> Log {
    Rc::new(RefCell::new(Vec::new()))
}

fn push(log: &Log, s: impl Into<String>) {
    log.borrow_mut().push(s.into());
}

#[test]
fn a_reader_is_woken_by_data() {
    let rt = Runtime::new();
    let (a, b) = pair();
    let l = log();
    let (l1, l2) = (l.clone(), l.clone());
    let reader = spawn(move || {
        push(&l1, "read");
        let mut buf = [0; 16];
        let n = read(&a, &mut buf, None).unwrap();
        push(&l1, format!("got {}", String::from_utf8_lossy(&buf[..n])));
    });
    spawn(move || {
        push(&l2, "write");
        write(&b, b"ping", None).unwrap();
        b
    });
    rt.run();
    reader.join().unwrap();
    assert_eq!(*l.borrow(), ["read", "write", "got ping"]);
}

#[test]
fn a_reader_times_out_and_the_cord_goes_on() {
    let rt = Runtime::new();
    let (a, b) = pair();
    let start = Instant::now();
    let r = rt.block_on(move || {
        let t = Duration::from_millis(10);
        let e = read(&a, &mut [0; 4], Some(t)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TimedOut);
        // A zero timeout is one try, no park.
        let e = read(&a, &mut [0; 4], Some(Duration::ZERO)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TimedOut);
        write(&b, b"x", None).unwrap();
        read(&a, &mut [0; 4], Some(t)).unwrap()
    });
    assert_eq!(r, 1);
    assert!(start.elapsed() >= Duration::from_millis(10));
}

#[test]
fn a_cancel_wakes_a_reader_with_a_cancel_error() {
    let rt = Runtime::new();
    let (a, b) = pair();
    let a = Rc::new(a);
    let a2 = a.clone();
    let reader = spawn(move || read(&a2, &mut [0; 4], None));
    let id = reader.id();
    spawn(move || fiber::cancel(id).unwrap());
    rt.run();
    let e = reader.join().unwrap().unwrap_err();
    assert!(io::is_cancelled(&e), "{e}");
    assert_eq!(e.kind(), ErrorKind::Other);
    assert!(e.to_string().contains(&id.to_string()), "{e}");
    // The fd and the cord are fine: a later reader gets data.
    let got = rt.block_on(move || {
        write(&b, b"after", None).unwrap();
        read(&a, &mut [0; 8], None).unwrap()
    });
    assert_eq!(got, 5);
}

#[test]
fn a_cancelled_fiber_that_reads_ready_data_gets_it() {
    let rt = Runtime::new();
    let (a, b) = pair();
    let r = rt.block_on(move || {
        write(&b, b"x", None).unwrap();
        fiber::cancel(fiber::current().unwrap()).unwrap();
        // The syscall is tried first: no park, no cancellation point.
        let n = read(&a, &mut [0; 4], None).unwrap();
        let e = read(&a, &mut [0; 4], None).unwrap_err();
        (n, io::is_cancelled(&e))
    });
    assert_eq!(r, (1, true));
}

#[test]
fn a_close_by_another_fiber_wakes_its_waiters_with_ebadf() {
    let rt = Runtime::new();
    let (a, _b) = pair();
    let a = Rc::new(a);
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let a = a.clone();
            spawn(move || read(&a, &mut [0; 4], None))
        })
        .collect();
    let writer = {
        let a = a.clone();
        spawn(move || -> std::io::Result<()> {
            // Fill the buffer so the writer parks too.
            let chunk = [0u8; 65536];
            loop {
                write(&a, &chunk, None)?;
            }
        })
    };
    spawn(move || {
        a.close().unwrap();
        assert!(a.is_closed());
        assert_eq!(a.as_raw_fd(), -1);
        // A second close is a no-op.
        a.close().unwrap();
    });
    rt.run();
    for r in readers {
        let e = r.join().unwrap().unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EBADF), "{e}");
    }
    let e = writer.join().unwrap().unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EBADF), "{e}");
}

#[test]
fn the_peer_closing_gives_end_of_stream() {
    let rt = Runtime::new();
    let (a, b) = pair();
    let reader = spawn(move || read(&a, &mut [0; 4], None));
    spawn(move || drop(b));
    rt.run();
    assert_eq!(reader.join().unwrap().unwrap(), 0);
}

#[test]
fn wait_fd_on_a_borrowed_fd() {
    let rt = Runtime::new();
    let (a, mut b) = std::os::unix::net::UnixStream::pair().unwrap();
    let fd = a.as_raw_fd();
    let l = log();
    let (l1, l2) = (l.clone(), l.clone());
    let waiters: Vec<_> = (0..2)
        .map(|i| {
            let l = l1.clone();
            spawn(move || {
                let r = io::wait_fd(fd, Interest::READABLE, None).unwrap();
                assert!(r.is_readable() && !r.is_writable());
                push(&l, format!("ready {i}"));
            })
        })
        .collect();
    spawn(move || {
        push(&l2, "write");
        b.write_all(b"x").unwrap();
        b
    });
    rt.run();
    for w in waiters {
        w.join().unwrap();
    }
    assert_eq!(*l.borrow(), ["write", "ready 0", "ready 1"]);
    // Writable now; readable too, since the byte is still there.
    let r = rt.block_on(move || {
        let r = io::wait_fd(fd, Interest::READABLE | Interest::WRITABLE, None).unwrap();
        drop(a);
        r
    });
    assert!(r.is_readable() && r.is_writable());
    // A closed fd is EBADF, with or without a fiber.
    let e = io::wait_readable(fd, Some(Duration::ZERO)).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EBADF));
}

#[test]
fn wait_fd_outside_fibers_blocks_in_poll() {
    let (a, mut b) = std::os::unix::net::UnixStream::pair().unwrap();
    let e = io::wait_readable(a.as_raw_fd(), Some(Duration::from_millis(1))).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TimedOut);
    b.write_all(b"x").unwrap();
    io::wait_readable(a.as_raw_fd(), None).unwrap();
}

#[test]
fn a_reader_keeps_run_going_until_another_thread_writes() {
    let rt = Runtime::new();
    let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
    let a = luafiber_runtime::io::Fd::new(a.into()).unwrap();
    let reader = spawn(move || read(&a, &mut [0; 4], None).unwrap());
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        (&b).write_all(b"late").unwrap();
        b
    });
    // Nothing is ready or sleeping here: only the parked reader keeps the
    // loop in the event loop's wait.
    rt.run();
    assert!(reader.is_finished());
    assert_eq!(reader.join().unwrap(), 4);
    drop(t.join().unwrap());
}

#[test]
fn busy_fibers_do_not_starve_a_reader() {
    let rt = Runtime::new();
    let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
    let a = luafiber_runtime::io::Fd::new(a.into()).unwrap();
    let done = Rc::new(Cell::new(false));
    let d = done.clone();
    let reader = spawn(move || {
        let n = read(&a, &mut [0; 4], None).unwrap();
        d.set(true);
        n
    });
    let busy: Vec<_> = (0..2)
        .map(|_| {
            let done = done.clone();
            spawn(move || {
                let mut yields = 0u64;
                while !done.get() && yields < 50_000_000 {
                    yield_now().unwrap();
                    yields += 1;
                }
                yields
            })
        })
        .collect();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        (&b).write_all(b"data").unwrap();
        b
    });
    rt.run();
    assert_eq!(reader.join().unwrap(), 4);
    for h in busy {
        // The reader ended the busy loops long before their bound.
        assert!(h.join().unwrap() < 50_000_000);
    }
    drop(t.join().unwrap());
}

#[test]
fn a_wait_for_either_direction_wakes_on_the_writable_edge() {
    let rt = Runtime::new();
    let (a, b) = pair();
    let a = Rc::new(a);
    let l = log();
    let (l1, l2) = (l.clone(), l.clone());
    // Fill a's send buffer: nothing to read on a, no room to write.
    let filled = rt.block_on({
        let a = a.clone();
        move || {
            let chunk = vec![0u8; 65536];
            let mut filled = 0usize;
            while let Ok(n) = write(&a, &chunk, Some(Duration::ZERO)) {
                filled += n;
                assert!(filled < 1 << 30);
            }
            filled
        }
    });
    let a2 = a.clone();
    let waiter = spawn(move || {
        push(&l1, "wait");
        let r = a2
            .wait(Interest::READABLE | Interest::WRITABLE, None)
            .unwrap();
        push(&l1, "ready");
        (r.is_readable(), r.is_writable())
    });
    // Kept open by its join handle (a closed peer would make `a` readable).
    let drainer = spawn(move || {
        push(&l2, "drain");
        let mut buf = vec![0u8; 1 << 16];
        let mut left = filled;
        while left > 0 {
            left -= read(&b, &mut buf, None).unwrap();
        }
        b
    });
    rt.run();
    assert_eq!(waiter.join().unwrap(), (false, true));
    drop(drainer.join().unwrap());
    assert_eq!(*l.borrow(), ["wait", "drain", "ready"]);
}

#[test]
fn a_regular_file_is_always_ready_and_fd_into_owned_gives_the_fd_back() {
    let rt = Runtime::new();
    let f = std::fs::File::open("/proc/self/status").unwrap();
    let fd = f.as_raw_fd();
    let r = rt.block_on(move || io::wait_fd(fd, Interest::READABLE, None).unwrap());
    assert!(r.is_readable());
    drop(f);
    let (a, b) = pair();
    let raw = a.as_raw_fd();
    let owned = a.into_owned().unwrap();
    assert_eq!(std::os::fd::AsRawFd::as_raw_fd(&owned), raw);
    // Still open, and registrable again.
    let again = luafiber_runtime::io::Fd::new(owned).unwrap();
    let n = rt.block_on(move || {
        write(&b, b"z", None).unwrap();
        read(&again, &mut [0; 2], None).unwrap()
    });
    assert_eq!(n, 1);
}
