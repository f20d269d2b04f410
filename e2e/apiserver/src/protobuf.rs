//! Just enough of the Kubernetes protobuf wire format to read the request bodies kubectl's typed clients send
//! (`kubectl create service|namespace|configmap|secret|serviceaccount` post
//! `application/vnd.kubernetes.protobuf`). Responses are always JSON, which those clients also accept.
//! Fields not listed in the schemas below are skipped; zero values are dropped like `omitempty`.

use serde_json::{Map, Value, json};

#[derive(Clone, Copy)]
enum F {
    Str,
    Int,
    Bool,
    /// A `*bool`: present means set, so `false` is kept.
    BoolPtr,
    Time,
    MapStr,
    MapBytes,
    RepStr,
    Msg(&'static [Field]),
    RepMsg(&'static [Field]),
    IntOrStr,
}

type Field = (u64, &'static str, F);

const OBJECT_META: &[Field] = &[
    (1, "name", F::Str),
    (2, "generateName", F::Str),
    (3, "namespace", F::Str),
    (5, "uid", F::Str),
    (6, "resourceVersion", F::Str),
    (7, "generation", F::Int),
    (8, "creationTimestamp", F::Time),
    (11, "labels", F::MapStr),
    (12, "annotations", F::MapStr),
    (14, "finalizers", F::RepStr),
];
const SERVICE_PORT: &[Field] = &[
    (1, "name", F::Str),
    (2, "protocol", F::Str),
    (3, "port", F::Int),
    (4, "targetPort", F::IntOrStr),
    (5, "nodePort", F::Int),
    (6, "appProtocol", F::Str),
];
const SESSION_AFFINITY_CONFIG: &[Field] = &[(1, "clientIP", F::Msg(&[(1, "timeoutSeconds", F::Int)]))];
const SERVICE_SPEC: &[Field] = &[
    (1, "ports", F::RepMsg(SERVICE_PORT)),
    (2, "selector", F::MapStr),
    (3, "clusterIP", F::Str),
    (4, "type", F::Str),
    (5, "externalIPs", F::RepStr),
    (7, "sessionAffinity", F::Str),
    (8, "loadBalancerIP", F::Str),
    (9, "loadBalancerSourceRanges", F::RepStr),
    (10, "externalName", F::Str),
    (11, "externalTrafficPolicy", F::Str),
    (12, "healthCheckNodePort", F::Int),
    (13, "publishNotReadyAddresses", F::Bool),
    (14, "sessionAffinityConfig", F::Msg(SESSION_AFFINITY_CONFIG)),
    (17, "ipFamilyPolicy", F::Str),
    (18, "clusterIPs", F::RepStr),
    (19, "ipFamilies", F::RepStr),
    (20, "allocateLoadBalancerNodePorts", F::BoolPtr),
    (21, "loadBalancerClass", F::Str),
    (22, "internalTrafficPolicy", F::Str),
    (23, "trafficDistribution", F::Str),
];
const SERVICE: &[Field] = &[
    (1, "metadata", F::Msg(OBJECT_META)),
    (2, "spec", F::Msg(SERVICE_SPEC)),
];
const CONFIG_MAP: &[Field] = &[
    (1, "metadata", F::Msg(OBJECT_META)),
    (2, "data", F::MapStr),
    (3, "binaryData", F::MapBytes),
    (4, "immutable", F::BoolPtr),
];
const SECRET: &[Field] = &[
    (1, "metadata", F::Msg(OBJECT_META)),
    (2, "data", F::MapBytes),
    (3, "type", F::Str),
    (4, "stringData", F::MapStr),
    (5, "immutable", F::BoolPtr),
];
const META_ONLY: &[Field] = &[(1, "metadata", F::Msg(OBJECT_META))];

#[derive(Debug, thiserror::Error)]
pub enum ProtoError {
    #[error("not a Kubernetes protobuf envelope")]
    Envelope,
    #[error("truncated or malformed protobuf")]
    Malformed,
    #[error("protobuf bodies of kind {0} are not supported; send application/json")]
    Kind(String),
}

struct Reader<'a> {
    b: &'a [u8],
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Result<u64, ProtoError> {
        let mut x = 0u64;
        for shift in (0..64).step_by(7) {
            let (&byte, rest) = self.b.split_first().ok_or(ProtoError::Malformed)?;
            self.b = rest;
            x |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(x);
            }
        }
        Err(ProtoError::Malformed)
    }

    fn bytes(&mut self) -> Result<&'a [u8], ProtoError> {
        let n = usize::try_from(self.varint()?).map_err(|_| ProtoError::Malformed)?;
        if n > self.b.len() {
            return Err(ProtoError::Malformed);
        }
        let (head, rest) = self.b.split_at(n);
        self.b = rest;
        Ok(head)
    }

    /// Next (field number, wire type payload); varints come back as `Ok(Err(v))`.
    fn field(&mut self) -> Result<(u64, Result<&'a [u8], u64>), ProtoError> {
        let tag = self.varint()?;
        let payload = match tag & 7 {
            0 => Err(self.varint()?),
            2 => Ok(self.bytes()?),
            1 => {
                self.skip(8)?;
                Err(0)
            }
            5 => {
                self.skip(4)?;
                Err(0)
            }
            _ => return Err(ProtoError::Malformed),
        };
        Ok((tag >> 3, payload))
    }

    fn skip(&mut self, n: usize) -> Result<(), ProtoError> {
        if n > self.b.len() {
            return Err(ProtoError::Malformed);
        }
        self.b = &self.b[n..];
        Ok(())
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn map_entry(b: &[u8]) -> Result<(String, Vec<u8>), ProtoError> {
    let mut r = Reader { b };
    let (mut k, mut v) = (String::new(), Vec::new());
    while !r.b.is_empty() {
        match r.field()? {
            (1, Ok(x)) => k = text(x),
            (2, Ok(x)) => v = x.to_vec(),
            _ => {}
        }
    }
    Ok((k, v))
}

fn message(b: &[u8], schema: &[Field]) -> Result<Value, ProtoError> {
    let mut out = Map::new();
    let mut r = Reader { b };
    while !r.b.is_empty() {
        let (num, payload) = r.field()?;
        let Some(&(_, name, ty)) = schema.iter().find(|f| f.0 == num) else {
            continue;
        };
        match (ty, payload) {
            (F::Str, Ok(x)) if !x.is_empty() => {
                out.insert(name.into(), json!(text(x)));
            }
            (F::Int, Err(v)) if v != 0 => {
                out.insert(name.into(), json!(v as i64 as i32 as i64));
            }
            (F::Bool, Err(v)) if v != 0 => {
                out.insert(name.into(), json!(true));
            }
            (F::BoolPtr, Err(v)) => {
                out.insert(name.into(), json!(v != 0));
            }
            (F::Time, Ok(x)) => {
                let t = message(x, &[(1, "s", F::Int)])?;
                if let Some(s) = t.get("s").and_then(Value::as_i64) {
                    out.insert(name.into(), json!(crate::time::format_rfc3339(s)));
                }
            }
            (F::MapStr | F::MapBytes, Ok(x)) => {
                let (k, v) = map_entry(x)?;
                let v = if matches!(ty, F::MapBytes) {
                    base64(&v)
                } else {
                    text(&v)
                };
                let m = out.entry(name).or_insert_with(|| json!({}));
                m[k] = json!(v);
            }
            (F::RepStr, Ok(x)) => push(&mut out, name, json!(text(x))),
            (F::Msg(s), Ok(x)) => {
                out.insert(name.into(), message(x, s)?);
            }
            (F::RepMsg(s), Ok(x)) => push(&mut out, name, message(x, s)?),
            (F::IntOrStr, Ok(x)) => {
                let v = message(x, &[(1, "type", F::Int), (2, "i", F::Int), (3, "s", F::Str)])?;
                match (v.get("type").and_then(Value::as_i64), v.get("i"), v.get("s")) {
                    (Some(1), _, Some(s)) => out.insert(name.into(), s.clone()),
                    (_, Some(i), _) => out.insert(name.into(), i.clone()),
                    _ => None,
                };
            }
            _ => {}
        }
    }
    Ok(Value::Object(out))
}

fn push(out: &mut Map<String, Value>, name: &str, v: Value) {
    if let Some(Value::Array(a)) = out.get_mut(name) {
        a.push(v);
    } else {
        out.insert(name.into(), json!([v]));
    }
}

fn base64(b: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::new();
    for c in b.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                s.push(T[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

/// Decodes a `k8s\0` + runtime.Unknown body into the JSON object it carries.
pub fn decode(body: &[u8]) -> Result<Value, ProtoError> {
    let rest = body.strip_prefix(b"k8s\0").ok_or(ProtoError::Envelope)?;
    let mut r = Reader { b: rest };
    let (mut api_version, mut kind, mut raw) = (String::new(), String::new(), &[][..]);
    while !r.b.is_empty() {
        match r.field()? {
            (1, Ok(tm)) => {
                let t = message(tm, &[(1, "apiVersion", F::Str), (2, "kind", F::Str)])?;
                api_version = t.get("apiVersion").and_then(Value::as_str).unwrap_or("").into();
                kind = t.get("kind").and_then(Value::as_str).unwrap_or("").into();
            }
            (2, Ok(x)) => raw = x,
            _ => {}
        }
    }
    let schema = match (api_version.as_str(), kind.as_str()) {
        ("v1", "Service") => SERVICE,
        ("v1", "ConfigMap") => CONFIG_MAP,
        ("v1", "Secret") => SECRET,
        ("v1", "Namespace" | "ServiceAccount") => META_ONLY,
        _ => return Err(ProtoError::Kind(format!("{api_version}/{kind}"))),
    };
    let mut obj = message(raw, schema)?;
    obj["apiVersion"] = json!(api_version);
    obj["kind"] = json!(kind);
    Ok(obj)
}

#[cfg(test)]
mod tests;
