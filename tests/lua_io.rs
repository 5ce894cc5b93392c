//! The Lua runtime runs on the cord's event loop: a Rust function that
//! parks its Lua fiber on a socket lets the other Lua fibers run, and keeps
//! the script going until another thread writes.

use std::cell::RefCell;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::rc::Rc;
use std::time::Duration;

use luafiber::runtime::net::{TcpListener, TcpStream};
use luafiber::LuaRuntime;
use luafiber_lua::Value;

const SCRIPT: &str = r#"
local fiber = require('fiber')
local ticks = 0
local done = false
fiber.create(function()
    while not done do ticks = ticks + 1; ticked(ticks); fiber.sleep(0.001) end
end)
local got = recv()
done = true
report(got, ticks)
"#;

/// Registers `recv()`, which parks its Lua fiber on one end of a socket pair
/// until a read there gives bytes, and returns them; gives the other end.
fn register_recv(rt: &LuaRuntime) -> UnixStream {
    let (a, b) = UnixStream::pair().unwrap();
    let a = luafiber::runtime::io::Fd::new(OwnedFd::from(a)).unwrap();
    rt.register_fn("recv", move |_| {
        let mut buf = [0u8; 64];
        let n = a
            .io(luafiber::runtime::io::Interest::READABLE, None, |fd| {
                use std::os::fd::AsRawFd;
                // SAFETY: `buf` is valid for writes of its length.
                match unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) } {
                    -1 => Err(std::io::Error::last_os_error()),
                    n => Ok(n as usize),
                }
            })
            .map_err(|e| e.to_string())?;
        Ok(vec![Value::String(buf[..n].to_vec())])
    })
    .unwrap();
    b
}

#[test]
fn a_lua_fiber_parked_on_a_socket_lets_the_others_run() {
    let rt = LuaRuntime::new().unwrap();
    let b = register_recv(&rt);
    let seen = Rc::new(RefCell::new(None));
    let s = seen.clone();
    rt.register_fn("report", move |args| {
        *s.borrow_mut() = Some((
            args[0].as_str().unwrap().to_owned(),
            args[1].as_f64().unwrap(),
        ));
        Ok(vec![])
    })
    .unwrap();
    // The writer waits until the ticker ticked 3 times: twice after the
    // main fiber parked in recv() (a write that came first would be read
    // at once, without parking). 60 s: the bound that turns a recv() that
    // blocks the thread into a failure.
    let (tx, rx) = std::sync::mpsc::channel();
    rt.register_fn("ticked", move |args| {
        if args[0].as_f64() == Some(3.0) {
            let _ = tx.send(());
        }
        Ok(vec![])
    })
    .unwrap();
    let t = std::thread::spawn(move || {
        let _ = rx.recv_timeout(Duration::from_secs(60));
        (&b).write_all(b"from a thread").unwrap();
        b
    });
    rt.run_chunk(SCRIPT, "lua_io").unwrap();
    drop(t.join().unwrap());
    let (got, ticks) = seen.borrow_mut().take().expect("the script reported");
    assert_eq!(got, "from a thread");
    // The ticker ran while the main fiber was parked on the socket.
    assert!(ticks >= 3.0, "{ticks}");
}

#[test]
fn a_lua_runtime_serves_tcp_from_a_rust_function() {
    let rt = LuaRuntime::new().unwrap();
    let listener = Rc::new(TcpListener::bind("127.0.0.1:0".parse().unwrap()).unwrap());
    let addr = listener.local_addr().unwrap();
    let l = listener.clone();
    // accept_and_echo(): accepts one connection and echoes one message.
    rt.register_fn("accept_and_echo", move |_| {
        let (conn, _) = l.accept().map_err(|e| e.to_string())?;
        let mut buf = [0u8; 64];
        let n = conn.read(&mut buf).map_err(|e| e.to_string())?;
        (&conn).write_all(&buf[..n]).map_err(|e| e.to_string())?;
        Ok(vec![Value::Integer(n as i64)])
    })
    .unwrap();
    let reply = Rc::new(RefCell::new(Vec::new()));
    let r = reply.clone();
    rt.register_fn("client", move |_| {
        let s = TcpStream::connect(addr).map_err(|e| e.to_string())?;
        (&s).write_all(b"hi lua").map_err(|e| e.to_string())?;
        let mut buf = [0u8; 64];
        let n = s.read(&mut buf).map_err(|e| e.to_string())?;
        r.borrow_mut().extend_from_slice(&buf[..n]);
        Ok(vec![])
    })
    .unwrap();
    let script = r#"
        local fiber = require('fiber')
        local server = fiber.new(function() return accept_and_echo() end)
        server:set_joinable(true)
        fiber.create(client)
        local ok, n = server:join()
        assert(ok and n == 6, tostring(n))
    "#;
    rt.run_chunk(script, "lua_tcp").unwrap();
    assert_eq!(&*reply.borrow(), b"hi lua");
}

/// Issue 13, item 3: a main fiber waiting for a fiber that waits on I/O is
/// not blocked forever (the event loop keeps the script going until the
/// write comes); one waiting for nothing is an error naming it.
#[test]
fn main_fiber_waiting_on_io_is_not_blocked_forever() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("lua_io");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("waits_on_io.lua");
    std::fs::write(
        &path,
        "local fiber = require('fiber')\n\
         local ch = fiber.channel()\n\
         fiber.create(function() ch:put(recv()) end)\n\
         assert(ch:get() == 'late')\n\
         ch:get()\n",
    )
    .unwrap();
    let rt = LuaRuntime::new().unwrap();
    let b = register_recv(&rt);
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(30));
        (&b).write_all(b"late").unwrap();
        b
    });
    let path = path.to_str().unwrap();
    let err = rt.run_main(&[], Some(path), &[], "luafiber").unwrap_err();
    drop(t.join().unwrap());
    let msg = err.to_string();
    // The first get was served; the second waits for nothing.
    assert!(msg.contains("the main fiber can never be woken"), "{msg}");
    assert!(msg.contains("waits_on_io.lua:5: in main chunk"), "{msg}");
}
