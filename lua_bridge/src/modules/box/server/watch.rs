//! The watchable keys of `box.broadcast`, and the IPROTO side of
//! watchers: WATCH, UNWATCH, WATCH_ONCE and the EVENTs the server sends
//! (Tarantool master's `src/box/watcher.c` and `session_watch` of
//! `src/box/session.c`, with `iproto_session_notify`), with no Lua.
//!
//! A key's value is one whole MessagePack value (or none) and a version
//! bumped by every broadcast. A session watching a key gets an EVENT with
//! the value when it subscribes, then one per change, but only after it
//! acknowledged the last by sending WATCH again; a change made before the
//! acknowledgement is sent when it comes (values in between are skipped,
//! as Tarantool's explicit-ack watchers do). `box.watch` (the local
//! watchers, `watcher.lua`) reads the values through
//! `box.internal.watch_get`.

use std::collections::HashMap;
use std::rc::Rc;

use luafiber_iproto::encode_event;

use super::conn::Conn;
use super::ServerState;
use crate::raw::context::Part;
use crate::raw::{lua_fn, Raise};

/// One session's subscription to a key.
struct Sub {
    /// The sync of its last WATCH (EVENTs echo it).
    sync: u64,
    /// The key's version its last EVENT carried.
    sent: u64,
    /// It acknowledged that EVENT (it gets the next change at once).
    acked: bool,
}

/// A key: its value, version and the sessions watching it.
#[derive(Default)]
struct Node {
    data: Option<Rc<[u8]>>,
    version: u64,
    subs: HashMap<u64, Sub>,
}

impl Node {
    fn is_unused(&self) -> bool {
        self.data.is_none() && self.subs.is_empty()
    }
}

/// The keys of a cord (a part of [`ServerState`]).
#[derive(Default)]
pub(crate) struct Events {
    nodes: HashMap<Vec<u8>, Node>,
}

/// Sends `conn` an EVENT for `key`.
fn notify(conn: &Conn, sync: u64, key: &[u8], data: Option<&[u8]>) {
    conn.send_with(|out| encode_event(out, sync, key, data));
}

/// Sets `key`'s value (`None`: no value) and sends an EVENT to each
/// session that acknowledged the last one (`box_broadcast`).
pub(super) fn broadcast(st: &ServerState, key: &[u8], data: Option<&[u8]>) {
    let mut ev = st.events.borrow_mut();
    let node = ev.nodes.entry(key.to_vec()).or_default();
    node.data = data.map(Rc::from);
    node.version += 1;
    if node.is_unused() {
        ev.nodes.remove(key);
        return;
    }
    let conns = st.conns.borrow();
    let (version, data) = (node.version, node.data.clone());
    for (session, sub) in node.subs.iter_mut().filter(|(_, s)| s.acked) {
        if let Some(conn) = conns.get(session) {
            sub.acked = false;
            sub.sent = version;
            notify(conn, sub.sync, key, data.as_deref());
        }
    }
}

/// WATCH from `conn`: subscribes it to `key` (an EVENT with the value
/// goes out now), or takes its acknowledgement of the last EVENT (the
/// value goes out now if it changed since).
pub(super) fn watch(conn: &Conn, sync: u64, key: &[u8]) {
    ServerState::with(|st| {
        let mut ev = st.events.borrow_mut();
        let node = ev.nodes.entry(key.to_vec()).or_default();
        let version = node.version;
        let send = match node.subs.get_mut(&conn.session) {
            Some(sub) => {
                sub.sync = sync;
                if sub.acked {
                    false
                } else if sub.sent == version {
                    sub.acked = true;
                    false
                } else {
                    sub.sent = version;
                    true
                }
            }
            None => {
                node.subs.insert(
                    conn.session,
                    Sub {
                        sync,
                        sent: version,
                        acked: false,
                    },
                );
                true
            }
        };
        if send {
            notify(conn, sync, key, node.data.as_deref());
        }
    });
}

/// UNWATCH from session `session`.
pub(super) fn unwatch(session: u64, key: &[u8]) {
    ServerState::with(|st| {
        let mut ev = st.events.borrow_mut();
        if let Some(node) = ev.nodes.get_mut(key) {
            node.subs.remove(&session);
            if node.is_unused() {
                ev.nodes.remove(key);
            }
        }
    });
}

/// Drops every subscription of a session that ended.
pub(super) fn drop_session(session: u64) {
    ServerState::with(|st| {
        let mut ev = st.events.borrow_mut();
        ev.nodes.retain(|_, node| {
            node.subs.remove(&session);
            !node.is_unused()
        });
    });
}

/// `key`'s value now (`box_watch_once`).
pub(super) fn value(key: &[u8]) -> Option<Rc<[u8]>> {
    ServerState::with(|st| {
        st.events
            .borrow()
            .nodes
            .get(key)
            .and_then(|n| n.data.clone())
    })
}

lua_fn! {
    /// `box.internal.watch_set(key[, data])`: sets `key`'s value to the
    /// MessagePack string `data` (nil: none) and notifies the sessions
    /// watching it; `box.broadcast` (watcher.lua) encodes the value and
    /// checks the arguments.
    pub(super) fn watch_set(s: &mut Stack) {
        let key = s.to_str(1).ok_or_else(|| Raise::illegal("watch_set: a key expected"))?.to_vec();
        let data = s.to_str(2).map(<[u8]>::to_vec);
        if data.as_deref().is_some_and(|d| !luafiber_iproto::mp::is_one_value(d)) {
            return Err(Raise::illegal("watch_set: data must be one MessagePack value"));
        }
        ServerState::with(|st| broadcast(st, &key, data.as_deref()));
        Ok(0)
    }
}

lua_fn! {
    /// `box.internal.watch_get(key)`: `key`'s value as a MessagePack
    /// string, or nothing.
    pub(super) fn watch_get(s: &mut Stack) {
        let key = s.to_str(1).ok_or_else(|| Raise::illegal("watch_get: a key expected"))?;
        match value(key) {
            Some(d) => {
                s.push_bytes(&d);
                Ok(1)
            }
            None => Ok(0),
        }
    }
}
