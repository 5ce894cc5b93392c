//! The cord context's type: one field per part, each declared in the file
//! that uses it (see `raw/context.rs` for the mechanism, its rules and how
//! to add a part). The only file that names every layer's per-cord state.
//!
//! The runtime makes one [`Context`] with its Lua state and owns it
//! ([`Owned`]); nothing else of a cord's state is left behind when it is
//! dropped.

use crate::raw::context::{self, cord_context};

cord_context! {
    /// Everything a cord's Lua state needs, per cord: made by the runtime,
    /// dropped with it (context rule 3).
    pub(crate) struct Context {
        // raw/
        error_mt: crate::raw::error::ErrorMt,
        #[cfg(not(feature = "luajit"))]
        warnings: crate::raw::report::Warnings,
        limited: crate::raw::memory::Limited,
        // luajit/
        probed: crate::luajit::Probed,
        entry: crate::luajit::entry::EntrySlot,
        // cord/
        cord: crate::cord::CordSlot,
        new_thread: crate::cord::threads::NewThreadRef,
        // fiber/
        msgh: crate::fiber::entry::MsghRef,
        guard: crate::fiber::guard::Guard,
        // slice/
        slices: crate::slice::Slices,
        watched: crate::slice::watchdog::Watched,
        // modules/
        fiber_objects: crate::modules::fiber::FiberObjects,
        channel_kind: crate::modules::fiber::ChannelKind,
        cond_kind: crate::modules::fiber::CondKind,
        value_slots: crate::modules::fiber::ValueSlots,
        top: crate::modules::fiber::TopState,
        msgpack_state_kind: crate::modules::msgpack::StateKind,
        msgpack_objects: crate::modules::msgpack::ObjectKinds,
        msgpack_frames: crate::modules::msgpack::DecodeFrames,
        #[cfg(feature = "luajit")]
        msgpack_short_strings: crate::modules::msgpack::ShortStrings,
        msgpack_port: crate::modules::msgpack::port::PortState,
        sock_kind: crate::modules::socket::SockKind,
        live_ibufs: crate::modules::buffer::LiveIbufs,
        export_call: crate::modules::threads::ExportCall,
        groups: crate::modules::threads::groups::GroupsState,
        errno: crate::modules::errno::Errno,
        server: crate::modules::box_::server::ServerState,
        crypto_ctx: crate::modules::crypto::ctx::CtxKind,
        csv_kind: crate::modules::csv::CsvKind,
        popen_kind: crate::modules::popen::PopenKind,
        fio_handles: crate::modules::fio::handle::Handles,
        fio_stat: crate::modules::fio::stat::StatMeta,
        httpc_tls: crate::modules::httpc::TlsState,
        datetime_types: crate::modules::datetime::DatetimeTypes,
        decimal_type: crate::modules::decimal::object::DecimalType,
        uuid_type: crate::modules::uuid::object::UuidType,
        netbox_transports: crate::modules::netbox::calls::Transports,
        netbox_futures: crate::modules::netbox::future::Futures,
        // capi/
        diag: crate::capi::LastDiag,
        stash: crate::capi::CordStash,
        fiber_names: crate::capi::FiberNames,
        fiber_handles: crate::capi::FiberHandles,
        // embed/
        handlers: crate::fiber::handlers::HandlerRefs,
        rust_fns: super::rust_fn::RustFns,
        serving: super::cords::Serving,
    }
}

/// A context installed as its thread's, owned by the runtime.
pub(crate) struct Owned(
    #[expect(dead_code, reason = "read through the thread's context pointer")] Box<Context>,
);

impl Owned {
    /// Makes a fresh context and installs it as this thread's.
    ///
    /// # Panics
    ///
    /// When the thread has a context already.
    pub(crate) fn install() -> Owned {
        let cx = Box::<Context>::default();
        // SAFETY: a boxed context (a fixed address) that lives until this
        // `Owned` is dropped, which uninstalls it first (context rule 1).
        unsafe { context::install((&raw const *cx).cast()) };
        Owned(cx)
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        context::uninstall();
    }
}
