use std::collections::BTreeMap;

use super::*;

#[test]
fn ids_from_config_map_data() {
    let data = BTreeMap::from([(KEY_CLUSTER.to_owned(), "abc".to_owned())]);
    assert_eq!(
        from_data(&data),
        Some(ClusterIds {
            cluster: "abc".into(),
            provider: "abc".into()
        }),
        "provider-uid falls back to uid"
    );
    let data = BTreeMap::from([
        (KEY_CLUSTER.to_owned(), "abc".to_owned()),
        (KEY_PROVIDER.to_owned(), "def".to_owned()),
    ]);
    assert_eq!(from_data(&data).map(|i| i.provider), Some("def".into()));
    assert_eq!(from_data(&BTreeMap::new()), None);
    let empty = BTreeMap::from([(KEY_CLUSTER.to_owned(), String::new())]);
    assert_eq!(from_data(&empty), None);
}

#[test]
fn random_ids_are_16_hex_digits_and_differ() {
    let a = random_id();
    let b = random_id();
    assert_eq!(a.len(), 16);
    assert!(
        a.chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()),
        "{a}"
    );
    assert_ne!(a, b);
    assert!(crate::naming::is_valid_gce_name(
        &crate::naming::nodes_health_check_name(&a)
    ));
}
