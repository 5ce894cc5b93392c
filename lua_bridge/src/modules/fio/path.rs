//! The path functions of `fio` written in C in master's `fio.c` and
//! `minifio.c` (`stat`, `lstat`, `mkdir`, `rmdir`, `glob`, `link`,
//! `symlink`, `readlink`, `unlink`, `rename`, `chown`, `chmod`,
//! `truncate`, `tempdir`, `sync`, `cwd`) and the helpers of `fio.internal`
//! that `fio.lua` builds the others on (`listdir`, `copyfile`, `utime`,
//! `chdir`, `umask`, `dirname`, `bor`).
//!
//! Argument errors are strings, as master's `luaL_error` raises them
//! ("Usage: fio.link(target, linkpath)"); system errors are `false, err`
//! or `nil, err` with `errno()` set ([`call`]).

use std::ffi::c_int;
use std::io;

use super::call::{self, blocking, push_bool, push_nil_error, text, usage};
use super::stat;
use super::sys;
use crate::modules::errno;
use crate::raw::{lua_fn, LResult, Raise, Stack};

/// The path argument at `idx` (a string or number), or `usage`.
fn path_arg(s: &mut Stack, idx: c_int, msg: &str) -> LResult<Vec<u8>> {
    if s.top() < idx {
        return Err(usage(msg));
    }
    text(s, idx).ok_or_else(|| usage(msg))
}

/// Runs the path call `f` on the pool and pushes `true` or `false, err`.
fn bool_call(s: &mut Stack, f: impl FnOnce() -> io::Result<()> + Send + 'static) -> LResult {
    let r = blocking(s, f)?;
    push_bool(s, r)
}

lua_fn! {
    /// `fio.stat(path)`: the stat table, or `nil, err`.
    pub(super) fn fio_stat(s: &mut Stack) {
        let p = path_arg(s, 1, "Usage: fio.stat(pathname)")?;
        let r = blocking(s, move || sys::stat(sys::path(&p), false))?;
        stat::push_result(s, r)
    }
}

lua_fn! {
    /// `fio.lstat(path)`: the stat table of a link itself, or `nil, err`.
    pub(super) fn fio_lstat(s: &mut Stack) {
        let p = path_arg(s, 1, "pathname is absent")?;
        let r = blocking(s, move || sys::stat(sys::path(&p), true))?;
        stat::push_result(s, r)
    }
}

lua_fn! {
    /// `fio.mkdir(path[, mode])`: mode 0777 (less the umask) by default.
    pub(super) fn fio_mkdir(s: &mut Stack) {
        let p = path_arg(s, 1, "Usage fio.mkdir(pathname[, mode])")?;
        let mode = match s.is_none_or_nil(2) {
            true => 0o777,
            false => s.to_number_coerced(2).unwrap_or(0.0) as i64 as u32,
        };
        bool_call(s, move || sys::mkdir(sys::path(&p), mode))
    }
}

lua_fn! {
    /// `fio.rmdir(path)`.
    pub(super) fn fio_rmdir(s: &mut Stack) {
        let p = path_arg(s, 1, "Usage: fio.rmdir(pathname)")?;
        bool_call(s, move || std::fs::remove_dir(sys::path(&p)))
    }
}

lua_fn! {
    /// `fio.unlink(path)`.
    pub(super) fn fio_unlink(s: &mut Stack) {
        let p = path_arg(s, 1, "Usage: fio.unlink(pathname)")?;
        bool_call(s, move || std::fs::remove_file(sys::path(&p)))
    }
}

/// The two path arguments of `link`, `symlink`, `rename`.
fn two_paths(s: &mut Stack, msg: &str) -> LResult<(Vec<u8>, Vec<u8>)> {
    if s.top() < 2 {
        return Err(usage(msg));
    }
    let a = text(s, 1);
    let b = text(s, 2);
    a.zip(b).ok_or_else(|| usage(msg))
}

lua_fn! {
    /// `fio.link(target, linkpath)`: a hard link.
    pub(super) fn fio_link(s: &mut Stack) {
        let (a, b) = two_paths(s, "Usage: fio.link(target, linkpath)")?;
        bool_call(s, move || std::fs::hard_link(sys::path(&a), sys::path(&b)))
    }
}

lua_fn! {
    /// `fio.symlink(target, linkpath)`.
    pub(super) fn fio_symlink(s: &mut Stack) {
        let (a, b) = two_paths(s, "Usage: fio.symlink(target, linkpath)")?;
        bool_call(s, move || std::os::unix::fs::symlink(sys::path(&a), sys::path(&b)))
    }
}

lua_fn! {
    /// `fio.rename(oldpath, newpath)`.
    pub(super) fn fio_rename(s: &mut Stack) {
        let (a, b) = two_paths(s, "Usage: fio.rename(oldpath, newpath)")?;
        bool_call(s, move || std::fs::rename(sys::path(&a), sys::path(&b)))
    }
}

lua_fn! {
    /// `fio.readlink(path)`: the link's target, or `nil, err`.
    pub(super) fn fio_readlink(s: &mut Stack) {
        let p = path_arg(s, 1, "Usage: fio.readlink(pathname)")?;
        match blocking(s, move || sys::readlink(sys::path(&p)))? {
            Ok(t) => {
                s.push_bytes(&t);
                Ok(1)
            }
            Err(e) => push_nil_error(s, &e),
        }
    }
}

lua_fn! {
    /// `fio.glob(pattern)`: the matching paths (an empty table for none),
    /// or nil with `errno()` `ENOMEM` when `glob(3)` fails otherwise.
    pub(super) fn fio_glob(s: &mut Stack) {
        let pat = path_arg(s, 1, "Usage: fio.glob(pattern)")?;
        match blocking(s, move || sys::glob(&pat))? {
            Ok(found) => {
                s.ensure(3)?;
                let t = s.new_table(found.len() as c_int, 0);
                for (i, p) in found.iter().enumerate() {
                    s.push_bytes(p);
                    s.rawseti(t, i as i64 + 1);
                }
                Ok(1)
            }
            Err(e) => {
                errno::set(call::errno_of(&e));
                s.push_nil();
                Ok(1)
            }
        }
    }
}

/// A user or group argument of `chown`: an id, or a name to look up.
enum Owner {
    Id(u32),
    Name(Vec<u8>),
}

impl Owner {
    fn arg(s: &mut Stack, idx: c_int) -> Owner {
        match s.to_number_coerced(idx) {
            Some(n) => Owner::Id(n as i64 as u32),
            None => Owner::Name(text(s, idx).unwrap_or_default()),
        }
    }

    /// The id (`None` for an unknown name), a name looked up with
    /// `lookup`.
    fn id(self, lookup: fn(&[u8]) -> Option<u32>) -> Option<u32> {
        match self {
            Owner::Id(id) => Some(id),
            Owner::Name(n) => lookup(&n),
        }
    }
}

lua_fn! {
    /// `fio.chown(path, owner, group)`: ids or names (looked up on the
    /// pool too: NSS may read files or ask a server); nil with `errno()`
    /// `EINVAL` for an unknown name.
    pub(super) fn fio_chown(s: &mut Stack) {
        const USAGE: &str = "Usage: fio.chown(pathname, owner, group)";
        if s.top() < 3 {
            return Err(usage(USAGE));
        }
        let p = path_arg(s, 1, USAGE)?;
        let (user, group) = (Owner::arg(s, 2), Owner::arg(s, 3));
        let r = blocking(s, move || {
            let (Some(uid), Some(gid)) = (user.id(sys::uid_of), group.id(sys::gid_of)) else {
                return Ok(false);
            };
            sys::chown(sys::path(&p), uid, gid).map(|()| true)
        })?;
        match r {
            Ok(false) => {
                errno::set(libc::EINVAL);
                s.push_nil();
                Ok(1)
            }
            r => push_bool(s, r.map(drop)),
        }
    }
}

lua_fn! {
    /// `fio.chmod(path, mode)`.
    pub(super) fn fio_chmod(s: &mut Stack) {
        if s.top() < 2 {
            return Err(usage("Usage: fio.chmod(pathname, mode)"));
        }
        let p = path_arg(s, 1, "Usage: fio.chmod(pathname, mode)")?;
        let mode = s.to_number_coerced(2).unwrap_or(0.0) as i64 as u32;
        bool_call(s, move || sys::chmod(sys::path(&p), mode))
    }
}

lua_fn! {
    /// `fio.truncate(path[, length])`: length 0 by default.
    pub(super) fn fio_truncate(s: &mut Stack) {
        let p = path_arg(s, 1, "Usage: fio.truncate(pathname[, newlen])")?;
        let len = s.to_number_coerced(2).unwrap_or(0.0) as i64;
        bool_call(s, move || sys::truncate(sys::path(&p), len))
    }
}

lua_fn! {
    /// `fio.tempdir()`: a new directory under `$TMPDIR` (or `/tmp`), or
    /// `nil, err`.
    pub(super) fn fio_tempdir(s: &mut Stack) {
        match blocking(s, sys::tempdir)? {
            Ok(d) => {
                s.push_bytes(&d);
                Ok(1)
            }
            Err(e) => push_nil_error(s, &e),
        }
    }
}

lua_fn! {
    /// `fio.sync()`: `true`.
    pub(super) fn fio_sync(s: &mut Stack) {
        bool_call(s, || {
            sys::sync();
            Ok(())
        })
    }
}

lua_fn! {
    /// `fio.cwd()`: the working directory, or `nil, err` (on the cord, as
    /// master's `minifio.cwd`: `getcwd(3)` reads no disk).
    pub(super) fn fio_cwd(s: &mut Stack) {
        match std::env::current_dir() {
            Ok(d) => {
                s.push_bytes(std::os::unix::ffi::OsStrExt::as_bytes(d.as_os_str()));
                Ok(1)
            }
            Err(e) => push_nil_error(s, &e),
        }
    }
}

lua_fn! {
    /// `fio.internal.listdir(path)`: the names in the directory, or `nil,
    /// err`.
    pub(super) fn internal_listdir(s: &mut Stack) {
        let p = path_arg(s, 1, "Usage: fio.listdir(pathname)")?;
        match blocking(s, move || sys::listdir(sys::path(&p)))? {
            Ok(names) => {
                s.ensure(3)?;
                let t = s.new_table(names.len() as c_int, 0);
                for (i, n) in names.iter().enumerate() {
                    s.push_bytes(n);
                    s.rawseti(t, i as i64 + 1);
                }
                Ok(1)
            }
            Err(e) => push_nil_error(s, &e),
        }
    }
}

lua_fn! {
    /// `fio.internal.copyfile(from, to)`: `true`, or `false, err`.
    pub(super) fn internal_copyfile(s: &mut Stack) {
        let (a, b) = two_paths(s, "Usage: fio.copyfile(from, to)")?;
        bool_call(s, move || sys::copyfile(sys::path(&a), sys::path(&b)))
    }
}

lua_fn! {
    /// `fio.internal.utime(path, atime, mtime)`: times in seconds.
    pub(super) fn internal_utime(s: &mut Stack) {
        let p = path_arg(s, 1, "Usage: fio.utime(filepath[, atime[, mtime]])")?;
        let atime = s.to_number_coerced(2).unwrap_or(0.0);
        let mtime = s.to_number_coerced(3).unwrap_or(0.0);
        bool_call(s, move || sys::utime(sys::path(&p), atime, mtime))
    }
}

lua_fn! {
    /// `fio.internal.chdir(path)`: whether `chdir(2)` went well (on the
    /// cord, as master's FFI call), `errno()` set when not.
    pub(super) fn internal_chdir(s: &mut Stack) {
        let p = path_arg(s, 1, "Usage: fio.chdir(path)")?;
        let ok = match std::env::set_current_dir(sys::path(&p)) {
            Ok(()) => true,
            Err(e) => {
                errno::set(call::errno_of(&e));
                false
            }
        };
        s.push_bool(ok);
        Ok(1)
    }
}

lua_fn! {
    /// `fio.internal.umask([mask])`: sets `mask` and gives the one before;
    /// with none, gives the current one and keeps it.
    pub(super) fn internal_umask(s: &mut Stack) {
        let old = match s.to_number_coerced(1) {
            Some(m) => sys::umask(m as i64 as u32),
            None => {
                let old = sys::umask(0);
                sys::umask(old);
                old
            }
        };
        s.push_int(old.into());
        Ok(1)
    }
}

lua_fn! {
    /// `fio.internal.dirname(path)`: glibc's `dirname(3)` of the string.
    pub(super) fn internal_dirname(s: &mut Stack) {
        let p = s
            .to_str(1)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| Raise::Message("Usage: fio.dirname(path)".into()))?;
        s.push_bytes(sys::dirname(&p));
        Ok(1)
    }
}

lua_fn! {
    /// `fio.internal.bor(...)`: the bitwise or of its integer arguments
    /// (LuaJIT's `bit.bor`; `fio.lua` runs on Lua 5.4 too).
    pub(super) fn internal_bor(s: &mut Stack) {
        let mut v: i64 = 0;
        for i in 1..=s.top() {
            v |= s.to_number_coerced(i).unwrap_or(0.0) as i64;
        }
        s.push_int(v);
        Ok(1)
    }
}
