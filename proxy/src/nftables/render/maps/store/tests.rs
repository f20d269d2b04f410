//! The compact store against a plain map keyed by the typed (set, key): same contents, same order.

use std::collections::BTreeMap;
use std::net::IpAddr;

use ipnet::IpNet;
use proptest::prelude::*;

use super::{Entry, Store, pack, unpack};
use crate::model::Protocol;
use crate::nftables::render::maps::{FW_ALLOW, Group, Key, Part, SetName};

fn part() -> impl Strategy<Value = Part> {
    prop_oneof![
        any::<[u8; 4]>().prop_map(|a| Part::Addr(IpAddr::from(a))),
        any::<[u8; 16]>().prop_map(|a| Part::Addr(IpAddr::from(a))),
        prop_oneof![Just(Protocol::Tcp), Just(Protocol::Udp), Just(Protocol::Sctp)].prop_map(Part::Proto),
        any::<u16>().prop_map(Part::Port),
        any::<u32>().prop_map(Part::Slot),
        (any::<[u8; 4]>(), 0u8..=32)
            .prop_map(|(a, l)| Part::Net(IpNet::new(IpAddr::from(a), l).expect("len"))),
        (any::<[u8; 16]>(), 0u8..=128)
            .prop_map(|(a, l)| Part::Net(IpNet::new(IpAddr::from(a), l).expect("len"))),
    ]
}

/// Keys of few distinct values, so that removals and repeated inserts hit held keys.
fn small_key() -> impl Strategy<Value = Key> {
    prop::collection::vec(
        prop_oneof![
            (0u8..3).prop_map(|a| Part::Addr(IpAddr::from([10, 0, 0, a]))),
            (0u8..2).prop_map(|a| Part::Addr(IpAddr::from([a; 16]))),
            (0u16..3).prop_map(Part::Port),
            (0u32..2).prop_map(Part::Slot),
            (0u8..2).prop_map(|l| Part::Net(IpNet::new(IpAddr::from([10, 1, 0, 0]), 16 + l).expect("len"))),
        ],
        1..=4,
    )
    .prop_map(|p| Key::new(&p))
}

fn set() -> impl Strategy<Value = SetName> {
    prop_oneof![
        Just(SetName::Fixed(FW_ALLOW)),
        Just(SetName::Map(Group::Addr, 2)),
        (1u32..3).prop_map(|n| SetName::Count(Group::Port, n)),
    ]
}

proptest! {
    #[test]
    fn packed_keys_round_trip_and_sort_as_keys(a in prop::collection::vec(part(), 1..=4),
                                              b in prop::collection::vec(part(), 1..=4)) {
        let (ka, kb) = (Key::new(&a), Key::new(&b));
        let (pa, pb) = (pack(&ka), pack(&kb));
        prop_assert_eq!(unpack(&pa.bytes), Some(ka));
        prop_assert_eq!(ka.cmp(&kb), pa.bytes.cmp(&pb.bytes));
    }

    #[test]
    fn store_holds_what_a_typed_map_holds(ops in prop::collection::vec((any::<bool>(), set(), small_key(), any::<u32>()), 1..200)) {
        let mut store = Store::default();
        let mut typed: BTreeMap<(SetName, Key), Entry> = BTreeMap::new();
        for (add, set, key, n) in ops {
            let value = match n % 3 {
                0 => None,
                1 => Some((IpAddr::from([10, 9, 0, 1]), n as u16)),
                _ => Some((IpAddr::from([0xfd; 16]), n as u16)),
            };
            let entry: Entry = (value, n);
            if add {
                store.put(set, &key, entry);
            } else {
                store.remove(set, &key);
            }
            if add {
                typed.insert((set, key), entry);
            } else {
                typed.remove(&(set, key));
            }
            prop_assert_eq!(store.get(set, &key), typed.get(&(set, key)).copied());
        }
        let held: Vec<_> = store.iter().map(|(s, k, e)| ((s, k), e)).collect();
        let want: Vec<_> = typed.into_iter().collect();
        prop_assert_eq!(store.len(), want.len());
        prop_assert_eq!(held, want);
    }
}

/// An IPv4 slot map's element (address . protocol . port . slot : address . port) fits the small
/// width: the case that holds most of a table's elements.
#[test]
fn an_ipv4_slot_element_is_small() {
    let key = Key::new(&[
        Part::Addr(IpAddr::from([10, 0, 0, 1])),
        Part::Proto(Protocol::Tcp),
        Part::Port(80),
        Part::Slot(3),
    ]);
    assert!(pack(&key).len <= super::SMALL);
    let entry = (Some((IpAddr::from([10, 1, 0, 1]), 8080)), u32::MAX);
    let (bytes, len) = super::pack_entry(entry);
    assert!(len <= super::SMALL_ENTRY);
    assert_eq!(super::unpack_entry(&bytes[..len]), entry);
}
