use super::*;
use crate::objects::{Firewall, HttpHealthCheck};

fn fw(name: &str) -> Action {
    Action::CreateFirewall(Firewall {
        name: name.into(),
        ..Default::default()
    })
}

fn hc(name: &str) -> Action {
    Action::CreateHealthCheck(HttpHealthCheck {
        name: name.into(),
        ..Default::default()
    })
}

fn labels(st: &[&[Action]]) -> Vec<Vec<String>> {
    st.iter()
        .map(|s| s.iter().map(|a| a.target_name().to_owned()).collect())
        .collect()
}

#[test]
fn firewalls_and_health_checks_of_a_new_lb_form_one_stage() {
    let actions = vec![
        fw("k8s-fw-a1"),
        fw("k8s-c-node-http-hc"),
        hc("k8s-c-node"),
        Action::DeleteTargetPool { name: "a1".into() },
        Action::DeleteForwardingRule { name: "a1".into() },
    ];
    let st = stages(&actions);
    assert_eq!(
        labels(&st),
        [
            vec!["k8s-fw-a1", "k8s-c-node-http-hc", "k8s-c-node"],
            vec!["a1"],
            vec!["a1"]
        ]
    );
    // Nothing lost, nothing reordered.
    let flat: Vec<&Action> = st.iter().flat_map(|s| s.iter()).collect();
    assert_eq!(flat, actions.iter().collect::<Vec<_>>());
}

#[test]
fn deletes_and_references_stay_serial() {
    let actions = vec![
        Action::DeleteForwardingRule { name: "a1".into() },
        Action::DeleteTargetPool { name: "a1".into() },
        Action::DeleteHealthCheck {
            name: "h".into(),
            keep_if_in_use: true,
        },
        Action::DeleteFirewall { name: "f".into() },
        fw("late"),
    ];
    let st = stages(&actions);
    assert_eq!(st.len(), 5);
    assert!(st.iter().all(|s| s.len() == 1));
}

#[test]
fn runs_are_split_by_a_dependent_action() {
    let actions = vec![
        fw("a"),
        hc("b"),
        Action::DeleteAddress { name: "x".into() },
        fw("c"),
        fw("d"),
    ];
    let st = stages(&actions);
    assert_eq!(labels(&st), [vec!["a", "b"], vec!["x"], vec!["c", "d"]]);
    assert!(stages(&[]).is_empty());
}
