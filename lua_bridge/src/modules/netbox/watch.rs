//! `net.box.lib`'s ID, WATCH/UNWATCH and next-sync steps (master's
//! `netbox_transport_do_id`, `luaT_netbox_transport_watch`/`_unwatch`
//! and `next_sync` of `net_box.c`); `watch.lua` is the Lua face of the
//! watchers.

use luafiber_iproto::{self as iproto, encode, feature, kind, mp::Reader};

use super::calls::{deadline_of, no_room, push_failure, transport};
use super::connect::round_trip;
use crate::raw::{lua_fn, Raise};

/// The protocol version this client states in ID (6: WATCH_ONCE's).
const VERSION: u64 = 6;

/// The features this client states in ID: watchers and WATCH_ONCE (no
/// streams, transactions or MP_ERROR values).
const FEATURES: [u32; 2] = [feature::WATCHERS, feature::WATCH_ONCE];

lua_fn! {
    /// `lib.id(t, timeout)`: ID on the connection (its reader running);
    /// the peer's protocol version and a sequence of its feature ids, or
    /// nil and the error object (a server before 2.10 answers error 48).
    pub(super) fn id(s: &mut Stack) {
        let t = transport(s, 1)?;
        let deadline = deadline_of(s.to_number(2));
        let req = round_trip(s, &t, deadline, |out, sync| {
            encode::encode_id(out, sync, VERSION, &FEATURES, None)
        })?;
        s.ensure(4)?;
        let done = req.done.borrow();
        match done.as_ref() {
            Some(Ok(body)) => {
                let reply = iproto::decode_id_reply(body)
                    .map_err(|e| Raise::illegal(format!("net.box: invalid ID reply: {e}")))?;
                s.push_number(reply.version as f64);
                let ids: Vec<u64> = reply
                    .features
                    .iter()
                    .filter_map(|v| Reader::new(v).uint())
                    .collect();
                let tab = s.new_table(ids.len() as i32, 0);
                for (i, f) in ids.iter().enumerate() {
                    s.push_number(*f as f64);
                    s.rawseti(tab, i as i64 + 1);
                }
                Ok(2)
            }
            Some(Err(f)) => {
                s.push_nil();
                push_failure(s, f);
                Ok(2)
            }
            None => unreachable!("ready"),
        }
    }
}

lua_fn! {
    /// `lib.watch(t, key, unwatch)`: queues WATCH (UNWATCH with `unwatch`)
    /// of `key`, sync 0; no reply comes. The caller checks the state and
    /// the peer's features.
    pub(super) fn watch(s: &mut Stack) {
        let t = transport(s, 1)?;
        let key = s.to_str(2).ok_or_else(|| Raise::illegal("net.box: a key expected"))?;
        let request = if s.to_bool(3) { kind::UNWATCH } else { kind::WATCH };
        let mut out = t.send.borrow_mut();
        let was_empty = out.is_empty();
        let at = out.used();
        if let Err(e) = iproto::encode_watch(&mut out, request, 0, key) {
            out.truncate(at);
            return Err(no_room(e));
        }
        drop(out);
        t.sent(was_empty);
        Ok(0)
    }
}

lua_fn! {
    /// `lib.next_sync(t)`: the sync the next request will have (master's
    /// `transport:next_sync()`, which tests put in packets they inject).
    pub(super) fn next_sync(s: &mut Stack) {
        let t = transport(s, 1)?;
        s.push_number(t.peek_sync() as f64);
        Ok(1)
    }
}
