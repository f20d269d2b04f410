use super::*;

fn field(num: u64, wire: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![((num << 3) | u64::from(wire)) as u8];
    if wire == 2 {
        out.push(payload.len() as u8);
    }
    out.extend_from_slice(payload);
    out
}

#[test]
fn decodes_a_service_envelope() {
    let port = [
        field(3, 0, &[80]),
        field(4, 2, &[field(2, 0, &[0x90, 0x3f]), field(1, 0, &[0])].concat()),
    ]
    .concat();
    let spec = [field(1, 2, &port), field(4, 2, b"NodePort"), field(3, 2, b"")].concat();
    let meta = [
        field(1, 2, b"web"),
        field(11, 2, &[field(1, 2, b"app"), field(2, 2, b"web")].concat()),
    ]
    .concat();
    let svc = [field(1, 2, &meta), field(2, 2, &spec)].concat();
    let tm = [field(1, 2, b"v1"), field(2, 2, b"Service")].concat();
    let body = [b"k8s\0".to_vec(), field(1, 2, &tm), field(2, 2, &svc)].concat();
    let v = decode(&body).unwrap();
    assert_eq!(
        v,
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "labels": {"app": "web"}},
               "spec": {"type": "NodePort", "ports": [{"port": 80, "targetPort": 8080}]}})
    );
    assert!(decode(b"{}").is_err());
    assert_eq!(base64(b"ab"), "YWI=");
}
