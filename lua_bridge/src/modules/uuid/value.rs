//! [`TtUuid`]: Tarantool's `struct tt_uuid` (`src/lib/core/tt_uuid.h`), its
//! text and binary forms, its order and its MsgPack extension body; no Lua.
//!
//! Parsing, formatting and generation are the `uuid` crate's (the
//! RustCrypto-style well-kept crate for RFC 9562 UUIDs, whose `v4`
//! generator reads the system's random source through `getrandom`, as
//! Tarantool's `random_bytes` does).

use uuid::Uuid;

/// Bytes of a UUID.
pub(crate) const UUID_LEN: usize = 16;

/// Bytes of its text form.
pub(crate) const UUID_STR_LEN: usize = 36;

/// Tarantool's `struct tt_uuid`: the RFC 4122 fields in host byte order.
/// Its C declaration, for the FFI, is [`C_DECL`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct TtUuid {
    pub time_low: u32,
    pub time_mid: u16,
    pub time_hi_and_version: u16,
    pub clock_seq_hi_and_reserved: u8,
    pub clock_seq_low: u8,
    pub node: [u8; 6],
}

/// The C declaration of [`TtUuid`], as Tarantool's.
pub(crate) const C_DECL: &str = "struct tt_uuid { uint32_t time_low; uint16_t time_mid; \
    uint16_t time_hi_and_version; uint8_t clock_seq_hi_and_reserved; \
    uint8_t clock_seq_low; uint8_t node[6]; };";

impl TtUuid {
    /// The nil UUID (all zero), `uuid.NULL`.
    pub(crate) const NIL: TtUuid = TtUuid {
        time_low: 0,
        time_mid: 0,
        time_hi_and_version: 0,
        clock_seq_hi_and_reserved: 0,
        clock_seq_low: 0,
        node: [0; 6],
    };

    /// A new random (version 4, RFC 4122 variant) UUID, as Tarantool's
    /// `tt_uuid_create`.
    pub(crate) fn new_v4() -> TtUuid {
        TtUuid::from_rfc_bytes(*Uuid::new_v4().as_bytes())
    }

    /// The UUID whose RFC 4122 (big-endian, "network order") bytes are `b`.
    pub(crate) fn from_rfc_bytes(b: [u8; UUID_LEN]) -> TtUuid {
        let u = Uuid::from_bytes(b);
        let (d1, d2, d3, d4) = u.as_fields();
        TtUuid {
            time_low: d1,
            time_mid: d2,
            time_hi_and_version: d3,
            clock_seq_hi_and_reserved: d4[0],
            clock_seq_low: d4[1],
            node: d4[2..].try_into().expect("6 bytes"),
        }
    }

    /// Its RFC 4122 bytes: the fields big-endian (`tt_uuid_bswap` of the
    /// host form on a little-endian host), which is also the MsgPack
    /// extension's body (`uuid_pack`).
    pub(crate) fn rfc_bytes(&self) -> [u8; UUID_LEN] {
        let mut d4 = [0u8; 8];
        d4[0] = self.clock_seq_hi_and_reserved;
        d4[1] = self.clock_seq_low;
        d4[2..].copy_from_slice(&self.node);
        *Uuid::from_fields(self.time_low, self.time_mid, self.time_hi_and_version, &d4).as_bytes()
    }

    /// Its bytes as they are in memory (`uuid:bin()`, host order).
    pub(crate) fn host_bytes(&self) -> [u8; UUID_LEN] {
        let mut b = [0u8; UUID_LEN];
        b[..4].copy_from_slice(&self.time_low.to_ne_bytes());
        b[4..6].copy_from_slice(&self.time_mid.to_ne_bytes());
        b[6..8].copy_from_slice(&self.time_hi_and_version.to_ne_bytes());
        b[8] = self.clock_seq_hi_and_reserved;
        b[9] = self.clock_seq_low;
        b[10..].copy_from_slice(&self.node);
        b
    }

    /// The UUID whose in-memory bytes are `b` (`uuid.frombin(b)`).
    pub(crate) fn from_host_bytes(b: [u8; UUID_LEN]) -> TtUuid {
        TtUuid {
            time_low: u32::from_ne_bytes(b[..4].try_into().expect("4 bytes")),
            time_mid: u16::from_ne_bytes([b[4], b[5]]),
            time_hi_and_version: u16::from_ne_bytes([b[6], b[7]]),
            clock_seq_hi_and_reserved: b[8],
            clock_seq_low: b[9],
            node: b[10..].try_into().expect("6 bytes"),
        }
    }

    /// `tt_uuid_bswap`: the three integer fields byte-swapped (host order
    /// to network order and back).
    pub(crate) fn bswap(self) -> TtUuid {
        TtUuid {
            time_low: self.time_low.swap_bytes(),
            time_mid: self.time_mid.swap_bytes(),
            time_hi_and_version: self.time_hi_and_version.swap_bytes(),
            ..self
        }
    }

    /// Parses the 36-character RFC 4122 text form
    /// (`xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, either case), as
    /// `tt_uuid_from_string`; `None` for anything else.
    ///
    /// Tarantool's `sscanf("%8x-%4hx-...")` also takes a few odd forms (a
    /// `+` or whitespace in front of a group); those are refused here.
    pub(crate) fn parse(text: &[u8]) -> Option<TtUuid> {
        if text.len() != UUID_STR_LEN {
            return None;
        }
        let u = Uuid::try_parse_ascii(text).ok()?;
        Some(TtUuid::from_rfc_bytes(*u.as_bytes()))
    }

    /// The 36-character lower-case text form (`tt_uuid_to_string`).
    pub(crate) fn text(self) -> [u8; UUID_STR_LEN] {
        let mut out = [0u8; UUID_STR_LEN];
        Uuid::from_bytes(self.rfc_bytes())
            .hyphenated()
            .encode_lower(&mut out);
        out
    }

    /// Whether every byte is zero (`tt_uuid_is_nil`).
    pub(crate) fn is_nil(&self) -> bool {
        *self == TtUuid::NIL
    }

    /// `tt_uuid_compare`: field by field, which is the order of the RFC
    /// bytes.
    pub(crate) fn compare(&self, other: &TtUuid) -> std::cmp::Ordering {
        self.rfc_bytes().cmp(&other.rfc_bytes())
    }

    /// The UUID of a MsgPack extension 2 body (`uuid_unpack`): exactly 16
    /// bytes, else `None`.
    pub(crate) fn from_mp(body: &[u8]) -> Option<TtUuid> {
        Some(TtUuid::from_rfc_bytes(body.try_into().ok()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_as_tarantool_gives_them() {
        let u = TtUuid::parse(b"adf9d02e-0756-11e4-b5cf-525400123456").unwrap();
        assert_eq!(u.time_low, 0xadf9d02e);
        assert_eq!(u.time_mid, 0x0756);
        assert_eq!(u.node, [0x52, 0x54, 0x00, 0x12, 0x34, 0x56]);
        assert_eq!(&u.text(), b"adf9d02e-0756-11e4-b5cf-525400123456");
        if cfg!(target_endian = "little") {
            assert_eq!(
                u.host_bytes()[..8],
                [0x2e, 0xd0, 0xf9, 0xad, 0x56, 0x07, 0xe4, 0x11]
            );
        }
        assert_eq!(u.bswap().host_bytes()[..4], [0xad, 0xf9, 0xd0, 0x2e]);
        assert_eq!(TtUuid::from_host_bytes(u.host_bytes()), u);
        assert_eq!(TtUuid::from_mp(&u.rfc_bytes()), Some(u));
    }

    #[test]
    fn only_the_hyphenated_form_parses() {
        for bad in [
            &b""[..],
            b"ba90d81514e0431d80c0ce587885bb78",
            b"{ba90d815-14e0-431d-80c0-ce587885bb78}",
            b"ba90d815-14e0-431d-80c0-tt587885bb7",
            &[b' '; 36],
        ] {
            assert_eq!(TtUuid::parse(bad), None);
        }
        let up = TtUuid::parse(b"BA90D815-14E0-431D-80C0-CE587885BB78").unwrap();
        assert_eq!(&up.text(), b"ba90d815-14e0-431d-80c0-ce587885bb78");
    }

    #[test]
    fn new_ones_are_version_4_rfc_variant() {
        let u = TtUuid::new_v4();
        assert_eq!(u.clock_seq_hi_and_reserved & 0xc0, 0x80);
        assert_eq!(u.time_hi_and_version >> 12, 4);
        assert_ne!(u, TtUuid::new_v4());
    }

    #[test]
    fn order_is_field_by_field() {
        let a = TtUuid::parse(b"aaaaaaaa-aaaa-4000-b000-000000000001").unwrap();
        let b = TtUuid::parse(b"bbbbbbbb-bbbb-4000-b000-000000000001").unwrap();
        assert!(a.compare(&b).is_lt());
        assert!(a.compare(&a).is_eq());
    }
}
