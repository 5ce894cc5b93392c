//! The Lua `fio` module: Tarantool master's `src/lua/fio.lua`, `fio.c` and
//! `minifio` (file handles and path functions), each system call run on
//! the cord's blocking pool while only the calling fiber waits, as
//! Tarantool's `coio` runs them on libeio's threads.
//!
//! Two halves, as in Tarantool: C functions (the system calls:
//! [`handle`] for file handles, [`path`] for the path functions, [`stat`]
//! for the stat tables, [`sys`] the calls themselves with no Lua, and
//! [`call`] how each runs on the pool and reports its errors) and
//! `fio.lua`, which builds `fio.open`, the handle methods, `pathjoin`,
//! `abspath`, `basename`, `mktree`, `rmtree`, `copytree`, `utime` and
//! `fio.path` on them. `require('fio')` loads it (`package.preload`), once
//! per cord.
//!
//! Errors are master's: a wrong argument raises a string (`"Usage:
//! fio.link(target, linkpath)"`, or `"builtin/fio.lua:N: Usage: ..."` from
//! the Lua half); a failed system call returns `nil, err` (`false, err`
//! for the calls that return a boolean) with `errno()` set, `err` a
//! `SystemError` object whose message is `"fio: " .. strerror(errno)`.
//!
//! Differences from Tarantool:
//!
//! - A handle is a userdata (master: a `struct fio_handle` cdata): `fh.fh`
//!   is its fd (-1 once closed) and cannot be assigned; a handle the GC
//!   collects while open closes its fd at once (master: on a worker
//!   fiber).
//! - A fiber cancelled while its call runs on the pool gets
//!   `FiberIsCancelled` at once (master's `coio` waits for the call); the
//!   call runs on to its end. The bytes a call reads or writes are copied
//!   between Lua and the pool thread (one copy each way).
//! - The buffer-pointer forms (`fh:read(buf, size)`, `fh:write(buf,
//!   len)`, `fh:pread(buf, size, offset)`, `fh:pwrite(buf, len, offset)`)
//!   need the FFI: on Lua 5.4 they raise.
//! - `fio.listdir` gets the names from the C half as a table (master
//!   joins them with newlines and splits them again, which breaks names
//!   with a newline).

pub(crate) mod call;
pub(crate) mod handle;
mod path;
pub(crate) mod stat;
mod sys;

use std::ffi::{c_int, CStr};

use crate::raw::{lua_fn, LResult, Raise, Reg, Stack};

/// The functions of the module table written in C.
const FUNCS: &[Reg] = &[
    (c"stat", path::fio_stat),
    (c"lstat", path::fio_lstat),
    (c"mkdir", path::fio_mkdir),
    (c"rmdir", path::fio_rmdir),
    (c"glob", path::fio_glob),
    (c"link", path::fio_link),
    (c"symlink", path::fio_symlink),
    (c"readlink", path::fio_readlink),
    (c"unlink", path::fio_unlink),
    (c"rename", path::fio_rename),
    (c"chown", path::fio_chown),
    (c"chmod", path::fio_chmod),
    (c"truncate", path::fio_truncate),
    (c"tempdir", path::fio_tempdir),
    (c"sync", path::fio_sync),
    (c"cwd", path::fio_cwd),
];

/// The functions `fio.lua` builds on (master's `fio.internal`, which it
/// takes out of the module).
const INTERNAL: &[Reg] = &[
    (c"open", handle::internal_open),
    (c"close", handle::internal_close),
    (c"fd", handle::internal_fd),
    (c"read", handle::internal_read),
    (c"pread", handle::internal_pread),
    (c"write", handle::internal_write),
    (c"pwrite", handle::internal_pwrite),
    (c"lseek", handle::internal_lseek),
    (c"ftruncate", handle::internal_ftruncate),
    (c"fsync", handle::internal_fsync),
    (c"fdatasync", handle::internal_fdatasync),
    (c"fstat", handle::internal_fstat),
    (c"listdir", path::internal_listdir),
    (c"copyfile", path::internal_copyfile),
    (c"utime", path::internal_utime),
    (c"chdir", path::internal_chdir),
    (c"umask", path::internal_umask),
    (c"dirname", path::internal_dirname),
    (c"bor", path::internal_bor),
];

/// `fio.c.flag`: the `open(2)` flags this system has.
const FLAGS: &[(&CStr, c_int)] = &[
    (c"O_APPEND", libc::O_APPEND),
    (c"O_ASYNC", libc::O_ASYNC),
    (c"O_CLOEXEC", libc::O_CLOEXEC),
    (c"O_CREAT", libc::O_CREAT),
    (c"O_DIRECT", libc::O_DIRECT),
    (c"O_DIRECTORY", libc::O_DIRECTORY),
    (c"O_EXCL", libc::O_EXCL),
    (c"O_LARGEFILE", libc::O_LARGEFILE),
    (c"O_NOATIME", libc::O_NOATIME),
    (c"O_NOCTTY", libc::O_NOCTTY),
    (c"O_NOFOLLOW", libc::O_NOFOLLOW),
    (c"O_NONBLOCK", libc::O_NONBLOCK),
    (c"O_NDELAY", libc::O_NDELAY),
    (c"O_PATH", libc::O_PATH),
    (c"O_SYNC", libc::O_SYNC),
    (c"O_TMPFILE", libc::O_TMPFILE),
    (c"O_TRUNC", libc::O_TRUNC),
    (c"O_RDONLY", libc::O_RDONLY),
    (c"O_WRONLY", libc::O_WRONLY),
    (c"O_RDWR", libc::O_RDWR),
];

/// `fio.c.mode`: the permission bits.
const MODES: &[(&CStr, u32)] = &[
    (c"S_IRWXU", libc::S_IRWXU),
    (c"S_IRUSR", libc::S_IRUSR),
    (c"S_IWUSR", libc::S_IWUSR),
    (c"S_IXUSR", libc::S_IXUSR),
    (c"S_IRWXG", libc::S_IRWXG),
    (c"S_IRGRP", libc::S_IRGRP),
    (c"S_IWGRP", libc::S_IWGRP),
    (c"S_IXGRP", libc::S_IXGRP),
    (c"S_IRWXO", libc::S_IRWXO),
    (c"S_IROTH", libc::S_IROTH),
    (c"S_IWOTH", libc::S_IWOTH),
    (c"S_IXOTH", libc::S_IXOTH),
];

/// `fio.c.seek`: the `whence` values of `lseek(2)`.
const SEEKS: &[(&CStr, c_int)] = &[
    (c"SEEK_SET", libc::SEEK_SET),
    (c"SEEK_CUR", libc::SEEK_CUR),
    (c"SEEK_END", libc::SEEK_END),
    (c"SEEK_DATA", libc::SEEK_DATA),
    (c"SEEK_HOLE", libc::SEEK_HOLE),
];

/// `fio.lua`, run once per cord by the loader.
const CHUNK: &str = include_str!("fio.lua");

/// Pushes a table of named integers.
fn push_consts<N: Copy + Into<i64>>(s: &mut Stack, names: &[(&CStr, N)]) -> LResult<c_int> {
    s.ensure(3)?;
    let t = s.new_table(0, names.len() as c_int);
    for (name, value) in names {
        s.push_int((*value).into());
        s.set_field(t, name);
    }
    Ok(t)
}

lua_fn! {
    /// The `fio` module's loader (`package.preload.fio`): makes the module
    /// table, its constants (`fio.c.flag`, `fio.c.mode`, `fio.c.seek`),
    /// the handles' and stat tables' metatables, and runs `fio.lua` over
    /// them, which gives the module.
    pub(crate) fn open(s: &mut Stack) {
        s.settop(0);
        s.ensure(8)?;
        let module = s.new_table(0, 48);
        s.set_funcs(module, FUNCS);
        let c = s.new_table(0, 3);
        push_consts(s, FLAGS)?;
        s.set_field(c, c"flag");
        push_consts(s, MODES)?;
        s.set_field(c, c"mode");
        push_consts(s, SEEKS)?;
        s.set_field(c, c"seek");
        s.set_field(module, c"c");
        let internal = s.new_table(0, INTERNAL.len() as c_int);
        s.set_funcs(internal, INTERNAL);
        let mt = handle::init(s)?;
        stat::init(s)?;
        s.load(CHUNK, c"=builtin/fio.lua").map_err(|()| Raise::Top)?;
        s.ensure(4)?;
        s.push_value(module);
        s.push_value(internal);
        s.push_value(mt);
        s.pcall(3, 1).map_err(|()| Raise::Top)?;
        Ok(1)
    }
}
