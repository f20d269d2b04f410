use super::Urls;
use crate::kind::Kind;
use crate::scope::Scope;

fn urls() -> Urls {
    Urls {
        base: "http://127.0.0.1:9/compute/v1/".into(),
        project: "p".into(),
    }
}

#[test]
fn accepts_all_reference_forms() {
    let u = urls();
    let zone = Scope::Zone("us-central1-b".into());
    let want = (zone.clone(), "n1".to_string());
    for r in [
        "https://www.googleapis.com/compute/v1/projects/p/zones/us-central1-b/instances/n1",
        "projects/p/zones/us-central1-b/instances/n1",
        "zones/us-central1-b/instances/n1",
    ] {
        assert_eq!(u.parse_ref("f", r, Kind::Instance, None), Ok(want.clone()), "{r}");
    }
    assert_eq!(u.parse_ref("f", "n1", Kind::Instance, Some(&zone)), Ok(want));
    assert_eq!(
        u.link(&Scope::Global, Kind::Firewall, "fw"),
        "http://127.0.0.1:9/compute/v1/projects/p/global/firewalls/fw"
    );
}

#[test]
fn rejects_wrong_kind_project_or_shape() {
    let u = urls();
    assert!(
        u.parse_ref("f", "global/networks/x", Kind::Instance, None)
            .is_err()
    );
    let e = u.parse_ref("f", "projects/other/global/networks/x", Kind::Network, None);
    assert_eq!(e.map_err(|e| e.code), Err(404));
    assert!(
        u.parse_ref("f", "a/b", Kind::Network, Some(&Scope::Global))
            .is_err()
    );
}
