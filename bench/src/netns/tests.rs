use super::*;

#[test]
fn lab_namespace_is_created_and_deleted() {
    let ns = match Netns::create_lab("unit") {
        Ok(ns) => ns,
        Err(e) => {
            svcnet_netns::skip_or_panic(&e.to_string());
            return;
        }
    };
    let name = ns.name.clone();
    let out = ns
        .command("ip")
        .args(["-4", "addr", "show", "lo"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains(ENDPOINT_ADDR));
    assert!(svcnet_netns::list().contains(&name));
    drop(ns);
    assert!(!svcnet_netns::list().contains(&name));
}
