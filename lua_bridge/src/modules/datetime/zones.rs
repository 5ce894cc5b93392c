//! Time zone names: Tarantool's table of abbreviations and Olson names with
//! their ids (`src/lib/tzcode/timezones.h`: the ids are the `tzindex` of
//! the MsgPack datetime, so they are Tarantool's, kept in `zones.tsv`), and
//! the Olson zones' offsets from jiff's bundled tz database.
//!
//! The table is read once per process (it is immutable, so shared by all
//! cords); jiff caches the zones it has loaded.

use std::sync::OnceLock;

use jiff::tz::{TimeZone, TimeZoneDatabase};
use jiff::Timestamp;

/// `TZ_AMBIGUOUS`: the name is refused as ambiguous.
pub(crate) const TZ_AMBIGUOUS: u16 = 0x08;
/// `TZ_NYI`: the name is refused as not implemented.
pub(crate) const TZ_NYI: u16 = 0x10;
/// `TZ_OLSON`: an Olson name, whose offset depends on the moment.
const TZ_OLSON: u16 = 0x20;
/// `TZ_ALIAS`: another name of an Olson zone.
const TZ_ALIAS: u16 = 0x40;
/// `TZ_DST`: a daylight saving abbreviation.
const TZ_DST: u16 = 0x80;

/// One name of the table.
#[derive(Debug)]
pub(crate) struct Zone {
    /// Its id.
    pub id: i16,
    /// Its offset in minutes (abbreviations only).
    pub offset: i16,
    /// Its `TZ_*` flags.
    pub flags: u16,
    /// Its name.
    pub name: &'static str,
}

struct Table {
    /// Every name, sorted by its lowercase form.
    sorted: Vec<(String, Zone)>,
    /// The name of each id (not the aliases), indexed by id.
    by_id: Vec<Option<&'static str>>,
}

const TSV: &str = include_str!("zones.tsv");

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut sorted = Vec::new();
        let mut by_id = vec![None; 1025];
        for line in TSV.lines().filter(|l| !l.starts_with('#')) {
            let mut f = line.split('\t');
            let (Some(id), Some(off), Some(flags), Some(name)) =
                (f.next(), f.next(), f.next(), f.next())
            else {
                continue;
            };
            let z = Zone {
                id: id.parse().unwrap_or(0),
                offset: off.parse().unwrap_or(0),
                flags: flags.parse().unwrap_or(0),
                name,
            };
            if z.flags & TZ_ALIAS == 0 {
                by_id[z.id as usize] = Some(name);
            }
            sorted.push((name.to_ascii_lowercase(), z));
        }
        sorted.sort_by(|a, b| a.0.cmp(&b.0));
        Table { sorted, by_id }
    })
}

/// The name of zone `id` (`timezone_name`).
pub(crate) fn name(id: i16) -> Option<&'static str> {
    table()
        .by_id
        .get(usize::try_from(id).ok()?)
        .copied()
        .flatten()
}

/// Every zone id and name, aliases too (`datetime.TZ`).
pub(crate) fn all() -> impl Iterator<Item = &'static Zone> {
    table().sorted.iter().map(|(_, z)| z)
}

/// What [`lookup`] found.
pub(crate) enum Found {
    /// Not a zone name (`len` 0 or -1 for Tarantool).
    None,
    /// A name refused with these flags (`TZ_AMBIGUOUS` or `TZ_NYI`).
    Refused(u16),
    /// A zone, and how many bytes its name took.
    Zone(&'static Zone, usize),
}

/// The zone named by `s` (`timezone_raw_lookup`): `s` starts with a letter
/// and, compared without case, is a name of the table.
pub(crate) fn lookup(s: &[u8]) -> Found {
    if !s.first().is_some_and(u8::is_ascii_alphabetic) {
        return Found::None;
    }
    let span = s
        .iter()
        .position(|c| !(c.is_ascii_alphabetic() || matches!(c, b'/' | b'_' | b'-')))
        .unwrap_or(s.len());
    let Ok(text) = std::str::from_utf8(s) else {
        return Found::None;
    };
    let key = text.to_ascii_lowercase();
    let t = table();
    match t.sorted.binary_search_by(|(n, _)| n.as_str().cmp(&key)) {
        Ok(i) => {
            let z = &t.sorted[i].1;
            if z.flags & (TZ_AMBIGUOUS | TZ_NYI) != 0 {
                Found::Refused(z.flags & (TZ_AMBIGUOUS | TZ_NYI))
            } else {
                Found::Zone(z, span)
            }
        }
        Err(_) => Found::None,
    }
}

/// An Olson zone of jiff's bundled database.
fn olson(name: &str) -> Option<TimeZone> {
    static DB: OnceLock<TimeZoneDatabase> = OnceLock::new();
    DB.get_or_init(TimeZoneDatabase::bundled).get(name).ok()
}

/// The offset (seconds) and DST flag of zone `z` at UTC second `epoch`.
pub(crate) fn offset_at(z: &Zone, epoch: i64) -> Option<(i32, bool)> {
    if z.flags & TZ_OLSON == 0 {
        return Some((i32::from(z.offset) * 60, z.flags & TZ_DST != 0));
    }
    let tz = olson(z.name)?;
    let clamped = epoch.clamp(Timestamp::MIN.as_second(), Timestamp::MAX.as_second());
    let ts = Timestamp::from_second(clamped).ok()?;
    let info = tz.to_offset_info(ts);
    Some((info.offset().seconds(), info.dst().is_dst()))
}

/// The offset (seconds) and DST flag of zone id `id` at UTC second
/// `epoch` (`timezone_tzindex_lookup`).
pub(crate) fn offset_of_id(id: i16, epoch: i64) -> Option<(i32, bool)> {
    let n = name(id)?;
    let t = table();
    let key = n.to_ascii_lowercase();
    let i = t
        .sorted
        .binary_search_by(|(k, _)| k.as_str().cmp(&key))
        .ok()?;
    offset_at(&t.sorted[i].1, epoch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(name(238), Some("MSK"));
        let Found::Zone(z, len) = lookup(b"europe/moscow") else {
            panic!("no Moscow");
        };
        assert_eq!(len, 13);
        assert_eq!(offset_at(z, 0), Some((3 * 3600, false)));
        assert!(matches!(lookup(b"AT"), Found::Refused(TZ_AMBIGUOUS)));
    }
}
