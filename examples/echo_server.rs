//! A TCP echo server on one cord: one fiber accepts, one fiber per
//! connection echoes what it reads until the peer closes.
//!
//! Run with `cargo run --release --example echo_server [-- ADDR [N]]`
//! (default 127.0.0.1:7878; with N, it exits once N connections have
//! ended), and point `echo_clients` at it.

#[path = "support/fd_limit.rs"]
mod fd_limit;

use std::cell::Cell;
use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::rc::Rc;
use std::time::Duration;

use luafiber::runtime::net::{TcpListener, TcpStream};
use luafiber::runtime::Builder;
use luafiber::{sleep, spawn};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let addr: SocketAddr = match args.next().unwrap_or("127.0.0.1:7878".into()).parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("echo_server: ADDR like 127.0.0.1:7878: {e}");
            return ExitCode::FAILURE;
        }
    };
    let stop_after: Option<u64> = args.next().and_then(|n| n.parse().ok());
    fd_limit::raise_fd_limit();
    // Small stacks: an echo loop needs little, and there may be thousands.
    let rt = Builder::new().stack_size(64 * 1024).build();
    rt.block_on(move || {
        let listener = match TcpListener::bind(addr) {
            Ok(l) => Rc::new(l),
            Err(e) => {
                eprintln!("echo_server: bind {addr}: {e}");
                return ExitCode::FAILURE;
            }
        };
        println!("echo server on {}", listener.local_addr().unwrap());
        let ended = Rc::new(Cell::new(0u64));
        loop {
            match listener.accept() {
                Ok((conn, _peer)) => {
                    let (ended, listener) = (ended.clone(), listener.clone());
                    spawn(move || {
                        echo(conn);
                        ended.set(ended.get() + 1);
                        if Some(ended.get()) == stop_after {
                            // Wakes the accept loop with EBADF.
                            listener.close().unwrap();
                        }
                    });
                }
                Err(e) if e.raw_os_error() == Some(libc::EBADF) => break,
                Err(e) => {
                    // Out of fds, say: the connection waits in the backlog.
                    eprintln!("echo_server: accept: {e}");
                    sleep(Duration::from_millis(10)).unwrap();
                }
            }
        }
        println!("served {} connections", ended.get());
        ExitCode::SUCCESS
    })
}

/// Echoes until the peer closes or the connection fails.
fn echo(mut conn: TcpStream) {
    let mut buf = [0; 16 * 1024];
    loop {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if conn.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
        }
    }
}
