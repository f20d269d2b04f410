use super::parse_query;

#[test]
fn decodes_filters_as_clients_send_them() {
    let q = parse_query(
        "alt=json&maxResults=500&filter=%28name+eq+%22.%2A%28%5Ek8s-fw%29.%2A%22%29&%24alt=json%3Benum-encoding%3Dint&x",
    );
    assert_eq!(q["filter"], r#"(name eq ".*(^k8s-fw).*")"#);
    assert_eq!(q["maxResults"], "500");
    assert_eq!(q["$alt"], "json;enum-encoding=int");
    assert_eq!(q["x"], "");
    assert_eq!(parse_query("a=%zz%4")["a"], "%zz%4");
}
