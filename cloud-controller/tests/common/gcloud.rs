//! The real gcloud pointed at the fake GCE (`svcnet_testcluster::gcloud`), for the tests that read
//! the controller's objects as a user would, and [`ReadBack`], which reads a whole collection with
//! one gcloud start (each start costs about a CPU-second of Python).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use serde_json::Value;

use super::{FakeGce, PROJECT, REGION};

pub struct Gcloud {
    /// Its config directory and token file.
    dir: tempfile::TempDir,
    port: u16,
}

impl Gcloud {
    pub fn new(gce: &FakeGce) -> Self {
        Gcloud {
            dir: tempfile::tempdir().unwrap(),
            port: gce.port,
        }
    }

    pub fn run(&self, args: &[&str]) -> String {
        let out = svcnet_testcluster::gcloud::command(self.dir.path(), self.port, PROJECT)
            .unwrap()
            .args(args)
            .output()
            .expect("run gcloud");
        assert!(
            out.status.success(),
            "gcloud {args:?} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `--format=json` output as a list (what `list` commands print).
    pub fn json(&self, args: &[&str]) -> Vec<Value> {
        let mut a = args.to_vec();
        a.push("--format=json");
        let v: Value = serde_json::from_str(&self.run(&a)).unwrap();
        v.as_array().cloned().unwrap_or_default()
    }

    /// `--format=json` output as printed (what `describe` commands print).
    pub fn value(&self, args: &[&str]) -> Value {
        let mut a = args.to_vec();
        a.push("--format=json");
        serde_json::from_str(&self.run(&a)).unwrap()
    }
}

/// Whether gcloud is on `PATH`, looked up once per process without starting it (a gcloud that
/// is there but broken fails the read-backs instead of skipping them); prints a SKIPPED line
/// naming `what` when it is missing.
pub fn have_gcloud(what: &str) -> bool {
    static FOUND: OnceLock<bool> = OnceLock::new();
    let found = *FOUND.get_or_init(|| {
        std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|d| executable(&d.join("gcloud"))))
    });
    if !found {
        println!("SKIPPED: gcloud is not installed; {what} did not run");
    }
    found
}

fn executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A collection of GCE objects a [`ReadBack`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Collection {
    /// Regional forwarding rules (in [`REGION`]).
    ForwardingRules,
    Firewalls,
}

impl Collection {
    fn gcloud_list(self) -> Vec<String> {
        let words: &[&str] = match self {
            Collection::ForwardingRules => &["compute", "forwarding-rules", "list", "--regions", REGION],
            Collection::Firewalls => &["compute", "firewall-rules", "list"],
        };
        words.iter().map(|w| w.to_string()).collect()
    }

    /// Its list path under the project.
    fn rest_list(self) -> String {
        match self {
            Collection::ForwardingRules => format!("regions/{REGION}/forwardingRules"),
            Collection::Firewalls => "global/firewalls".to_owned(),
        }
    }
}

/// The objects of some collections as the real gcloud lists them (one start per collection, not
/// one per object), or, without gcloud, as the fake's REST API lists them to any client.
pub struct ReadBack {
    objects: BTreeMap<(Collection, String), Value>,
    /// Whether gcloud read them.
    pub by_gcloud: bool,
}

impl ReadBack {
    pub fn new(gce: &FakeGce, collections: &[Collection]) -> Self {
        let by_gcloud = have_gcloud("the gcloud read-back");
        let g = by_gcloud.then(|| Gcloud::new(gce));
        let mut objects = BTreeMap::new();
        for &c in collections {
            let items = match &g {
                Some(g) => {
                    let args = c.gcloud_list();
                    g.json(&args.iter().map(String::as_str).collect::<Vec<_>>())
                }
                None => rest_get(gce, &c.rest_list())["items"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default(),
            };
            for item in items {
                let name = item["name"].as_str().unwrap().to_owned();
                objects.insert((c, name), item);
            }
        }
        ReadBack { objects, by_gcloud }
    }

    /// The object `name` of `c`; panics naming it when the read-back did not see it.
    pub fn get(&self, c: Collection, name: &str) -> &Value {
        self.objects
            .get(&(c, name.to_owned()))
            .unwrap_or_else(|| panic!("{c:?} {name} not read back; read: {:?}", self.objects.keys()))
    }

    pub fn has(&self, c: Collection, name: &str) -> bool {
        self.objects.contains_key(&(c, name.to_owned()))
    }
}

/// Reads one object at a time: `gcloud compute WHAT describe`, or a GET of the fake's REST API
/// (what gcloud's describe sends) where gcloud is missing or is not what the test proves.
pub enum Describe<'a> {
    Gcloud(Gcloud),
    Rest(&'a FakeGce),
}

impl<'a> Describe<'a> {
    /// The real gcloud when it is installed, else the REST API.
    pub fn gcloud_or_rest(gce: &'a FakeGce, what: &str) -> Self {
        if have_gcloud(what) {
            Describe::Gcloud(Gcloud::new(gce))
        } else {
            Describe::Rest(gce)
        }
    }

    /// `gcloud compute WHAT describe NAME --region REGION` / `GET .../regions/REGION/COLL/NAME`.
    pub fn regional(&self, what: &str, coll: &str, name: &str) -> Value {
        match self {
            Describe::Gcloud(g) => g.value(&["compute", what, "describe", name, "--region", REGION]),
            Describe::Rest(gce) => rest_get(gce, &format!("regions/{REGION}/{coll}/{name}")),
        }
    }

    /// `gcloud compute WHAT describe NAME` / `GET .../global/COLL/NAME`.
    pub fn global(&self, what: &str, coll: &str, name: &str) -> Value {
        match self {
            Describe::Gcloud(g) => g.value(&["compute", what, "describe", name]),
            Describe::Rest(gce) => rest_get(gce, &format!("global/{coll}/{name}")),
        }
    }
}

fn rest_get(gce: &FakeGce, path: &str) -> Value {
    let (status, body) = gce.call("GET", &format!("/compute/v1/projects/{PROJECT}/{path}"), None);
    assert_eq!(status, 200, "GET {path}: {body}");
    body
}
