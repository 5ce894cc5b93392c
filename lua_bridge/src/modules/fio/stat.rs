//! The tables `fio.stat`, `fio.lstat` and `fh:stat()` return: master's
//! `lbox_fio_pushstat` fields (`dev`, `inode`, `mode`, `nlink`, `uid`,
//! `gid`, `rdev`, `size`, `blksize`, `blocks`, `ctime`, `mtime`, `atime`,
//! the times in seconds with their fractions), with a metatable whose
//! `__index` has `is_reg`, `is_dir`, `is_chr`, `is_blk`, `is_fifo`,
//! `is_link`, `is_sock`.

use std::ffi::CStr;
use std::io;

use mlua::ffi;

use super::call::push_nil_error;
use super::sys::Stat;
use crate::raw::context::{Part, RegRef};
use crate::raw::{lua_fn, LResult, Raise, Stack};

/// Per-cord state of `fio`'s stat tables (a part of the cord context):
/// the registry ref of their metatable, made by [`init`].
#[derive(Default)]
pub(crate) struct StatMeta(RegRef);

/// Makes the stat tables' metatable (once per cord, by the loader).
pub(super) fn init(s: &mut Stack) -> LResult<()> {
    s.ensure(4)?;
    let mt = s.new_table(0, 1);
    let index = s.new_table(0, 7);
    s.set_funcs(
        index,
        &[
            (c"is_reg", is_reg),
            (c"is_dir", is_dir),
            (c"is_chr", is_chr),
            (c"is_blk", is_blk),
            (c"is_fifo", is_fifo),
            (c"is_link", is_link),
            (c"is_sock", is_sock),
        ],
    );
    s.set_field(mt, c"__index");
    StatMeta::with(|m| m.0.set(s.make_ref()));
    Ok(())
}

/// Pushes the stat table of `st`, or `nil, err`.
pub(super) fn push_result(s: &mut Stack, r: io::Result<Stat>) -> LResult {
    let st = match r {
        Ok(st) => st,
        Err(e) => return push_nil_error(s, &e),
    };
    s.ensure(4)?;
    let t = s.new_table(0, 13);
    let ints: [(&CStr, i64); 10] = [
        (c"dev", st.dev as i64),
        (c"inode", st.inode as i64),
        (c"mode", st.mode.into()),
        (c"nlink", st.nlink as i64),
        (c"uid", st.uid.into()),
        (c"gid", st.gid.into()),
        (c"rdev", st.rdev as i64),
        (c"size", st.size),
        (c"blksize", st.blksize),
        (c"blocks", st.blocks),
    ];
    for (name, v) in ints {
        s.push_int(v);
        s.set_field(t, name);
    }
    for (name, v) in [
        (c"ctime", st.ctime),
        (c"mtime", st.mtime),
        (c"atime", st.atime),
    ] {
        s.push_number(v);
        s.set_field(t, name);
    }
    s.push_ref(StatMeta::with(|m| m.0.get()));
    s.set_metatable(t);
    Ok(1)
}

/// The `mode` field of the stat table the method was called on, or
/// master's usage error.
fn mode(s: &mut Stack, name: &str) -> LResult<u32> {
    if s.type_of(1) != ffi::LUA_TTABLE {
        return Err(Raise::Message(format!("usage: stat:{name}()")));
    }
    s.rawget_field(1, c"mode");
    let m = s.to_number(-1).unwrap_or(0.0) as i64 as u32;
    s.pop(1);
    Ok(m)
}

/// Declares a `stat:is_*()` method testing the file type bits.
macro_rules! type_test {
    ($name:ident, $bits:expr) => {
        lua_fn! {
            #[doc = concat!("`stat:", stringify!($name), "()`.")]
            fn $name(s: &mut Stack) {
                let m = mode(s, stringify!($name))?;
                s.push_bool(m & libc::S_IFMT == $bits);
                Ok(1)
            }
        }
    };
}

type_test!(is_reg, libc::S_IFREG);
type_test!(is_dir, libc::S_IFDIR);
type_test!(is_chr, libc::S_IFCHR);
type_test!(is_blk, libc::S_IFBLK);
type_test!(is_fifo, libc::S_IFIFO);
type_test!(is_link, libc::S_IFLNK);
type_test!(is_sock, libc::S_IFSOCK);
