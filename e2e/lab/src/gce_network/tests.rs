//! Tests of the kind GCE network's reading of the fake's instances.

use serde_json::json;

use super::*;

#[test]
fn dual_stack_instances_give_their_ipv6_and_ipv4_only_ones_none() {
    let state = json!({"instances": [
        {"name": "a", "networkInterfaces": [{"networkIP": "172.18.0.2", "stackType": "IPV4_IPV6",
            "ipv6Address": "fc00:f853:ccd:e793::2"}]},
        {"name": "b", "networkInterfaces": [{"networkIP": "172.18.0.3", "stackType": "IPV4_ONLY"}]},
    ]});
    assert_eq!(
        ipv6_of(&state),
        BTreeMap::from([("172.18.0.2".to_owned(), "fc00:f853:ccd:e793::2".to_owned())])
    );
    assert_eq!(
        instances(&state, "br").get("b"),
        Some(&("172.18.0.3".to_owned(), "br".to_owned()))
    );
}
