use super::*;

/// One netlink message of `kind` with `payload`, padded to 4 bytes.
fn message(kind: u16, payload: &[u8]) -> Vec<u8> {
    let len = (NLMSG_HDRLEN + payload.len()) as u32;
    let mut m = Vec::new();
    m.extend_from_slice(&len.to_ne_bytes());
    m.extend_from_slice(&kind.to_ne_bytes());
    m.extend_from_slice(&[0u8; 10]);
    m.extend_from_slice(payload);
    m.resize(align4(m.len()), 0);
    m
}

fn attr(kind: u16, data: &[u8]) -> Vec<u8> {
    let mut a = Vec::new();
    a.extend_from_slice(&((4 + data.len()) as u16).to_ne_bytes());
    a.extend_from_slice(&kind.to_ne_bytes());
    a.extend_from_slice(data);
    a.resize(align4(a.len()), 0);
    a
}

fn newaddr(family: u8, attrs: &[Vec<u8>]) -> Vec<u8> {
    let mut p = vec![family, 24, 0, 0, 1, 0, 0, 0];
    for a in attrs {
        p.extend_from_slice(a);
    }
    message(RTM_NEWADDR, &p)
}

#[test]
fn a_dump_gives_the_local_address_of_each_message_until_done() {
    let mut dump = newaddr(AF_INET, &[attr(IFA_ADDRESS, &[10, 0, 0, 2])]);
    // Point-to-point: IFA_ADDRESS is the peer, IFA_LOCAL the node's own (what `ip` prints).
    dump.extend(newaddr(
        AF_INET,
        &[attr(IFA_ADDRESS, &[10, 9, 9, 9]), attr(IFA_LOCAL, &[10, 0, 0, 3])],
    ));
    let v6: [u8; 16] = "fd00::5".parse::<Ipv6Addr>().unwrap().octets();
    dump.extend(newaddr(AF_INET6, &[attr(IFA_ADDRESS, &v6)]));
    dump.extend(message(NLMSG_DONE, &[0; 4]));
    dump.extend(newaddr(AF_INET, &[attr(IFA_ADDRESS, &[10, 0, 0, 99])]));
    let mut out = Vec::new();
    assert!(parse(&dump, &mut out).unwrap(), "the dump ends at NLMSG_DONE");
    let got: Vec<String> = out.iter().map(ToString::to_string).collect();
    assert_eq!(got, ["10.0.0.2", "10.0.0.3", "fd00::5"]);
}

#[test]
fn an_error_answer_and_a_cut_message_are_errors_not_addresses() {
    let err = message(NLMSG_ERROR, &(-1i32).to_ne_bytes());
    assert_eq!(parse(&err, &mut Vec::new()).unwrap_err().raw_os_error(), Some(1));
    let mut cut = newaddr(AF_INET, &[attr(IFA_ADDRESS, &[10, 0, 0, 2])]);
    cut[0] = 200;
    assert!(parse(&cut, &mut Vec::new()).is_err());
    let mut out = Vec::new();
    assert!(!parse(&newaddr(AF_INET, &[]), &mut out).unwrap(), "no DONE yet");
    assert!(out.is_empty());
}

/// The dump of this test's own namespace lists what `ip -o addr show` lists (reading only).
#[test]
fn the_dump_matches_ip_addr_show() {
    let Ok(out) = std::process::Command::new("ip")
        .args(["-o", "addr", "show"])
        .output()
    else {
        return;
    };
    let want = crate::addresses::parse_ip_addr(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(addresses().unwrap(), want);
}
