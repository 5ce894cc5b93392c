//! The Lua `socket` module: Tarantool master's `src/lua/socket.lua` and
//! `socket.c` on the cord's event loop ([`luafiber_runtime::io`]).
//!
//! Two halves, as in Tarantool: C functions here (a socket object is a
//! userdata holding a [`Sock`]; its hot methods, `read`,
//! `write`, `readable`, ... are C functions in its metatable's `__index`
//! table), and `socket.lua`, which turns names (`'AF_INET'`,
//! `'SOL_SOCKET'`, `{'MSG_PEEK'}`) into numbers and builds
//! `socket.tcp_connect`, `socket.tcp_server` and friends on top; and
//! `lsocket.lua`, master's LuaSocket emulation (`socket.tcp()`,
//! `socket.connect`, `socket.bind`), for code ported from LuaSocket.
//! `require('socket')` loads it (`package.preload`), once per cord.
//!
//! - [`sock`]: socket objects, `close`, `fd`, `errno`, `error`, `__gc`;
//! - [`rbuf`]: the read-ahead buffer of `s:read()`;
//! - [`read`], [`recv`] and [`write`](mod@write): the I/O methods;
//! - [`conn`]: `bind`, `listen`, `accept`, `connect`, `shutdown`, names;
//! - [`opts`]: socket options, `nonblock`;
//! - [`wait`]: `readable`, `writable`, `wait`, `socket.iowait`, and the
//!   park every blocking method goes through;
//! - [`ctor`]: the socket makers, `getaddrinfo`;
//! - [`fast`]: on LuaJIT, `read` and `write` as Lua functions over FFI
//!   calls for the case that neither waits nor fails;
//! - [`addr`]: addresses and the names of families, types, protocols.
//!
//! Every method that waits does it in its C function, on the fiber's own
//! stack (docs/design.md, hard rules); it reads `errno` right after each
//! syscall, before any switch. Methods return nil (or false) with
//! `s:errno()` set on an I/O error, as Tarantool's do, and raise error
//! objects (`IllegalParams`) for bad arguments and closed sockets, and
//! `FiberIsCancelled` when the waiting fiber is cancelled.

mod addr;
mod conn;
mod ctor;
mod fast;
mod opts;
mod rbuf;
mod read;
mod recv;
mod sock;
mod wait;
mod write;

/// What `http.client`'s TLS sessions drive a socket object's fd with.
pub(crate) use sock::Sock;
/// The module's part of the cord context.
pub(crate) use sock::SockKind;
pub(crate) use wait::{park, Deadline};

/// The open socket object at `idx` (Tarantool's `check_socket`: its
/// usage errors), for a module that works on a socket's fd.
pub(crate) fn arg(s: &mut Stack, idx: c_int) -> LResult<std::rc::Rc<Sock>> {
    sock::this(s, idx)
}

use std::ffi::{c_int, CStr};

use crate::raw::{lua_fn, LResult, Raise, Reg, Stack};

/// The methods of socket objects written in C (and `read`, a closure: see
/// [`sock::init_metatable`]).
const METHODS: &[Reg] = &[
    (c"write", write::sock_write),
    (c"send", write::sock_send),
    (c"sendto", write::sock_sendto),
    (c"syswrite", write::sock_syswrite),
    (c"recv", recv::sock_recv),
    (c"recvfrom", recv::sock_recvfrom),
    (c"sysread", recv::sock_sysread),
    (c"readable", wait::sock_readable),
    (c"writable", wait::sock_writable),
    (c"wait", wait::sock_wait),
    (c"bind", conn::sock_bind),
    (c"listen", conn::sock_listen),
    (c"accept", conn::sock_accept),
    (c"sysconnect", conn::sock_sysconnect),
    (c"connect", conn::sock_connect),
    (c"shutdown", conn::sock_shutdown),
    (c"name", conn::sock_name),
    (c"peer", conn::sock_peer),
    (c"linger", opts::sock_linger),
    (c"nonblock", opts::sock_nonblock),
    (c"close", sock::sock_close),
    (c"detach", sock::sock_detach),
    (c"fd", sock::sock_fd),
    (c"errno", sock::sock_errno),
    (c"error", sock::sock_error),
];

/// The functions of `socket.internal` (Tarantool's `socket.lib`).
const INTERNAL: &[Reg] = &[
    (c"socket", ctor::internal_socket),
    (c"socketpair", ctor::internal_socketpair),
    (c"from_fd", ctor::socket_from_fd),
    (c"getaddrinfo", ctor::internal_getaddrinfo),
    (c"getprotobyname", ctor::internal_getprotobyname),
    (c"iowait", wait::socket_iowait),
    (c"setsockopt", opts::internal_setsockopt),
    (c"getsockopt", opts::internal_getsockopt),
    (c"is_closed", sock::sock_is_closed),
    (c"itype", sock::sock_itype),
    (c"set_errno", sock::sock_set_errno),
    (c"usage", ctor::internal_usage),
];

/// `send`/`recv` flags (`socket.internal.SEND_FLAGS`).
const SEND_FLAGS: &[(&CStr, c_int)] = &[
    (c"MSG_OOB", libc::MSG_OOB),
    (c"MSG_PEEK", libc::MSG_PEEK),
    (c"MSG_DONTROUTE", libc::MSG_DONTROUTE),
    (c"MSG_CTRUNC", libc::MSG_CTRUNC),
    (c"MSG_TRUNC", libc::MSG_TRUNC),
    (c"MSG_DONTWAIT", libc::MSG_DONTWAIT),
    (c"MSG_EOR", libc::MSG_EOR),
    (c"MSG_WAITALL", libc::MSG_WAITALL),
    (c"MSG_FIN", libc::MSG_FIN),
    (c"MSG_SYN", libc::MSG_SYN),
    (c"MSG_CONFIRM", libc::MSG_CONFIRM),
    (c"MSG_RST", libc::MSG_RST),
    (c"MSG_ERRQUEUE", libc::MSG_ERRQUEUE),
    (c"MSG_NOSIGNAL", libc::MSG_NOSIGNAL),
    (c"MSG_MORE", libc::MSG_MORE),
    (c"MSG_WAITFORONE", libc::MSG_WAITFORONE),
    (c"MSG_FASTOPEN", libc::MSG_FASTOPEN),
    (c"MSG_CMSG_CLOEXEC", libc::MSG_CMSG_CLOEXEC),
];

/// `getaddrinfo` flags (`socket.internal.AI_FLAGS`).
const AI_FLAGS: &[(&CStr, c_int)] = &[
    (c"AI_PASSIVE", libc::AI_PASSIVE),
    (c"AI_CANONNAME", libc::AI_CANONNAME),
    (c"AI_NUMERICHOST", libc::AI_NUMERICHOST),
    (c"AI_V4MAPPED", libc::AI_V4MAPPED),
    (c"AI_ALL", libc::AI_ALL),
    (c"AI_ADDRCONFIG", libc::AI_ADDRCONFIG),
    (c"AI_NUMERICSERV", libc::AI_NUMERICSERV),
];

/// `socket.lua`, run once per cord by the loader.
const CHUNK: &str = include_str!("socket.lua");
/// `lsocket.lua` (the LuaSocket emulation), which `socket.lua` runs.
const LSOCKET: &str = include_str!("lsocket.lua");

/// Pushes a table of `names`.
fn push_consts(s: &mut Stack, names: &[(&CStr, c_int)]) -> LResult<c_int> {
    s.ensure(3)?;
    let t = s.new_table(0, names.len() as c_int);
    for (name, value) in names {
        s.push_int((*value).into());
        s.set_field(t, name);
    }
    Ok(t)
}

/// Sets each function into the table at `t`.
fn set_funcs(s: &mut Stack, t: c_int, funcs: &[Reg]) -> LResult<()> {
    s.ensure(2)?;
    for (name, f) in funcs {
        s.push_cfunction(*f);
        s.set_field(t, name);
    }
    Ok(())
}

/// Pushes `socket.internal`: its functions and Tarantool's tables.
fn push_internal(s: &mut Stack) -> LResult<c_int> {
    s.ensure(4)?;
    let t = s.new_table(0, INTERNAL.len() as c_int + 8);
    set_funcs(s, t, INTERNAL)?;
    let d = s.new_table(0, 2 * addr::FAMILIES.len() as c_int);
    for (name, value) in addr::FAMILIES {
        for prefix in ["PF_", "AF_"] {
            s.push_str(&format!("{prefix}{}", name.to_string_lossy()));
            s.push_int((*value).into());
            s.rawset(d)?;
        }
    }
    s.set_field(t, c"DOMAIN");
    push_consts(s, addr::TYPES)?;
    s.set_field(t, c"SO_TYPE");
    push_consts(s, SEND_FLAGS)?;
    s.set_field(t, c"SEND_FLAGS");
    push_consts(s, AI_FLAGS)?;
    s.set_field(t, c"AI_FLAGS");
    push_consts(
        s,
        &[
            (c"ip", libc::IPPROTO_IP),
            (c"tcp", libc::IPPROTO_TCP),
            (c"udp", libc::IPPROTO_UDP),
        ],
    )?;
    s.set_field(t, c"protocols");
    s.push_int(libc::SOL_SOCKET.into());
    s.set_field(t, c"SOL_SOCKET");
    let so = s.new_table(0, 2);
    s.push_int(libc::SOL_SOCKET.into());
    opts::push_opts(s, opts::SOCKET_OPTS)?;
    s.rawset(so)?;
    s.push_int(libc::IPPROTO_TCP.into());
    opts::push_opts(s, opts::TCP_OPTS)?;
    s.rawset(so)?;
    s.set_field(t, c"SO_OPT");
    Ok(t)
}

lua_fn! {
    /// The `socket` module's loader (`package.preload.socket`): makes the
    /// metatable and `socket.internal`, and runs `socket.lua` over them
    /// (and `lsocket.lua`, the LuaSocket emulation), which gives the module.
    pub(crate) fn open(s: &mut Stack) {
        s.settop(0);
        s.ensure(8)?;
        let (mt, methods) = sock::init_metatable(s, METHODS)?;
        let internal = push_internal(s)?;
        s.load(CHUNK, c"=socket").map_err(|()| Raise::Top)?;
        s.ensure(5)?;
        s.push_value(internal);
        s.push_value(methods);
        s.push_value(mt);
        s.load(LSOCKET, c"=socket.lsocket").map_err(|()| Raise::Top)?;
        s.pcall(4, 1).map_err(|()| Raise::Top)?;
        fast::install(s, mt, methods)?;
        Ok(1)
    }
}
