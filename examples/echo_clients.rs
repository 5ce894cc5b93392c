//! A thousand TCP clients at once on one cord: every fiber connects, waits
//! until all are connected, then makes round trips to an echo server and
//! checks each reply.
//!
//! Run `echo_server` first, then
//! `cargo run --release --example echo_clients [-- ADDR [CONNECTIONS [ROUNDS]]]`
//! (default 127.0.0.1:7878, 1000 connections, 10 round trips each).

#[path = "support/fd_limit.rs"]
mod fd_limit;

use std::cell::Cell;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::rc::Rc;
use std::time::Instant;

use luafiber::runtime::net::TcpStream;
use luafiber::runtime::Builder;
use luafiber::runtime::Cond;
use luafiber::spawn;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let addr: SocketAddr = match args.next().unwrap_or("127.0.0.1:7878".into()).parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("echo_clients: ADDR like 127.0.0.1:7878: {e}");
            return ExitCode::FAILURE;
        }
    };
    let conns: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(1000);
    let rounds: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(10);
    let limit = fd_limit::raise_fd_limit();
    if (limit as usize) < conns + 16 {
        eprintln!("echo_clients: {conns} connections need more fds than the limit, {limit}");
        return ExitCode::FAILURE;
    }
    let rt = Builder::new().stack_size(64 * 1024).build();
    let start = Instant::now();
    let failed = rt.block_on(move || {
        let open = Rc::new(Cell::new(0usize)); // connects tried
        let all_open = Rc::new(Cond::new());
        let clients: Vec<_> = (0..conns)
            .map(|i| {
                let (open, all_open) = (open.clone(), all_open.clone());
                spawn(move || -> std::io::Result<usize> {
                    let s = TcpStream::connect(addr);
                    // Counted whether it connected or not, so a failed
                    // connect does not keep the others waiting.
                    open.set(open.get() + 1);
                    if open.get() == conns {
                        all_open.broadcast();
                    }
                    while open.get() < conns {
                        all_open.wait(None).map_err(std::io::Error::other)?;
                    }
                    let mut s = s?;
                    let msg = format!("client {i} says hello\n");
                    let mut back = vec![0; msg.len()];
                    for _ in 0..rounds {
                        s.write_all(msg.as_bytes())?;
                        s.read_exact(&mut back)?;
                        if back != msg.as_bytes() {
                            return Err(std::io::Error::other("a wrong echo"));
                        }
                    }
                    Ok(2 * rounds * msg.len())
                })
            })
            .collect();
        let mut bytes = 0;
        let mut failed = 0;
        for c in clients {
            match c.join().unwrap() {
                Ok(n) => bytes += n,
                Err(e) => {
                    failed += 1;
                    if failed == 1 {
                        eprintln!("echo_clients: {e}");
                    }
                }
            }
        }
        println!(
            "{} connections open at once, {} round trips each, {bytes} bytes echoed, {failed} failed",
            conns - failed,
            rounds
        );
        failed
    });
    println!("took {:.3} s", start.elapsed().as_secs_f64());
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
