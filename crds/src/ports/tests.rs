use super::*;

#[test]
fn formats_ports_in_given_order() {
    let ports = [
        PortStatus::new(443, "TCP"),
        PortStatus::new(80, "TCP"),
        PortStatus::new(53, "UDP"),
    ];
    assert_eq!(format_ports(&ports), "443/TCP,80/TCP,53/UDP");
}

#[test]
fn single_port_has_no_separator() {
    assert_eq!(format_ports(&[PortStatus::new(8080, "SCTP")]), "8080/SCTP");
}

#[test]
fn no_ports_is_empty_text() {
    assert_eq!(format_ports(&[]), "");
}
