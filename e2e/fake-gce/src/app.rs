//! The shared server state: configuration, the project data and the test knobs.
use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::calls::CallLog;
use crate::config::Config;
use crate::faults::{Faults, RateLimit};
use crate::store::Data;
use crate::urls::Urls;

pub struct App {
    pub cfg: Config,
    pub urls: Urls,
    pub inner: Mutex<Inner>,
}

pub struct Inner {
    pub data: Data,
    pub op_latency_ms: u64,
    pub faults: Faults,
    pub rate: RateLimit,
    /// Metric (e.g. `FIREWALLS`) -> limit.
    pub quotas: BTreeMap<String, u64>,
    pub calls: CallLog,
}

impl App {
    pub fn new(cfg: Config, base_url: String, data: Data) -> Self {
        let urls = Urls {
            base: base_url,
            project: cfg.project.clone(),
        };
        let inner = Inner {
            data,
            op_latency_ms: cfg.op_latency_ms,
            faults: Faults::default(),
            rate: RateLimit::default(),
            quotas: BTreeMap::new(),
            calls: CallLog::default(),
        };
        Self {
            cfg,
            urls,
            inner: Mutex::new(inner),
        }
    }

    /// Poisoning only happens if a handler panicked; the data is still usable for a test double.
    pub fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
