use super::*;
use crate::config::Layout;
use crate::fixtures::{cfg, node};
use crate::model::{Family, ProxyState};
use crate::nftables::render::{Existing, Inputs, Start, full};
use crate::offline::input::parse_objects;

/// Service `name` with `spec`, and one slice with endpoints (address, node) on port 8080.
fn objects(name: &str, spec: &str, eps: &[(&str, &str)]) -> String {
    let mut y = format!(
        "---\nkind: Service\nmetadata: {{name: {name}, namespace: default}}\nspec: {spec}\n\
         ---\nkind: EndpointSlice\nmetadata: {{name: {name}-x, namespace: default, labels: {{kubernetes.io/service-name: {name}}}}}\n\
         addressType: IPv4\nports: [{{port: 8080, protocol: TCP}}]\nendpoints:\n"
    );
    for (ip, on) in eps {
        y.push_str(&format!(
            "- {{addresses: [\"{ip}\"], conditions: {{ready: true}}, nodeName: {on}}}\n"
        ));
    }
    y
}

fn state(yaml: &str) -> ProxyState {
    let objs = parse_objects(yaml).expect("yaml");
    let state = ProxyState::from_k8s(&objs.services, &objs.slices, Family::V4);
    assert!(state.errors.is_empty(), "{:?}", state.errors);
    state
}

/// The tally after every port of `state` was set, as the maps sync sets them.
fn tally(ports: &mut NoLocalPorts, state: &ProxyState) -> NoLocal {
    for (name, svc) in &state.services {
        let eps = state.endpoints.get(name).map_or(&[][..], |e| &e[..]);
        ports.set(name, Some((svc, eps)), &node());
    }
    ports.total()
}

/// What the upstream layout's full sync counts for the same state.
fn upstream(state: &ProxyState) -> NoLocal {
    full(
        Inputs::new(state, node(), cfg(Layout::Flat)),
        &Existing::default(),
        Start::Over,
    )
    .no_local()
}

const LB_LOCAL: &str = "{type: LoadBalancer, externalTrafficPolicy: Local, clusterIP: 10.79.0.1, ports: [{port: 80, protocol: TCP, nodePort: 30080}]}";
const ITP_LOCAL: &str =
    "{internalTrafficPolicy: Local, clusterIP: 10.79.0.2, ports: [{port: 80, protocol: TCP}]}";
const BOTH_LOCAL: &str = "{type: NodePort, internalTrafficPolicy: Local, externalTrafficPolicy: Local, clusterIP: 10.79.0.3, ports: [{port: 80, protocol: TCP, nodePort: 30081}]}";
const CLUSTER: &str = "{clusterIP: 10.79.0.4, ports: [{port: 80, protocol: TCP}]}";

#[test]
fn counts_local_policies_whose_endpoints_are_all_elsewhere_as_the_upstream_layout() {
    let y = [
        objects("lb", LB_LOCAL, &[("10.76.1.5", "node-2")]),
        objects("itp", ITP_LOCAL, &[("10.76.1.6", "node-2")]),
        objects("both", BOTH_LOCAL, &[("10.76.1.7", "node-3")]),
        objects("plain", CLUSTER, &[("10.76.1.8", "node-2")]),
        // Local policy without any endpoint: rejected, not counted.
        objects("none", ITP_LOCAL.replace("10.79.0.2", "10.79.0.5").as_str(), &[]),
        // Local policy with its endpoint here: not counted.
        objects(
            "here",
            LB_LOCAL
                .replace("10.79.0.1", "10.79.0.6")
                .replace("30080", "30082")
                .as_str(),
            &[("10.76.0.9", "node-1")],
        ),
    ]
    .concat();
    let s = state(&y);
    let got = tally(&mut NoLocalPorts::default(), &s);
    assert_eq!(
        got,
        NoLocal {
            internal: 2,
            external: 2
        }
    );
    assert_eq!(got, upstream(&s));
}

#[test]
fn a_port_leaves_the_count_when_it_gains_a_local_endpoint_or_goes() {
    let mut ports = NoLocalPorts::default();
    let before = state(
        &[
            objects("lb", LB_LOCAL, &[("10.76.1.5", "node-2")]),
            objects("itp", ITP_LOCAL, &[("10.76.1.6", "node-2")]),
        ]
        .concat(),
    );
    assert_eq!(
        tally(&mut ports, &before),
        NoLocal {
            internal: 1,
            external: 1
        }
    );
    // lb gets an endpoint on this node; itp is deleted.
    let after = state(&objects(
        "lb",
        LB_LOCAL,
        &[("10.76.1.5", "node-2"), ("10.76.0.9", "node-1")],
    ));
    let itp = before
        .services
        .keys()
        .find(|n| n.name == "itp")
        .expect("itp port");
    ports.set(itp, None, &node());
    assert_eq!(tally(&mut ports, &after), NoLocal::default());
    assert_eq!(upstream(&after), NoLocal::default());
}
