//! UDP on the event loop: datagrams each way, a receive that parks and
//! one that times out, a connected pair.

use std::io::ErrorKind;
use std::net::SocketAddr;
use std::time::Duration;

use luafiber_runtime::net::UdpSocket;
use luafiber_runtime::{spawn, Runtime};

fn any_port() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

#[test]
fn a_receiver_parks_until_a_datagram_comes() {
    let rt = Runtime::new();
    let (got, from, sender) = rt.block_on(|| {
        let a = UdpSocket::bind(any_port()).unwrap();
        let b = UdpSocket::bind(any_port()).unwrap();
        let to = a.local_addr().unwrap();
        let sender = b.local_addr().unwrap();
        spawn(move || {
            for i in 0..3u8 {
                b.send_to(&[i; 3], to).unwrap();
            }
        });
        let mut got = Vec::new();
        let mut from = Vec::new();
        for _ in 0..3 {
            let mut buf = [0; 8];
            let (n, f) = a.recv_from(&mut buf).unwrap();
            got.push(buf[..n].to_vec());
            from.push(f);
        }
        (got, from, sender)
    });
    assert_eq!(got, [[0; 3], [1; 3], [2; 3]]);
    assert!(from.iter().all(|f| *f == sender));
}

#[test]
fn a_receive_times_out() {
    let rt = Runtime::new();
    let kind = rt.block_on(|| {
        let a = UdpSocket::bind(any_port()).unwrap();
        a.set_read_timeout(Some(Duration::from_millis(5)));
        a.recv(&mut [0; 4]).unwrap_err().kind()
    });
    assert_eq!(kind, ErrorKind::TimedOut);
}

#[test]
fn a_connected_pair_sends_and_receives() {
    let rt = Runtime::new();
    rt.block_on(|| {
        let a = UdpSocket::bind(any_port()).unwrap();
        let b = UdpSocket::bind(any_port()).unwrap();
        a.connect(b.local_addr().unwrap()).unwrap();
        b.connect(a.local_addr().unwrap()).unwrap();
        assert_eq!(a.peer_addr().unwrap(), b.local_addr().unwrap());
        assert_eq!(a.send(b"ping").unwrap(), 4);
        let mut buf = [0; 8];
        assert_eq!(b.recv(&mut buf).unwrap(), 4);
        assert_eq!(&buf[..4], b"ping");
        // A datagram to a port nobody listens on: the connected socket
        // reports the refusal on its next call.
        let gone = b.local_addr().unwrap();
        drop(b);
        let c = UdpSocket::bind(any_port()).unwrap();
        c.connect(gone).unwrap();
        c.send(b"lost").unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5)));
        let e = c.recv(&mut buf).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ConnectionRefused);
    });
}
