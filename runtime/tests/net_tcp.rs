//! TCP on the event loop: echo, a peer that resets, a full socket buffer,
//! a cancel in the middle of a read, refused connects, accept timeouts.

mod support;

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::rc::Rc;
use std::time::Duration;

use luafiber_runtime::net::{self, TcpListener, TcpStream};
use luafiber_runtime::{fiber, io, spawn, yield_now, Runtime};

fn any_port() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// A listener and an accept loop that echoes every connection in its own
/// fiber; the loop ends when the listener is closed.
fn echo_server() -> (Rc<TcpListener>, SocketAddr) {
    let l = Rc::new(TcpListener::bind(any_port()).unwrap());
    let addr = l.local_addr().unwrap();
    let l2 = l.clone();
    spawn(move || {
        while let Ok((mut c, _)) = l2.accept() {
            spawn(move || {
                let mut buf = [0; 4096];
                loop {
                    match c.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => c.write_all(&buf[..n]).unwrap(),
                    }
                }
            });
        }
    });
    (l, addr)
}

#[test]
fn fifty_clients_echo_at_once() {
    let rt = Runtime::new();
    let total = rt.block_on(|| {
        let (l, addr) = echo_server();
        let clients: Vec<_> = (0..50u32)
            .map(|i| {
                spawn(move || {
                    let mut s = TcpStream::connect(addr).unwrap();
                    s.set_nodelay(true).unwrap();
                    assert!(s.nodelay().unwrap());
                    assert_eq!(s.peer_addr().unwrap(), addr);
                    let msg = format!("hello {i}").repeat(100);
                    s.write_all(msg.as_bytes()).unwrap();
                    let mut back = vec![0; msg.len()];
                    s.read_exact(&mut back).unwrap();
                    assert_eq!(back, msg.as_bytes());
                    msg.len()
                })
            })
            .collect();
        let total: usize = clients.into_iter().map(|c| c.join().unwrap()).sum();
        l.close().unwrap();
        total
    });
    assert!(total > 50 * 700);
}

#[test]
fn a_reader_whose_peer_resets_gets_an_error_not_a_hang() {
    let rt = Runtime::new();
    let r = rt.block_on(|| {
        let l = TcpListener::bind(any_port()).unwrap();
        let addr = l.local_addr().unwrap();
        let client = TcpStream::connect(addr).unwrap();
        let reader = spawn(move || {
            let mut buf = [0; 16];
            let r = client.read(&mut buf);
            // Writing to the reset connection: EPIPE, not a SIGPIPE.
            let w = client.write(b"after");
            (r.map_err(|e| e.kind()), w.map_err(|e| e.kind()))
        });
        let (conn, _) = l.accept().unwrap();
        // The reader is parked now; the peer vanishes with an RST.
        yield_now().unwrap();
        conn.set_linger(Some(Duration::ZERO)).unwrap();
        drop(conn);
        reader.join().unwrap()
    });
    assert_eq!(r.0, Err(ErrorKind::ConnectionReset));
    assert!(
        matches!(r.1, Err(ErrorKind::BrokenPipe | ErrorKind::ConnectionReset)),
        "{r:?}"
    );
}

#[test]
fn a_full_socket_buffer_parks_the_writer_and_a_timeout_gives_a_short_result() {
    let rt = Runtime::new();
    rt.block_on(|| {
        let (l, addr) = {
            let l = TcpListener::bind(any_port()).unwrap();
            let a = l.local_addr().unwrap();
            (l, a)
        };
        let writer = TcpStream::connect(addr).unwrap();
        let (mut peer, _) = l.accept().unwrap();
        writer.set_write_timeout(Some(Duration::from_millis(20)));
        // The peer reads nothing: the buffers fill, the write parks, and
        // its timeout ends it; what went in before stays written.
        let chunk = vec![7u8; 1 << 20];
        let mut sent = 0usize;
        let err = loop {
            match writer.write(&chunk) {
                Ok(n) => sent += n,
                Err(e) => break e,
            }
            assert!(sent < 1 << 30, "the buffers never filled");
        };
        assert_eq!(err.kind(), ErrorKind::TimedOut);
        assert!(sent > 0);
        // A reader drains it; the writer then goes on.
        writer.set_write_timeout(None);
        let w = Rc::new(writer);
        let w2 = w.clone();
        let more = spawn(move || (&*w2).write_all(b"tail").map(|()| 4));
        let mut got = vec![0; sent + 4];
        peer.read_exact(&mut got).unwrap();
        assert_eq!(more.join().unwrap().unwrap(), 4);
        assert_eq!(&got[sent..], b"tail");
        w.shutdown(Shutdown::Write).unwrap();
        assert_eq!(peer.read(&mut [0; 1]).unwrap(), 0);
    });
}

#[test]
fn a_cancel_in_the_middle_of_a_read_exact_is_an_error_and_the_cord_goes_on() {
    let rt = Runtime::new();
    rt.block_on(|| {
        let (l, addr) = echo_server();
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(b"12345").unwrap();
        let reader = spawn(move || {
            let mut buf = [0; 10];
            // Five bytes come back, then nothing: read_exact parks.
            let e = s.read_exact(&mut buf).unwrap_err();
            (e, s)
        });
        let id = reader.id();
        // Let the echo come back and the reader park on the rest.
        for _ in 0..10_000 {
            if fiber::csw(id).unwrap() >= 2 {
                break;
            }
            yield_now().unwrap();
        }
        reader.cancel();
        let (e, mut s) = reader.join().unwrap();
        assert!(io::is_cancelled(&e), "{e}");
        // The connection still works for another fiber.
        spawn(move || {
            s.write_all(b"more").unwrap();
            let mut b = [0; 4];
            s.read_exact(&mut b).unwrap();
            assert_eq!(&b, b"more");
        })
        .join()
        .unwrap();
        l.close().unwrap();
    });
}

#[test]
fn refused_connects_and_accept_timeouts() {
    let rt = Runtime::new();
    rt.block_on(|| {
        let l = TcpListener::bind(any_port()).unwrap();
        let addr = l.local_addr().unwrap();
        let e = l
            .accept_timeout(Some(Duration::from_millis(5)))
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TimedOut);
        drop(l);
        let e = TcpStream::connect(addr).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ConnectionRefused);
    });
}

#[test]
fn a_closed_listener_wakes_its_acceptors() {
    let rt = Runtime::new();
    let l = Rc::new(TcpListener::bind(any_port()).unwrap());
    let acceptors: Vec<_> = (0..2)
        .map(|_| {
            let l = l.clone();
            spawn(move || l.accept().map(drop).unwrap_err().raw_os_error())
        })
        .collect();
    spawn(move || l.close().unwrap());
    rt.run();
    for a in acceptors {
        assert_eq!(a.join().unwrap(), Some(libc::EBADF));
    }
}

#[test]
fn lookup_host_resolves_off_the_cord() {
    let rt = Runtime::new();
    let addrs = rt.block_on(|| net::lookup_host("127.0.0.1", 9, None).unwrap());
    assert_eq!(addrs, ["127.0.0.1:9".parse::<SocketAddr>().unwrap()]);
}

#[test]
fn outside_fibers_the_calls_block_the_thread() {
    let l = TcpListener::bind(any_port()).unwrap();
    let addr = l.local_addr().unwrap();
    let t = std::thread::spawn(move || {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.write_all(b"plain").unwrap();
        s
    });
    let (c, _) = l.accept().unwrap();
    let mut buf = [0; 5];
    (&c).read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"plain");
    c.set_read_timeout(Some(Duration::from_millis(5)));
    assert_eq!(c.read(&mut buf).unwrap_err().kind(), ErrorKind::TimedOut);
    drop(t.join().unwrap());
}
