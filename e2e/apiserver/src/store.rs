//! The object store: JSON objects keyed by storage (group/resource), namespace and name, one monotonic
//! resourceVersion for everything, and a bounded event log that watches replay from.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Value, json};
use tokio::sync::watch;

use crate::persist;
use crate::resources::Registry;
use crate::services::{Allocations, ServiceConfig};

/// How many events a watch can replay; older resourceVersions answer 410 Gone.
const LOG_CAPACITY: usize = 20_000;

const SERVICES: &str = "/services";

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key {
    pub storage: String,
    pub ns: String,
    pub name: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

/// One committed change; `old` lets selector-filtered watches turn moves in/out into ADDED/DELETED.
#[derive(Debug)]
pub struct Event {
    pub rv: u64,
    pub key: Key,
    pub etype: EventType,
    pub object: Value,
    pub old: Option<Value>,
}

pub struct Inner {
    pub registry: Registry,
    pub objects: BTreeMap<Key, Value>,
    pub rv: u64,
    /// Watches may start from any resourceVersion >= floor.
    pub floor: u64,
    pub log: VecDeque<Arc<Event>>,
    pub services: ServiceConfig,
    pub alloc: Allocations,
    state_file: Option<PathBuf>,
    uid_counter: u64,
    uid_seed: u64,
}

/// Latest resourceVersion plus an epoch that bumps when all watches must end.
pub type Pulse = (u64, u64);

pub struct Store {
    inner: Mutex<Inner>,
    pulse: watch::Sender<Pulse>,
}

impl Store {
    /// A fresh store, or the one saved in `state_file` if that file exists.
    pub fn open(state_file: Option<PathBuf>, services: ServiceConfig) -> anyhow::Result<Arc<Self>> {
        let seed = std::collections::hash_map::RandomState::new();
        let uid_seed = std::hash::BuildHasher::hash_one(&seed, std::process::id());
        let mut inner = Inner {
            registry: Registry::default(),
            objects: BTreeMap::new(),
            rv: 0,
            floor: 0,
            log: VecDeque::new(),
            services,
            alloc: Allocations::default(),
            state_file: state_file.clone(),
            uid_counter: 0,
            uid_seed,
        };
        let loaded = match &state_file {
            Some(p) if p.exists() => Some(persist::load(p)?),
            _ => None,
        };
        if let Some(state) = loaded {
            inner.rv = state.resource_version;
            for obj in state.objects {
                inner.insert_loaded(obj);
            }
        } else {
            for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
                let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
                let rt = inner.registry.find("", "v1", "namespaces").cloned();
                if let Some(rt) = rt {
                    crate::ops::create(&mut inner, &rt, "", obj, &crate::ops::WriteOpts::default())
                        .map_err(|e| anyhow::anyhow!("bootstrap namespace {ns}: {e}"))?;
                }
            }
            inner.log.clear();
        }
        // Nothing before the start (or the restart) can be replayed.
        inner.floor = inner.rv;
        let rv = inner.rv;
        Ok(Arc::new(Self {
            inner: Mutex::new(inner),
            pulse: watch::channel((rv, 0)).0,
        }))
    }

    pub fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs a mutation and wakes watchers afterwards (outside the lock).
    pub fn write<R>(&self, f: impl FnOnce(&mut Inner) -> R) -> R {
        let (r, rv) = {
            let mut g = self.lock();
            let r = f(&mut g);
            (r, g.rv)
        };
        self.pulse.send_modify(|p| p.0 = rv);
        r
    }

    pub fn subscribe(&self) -> watch::Receiver<Pulse> {
        self.pulse.subscribe()
    }

    /// Test hook: forget the event history (as etcd compaction does) and end every open watch, so clients
    /// resume from an old resourceVersion and get 410 Gone.
    pub fn compact(&self) -> u64 {
        let rv = {
            let mut g = self.lock();
            g.rv += 1;
            g.floor = g.rv;
            g.log.clear();
            g.rv
        };
        self.pulse.send_modify(|p| {
            p.0 = rv;
            p.1 += 1;
        });
        rv
    }
}

impl Inner {
    fn insert_loaded(&mut self, obj: Value) {
        let Some(key) = self.key_of(&obj) else { return };
        if key.storage == "apiextensions.k8s.io/customresourcedefinitions" {
            self.registry.set_crd(&obj);
        }
        if key.storage == SERVICES {
            self.alloc.track(None, Some(&obj));
        }
        self.objects.insert(key, obj);
    }

    /// Key of a stored object, from its apiVersion/kind.
    fn key_of(&self, obj: &Value) -> Option<Key> {
        let api_version = obj.get("apiVersion")?.as_str()?;
        let kind = obj.get("kind")?.as_str()?;
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let rt = self
            .registry
            .types
            .iter()
            .find(|t| t.group == group && t.version == version && t.kind == kind)?;
        Some(Key {
            storage: rt.storage(),
            ns: obj
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            name: obj.pointer("/metadata/name")?.as_str()?.to_string(),
        })
    }

    pub fn get(&self, key: &Key) -> Option<&Value> {
        self.objects.get(key)
    }

    /// Random-looking RFC 4122 v4 UID, unique within this process.
    pub fn new_uid(&mut self) -> String {
        self.uid_counter += 1;
        let a = splitmix(self.uid_seed ^ self.uid_counter);
        let b = splitmix(a ^ 0x9e37_79b9_7f4a_7c15);
        let x = (u128::from(a) << 64) | u128::from(b);
        let x = (x & !(0xf << 76) | (0x4 << 76)) & !(0x3 << 62) | (0x2 << 62);
        let h = format!("{x:032x}");
        format!(
            "{}-{}-{}-{}-{}",
            &h[0..8],
            &h[8..12],
            &h[12..16],
            &h[16..20],
            &h[20..32]
        )
    }

    /// Lower-case alphanumerics for generateName suffixes.
    pub fn random_suffix(&mut self) -> String {
        self.uid_counter += 1;
        let mut x = splitmix(self.uid_seed ^ self.uid_counter.rotate_left(17));
        const ALPHA: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
        (0..5)
            .map(|_| {
                let c = ALPHA[(x % ALPHA.len() as u64) as usize] as char;
                x /= ALPHA.len() as u64;
                c
            })
            .collect()
    }

    /// Stores (or removes, for DELETED) an object under a new resourceVersion and logs the event.
    pub fn commit(&mut self, key: Key, etype: EventType, mut obj: Value) -> Value {
        let old = self.objects.get(&key).cloned();
        if key.storage == SERVICES {
            let new = (etype != EventType::Deleted).then_some(&obj);
            self.alloc.track(old.as_ref(), new);
        }
        self.rv += 1;
        let rv = self.rv;
        if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            m.insert("resourceVersion".into(), Value::String(rv.to_string()));
        }
        if etype == EventType::Deleted {
            self.objects.remove(&key);
        } else {
            self.objects.insert(key.clone(), obj.clone());
        }
        self.log.push_back(Arc::new(Event {
            rv,
            key,
            etype,
            object: obj.clone(),
            old,
        }));
        while self.log.len() > LOG_CAPACITY {
            if let Some(e) = self.log.pop_front() {
                self.floor = e.rv;
            }
        }
        if let Some(p) = &self.state_file
            && let Err(e) = persist::save(p, self.rv, self.objects.values())
        {
            tracing::error!(error = %e, "cannot write state file");
        }
        obj
    }

    /// Events after `rv` (oldest first); None when `rv` is older than the replayable history, or newer than
    /// anything this store has issued (a client that saw another incarnation of the stand-in must relist).
    pub fn events_since(&self, rv: u64) -> Option<Vec<Arc<Event>>> {
        if rv < self.floor || rv > self.rv {
            return None;
        }
        let start = self.log.partition_point(|e| e.rv <= rv);
        Some(self.log.iter().skip(start).cloned().collect())
    }
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
