//! E2E_CLUSTER=kind: placeholder, filled in below.
use serde_json::Value;

use super::{Cluster, Component, From};

pub struct Kind;

impl Kind {
    pub fn create() -> Kind {
        panic!("E2E_CLUSTER=kind: not implemented yet");
    }
}

impl Cluster for Kind {
    fn kind(&self) -> &'static str {
        "kind"
    }
    fn api(&self, _: &str, _: &str, _: Option<&Value>) -> Result<Value, String> {
        unimplemented!()
    }
    fn gce(&self, _: &str, _: &str, _: Option<&Value>) -> Result<Value, String> {
        unimplemented!()
    }
    fn kubectl(&self, _: &[&str]) -> Result<String, String> {
        unimplemented!()
    }
    fn get(&self, _: From<'_>, _: &str) -> Option<String> {
        unimplemented!()
    }
    fn udp(&self, _: From<'_>, _: &str) -> Option<String> {
        unimplemented!()
    }
    fn run_pods(&self, _: &str, _: usize, _: u16) {}
    fn scale(&self, _: &str, _: usize) {}
    fn nodes(&self) -> Vec<(String, String)> {
        vec![]
    }
    fn add_node(&self) -> String {
        unimplemented!()
    }
    fn remove_node(&self, _: &str) {}
    fn stop(&self, _: Component) {}
    fn start(&self, _: Component) {}
    fn lb_backends(&self, _: &str) -> Vec<String> {
        vec![]
    }
    fn client_ips(&self) -> (String, String) {
        unimplemented!()
    }
    fn diagnose(&self) {}
    fn down(&mut self) {}
}
