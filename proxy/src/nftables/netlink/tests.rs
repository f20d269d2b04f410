//! Expected encodings come from nft 1.0.6 itself (`nft --debug=netlink` and `--debug=mnl` of the
//! same rules); the kernel-level comparison of whole tables is `tests/nft_netlink.rs`.

use super::compile::compile;
use super::expr::{AnonElement, Expr};
use super::*;
use crate::nftables::render::{Element, Op, Rule, Set};

fn exprs(text: &str, family: Family) -> Vec<Expr> {
    let mut id = 0;
    compile(text, family, &mut id, &[])
        .unwrap_or_else(|e| panic!("{e}"))
        .exprs
}

fn payload(offset: u32, len: u32, dreg: u32) -> Expr {
    Expr::Payload {
        base: 1,
        offset,
        len,
        dreg,
    }
}

#[test]
fn a_whole_byte_prefix_loads_only_its_bytes() {
    assert_eq!(
        exprs("ip daddr != 127.0.0.0/8", Family::V4),
        [
            payload(16, 1, 1),
            Expr::Cmp {
                op: 1,
                data: vec![127]
            }
        ]
    );
    // /56 of an IPv6 address: 7 bytes.
    assert_eq!(
        exprs("ip6 saddr fd00:10::/56 goto b", Family::V6)[..2],
        [
            payload(8, 7, 1),
            Expr::Cmp {
                op: 0,
                data: vec![0xfd, 0, 0, 0x10, 0, 0, 0]
            }
        ]
    );
}

#[test]
fn any_other_prefix_is_masked() {
    assert_eq!(
        exprs("ip daddr { 10.96.0.0/12 } drop", Family::V4),
        [
            payload(16, 4, 1),
            Expr::Bitwise {
                mask: vec![255, 240, 0, 0],
                xor: vec![0; 4]
            },
            Expr::Cmp {
                op: 0,
                data: vec![10, 96, 0, 0]
            },
            Expr::Verdict(expr::Verdict::Drop),
        ]
    );
}

#[test]
fn concatenations_use_nfts_registers() {
    let dregs = |text: &str, family| -> Vec<u32> {
        exprs(text, family)
            .iter()
            .filter_map(|e| match e {
                Expr::Payload { dreg, .. } | Expr::Meta { dreg, .. } => Some(*dreg),
                _ => None,
            })
            .collect()
    };
    assert_eq!(
        dregs("ip daddr . meta l4proto . th dport vmap @service-ips", Family::V4),
        [1, 9, 10]
    );
    assert_eq!(
        dregs(
            "ip6 daddr . meta l4proto . th dport vmap @service-ips",
            Family::V6
        ),
        [1, 2, 13]
    );
    assert_eq!(
        dregs(
            "ip daddr @nodeport-ips meta l4proto . th dport vmap @service-nodeports",
            Family::V4
        ),
        [1, 1, 9]
    );
}

/// An affinity record's data after its key: where nft puts it (the 128-bit register after the key)
/// on IPv4; on IPv6, where nft 1.0.6 aborts, in the next 32-bit register (`NFT_REG32_10` = 18), so
/// the 15 units fit the kernel's 16.
#[test]
fn a_records_data_follows_its_key_in_registers_the_kernel_has() {
    let record = |ip: &str| {
        format!(
            "meta l4proto tcp ct original protocol tcp ct original {ip} daddr . ct original protocol . ct original proto-dst @sticky-60 update @affinity {{ {ip} saddr . ct original {ip} daddr . ct original protocol . ct original proto-dst timeout 60s : {ip} daddr . tcp dport }}"
        )
    };
    let data = |family| {
        exprs(&record(if family == Family::V4 { "ip" } else { "ip6" }), family)
            .iter()
            .find_map(|e| match e {
                Expr::Dynset { data, .. } => *data,
                _ => None,
            })
    };
    assert_eq!(data(Family::V4), Some(2), "nft's own placement");
    assert_eq!(data(Family::V6), Some(18));
}

#[test]
fn address_sets_become_intervals_as_nft_sends_them() {
    let mut id = 0;
    let c = compile(
        "ip saddr != { 1.2.3.0/24 , 5.6.7.8 } drop",
        Family::V4,
        &mut id,
        &[],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let keys: Vec<(Vec<u8>, bool)> = c.sets[0]
        .elements
        .iter()
        .map(|e: &AnonElement| (e.key.clone(), e.interval_end))
        .collect();
    assert_eq!(
        keys,
        [
            (vec![0, 0, 0, 0], true),
            (vec![1, 2, 3, 0], false),
            (vec![1, 2, 4, 0], true),
            (vec![5, 6, 7, 8], false),
            (vec![5, 6, 7, 9], true),
        ]
    );
    assert!(matches!(
        c.exprs[1],
        Expr::Lookup {
            invert: true,
            anon: Some(1),
            ..
        }
    ));
}

#[test]
fn overlapping_and_adjacent_ranges_merge() {
    let mut id = 0;
    let c = compile(
        "ip saddr != { 10.0.0.0/8,10.1.0.0/16,11.0.0.0/8 } drop",
        Family::V4,
        &mut id,
        &[],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let keys: Vec<Vec<u8>> = c.sets[0].elements.iter().map(|e| e.key.clone()).collect();
    assert_eq!(keys, [vec![0, 0, 0, 0], vec![10, 0, 0, 0], vec![12, 0, 0, 0]]);
}

#[test]
fn an_unknown_rule_form_is_an_error_naming_the_rule() {
    let mut id = 0;
    let err = compile("ip daddr 10.0.0.1 counter drop", Family::V4, &mut id, &[])
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("counter") && err.contains("10.0.0.1"), "{err}");
    let err = compile("ip6 saddr fd00::1 drop", Family::V4, &mut id, &[])
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("ip6"), "{err}");
}

fn map_set() -> Set {
    Set {
        name: "service-ips".into(),
        is_map: true,
        type_: "ipv6_addr . inet_proto . inet_service : verdict".into(),
        ..Default::default()
    }
}

fn element(key: &[&str], value: &str) -> Element {
    Element {
        container: "service-ips",
        key: key.iter().map(|s| s.to_string()).collect(),
        value: Some(value.into()),
        comment: None,
    }
}

/// (type, flags, seq) of each message of a batch, checking every length on the way.
fn messages(bytes: &[u8]) -> Vec<(u16, u16, u32)> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let len = u32::from_ne_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        assert!(
            len >= 20 && len <= rest.len() && len.is_multiple_of(4),
            "bad length {len}"
        );
        let ty = u16::from_ne_bytes([rest[4], rest[5]]);
        let flags = u16::from_ne_bytes([rest[6], rest[7]]);
        let seq = u32::from_ne_bytes([rest[8], rest[9], rest[10], rest[11]]);
        out.push((ty, flags, seq));
        rest = &rest[len..];
    }
    out
}

#[test]
fn a_batch_is_framed_and_asks_for_one_acknowledgement() {
    let set = map_set();
    let ops = vec![
        Op::AddTable,
        Op::AddSet(set.clone()),
        Op::AddRule {
            chain: "services".into(),
            rule: Rule::new("ip6 daddr . meta l4proto . th dport vmap @service-ips"),
        },
        Op::AddElement(element(&["fd00::1", "udp", "53"], "goto b")),
    ];
    let batch = encode(Family::V6, &ops, [], Start { seq: 100, anon: 0 }).unwrap_or_else(|e| panic!("{e}"));
    let m = messages(&batch.bytes);
    let types: Vec<u16> = m.iter().map(|x| x.0).collect();
    assert_eq!(types, [0x10, 0xa00, 0xa09, 0xa06, 0xa0c, 0x11]);
    let acks: Vec<u32> = m.iter().filter(|x| x.1 & kind::F_ACK != 0).map(|x| x.2).collect();
    assert_eq!(acks, [batch.last_seq]);
    assert_eq!(batch.last_seq, 105);
    assert_eq!(batch.op_of_message(4), Some(3));
    // The element's key as nft sends it: the address, then protocol and port padded to 4 bytes.
    let key = [
        0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 17, 0, 0, 0, 0, 53, 0, 0,
    ];
    assert!(batch.bytes.windows(key.len()).any(|w| w == key));
}

#[test]
fn many_elements_of_one_set_share_messages() {
    let ops: Vec<Op> = (0..600u32)
        .map(|i| Op::AddElement(element(&[&format!("fd00::{i:x}"), "tcp", "80"], "drop")))
        .collect();
    let batch = encode(Family::V6, &ops, [&map_set()], Start::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(batch.messages, 3);
}

#[test]
fn an_element_of_an_unknown_set_is_an_error() {
    let ops = vec![Op::AddElement(element(&["fd00::1", "tcp", "80"], "drop"))];
    assert!(matches!(
        encode(Family::V6, &ops, [], Start::default()),
        Err(EncodeError::Element(..))
    ));
}

fn count(haystack: &[u8], needle: &[u8]) -> usize {
    haystack.windows(needle.len()).filter(|w| *w == needle).count()
}

#[test]
fn anonymous_sets_get_names_of_their_own_and_batches_never_reuse_one() {
    let ops = vec![Op::AddRule {
        chain: "service-x".into(),
        rule: Rule::new("numgen random mod 2 vmap { 0 : goto endpoint-a , 1 : goto endpoint-b }"),
    }];
    let start = Start { seq: 0, anon: 0x29 };
    let first = encode(Family::V4, &ops, [], start).unwrap_or_else(|e| panic!("{e}"));
    // The set is created and looked up under its own name; its elements name it by id only.
    assert_eq!(count(&first.bytes, b"__map000000000000002a\0"), 2);
    assert_eq!(count(&first.bytes, b"%d"), 0);
    assert_eq!(first.next_anon, 0x2a);
    let second = encode(
        Family::V4,
        &ops,
        [],
        Start {
            seq: first.last_seq + 1,
            anon: first.next_anon,
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(count(&second.bytes, b"__map000000000000002a\0"), 0);
    assert_eq!(count(&second.bytes, b"__map000000000000002b\0"), 2);
}

fn maps_set(
    name: &str,
    is_map: bool,
    decl: &str,
    flags: Vec<&'static str>,
) -> crate::nftables::render::maps::MapsSet {
    crate::nftables::render::maps::MapsSet {
        name: name.into(),
        is_map,
        decl: decl.into(),
        flags,
    }
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap_or_default())
        .collect()
}

/// The NEWSET attributes nft 1.0.6 sent for the same declarations (`nft --debug=mnl -f`, kernel
/// 6.18), byte for byte.
#[test]
fn maps_declarations_carry_what_nft_sends() {
    use super::decl::Decl;
    let eps = maps_set(
        "eps",
        true,
        "typeof ip daddr . meta l4proto . th dport . numgen random mod 2 : ip daddr . th dport",
        vec![],
    );
    let d = Decl::parse(&eps, Family::V4).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (d.flags, d.key_type, d.key_len, d.data),
        (0x8, 0x1cc344, 16, Some((0x1cd, 8)))
    );
    assert_eq!(
        d.udata,
        hex(concat!(
            "000400000000010400000000036000040d00000001580014000407000000010c00040c00000001040c00",
            "0000010e00040900000001060004100000000214000407000000010c00040b000000010402000000031a",
            "0004170000000112000401000000010402000000020400000000043400040d000000012c001400040700",
            "0000010c00040c00000001040c0000000114000407000000010c00040b00000001040200000006040000",
            "0000"
        ))
    );
    let affinity = maps_set(
        "affinity",
        true,
        "typeof ip saddr . ip daddr . meta l4proto . th dport : ip daddr . th dport",
        vec!["dynamic", "timeout"],
    );
    let d = Decl::parse(&affinity, Family::V4).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((d.flags, d.key_type, d.key_len), (0x38, 0x1c730d, 16));
    assert_eq!(
        d.udata,
        hex(concat!(
            "000400000000010400000000035a00040d00000001520014000407000000010c00040c00000001040b00",
            "00000114000407000000010c00040c00000001040c000000020e00040900000001060004100000000314",
            "000407000000010c00040b000000010402000000043400040d000000012c0014000407000000010c0004",
            "0c00000001040c0000000114000407000000010c00040b000000010402000000060400000000"
        ))
    );
    let svcs = maps_set(
        "svcs-2",
        false,
        "type ipv4_addr . inet_proto . inet_service",
        vec![],
    );
    let d = Decl::parse(&svcs, Family::V4).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((d.flags, d.key_type, d.key_len), (0, 0x730d, 12));
    assert_eq!(d.udata, hex("000400000000030800040d0000000100"));
    let fw = maps_set(
        "fw-allow",
        false,
        "type ipv4_addr . inet_proto . inet_service . ipv4_addr",
        vec!["interval"],
    );
    let d = Decl::parse(&fw, Family::V4).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (d.flags, d.key_type, d.concat_fields),
        (0x84, 0x1cc347, vec![4, 1, 2, 4])
    );
    let cidrs = maps_set("service-cidrs", false, "type ipv4_addr", vec!["interval"]);
    let d = Decl::parse(&cidrs, Family::V4).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((d.flags, d.key_len, d.udata), (0x4, 4, hex("000402000000")));
    let bad = maps_set("x", false, "typeof ct original protocol", vec![]);
    assert!(Decl::parse(&bad, Family::V4).is_err());
}
