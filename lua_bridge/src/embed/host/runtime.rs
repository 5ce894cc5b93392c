//! [`Runtime`]: the cords a [`Builder`](super::Builder) started, owned:
//! its [`Handle`]s reach them, its drop stops them.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use luafiber_runtime::cord;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::cord_lua::await_in_fiber;
use super::local::{Spec, StopLocal};
use super::{CordLua, Error, ErrorKind, Handle};
use crate::embed::cords::serve;
use crate::embed::LuaCords;
use crate::modules::threads::groups::Group;

/// The cords (OS threads, each with its own fiber scheduler, event loop
/// and, with Lua, Lua state) of a [`Builder`](super::Builder), and what
/// reaches them: [`handle`](Runtime::handle) gives the `Clone + Send +
/// Sync` [`Handle`] that calls Lua from any thread; the runtime itself
/// calls through it too (it derefs to its handle).
///
/// `Send + Sync`. Dropping it is [`shutdown_timeout`](Runtime::shutdown_timeout)
/// with one second: calls not yet started are dropped, every fiber is
/// cancelled, and each cord's Lua state is closed once its fibers are done.
///
/// ```
/// # use luafiber_lua::host as luafiber;
/// use luafiber::Builder;
///
/// let rt = Builder::new().cords(2).exec("function square(x) return x * x end").build().unwrap();
/// let threads: Vec<_> = (1..=4i64)
///     .map(|i| {
///         let h = rt.handle();
///         std::thread::spawn(move || h.call::<i64>("square", i).unwrap())
///     })
///     .collect();
/// let got: Vec<i64> = threads.into_iter().map(|t| t.join().unwrap()).collect();
/// assert_eq!(got, [1, 4, 9, 16]);
/// ```
pub struct Runtime {
    inner: Inner,
    handle: Handle,
    /// Ends the local cords ([`Handle::call_local`]) when dropped.
    _local: Option<StopLocal>,
}

enum Inner {
    Lua(LuaCords),
    Plain(cord::Runtime),
}

impl Runtime {
    pub(super) fn lua(cords: LuaCords, local: Arc<Spec>) -> Runtime {
        let handle = Handle {
            cords: Group::handle(&cords).clone(),
            lua: true,
            local: Some(local.clone()),
        };
        Runtime {
            inner: Inner::Lua(cords),
            handle,
            _local: Some(StopLocal(local)),
        }
    }

    pub(super) fn plain(rt: cord::Runtime) -> Runtime {
        let handle = Handle {
            cords: rt.handle().clone(),
            lua: false,
            local: None,
        };
        Runtime {
            inner: Inner::Plain(rt),
            handle,
            _local: None,
        }
    }

    /// A handle to call into the runtime from any thread (a clone of the
    /// runtime's own).
    pub fn handle(&self) -> Handle {
        self.handle.clone()
    }

    /// Registers the Rust function `f` as the Lua global `name` on every
    /// cord now, as [`CordLua::register_fn`] does (and
    /// [`Builder::register_fn`](super::Builder::register_fn) at start).
    /// Waits until every cord has it.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Refused`] without Lua; [`ErrorKind::Stopped`] when a
    /// cord stopped.
    pub fn register_fn<A, R, F>(&self, name: &str, f: F) -> Result<(), Error>
    where
        A: DeserializeOwned,
        R: Serialize,
        F: Fn(A) -> Result<R, Error> + Send + Sync + 'static,
    {
        let f = Arc::new(f);
        self.on_each_cord(name, move |lua, name| {
            let f = f.clone();
            lua.register_fn(name, move |a: A| f(a))
        })
    }

    /// Registers the Rust async function `f` as the Lua global `name` on
    /// every cord now, as [`CordLua::register_async_fn`] does.
    ///
    /// # Errors
    ///
    /// As [`register_fn`](Runtime::register_fn).
    pub fn register_async_fn<A, R, F, Fut>(&self, name: &str, f: F) -> Result<(), Error>
    where
        A: DeserializeOwned,
        R: Serialize,
        F: Fn(A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, Error>> + 'static,
    {
        self.register_fn(name, move |a: A| await_in_fiber(f(a)))
    }

    /// Runs `f` with each cord's Lua state, on that cord, and waits.
    fn on_each_cord(
        &self,
        name: &str,
        f: impl Fn(&CordLua<'_>, &str) -> Result<(), Error> + Send + Sync + 'static,
    ) -> Result<(), Error> {
        if !self.handle.lua {
            return Err(Error::new(
                ErrorKind::Refused,
                "this runtime was built without Lua",
            ));
        }
        let f = Arc::new(f);
        let joins: Vec<_> = (0..self.handle.cords())
            .map(|i| {
                let (f, name) = (f.clone(), name.to_owned());
                self.handle.spawn_on(i, move || {
                    serve::with_runtime(|rt| f(&CordLua { rt }, &name))
                        .unwrap_or_else(|| Err(Error::new(ErrorKind::Stopped, "the cord stopped")))
                })
            })
            .collect();
        for j in joins {
            j.join()??;
        }
        Ok(())
    }

    /// Shuts the cords down: calls not yet started are dropped, every
    /// fiber is cancelled, and each cord's Lua state is closed once its
    /// fibers are done or `timeout` runs out. Calls still waiting fail with
    /// [`ErrorKind::Stopped`].
    pub fn shutdown_timeout(self, timeout: Duration) {
        match self.inner {
            Inner::Lua(c) => c.shutdown_timeout(timeout),
            Inner::Plain(rt) => rt.shutdown_timeout(timeout),
        }
    }
}

impl std::ops::Deref for Runtime {
    type Target = Handle;

    fn deref(&self) -> &Handle {
        &self.handle
    }
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("cords", &self.handle.cords())
            .field("lua", &self.handle.lua)
            .finish()
    }
}
