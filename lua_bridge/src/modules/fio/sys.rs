//! The system calls of `fio`, with no Lua: each runs on whatever thread
//! calls it (the cord's blocking pool, see [`call`](super::call)) and
//! returns an [`io::Result`] whose error carries the errno.
//!
//! Paths are bytes, cut at the first NUL as Tarantool's `lua_tostring`
//! strings are when they reach C. What `std` offers is used (`std::fs`,
//! `std::os::unix::fs`); `libc` for what it lacks (`glob`, `mkdtemp`,
//! `utimensat`, `sync`, `umask`, the `*at`-less calls on an fd number).

use std::ffi::{c_int, CString, OsStr};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::mem::ManuallyDrop;
use std::os::fd::{FromRawFd, IntoRawFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// A path argument: bytes up to the first NUL.
pub(crate) fn path(bytes: &[u8]) -> &Path {
    let end = memchr::memchr(0, bytes).unwrap_or(bytes.len());
    Path::new(OsStr::from_bytes(&bytes[..end]))
}

/// The path as a C string (cut at its first NUL, so it has none).
fn cpath(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).expect("a path cut at its first NUL")
}

/// The error of the last failed libc call.
fn last() -> io::Error {
    io::Error::last_os_error()
}

/// `rc` as a result: the errno when it is -1.
fn check(rc: c_int) -> io::Result<()> {
    match rc {
        -1 => Err(last()),
        _ => Ok(()),
    }
}

/// Runs `f` on a `File` over `fd` that never closes it.
fn with_fd<R>(fd: RawFd, f: impl FnOnce(&File) -> io::Result<R>) -> io::Result<R> {
    if fd < 0 {
        return Err(io::Error::from_raw_os_error(libc::EBADF));
    }
    // SAFETY: the `File` never closes the number (`ManuallyDrop`); a number
    // that is not open fails each call with `EBADF`, which the kernel
    // checks: no memory is at stake.
    let file = ManuallyDrop::new(unsafe { File::from_raw_fd(fd) });
    f(&file)
}

/// `open(2)` with Tarantool's numeric flags and mode; the new fd.
pub(crate) fn open(p: &Path, flags: c_int, mode: u32) -> io::Result<RawFd> {
    let access = flags & libc::O_ACCMODE;
    let file = OpenOptions::new()
        .read(access == libc::O_RDONLY || access == libc::O_RDWR)
        .write(access == libc::O_WRONLY || access == libc::O_RDWR)
        .custom_flags(flags & !libc::O_ACCMODE)
        .mode(mode)
        .open(p)?;
    Ok(file.into_raw_fd())
}

/// `close(2)`.
pub(crate) fn close(fd: RawFd) -> io::Result<()> {
    // SAFETY: closes a number the caller owns and never uses again.
    check(unsafe { libc::close(fd) })
}

/// One `read(2)` of at most `size` bytes at the file position.
pub(crate) fn read(fd: RawFd, size: usize) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; size];
    let n = with_fd(fd, |f| loop {
        match io::Read::read(&mut &*f, &mut buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => break r,
        }
    })?;
    buf.truncate(n);
    Ok(buf)
}

/// One `pread(2)` of at most `size` bytes at `offset`.
pub(crate) fn pread(fd: RawFd, size: usize, offset: u64) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; size];
    let n = with_fd(fd, |f| loop {
        match f.read_at(&mut buf, offset) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => break r,
        }
    })?;
    buf.truncate(n);
    Ok(buf)
}

/// `write(2)` until all of `data` is written (Tarantool's `coio_write`).
pub(crate) fn write(fd: RawFd, data: &[u8]) -> io::Result<()> {
    with_fd(fd, |f| io::Write::write_all(&mut &*f, data))
}

/// `pwrite(2)` until all of `data` is written at `offset`.
pub(crate) fn pwrite(fd: RawFd, data: &[u8], offset: u64) -> io::Result<()> {
    with_fd(fd, |f| f.write_all_at(data, offset))
}

/// `lseek(2)`: the new position.
pub(crate) fn lseek(fd: RawFd, offset: i64, whence: c_int) -> io::Result<i64> {
    // SAFETY: no memory is passed; a bad fd or whence is an errno.
    match unsafe { libc::lseek(fd, offset, whence) } {
        -1 => Err(last()),
        pos => Ok(pos),
    }
}

/// `ftruncate(2)`.
pub(crate) fn ftruncate(fd: RawFd, len: i64) -> io::Result<()> {
    // SAFETY: no memory is passed.
    check(unsafe { libc::ftruncate(fd, len) })
}

/// `fsync(2)`, or `fdatasync(2)` with `data_only`.
pub(crate) fn fsync(fd: RawFd, data_only: bool) -> io::Result<()> {
    // SAFETY: no memory is passed.
    check(unsafe {
        match data_only {
            true => libc::fdatasync(fd),
            false => libc::fsync(fd),
        }
    })
}

/// What `fio.stat` returns of a `struct stat`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stat {
    pub dev: u64,
    pub inode: u64,
    pub mode: u32,
    pub nlink: u64,
    pub uid: u32,
    pub gid: u32,
    pub rdev: u64,
    pub size: i64,
    pub blksize: i64,
    pub blocks: i64,
    /// Seconds since the epoch, with the nanoseconds as a fraction.
    pub ctime: f64,
    pub mtime: f64,
    pub atime: f64,
}

impl From<fs::Metadata> for Stat {
    fn from(m: fs::Metadata) -> Stat {
        use std::os::unix::fs::MetadataExt;
        let time = |s: i64, ns: i64| s as f64 + ns as f64 / 1e9;
        Stat {
            dev: m.dev(),
            inode: m.ino(),
            mode: m.mode(),
            nlink: m.nlink(),
            uid: m.uid(),
            gid: m.gid(),
            rdev: m.rdev(),
            size: m.size() as i64,
            blksize: m.blksize() as i64,
            blocks: m.blocks() as i64,
            ctime: time(m.ctime(), m.ctime_nsec()),
            mtime: time(m.mtime(), m.mtime_nsec()),
            atime: time(m.atime(), m.atime_nsec()),
        }
    }
}

/// `stat(2)`, or `lstat(2)` with `link`.
pub(crate) fn stat(p: &Path, link: bool) -> io::Result<Stat> {
    match link {
        true => fs::symlink_metadata(p),
        false => fs::metadata(p),
    }
    .map(Stat::from)
}

/// `fstat(2)`.
pub(crate) fn fstat(fd: RawFd) -> io::Result<Stat> {
    with_fd(fd, |f| f.metadata()).map(Stat::from)
}

/// `mkdir(2)` with `mode`.
pub(crate) fn mkdir(p: &Path, mode: u32) -> io::Result<()> {
    fs::DirBuilder::new().mode(mode).create(p)
}

/// `chmod(2)`.
pub(crate) fn chmod(p: &Path, mode: u32) -> io::Result<()> {
    fs::set_permissions(p, fs::Permissions::from_mode(mode))
}

/// `chown(2)` with numeric ids (-1 keeps one: `u32::MAX`).
pub(crate) fn chown(p: &Path, uid: u32, gid: u32) -> io::Result<()> {
    let keep = |id: u32| (id != u32::MAX).then_some(id);
    std::os::unix::fs::chown(p, keep(uid), keep(gid))
}

/// `truncate(2)`.
pub(crate) fn truncate(p: &Path, len: i64) -> io::Result<()> {
    let c = cpath(p);
    // SAFETY: `c` is a NUL-terminated string alive for the call.
    check(unsafe { libc::truncate(c.as_ptr(), len) })
}

/// `utimensat(2)` with times in seconds (fractions kept to the
/// nanosecond), as libeio's `utime` sets them.
pub(crate) fn utime(p: &Path, atime: f64, mtime: f64) -> io::Result<()> {
    let ts = |t: f64| libc::timespec {
        tv_sec: t.floor() as libc::time_t,
        tv_nsec: ((t - t.floor()) * 1e9) as _,
    };
    let times = [ts(atime), ts(mtime)];
    let c = cpath(p);
    // SAFETY: `c` is a NUL-terminated string and `times` two timespecs,
    // both alive for the call.
    check(unsafe { libc::utimensat(libc::AT_FDCWD, c.as_ptr(), times.as_ptr(), 0) })
}

/// The names in a directory but `.` and `..`, in the order it gives them.
pub(crate) fn listdir(p: &Path) -> io::Result<Vec<Vec<u8>>> {
    fs::read_dir(p)?
        .map(|e| e.map(|e| e.file_name().as_bytes().to_vec()))
        .collect()
}

/// `glob(3)` with `GLOB_NOESCAPE`: the matches (none: empty).
pub(crate) fn glob(pattern: &[u8]) -> io::Result<Vec<Vec<u8>>> {
    let c = cpath(path(pattern));
    // SAFETY: all-zero is a valid `glob_t` (counts and null pointers).
    let mut g: libc::glob_t = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is NUL-terminated and `g` a valid glob_t, both alive for
    // the call; no error callback.
    let rc = unsafe { libc::glob(c.as_ptr(), libc::GLOB_NOESCAPE, None, &mut g) };
    let found = match rc {
        0 => (0..g.gl_pathc)
            .map(|i| {
                // SAFETY: glob filled `gl_pathv` with `gl_pathc`
                // NUL-terminated strings, alive until `globfree`.
                unsafe { std::ffi::CStr::from_ptr(*g.gl_pathv.add(i)) }
                    .to_bytes()
                    .to_vec()
            })
            .collect(),
        libc::GLOB_NOMATCH => Vec::new(),
        _ => Err(io::Error::from_raw_os_error(libc::ENOMEM))?,
    };
    // SAFETY: `g` was filled by `glob` (or is all-zero), freed once.
    unsafe { libc::globfree(&mut g) };
    Ok(found)
}

/// The target of a symbolic link.
pub(crate) fn readlink(p: &Path) -> io::Result<Vec<u8>> {
    fs::read_link(p).map(|t| t.into_os_string().as_bytes().to_vec())
}

/// `PATH_MAX`: the longest template `tempdir` makes.
const PATH_MAX: usize = libc::PATH_MAX as usize;

/// A new directory `$TMPDIR/XXXXXX` (`/tmp` when `TMPDIR` is unset) made by
/// `mkdtemp(3)`; `ENOMEM` when the template would not fit `PATH_MAX`, as
/// Tarantool's `coio_tempdir`.
pub(crate) fn tempdir() -> io::Result<Vec<u8>> {
    let base = std::env::var_os("TMPDIR");
    let base = base.as_deref().map_or(b"/tmp" as &[u8], OsStr::as_bytes);
    let mut tpl = base.to_vec();
    tpl.extend_from_slice(b"/XXXXXX");
    if tpl.len() >= PATH_MAX || memchr::memchr(0, &tpl).is_some() {
        return Err(io::Error::from_raw_os_error(libc::ENOMEM));
    }
    tpl.push(0);
    // SAFETY: `tpl` is a NUL-terminated, writable template alive for the
    // call; mkdtemp writes only its last six bytes before the NUL.
    let made = unsafe { libc::mkdtemp(tpl.as_mut_ptr().cast()) };
    if made.is_null() {
        return Err(last());
    }
    tpl.pop();
    Ok(tpl)
}

/// `sync(2)`.
pub(crate) fn sync() {
    // SAFETY: no arguments.
    unsafe { libc::sync() };
}

/// Copies the file at `from` to `to` (made with the mode bits of `from`,
/// or truncated), as Tarantool's `coio_copyfile` (which `sendfile`s;
/// `std::io::copy` uses `copy_file_range` or `sendfile`).
pub(crate) fn copyfile(from: &Path, to: &Path) -> io::Result<()> {
    let mode = fs::metadata(from)?.permissions().mode() & 0o777;
    let mut src = File::open(from)?;
    let mut dst = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(to)?;
    io::copy(&mut src, &mut dst).map(drop)
}

/// `umask(2)`: sets `mask`, gives the one before.
pub(crate) fn umask(mask: u32) -> u32 {
    // SAFETY: no memory is passed.
    unsafe { libc::umask(mask as libc::mode_t) as u32 }
}

/// The user id of a user name (`getpwnam_r`); `None` when there is none.
pub(crate) fn uid_of(name: &[u8]) -> Option<u32> {
    let name = CString::new(name).ok()?;
    let mut buf = vec![0u8; 1024];
    loop {
        // SAFETY: all-zero is a valid `passwd` (null pointers, zero ids).
        let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: every pointer is valid for the call, `buf` for its
        // length; the result points into `pw` or is null.
        let rc = unsafe {
            libc::getpwnam_r(
                name.as_ptr(),
                &mut pw,
                buf.as_mut_ptr().cast(),
                buf.len(),
                &mut found,
            )
        };
        match rc {
            libc::ERANGE if buf.len() < 1 << 20 => buf.resize(buf.len() * 2, 0),
            0 if !found.is_null() => return Some(pw.pw_uid),
            _ => return None,
        }
    }
}

/// The group id of a group name (`getgrnam_r`); `None` when there is none.
pub(crate) fn gid_of(name: &[u8]) -> Option<u32> {
    let name = CString::new(name).ok()?;
    let mut buf = vec![0u8; 1024];
    loop {
        // SAFETY: all-zero is a valid `group` (null pointers, zero id).
        let mut gr: libc::group = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::group = std::ptr::null_mut();
        // SAFETY: every pointer is valid for the call, `buf` for its
        // length; the result points into `gr` or is null.
        let rc = unsafe {
            libc::getgrnam_r(
                name.as_ptr(),
                &mut gr,
                buf.as_mut_ptr().cast(),
                buf.len(),
                &mut found,
            )
        };
        match rc {
            libc::ERANGE if buf.len() < 1 << 20 => buf.resize(buf.len() * 2, 0),
            0 if !found.is_null() => return Some(gr.gr_gid),
            _ => return None,
        }
    }
}

/// POSIX `dirname(3)` as glibc gives it: the path without its last
/// component and the slashes before it; `.` for a name with no slash, `/`
/// for the root (and `//` for exactly `//`).
pub(crate) fn dirname(p: &[u8]) -> &[u8] {
    let trimmed = match p.iter().rposition(|&b| b != b'/') {
        Some(end) => &p[..=end],
        // Only slashes (or empty).
        None if p.is_empty() => return b".",
        None if p.len() == 2 => return b"//",
        None => return b"/",
    };
    match trimmed.iter().rposition(|&b| b == b'/') {
        None => b".",
        Some(slash) => match trimmed[..slash].iter().rposition(|&b| b != b'/') {
            Some(end) => &trimmed[..=end],
            None if slash == 1 => b"//",
            None => b"/",
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dirname_as_glibc() {
        for (p, d) in [
            ("abc", "."),
            ("/abc", "/"),
            ("/abc/cde", "/abc"),
            ("/abc/cde/", "/abc"),
            ("/", "/"),
            ("", "."),
            ("a//b//", "a"),
            ("///x", "/"),
            ("//x", "//"),
        ] {
            assert_eq!(dirname(p.as_bytes()), d.as_bytes(), "dirname({p:?})");
        }
    }

    #[test]
    fn glob_and_tempdir() {
        let dir = tempdir().unwrap();
        let d = path(&dir);
        fs::write(d.join("a.txt"), "x").unwrap();
        fs::write(d.join("b.txt"), "y").unwrap();
        let mut pat = dir.clone();
        pat.extend_from_slice(b"/*.txt");
        assert_eq!(glob(&pat).unwrap().len(), 2);
        pat.extend_from_slice(b"none");
        assert!(glob(&pat).unwrap().is_empty());
        fs::remove_dir_all(d).unwrap();
    }
}
