//! The server's part of a graceful shutdown (Tarantool's
//! `iproto_drop_connections` of `src/box/iproto.cc`, called by
//! `box_shutdown` after the on_shutdown triggers): stop listening, let
//! the running requests finish and their replies go out, close the
//! connections. `box.internal.shutdown` (`misc.lua`) drives it with a
//! deadline.

use super::ServerState;
use crate::raw::context::Part;
use crate::raw::lua_fn;

lua_fn! {
    /// `box.internal.server_drain(force)`: stops listening (a Unix socket's
    /// file is removed) and closes every connection with no request
    /// running and no reply waiting to go out (with `force`: every
    /// connection); returns how many connections are left open. Called
    /// until it returns 0 or a deadline passes, then with `force`.
    pub(super) fn server_drain(s: &mut Stack) {
        let force = s.to_bool(1);
        let old = ServerState::with(|st| st.listening.replace(None));
        drop(old);
        let conns: Vec<_> = ServerState::with(|st| st.conns.borrow().values().cloned().collect());
        let mut left = 0;
        for c in conns {
            if c.is_closed() {
                continue;
            }
            if force || (c.in_flight() == 0 && !c.has_output()) {
                c.close();
            } else {
                left += 1;
            }
        }
        s.push_int(left);
        Ok(1)
    }
}
